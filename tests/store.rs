//! Session store behaviour through the public API and the built binary (docs/session-store.md: on-disk layout, session query; docs/cli.md).
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
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use dsh_store::{
    ContentBlock, EventData, Message, NewEvent, QueryError, Role, SessionHeader, SessionQuery,
    SessionStore, Source, StoreError, SurfaceOp,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

mod common;
use common::events::{
    assistant_in_turn, exchange as turn, step_end, step_start, title_turn, turn_end_of, turn_start,
    user,
};

fn texts(surface: &dsh_store::Surface) -> Vec<String> {
    surface
        .events
        .iter()
        .map(|e| match &e.data {
            EventData::UserMessage(m) => m.joined_text(),
            EventData::AssistantMessage { message, .. } => message.joined_text(),
            other => panic!("unexpected surface event {other:?}"),
        })
        .collect()
}

fn header_line(id: &str, created: i64, cwd: Option<&str>) -> String {
    serde_json::to_string(&SessionHeader::new(id, created, cwd.map(str::to_owned))).unwrap()
}

const TS0: &str =
    r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1,"trigger":{"kind":"user"}}}"#;
const U1: &str = r#"{"type":"user/message","seq":1,"time":2,"data":{"id":"u1","role":"user","content":[{"type":"text","text":"hello"}],"source":{"kind":"user"}},"surfaceOp":"append"}"#;
const A2: &str = r#"{"type":"assistant/message","seq":2,"time":3,"data":{"turn":1,"step":0,"message":{"id":"a2","role":"assistant","content":[{"type":"text","text":"hi there"}]}},"surfaceOp":"append"}"#;
const TE3: &str =
    r#"{"type":"turn/end","seq":3,"time":4,"data":{"turn":1,"reason":{"kind":"completed"}}}"#;
const T4: &str = r#"{"type":"session/title","seq":4,"time":5,"data":{"title":"Greeting","messageSeqs":[1],"source":{"kind":"fallback"}}}"#;

/// Write a hand-made plain log for `id` and return its path.
fn write_log(root: &Path, id: &str, cwd: Option<&str>, created: i64, body: &str) -> PathBuf {
    let dir = dsh_store::paths::session_dir(root, cwd, id).unwrap();
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join("session.jsonl");
    fs::write(&path, format!("{}\n{body}", header_line(id, created, cwd))).unwrap();
    path
}

#[test]
fn round_trip_create_on_first_event_and_reopen() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path().join("store"));
    let header = SessionHeader::new("s-1", 1_000, Some("/home/me/proj".into()));
    let mut w = store.open_writer("s-1", Some(header.clone())).unwrap();
    assert!(
        !tmp.path().join("store").exists(),
        "nothing on disk before the first event"
    );
    assert!(!store.exists("s-1"));
    assert!(matches!(
        store.read_surface("s-1"),
        Err(QueryError::NotFound { .. })
    ));

    let first = w.append(turn(1, "question one", "answer one")).unwrap();
    assert_eq!(
        first.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![0, 1, 2, 3, 4, 5]
    );
    let path = tmp.path().join("store/--home-me-proj--/s-1/session.jsonl");
    assert!(path.is_file());
    w.append_buffered(title_turn(2, "My title")).unwrap();
    w.sync().unwrap();
    w.append(turn(3, "question two", "answer two")).unwrap();
    let written = w.read_all_events().unwrap();
    drop(w);

    let text = fs::read_to_string(&path).unwrap();
    assert!(text.ends_with('\n'));
    assert_eq!(text.lines().count(), 1 + 15);
    assert_eq!(
        serde_json::from_str::<Value>(text.lines().next().unwrap()).unwrap(),
        json!({"type":"session","version":0,"id":"s-1","createdAt":1000,"cwd":"/home/me/proj","delegationDepth":0})
    );

    assert_eq!(
        store.read_title("s-1").unwrap().as_deref(),
        Some("My title")
    );
    let surface = store.read_surface("s-1").unwrap();
    assert_eq!(surface.session, header);
    assert_eq!(surface.captured_through_seq, Some(14));
    assert_eq!(
        texts(&surface),
        vec!["question one", "answer one", "question two", "answer two"]
    );
    assert_eq!(*store.list_sessions().unwrap(), vec![header.clone()]);

    let again = store.open_writer("s-1", None).unwrap();
    assert_eq!(again.read_all_events().unwrap(), written);
    assert_eq!(again.header(), &header);
}

#[test]
fn replace_folds_on_read_and_invalid_batches_write_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    let mut w = store
        .open_writer("c", Some(SessionHeader::new("c", 1, None)))
        .unwrap();
    w.append(turn(1, "q1", "a1")).unwrap();
    // A replacement by a plugin message (a compaction checkpoint would need its compaction
    // events: tests/agent.rs).
    let checkpoint = NewEvent {
        data: EventData::UserMessage(Message::new(
            Role::User,
            vec![ContentBlock::text("summary")],
            Source::plugin("summary"),
        )),
        surface_op: Some(SurfaceOp::Replace { start: 1, end: 3 }),
        source_event_seqs: Some(vec![1, 3]),
    };
    w.append(vec![checkpoint]).unwrap();
    let len_before = fs::metadata(w.path()).unwrap().len();
    let bad = NewEvent {
        surface_op: Some(SurfaceOp::Replace { start: 1, end: 1 }),
        ..user("x")
    };
    assert!(matches!(
        w.append(vec![user("fine"), bad]),
        Err(StoreError::InvalidEvent { .. })
    ));
    let no_op = NewEvent {
        surface_op: None,
        ..user("x")
    };
    assert!(matches!(
        w.append(vec![no_op]),
        Err(StoreError::InvalidEvent { .. })
    ));
    assert_eq!(fs::metadata(w.path()).unwrap().len(), len_before);
    assert_eq!(w.next_seq(), 7);
    w.append(vec![user("after")]).unwrap();
    let surface = store.read_surface("c").unwrap();
    assert_eq!(texts(&surface), vec!["summary", "after"]);
    assert_eq!(surface.captured_through_seq, Some(7));
}

#[test]
fn torn_tail_is_ignored_on_read_and_truncated_on_open() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    let torn = r#"{"type":"user/message","seq":4,"time":9,"data":{"id":"u","ro"#;
    let path = write_log(
        tmp.path(),
        "torn",
        Some("/w"),
        7,
        &format!("{TS0}\n{U1}\n{A2}\n{TE3}\n{torn}"),
    );
    let before = fs::read(&path).unwrap();
    let surface = store.read_surface("torn").unwrap();
    assert_eq!(texts(&surface), vec!["hello", "hi there"]);
    assert_eq!(surface.captured_through_seq, Some(3));
    assert_eq!(store.read_title("torn").unwrap(), None);
    assert_eq!(store.list_sessions().unwrap().len(), 1);
    assert_eq!(
        fs::read(&path).unwrap(),
        before,
        "reading never modifies the file"
    );

    let mut w = store.open_writer("torn", None).unwrap();
    assert_eq!(w.next_seq(), 4);
    let repaired = fs::read_to_string(&path).unwrap();
    assert!(!repaired.contains(torn));
    assert!(repaired.ends_with(&format!("{TE3}\n")));
    let appended = w.append(title_turn(2, "Fixed")).unwrap();
    assert_eq!(appended[0].seq, 4);
    drop(w);
    assert_eq!(store.read_title("torn").unwrap().as_deref(), Some("Fixed"));
}

#[test]
fn damage_in_the_middle_is_corruption_with_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    let path = write_log(
        tmp.path(),
        "bad",
        None,
        7,
        &format!("{TS0}\n{U1}\n{{\"type\":garbage\n{TE3}\n{T4}\n"),
    );
    let before = fs::read(&path).unwrap();
    let check = |err: String| {
        assert!(err.contains(&format!("{}:4:", path.display())), "{err}");
    };
    match store.read_surface("bad") {
        Err(e @ QueryError::Corrupt { line: 4, .. }) => check(e.to_string()),
        other => panic!("expected corruption, got {other:?}"),
    }
    match store.read_title("bad") {
        Err(e @ QueryError::Corrupt { line: 4, .. }) => check(e.to_string()),
        other => panic!("expected corruption, got {other:?}"),
    }
    match store.open_writer("bad", None) {
        Err(e @ StoreError::Query(QueryError::Corrupt { line: 4, .. })) => check(e.to_string()),
        other => panic!("expected corruption, got {other:?}"),
    }
    assert_eq!(
        fs::read(&path).unwrap(),
        before,
        "a corrupt log is never truncated"
    );
    assert!(matches!(
        store.read_surface("missing"),
        Err(QueryError::NotFound { .. })
    ));
    assert!(matches!(
        store.read_title("missing"),
        Err(QueryError::NotFound { .. })
    ));
}

#[test]
fn second_writer_is_busy_until_the_first_is_dropped() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    let mut a = store
        .open_writer("one", Some(SessionHeader::new("one", 1, None)))
        .unwrap();
    // Two creators of the same new session: the second publish loses cleanly.
    let mut b = store
        .open_writer("one", Some(SessionHeader::new("one", 2, None)))
        .unwrap();
    a.append(vec![user("first")]).unwrap();
    match b.append(vec![user("second")]) {
        Err(e @ StoreError::Busy { .. }) => assert!(e.to_string().contains("busy")),
        other => panic!("expected Busy, got {other:?}"),
    }
    assert!(matches!(
        store.open_writer("one", None),
        Err(StoreError::Busy { .. })
    ));
    // A clone of the store (shared caches) behaves the same.
    assert!(matches!(
        store.clone().open_writer("one", None),
        Err(StoreError::Busy { .. })
    ));
    drop(a);
    let c = store.open_writer("one", None).unwrap();
    assert_eq!(c.next_seq(), 1);
    assert_eq!(c.header().created_at, 1);
}

#[test]
fn reader_racing_a_writer_sees_only_complete_prefixes() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    let mut w = store
        .open_writer(
            "race",
            Some(SessionHeader::new("race", 1, Some("/r".into()))),
        )
        .unwrap();
    w.append(turn(1, "q0", "a0")).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            for n in 2..201u64 {
                let long = "x".repeat((n as usize * 37) % 5000);
                w.append_buffered(vec![turn_start(n), user(&format!("q{n} {long}"))])
                    .unwrap();
                w.append(vec![
                    step_start(n),
                    assistant_in_turn(n, &format!("a{n}")),
                    step_end(n),
                    turn_end_of(n),
                ])
                .unwrap();
            }
            done.store(true, Ordering::SeqCst);
            w
        })
    };
    let mut last = 0;
    let mut reads = 0;
    while !done.load(Ordering::SeqCst) || reads < 5 {
        let surface = store.read_surface("race").unwrap();
        let seq = surface.captured_through_seq.unwrap();
        assert!(seq >= last, "captured seq went backwards");
        last = seq;
        // Every surface event's seq is within what the read captured, in order.
        let seqs: Vec<u64> = surface.events.iter().map(|e| e.seq).collect();
        assert!(seqs.windows(2).all(|p| p[0] < p[1]));
        assert!(seqs.last().is_none_or(|s| *s <= seq));
        store.read_title("race").unwrap();
        store.list_sessions().unwrap();
        reads += 1;
    }
    let w = writer.join().unwrap();
    let surface = store.read_surface("race").unwrap();
    assert_eq!(surface.captured_through_seq, Some(w.next_seq() - 1));
    assert_eq!(surface.events.len(), 400);
}

#[test]
fn hostile_ids_never_leave_the_root() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    let store = SessionStore::new(&root);
    let ids = [
        "../../x",
        "..",
        ".",
        "/etc/passwd",
        "a/../../b",
        "..\\..\\y",
        "~",
        "C:x",
        "\0",
        "é😀",
    ];
    for id in ids {
        let mut w = store
            .open_writer(
                id,
                Some(SessionHeader::new(id, 1, Some("/../../..".into()))),
            )
            .unwrap();
        w.append(vec![user("hi")]).unwrap();
        assert!(
            w.path().starts_with(&root),
            "{id:?} -> {}",
            w.path().display()
        );
    }
    assert!(matches!(
        store.open_writer("", Some(SessionHeader::new("", 1, None))),
        Err(StoreError::Query(QueryError::InvalidId { .. }))
    ));
    assert!(matches!(
        store.open_writer(
            "rel",
            Some(SessionHeader::new("rel", 1, Some("../x".into())))
        ),
        Err(StoreError::InvalidEvent { .. })
    ));
    assert!(matches!(
        store.open_writer("other", Some(SessionHeader::new("not-other", 1, None))),
        Err(StoreError::Query(QueryError::InvalidId { .. }))
    ));
    // Nothing was created beside the store.
    let outside: Vec<_> = fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(outside, vec![std::ffi::OsString::from("store")]);
    let listed: Vec<String> = store
        .list_sessions()
        .unwrap()
        .iter()
        .map(|h| h.id.clone())
        .collect();
    let mut want: Vec<String> = ids.iter().map(std::string::ToString::to_string).collect();
    want.sort_by(|a, b| dsh_store::id_order::compare_ids(a, b));
    assert_eq!(listed, want);
    for id in ids {
        assert_eq!(texts(&store.read_surface(id).unwrap()), vec!["hi"]);
    }
}

#[test]
fn unknown_events_are_kept_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    let odd = r#"{"type":"future/thing","seq":4,"time":5,"data":{"z":1.50,"a":"\u00e9","n":[true,null]},"ignorable":true}"#;
    let body = format!("{TS0}\n{U1}\n{A2}\n{TE3}\n{odd}\n");
    let path = write_log(tmp.path(), "u", None, 3, &body);
    let original = fs::read(&path).unwrap();
    let mut w = store.open_writer("u", None).unwrap();
    match &w.read_all_events().unwrap()[4].data {
        EventData::Other { kind, data } => {
            assert_eq!(kind, "future/thing");
            assert_eq!(data["n"], json!([true, null]));
        }
        other => panic!("unknown type not kept: {other:?}"),
    }
    w.append(title_turn(2, "t")).unwrap();
    drop(w);
    let after = fs::read(&path).unwrap();
    assert!(after.starts_with(&original));
    assert_eq!(
        store.read_surface("u").unwrap().captured_through_seq,
        Some(7)
    );
}

fn zstd_frame(text: &str) -> Vec<u8> {
    zstd::encode_all(text.as_bytes(), 3).unwrap()
}

#[test]
fn zstd_logs_with_packed_rows_list_and_read() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    let dir = dsh_store::paths::session_dir(tmp.path(), Some("/z"), "zs").unwrap();
    fs::create_dir_all(&dir).unwrap();
    let packed = r#"{"type":"text-chunks","seq0":2,"time0":10,"data":{"turn":1,"step":0,"index":0,"dt":[1,1],"texts":["hi"," the","re"]}}"#;
    let a5 = A2.replace("\"seq\":2", "\"seq\":5");
    let te6 = TE3.replace("\"seq\":3", "\"seq\":6");
    let t7 = T4.replace("\"seq\":4", "\"seq\":7");
    let mut bytes = zstd_frame(&format!("{}\n", header_line("zs", 50, Some("/z"))));
    bytes.extend(zstd_frame(&format!("{TS0}\n{U1}\n{packed}\n")));
    bytes.extend(zstd_frame(&format!("{a5}\n{te6}\n{t7}\n")));
    // A torn final frame (cut mid-write) is ignored.
    let torn = zstd_frame(&format!("{}\n", TS0.replace("\"seq\":0", "\"seq\":8")));
    bytes.extend(&torn[..torn.len() / 2]);
    fs::write(dir.join("session.jsonl.zstd"), &bytes).unwrap();
    write_log(tmp.path(), "plain", None, 50, &format!("{TS0}\n"));

    let listed: Vec<String> = store
        .list_sessions()
        .unwrap()
        .iter()
        .map(|h| h.id.clone())
        .collect();
    assert_eq!(listed, vec!["plain", "zs"], "ties by id ascending");
    assert_eq!(store.read_title("zs").unwrap().as_deref(), Some("Greeting"));
    let surface = store.read_surface("zs").unwrap();
    assert_eq!(surface.captured_through_seq, Some(7));
    assert_eq!(texts(&surface), vec!["hello", "hi there"]);
    // Writing is refused before anything is appended: at the check, and at the first append
    // (opening still cuts the torn frame).
    let mut writer = store.open_writer("zs", None).unwrap();
    assert!(matches!(
        writer.check_encoding(),
        Err(StoreError::MixedEncoding { .. })
    ));
    drop(writer);
    let before = fs::read(dir.join("session.jsonl.zstd")).unwrap();
    let mut writer = store.open_writer("zs", None).unwrap();
    assert!(matches!(
        writer.append(turn(9, "more?", "no")),
        Err(StoreError::MixedEncoding { .. })
    ));
    drop(writer);
    assert_eq!(fs::read(dir.join("session.jsonl.zstd")).unwrap(), before);

    // When both exist the plain log wins.
    fs::write(
        dir.join("session.jsonl"),
        format!("{}\n{TS0}\n{U1}\n", header_line("zs", 50, Some("/z"))),
    )
    .unwrap();
    assert_eq!(store.read_title("zs").unwrap(), None);
    assert_eq!(
        store.read_surface("zs").unwrap().captured_through_seq,
        Some(1)
    );
}

#[test]
fn listing_is_ordered_cached_and_revalidated() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    write_log(tmp.path(), "b", Some("/p"), 10, "");
    write_log(tmp.path(), "a", None, 10, "");
    write_log(tmp.path(), "old", Some("/q"), 1, "");
    write_log(tmp.path(), "new", Some("/p"), 99, "");
    // Not sessions: a stray file, an empty session dir, a bad header, a mismatched id.
    fs::write(tmp.path().join("stray.txt"), "x").unwrap();
    fs::create_dir_all(tmp.path().join("_no-cwd/empty")).unwrap();
    let bad = tmp.path().join("_no-cwd/badhdr");
    fs::create_dir_all(&bad).unwrap();
    fs::write(bad.join("session.jsonl"), "{\"type\":\"nope\"}\n").unwrap();
    let moved = tmp.path().join("_no-cwd/elsewhere");
    fs::create_dir_all(&moved).unwrap();
    fs::write(
        moved.join("session.jsonl"),
        format!("{}\n", header_line("zz", 5, None)),
    )
    .unwrap();

    let first = store.list_sessions().unwrap();
    let ids: Vec<&str> = first.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids, vec!["new", "a", "b", "old"]);
    let second = store.list_sessions().unwrap();
    assert!(
        Arc::ptr_eq(&first, &second),
        "unchanged store returns the cached list"
    );

    write_log(tmp.path(), "newest", None, 100, "");
    let third = store.list_sessions().unwrap();
    assert_eq!(third.first().map(|h| h.id.as_str()), Some("newest"));
    fs::remove_dir_all(tmp.path().join("--p--/new")).unwrap();
    let fourth = store.list_sessions().unwrap();
    assert_eq!(fourth.len(), 4);
    assert!(!fourth.iter().any(|h| h.id == "new"));
}

#[test]
fn missing_store_lists_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path().join("absent"));
    assert!(store.list_sessions().unwrap().is_empty());
    assert!(!store.exists("x"));
}

fn run_cli(args: &[&str], home: &Path) -> (String, String, bool) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dsh-refs"))
        .env(
            "XDG_CACHE_HOME",
            std::env::temp_dir().join("dsh-refs-test-cache"),
        )
        .args(args)
        .env_remove("DSH_REFS_STORE")
        .env_remove("DSH_REFS_CONFIG")
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_DATA_HOME", home.join("data"))
        .output()
        .unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
        out.status.success(),
    )
}

#[test]
fn sessions_json_via_the_binary() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    write_log(
        &root,
        "s1",
        Some("/w/a"),
        100,
        &format!("{TS0}\n{U1}\n{A2}\n{TE3}\n{T4}\n"),
    );
    write_log(&root, "s2", None, 200, "");
    // A torn tail still lists with its title.
    write_log(
        &root,
        "s0",
        Some("/w/a b:c"),
        100,
        &format!("{TS0}\n{U1}\n{A2}\n{TE3}\n{T4}\n{{\"type\":\"tu"),
    );
    let store_arg = root.to_str().unwrap();
    let (out, err, ok) = run_cli(&["sessions", "--json", "--store", store_arg], tmp.path());
    assert!(ok, "{err}");
    let got: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        got,
        json!([
            {"sessionId": "s2", "title": null, "cwd": null, "createdAt": 200, "origin": "dsh"},
            {"sessionId": "s0", "title": "Greeting", "cwd": "/w/a b:c", "createdAt": 100, "origin": "dsh"},
            {"sessionId": "s1", "title": "Greeting", "cwd": "/w/a", "createdAt": 100, "origin": "dsh"},
        ])
    );
    let keys: Vec<&String> = got[0].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        vec!["sessionId", "title", "cwd", "createdAt", "origin"]
    );

    // Global option before the subcommand; human table.
    let (table, err, ok) = run_cli(&["--store", store_arg, "sessions"], tmp.path());
    assert!(ok, "{err}");
    assert!(table.lines().next().unwrap().starts_with("TITLE"));
    assert!(table.contains("Greeting") && table.contains("(no cwd)") && table.contains("/w/a b:c"));

    // An explicitly named store that does not exist is an error (a typo is not "no
    // sessions"), reported as JSON under --json, and nothing is created.
    let absent = tmp.path().join("absent");
    let (out, _err, ok) = run_cli(
        &["sessions", "--json", "--store", absent.to_str().unwrap()],
        tmp.path(),
    );
    assert!(!ok);
    let got: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(got["error"]["code"], "CLI_NO_STORE");
    assert!(!absent.exists());
}

#[test]
fn sessions_reports_corrupt_logs_without_failing() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    let path = write_log(&root, "bad", None, 1, &format!("{TS0}\nnot json\n{TE3}\n"));
    let (out, err, ok) = run_cli(
        &["sessions", "--json", "--store", root.to_str().unwrap()],
        tmp.path(),
    );
    assert!(ok, "{err}");
    assert!(err.contains(&format!("{}:3", path.display())), "{err}");
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap(),
        json!([{"sessionId":"bad","title":null,"cwd":null,"createdAt":1,"origin":"dsh"}])
    );
}

/// Issue 27 minor 15: a log damaged after its title is listed with that title, and the
/// damage is still reported.
#[test]
fn sessions_lists_a_damaged_log_with_the_title_it_had_before_the_damage() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    let path = write_log(
        &root,
        "titled",
        None,
        1,
        &format!(
            "{TS0}\n{U1}\n{A2}\n{TE3}\n{T4}\nnot json\n{}\n",
            r#"{"type":"turn/end","seq":9,"time":9,"data":{"turn":2,"reason":{"kind":"completed"}}}"#
        ),
    );
    let (out, err, ok) = run_cli(
        &["sessions", "--json", "--store", root.to_str().unwrap()],
        tmp.path(),
    );
    assert!(ok, "{err}");
    assert!(err.contains(&format!("{}:7", path.display())), "{err}");
    let rows: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(rows[0]["title"], json!("Greeting"), "{rows}");
}

#[test]
fn append_after_reopen_keeps_appending_durably() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    {
        let mut w = store
            .open_writer("d", Some(SessionHeader::new("d", 1, None)))
            .unwrap();
        w.append_buffered(vec![user("buffered")]).unwrap();
        // Dropped without sync: the drop syncs, and the line is on disk.
    }
    let mut w = store.open_writer("d", None).unwrap();
    assert_eq!(w.next_seq(), 1);
    w.append(vec![user("more")]).unwrap();
    assert_eq!(
        texts(&store.read_surface("d").unwrap()),
        vec!["buffered", "more"]
    );
}

#[test]
fn titles_follow_a_growing_log_and_a_replaced_one() {
    use std::io::Write;
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    let path = write_log(
        tmp.path(),
        "g",
        None,
        1,
        &format!("{TS0}\n{U1}\n{A2}\n{TE3}\n"),
    );
    assert_eq!(store.read_title("g").unwrap(), None);
    let (head, tail) = T4.split_at(30);
    let mut f = fs::OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(head.as_bytes()).unwrap();
    assert_eq!(
        store.read_title("g").unwrap(),
        None,
        "a line being written is not read"
    );
    f.write_all(format!("{tail}\n").as_bytes()).unwrap();
    assert_eq!(store.read_title("g").unwrap().as_deref(), Some("Greeting"));
    let t5 = T4
        .replace("\"seq\":4", "\"seq\":5")
        .replace("Greeting", "Second");
    f.write_all(format!("{t5}\n").as_bytes()).unwrap();
    assert_eq!(store.read_title("g").unwrap().as_deref(), Some("Second"));
    drop(f);
    // The session is replaced by a different file (longer, other title): read afresh.
    let other = format!(
        "{}\n{TS0}\n{U1}\n{A2}\n{TE3}\n{}\n{}\n",
        header_line("g", 1, None),
        T4.replace("Greeting", "Replaced file"),
        TS0.replace("\"seq\":0", "\"seq\":5")
    );
    let tmp_file = path.with_extension("new");
    fs::write(&tmp_file, other).unwrap();
    fs::rename(&tmp_file, &path).unwrap();
    assert_eq!(
        store.read_title("g").unwrap().as_deref(),
        Some("Replaced file")
    );
}

#[test]
fn writer_refuses_events_the_reader_would_reject() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    let mut w = store
        .open_writer("v", Some(SessionHeader::new("v", 1, None)))
        .unwrap();
    w.append(vec![user("ok")]).unwrap();
    let bad = [
        // A known type carried as an untyped payload that does not parse as that type.
        NewEvent::plain(EventData::Other {
            kind: "turn/end".into(),
            data: json!({"nope": 1}),
        }),
        // A type that would read back as a dsh packed row.
        NewEvent::plain(EventData::Other {
            kind: "text-chunks".into(),
            data: json!({}),
        }),
        NewEvent::plain(EventData::Other {
            kind: String::new(),
            data: json!({}),
        }),
    ];
    let len = fs::metadata(w.path()).unwrap().len();
    for event in bad {
        assert!(matches!(
            w.append(vec![event]),
            Err(StoreError::InvalidEvent { .. } | StoreError::RuleBroken { .. })
        ));
    }
    // A type no dsh version knows is refused by the rule book (the newest release would
    // refuse the whole log), before anything is written.
    match w.append(vec![NewEvent::plain(EventData::Other {
        kind: "x/new\nline".into(),
        data: json!({"k": [1, 2]}),
    })]) {
        Err(StoreError::RuleBroken { violation, .. }) => {
            assert_eq!(violation.rule, dsh_store::Rule::KnownEventType);
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(fs::metadata(w.path()).unwrap().len(), len);
    drop(w);
    let again = store.open_writer("v", None).unwrap();
    assert_eq!(again.next_seq(), 1);
}

#[test]
fn store_and_writer_can_cross_threads() {
    fn send<T: Send>() {}
    fn shared<T: Send + Sync + Clone + 'static>() {}
    send::<dsh_store::SessionWriter>();
    shared::<SessionStore>();
    let store: Arc<dyn SessionQuery> = Arc::new(SessionStore::new("/nonexistent/root"));
    assert!(store.list_sessions().unwrap().is_empty());
}

#[test]
fn bundled_demo_store_reads_cleanly() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demo/store");
    let store = SessionStore::new(&root);
    let listed = store.list_sessions().unwrap();
    assert!(listed.len() >= 2);
    assert!(
        listed
            .windows(2)
            .all(|p| p[0].created_at >= p[1].created_at)
    );
    for header in listed.iter() {
        assert!(
            store.read_title(&header.id).unwrap().is_some(),
            "{}",
            header.id
        );
        let surface = store.read_surface(&header.id).unwrap();
        assert_eq!(&surface.session, header);
        assert!(!surface.events.is_empty(), "{}", header.id);
    }
}

/// A new session's encoding is settled once, by the first check (here: `auto` in a zstd
/// store), not at open; a refusal leaves the check due, a late verdict changes nothing.
#[test]
fn a_new_sessions_encoding_is_settled_by_its_check_not_its_open() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    let zs = tmp.path().join("--z--").join("zs");
    fs::create_dir_all(&zs).unwrap();
    fs::write(zs.join("session.jsonl.zstd"), b"x").unwrap();

    let mut w = store
        .open_writer("fresh", Some(SessionHeader::new("fresh", 1, None)))
        .unwrap();
    let due = w.encoding_check_due().expect("due after open");
    assert_eq!(
        w.check_encoding().unwrap(),
        dsh_store::reader::LogFormat::Zstd
    );
    assert!(
        w.path().ends_with("session.jsonl.zstd"),
        "{}",
        w.path().display()
    );
    assert!(w.encoding_check_due().is_none());

    // A plain log appears: the verdict already taken stands.
    let p = tmp.path().join("--p--").join("p");
    fs::create_dir_all(&p).unwrap();
    fs::write(p.join("session.jsonl"), b"x").unwrap();
    assert!(due.run().is_err());
    assert_eq!(
        w.settle_encoding(due.run()).unwrap(),
        dsh_store::reader::LogFormat::Zstd
    );

    // A second new writer sees the mixed store: refused, and still due.
    let mut w2 = store
        .open_writer("fresh2", Some(SessionHeader::new("fresh2", 1, None)))
        .unwrap();
    let due2 = w2.encoding_check_due().unwrap();
    assert!(matches!(
        w2.settle_encoding(due2.run()),
        Err(StoreError::MixedEncoding { .. })
    ));
    assert!(w2.encoding_check_due().is_some());
}
