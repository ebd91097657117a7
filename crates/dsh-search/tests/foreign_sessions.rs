//! Claude Code and Codex sessions in the index beside the store's (docs/search.md, foreign
//! sources): found with their origin, only their visible conversation, updated by stamp,
//! dropped when gone or when their source is left out, and nothing written to their dirs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test

mod support;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use dsh_foreign::{ForeignSource, Origin, SourceConfig};
use dsh_search::{Cancel, IndexOptions, SessionIndex};
use pretty_assertions::assert_eq;
use support::Log;

const CLAUDE_MAIN: &str = "claude-code:5f1c2d3e-0000-4000-8000-000000000001";
const CODEX_MAIN: &str = "codex:0199a1b2-c3d4-7e5f-8a9b-000000000001";
const CODEX_MAIN_FILE: &str =
    "sessions/2025/10/31/rollout-2025-10-31T08-00-00-0199a1b2-c3d4-7e5f-8a9b-000000000001.jsonl";
const CLAUDE_MAIN_FILE: &str = "projects/-home-dev-shop/5f1c2d3e-0000-4000-8000-000000000001.jsonl";

/// The foreign crate's fixture dirs, copied so a test may change them.
fn copy_fixtures(to: &Path) {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../dsh-foreign/tests/fixtures");
    copy_dir(&from.join("claude"), &to.join("claude"));
    copy_dir(&from.join("codex"), &to.join("codex"));
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn clean(text: &str) -> Option<String> {
    let t: Vec<&str> = text.split_whitespace().take(8).collect();
    (!t.is_empty()).then(|| t.join(" "))
}

fn sources(dir: &Path) -> Vec<ForeignSource> {
    [(Origin::ClaudeCode, "claude"), (Origin::Codex, "codex")]
        .into_iter()
        .map(|(origin, sub)| {
            ForeignSource::new(SourceConfig {
                root: SourceConfig::logs_dir(&origin, &dir.join(sub)),
                origin,
                max_line_bytes: dsh_foreign::jsonl::DEFAULT_MAX_LINE_BYTES,
                clean_title: clean,
                index_file: None,
                copy_limits: dsh_foreign::CopyLimits::default(),
            })
        })
        .collect()
}

struct Fixture {
    store: tempfile::TempDir,
    foreign: tempfile::TempDir,
    cache: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let fx = Fixture {
            store: tempfile::tempdir().unwrap(),
            foreign: tempfile::tempdir().unwrap(),
            cache: tempfile::tempdir().unwrap(),
        };
        copy_fixtures(fx.foreign.path());
        Log::create(fx.store.path(), "dsh-1", "/home/dev/shop", 1)
            .user("Should the kafka consumer batch?");
        fx
    }

    fn index(&self, with_foreign: bool) -> SessionIndex {
        let index = SessionIndex::open(
            self.store.path(),
            &IndexOptions {
                index_dir: Some(self.cache.path().join("search")),
            },
        )
        .unwrap();
        if with_foreign {
            index.with_foreign_sources(sources(self.foreign.path()))
        } else {
            index
        }
    }

    fn file(&self, rel: &str) -> PathBuf {
        let (tool, rest) = if rel.starts_with("sessions/") {
            ("codex", rel)
        } else {
            ("claude", rel)
        };
        self.foreign.path().join(tool).join(rest)
    }
}

fn refresh(index: &SessionIndex) -> dsh_search::RefreshOutcome {
    index.refresh(&Cancel::new(), &mut |_| {}).unwrap()
}

fn found(index: &SessionIndex, q: &str) -> Vec<(String, Origin)> {
    let mut hits: Vec<(String, Origin)> = index
        .search(q, 20)
        .unwrap()
        .into_iter()
        .map(|h| (h.session_id, h.origin))
        .collect();
    hits.sort();
    hits
}

/// Every file under `dir` with its length and mtime.
fn tree(dir: &Path) -> Vec<(PathBuf, u64, std::time::SystemTime)> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        if meta.is_dir() {
            out.extend(tree(&entry.path()));
        } else {
            out.push((entry.path(), meta.len(), meta.modified().unwrap()));
        }
    }
    out.sort();
    out
}

#[test]
fn foreign_sessions_are_found_with_their_origin_and_only_their_visible_text() {
    let fx = Fixture::new();
    let before = tree(fx.foreign.path());
    let index = fx.index(true);
    let outcome = refresh(&index);
    assert_eq!(outcome.failed, 0, "{outcome:?}");
    assert_eq!(
        found(&index, "kafka consumer"),
        [
            (CODEX_MAIN.to_owned(), Origin::Codex),
            ("dsh-1".to_owned(), Origin::Dsh)
        ]
    );
    assert_eq!(
        found(&index, "empty cart"),
        [(CLAUDE_MAIN.to_owned(), Origin::ClaudeCode)]
    );
    assert_eq!(
        found(&index, "结账"),
        [(CODEX_MAIN.to_owned(), Origin::Codex)]
    );
    let hit = &index.search("empty cart", 1).unwrap()[0];
    assert_eq!(hit.label, "Fix checkout crash on empty cart");
    assert_eq!(hit.cwd.as_deref(), Some("/home/dev/shop"));
    // Thinking, tool traffic, sidechains, edited-away branches, injected context,
    // reasoning: not on the surface, so not found.
    for hidden in [
        "secret thinking",
        "tool output",
        "sidechain",
        "edited away",
        "injected instructions",
        "reasoning summary",
    ] {
        assert_eq!(found(&index, hidden), [], "{hidden}");
    }
    assert_eq!(
        tree(fx.foreign.path()),
        before,
        "nothing written to the tools' dirs"
    );
}

#[test]
fn foreign_logs_update_by_stamp() {
    let fx = Fixture::new();
    let index = fx.index(true);
    let first = refresh(&index);
    assert_eq!(first.indexed, 5, "one dsh session, two of each tool");
    let again = refresh(&index);
    assert_eq!((again.indexed, again.unchanged), (0, first.indexed));
    // Codex appends a turn: that rollout alone is read again.
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(fx.file(CODEX_MAIN_FILE))
        .unwrap();
    writeln!(
        f,
        r#"{{"timestamp": "2025-10-31T08:00:09.000Z", "type": "response_item", "payload": {{"type": "message", "role": "user", "content": [{{"type": "input_text", "text": "now the walrus migration"}}]}}}}"#
    )
    .unwrap();
    drop(f);
    let grown = refresh(&index);
    assert_eq!(grown.indexed, 1, "{grown:?}");
    assert_eq!(
        found(&index, "walrus"),
        [(CODEX_MAIN.to_owned(), Origin::Codex)]
    );
    // The change check sees foreign logs too.
    assert_eq!(
        index
            .refresh_if_changed(&Cancel::new(), &mut |_| {})
            .unwrap(),
        None
    );
    fs::remove_file(fx.file(CLAUDE_MAIN_FILE)).unwrap();
    // Before the update, the hit is already checked against the log: gone.
    assert_eq!(found(&index, "empty cart"), []);
    let removed = index
        .refresh_if_changed(&Cancel::new(), &mut |_| {})
        .unwrap()
        .unwrap();
    assert_eq!(removed.removed, 1, "{removed:?}");
}

#[test]
fn a_source_left_out_is_not_searched_and_leaves_the_index() {
    let fx = Fixture::new();
    refresh(&fx.index(true));
    let plain = fx.index(false);
    assert_eq!(
        found(&plain, "empty cart"),
        [],
        "hits of an unused source are dropped"
    );
    let outcome = refresh(&plain);
    assert_eq!(
        outcome.removed, 4,
        "two Claude Code sessions, two Codex rollouts"
    );
    assert_eq!(found(&plain, "kafka"), [("dsh-1".to_owned(), Origin::Dsh)]);
}

/// The messages of a long foreign session are numbered by their place in the conversation
/// in whichever piece a hit shows them, also when the session is read again because it
/// changed (issue 34: the last of 330 000 messages was numbered #14534, its place in the
/// last piece).
#[test]
fn a_long_foreign_session_numbers_its_messages_by_their_place() {
    use dsh_store::SessionQuery;
    let fx = Fixture::new();
    let append = |from: usize, to: usize, word_at: &[(usize, &str)]| {
        let mut f = fs::OpenOptions::new()
            .append(true)
            .open(fx.file(CODEX_MAIN_FILE))
            .unwrap();
        for i in from..to {
            let word = word_at
                .iter()
                .find(|(at, _)| *at == i)
                .map_or("filler", |(_, w)| w);
            writeln!(
                f,
                r#"{{"timestamp": "2025-10-31T09:00:{:02}.000Z", "type": "response_item", "payload": {{"type": "message", "role": "user", "content": [{{"type": "input_text", "text": "turn {i} of a long rollout with {word} in it"}}]}}}}"#,
                i % 60
            )
            .unwrap();
        }
    };
    let codex = sources(fx.foreign.path()).remove(1);
    let before = codex.read_surface(CODEX_MAIN).unwrap().events.len() as u64;
    append(
        0,
        200,
        &[(0, "hotelword"), (120, "kiloword"), (199, "indiaword")],
    );
    let index = fx.index(true).with_piece_bytes(300);
    let outcome = refresh(&index);
    assert!(outcome.pieces >= 20, "{outcome:?}");
    let number_of = |q: &str| -> Vec<(String, u64)> {
        let hits = index.search(q, 5).unwrap();
        assert_eq!(hits.len(), 1, "{q}");
        hits[0]
            .snippets
            .iter()
            .map(|s| (s.role.as_str().to_owned(), s.number))
            .collect()
    };
    assert_eq!(number_of("hotelword"), [("user".to_owned(), before + 1)]);
    assert_eq!(number_of("kiloword"), [("user".to_owned(), before + 121)]);
    assert_eq!(number_of("indiaword"), [("user".to_owned(), before + 200)]);
    // Changed since indexed: read again through the source, numbered the same way.
    append(200, 260, &[(259, "limaword")]);
    assert_eq!(number_of("kiloword"), [("user".to_owned(), before + 121)]);
    refresh(&index);
    assert_eq!(number_of("limaword"), [("user".to_owned(), before + 260)]);
}

#[test]
fn a_long_foreign_session_is_indexed_in_pieces_and_found_as_one() {
    let fx = Fixture::new();
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(fx.file(CODEX_MAIN_FILE))
        .unwrap();
    for i in 0..80 {
        let word = match i {
            0 => "hotelword",
            79 => "indiaword",
            _ => "filler",
        };
        writeln!(
            f,
            r#"{{"timestamp": "2025-10-31T09:00:{:02}.000Z", "type": "response_item", "payload": {{"type": "message", "role": "user", "content": [{{"type": "input_text", "text": "turn {i} of a long rollout with {word} in it"}}]}}}}"#,
            i % 60
        )
        .unwrap();
    }
    drop(f);
    let index = fx.index(true).with_piece_bytes(300);
    let outcome = refresh(&index);
    assert_eq!(outcome.failed, 0, "{outcome:?}");
    assert!(outcome.pieces >= 5, "{outcome:?}");
    // The first rollout message, one of its first turns and its last: in different pieces.
    assert_eq!(
        found(&index, "kafka hotelword indiaword"),
        [(CODEX_MAIN.to_owned(), Origin::Codex)]
    );
    let hits = index.search("hotelword indiaword", 5).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].cwd.as_deref(), Some("/home/dev/shop"));
}
