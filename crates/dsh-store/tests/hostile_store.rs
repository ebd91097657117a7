//! Hostile store contents (issue 14): oversized lines and packed rows, zstd bombs, links and
//! special files in the store or its index, two logs for one id, concurrent creators, and a
//! hand-edited index. Each case ends with a clear error or the right answer, never a hang.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use dsh_store::index_file::{self, FileTime, INDEX_FILE, IndexRecord, SessionRecord};
use dsh_store::reader::{self, Limits, LogFormat};
use dsh_store::{
    EventData, NewEvent, QueryError, SessionHeader, SessionQuery, SessionStore, StoreError,
};
use serde_json::json;

fn header_line(id: &str, created: i64, cwd: Option<&str>) -> String {
    serde_json::to_string(&SessionHeader::new(id, created, cwd.map(str::to_owned))).unwrap() + "\n"
}

fn turn_start(seq: u64) -> String {
    json!({"type": "turn/start", "seq": seq, "time": 1, "data": {"turn": 1, "trigger": {"kind": "user"}}}).to_string() + "\n"
}

fn turn_end(seq: u64) -> String {
    json!({"type": "turn/end", "seq": seq, "time": 1, "data": {"turn": 1, "reason": {"kind": "completed"}}}).to_string() + "\n"
}

fn title_line(seq: u64, title: &str) -> String {
    json!({"type": "session/title", "seq": seq, "time": 1, "data": {"title": title, "messageSeqs": [], "source": {"kind": "manual"}}}).to_string() + "\n"
}

fn write_log(root: &Path, project: &str, id: &str, text: &str) -> PathBuf {
    let dir = root
        .join(project)
        .join(dsh_store::paths::encode_session_id(id).unwrap());
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join("session.jsonl");
    fs::write(&path, text).unwrap();
    path
}

fn simple_log(id: &str, title: &str) -> String {
    format!(
        "{}{}{}",
        header_line(id, 1, None),
        turn_start(0),
        title_line(1, title)
    )
}

/// A store that keeps its index in `<tmp>/cache` (never in the root).
fn store_with(root: &Path, limits: Limits) -> SessionStore {
    let cache = root.parent().unwrap().join("cache");
    SessionStore::with_options(root, Some(cache), true, limits)
}

/// Run `f` on a thread; fail the test if it does not finish within a generous guard.
fn guarded<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("hang guard: the call never returned")
}

fn mkfifo(path: &Path) {
    let ok = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap()
        .success();
    assert!(ok, "mkfifo failed");
}

fn small_limits() -> Limits {
    Limits {
        max_line_bytes: 64 * 1024,
        ..Limits::default()
    }
}

fn user_message(seq: u64, text: &str) -> String {
    json!({"type": "user/message", "seq": seq, "time": 1, "data": {"id": format!("u{seq}"), "role": "user", "content": [{"type": "text", "text": text}], "source": {"kind": "user"}}, "surfaceOp": "append"}).to_string() + "\n"
}

fn assistant_message(seq: u64, text: &str) -> String {
    json!({"type": "assistant/message", "seq": seq, "time": 2, "data": {"turn": 1, "step": 1, "message": {"id": format!("a{seq}"), "role": "assistant", "content": [{"type": "text", "text": text}], "source": {"kind": "model", "provider": "p", "model": "m"}}}, "surfaceOp": "append"}).to_string() + "\n"
}

fn step(kind: &str, seq: u64) -> String {
    json!({"type": kind, "seq": seq, "time": 1, "data": {"turn": 1, "step": 1}}).to_string() + "\n"
}

/// One turn whose reply is `reply`, as dsh and earlier versions of this project wrote it.
fn turn_with_reply(id: &str, reply: &str) -> String {
    format!(
        "{}{}{}{}{}{}{}",
        header_line(id, 1, None),
        turn_start(0),
        user_message(1, "question"),
        step("step/start", 2),
        assistant_message(3, reply),
        step("step/end", 4),
        turn_end(5)
    )
}

#[test]
fn a_complete_line_over_the_limit_stays_in_the_log_as_a_placeholder() {
    // Issue 23 item 3: before, the line was corruption mid-log (the session could not be
    // opened, continued or referenced until store.max_line_bytes was raised).
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    let reply = "x\u{1}\"".repeat(40_000);
    let path = write_log(&root, "_no-cwd", "mid", &turn_with_reply("mid", &reply));
    let store = store_with(&root, small_limits());
    let surface = store.read_surface("mid").unwrap();
    assert_eq!(surface.captured_through_seq, Some(5));
    let seqs: Vec<u64> = surface.events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [1, 3]);
    let placeholder = &surface.events[1];
    assert_eq!(placeholder.kind(), "assistant/message");
    let line_bytes = fs::read_to_string(&path)
        .unwrap()
        .lines()
        .nth(4)
        .unwrap()
        .len() as u64
        + 1;
    assert!(line_bytes > 64 * 1024);
    assert_eq!(
        dsh_store::not_loaded::NotLoaded::of(placeholder),
        Some(dsh_store::not_loaded::NotLoaded {
            line_bytes,
            dense: false
        })
    );
    let EventData::Other { kind, data } = &placeholder.data else {
        panic!("{placeholder:?}")
    };
    assert_eq!(
        dsh_store::not_loaded::label(kind, data).as_deref(),
        Some("[reply of 352 KiB not loaded]")
    );
    // Checked: no rule broken, the line reported.
    let report = store.check_session("mid").unwrap();
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    assert_eq!(report.not_loaded.lines, 1);
    assert_eq!(report.not_loaded.first[0].seq, 3);
    assert_eq!(report.torn_tail, None);
    // Continued: the writer opens it and appends after it; nothing of it is rewritten.
    let before = fs::read(&path).unwrap();
    let mut w = store.open_writer("mid", None).unwrap();
    assert_eq!(w.next_seq(), 6);
    assert!(w.inherited().is_empty(), "{:?}", w.inherited());
    w.append(vec![NewEvent::plain(EventData::TurnStart {
        turn: 2,
        trigger: json!({"kind": "user"}),
        extra: serde_json::Map::new(),
    })])
    .unwrap();
    drop(w);
    let after = fs::read(&path).unwrap();
    assert_eq!(&after[..before.len()], &before[..]);
    // With a limit that holds it, the reply reads whole.
    let default = store_with(&root, Limits::default());
    let surface = default.read_surface("mid").unwrap();
    assert_eq!(surface.events[1].message().unwrap().joined_text(), reply);
}

#[test]
fn a_packed_row_over_the_limit_becomes_placeholder_chunks() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    let n = 40;
    let row = json!({
        "type": "text-chunks", "seq0": 3, "time0": 1,
        "data": {"turn": 1, "step": 1, "index": 0, "dt": vec![0; n - 1], "texts": vec!["y".repeat(4000); n]}
    })
    .to_string()
        + "\n";
    let log = format!(
        "{}{}{}{}{row}{}{}",
        header_line("rows", 1, None),
        turn_start(0),
        user_message(1, "q"),
        step("step/start", 2),
        step("step/end", 3 + n as u64),
        json!({"type": "turn/end", "seq": 4 + n as u64, "time": 1, "data": {"turn": 1, "reason": {"kind": "completed"}}}).to_string() + "\n",
    );
    write_log(&root, "_no-cwd", "rows", &log);
    let store = store_with(&root, small_limits());
    let mut seqs = Vec::new();
    let placeholders = std::cell::Cell::new(0);
    let w = store
        .open_writer_observing("rows", None, &mut |e| {
            seqs.push(e.seq);
            if dsh_store::not_loaded::NotLoaded::of(e).is_some() {
                assert_eq!(e.kind(), "assistant/chunk");
                placeholders.set(placeholders.get() + 1);
            }
        })
        .unwrap();
    assert_eq!(w.next_seq(), 5 + n as u64);
    assert_eq!(seqs, (0..5 + n as u64).collect::<Vec<_>>());
    assert_eq!(placeholders.get(), n);
}

#[test]
fn a_line_over_the_limit_that_is_not_one_event_is_still_damage() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    let reply = "z".repeat(100_000);
    // Mid-log with a turn/end after it: corruption, with file and line.
    let wrong_seq = turn_with_reply("seq", &reply).replace("\"seq\":3,", "\"seq\":9,");
    let seq_path = write_log(&root, "_no-cwd", "seq", &wrong_seq);
    // At the end, unterminated: a torn tail (a write in progress), cut by the writer.
    let full = turn_with_reply("tail", &reply);
    let cut = full.find(&reply).unwrap() + 70_000;
    write_log(&root, "_no-cwd", "tail", &full[..cut]);
    let store = store_with(&root, small_limits());
    match store.read_surface("seq") {
        Err(QueryError::Corrupt { path, line, reason }) => {
            assert_eq!((path, line), (seq_path, 5));
            assert!(
                reason.contains("max_line_bytes") && reason.contains("seq 9"),
                "{reason}"
            );
        }
        other => panic!("expected corruption, got {other:?}"),
    }
    assert!(matches!(
        store.open_writer("seq", None),
        Err(StoreError::Query(QueryError::Corrupt { line: 5, .. }))
    ));
    let surface = store.read_surface("tail").unwrap();
    assert_eq!(surface.captured_through_seq, Some(2));
    let w = store.open_writer("tail", None).unwrap();
    assert_eq!(w.next_seq(), 3);
}

#[test]
fn an_endless_line_is_skipped_without_being_held() {
    // 256 MiB without a newline, from a reader that allocates nothing.
    struct Endless(u64);
    impl std::io::Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(usize::try_from(self.0).unwrap_or(usize::MAX));
            buf[..n].fill(b'a');
            self.0 -= n as u64;
            Ok(n)
        }
    }
    let head = format!("{}{}", header_line("e", 1, None), turn_start(0));
    let src = std::io::BufReader::new(std::io::Read::chain(head.as_bytes(), Endless(256 << 20)));
    let mut seqs = Vec::new();
    let summary = reader::scan_limited(Path::new("/x"), src, &small_limits(), &mut |e, _| {
        seqs.push(e.seq);
        Ok(())
    })
    .unwrap();
    assert_eq!(seqs, vec![0]);
    let torn = summary.torn_tail.unwrap();
    assert_eq!(torn.line, 3);
    assert_eq!(torn.reason, reader::UNTERMINATED);
}

#[test]
fn a_zstd_bomb_is_read_in_bounded_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    let dir = root.join("_no-cwd").join("bomb");
    fs::create_dir_all(&dir).unwrap();
    // 64 MiB of one line without a newline compress to a few KiB.
    let mut enc = zstd::stream::write::Encoder::new(
        fs::File::create(dir.join("session.jsonl.zstd")).unwrap(),
        19,
    )
    .unwrap();
    enc.write_all(header_line("bomb", 1, None).as_bytes())
        .unwrap();
    enc.write_all(turn_start(0).as_bytes()).unwrap();
    let block = vec![b'z'; 1 << 20];
    for _ in 0..64 {
        enc.write_all(&block).unwrap();
    }
    enc.finish().unwrap();
    assert!(fs::metadata(dir.join("session.jsonl.zstd")).unwrap().len() < 64 * 1024);
    let store = store_with(&root, small_limits());
    let list = store.list_sessions().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(store.read_title("bomb").unwrap(), None);
    let surface = store.read_surface("bomb").unwrap();
    assert_eq!(surface.captured_through_seq, Some(0));
}

#[test]
fn a_packed_row_over_the_member_limit_is_read_as_placeholders_never_expanded() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    let n = 20_000;
    let row = json!({
        "type": "text-chunks", "seq0": 1, "time0": 1,
        "data": {"turn": 1, "step": 0, "index": 0, "dt": vec![0; n - 1], "texts": vec!["a"; n]}
    })
    .to_string()
        + "\n";
    let path = write_log(
        &root,
        "_no-cwd",
        "packed",
        &format!(
            "{}{}{row}{}",
            header_line("packed", 1, None),
            turn_start(0),
            turn_end(n as u64 + 1)
        ),
    );
    // Within the default limit it expands to its members.
    let (events, _) = reader::read_all(&path, LogFormat::Plain).unwrap();
    assert_eq!(events.len(), n + 2);
    let limited = Limits {
        max_packed_members: 10_000,
        ..Limits::default()
    };
    // Over it, the row is one placeholder chunk per member, made one at a time (issue 34:
    // never damage, so a writer never cuts a row dsh reads); the log goes on after it.
    let mut count = 0;
    let mut placeholders = 0;
    reader::scan_log_limited(&path, LogFormat::Plain, &limited, &mut |e, _| {
        count += 1;
        placeholders += usize::from(dsh_store::not_loaded::NotLoaded::of(&e).is_some());
        Ok(())
    })
    .unwrap();
    assert_eq!((count, placeholders), (n + 2, n));
    let store = store_with(&root, limited);
    assert!(store.read_surface("packed").is_ok());
    // The row as the log's last line (a reply streamed, the turn not ended yet): opening the
    // log for writing keeps it — it used to be damage, a torn tail the writer cut away.
    let tail = write_log(
        &root,
        "_no-cwd",
        "packed-tail",
        &format!(
            "{}{}{row}",
            header_line("packed-tail", 1, None),
            turn_start(0)
        ),
    );
    let before = std::fs::read(&tail).unwrap();
    let writer = store.open_writer("packed-tail", None).unwrap();
    assert_eq!(writer.next_seq(), n as u64 + 1);
    drop(writer);
    let after = std::fs::read(&tail).unwrap();
    assert!(after.starts_with(&before), "the row was cut");
}

#[test]
fn special_files_as_index_or_log_are_skipped_never_opened_for_a_blocking_read() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    write_log(&root, "_no-cwd", "ok", &simple_log("ok", "fine"));
    let fifo_dir = root.join("_no-cwd").join("fifo");
    fs::create_dir_all(&fifo_dir).unwrap();
    mkfifo(&fifo_dir.join("session.jsonl"));
    let cache = tmp.path().join("cache");
    fs::create_dir_all(&cache).unwrap();
    mkfifo(&cache.join(INDEX_FILE));
    let root2 = root.clone();
    let (ids, title, warnings, fifo_read) = guarded(move || {
        let store = store_with(&root2, Limits::default());
        let ids: Vec<String> = store
            .list_sessions()
            .unwrap()
            .iter()
            .map(|h| h.id.clone())
            .collect();
        let title = store.read_title("ok").unwrap();
        let fifo_read = store.read_title("fifo").map_err(|e| e.to_string());
        (ids, title, store.listing_warnings(), fifo_read)
    });
    assert_eq!(ids, ["ok"]);
    assert_eq!(title.as_deref(), Some("fine"));
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("FIFO") && w.contains("fifo")),
        "{warnings:?}"
    );
    assert!(fifo_read.is_err_and(|e| e.contains("FIFO")));

    // An index linked to /dev/zero is refused as a link, before any read.
    fs::remove_file(cache.join(INDEX_FILE)).unwrap();
    std::os::unix::fs::symlink("/dev/zero", cache.join(INDEX_FILE)).unwrap();
    let root3 = root.clone();
    let ids = guarded(move || {
        store_with(&root3, Limits::default())
            .list_sessions()
            .unwrap()
            .len()
    });
    assert_eq!(ids, 1);
}

#[test]
fn links_below_the_root_are_never_followed_read_or_written() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    let outside = tmp.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    let victim = outside.join("victim.jsonl");
    let victim_text = simple_log("linked", "outside title");
    fs::write(&victim, &victim_text).unwrap();

    // A link in place of session.jsonl.
    let dir = root.join("_no-cwd").join("linked");
    fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("session.jsonl")).unwrap();
    // A link in place of a session directory.
    let real_dir = outside.join("sdir");
    fs::create_dir_all(&real_dir).unwrap();
    fs::write(
        real_dir.join("session.jsonl"),
        simple_log("sdir", "outside dir"),
    )
    .unwrap();
    std::os::unix::fs::symlink(&real_dir, root.join("_no-cwd").join("sdir")).unwrap();
    // A link in place of a project directory.
    let real_project = outside.join("project");
    fs::create_dir_all(&real_project).unwrap();
    std::os::unix::fs::symlink(&real_project, root.join("--evil--")).unwrap();

    let store = store_with(&root, Limits::default());
    assert!(store.list_sessions().unwrap().is_empty());
    let warnings = store.listing_warnings();
    for name in ["linked", "sdir", "--evil--"] {
        assert!(
            warnings
                .iter()
                .any(|w| w.contains(name) && w.contains("symbolic link")),
            "{name}: {warnings:?}"
        );
    }
    assert!(store.read_title("linked").is_err());
    assert!(store.read_surface("sdir").is_err());
    assert!(store.open_writer("linked", None).is_err());
    assert!(store.open_writer("sdir", None).is_err());
    // Creating a session whose project dir is the link fails and writes nothing outside.
    let header = SessionHeader::new("new", 5, Some("/evil".into()));
    let mut w = store.open_writer("new", Some(header)).unwrap();
    let err = w
        .append(vec![NewEvent::plain(EventData::TurnStart {
            turn: 1,
            trigger: json!({"kind": "user"}),
            extra: serde_json::Map::default(),
        })])
        .unwrap_err()
        .to_string();
    assert!(err.contains("symbolic link"), "{err}");
    assert_eq!(fs::read_dir(&real_project).unwrap().count(), 0);
    assert_eq!(fs::read_to_string(&victim).unwrap(), victim_text);
}

#[test]
fn one_id_under_two_projects_is_an_error_naming_both_logs() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    let a = write_log(&root, "--p1--", "dup", &simple_log("dup", "one"));
    let b = write_log(&root, "--p2--", "dup", &simple_log("dup", "two"));
    let store = store_with(&root, Limits::default());
    assert_eq!(store.list_sessions().unwrap().len(), 1);
    let warnings = store.listing_warnings();
    let names_both =
        |s: &str| s.contains(&*a.to_string_lossy()) && s.contains(&*b.to_string_lossy());
    assert!(warnings.iter().any(|w| names_both(w)), "{warnings:?}");
    for err in [
        store.read_title("dup").unwrap_err().to_string(),
        store.read_surface("dup").unwrap_err().to_string(),
        store.open_writer("dup", None).unwrap_err().to_string(),
    ] {
        assert!(names_both(&err), "{err}");
    }
}

#[test]
fn concurrent_creators_of_one_id_leave_exactly_one_log() {
    for round in 0..10 {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("store");
        let barrier = Arc::new(Barrier::new(2));
        let handles: Vec<_> = ["/w/p1", "/w/p2"]
            .into_iter()
            .map(|cwd| {
                let root = root.clone();
                let barrier = Arc::clone(&barrier);
                std::thread::spawn(move || {
                    let store = SessionStore::with_options(&root, None, false, Limits::default());
                    let header = SessionHeader::new("dup", 1, Some(cwd.into()));
                    let mut w = store.open_writer("dup", Some(header))?;
                    barrier.wait();
                    w.append(vec![NewEvent::plain(EventData::TurnStart {
                        turn: 1,
                        trigger: json!({"kind": "user"}),
                        extra: serde_json::Map::default(),
                    })])
                    .map(drop)
                })
            })
            .collect();
        let results: Vec<Result<(), StoreError>> =
            handles.into_iter().map(|h| h.join().unwrap()).collect();
        let ok = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(ok, 1, "round {round}: {results:?}");
        assert!(
            results
                .iter()
                .any(|r| matches!(r, Err(StoreError::Busy { .. }))),
            "round {round}: {results:?}"
        );
        let store = SessionStore::with_options(&root, None, false, Limits::default());
        assert!(store.locate("dup").unwrap().is_some(), "round {round}");
        let logs = fs::read_dir(&root)
            .unwrap()
            .filter(|p| p.as_ref().unwrap().path().join("dup").exists())
            .count();
        assert_eq!(logs, 1, "round {round}");
    }
}

/// The index file in `path`, decoded.
fn read_index(path: &Path) -> IndexRecord {
    index_file::parse(&fs::read(path).unwrap()).unwrap()
}

/// Every session record of an index.
fn sessions_of(record: &mut IndexRecord) -> impl Iterator<Item = &mut SessionRecord> {
    record
        .projects
        .iter_mut()
        .flat_map(|p| p.sessions.iter_mut())
}

/// Set a file's mtime back to `meta`'s (the ctime still moves).
fn restore_mtime(path: &Path, meta: &fs::Metadata) {
    fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(meta.modified().unwrap())
        .unwrap();
}

#[test]
fn a_hand_edited_or_foreign_index_never_changes_an_answer() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    let alpha = write_log(&root, "--p--", "alpha", &simple_log("alpha", "Alpha"));
    write_log(&root, "--p--", "beta", &simple_log("beta", "Beta"));
    let cache = tmp.path().join("cache");
    let index = cache.join(INDEX_FILE);
    let view = |root: &Path| {
        let store = store_with(root, Limits::default());
        let list = store.list_sessions().unwrap();
        list.iter()
            .map(|h| {
                (
                    h.id.clone(),
                    h.cwd.clone(),
                    h.created_at,
                    store.read_title(&h.id).unwrap(),
                )
            })
            .collect::<Vec<_>>()
    };
    let want = view(&root);
    assert_eq!(want.len(), 2);
    assert!(index.exists());

    // A header record claiming another id, with stamps that match, is dropped.
    let mut record = read_index(&index);
    for session in sessions_of(&mut record) {
        if session.name == "alpha"
            && let Some(h) = &mut session.header
        {
            h.id = "beta".into();
        }
    }
    fs::write(&index, index_file::encode(&record)).unwrap();
    assert_eq!(view(&root), want);

    // A title record with a spoofed title and a wrong length but the same inode.
    let mut record = read_index(&index);
    let mut titles = 0;
    for session in sessions_of(&mut record) {
        if let Some(t) = &mut session.digest {
            t.digest.title = Some("spoofed".into());
            t.stamp.len = 1;
            titles += 1;
        }
    }
    assert_eq!(titles, 2);
    fs::write(&index, index_file::encode(&record)).unwrap();
    assert_eq!(view(&root), want);

    // The header rewritten in place (same inode, same length, mtime set back).
    let meta = fs::metadata(&alpha).unwrap();
    let text = fs::read_to_string(&alpha).unwrap();
    let edited = text.replacen("\"createdAt\":1", "\"createdAt\":9", 1);
    assert_eq!(edited.len(), text.len());
    fs::File::options()
        .write(true)
        .open(&alpha)
        .unwrap()
        .write_all(edited.as_bytes())
        .unwrap();
    restore_mtime(&alpha, &meta);
    let now = view(&root);
    assert_eq!(now.first().map(|r| (r.0.as_str(), r.2)), Some(("alpha", 9)));

    // An index owned by another user, or writable by others, is ignored.
    let mut record = read_index(&index);
    for session in sessions_of(&mut record) {
        if let Some(t) = &mut session.digest {
            t.digest.title = Some("foreign".into());
        }
    }
    let foreign = index_file::encode(&record);
    fs::write(&index, &foreign).unwrap();
    fs::set_permissions(&index, std::os::unix::fs::PermissionsExt::from_mode(0o666)).unwrap();
    let store = SessionStore::with_options(&root, Some(cache.clone()), false, Limits::default());
    store.list_sessions().unwrap();
    assert_eq!(store.read_title("beta").unwrap().as_deref(), Some("Beta"));
}

/// Issue 14, point 6: an index record is served only while every stamp field of its own log
/// (length, mtime, ctime, inode) matches and its header agrees with its directories; each
/// edit below (spoofed title, edited cwd and createdAt) with one stamp field wrong, and an
/// edited cwd with every stamp intact, leaves every answer as the logs give it.
#[test]
fn index_records_are_misses_unless_their_own_log_and_directories_agree() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    let log = |id: &str, created: i64| {
        format!(
            "{}{}{}",
            header_line(id, created, Some("/p")),
            turn_start(0),
            title_line(1, &format!("Title of {id}"))
        )
    };
    write_log(&root, "--p--", "alpha", &log("alpha", 1));
    write_log(&root, "--p--", "beta", &log("beta", 2));
    let index = tmp.path().join("cache").join(INDEX_FILE);
    let view = |root: &Path| {
        let store = store_with(root, Limits::default());
        let list = store.list_sessions().unwrap();
        list.iter()
            .map(|h| {
                (
                    h.id.clone(),
                    h.cwd.clone(),
                    h.created_at,
                    store.read_title(&h.id).unwrap(),
                )
            })
            .collect::<Vec<_>>()
    };
    let want = view(&root);
    assert_eq!(want.len(), 2);
    // A second view writes the titles it cached too.
    assert_eq!(view(&root), want);
    let mut pristine = read_index(&index);
    assert_eq!(
        sessions_of(&mut pristine)
            .filter(|s| s.digest.as_ref().is_some_and(|t| t.digest.title.is_some()))
            .count(),
        2,
        "{pristine:?}"
    );
    let edit = |stamp_field: Option<&str>| {
        let wrong = |stamp: &mut dsh_store::listing::Stamp, field: &str| match field {
            "len" => stamp.len = 1,
            "file_id" => stamp.file_id = Some((1, 1)),
            "mtime" => stamp.mtime = FileTime(1, 0).to_system(),
            _ => stamp.ctime = Some((1, 0)),
        };
        let mut record = pristine.clone();
        for session in sessions_of(&mut record) {
            if let Some(h) = &mut session.header {
                h.cwd = Some("/elsewhere".into());
                h.created_at = 99;
            }
            if let Some(field) = stamp_field {
                if let Some((_, stamp)) = &mut session.log {
                    wrong(stamp, field);
                }
                if let Some(t) = &mut session.digest {
                    t.digest.title = Some("spoofed".into());
                    wrong(&mut t.stamp, field);
                }
            }
        }
        fs::write(&index, index_file::encode(&record)).unwrap();
    };
    for field in ["len", "mtime", "ctime", "file_id"] {
        edit(Some(field));
        assert_eq!(view(&root), want, "{field} wrong");
    }
    // Every stamp intact but the cwd edited: the header no longer fits its project
    // directory, so it is read again from the log.
    edit(None);
    assert_eq!(view(&root), want, "cwd edited");
}

/// Every log this repository holds (dsh-written fixtures, the demo store), read with a
/// limit small enough that most lines are skipped: each skipped line's placeholder keeps
/// exactly the type, seq, time, surfaceOp and sourceEventSeqs a full read finds (packed
/// rows: one chunk per member, at the row's first time).
#[test]
fn placeholders_keep_the_envelope_of_every_line_of_real_logs() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut logs = Vec::new();
    for dir in ["crates/dsh-store/tests/fixtures", "assets/demo/store"] {
        let mut stack = vec![repo.join(dir)];
        while let Some(d) = stack.pop() {
            for entry in fs::read_dir(&d).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.file_name().is_some_and(|n| n == "session.jsonl") {
                    logs.push(path);
                }
            }
        }
    }
    assert!(logs.len() >= 10, "{logs:?}");
    let tiny = Limits {
        max_line_bytes: 160,
        ..Limits::default()
    };
    let mut placeholders = 0;
    for log in &logs {
        // Event lines only: the header has a limit of its own.
        let bytes = fs::read(log).unwrap();
        let header = bytes.iter().position(|b| *b == b'\n').unwrap() + 1;
        let read = |limits: &Limits| {
            let mut events = Vec::new();
            let start = reader::ScanPos {
                readable_len: header as u64,
                next_seq: 0,
                line: 1,
            };
            let (_, torn) = reader::scan_events_limited(
                log,
                &bytes[header..],
                start,
                limits,
                &mut |e, line| {
                    events.push((e, line));
                    Ok(())
                },
            )
            .unwrap();
            (events, torn)
        };
        let (full, full_torn) = read(&Limits::default());
        let (skimmed, torn) = read(&tiny);
        assert_eq!(torn, full_torn, "{}", log.display());
        assert_eq!(skimmed.len(), full.len(), "{}", log.display());
        for ((s, s_line), (f, f_line)) in skimmed.iter().zip(&full) {
            assert_eq!((s.seq, s_line), (f.seq, f_line), "{}", log.display());
            if dsh_store::not_loaded::NotLoaded::of(s).is_none() {
                assert_eq!(s, f);
                continue;
            }
            placeholders += 1;
            assert_eq!(s.kind(), f.kind(), "{} seq {}", log.display(), f.seq);
            assert_eq!(
                s.surface_op,
                f.surface_op,
                "{} seq {}",
                log.display(),
                f.seq
            );
            assert_eq!(
                s.source_event_seqs,
                f.source_event_seqs,
                "{}",
                log.display()
            );
            if s_line
                != &full
                    .iter()
                    .find(|(e, _)| e.seq + 1 == f.seq)
                    .map_or(0, |(_, l)| *l)
            {
                // The first event of its line: a packed row's members after it share the
                // row's first time.
                assert_eq!(s.time, f.time, "{} seq {}", log.display(), f.seq);
            }
        }
    }
    assert!(placeholders > 100, "{placeholders}");
}
