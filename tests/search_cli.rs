//! `dsh-refs search` as a user runs it: the real binary on a temporary store, a fresh cache
//! dir (no index yet), JSON and human output, errors, several processes at once.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test
#![allow(
    clippy::items_after_statements,
    clippy::cast_possible_wrap,
    clippy::case_sensitive_file_extension_comparisons
)] // test code

#[path = "../crates/dsh-search/tests/support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use dsh_reference::format_mention;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use support::Log;

struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        let fx = Fixture {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(fx.store()).unwrap();
        fx.config("");
        fx
    }
    fn store(&self) -> PathBuf {
        self.dir.path().join("store")
    }
    fn cache(&self) -> PathBuf {
        self.dir.path().join("cache")
    }
    fn config(&self, text: &str) {
        std::fs::write(self.dir.path().join("config.toml"), text).unwrap();
    }
    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_dsh-refs"));
        c.arg("--store")
            .arg(self.store())
            .arg("--config")
            .arg(self.dir.path().join("config.toml"))
            .args(args)
            .current_dir(self.dir.path())
            .env_remove("DSH_REFS_STORE")
            .env_remove("DSH_REFS_CONFIG")
            .env("XDG_CACHE_HOME", self.cache())
            .env("HOME", self.dir.path());
        c
    }
    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

fn without_scores(mut v: Value) -> Value {
    for hit in v.as_array_mut().unwrap() {
        let score = hit.as_object_mut().unwrap().remove("score").unwrap();
        assert!(score.as_f64().unwrap() > 0.0, "{score}");
    }
    v
}

fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(tree(&path));
        }
        out.push(path);
    }
    out.sort();
    out
}

#[test]
fn json_hits_on_a_fresh_machine() {
    let fx = Fixture::new();
    let mut kafka = Log::create(&fx.store(), "s-kafka", "/src/queue", 1_700_000_000_000);
    kafka.user("Should we use Kafka or Redis for the job queue?");
    kafka.assistant("We chose Kafka over Redis: replay matters.", "weighing");
    kafka.title("Queue choice");
    let mut cjk = Log::create(&fx.store(), "s-cjk", "/src/web", 1_700_000_000_001);
    cjk.user("把结账页面简体中文本地化");
    let before = tree(&fx.store());

    let out = fx.run(&["search", "--json", "kafka redis"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "no progress bar on a pipe");
    // Each snippet's exchange as an excerpt mention (`excerpt_context` = 2 each side).
    let excerpt = |seq| {
        dsh_reference::format_excerpt_mention(
            &dsh_reference::ExcerptRange {
                session_id: "s-kafka".into(),
                seq,
                before: 2,
                after: 2,
            },
            "Queue choice",
        )
    };
    let got: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        without_scores(got),
        json!([{
            "sessionId": "s-kafka",
            "origin": "dsh",
            "label": "Queue choice",
            "cwd": "/src/queue",
            "createdAt": 1_700_000_000_000i64,
            "mention": format_mention("s-kafka", Some("Queue choice")),
            "snippets": [
                {"role": "user", "number": 1, "seq": 0, "text": "Should we use Kafka or Redis for the job queue?",
                 "excerptMention": excerpt(0)},
                {"role": "assistant", "number": 2, "seq": 1, "text": "We chose Kafka over Redis: replay matters.",
                 "excerptMention": excerpt(1)},
            ],
        }])
    );
    // The index went to the cache dir, nothing into the store.
    assert_eq!(tree(&fx.store()), before);
    assert!(fx.cache().join("dsh-refs").is_dir());

    let out = fx.run(&["search", "--json", "结账"]);
    let got: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(got[0]["sessionId"], "s-cjk");
    assert_eq!(got[0]["snippets"][0]["text"], "把结账页面简体中文本地化");

    let out = fx.run(&["search", "--json", "kaf"]);
    let got: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(got[0]["sessionId"], "s-kafka", "the last word is a prefix");
}

/// With Claude Code and Codex fixture dirs configured, `search` finds their sessions too,
/// with an `origin` key and a badge; `--no-foreign-sources` leaves them out.
#[test]
fn foreign_sessions_are_searched_with_their_origin() {
    let fx = Fixture::new();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/dsh-foreign/tests/fixtures");
    fx.config(&format!(
        "[sources]\nclaude_code = {:?}\ncodex = {:?}\n",
        fixtures.join("claude").display().to_string(),
        fixtures.join("codex").display().to_string()
    ));
    Log::create(&fx.store(), "s-dsh", "/src/shop", 1_700_000_000_000)
        .user("the kafka consumer lags");
    let out = fx.run(&["search", "--json", "kafka consumer"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let got: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let mut origins: Vec<(String, String)> = got
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["sessionId"].as_str().unwrap().to_owned(),
                h["origin"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    origins.sort();
    assert_eq!(
        origins,
        [
            (
                "codex:0199a1b2-c3d4-7e5f-8a9b-000000000001".to_owned(),
                "codex".to_owned()
            ),
            ("s-dsh".to_owned(), "dsh".to_owned()),
        ]
    );
    let out = fx.run(&["search", "empty cart"]);
    let text = stdout(&out);
    assert!(
        text.starts_with("[claude] Fix checkout crash on empty cart\n"),
        "{text}"
    );
    assert!(
        text.contains("claude-code:5f1c2d3e-0000-4000-8000-000000000001"),
        "{text}"
    );
    let out = fx.run(&["--no-foreign-sources", "search", "--json", "empty cart"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "[]\n");
}

#[test]
fn no_match_and_invalid_queries() {
    let fx = Fixture::new();
    let mut log = Log::create(&fx.store(), "s", "/w", 1);
    log.user("hello");
    let out = fx.run(&["search", "--json", "nowhere"]);
    assert!(out.status.success());
    assert_eq!(stdout(&out), "[]\n");
    let out = fx.run(&["search", "nowhere"]);
    assert!(out.status.success());
    assert_eq!(stdout(&out), "no matching sessions\n");

    let out = fx.run(&["search", "\"unbalanced"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("unbalanced quote"),
        "{}",
        stderr(&out)
    );
    let out = fx.run(&["search", "--json", "\"unbalanced"]);
    assert_eq!(out.status.code(), Some(2));
    let err: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(err["error"]["code"], "SEARCH_INVALID_QUERY");
    for args in [&["search", "  "][..], &["search", "--limit", "0", "x"][..]] {
        let out = fx.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
    fx.config("[search]\nenabled = false\n");
    let out = fx.run(&["search", "hello"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("disabled"));
}

#[test]
fn human_output_shows_hostile_text_with_controls_visible() {
    let fx = Fixture::new();
    let index_dir = fx.dir.path().join("own-index");
    fx.config(&format!(
        "[search]\nindex_dir = {:?}\n",
        index_dir.display().to_string()
    ));
    let mut log = Log::create(&fx.store(), "s-evil", "/w", 1);
    log.user("\u{1b}[2J\u{202e}<b>evilword</b>\u{7}");
    log.title("bad\u{1b}]0;title\u{7}");
    let out = fx.run(&["search", "evilword"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}') && !text.contains('\u{202e}'),
        "{text:?}"
    );
    assert!(
        text.contains("\\x1B[2J\\u{202E}<b>evilword</b>\\x07"),
        "{text}"
    );
    assert!(text.contains("bad\\x1B]0;title\\x07"), "{text}");
    assert!(text.contains("  user #1: "), "{text}");
    assert!(
        index_dir.join("meta.json").is_file(),
        "config index_dir used"
    );
}

#[test]
fn several_processes_search_while_one_indexes() {
    let fx = Fixture::new();
    for i in 0..400 {
        let mut log = Log::create(&fx.store(), &format!("s{i:03}"), "/w", i);
        for j in 0..10 {
            log.user(&format!(
                "shared topic{j} number{i} with some filler words to index"
            ));
        }
    }
    let children: Vec<_> = (0..3)
        .map(|_| {
            fx.command(&["search", "--json", "--limit", "1000", "shared"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{:?}: {} {}",
            out.status,
            stderr(&out),
            stdout(&out)
        );
        let hits: Value = serde_json::from_str(&stdout(&out)).unwrap();
        // Whoever indexed sees everything; the others see what was committed so far.
        assert!(hits.as_array().unwrap().len() <= 400);
    }
    let out = fx.run(&["search", "--json", "--limit", "1000", "shared number7 "]);
    let hits: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(hits.as_array().unwrap().len(), 1);
    let out = fx.run(&["search", "--json", "--limit", "1000", "shared"]);
    let hits: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(hits.as_array().unwrap().len(), 400);
}

#[test]
fn search_on_a_missing_store_is_refused_and_makes_no_cache_folder() {
    // Issue 23, break 8: `search` on a store that does not exist printed "no matching
    // sessions", exited 0 and made a cache folder for it.
    let fx = Fixture::new();
    let missing = fx.dir.path().join("typo-store");
    let out = fx
        .command(&["search", "hello"])
        .arg("--store")
        .arg(&missing)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("CLI_NO_STORE: no store at {}", missing.display())),
        "{}",
        stderr(&out)
    );
    assert!(!missing.exists());
    assert!(!fx.cache().exists(), "a cache folder was made");
    // The default store missing (a fresh machine, no other tool's sessions): nothing to
    // find, nothing made.
    let home = fx.dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_dsh-refs"))
        .args(["search", "hello"])
        .env_remove("DSH_REFS_STORE")
        .env_remove("DSH_REFS_CONFIG")
        .env("HOME", &home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "no matching sessions\n");
    assert_eq!(tree(&home), Vec::<PathBuf>::new(), "nothing made");
}

#[test]
fn search_while_another_process_builds_the_index_says_how_far_it_is() {
    // Issue 23, break 8: during a concurrent first build `search` could answer "no
    // matching sessions".
    let fx = Fixture::new();
    let index_dir = fx.dir.path().join("own-index");
    fx.config(&format!(
        "[search]\nindex_dir = {:?}\n",
        index_dir.display().to_string()
    ));
    for i in 0..2 {
        Log::create(&fx.store(), &format!("early{i}"), "/w", i).user("earlyword");
    }
    let index = dsh_search::SessionIndex::open(
        &fx.store(),
        &dsh_search::IndexOptions {
            index_dir: Some(index_dir.clone()),
        },
    )
    .unwrap();
    index
        .refresh(&dsh_search::Cancel::new(), &mut |_| {})
        .unwrap();
    drop(index);
    for i in 0..3 {
        Log::create(&fx.store(), &format!("late{i}"), "/w", 10 + i).user("laterword");
    }
    // Another process holds the writer (tantivy's lock is an advisory lock on this file).
    let lock = std::fs::File::open(index_dir.join(".tantivy-writer.lock")).unwrap();
    lock.lock().unwrap();
    let out = fx.run(&["search", "laterword"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "the index is being built (2 of 5 sessions)\n");
    assert!(
        stderr(&out).contains("another process is building the search index (2 of 5"),
        "{}",
        stderr(&out)
    );
    // What is already in is found, with the same warning.
    let out = fx.run(&["search", "earlyword"]);
    let labels = stdout(&out)
        .lines()
        .filter(|l| l.starts_with("early"))
        .count();
    assert_eq!(labels, 2, "{}", stdout(&out));
    assert!(stderr(&out).contains("2 of 5"), "{}", stderr(&out));
    lock.unlock().unwrap();
    let out = fx.run(&["search", "--json", "laterword"]);
    let hits: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(hits.as_array().unwrap().len(), 3);
    assert_eq!(stderr(&out), "");
}

/// Issue 27 minors 18 and 19: `search --help` names every key `search --json` prints
/// (`origin` among them) and the limit's range; a limit outside it is a usage error.
#[test]
fn help_names_every_json_key_and_the_limit_range() {
    let fx = Fixture::new();
    let mut log = Log::create(&fx.store(), "s-help", "/src/help", 1_700_000_000_000);
    log.user("Where is the help text?");
    log.title("Help text");
    let out = fx.run(&["search", "--json", "help"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let hits: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let hit = hits[0].as_object().unwrap();
    let snippet = hit["snippets"][0].as_object().unwrap();
    let help = fx.run(&["search", "--help"]);
    let text = stdout(&help);
    // The help wraps its lines: compare with the line breaks as spaces.
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let keys = hit.keys().chain(snippet.keys());
    for key in keys {
        assert!(
            flat.contains(&format!("{key},"))
                || flat.contains(&format!("{key}?,"))
                || flat.contains(&format!("{key}}}"))
                || flat.contains(&format!("{key}:")),
            "{key} missing from: {text}"
        );
    }
    assert!(flat.contains("At most N sessions, 1 to 1000"), "{text}");
    for bad in ["0", "1001", "-1"] {
        let out = fx.run(&["search", "--limit", bad, "help"]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", stderr(&out));
    }
}

/// The search index directory in the fixture's cache (the default location).
fn default_index_dir(fx: &Fixture) -> PathBuf {
    let cache = fx.cache().join("dsh-refs");
    let store_dir = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("search").is_dir())
        .unwrap();
    store_dir.join("search")
}

/// Issue 34 item 4: in the default cache location a damaged or empty format mark (a power
/// loss) and a FIFO where an index file belongs are set aside and the index rebuilt, with one
/// notice; nothing else in the directory is touched. A user-configured `index_dir` in the
/// same state is still refused, and the message says how to repair it.
#[test]
fn a_damaged_or_empty_index_mark_in_our_cache_is_set_aside_and_rebuilt() {
    let fx = Fixture::new();
    Log::create(&fx.store(), "s-kafka", "/src/queue", 1_700_000_000_000)
        .user("Should we use Kafka or Redis for the job queue?");
    let first = fx.run(&["search", "--json", "kafka"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let dir = default_index_dir(&fx);
    std::fs::write(dir.join("notes.txt"), "mine").unwrap();
    type Damage = (&'static str, fn(&Path));
    let damages: [Damage; 3] = [
        ("damaged", |dir| {
            std::fs::write(dir.join("dsh-search-format"), b"\0\0garbage").unwrap();
        }),
        ("zero-length", |dir| {
            std::fs::write(dir.join("dsh-search-format"), b"").unwrap();
        }),
        ("FIFO meta.json", |dir| {
            std::fs::remove_file(dir.join("meta.json")).unwrap();
            let made = Command::new("mkfifo").arg(dir.join("meta.json")).status();
            assert!(made.unwrap().success());
        }),
    ];
    for (what, damage) in damages {
        damage(&dir);
        let out = fx.run(&["search", "--json", "kafka"]);
        assert!(out.status.success(), "{what}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "{what}: one notice: {err}");
        assert!(
            err.contains("set aside") && err.contains("rebuilding it"),
            "{what}: {err}"
        );
        let hits: Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(hits[0]["sessionId"], "s-kafka", "{what}");
        // Set aside, not deleted; the user's file stays.
        let names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names.iter().any(|n| n.contains(".damaged-")),
            "{what}: {names:?}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
            "mine"
        );
        // Repaired for good: the next search says nothing.
        let again = fx.run(&["search", "--json", "kafka"]);
        assert!(again.status.success());
        assert_eq!(stderr(&again), "", "{what}");
    }

    // The same damage in a directory the user named: refused, nothing changed, and how to
    // repair it said.
    let named = fx.dir.path().join("my-index");
    fx.config(&format!(
        "[search]\nindex_dir = {:?}\n",
        named.display().to_string()
    ));
    let made = fx.run(&["search", "--json", "kafka"]);
    assert!(made.status.success(), "{}", stderr(&made));
    std::fs::write(named.join("dsh-search-format"), b"").unwrap();
    let before = tree(&named);
    let out = fx.run(&["search", "--json", "kafka"]);
    assert!(!out.status.success());
    // `--json`: the error is the JSON answer.
    let err: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(err["error"]["code"], "SEARCH_INDEX_DIR_REFUSED");
    let message = err["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("To repair:") && message.contains("index_dir"),
        "{message}"
    );
    assert_eq!(tree(&named), before, "nothing changed");
}

/// Issue 34 item 2: a title holding a key (whole, or cut short at its end as a fallback title
/// is) is shown redacted by `sessions`, `search` and `candidates`; the JSON `title`/`label`
/// fields keep the stored title, every `mention` carries the redacted label, and
/// `[references] redact_secrets = false` shows everything as stored.
#[test]
fn titles_holding_keys_are_shown_redacted_and_json_keeps_them() {
    let fx = Fixture::new();
    let key = format!("sk-ant-api03-{}", "aB3x".repeat(10));
    let whole = format!("Use {key}");
    let cut = "Rotate sk-ant-api03-AbCdE";
    let mut a = Log::create(&fx.store(), "s-whole", "/w", 1_700_000_000_000);
    a.user("deploy the zebrafish service");
    a.title(&whole);
    let mut b = Log::create(&fx.store(), "s-cut", "/w", 1_700_000_000_001);
    b.user("rotate the zebrafish key");
    b.title(cut);
    Log::create(&fx.store(), "s-target", "/w", 1_700_000_000_002).user("hello");
    let shown_whole = "Use [redacted: anthropic-api-key]";
    let shown_cut = "Rotate [redacted: anthropic-api-key]";
    for args in [
        &["sessions"][..],
        &["search", "zebrafish"][..],
        &["candidates", "--session", "s-target"][..],
    ] {
        let out = fx.run(args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let text = stdout(&out);
        assert!(
            !text.contains("aB3x") && !text.contains("AbCdE"),
            "{args:?}: {text}"
        );
        assert!(
            text.contains(shown_whole) && text.contains(shown_cut),
            "{args:?}: {text}"
        );
    }
    let sessions: Value = serde_json::from_slice(&fx.run(&["sessions", "--json"]).stdout).unwrap();
    let titles: Vec<&str> = sessions
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["title"].as_str())
        .collect();
    assert!(
        titles.contains(&whole.as_str()) && titles.contains(&cut),
        "{titles:?}"
    );
    for args in [
        &["search", "--json", "zebrafish"][..],
        &["candidates", "--session", "s-target", "--json"][..],
    ] {
        let hits: Value = serde_json::from_slice(&fx.run(args).stdout).unwrap();
        for hit in hits.as_array().unwrap() {
            let label = hit["label"].as_str().unwrap();
            if label == "hello" {
                continue;
            }
            assert!(label == whole || label == cut, "{args:?}: {label}");
            let mention = hit["mention"].as_str().unwrap();
            assert!(
                mention.contains("[redacted: anthropic-api-key"),
                "{mention}"
            );
            assert!(
                !mention.contains("aB3x") && !mention.contains("AbCdE"),
                "{mention}"
            );
        }
    }
    fx.config("[references]\nredact_secrets = false\n");
    for args in [&["sessions"][..], &["search", "zebrafish"][..]] {
        let text = stdout(&fx.run(args));
        // `sessions` cuts a title at 48 cells: the key's start is enough.
        assert!(
            text.contains(&whole[..30]) && text.contains(cut),
            "{args:?}: {text}"
        );
    }
}
