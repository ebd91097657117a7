//! The CLI details a daily user notices, through the real binary: `send --json` lines, a
//! closed stdout (EPIPE), `--demo` with every subcommand, a missing store, `--help` texts.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use pretty_assertions::assert_eq;
use serde_json::Value;

use dsh_store::{EventData, SessionStore};

/// A temporary home: config file, XDG dirs (so the default store is inside it), a cwd.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        let home = Home {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::write(home.config(), "").unwrap();
        home
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("config.toml")
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The binary with a clean environment: no store/config variables, no API key, the
    /// platform dirs inside the temporary home, a fixed help width.
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_dsh-refs"));
        cmd.args(args)
            .current_dir(self.dir.path())
            .env_remove("DSH_REFS_STORE")
            .env_remove("DSH_REFS_CONFIG")
            .env_remove("DEEPSEEK_API_KEY")
            .env_remove("COLUMNS")
            .env("HOME", self.dir.path())
            .env("XDG_DATA_HOME", self.path("data"))
            .env("XDG_CONFIG_HOME", self.path("config-home"));
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// Run with stdout a pipe whose reading end is already closed: every write is EPIPE.
    fn run_into_closed_pipe(&self, args: &[&str]) -> Output {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        self.command(args)
            .stdout(Stdio::from(writer))
            .stderr(Stdio::piped())
            .output()
            .unwrap()
    }
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

fn status(out: &Output) -> Option<i32> {
    out.status.code()
}

#[test]
fn send_json_streams_golden_lines() {
    let home = Home::new();
    let store = home.path("store");
    let out = home.run(&[
        "--store",
        store.to_str().unwrap(),
        "--config",
        home.config().to_str().unwrap(),
        "send",
        "--json",
        "--session",
        "s-json",
        "hello there",
    ]);
    assert_eq!(status(&out), Some(0), "{}", stderr(&out));
    insta::assert_snapshot!(stdout(&out));
    for line in stdout(&out).lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert!(v["type"].is_string(), "{line}");
    }
}

#[test]
fn send_json_reports_an_error_as_the_last_line() {
    let home = Home::new();
    let store = home.path("store");
    let out = home.run(&[
        "--store",
        store.to_str().unwrap(),
        "--config",
        home.config().to_str().unwrap(),
        "send",
        "--json",
        "--session",
        "s-json",
        "see @[x](dsh-session:bm9wZQ) please",
    ]);
    assert_eq!(status(&out), Some(1));
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "error");
    assert!(
        last["code"]
            .as_str()
            .unwrap()
            .starts_with("SESSION_REFERENCE_"),
        "{last}"
    );
    assert!(last["message"].is_string());
}

#[test]
fn a_closed_stdout_ends_every_subcommand_quietly() {
    let home = Home::new();
    let store = home.path("store");
    std::fs::create_dir_all(&store).unwrap();
    let s = store.to_str().unwrap();
    let c = home.config();
    let c = c.to_str().unwrap();
    let cases: [&[&str]; 5] = [
        &["--demo", "sessions"],
        &["--demo", "sessions", "--json"],
        &["--demo", "candidates", "--session", "x"],
        &["--demo", "prepare", "--session", "x", "hello"],
        &[
            "--store",
            s,
            "--config",
            c,
            "send",
            "--session",
            "s-pipe",
            "hi",
        ],
    ];
    for args in cases {
        let out = home.run_into_closed_pipe(args);
        assert_eq!(status(&out), Some(0), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{args:?}");
    }
    // `send` still finished its turn and logged it.
    let writer = SessionStore::new(&store)
        .open_writer("s-pipe", None)
        .unwrap();
    let ends: Vec<String> = writer
        .read_all_events()
        .unwrap()
        .iter()
        .filter_map(|e| match &e.data {
            EventData::TurnEnd { reason, .. } => Some(reason.kind.as_str().to_owned()),
            _ => None,
        })
        .collect();
    assert_eq!(ends, ["completed"]);
}

#[test]
fn demo_works_with_every_subcommand_and_refuses_an_explicit_store() {
    let home = Home::new();
    let out = home.run(&["--demo", "sessions", "--json"]);
    assert_eq!(status(&out), Some(0), "{}", stderr(&out));
    let rows: Vec<Value> = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(rows.len() >= 3, "{rows:?}");
    let first = rows[0]["sessionId"].as_str().unwrap().to_owned();

    let out = home.run(&["--demo", "candidates", "--session", &first, "--json"]);
    assert_eq!(status(&out), Some(0), "{}", stderr(&out));
    let candidates: Vec<Value> = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(candidates.len(), rows.len() - 1);

    let mention = candidates[0]["mention"].as_str().unwrap();
    let out = home.run(&[
        "--demo",
        "prepare",
        "--session",
        "fresh",
        "--json",
        &format!("look at {mention}"),
    ]);
    assert_eq!(status(&out), Some(0), "{}", stderr(&out));
    let prepared: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(prepared["context"].is_object());

    // `send` writes into the temporary copy only: nothing appears in the user's store.
    let out = home.run(&["--demo", "send", "--session", "demo-send", "hi"]);
    assert_eq!(status(&out), Some(0), "{}", stderr(&out));
    assert!(!home.path("data").exists(), "the default store was touched");

    // The environment's store is ignored under --demo; the command line's is refused.
    let mut cmd = home.command(&["--demo", "sessions", "--json"]);
    cmd.env("DSH_REFS_STORE", home.path("elsewhere"));
    let out = cmd.output().unwrap();
    assert_eq!(status(&out), Some(0), "{}", stderr(&out));
    let again: Vec<Value> = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(again.len(), rows.len());
    let out = home.run(&["--demo", "--store", "/tmp", "sessions"]);
    assert_eq!(status(&out), Some(2));
    assert!(stderr(&out).contains("drop --store"), "{}", stderr(&out));
}

#[test]
fn a_named_store_that_does_not_exist_is_an_error_for_reads_and_created_by_send() {
    let home = Home::new();
    let missing = home.path("typo-store");
    let m = missing.to_str().unwrap();
    let reads: [&[&str]; 4] = [
        &["--store", m, "sessions"],
        &["--store", m, "sessions", "--json"],
        &["--store", m, "candidates", "--session", "x"],
        &["--store", m, "prepare", "--session", "x", "hi"],
    ];
    for args in reads {
        let out = home.run(args);
        assert_eq!(status(&out), Some(1), "{args:?}");
        let all = stdout(&out) + &stderr(&out);
        assert!(all.contains(&format!("no store at {m}")), "{args:?}: {all}");
    }
    // The same through the environment variable.
    let mut cmd = home.command(&["sessions"]);
    cmd.env("DSH_REFS_STORE", &missing);
    let out = cmd.output().unwrap();
    assert_eq!(status(&out), Some(1));
    assert!(
        stderr(&out).contains("CLI_NO_STORE: no store at"),
        "{}",
        stderr(&out)
    );

    let out = home.run(&["--store", m, "send", "--session", "first", "hello"]);
    assert_eq!(status(&out), Some(0), "{}", stderr(&out));
    assert!(missing.is_dir());
    let out = home.run(&["--store", m, "sessions", "--json"]);
    assert_eq!(status(&out), Some(0), "{}", stderr(&out));
}

#[test]
fn the_default_store_missing_means_no_sessions_yet() {
    let home = Home::new();
    let out = home.run(&["sessions"]);
    assert_eq!(status(&out), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "no sessions yet\n");
    let out = home.run(&["sessions", "--json"]);
    assert_eq!(stdout(&out).trim(), "[]");
    assert!(
        !Path::new(&home.path("data"))
            .join("dsh-refs/store")
            .exists()
    );
}

#[test]
fn help_texts_are_grouped_wrapped_and_show_env_once() {
    let home = Home::new();
    for (name, args) in [
        ("help_main", &["--help"][..]),
        ("help_candidates", &["candidates", "--help"][..]),
        ("help_send", &["send", "--help"][..]),
    ] {
        // Set variables must not leak their values into the help either.
        let mut cmd = home.command(args);
        cmd.env("DSH_REFS_STORE", "/secret/place");
        let out = cmd.output().unwrap();
        assert_eq!(status(&out), Some(0));
        let text = stdout(&out);
        assert!(!text.contains("/secret/place"), "{text}");
        assert!(!text.contains("DSH_REFS_STORE="), "{text}");
        assert_eq!(text.matches("DSH_REFS_STORE").count(), 1, "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
        insta::assert_snapshot!(name, text);
    }
}

/// Issue 27 item 4: `--continue` in a directory without a dsh session says so (before it
/// needs a terminal), and cannot be combined with `--resume` or `--demo`.
#[test]
fn continue_without_a_session_here_says_so() {
    let home = Home::new();
    let store = home.path("store");
    let sessions = SessionStore::new(&store);
    let header = dsh_store::SessionHeader::new("elsewhere", 1, Some("/somewhere/else".into()));
    let mut w = sessions.open_writer("elsewhere", Some(header)).unwrap();
    w.append(vec![dsh_store::NewEvent::appended(EventData::UserMessage(
        dsh_store::Message::user_text("hi"),
    ))])
    .unwrap();
    drop(w);
    let s = store.to_str().unwrap();
    let out = home.run(&["--store", s, "--no-foreign-sources", "--continue"]);
    assert_eq!(status(&out), Some(1), "{}", stderr(&out));
    let cwd = home.dir.path().canonicalize().unwrap();
    assert!(
        stderr(&out).contains(&format!(
            "CLI_NOTHING_TO_CONTINUE: no dsh session to continue in {}",
            cwd.display()
        )),
        "{}",
        stderr(&out)
    );
    for args in [
        &["--store", s, "--continue", "--resume", "elsewhere"][..],
        &["--continue", "--demo"][..],
    ] {
        let out = home.run(args);
        assert_eq!(status(&out), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("cannot be used with"),
            "{}",
            stderr(&out)
        );
    }
}

/// Issue 27 minor 23: a `--demo` run leaves nothing in the cache dir — not the listing
/// index of its temporary store, not a full-text index — while the cache dir's other
/// contents stay.
#[test]
fn demo_runs_leave_nothing_in_the_cache_dir() {
    let home = Home::new();
    let cache = home.path("cache");
    let app_cache = cache.join("dsh-refs");
    let mine = app_cache.join("store-0123456789abcdef");
    std::fs::create_dir_all(&mine).unwrap();
    std::fs::write(mine.join("index.bin"), "not ours to remove").unwrap();
    let run = |args: &[&str]| {
        let out = home
            .command(args)
            .env("XDG_CACHE_HOME", &cache)
            .output()
            .unwrap();
        assert_eq!(status(&out), Some(0), "{args:?}: {}", stderr(&out));
        out
    };
    let rows: Vec<Value> =
        serde_json::from_str(&stdout(&run(&["--demo", "sessions", "--json"]))).unwrap();
    let first = rows[0]["sessionId"].as_str().unwrap().to_owned();
    run(&["--demo", "candidates", "--session", &first, "--query", "a"]);
    run(&["--demo", "search", "--json", "the"]);
    run(&["--demo", "send", "--session", "demo-send", "hi"]);
    let left: Vec<String> = std::fs::read_dir(&app_cache)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["store-0123456789abcdef"]);
    assert_eq!(
        std::fs::read_to_string(mine.join("index.bin")).unwrap(),
        "not ours to remove"
    );
}

/// Issue 27 minor 18: `candidates --help` says it lists dsh's candidates (the popup offers
/// more) and that a limit must be 1 or more; the main help says the same.
#[test]
fn candidates_help_describes_dsh_listing_not_the_popup() {
    let home = Home::new();
    for args in [&["candidates", "--help"][..], &["--help"][..]] {
        let text = stdout(&home.run(args));
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(!flat.contains("what the @ popup offers"), "{text}");
        assert!(!flat.contains("as the @ popup offers them"), "{text}");
        assert!(flat.contains("as dsh's candidate listing"), "{text}");
    }
    let text = stdout(&home.run(&["candidates", "--help"]));
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("At most N results, 1 or more"), "{text}");
    assert!(flat.contains("newest created first"), "{text}");
    assert!(!flat.contains("for example --limit 0"), "{text}");
}
