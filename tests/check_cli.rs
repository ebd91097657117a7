//! `dsh-refs check` through the real binary (docs/cli.md: check): a store this version wrote
//! is clean (exit 0); a log an earlier version wrote is named with its broken rules and
//! versions (exit 1) and stays untouched; usage errors exit 2, an unreadable store 3.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test
#![allow(clippy::similar_names)] // test code: `log` and `long` read fine

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pretty_assertions::assert_eq;
use serde_json::Value;

struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        let home = Home {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::write(
            home.path("config.toml"),
            "[model]\nprovider = \"offline\"\ncontext_tokens = 1024\n[search]\nenabled = false\n",
        )
        .unwrap();
        home
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn store(&self) -> PathBuf {
        self.path("store")
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_dsh-refs"))
            .arg("--store")
            .arg(self.store())
            .arg("--config")
            .arg(self.path("config.toml"))
            .arg("--no-foreign-sources")
            .args(args)
            .current_dir(self.dir.path())
            .env_remove("DSH_REFS_STORE")
            .env_remove("DSH_REFS_CONFIG")
            .env_remove("DEEPSEEK_API_KEY")
            .env("HOME", self.dir.path())
            .env("XDG_CACHE_HOME", self.path("cache"))
            .env("XDG_DATA_HOME", self.path("data"))
            .output()
            .unwrap()
    }

    /// Copy a fixture store (a folder of project folders) into the store.
    fn install(&self, from: &Path) {
        copy_tree(from, &self.store());
    }
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else if entry.file_name() != "README.md" {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8(out.stdout.clone()).unwrap(),
        String::from_utf8(out.stderr.clone()).unwrap(),
    )
}

const PREVIOUS: &str = "tests/fixtures/previous-version";
const PREVIOUS_LOG: &str = "store/--work-p--/prev-version/session.jsonl";

#[test]
fn a_store_this_version_wrote_is_clean() {
    let home = Home::new();
    // Long enough prompts to make the offline model compact the session automatically.
    let long = format!("question {}", "lorem ipsum dolor sit amet ".repeat(40));
    for _ in 0..4 {
        assert!(
            home.run(&["send", "--session", "mine", &long])
                .status
                .success()
        );
    }
    let log = std::fs::read_to_string(
        walk(&home.store())
            .into_iter()
            .find(|p| p.ends_with("session.jsonl"))
            .unwrap(),
    )
    .unwrap();
    assert!(
        log.contains("\"compaction/start\""),
        "the session was compacted"
    );
    let out = home.run(&["check"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert_eq!(
        stdout,
        "checked 1 session: every log follows dsh's rules (6816e8a3d5 and 0.1.0-rc.8)\n"
    );
    let out = home.run(&["check", "--session", "mine", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["checked"], 1);
    assert_eq!(v["withProblems"], 0);
    assert_eq!(v["sessions"], serde_json::json!([]));
}

#[test]
fn a_log_the_previous_version_wrote_is_named_with_its_rules_and_left_untouched() {
    let home = Home::new();
    home.install(&fixture(PREVIOUS));
    assert!(
        home.run(&["send", "--session", "fine", "hello"])
            .status
            .success()
    );
    let before = std::fs::read(home.path(PREVIOUS_LOG)).unwrap();
    let out = home.run(&["check"]);
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.starts_with("prev-version  "), "{stdout}");
    assert!(
        !stdout.contains("fine "),
        "a clean session is not listed: {stdout}"
    );
    for want in [
        "written by an earlier version of dsh-refs",
        "the log itself is untouched",
        "SHADOWED_NODES",
        "dsh 6816e8a3d5 and 0.1.0-rc.8: refuses to read the log",
        "missing 1",
        "KNOWN_EVENT_TYPE",
        "event type \"compact/start\" is unknown and not marked ignorable",
        "checked 2 sessions: 1 break dsh's rules",
    ] {
        assert!(stdout.contains(want), "{want:?} in {stdout}");
    }
    let out = home.run(&["check", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["checked"], 2);
    assert_eq!(v["withProblems"], 1);
    let session = &v["sessions"][0];
    assert_eq!(session["sessionId"], "prev-version");
    assert_eq!(session["writtenBy"], "earlier-dsh-refs");
    let rules: Vec<&str> = session["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["rule"].as_str().unwrap())
        .collect();
    assert_eq!(
        rules,
        [
            "KNOWN_EVENT_TYPE",
            "SHADOWED_NODES",
            "COMPACTION_BRACKET",
            "COMPACTION_CHECKPOINT"
        ]
    );
    let shadowed = &session["problems"][1];
    assert_eq!(
        shadowed["versions"],
        serde_json::json!(["6816e8a3d5", "0.1.0-rc.8"])
    );
    assert_eq!(shadowed["first"][0]["seq"], 45);
    // Read-only.
    assert_eq!(std::fs::read(home.path(PREVIOUS_LOG)).unwrap(), before);
}

#[test]
fn a_log_the_previous_version_wrote_stays_writable_and_new_events_follow_the_rules() {
    let home = Home::new();
    home.install(&fixture(PREVIOUS));
    let before = std::fs::read(home.path(PREVIOUS_LOG)).unwrap();
    let first = home.run(&["check", "--session", "prev-version", "--json"]);
    // Two more turns, the second compacting the session again.
    let long = format!("more {}", "lorem ipsum dolor sit amet ".repeat(40));
    let mut notices = 0;
    for _ in 0..2 {
        let out = home.run(&["send", "--session", "prev-version", &long]);
        let (_, stderr) = text(&out);
        assert!(out.status.success(), "{stderr}");
        notices += stderr
            .lines()
            .filter(|l| l.starts_with("dsh-refs: warning: SESSION_LOG_OUTDATED: "))
            .count();
    }
    assert_eq!(notices, 2, "one notice each time the session is opened");
    let after = std::fs::read(home.path(PREVIOUS_LOG)).unwrap();
    assert!(after.starts_with(&before), "appended, never rewritten");
    let log = String::from_utf8(after[before.len()..].to_vec()).unwrap();
    assert!(log.contains("\"compaction/start\""), "{log}");
    // The same problems as before: nothing the new events did.
    let again = home.run(&["check", "--session", "prev-version", "--json"]);
    let counts = |out: &Output| {
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["sessions"][0]["problems"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["rule"].clone(), p["events"].clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(counts(&again), counts(&first));
}

#[test]
fn a_log_dsh_wrote_before_its_release_is_reported_as_such() {
    let home = Home::new();
    home.install(&fixture(
        "crates/dsh-store/tests/fixtures/dsh-written/followed",
    ));
    let out = home.run(&["check", "--session", "followed-fork"]);
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout.contains(
            "written by dsh before 0.1.0-rc.8, whose compact/* records that release refuses"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("dsh 0.1.0-rc.8: refuses to read the log"),
        "{stdout}"
    );
    assert!(!stdout.contains("6816e8a3d5: refuses"), "{stdout}");
}

#[test]
fn a_log_dsh_rc8_wrote_is_never_called_earlier() {
    let home = Home::new();
    home.install(&fixture("crates/dsh-store/tests/fixtures/dsh-written/rc8"));
    let out = home.run(&["check", "--session", "rc8-parent"]);
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("written by dsh 0.1.0-rc.8 or newer"),
        "{stdout}"
    );
    assert!(!stdout.contains("earlier"), "{stdout}");
    // Writing into it: the notice names whose rules the log breaks, and never calls the
    // newer dsh that wrote it an earlier version.
    let out = home.run(&["send", "--session", "rc8-parent", "one more question"]);
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    let notice = stderr
        .lines()
        .find(|l| l.starts_with("dsh-refs: warning: SESSION_LOG_OUTDATED: "))
        .unwrap_or_else(|| panic!("a notice: {stderr}"));
    assert!(
        notice.contains("this log breaks rules of dsh 6816e8a3d5: dsh 6816e8a3d5 cannot read it"),
        "{notice}"
    );
    assert!(!notice.contains("earlier"), "{notice}");
    assert!(!notice.contains("0.1.0-rc.8"), "rc.8 reads it: {notice}");
    assert!(
        notice.ends_with("dsh-refs check --session rc8-parent"),
        "{notice}"
    );
}

#[test]
fn a_log_holding_dsh_0_1_1_image_blocks_is_read_and_written_cleanly() {
    let home = Home::new();
    home.install(&fixture("crates/dsh-store/tests/fixtures/dsh-written/rc2"));
    let out = home.run(&["check"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let out = home.run(&["send", "--session", "rc2-images", "what changed?"]);
    let (_, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("SESSION_LOG_OUTDATED"), "{stderr}");
    let out = home.run(&["check"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out).0);
    let out = home.run(&["sessions", "--json"]);
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows[0]["sessionId"], "rc2-images");
}

#[test]
fn usage_and_unreadable_stores_have_their_own_statuses() {
    let home = Home::new();
    // No store yet: it cannot be read.
    let out = home.run(&["check"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(text(&out).1.contains("CLI_STORE_UNREADABLE: no store at "));
    let out = home.run(&["check", "--json"]);
    assert_eq!(out.status.code(), Some(3));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["error"]["code"], "CLI_STORE_UNREADABLE");
    assert!(home.run(&["send", "--session", "a", "hi"]).status.success());
    let out = home.run(&["check", "--session", "nope"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(text(&out).1.contains("no session \"nope\""));
    // Another tool's session is not a dsh log.
    let out = home.run(&["check", "--session", "codex:0199"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(home.run(&["check", "--bogus"]).status.code(), Some(2));
    assert_eq!(
        home.run(&["check", "--session", "a"]).status.code(),
        Some(0)
    );
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// Issue 34, item 10: `assets/demo/generate.py` wrote logs `check` rejected (steps from 0,
/// tool results of role `tool`, a compaction of `compact/*` events outside a turn). The
/// committed demo store follows dsh's rules, and it is exactly what the generator writes
/// (when `python3` is there to run it), so neither can drift from the other.
#[test]
fn the_demo_store_is_clean_and_is_what_its_generator_writes() {
    let home = Home::new();
    let demo = fixture("assets/demo/store");
    home.install(&demo);
    let out = home.run(&["check"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("every log follows dsh's rules"), "{stdout}");

    let generated = home.path("generated");
    let ran = Command::new("python3")
        .arg(fixture("assets/demo/generate.py"))
        .arg(&generated)
        .output();
    let Ok(ran) = ran else {
        eprintln!("skipped the generator comparison: python3 is not installed");
        return;
    };
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let files = |root: &Path| -> Vec<(PathBuf, Vec<u8>)> {
        let mut files: Vec<_> = walk(root)
            .into_iter()
            .map(|p| {
                let bytes = std::fs::read(&p).unwrap();
                (p.strip_prefix(root).unwrap().to_owned(), bytes)
            })
            .collect();
        files.sort();
        files
    };
    let (committed, fresh) = (files(&demo), files(&generated));
    assert_eq!(
        committed.iter().map(|(p, _)| p).collect::<Vec<_>>(),
        fresh.iter().map(|(p, _)| p).collect::<Vec<_>>()
    );
    for ((path, want), (_, got)) in committed.iter().zip(&fresh) {
        assert!(
            want == got,
            "{} differs from what generate.py writes: run python3 assets/demo/generate.py",
            path.display()
        );
    }
}
