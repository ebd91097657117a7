//! A referenced log that is truncated, grows or is replaced while `prepare` streams it gives
//! a read failure or a consistent snapshot (what some readable prefix of one version of the
//! file gives), never a mix of versions.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::needless_pass_by_value,
    clippy::similar_names
)] // test code: small known values, helpers that take values for brevity

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_reference::source_read::read_source;
use dsh_reference::{ErrorCode, SourceHeader, project_surface, retain_source};
use dsh_store::{
    Event, EventAt, QueryError, SessionHeader, SessionQuery, SessionStore, SizedMessage, Surface,
    SurfaceOrder, SurfaceScan, SurfaceVisitor,
};
use serde_json::json;

const ID: &str = "moving";

/// `events` events of ~1 KB (direct messages and replies, turn ends between), compacted
/// once a third of the way; the texts random letters when `noisy` (so that a zstd log
/// stays large).
fn body_of(events: u64, salt: &str, noisy: bool) -> String {
    let mut out = String::new();
    let mut first = None;
    let mut last = 0;
    for seq in 0..events {
        let filler = if noisy {
            let mut rng = fastrand::Rng::with_seed(seq);
            (0..1000).map(|_| rng.alphanumeric()).collect::<String>() + "<\"é"
        } else {
            "x<\"é".repeat(250)
        };
        let text = format!("{salt} {seq} {filler}");
        let line = if seq == events / 3 {
            json!({"type": "user/message", "seq": seq, "time": seq, "data": {"id": format!("m{seq}"), "role": "user", "content": [{"type": "text", "text": text}], "source": {"kind": "plugin", "plugin": "compact"}}, "surfaceOp": {"op": "replace", "start": first.unwrap_or(0), "end": last}})
        } else if seq % 5 == 4 {
            json!({"type": "turn/end", "seq": seq, "time": seq, "data": {"turn": 1, "reason": {"kind": "completed"}}})
        } else {
            first.get_or_insert(seq);
            last = seq;
            json!({"type": "user/message", "seq": seq, "time": seq, "data": {"id": format!("m{seq}"), "role": "user", "content": [{"type": "text", "text": text}], "source": {"kind": "user"}}, "surfaceOp": "append"})
        };
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out
}

fn header_line() -> String {
    serde_json::to_string(&SessionHeader::new(ID, 1, Some("/src".into()))).unwrap() + "\n"
}

fn log_dir(root: &Path) -> PathBuf {
    dsh_store::paths::session_dir(root, Some("/src"), ID).unwrap()
}

/// The bytes of the log as stored in `format`.
fn stored(text: &str, zstd: bool) -> Vec<u8> {
    if zstd {
        // One frame per ~64 KB, as a writer appending batches makes them.
        let mut out = Vec::new();
        for chunk in text.as_bytes().chunks(64 * 1024) {
            out.extend(zstd::encode_all(chunk, 1).unwrap());
        }
        out
    } else {
        text.as_bytes().to_vec()
    }
}

fn log_path(root: &Path, zstd: bool) -> PathBuf {
    log_dir(root).join(if zstd {
        "session.jsonl.zstd"
    } else {
        "session.jsonl"
    })
}

fn write_log(root: &Path, text: &str, zstd: bool) -> PathBuf {
    fs::create_dir_all(log_dir(root)).unwrap();
    let path = log_path(root, zstd);
    fs::write(&path, stored(text, zstd)).unwrap();
    path
}

/// Result of the whole-surface path on `text`.
fn whole(text: &str, budget: usize) -> Result<String, ErrorCode> {
    let tmp = tempfile::tempdir().unwrap();
    write_log(tmp.path(), text, false);
    let surface = SessionStore::new(tmp.path()).read_surface(ID).unwrap();
    let header = SourceHeader {
        session_id: ID.into(),
        label: "L".into(),
        cwd: surface.session.cwd.clone(),
        captured_through_seq: surface.captured_through_seq,
    };
    retain_source(header, project_surface(&surface.events), budget)
        .map(|r| format!("{:?}", (r.data, r.stats, r.serialized_bytes)))
        .map_err(|e| e.code)
}

/// The header and the event lines of `text` up to and including seq `through`.
fn prefix_through(text: &str, through: u64) -> String {
    text.split_inclusive('\n')
        .take(2 + through as usize)
        .collect()
}

/// A store whose streaming reads run `action` when the `at`-th surface event is visited.
struct Hooked {
    inner: SessionStore,
    at: usize,
    action: Box<dyn Fn() + Send + Sync>,
    /// Let the visitor take message events by their sizes (as `prepare` does), instead of
    /// decoded in full.
    sized: bool,
    /// Hand the visitor the lines it keeps (as `prepare` does), instead of reading every
    /// kept item again.
    lines: bool,
    /// Message events the visitor was shown by their sizes.
    sized_visits: std::sync::atomic::AtomicUsize,
}

struct Hook<'a> {
    inner: &'a mut dyn SurfaceVisitor,
    seen: usize,
    at: usize,
    action: &'a (dyn Fn() + Send + Sync),
    sized: bool,
    lines: bool,
    sized_visits: &'a std::sync::atomic::AtomicUsize,
}

impl Hook<'_> {
    fn count(&mut self) {
        self.seen += 1;
        if self.seen == self.at {
            (self.action)();
        }
    }
}

impl SurfaceVisitor for Hook<'_> {
    fn visit(&mut self, event: &Event, removed: &[u64]) {
        self.visit_at(event, removed, EventAt::default(), None);
    }

    fn visit_at(
        &mut self,
        event: &Event,
        removed: &[u64],
        at: EventAt,
        order: Option<&dyn SurfaceOrder>,
    ) {
        self.count();
        self.inner.visit_at(event, removed, at, order);
    }

    fn takes_sized(&self) -> bool {
        self.sized && self.inner.takes_sized()
    }

    fn visit_sized(
        &mut self,
        message: &SizedMessage,
        removed: &[u64],
        at: EventAt,
        order: Option<&dyn SurfaceOrder>,
    ) {
        self.count();
        self.sized_visits
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.visit_sized(message, removed, at, order);
    }

    fn keeps_lines(&self) -> bool {
        self.lines && self.inner.keeps_lines()
    }

    fn keep_line(&mut self, seq: u64, line: &[u8]) {
        self.inner.keep_line(seq, line);
    }
}

impl SessionQuery for Hooked {
    fn list_sessions(&self) -> Result<Arc<Vec<SessionHeader>>, QueryError> {
        self.inner.list_sessions()
    }
    fn read_title(&self, id: &str) -> Result<Option<String>, QueryError> {
        self.inner.read_title(id)
    }
    fn read_surface(&self, id: &str) -> Result<Surface, QueryError> {
        self.inner.read_surface(id)
    }
    fn scan_surface(
        &self,
        id: &str,
        visitor: &mut dyn SurfaceVisitor,
    ) -> Result<SurfaceScan, QueryError> {
        let mut hook = Hook {
            inner: visitor,
            seen: 0,
            at: self.at,
            action: &*self.action,
            sized: self.sized,
            lines: self.lines,
            sized_visits: &self.sized_visits,
        };
        self.inner.scan_surface(id, &mut hook)
    }
}

#[derive(Debug, Clone, Copy)]
enum Change {
    /// Leave it alone (the harness itself must then give the whole log).
    Nothing,
    /// Cut the file to this percentage of its length.
    Truncate(u64),
    /// Append more events.
    Grow,
    /// Put a different log in its place (rename over it).
    Replace,
}

/// Run one change while streaming; the outcome must be a read failure or what a readable
/// prefix of the original (or, for growth, of the grown) log gives.
fn check(change: Change, at: usize, zstd: bool, budget: usize) -> &'static str {
    check_how(How::default(), change, at, zstd, budget)
}

/// How [`check_how`] reads.
#[derive(Debug, Clone, Copy, Default)]
struct How {
    /// The visitor takes message events by their sizes.
    sized: bool,
    /// Random texts (a zstd log of over 1 MiB, decompressed on a second thread).
    noisy: bool,
    /// The visitor keeps the lines of what it holds.
    lines: bool,
}

fn check_how(how: How, change: Change, at: usize, zstd: bool, budget: usize) -> &'static str {
    let tmp = tempfile::tempdir().unwrap();
    let original = header_line() + &body_of(3000, "old", how.noisy);
    let path = write_log(tmp.path(), &original, zstd);
    if how.noisy && zstd {
        assert!(fs::metadata(&path).unwrap().len() > 1 << 20);
    }
    let grown = original.clone()
        + &body_of(3200, "old", how.noisy)
            .split_inclusive('\n')
            .skip(3000)
            .collect::<String>();
    let root = tmp.path().to_owned();
    let action: Box<dyn Fn() + Send + Sync> = {
        let path = path.clone();
        let grown = grown.clone();
        let original = original.clone();
        Box::new(move || match change {
            Change::Nothing => {}
            Change::Truncate(percent) => {
                let len = fs::metadata(&path).unwrap().len();
                let file = fs::OpenOptions::new().write(true).open(&path).unwrap();
                file.set_len(len * percent / 100).unwrap();
            }
            Change::Grow => {
                let extra = stored(&grown, zstd);
                let old = stored(&original, zstd);
                let mut file = fs::OpenOptions::new().append(true).open(&path).unwrap();
                if zstd {
                    // New frames after the old ones.
                    file.write_all(&stored(&grown[original.len()..], true))
                        .unwrap();
                } else {
                    file.write_all(&extra[old.len()..]).unwrap();
                }
            }
            Change::Replace => {
                let other = header_line() + &body_of(2000, "new", how.noisy);
                let next = root.join("next");
                fs::write(&next, stored(&other, zstd)).unwrap();
                fs::rename(&next, &path).unwrap();
            }
        })
    };
    let store = Hooked {
        inner: SessionStore::new(tmp.path()),
        at,
        action,
        sized: how.sized,
        lines: how.lines,
        sized_visits: std::sync::atomic::AtomicUsize::new(0),
    };
    let got = read_source(&store, ID.into(), "L".into(), budget);
    let sized_visits = store
        .sized_visits
        .load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(sized_visits > 0, how.sized, "{sized_visits} sized visits");
    match got {
        Err(e) => {
            assert_eq!(
                e.code,
                ErrorCode::ReadFailed,
                "{change:?} zstd={zstd}: {e:?}"
            );
            println!("{change:?} zstd={zstd} budget {budget}: {}", e.message);
            "read failure"
        }
        Ok(r) => {
            let through = r.data.captured_through_seq.unwrap();
            let source = if through as usize >= 3000 {
                &grown
            } else {
                &original
            };
            let want = whole(&prefix_through(source, through), budget);
            let got = Ok(format!("{:?}", (r.data, r.stats, r.serialized_bytes)));
            assert_eq!(
                got, want,
                "{change:?} zstd={zstd} budget {budget}: through {through}"
            );
            match through {
                2999 => "snapshot",
                t if t < 2999 => "shorter snapshot",
                _ => "longer snapshot",
            }
        }
    }
}

/// The changes made to a log during a read, and the surface event at which they are made.
const CHANGES: [(Change, usize); 6] = [
    (Change::Nothing, 600),
    (Change::Truncate(50), 600),
    (Change::Truncate(50), 2400),
    (Change::Grow, 600),
    (Change::Replace, 600),
    (Change::Replace, 2400),
];

/// The outcomes every way of reading must give for the early changes (and no change).
fn early_outcomes(zstd: bool) -> [String; 5] {
    [
        format!("Nothing@600 zstd={zstd}: snapshot"),
        // A file renamed over the log is never seen: the scan reads its open handle.
        format!("Replace@600 zstd={zstd}: snapshot"),
        format!("Replace@2400 zstd={zstd}: snapshot"),
        // Cut early: the scan ends where the file now ends.
        format!("Truncate(50)@600 zstd={zstd}: shorter snapshot"),
        // Grown early: a plain log's appended events are read too; a zstd log is read up
        // to the length it had when it was opened.
        if zstd {
            format!("Grow@600 zstd={zstd}: snapshot")
        } else {
            format!("Grow@600 zstd={zstd}: longer snapshot")
        },
    ]
}

/// Count the outcome of every change of [`CHANGES`], plain and zstd, at two budgets.
fn tally(outcomes: &mut std::collections::BTreeMap<String, usize>, how: How) {
    for zstd in [false, true] {
        for budget in [3_000, 50_000_000] {
            for (change, at) in CHANGES {
                let outcome = check_how(how, change, at, zstd, budget);
                *outcomes
                    .entry(format!("{change:?}@{at} zstd={zstd}: {outcome}"))
                    .or_insert(0) += 1;
            }
        }
    }
}

#[test]
fn a_log_changing_while_streamed_is_a_read_failure_or_a_consistent_snapshot() {
    // 2 400 surface events: change the log early in the scan, or at its very end (after
    // the whole file was read, before the kept items are read again).
    let mut outcomes = std::collections::BTreeMap::new();
    for zstd in [false, true] {
        for budget in [3_000, 50_000_000] {
            for (change, at) in [
                (Change::Nothing, 600),
                (Change::Truncate(50), 600),
                (Change::Truncate(80), 600),
                (Change::Truncate(50), 2400),
                (Change::Grow, 600),
                (Change::Replace, 600),
                (Change::Replace, 2400),
            ] {
                let outcome = check(change, at, zstd, budget);
                *outcomes
                    .entry(format!("{change:?}@{at} zstd={zstd}: {outcome}"))
                    .or_insert(0) += 1;
            }
        }
    }
    println!("{outcomes:#?}");
    for zstd in [false, true] {
        for key in early_outcomes(zstd) {
            assert_eq!(outcomes.get(&key), Some(&2), "{key}: {outcomes:#?}");
        }
        // Cut after the scan: the newest kept items are gone when read again.
        let late = format!("Truncate(50)@2400 zstd={zstd}: read failure");
        assert!(outcomes.contains_key(&late), "{late}: {outcomes:#?}");
    }
}

#[test]
fn the_same_holds_when_messages_are_only_measured() {
    // As above, with the visitor taking message events by their sizes (what `prepare`
    // does); the same outcomes are required.
    let how = How {
        sized: true,
        noisy: false,
        lines: false,
    };
    let mut outcomes = std::collections::BTreeMap::new();
    tally(&mut outcomes, how);
    println!("{outcomes:#?}");
    for zstd in [false, true] {
        for key in early_outcomes(zstd) {
            assert_eq!(outcomes.get(&key), Some(&2), "{key}: {outcomes:#?}");
        }
        let late = format!("Truncate(50)@2400 zstd={zstd}: read failure");
        assert!(outcomes.contains_key(&late), "{late}: {outcomes:#?}");
    }
}

#[test]
fn a_large_zstd_log_read_ahead_on_a_second_thread_changing_while_streamed() {
    // Over 1 MiB compressed, so it is decompressed ahead of the scan: every outcome is
    // still a read failure or a consistent snapshot (`check_how` asserts it), and what the
    // open handle protects against (a file renamed over it) is never seen.
    let mut outcomes = std::collections::BTreeMap::new();
    for sized in [false, true] {
        let how = How {
            sized,
            noisy: true,
            lines: false,
        };
        for (change, at) in CHANGES {
            let outcome = check_how(how, change, at, true, 3_000);
            *outcomes
                .entry(format!("{change:?}@{at}: {outcome}"))
                .or_insert(0) += 1;
        }
    }
    println!("{outcomes:#?}");
    for key in [
        "Nothing@600: snapshot",
        "Replace@600: snapshot",
        "Replace@2400: snapshot",
        "Grow@600: snapshot",
        "Truncate(50)@2400: read failure",
    ] {
        assert_eq!(outcomes.get(key), Some(&2), "{key}: {outcomes:#?}");
    }
}

#[test]
fn kept_lines_give_the_same_outcomes_but_a_cut_after_the_scan_is_not_seen() {
    // As `prepare` reads (messages measured, lines of held items kept): a zstd log's kept
    // items are decoded from the lines its scan read, so a cut after the scan leaves the
    // snapshot of what was scanned; a plain log's are read again, so the cut is a failure.
    let mut outcomes = std::collections::BTreeMap::new();
    for noisy in [false, true] {
        let how = How {
            sized: true,
            noisy,
            lines: true,
        };
        tally(&mut outcomes, how);
    }
    println!("{outcomes:#?}");
    for zstd in [false, true] {
        let late = if zstd {
            format!("Truncate(50)@2400 zstd={zstd}: snapshot")
        } else {
            format!("Truncate(50)@2400 zstd={zstd}: read failure")
        };
        for key in early_outcomes(zstd).into_iter().chain([late]) {
            assert_eq!(outcomes.get(&key), Some(&4), "{key}: {outcomes:#?}");
        }
    }
}
