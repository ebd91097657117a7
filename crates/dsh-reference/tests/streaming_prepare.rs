//! The streaming `prepare` path (scan, plan drops on sizes, re-read kept items) gives exactly
//! what projecting and retaining the whole `read_surface` gives, for plain and zstd logs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::needless_pass_by_value,
    clippy::similar_names
)] // test code: small known values, helpers that take values for brevity

use std::fs;
use std::path::{Path, PathBuf};

use dsh_reference::source_read::{ProjectedSizes, read_source};
use dsh_reference::{ErrorCode, SourceHeader, project_surface, retain_source};
use dsh_store::{
    Event, EventAt, QueryError, SessionHeader, SessionQuery, SessionStore, SizedMessage,
    SurfaceOrder, SurfaceVisitor,
};
use serde_json::{Value, json};

/// A random but valid log body (event lines) with appends, steering, tool results, plugin
/// messages and compactions that replace random spans of the current surface.
fn random_log(seed: u64, events: usize) -> String {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut lines = Vec::new();
    let mut surface: Vec<u64> = Vec::new();
    let text = |rng: &mut fastrand::Rng| -> String {
        let words = [
            "a", "<b>", "\"q\"", "漢字", "\\", "line\n", "ü", "😀", "end",
        ];
        (0..rng.usize(0..40))
            .map(|_| words[rng.usize(..words.len())])
            .collect::<Vec<_>>()
            .join(" ")
    };
    for seq in 0..events as u64 {
        let msg = |role: &str, source: Value, rng: &mut fastrand::Rng| {
            let mut content = vec![json!({"type": "text", "text": text(rng)})];
            if rng.bool() {
                content.push(json!({"type": "reasoning", "text": "think"}));
                content.push(json!({"type": "text", "text": text(rng)}));
            }
            json!({"id": format!("m{seq}"), "role": role, "content": content, "source": source})
        };
        let (kind, data, op) = match rng.u8(0..10) {
            0 => (
                "turn/start",
                json!({"turn": 1, "trigger": {"kind": "user"}}),
                None,
            ),
            1 => (
                "turn/end",
                json!({"turn": 1, "reason": {"kind": "completed"}}),
                None,
            ),
            2 => (
                "steering/message",
                json!({"turn": 1, "message": msg("user", json!({"kind": "user"}), &mut rng)}),
                Some(json!("append")),
            ),
            3 => (
                "tool/result",
                json!({"turn": 1, "step": 0, "message": msg("tool", json!({"kind": "tool", "callId": "c"}), &mut rng)}),
                Some(json!("append")),
            ),
            4 => (
                "user/message",
                msg(
                    "user",
                    json!({"kind": "plugin", "plugin": "goal"}),
                    &mut rng,
                ),
                Some(json!("append")),
            ),
            5 if surface.len() > 2 => {
                let a = rng.usize(..surface.len());
                let b = rng.usize(a..surface.len());
                if surface[a] > surface[b] {
                    // Seqs out of order after earlier replaces: such a span is invalid, so
                    // append a direct message instead.
                    lines.push(json!({"type": "user/message", "seq": seq, "time": seq, "data": msg("user", json!({"kind": "user"}), &mut rng), "surfaceOp": "append"}).to_string());
                    surface.push(seq);
                    continue;
                }
                let op = json!({"op": "replace", "start": surface[a], "end": surface[b]});
                surface.drain(a..=b);
                surface.insert(a, seq);
                lines.push(json!({"type": "user/message", "seq": seq, "time": seq, "data": msg("user", json!({"kind": "plugin", "plugin": "compact"}), &mut rng), "surfaceOp": op}).to_string());
                continue;
            }
            6 | 7 => (
                "assistant/message",
                json!({"turn": 1, "step": 0, "message": msg("assistant", json!({"kind": "model", "provider": "p", "model": "m"}), &mut rng)}),
                Some(json!("append")),
            ),
            _ => (
                "user/message",
                msg("user", json!({"kind": "user"}), &mut rng),
                Some(json!("append")),
            ),
        };
        let mut line = json!({"type": kind, "seq": seq, "time": seq, "data": data});
        if let Some(op) = op {
            line["surfaceOp"] = op;
            surface.push(seq);
        }
        lines.push(line.to_string());
    }
    lines.iter().fold(String::new(), |mut text, l| {
        text.push_str(l);
        text.push('\n');
        text
    })
}

fn header_line(id: &str) -> String {
    serde_json::to_string(&SessionHeader::new(id, 1, Some("/src".into()))).unwrap()
}

fn write_plain(root: &Path, id: &str, body: &str) -> PathBuf {
    let dir = dsh_store::paths::session_dir(root, Some("/src"), id).unwrap();
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join("session.jsonl");
    fs::write(&path, format!("{}\n{body}", header_line(id))).unwrap();
    path
}

fn write_zstd(root: &Path, id: &str, body: &str) {
    let dir = dsh_store::paths::session_dir(root, Some("/src"), id).unwrap();
    fs::create_dir_all(&dir).unwrap();
    // Two frames, split mid-log, as dsh writes them.
    let text = format!("{}\n{body}", header_line(id));
    let cut = text.len() / 2;
    let cut = (cut..text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap();
    let mut bytes = zstd::encode_all(&text.as_bytes()[..cut], 3).unwrap();
    bytes.extend(zstd::encode_all(&text.as_bytes()[cut..], 3).unwrap());
    fs::write(dir.join("session.jsonl.zstd"), bytes).unwrap();
}

/// What the whole-surface path gives: `Ok(json of data + stats)` or the error code.
fn whole(store: &SessionStore, id: &str, budget: usize) -> Result<String, ErrorCode> {
    let surface = store.read_surface(id).unwrap();
    let header = SourceHeader {
        session_id: id.into(),
        label: "L".into(),
        cwd: surface.session.cwd.clone(),
        captured_through_seq: surface.captured_through_seq,
    };
    retain_source(header, project_surface(&surface.events), budget)
        .map(|r| format!("{:?}", (r.data, r.stats, r.serialized_bytes)))
        .map_err(|e| e.code)
}

fn streamed(store: &SessionStore, id: &str, budget: usize) -> Result<String, ErrorCode> {
    read_source(store, id.into(), "L".into(), budget)
        .map(|r| format!("{:?}", (r.data, r.stats, r.serialized_bytes)))
        .map_err(|e| e.code)
}

#[test]
fn streaming_matches_the_whole_surface_path() {
    let plain_root = tempfile::tempdir().unwrap();
    let zstd_root = tempfile::tempdir().unwrap();
    let plain = SessionStore::new(plain_root.path());
    let packed = SessionStore::new(zstd_root.path());
    let budgets = [1, 150, 400, 1000, 3000, 10_000, 65_536];
    let mut outcomes = [0usize; 2];
    for seed in 0..40 {
        let body = random_log(seed, 20 + (seed as usize * 7) % 120);
        let id = format!("s{seed}");
        write_plain(plain_root.path(), &id, &body);
        write_zstd(zstd_root.path(), &id, &body);
        for budget in budgets {
            let want = whole(&plain, &id, budget);
            outcomes[usize::from(want.is_ok())] += 1;
            assert_eq!(
                streamed(&plain, &id, budget),
                want,
                "seed {seed} budget {budget}"
            );
            assert_eq!(
                streamed(&packed, &id, budget),
                want,
                "zstd seed {seed} budget {budget}"
            );
        }
    }
    // Both outcomes were exercised.
    assert!(outcomes[0] > 10 && outcomes[1] > 10, "{outcomes:?}");
}

#[test]
fn replaced_items_are_forgotten_while_scanning() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    let u = |seq: u64, text: &str, op: Value| {
        json!({"type": "user/message", "seq": seq, "time": 0, "data": {"id": format!("m{seq}"), "role": "user", "content": [{"type": "text", "text": text}], "source": {"kind": "user"}}, "surfaceOp": op}).to_string() + "\n"
    };
    let body = [
        u(0, "one", json!("append")),
        u(1, "two", json!("append")),
        u(2, "three", json!("append")),
        u(3, "summary", json!({"op": "replace", "start": 0, "end": 1})),
    ]
    .concat();
    write_plain(tmp.path(), "s", &body);
    let mut sizes = ProjectedSizes::default();
    let mut scan = store.scan_surface("s", &mut sizes).unwrap();
    assert_eq!(scan.surface_seqs(), vec![3, 2]);
    assert_eq!(scan.captured_through_seq, Some(3));
    let (seqs, item_sizes) = sizes.in_order(&scan.surface_seqs());
    assert_eq!(seqs, vec![3, 2]);
    assert_eq!(
        item_sizes.iter().map(|s| s.text_len).collect::<Vec<_>>(),
        vec![7, 5]
    );
    let events = scan.reread(&[2, 3]).unwrap();
    assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![2, 3]);
    // A seq that left the surface cannot be read again.
    assert!(matches!(scan.reread(&[0]), Err(QueryError::Corrupt { .. })));
}

#[test]
fn a_log_rewritten_between_scan_and_reread_is_a_read_failure() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    let body = random_log(3, 60);
    let path = write_plain(tmp.path(), "s", &body);
    let mut sizes = ProjectedSizes::default();
    let mut scan = store.scan_surface("s", &mut sizes).unwrap();
    let (seqs, _) = sizes.in_order(&scan.surface_seqs());
    assert!(!seqs.is_empty());
    // Same file, same length, different bytes: every line shifted by one.
    let text = fs::read_to_string(&path).unwrap();
    let shifted = format!("\n{}", &text[..text.len() - 1]);
    fs::write(&path, shifted).unwrap();
    match scan.reread(&seqs) {
        Err(QueryError::Corrupt { reason, .. }) => {
            assert!(reason.contains("changed while being read"), "{reason}");
        }
        other => panic!("expected a corruption error, got {other:?}"),
    }
}

/// How a generated log compacts.
#[derive(Debug, Clone, Copy)]
enum Compaction {
    /// Replace the whole surface (what the agent's `/compact` does).
    Everything,
    /// Replace the oldest part of the surface.
    Prefix,
    /// Replace the newest part.
    Suffix,
    /// Replace a random span.
    Span,
}

/// A long log of direct messages and replies (some tool results and plugin messages in
/// between) compacted now and then in the given style; the replacement is a checkpoint or,
/// sometimes, an ordinary message.
fn compacting_log(seed: u64, events: usize, style: Compaction) -> String {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut out = String::new();
    let mut surface: Vec<u64> = Vec::new();
    for seq in 0..events as u64 {
        let len = rng.usize(0..300);
        let text: String = (0..len)
            .map(|_| ['a', '<', '"', '漢', '\\', '\n', 'é'][rng.usize(..7)])
            .collect();
        let msg = |role: &str, source: Value| json!({"id": format!("m{seq}"), "role": role, "content": [{"type": "text", "text": text}], "source": source});
        let line = if surface.len() > 3 && rng.u8(0..25) == 0 {
            let n = surface.len();
            let (a, b) = match style {
                Compaction::Everything => (0, n - 1),
                Compaction::Prefix => (0, rng.usize(0..n)),
                Compaction::Suffix => (rng.usize(0..n), n - 1),
                Compaction::Span => {
                    let a = rng.usize(0..n);
                    (a, rng.usize(a..n))
                }
            };
            let op = json!({"op": "replace", "start": surface[a], "end": surface[b]});
            surface.splice(a..=b, [seq]);
            let source = if rng.u8(0..4) == 0 {
                json!({"kind": "user"})
            } else {
                json!({"kind": "plugin", "plugin": "compact"})
            };
            json!({"type": "user/message", "seq": seq, "time": seq, "data": msg("user", source), "surfaceOp": op})
        } else {
            let (kind, data, op) = match rng.u8(0..12) {
                0 => (
                    "turn/end",
                    json!({"turn": 1, "reason": {"kind": "completed"}}),
                    None,
                ),
                1 => (
                    "tool/result",
                    json!({"turn": 1, "step": 0, "message": msg("tool", json!({"kind": "tool", "callId": "c"}))}),
                    Some("append"),
                ),
                2 => (
                    "user/message",
                    msg("user", json!({"kind": "plugin", "plugin": "goal"})),
                    Some("append"),
                ),
                3..=6 => (
                    "assistant/message",
                    json!({"turn": 1, "step": 0, "message": msg("assistant", json!({"kind": "model", "provider": "p", "model": "m"}))}),
                    Some("append"),
                ),
                _ => (
                    "user/message",
                    msg("user", json!({"kind": "user"})),
                    Some("append"),
                ),
            };
            let mut line = json!({"type": kind, "seq": seq, "time": seq, "data": data});
            if let Some(op) = op {
                line["surfaceOp"] = json!(op);
                surface.push(seq);
            }
            line
        };
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out
}

/// The bounded window gives what the whole-surface path gives, on long logs compacted in
/// every style, plain and zstd, at budgets from tiny to huge; the window holds only what
/// the budget allows (plus checkpoints), and both its exact path and its second pass ran.
#[test]
fn bounded_window_matches_the_whole_surface_path() {
    use dsh_reference::source_read::RetentionWindow;
    let plain_root = tempfile::tempdir().unwrap();
    let zstd_root = tempfile::tempdir().unwrap();
    let plain = SessionStore::new(plain_root.path());
    let packed = SessionStore::new(zstd_root.path());
    let budgets = [1, 200, 700, 2_500, 9_000, 40_000, usize::MAX / 2];
    let styles = [
        Compaction::Everything,
        Compaction::Prefix,
        Compaction::Suffix,
        Compaction::Span,
    ];
    let (mut exact, mut second_pass, mut ok) = (0, 0, 0);
    for seed in 0..24u64 {
        let style = styles[seed as usize % styles.len()];
        let body = compacting_log(seed, 150 + (seed as usize * 37) % 450, style);
        let id = format!("w{seed}");
        write_plain(plain_root.path(), &id, &body);
        write_zstd(zstd_root.path(), &id, &body);
        for budget in budgets {
            let want = whole(&plain, &id, budget);
            ok += usize::from(want.is_ok());
            assert_eq!(
                streamed(&plain, &id, budget),
                want,
                "seed {seed} {style:?} budget {budget}"
            );
            assert_eq!(
                streamed(&packed, &id, budget),
                want,
                "zstd seed {seed} {style:?} budget {budget}"
            );
            let mut window = RetentionWindow::new(budget);
            let scan = plain.scan_surface(&id, &mut window).unwrap();
            if window.inexact() {
                second_pass += 1;
                continue;
            }
            exact += 1;
            // The store tells every removal: nothing held or counted is off the surface
            // (else `read_source` would read the log twice for nothing).
            assert!(
                window.all_seen_on(&*scan.on_surface()),
                "seed {seed} budget {budget}"
            );
            // Held: checkpoints, plus droppable items whose newer ones fit the budget.
            let surface = plain.read_surface(&id).unwrap();
            let checkpoints = project_surface(&surface.events)
                .iter()
                .filter(|i| i.checkpoint)
                .count();
            let fit = budget / 26 + 2;
            assert!(
                window.held() <= checkpoints + fit,
                "seed {seed} budget {budget}: {} held, {checkpoints} checkpoints, {} on surface",
                window.held(),
                scan.surface_len()
            );
        }
    }
    assert!(
        exact > 40 && second_pass > 10 && ok > 40,
        "{exact} {second_pass} {ok}"
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
    /// Random logs, random compaction styles and budgets: streamed (plain and zstd) equals
    /// the whole-surface path.
    #[test]
    fn window_parity_on_random_logs(seed in 0u64..1_000_000, events in 20usize..500, style in 0usize..4, budget in 1usize..20_000) {
        let styles = [Compaction::Everything, Compaction::Prefix, Compaction::Suffix, Compaction::Span];
        let plain_root = tempfile::tempdir().unwrap();
        let zstd_root = tempfile::tempdir().unwrap();
        let body = compacting_log(seed, events, styles[style]);
        write_plain(plain_root.path(), "p", &body);
        write_zstd(zstd_root.path(), "p", &body);
        let plain = SessionStore::new(plain_root.path());
        let want = whole(&plain, "p", budget);
        proptest::prop_assert_eq!(streamed(&plain, "p", budget), want.clone());
        proptest::prop_assert_eq!(streamed(&SessionStore::new(zstd_root.path()), "p", budget), want);
    }
}

/// A source whose scan shows events a compaction later took off without saying so (as a
/// foreign log's compaction that leaves nothing does): the result is still the whole-surface
/// one.
#[test]
fn a_source_that_removes_items_silently_still_gives_the_whole_surface_result() {
    use dsh_store::{Event, EventReread, Surface, SurfaceScan, SurfaceVisitor};
    use std::sync::Arc;

    #[derive(Debug)]
    struct Fixed(Vec<Event>);
    impl EventReread for Fixed {
        fn reread(&mut self, seqs: &[u64]) -> Result<Vec<Event>, QueryError> {
            seqs.iter()
                .map(|s| {
                    self.0
                        .iter()
                        .find(|e| e.seq == *s)
                        .cloned()
                        .ok_or(QueryError::NotFound { id: s.to_string() })
                })
                .collect()
        }
    }
    struct Silent {
        all: Vec<Event>,
        kept: Vec<Event>,
    }
    impl SessionQuery for Silent {
        fn list_sessions(&self) -> Result<Arc<Vec<SessionHeader>>, QueryError> {
            Ok(Arc::new(Vec::new()))
        }
        fn read_title(&self, _: &str) -> Result<Option<String>, QueryError> {
            Ok(None)
        }
        fn read_surface(&self, _: &str) -> Result<Surface, QueryError> {
            Ok(Surface {
                session: SessionHeader::new("s", 1, None),
                captured_through_seq: Some(self.all.len() as u64 - 1),
                events: self.kept.clone(),
            })
        }
        fn scan_surface(
            &self,
            _: &str,
            visitor: &mut dyn SurfaceVisitor,
        ) -> Result<SurfaceScan, QueryError> {
            for event in &self.all {
                visitor.visit(event, &[]);
            }
            Ok(SurfaceScan::from_reread(
                SessionHeader::new("s", 1, None),
                Some(self.all.len() as u64 - 1),
                self.kept.iter().map(|e| e.seq).collect(),
                Box::new(Fixed(self.kept.clone())),
            ))
        }
    }
    let message = |seq: u64, text: &str| -> Event {
        serde_json::from_value(json!({"type": "user/message", "seq": seq, "time": 0, "data": {"id": format!("m{seq}"), "role": "user", "content": [{"type": "text", "text": text}], "source": {"kind": "user"}}, "surfaceOp": "append"})).unwrap()
    };
    let all: Vec<Event> = (0..40).map(|s| message(s, &"old ".repeat(30))).collect();
    let kept: Vec<Event> = all[30..].to_vec();
    let silent = Silent { all, kept };
    for budget in [300, 2_000, 1_000_000] {
        let surface = silent.read_surface("s").unwrap();
        let header = SourceHeader {
            session_id: "s".into(),
            label: "L".into(),
            cwd: None,
            captured_through_seq: surface.captured_through_seq,
        };
        let want = retain_source(header, project_surface(&surface.events), budget)
            .map(|r| format!("{:?}", (r.data, r.stats, r.serialized_bytes)))
            .map_err(|e| e.code);
        let got = read_source(&silent, "s".into(), "L".into(), budget)
            .map(|r| format!("{:?}", (r.data, r.stats, r.serialized_bytes)))
            .map_err(|e| e.code);
        assert_eq!(got, want, "budget {budget}");
    }
}

/// Shows the inner visitor every event decoded in full (it never takes sized events).
struct Decoded<'a>(&'a mut dyn SurfaceVisitor);

impl SurfaceVisitor for Decoded<'_> {
    fn visit(&mut self, event: &Event, removed: &[u64]) {
        self.0.visit(event, removed);
    }

    fn visit_at(
        &mut self,
        event: &Event,
        removed: &[u64],
        at: EventAt,
        order: Option<&dyn SurfaceOrder>,
    ) {
        self.0.visit_at(event, removed, at, order);
    }
}

/// Counts the message events shown by their sizes only.
struct CountingSized<'a>(&'a mut dyn SurfaceVisitor, usize);

impl SurfaceVisitor for CountingSized<'_> {
    fn visit(&mut self, event: &Event, removed: &[u64]) {
        self.0.visit(event, removed);
    }

    fn visit_at(
        &mut self,
        event: &Event,
        removed: &[u64],
        at: EventAt,
        order: Option<&dyn SurfaceOrder>,
    ) {
        self.0.visit_at(event, removed, at, order);
    }

    fn takes_sized(&self) -> bool {
        self.0.takes_sized()
    }

    fn visit_sized(
        &mut self,
        message: &SizedMessage,
        removed: &[u64],
        at: EventAt,
        order: Option<&dyn SurfaceOrder>,
    ) {
        self.1 += 1;
        self.0.visit_sized(message, removed, at, order);
    }
}

#[test]
fn measured_messages_give_the_sizes_of_decoded_ones() {
    // The same scans, once with message events measured (as `prepare` reads) and once
    // decoded in full: every projected item's sizes agree, plain and zstd.
    let plain_root = tempfile::tempdir().unwrap();
    let zstd_root = tempfile::tempdir().unwrap();
    let stores = [
        SessionStore::new(plain_root.path()),
        SessionStore::new(zstd_root.path()),
    ];
    let mut measured = 0;
    for seed in 0..40u64 {
        let body = if seed % 2 == 0 {
            random_log(seed, 20 + (seed as usize * 7) % 200)
        } else {
            let styles = [
                Compaction::Everything,
                Compaction::Prefix,
                Compaction::Suffix,
                Compaction::Span,
            ];
            compacting_log(
                seed,
                150 + (seed as usize * 37) % 450,
                styles[seed as usize % 4],
            )
        };
        let id = format!("m{seed}");
        write_plain(plain_root.path(), &id, &body);
        write_zstd(zstd_root.path(), &id, &body);
        for store in &stores {
            let mut sized = ProjectedSizes::default();
            let mut counting = CountingSized(&mut sized, 0);
            let scan = store.scan_surface(&id, &mut counting).unwrap();
            measured += counting.1;
            let mut full = ProjectedSizes::default();
            let again = store.scan_surface(&id, &mut Decoded(&mut full)).unwrap();
            assert_eq!(scan.surface_seqs(), again.surface_seqs(), "seed {seed}");
            let seqs = scan.surface_seqs();
            assert_eq!(sized.in_order(&seqs), full.in_order(&seqs), "seed {seed}");
        }
    }
    assert!(measured > 1000, "{measured} messages measured");
}
