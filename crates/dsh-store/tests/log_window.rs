//! Issue 27 item 5 (store part): windowed reads of a session's events, for scrolling a
//! transcript back to the start of any session — plain and `.zstd` logs, from the end, the
//! middle and the start, across a compaction, before a torn tail, while the log grows, and
//! with the frame-offset index of a `.zstd` log kept in the cache directory.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test
#![allow(clippy::cast_possible_truncation)] // test code: small known seqs

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use dsh_store::reader::{Limits, LogFormat};
use dsh_store::{Event, LogWindow, SessionQuery, SessionStore, WindowEnd, WindowLimits};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// Event lines written by hand: turns of a user message and a reply of `len` bytes each,
/// and, after turn `compact_after`, a compaction replacing the first turns' messages.
fn lines(turns: u64, len: usize, compact_after: Option<u64>) -> Vec<String> {
    let mut out = Vec::new();
    let mut seq = 0u64;
    let mut push = |kind: &str, data: Value, op: Option<Value>, out: &mut Vec<String>| {
        let mut line = json!({"type": kind, "seq": seq, "time": 1_000 + seq, "data": data});
        if let Some(op) = op {
            line["surfaceOp"] = op;
        }
        out.push(line.to_string());
        seq += 1;
        seq - 1
    };
    let text = |turn: u64, who: &str| format!("{who} {turn} ").repeat(len / 8 + 1);
    let mut first = None;
    for turn in 1..=turns {
        push(
            "turn/start",
            json!({"turn": turn, "trigger": {"kind": "user"}}),
            None,
            &mut out,
        );
        let user = push(
            "user/message",
            json!({"id": format!("u{turn}"), "role": "user", "content": [{"type": "text", "text": text(turn, "ask")}], "source": {"kind": "user"}}),
            Some(json!("append")),
            &mut out,
        );
        first.get_or_insert(user);
        push(
            "step/start",
            json!({"turn": turn, "step": 0}),
            None,
            &mut out,
        );
        let reply = push(
            "assistant/message",
            json!({"turn": turn, "step": 0, "message": {"id": format!("a{turn}"), "role": "assistant", "content": [{"type": "text", "text": text(turn, "reply")}]}}),
            Some(json!("append")),
            &mut out,
        );
        push("step/end", json!({"turn": turn, "step": 0}), None, &mut out);
        if compact_after == Some(turn) {
            push(
                "compact/start",
                json!({"reason": "threshold"}),
                None,
                &mut out,
            );
            push(
                "user/message",
                json!({"id": "c", "role": "user", "content": [{"type": "text", "text": "summary"}], "source": {"kind": "plugin", "plugin": "compact"}}),
                Some(json!({"op": "replace", "start": first.unwrap(), "end": reply})),
                &mut out,
            );
            push("compact/end", json!({}), None, &mut out);
        }
        push(
            "turn/end",
            json!({"turn": turn, "reason": {"kind": "completed"}}),
            None,
            &mut out,
        );
    }
    out
}

fn header(id: &str) -> String {
    json!({"type": "session", "version": 0, "id": id, "createdAt": 1, "delegationDepth": 0})
        .to_string()
}

/// The log of `id` under `root` in `format`: a `.zstd` log as dsh writes one — the header
/// alone in its first frame, then frames of whole lines of about `frame_bytes` each
/// (`usize::MAX`: everything in one frame).
fn write_log(
    root: &Path,
    id: &str,
    body: &[String],
    format: LogFormat,
    frame_bytes: usize,
) -> PathBuf {
    let dir = root.join("_no-cwd").join(id);
    fs::create_dir_all(&dir).unwrap();
    let mut text = header(id) + "\n";
    match format {
        LogFormat::Plain => {
            for line in body {
                text.push_str(line);
                text.push('\n');
            }
            let path = dir.join("session.jsonl");
            fs::write(&path, text).unwrap();
            path
        }
        LogFormat::Zstd => {
            let mut out = zstd::encode_all(text.as_bytes(), 3).unwrap();
            let mut frame = String::new();
            for line in body {
                frame.push_str(line);
                frame.push('\n');
                if frame.len() >= frame_bytes {
                    out.extend(zstd::encode_all(frame.as_bytes(), 3).unwrap());
                    frame.clear();
                }
            }
            if !frame.is_empty() {
                out.extend(zstd::encode_all(frame.as_bytes(), 3).unwrap());
            }
            let path = dir.join("session.jsonl.zstd");
            fs::write(&path, out).unwrap();
            path
        }
    }
}

/// Every readable event of the log, read whole: what the windows must add up to.
fn all_events(store: &SessionStore, id: &str) -> Vec<Event> {
    let loc = store.locate(id).unwrap().unwrap();
    dsh_store::reader::read_all(&loc.path, loc.format)
        .unwrap()
        .0
        .into_iter()
        .map(|(e, _)| e)
        .collect()
}

/// Windows read from the end back to the start, oldest first.
fn page_back(store: &SessionStore, id: &str, limits: WindowLimits) -> Vec<LogWindow> {
    let mut windows = Vec::new();
    let mut end = WindowEnd::Latest;
    loop {
        let w = store.read_window(id, end, limits).unwrap();
        assert!(w.events.len() <= limits.max_events, "{}", w.events.len());
        let seqs: Vec<u64> = w.events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (w.start_seq..w.end_seq).collect::<Vec<_>>());
        let start = w.start_seq;
        let done = w.at_start();
        windows.push(w);
        if done {
            break;
        }
        end = WindowEnd::BeforeSeq(start);
        assert!(windows.len() < 10_000, "never reached the start");
    }
    windows.reverse();
    windows
}

fn store_at(root: &Path) -> SessionStore {
    SessionStore::with_options(
        root,
        Some(root.with_extension("cache")),
        true,
        Limits::default(),
    )
}

fn limits(max_events: usize) -> WindowLimits {
    WindowLimits {
        max_events,
        ..WindowLimits::default()
    }
}

#[test]
fn windows_page_back_to_the_start_of_plain_and_zstd_logs() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    // 300 turns of ~1 KB messages: over 600 KB, several checkpoints in either format, a
    // compaction half-way.
    let body = lines(300, 1000, Some(150));
    write_log(&root, "plain", &body, LogFormat::Plain, 0);
    write_log(&root, "frames", &body, LogFormat::Zstd, 40_000);
    write_log(&root, "one-frame", &body, LogFormat::Zstd, usize::MAX);
    let store = store_at(&root);
    for id in ["plain", "frames", "one-frame"] {
        let all = all_events(&store, id);
        assert_eq!(all.len(), body.len(), "{id}");
        // A one-frame log is decompressed from its start for every window: fewer of them.
        let sizes: &[usize] = if id == "one-frame" {
            &[400, 5_000]
        } else {
            &[13, 100, 5_000]
        };
        for &max in sizes {
            let windows = page_back(&store, id, limits(max));
            let joined: Vec<Event> = windows.iter().flat_map(|w| w.events.clone()).collect();
            assert_eq!(joined, all, "{id}, windows of {max}");
            // Every window but the one reaching the start begins a turn (whole turns).
            for w in windows.iter().skip(1) {
                let kind = &w.events[0];
                assert!(
                    matches!(kind.data, dsh_store::EventData::TurnStart { .. }),
                    "{id} {max}: window at {} starts with {:?}",
                    w.start_seq,
                    kind.data
                );
            }
        }
        // A window from the middle, and one across the compaction (seqs around 900).
        for end in [1, 450, 905, 1_203] {
            let w = store
                .read_window(
                    id,
                    WindowEnd::BeforeSeq(end),
                    WindowLimits {
                        max_events: 20,
                        whole_turns: false,
                        ..WindowLimits::default()
                    },
                )
                .unwrap();
            let want: Vec<Event> = all[end.saturating_sub(20) as usize..end as usize].to_vec();
            assert_eq!(w.events, want, "{id} before {end}");
        }
        // Past the end is the end; the very start is empty.
        let past = store
            .read_window(id, WindowEnd::BeforeSeq(u64::MAX), limits(3))
            .unwrap();
        assert_eq!(past.end_seq, all.len() as u64);
        let none = store
            .read_window(id, WindowEnd::BeforeSeq(0), limits(3))
            .unwrap();
        assert!(none.events.is_empty() && none.at_start());
    }
}

#[test]
fn a_byte_bound_keeps_the_newest_events_that_fit() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    let body = lines(20, 10_000, None);
    write_log(&root, "big", &body, LogFormat::Plain, 0);
    let store = store_at(&root);
    let w = store
        .read_window(
            "big",
            WindowEnd::Latest,
            WindowLimits {
                max_events: 1_000,
                max_bytes: 50_000,
                whole_turns: false,
            },
        )
        .unwrap();
    let bytes: usize = w
        .events
        .iter()
        .map(|e| body[e.seq as usize].len() + 1)
        .sum();
    assert!(bytes <= 50_000, "{bytes}");
    assert!(w.events.len() >= 2, "{}", w.events.len());
    assert_eq!(w.end_seq, body.len() as u64);
}

#[test]
fn a_torn_tail_ends_the_latest_window() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    let body = lines(5, 100, None);
    let path = write_log(&root, "torn", &body, LogFormat::Plain, 0);
    let store = store_at(&root);
    let whole = store
        .read_window("torn", WindowEnd::Latest, limits(100))
        .unwrap();
    // A line being written, then garbage after it: neither is read.
    let mut f = fs::OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(b"{\"type\":\"turn/start\",\"seq\":35,\"ti")
        .unwrap();
    drop(f);
    let w = store
        .read_window("torn", WindowEnd::Latest, limits(100))
        .unwrap();
    assert_eq!(w, whole);
    fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(b"\ngarbage\n")
        .unwrap();
    let w = store
        .read_window("torn", WindowEnd::Latest, limits(100))
        .unwrap();
    assert_eq!(w, whole);
    assert_eq!(w.end_seq, body.len() as u64);
}

/// A log that grows while it is paged back: every window is exactly that stretch of the
/// log as it ends up, and the latest window follows the growth.
#[test]
fn a_log_growing_while_it_is_read() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    let body = lines(400, 300, None);
    let (first, rest) = body.split_at(600);
    for format in [LogFormat::Plain, LogFormat::Zstd] {
        let id = format!("{format:?}").to_lowercase();
        let path = write_log(&root, &id, first, format, 20_000);
        let store = store_at(&root);
        let writer = {
            let (path, rest) = (path.clone(), rest.to_vec());
            std::thread::spawn(move || {
                for chunk in rest.chunks(25) {
                    let text: String = chunk.iter().flat_map(|l| [l.as_str(), "\n"]).collect();
                    let bytes = match format {
                        LogFormat::Plain => text.into_bytes(),
                        LogFormat::Zstd => zstd::encode_all(text.as_bytes(), 1).unwrap(),
                    };
                    let mut f = fs::OpenOptions::new().append(true).open(&path).unwrap();
                    f.write_all(&bytes).unwrap();
                    drop(f);
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            })
        };
        let mut seen: Vec<LogWindow> = Vec::new();
        while !writer.is_finished() {
            seen.extend(page_back(&store, &id, limits(97)));
        }
        writer.join().unwrap();
        seen.extend(page_back(&store, &id, limits(97)));
        let all = all_events(&store, &id);
        assert_eq!(all.len(), body.len());
        for w in &seen {
            assert_eq!(
                w.events,
                all[w.start_seq as usize..w.end_seq as usize].to_vec(),
                "{id}: window {}..{}",
                w.start_seq,
                w.end_seq
            );
        }
        let last = store
            .read_window(&id, WindowEnd::Latest, limits(10))
            .unwrap();
        assert_eq!(last.end_seq, body.len() as u64);
    }
}

/// The frame-offset index of a `.zstd` log goes to the store's cache directory (never into
/// the store), serves a later process, and a damaged or foreign one is simply ignored.
#[test]
fn the_frame_index_is_kept_in_the_cache_dir_and_safe_to_lose() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    let body = lines(200, 1000, Some(100));
    write_log(&root, "z", &body, LogFormat::Zstd, 30_000);
    write_log(&root, "p", &body, LogFormat::Plain, 0);
    let store_files = || {
        let mut out = Vec::new();
        let mut stack = vec![root.clone()];
        while let Some(dir) = stack.pop() {
            for e in fs::read_dir(&dir).unwrap() {
                let e = e.unwrap();
                if e.file_type().unwrap().is_dir() {
                    stack.push(e.path());
                } else {
                    out.push((e.path(), fs::read(e.path()).unwrap()));
                }
            }
        }
        out.sort();
        out
    };
    let before = store_files();
    let want = {
        let store = store_at(&root);
        let w = store
            .read_window("z", WindowEnd::BeforeSeq(700), limits(50))
            .unwrap();
        store
            .read_window("p", WindowEnd::Latest, limits(50))
            .unwrap();
        w
    };
    assert_eq!(store_files(), before, "nothing written into the store");
    let frames = root.with_extension("cache").join("frames");
    let files: Vec<PathBuf> = fs::read_dir(&frames)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "only the .zstd log's index: {files:?}");
    let index = dsh_store::log_index_file::decode(&fs::read(&files[0]).unwrap()).unwrap();
    assert!(index.checkpoints.len() >= 2, "{}", index.checkpoints.len());
    // A later process reads through it; then with the file damaged, and without it.
    let again = store_at(&root);
    assert_eq!(
        again
            .read_window("z", WindowEnd::BeforeSeq(700), limits(50))
            .unwrap(),
        want
    );
    let mut bytes = fs::read(&files[0]).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    fs::write(&files[0], &bytes).unwrap();
    let damaged = store_at(&root);
    assert_eq!(
        damaged
            .read_window("z", WindowEnd::BeforeSeq(700), limits(50))
            .unwrap(),
        want
    );
    fs::remove_dir_all(&frames).unwrap();
    let gone = store_at(&root);
    assert_eq!(
        gone.read_window("z", WindowEnd::BeforeSeq(700), limits(50))
            .unwrap(),
        want
    );
    // An inspecting store (not the app's own) writes none.
    fs::remove_dir_all(&frames).unwrap();
    let inspecting = SessionStore::with_options(
        &root,
        Some(root.with_extension("cache")),
        false,
        Limits::default(),
    );
    inspecting
        .read_window("z", WindowEnd::Latest, limits(5))
        .unwrap();
    assert!(!frames.exists());
}

#[test]
fn a_session_without_events_or_log_answers_plainly() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    write_log(&root, "empty", &[], LogFormat::Plain, 0);
    let store = store_at(&root);
    let w = store
        .read_window("empty", WindowEnd::Latest, limits(10))
        .unwrap();
    assert!(w.events.is_empty() && w.at_start() && w.end_seq == 0);
    assert!(matches!(
        store.read_window("nobody", WindowEnd::Latest, limits(10)),
        Err(dsh_store::QueryError::NotFound { .. })
    ));
    let _ = store.list_sessions();
}

/// A window near the end is read from the nearest checkpoint, never from the start: with
/// the first half of the log overwritten by bytes that do not parse (its tail intact, so
/// the index stays), the last window still reads.
#[test]
fn a_window_is_read_from_its_checkpoint_not_from_the_start() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    let body = lines(200, 1000, None);
    let path = write_log(&root, "p", &body, LogFormat::Plain, 0);
    let store = store_at(&root);
    let want = store
        .read_window("p", WindowEnd::Latest, limits(12))
        .unwrap();
    let mut bytes = fs::read(&path).unwrap();
    let half = bytes.len() / 2;
    let header_len = header("p").len() + 1;
    for b in &mut bytes[header_len..half] {
        if *b != b'\n' {
            *b = b'#';
        }
    }
    fs::write(&path, &bytes).unwrap();
    assert_eq!(
        store
            .read_window("p", WindowEnd::Latest, limits(12))
            .unwrap(),
        want
    );
    // Reading whole now fails, as it should.
    assert!(dsh_store::reader::read_all(&path, LogFormat::Plain).is_err());
}
