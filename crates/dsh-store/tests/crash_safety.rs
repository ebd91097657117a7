//! Crash safety (issue 7 item 3): a child process appends to one session through the store
//! writer and is `SIGKILLed` at a random point, 30 times in a row. After every kill the log
//! must read back as a prefix of what was written, hold every event the child acknowledged,
//! and have its torn tail (if any) truncated by the next open for writing.
//!
//! The child is this test binary re-executed with `CRASH_CHILD_STORE` set: the same test
//! function then runs the writer loop instead of the supervisor.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::needless_pass_by_value,
    clippy::similar_names
)] // test code: small known values, helpers that take values for brevity

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dsh_store::event::TurnEndReason;
use dsh_store::reader::{LogFormat, read_all};
use dsh_store::{
    ContentBlock, Event, EventData, Message, NewEvent, Role, SessionHeader, SessionQuery,
    SessionStore, Source, StoreError,
};
use serde_json::{Map, json};

const CHILD_ENV: &str = "CRASH_CHILD_STORE";
const SESSION: &str = "crash/../victim ~1";
const ROUNDS: usize = 30;
/// The child stops by itself after this many batches (it is normally killed long before).
const CHILD_MAX_BATCHES: u64 = 400;

/// The text every message event with this seq carries: derived from the seq alone, so the
/// reader can check any event it finds, and big enough for writes to be torn by a kill.
fn expected_text(seq: u64) -> String {
    let len = (seq.wrapping_mul(2_654_435_761) % 300_000) as usize;
    let fill = char::from(b'a' + (seq % 26) as u8);
    format!("event {seq} {}", fill.to_string().repeat(len))
}

/// The events of turn `n` starting at `seq`: turn/start and user/message are written
/// buffered (not yet acknowledged), assistant/message and turn/end with fsync.
fn turn_batches(n: u64, seq: u64) -> (Vec<NewEvent>, Vec<NewEvent>) {
    let user = Message {
        id: format!("u{seq}"),
        role: Role::User,
        content: vec![ContentBlock::text(expected_text(seq + 1))],
        source: Some(Source::user()),
        extra: Map::new(),
    };
    let reply = Message {
        id: format!("a{seq}"),
        role: Role::Assistant,
        content: vec![ContentBlock::text(expected_text(seq + 2))],
        source: Some(Source::model("offline", "m")),
        extra: Map::new(),
    };
    (
        vec![
            NewEvent::plain(EventData::TurnStart {
                turn: n,
                trigger: json!({"kind": "user"}),
                extra: Map::new(),
            }),
            NewEvent::appended(EventData::UserMessage(user)),
        ],
        vec![
            NewEvent::appended(EventData::AssistantMessage {
                turn: n,
                step: 0,
                message: reply,
                usage: None,
                extra: Map::new(),
            }),
            NewEvent::plain(EventData::TurnEnd {
                turn: n,
                reason: TurnEndReason {
                    kind: "completed".into(),
                    extra: Map::new(),
                },
                extra: Map::new(),
            }),
        ],
    )
}

/// Child mode: append turns forever, printing `ack <seq>` after each durable append.
fn run_child(root: &Path) {
    let store = SessionStore::new(root);
    let header = SessionHeader::new(SESSION, 1, Some("/crash/test".into()));
    let mut writer = store.open_writer(SESSION, Some(header)).unwrap();
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "open {}", writer.events().len()).unwrap();
    stdout.flush().unwrap();
    for _ in 0..CHILD_MAX_BATCHES {
        let seq = writer.events().len() as u64;
        let n = seq / 4 + 1;
        let (buffered, durable) = turn_batches(n, seq);
        writer.append_buffered(buffered).unwrap();
        let written = writer.append(durable).unwrap();
        writeln!(stdout, "ack {}", written.last().unwrap().seq).unwrap();
        stdout.flush().unwrap();
    }
}

/// Check one event against what the child writes at its seq (a killed child may leave a
/// half turn, so turns need not start at any particular seq).
fn check_event(event: &Event) {
    let seq = event.seq;
    match &event.data {
        EventData::TurnStart { .. } | EventData::TurnEnd { .. } => {}
        EventData::UserMessage(m) => assert_eq!(m.joined_text(), expected_text(seq)),
        EventData::AssistantMessage { message, .. } => {
            assert_eq!(message.joined_text(), expected_text(seq));
        }
        other => panic!("seq {seq}: unexpected event {other:?}"),
    }
}

#[test]
fn writer_killed_at_random_points_loses_nothing_acknowledged() {
    if let Some(root) = std::env::var_os(CHILD_ENV) {
        run_child(Path::new(&root));
        return;
    }
    // CRASH_SAFETY_SEED=<n> replays a run.
    let seed = std::env::var("CRASH_SAFETY_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    eprintln!("crash_safety seed {seed}");
    let mut rng = fastrand::Rng::with_seed(seed);
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    let store = SessionStore::new(&root);
    let exe = std::env::current_exe().unwrap();
    let mut acked_total: Option<u64> = None;
    let mut torn_tails = 0;
    let mut last_len = 0usize;
    for round in 0..ROUNDS {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "writer_killed_at_random_points_loses_nothing_acknowledged",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, &root)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        // Let the child acknowledge a few batches (sometimes none), then kill it mid-flight.
        let wait_acks = rng.usize(0..4);
        let mut seen_acks = 0;
        let deadline = Instant::now() + Duration::from_secs(30);
        while seen_acks < wait_acks && Instant::now() < deadline {
            match lines.next() {
                Some(Ok(line)) => {
                    if let Some(seq) = line.strip_prefix("ack ") {
                        acked_total = Some(seq.parse().unwrap());
                        seen_acks += 1;
                    }
                }
                _ => break,
            }
        }
        std::thread::sleep(Duration::from_micros(rng.u64(0..40_000)));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        // Acknowledgements printed before the kill are still in the pipe.
        for line in lines {
            let line = line.unwrap();
            if let Some(seq) = line.strip_prefix("ack ") {
                acked_total = Some(seq.parse().unwrap());
            }
        }

        let Some(loc) = store.locate(SESSION).unwrap() else {
            // Killed before the first append published the log: nothing may be acknowledged.
            assert_eq!(
                acked_total, None,
                "round {round}: acknowledged events but no log"
            );
            continue;
        };
        // Half the rounds also model a power loss: bytes after the last acknowledged
        // (fsynced) event may be lost at any byte boundary.
        if rng.bool() {
            let bytes = fs::read(&loc.path).unwrap();
            let newline_ends: Vec<usize> = bytes
                .iter()
                .enumerate()
                .filter(|(_, b)| **b == b'\n')
                .map(|(i, _)| i + 1)
                .collect();
            // Line 1 is the header; the event with seq s ends at newline s + 2.
            let durable = match acked_total {
                Some(seq) => newline_ends[seq as usize + 1],
                None => newline_ends[0],
            };
            let cut = rng.usize(durable..=bytes.len());
            fs::OpenOptions::new()
                .write(true)
                .open(&loc.path)
                .unwrap()
                .set_len(cut as u64)
                .unwrap();
        }
        // 1. The log reads back as a prefix of what was written (reading never repairs).
        let before = fs::metadata(&loc.path).unwrap().len();
        let (events, summary) = read_all(&loc.path, LogFormat::Plain)
            .unwrap_or_else(|e| panic!("round {round}: log unreadable after kill: {e}"));
        assert_eq!(
            fs::metadata(&loc.path).unwrap().len(),
            before,
            "a read modified the log"
        );
        for (index, (event, _)) in events.iter().enumerate() {
            assert_eq!(event.seq, index as u64);
            check_event(event);
        }
        // 2. Every acknowledged event is there.
        if let Some(acked) = acked_total {
            assert!(
                (events.len() as u64) > acked,
                "round {round}: acknowledged seq {acked} missing ({} events)",
                events.len()
            );
        }
        // 3. A torn tail is cut by the next open for writing, and only the tail.
        if summary.torn_tail.is_some() {
            torn_tails += 1;
            assert!(summary.readable_len < before);
        }
        let writer = store.open_writer(SESSION, None).unwrap();
        assert_eq!(
            fs::metadata(&loc.path).unwrap().len(),
            summary.readable_len,
            "round {round}: open for writing did not truncate the torn tail"
        );
        let reopened: Vec<Event> = events.iter().map(|(e, _)| e.clone()).collect();
        assert_eq!(writer.events(), reopened.as_slice());
        drop(writer);
        let (again, summary) = read_all(&loc.path, LogFormat::Plain).unwrap();
        assert!(summary.torn_tail.is_none());
        assert_eq!(again.len(), events.len());
        last_len = events.len();
    }
    eprintln!(
        "crash_safety: {ROUNDS} kills, {torn_tails} torn tails repaired, {last_len} events survive"
    );
    // The survivor is an ordinary session: it folds, and the next writer appends after it.
    if last_len > 0 {
        let surface = store.read_surface(SESSION).unwrap();
        assert_eq!(surface.captured_through_seq, Some(last_len as u64 - 1));
        let mut writer = store.open_writer(SESSION, None).unwrap();
        let seq = writer.events().len() as u64;
        let (a, b) = turn_batches(seq / 4 + 1, seq);
        writer.append(a.into_iter().chain(b).collect()).unwrap();
        // A second writer is refused while this one is open.
        assert!(matches!(
            store.open_writer(SESSION, None),
            Err(StoreError::Busy { .. })
        ));
    }
    // Nothing was left beside the store root.
    let outside: Vec<_> = fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(outside, vec![std::ffi::OsString::from("store")]);
}
