//! Crash safety (issue 7 item 3): a child process appends to one session through the store
//! writer and is `SIGKILLed` at a random point, 30 times in a row. After every kill the log
//! must read back as a prefix of what was written, hold every event the child acknowledged,
//! and have its torn tail (if any) truncated by the next open for writing.
//!
//! The child is this test binary re-executed with `CRASH_CHILD_STORE` set: the same test
//! function then runs the writer loop instead of the supervisor. The same rounds run for a
//! plain store and for a zstd store (issue 15), whose appends are one zstd frame per batch:
//! a kill mid-frame leaves a torn final frame, which must read as a torn tail.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::needless_pass_by_value,
    clippy::similar_names
)] // test code: small known values, helpers that take values for brevity

use std::fs;
use std::io::{BufRead, BufReader, Seek, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dsh_store::dsh_compat::DecodedFrames;
use dsh_store::encoding::Compression;
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
/// buffered (not yet acknowledged), step/start, assistant/message, step/end and turn/end
/// with fsync.
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
        content: vec![ContentBlock::text(expected_text(seq + 3))],
        source: Some(Source::model("offline", "m")),
        extra: Map::new(),
    };
    (
        vec![
            NewEvent::plain(EventData::TurnStart {
                turn: n,
                trigger: json!({"kind": "message", "source": {"kind": "user"}}),
                extra: Map::new(),
            }),
            NewEvent::appended(EventData::UserMessage(user)),
        ],
        vec![
            NewEvent::plain(EventData::StepStart {
                turn: n,
                step: 1,
                extra: Map::new(),
            }),
            NewEvent::appended(EventData::AssistantMessage {
                turn: n,
                step: 1,
                message: reply,
                usage: None,
                extra: Map::new(),
            }),
            NewEvent::plain(EventData::StepEnd {
                turn: n,
                step: 1,
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

/// The bytes of a write that was in flight when the power went: a prefix of the next
/// batch as the writer would have written it (a zstd frame, or plain lines).
fn in_flight_write(next_seq: u64, format: LogFormat, rng: &mut fastrand::Rng) -> Vec<u8> {
    let line = format!(
        "{}\n",
        json!({"type": "turn/start", "seq": next_seq, "time": 1, "data": {"turn": 999, "trigger": {"kind": "message", "source": {"kind": "user"}}}})
    );
    let bytes = match format {
        LogFormat::Plain => line.into_bytes(),
        LogFormat::Zstd => dsh_store::dsh_compat::encode_frame(line.as_bytes()).unwrap(),
    };
    let cut = rng.usize(1..bytes.len());
    bytes[..cut].to_vec()
}

/// Child mode: append turns forever, printing `ack <seq>` after each durable append.
fn run_child(root: &Path, compression: Compression) {
    let store = SessionStore::new(root).with_compression(compression);
    let header = SessionHeader::new(SESSION, 1, Some("/crash/test".into()));
    let mut writer = store.open_writer(SESSION, Some(header)).unwrap();
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "open {}", writer.next_seq()).unwrap();
    stdout.flush().unwrap();
    // A kill may have left a turn open: close it as the agent does before anything else.
    let closers = writer.interrupted_closers();
    if !closers.is_empty() {
        writer.append(closers).unwrap();
    }
    let first_turn = writer.rules().next_turn();
    for n in first_turn..first_turn + CHILD_MAX_BATCHES {
        let seq = writer.next_seq();
        let (buffered, durable) = turn_batches(n, seq);
        // One event per call, as the agent streams them.
        for event in buffered {
            writer.append_buffered(vec![event]).unwrap();
        }
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
        EventData::TurnStart { .. }
        | EventData::TurnEnd { .. }
        | EventData::StepStart { .. }
        | EventData::StepEnd { .. } => {}
        EventData::UserMessage(m) => assert_eq!(m.joined_text(), expected_text(seq)),
        EventData::AssistantMessage { message, .. } => {
            assert_eq!(message.joined_text(), expected_text(seq));
        }
        other => panic!("seq {seq}: unexpected event {other:?}"),
    }
}

#[test]
fn writer_killed_at_random_points_loses_nothing_acknowledged() {
    crash_rounds(
        "writer_killed_at_random_points_loses_nothing_acknowledged",
        Compression::None,
    );
}

#[test]
fn zstd_writer_killed_at_random_points_loses_nothing_acknowledged() {
    crash_rounds(
        "zstd_writer_killed_at_random_points_loses_nothing_acknowledged",
        Compression::Zstd,
    );
}

/// The log's plaintext and, for zstd, where each complete frame ends (file, plaintext).
fn plaintext(bytes: &[u8], format: LogFormat) -> (Vec<u8>, Vec<(u64, u64)>) {
    match format {
        LogFormat::Plain => (bytes.to_vec(), Vec::new()),
        LogFormat::Zstd => {
            let frames = DecodedFrames::decode(bytes).unwrap();
            (frames.plaintext, frames.ends)
        }
    }
}

/// Where the header line ends, and where the line of each event (by seq) ends, in a log's
/// plaintext; only `\n`-terminated lines count.
fn event_line_ends(plain: &[u8]) -> (usize, Vec<usize>) {
    let mut at = 0;
    let mut header_end = 0;
    let mut ends = Vec::new();
    for line in plain.split_inclusive(|b| *b == b'\n') {
        at += line.len();
        if !line.ends_with(b"\n") {
            break;
        }
        if header_end == 0 {
            header_end = at;
            continue;
        }
        let v: serde_json::Value = serde_json::from_slice(line).unwrap();
        let members = v["data"]["texts"].as_array().map_or(1, Vec::len);
        ends.extend(std::iter::repeat_n(at, members));
    }
    (header_end, ends)
}

/// Run the kill rounds of test `name` (or, in the child, the writer loop) for one encoding.
fn crash_rounds(name: &str, compression: Compression) {
    if let Some(root) = std::env::var_os(CHILD_ENV) {
        run_child(Path::new(&root), compression);
        return;
    }
    let format = match compression {
        Compression::Zstd => LogFormat::Zstd,
        Compression::Auto | Compression::None => LogFormat::Plain,
    };
    // CRASH_SAFETY_SEED=<n> replays a run.
    let seed = std::env::var("CRASH_SAFETY_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    eprintln!("crash_safety {} seed {seed}", compression.as_str());
    let mut rng = fastrand::Rng::with_seed(seed);
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    let store = SessionStore::new(&root).with_compression(compression);
    let exe = std::env::current_exe().unwrap();
    let mut acked_total: Option<u64> = None;
    let mut torn_tails = 0;
    let mut last_len = 0usize;
    for round in 0..ROUNDS {
        let mut child = Command::new(&exe)
            .args(["--exact", name, "--nocapture", "--test-threads=1"])
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
            let (plain, frame_ends) = plaintext(&bytes, format);
            // The end of the line holding the last acknowledged event (a packed row holds
            // several); without one, the end of the header.
            let (header_end, event_ends) = event_line_ends(&plain);
            let durable_plain = match acked_total {
                Some(seq) => event_ends[seq as usize],
                None => header_end,
            };
            // In a zstd log that is the end of the frame holding that line.
            let durable = match format {
                LogFormat::Plain => durable_plain,
                LogFormat::Zstd => frame_ends
                    .iter()
                    .find(|(_, plain_end)| *plain_end >= durable_plain as u64)
                    .map(|(file_end, _)| *file_end as usize)
                    .unwrap(),
            };
            let cut = rng.usize(durable..=bytes.len());
            let mut file = fs::OpenOptions::new().write(true).open(&loc.path).unwrap();
            file.set_len(cut as u64).unwrap();
            // ... and a write in flight may have left part of its bytes behind.
            if rng.bool() {
                let next_seq = event_line_ends(&plaintext(&bytes[..cut], format).0).1.len();
                let torn = in_flight_write(next_seq as u64, format, &mut rng);
                file.seek(std::io::SeekFrom::End(0)).unwrap();
                file.write_all(&torn).unwrap();
            }
        }
        // 1. The log reads back as a prefix of what was written (reading never repairs).
        let before = fs::metadata(&loc.path).unwrap().len();
        assert_eq!(loc.format, format);
        let (events, summary) = read_all(&loc.path, format)
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
        // 3. A torn tail is cut by the next open for writing, and only the tail: what is
        // left is exactly the readable prefix (for zstd: complete frames holding it).
        let bytes = fs::read(&loc.path).unwrap();
        let torn_frame = format == LogFormat::Zstd
            && DecodedFrames::decode(&bytes)
                .unwrap()
                .ends
                .last()
                .map(|e| e.0)
                != Some(bytes.len() as u64);
        if summary.torn_tail.is_some() || torn_frame {
            torn_tails += 1;
        }
        let writer = store.open_writer(SESSION, None).unwrap();
        let after = fs::read(&loc.path).unwrap();
        let (plain_after, _) = plaintext(&after, format);
        assert_eq!(
            plain_after.len() as u64,
            summary.readable_len,
            "round {round}: open for writing did not cut the torn tail"
        );
        if format == LogFormat::Zstd {
            let frames = DecodedFrames::decode(&after).unwrap();
            assert_eq!(
                frames.ends.last().map(|e| e.0),
                Some(after.len() as u64),
                "round {round}: a torn frame survived the open"
            );
        }
        let reopened: Vec<Event> = events.iter().map(|(e, _)| e.clone()).collect();
        assert_eq!(writer.read_all_events().unwrap(), reopened);
        drop(writer);
        let (again, summary) = read_all(&loc.path, format).unwrap();
        assert!(summary.torn_tail.is_none());
        assert_eq!(again.len(), events.len());
        last_len = events.len();
    }
    eprintln!(
        "crash_safety {}: {ROUNDS} kills, {torn_tails} torn tails repaired, {last_len} events survive",
        compression.as_str()
    );
    // The survivor is an ordinary session: it folds, and the next writer appends after it.
    if last_len > 0 {
        let surface = store.read_surface(SESSION).unwrap();
        assert_eq!(surface.captured_through_seq, Some(last_len as u64 - 1));
        let mut writer = store.open_writer(SESSION, None).unwrap();
        let closers = writer.interrupted_closers();
        if !closers.is_empty() {
            writer.append(closers).unwrap();
        }
        let seq = writer.next_seq();
        let (a, b) = turn_batches(writer.rules().next_turn(), seq);
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
