//! Concurrency (issue 7 item 5): two processes on one store, each writing its own session and
//! preparing references to the other's while it grows. No torn reads (every prepare succeeds
//! once the other session exists and sees a prefix of what the other wrote), no lost events,
//! and a clear `Busy` error for anyone else who tries to write a session that is open.
//!
//! The processes are this test binary re-executed with `CONCURRENCY_ROLE` set; a second
//! test runs the real app (`dsh-refs send`) twice at once, each referencing the other.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::needless_pass_by_value,
    clippy::similar_names
)] // test code: small known values, helpers that take values for brevity

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dsh_reference::prompt::{CLOSE_TAG, OPEN_TAG, serialized_sources};
use dsh_reference::{AgentRef, ErrorCode, Reference, ReferenceConfig, SessionReferences};
use dsh_store::event::TurnEndReason;
use dsh_store::reader::{LogFormat, read_all};
use dsh_store::{
    ContentBlock, EventData, Message, NewEvent, Role, SessionHeader, SessionQuery, SessionStore,
    Source, StoreError,
};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

const ROLE_ENV: &str = "CONCURRENCY_ROLE";
const STORE_ENV: &str = "CONCURRENCY_STORE";
const TURNS: u64 = 60;
const TEST_NAME: &str = "two_processes_write_and_reference_each_other";

fn session_id(role: &str) -> String {
    format!("conc-{role}")
}

fn other(role: &str) -> &'static str {
    if role == "a" { "b" } else { "a" }
}

/// What `role` writes as message `k` of turn `turn` (0 = user, 1 = assistant).
fn text(role: &str, turn: u64, k: u64) -> String {
    let len = ((turn * 7919 + k * 104_729) % 4000) as usize;
    format!("{role} turn {turn} part {k} {}", "z".repeat(len))
}

fn turn_events(role: &str, turn: u64) -> Vec<NewEvent> {
    let msg = |k: u64, r: Role, source: Source| Message {
        id: format!("{role}-{turn}-{k}"),
        role: r,
        content: vec![ContentBlock::text(text(role, turn, k))],
        source: Some(source),
        extra: Map::new(),
    };
    // dsh numbers turns from 1 and steps from 1.
    let n = turn + 1;
    vec![
        NewEvent::plain(EventData::TurnStart {
            turn: n,
            trigger: json!({"kind": "user"}),
            extra: Map::new(),
        }),
        NewEvent::appended(EventData::UserMessage(msg(0, Role::User, Source::user()))),
        NewEvent::plain(EventData::StepStart {
            turn: n,
            step: 1,
            extra: Map::new(),
        }),
        NewEvent::appended(EventData::AssistantMessage {
            turn: n,
            step: 1,
            message: msg(1, Role::Assistant, Source::model("offline", "m")),
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
    ]
}

/// Check a prepared context for `other`: well framed, and its conversation is a prefix of
/// what `other` writes. Returns (captured seq, conversation length).
fn check_context(other: &str, context: &Message) -> (u64, usize) {
    let body = context.joined_text();
    assert_eq!(body.matches(OPEN_TAG).count(), 1);
    assert_eq!(body.matches(CLOSE_TAG).count(), 1);
    let array: Vec<Value> = serde_json::from_str(serialized_sources(&body).unwrap()).unwrap();
    assert_eq!(array.len(), 1);
    let source = &array[0];
    assert_eq!(source["sessionId"], session_id(other));
    let conversation = source["conversation"].as_array().unwrap();
    for (n, item) in conversation.iter().enumerate() {
        let (turn, k) = (n as u64 / 2, n as u64 % 2);
        let role = if k == 0 { "user" } else { "assistant" };
        assert_eq!(item["role"], role, "item {n}");
        assert_eq!(
            item["text"],
            text(other, turn, k),
            "item {n} is not what was written"
        );
    }
    let seq = source["capturedThroughSeq"].as_u64().unwrap();
    // Captured through the last event read: at least every message it shows.
    assert!(seq + 1 >= conversation.len() as u64 * 2);
    (seq, conversation.len())
}

/// Child: write TURNS turns to our session, preparing a reference to the other session
/// after each; print a summary, then hold the writer open until stdin closes.
fn run_child(role: &str, root: &Path) {
    let store = SessionStore::new(root);
    let id = session_id(role);
    let mut out = std::io::stdout().lock();
    let header = SessionHeader::new(&id, 1, Some("/conc".into()));
    let mut writer = match store.open_writer(&id, Some(header)) {
        Ok(w) => w,
        Err(e) => {
            writeln!(out, "open-error {e}").unwrap();
            return;
        }
    };
    let refs = SessionReferences::new(
        Arc::new(store.clone()),
        ReferenceConfig::new(3, 50, 1 << 26).unwrap(),
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let agent = AgentRef {
        session_id: id.clone(),
        cwd: Some("/conc".into()),
    };
    let other = other(role);
    let reference = Reference {
        session_id: session_id(other),
        label: None,
    };
    let (mut prepared, mut not_yet, mut last_seq, mut max_items) = (0, 0, 0u64, 0usize);
    for turn in 0..TURNS {
        // The first append publishes the log; later ones grow it.
        if turn == 0 {
            writer.append(turn_events(role, turn)).unwrap();
        } else {
            // Half buffered then synced, so the other side also races unsynced writes.
            let mut events = turn_events(role, turn);
            let tail = events.split_off(2);
            writer.append_buffered(events).unwrap();
            writer.append(tail).unwrap();
        }
        let result = runtime.block_on(refs.prepare(
            &agent,
            &[ContentBlock::text("look")],
            std::slice::from_ref(&reference),
            &CancellationToken::new(),
        ));
        match result {
            Ok(p) => {
                let (seq, items) = check_context(other, p.context.as_ref().unwrap());
                assert!(seq >= last_seq, "captured seq went backwards");
                assert!(items >= max_items, "conversation shrank");
                (last_seq, max_items) = (seq, items);
                prepared += 1;
            }
            // Before the other process published its log, it is simply not there yet.
            Err(e) if e.code == ErrorCode::ReadFailed && prepared == 0 => {
                assert!(e.to_string().contains("not found"), "{e}");
                not_yet += 1;
            }
            Err(e) => panic!("prepare failed while {other} grows: {e}"),
        }
    }
    writeln!(
        out,
        "done prepared={prepared} not_yet={not_yet} max_items={max_items}"
    )
    .unwrap();
    out.flush().unwrap();
    drop(out);
    // Hold the writer until the supervisor is done checking Busy.
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    drop(writer);
}

fn spawn(role: &str, root: &Path) -> (Child, std::io::Lines<BufReader<ChildStdout>>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", TEST_NAME, "--nocapture", "--test-threads=1"])
        .env(ROLE_ENV, role)
        .env(STORE_ENV, root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    (child, lines)
}

/// The first line holding `prefix`, from `prefix` on.
fn wait_for(lines: &mut std::io::Lines<BufReader<ChildStdout>>, prefix: &str) -> String {
    for line in lines.by_ref() {
        let line = line.unwrap();
        // The harness may have printed `test … ... ` on the same line first.
        if let Some(at) = line.find(prefix) {
            return line[at..].to_owned();
        }
    }
    panic!("child ended without printing {prefix:?}");
}

#[test]
fn two_processes_write_and_reference_each_other() {
    if let (Some(role), Some(root)) = (std::env::var_os(ROLE_ENV), std::env::var_os(STORE_ENV)) {
        run_child(role.to_str().unwrap(), Path::new(&root));
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    let store = SessionStore::new(&root);
    let (mut a, mut a_out) = spawn("a", &root);
    let (mut b, mut b_out) = spawn("b", &root);

    // Meanwhile this (third) process reads both sessions as they grow.
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut reads = 0;
    let mut last = [0u64; 2];
    while reads < 50 && Instant::now() < deadline {
        for (n, role) in ["a", "b"].into_iter().enumerate() {
            match store.read_surface(&session_id(role)) {
                Ok(surface) => {
                    let seq = surface.captured_through_seq.unwrap();
                    assert!(seq >= last[n]);
                    last[n] = seq;
                    reads += 1;
                }
                Err(e) => assert!(
                    e.to_string().contains("not found"),
                    "torn read of {role}: {e}"
                ),
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }

    let done_a = wait_for(&mut a_out, "done");
    let done_b = wait_for(&mut b_out, "done");
    eprintln!("a: {done_a}; b: {done_b}");
    for done in [&done_a, &done_b] {
        let prepared: u64 = done
            .split_whitespace()
            .find_map(|w| w.strip_prefix("prepared="))
            .unwrap()
            .parse()
            .unwrap();
        assert!(prepared > 0, "{done}");
    }

    // Both sessions are held open: every other writer gets a clear Busy error.
    for role in ["a", "b"] {
        let id = session_id(role);
        match store.open_writer(&id, None) {
            Err(e @ StoreError::Busy { .. }) => {
                let message = e.to_string();
                assert!(
                    message.contains("busy") && message.contains(&id),
                    "{message}"
                );
            }
            other => panic!("expected Busy for {id}, got {other:?}"),
        }
    }
    // ... including another process trying to be writer `a`.
    let (mut dup, mut dup_out) = spawn("a", &root);
    let refused = wait_for(&mut dup_out, "open-error");
    assert!(refused.contains("busy"), "{refused}");
    drop(dup.stdin.take());
    assert!(dup.wait().unwrap().success());

    // Release both writers; nothing was lost and both logs are clean.
    drop(a.stdin.take());
    drop(b.stdin.take());
    assert!(a.wait().unwrap().success());
    assert!(b.wait().unwrap().success());
    for role in ["a", "b"] {
        let loc = store.locate(&session_id(role)).unwrap().unwrap();
        let (events, summary) = read_all(&loc.path, LogFormat::Plain).unwrap();
        assert!(summary.torn_tail.is_none());
        assert_eq!(events.len() as u64, TURNS * 6, "{role} lost events");
        let surface = store.read_surface(&session_id(role)).unwrap();
        let texts: Vec<String> = surface
            .events
            .iter()
            .map(|e| e.message().unwrap().joined_text())
            .collect();
        let want: Vec<String> = (0..TURNS)
            .flat_map(|t| [text(role, t, 0), text(role, t, 1)])
            .collect();
        assert_eq!(texts, want);
    }
}

/// `dsh-refs send` (the real app, offline provider) on `root`.
fn send(root: &Path, dir: &Path, session: &str, text: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dsh-refs"));
    cmd.env(
        "XDG_CACHE_HOME",
        std::env::temp_dir().join("dsh-refs-test-cache"),
    );
    cmd.arg("--store")
        .arg(root)
        .arg("--config")
        .arg(dir.join("config.toml"))
        .arg("--no-foreign-sources")
        .args(["send", "--session", session, text])
        .current_dir(dir)
        .env_remove("DSH_REFS_STORE")
        .env_remove("DSH_REFS_CONFIG")
        .env_remove("DEEPSEEK_API_KEY")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

#[test]
fn two_app_processes_send_to_their_sessions_referencing_each_other() {
    const ROUNDS: usize = 8;
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("config.toml"), "").unwrap();
    let root = tmp.path().join("store");
    let store = SessionStore::new(&root);
    let mention = |id: &str| dsh_reference::format_mention(id, None);
    // A failed prepare creates nothing, so each session starts with a plain message.
    let a = send(&root, tmp.path(), "app-a", "hello a").spawn().unwrap();
    let b = send(&root, tmp.path(), "app-b", "hello b").spawn().unwrap();
    for out in [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()] {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let (mut sent_a, mut sent_b) = (vec!["hello a".to_owned()], vec!["hello b".to_owned()]);
    for round in 0..ROUNDS {
        // Both processes run at once; each references the other's session as it grows.
        let text_a = format!("a{round} about {}", mention("app-b"));
        let text_b = format!("b{round} about {}", mention("app-a"));
        let a = send(&root, tmp.path(), "app-a", &text_a).spawn().unwrap();
        let b = send(&root, tmp.path(), "app-b", &text_b).spawn().unwrap();
        for (out, sent, me) in [
            (a.wait_with_output().unwrap(), &mut sent_a, "a"),
            (b.wait_with_output().unwrap(), &mut sent_b, "b"),
        ] {
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            assert!(out.status.success(), "{me}{round}: {stderr}");
            sent.push(format!("{me}{round} about @app-{}", other(me)));
        }
    }
    // Every acknowledged message is in its log, in order, each right after its snapshot.
    for (id, sent) in [("app-a", &sent_a), ("app-b", &sent_b)] {
        let events = store
            .open_writer(id, None)
            .unwrap()
            .read_all_events()
            .unwrap();
        let direct: Vec<String> = events
            .iter()
            .filter_map(|e| e.message())
            .filter(|m| m.is_direct_user())
            .map(Message::joined_text)
            .collect();
        assert_eq!(&direct, sent, "{id}");
        for (n, e) in events.iter().enumerate() {
            let Some(m) = e.message() else { continue };
            if m.source
                .as_ref()
                .is_some_and(dsh_store::Source::is_session_reference)
            {
                check_context_frame(m);
                let next = events[n + 1].message().unwrap();
                assert!(next.is_direct_user(), "context not followed by its message");
            }
        }
    }

    // While this process holds a session, the app refuses to write it, with a clear error.
    let held = store.open_writer("app-a", None).unwrap();
    let before = held.next_seq();
    let out = send(&root, tmp.path(), "app-a", "blocked")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("busy") && stderr.contains("app-a"),
        "{stderr}"
    );
    drop(held);
    assert_eq!(store.open_writer("app-a", None).unwrap().next_seq(), before);
}

/// A snapshot context is framed once and its JSON parses.
fn check_context_frame(context: &Message) {
    let body = context.joined_text();
    assert_eq!(body.matches(OPEN_TAG).count(), 1);
    assert_eq!(body.matches(CLOSE_TAG).count(), 1);
    let _: Vec<Value> = serde_json::from_str(serialized_sources(&body).unwrap()).unwrap();
}
