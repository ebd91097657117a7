//! The persisted listing/title index (`<cache>/dsh-refs/<store>/index.json`): a fresh store handle
//! (as a new process would have) starts from it, yet sees every change another process made
//! — sessions added, appended to, retitled, replaced or deleted — and survives a damaged or
//! hostile index file.
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
use std::time::{Duration, SystemTime};

use dsh_store::index_file::{
    self, DigestRecord, FileTime, INDEX_FILE, IndexRecord, ProjectRecord, SessionRecord,
};
use dsh_store::reader::Limits;
use dsh_store::reader::LogFormat;
use dsh_store::{QueryError, SessionHeader, SessionQuery, SessionStore};

/// The index directory used for a store root in these tests (beside the root, never in it).
fn index_dir(root: &Path) -> PathBuf {
    root.with_file_name(format!(
        "{}.cache",
        root.file_name().unwrap().to_string_lossy()
    ))
}

/// The app's own store (writes its index back), with the index beside the root.
fn own_store(root: &Path) -> SessionStore {
    SessionStore::with_options(root, Some(index_dir(root)), true, Limits::default())
}

/// An inspecting store (reads the index, never writes it).
fn inspecting_store(root: &Path) -> SessionStore {
    SessionStore::with_options(root, Some(index_dir(root)), false, Limits::default())
}
use serde_json::json;

fn title_line(seq: u64, title: &str) -> String {
    json!({"type": "session/title", "seq": seq, "time": 1, "data": {"title": title, "messageSeqs": [], "source": {"kind": "manual"}}}).to_string() + "\n"
}

fn turn_start(seq: u64) -> String {
    json!({"type": "turn/start", "seq": seq, "time": 1, "data": {"turn": 1, "trigger": {"kind": "user"}}}).to_string() + "\n"
}

fn write_session(root: &Path, id: &str, cwd: Option<&str>, created: i64, title: &str) -> PathBuf {
    let dir = dsh_store::paths::session_dir(root, cwd, id).unwrap();
    fs::create_dir_all(&dir).unwrap();
    let header =
        serde_json::to_string(&SessionHeader::new(id, created, cwd.map(str::to_owned))).unwrap();
    let path = dir.join("session.jsonl");
    fs::write(
        &path,
        format!("{header}\n{}{}", turn_start(0), title_line(1, title)),
    )
    .unwrap();
    path
}

/// Make every directory look an hour old, so its mtime is trusted by the listing.
fn backdate(root: &Path) {
    let old = SystemTime::now() - Duration::from_secs(3600);
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            }
        }
        fs::File::open(&dir).unwrap().set_modified(old).unwrap();
    }
}

/// What a fresh process would answer: ids in listing order with their titles.
fn fresh_view(root: &Path) -> Vec<(String, Option<String>)> {
    let store = own_store(root);
    let list = store.list_sessions().unwrap();
    list.iter()
        .map(|h| (h.id.clone(), store.read_title(&h.id).unwrap()))
        .collect()
}

fn view(items: &[(&str, Option<&str>)]) -> Vec<(String, Option<String>)> {
    items
        .iter()
        .map(|(id, t)| (id.to_string(), t.map(str::to_owned)))
        .collect()
}

#[test]
fn a_fresh_process_starts_from_the_index_and_sees_every_change() {
    let tmp = tempfile::tempdir().unwrap();
    let root = &tmp.path().join("store");
    let a = write_session(root, "a", Some("/p"), 1, "alpha");
    write_session(root, "b", Some("/p"), 2, "beta");
    write_session(root, "c", None, 3, "gamma");
    backdate(root);
    let first = fresh_view(root);
    assert_eq!(
        first,
        view(&[
            ("c", Some("gamma")),
            ("b", Some("beta")),
            ("a", Some("alpha"))
        ])
    );
    // The first handle wrote the index, with the titles it read.
    let index =
        dsh_store::index_file::parse(&fs::read(index_dir(root).join(INDEX_FILE)).unwrap()).unwrap();
    let titles: Vec<&str> = index
        .projects
        .iter()
        .flat_map(|p| &p.sessions)
        .filter_map(|s| s.digest.as_ref()?.digest.title.as_deref())
        .collect();
    assert_eq!(titles.len(), 3, "{index:?}");
    assert_eq!(fresh_view(root), first);

    // Appended to and retitled by another process (the directories do not change).
    let mut text = fs::read_to_string(&a).unwrap();
    text.push_str(&turn_start(2));
    text.push_str(&title_line(3, "alpha renamed"));
    fs::write(&a, text).unwrap();
    assert_eq!(
        fresh_view(root),
        view(&[
            ("c", Some("gamma")),
            ("b", Some("beta")),
            ("a", Some("alpha renamed"))
        ])
    );

    // Added, then deleted (directory times trusted again in between).
    backdate(root);
    write_session(root, "d", Some("/p"), 4, "delta");
    assert_eq!(
        fresh_view(root).first(),
        Some(&("d".into(), Some("delta".into())))
    );
    backdate(root);
    fs::remove_dir_all(a.parent().unwrap()).unwrap();
    assert_eq!(
        fresh_view(root),
        view(&[
            ("d", Some("delta")),
            ("c", Some("gamma")),
            ("b", Some("beta"))
        ])
    );
    let store = own_store(root);
    store.list_sessions().unwrap();
    assert!(matches!(
        store.read_title("a"),
        Err(QueryError::NotFound { .. })
    ));
}

#[test]
fn a_log_replaced_by_another_file_of_the_same_length_is_read_again() {
    let tmp = tempfile::tempdir().unwrap();
    let root = &tmp.path().join("store");
    let path = write_session(root, "a", None, 1, "first");
    backdate(root);
    assert_eq!(fresh_view(root), view(&[("a", Some("first"))]));
    // Same length, same mtime, new inode.
    let meta = fs::metadata(&path).unwrap();
    let text = fs::read_to_string(&path).unwrap().replace("first", "other");
    let tmp_path = path.with_extension("new");
    fs::write(&tmp_path, text).unwrap();
    fs::File::options()
        .write(true)
        .open(&tmp_path)
        .unwrap()
        .set_modified(meta.modified().unwrap())
        .unwrap();
    fs::rename(&tmp_path, &path).unwrap();
    assert_eq!(fresh_view(root), view(&[("a", Some("other"))]));
}

#[test]
fn damaged_or_hostile_index_files_are_ignored_and_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    write_session(&root, "a", Some("/p"), 1, "alpha");
    write_session(&root, "b", None, 2, "beta");
    backdate(&root);
    let want = view(&[("b", Some("beta")), ("a", Some("alpha"))]);
    let index = index_dir(&root).join(INDEX_FILE);
    fs::create_dir_all(index_dir(&root)).unwrap();
    // The JSON index an earlier version wrote: never read, removed once the new one is.
    let old = index_dir(&root).join(dsh_store::index_file::OLD_INDEX_FILE);
    fs::write(&old, "{}").unwrap();
    let stamp = dsh_store::listing::Stamp {
        len: 1,
        mtime: None,
        file_id: None,
        ctime: None,
    };
    let evil = IndexRecord {
        line_limit: Limits::default().max_line_bytes,
        root_mtime: Some(FileTime(1, 0)),
        projects: vec![
            ProjectRecord {
                name: "../outside".into(),
                mtime: Some(FileTime(1, 0)),
                sessions: Vec::new(),
            },
            ProjectRecord {
                name: "_no-cwd".into(),
                mtime: Some(FileTime(1, 0)),
                sessions: vec![SessionRecord {
                    name: "../../x".into(),
                    log: Some((LogFormat::Plain, stamp)),
                    header: Some(SessionHeader::new("x", 1, None)),
                    digest: Some(DigestRecord {
                        stamp,
                        digest: dsh_store::log_digest::LogDigest {
                            title: Some("evil".into()),
                            first_prompt: None,
                            activity: dsh_store::Activity::default(),
                            end: dsh_store::reader::ScanPos {
                                readable_len: 0,
                                next_seq: 0,
                                line: 1,
                            },
                            resume_check: None,
                            damage: None,
                        },
                    }),
                }],
            },
        ],
    };
    let mut other_version = index_file::encode(&evil);
    other_version[8] = 99;
    for garbage in [
        b"{not json".to_vec(),
        b"".to_vec(),
        br#"{"version":2,"root_mtime":null,"projects":[],"titles":[]}"#.to_vec(),
        other_version,
        // Names that try to leave the root, with a title for a log outside it.
        index_file::encode(&evil),
    ] {
        fs::write(&index, &garbage).unwrap();
        assert_eq!(
            fresh_view(&root),
            want,
            "{}",
            String::from_utf8_lossy(&garbage)
        );
        // Rewritten as a valid index that the next process uses.
        let rewritten = index_file::parse(&fs::read(&index).unwrap()).unwrap();
        assert_eq!(rewritten.projects.len(), 2);
        assert!(!old.exists());
        assert_eq!(fresh_view(&root), want);
    }
    // Nothing was written but the store and its cache directory.
    let mut names: Vec<_> = fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["store", "store.cache"]);
}

#[test]
fn recent_titles_are_served_from_memory_only_within_their_age() {
    let tmp = tempfile::tempdir().unwrap();
    let root = &tmp.path().join("store");
    let path = write_session(root, "a", None, 1, "first");
    let store = own_store(root);
    let hour = Duration::from_secs(3600);
    assert_eq!(
        store.read_title_recent("a", hour).unwrap().as_deref(),
        Some("first")
    );
    let mut text = fs::read_to_string(&path).unwrap();
    text.push_str(&title_line(2, "second"));
    fs::write(&path, text).unwrap();
    // Within the age the remembered title answers; a zero age always reads again.
    assert_eq!(
        store.read_title_recent("a", hour).unwrap().as_deref(),
        Some("first")
    );
    assert_eq!(
        store
            .read_title_recent("a", Duration::ZERO)
            .unwrap()
            .as_deref(),
        Some("second")
    );
    assert_eq!(
        store.read_title_recent("a", hour).unwrap().as_deref(),
        Some("second")
    );
    assert_eq!(store.read_title("a").unwrap().as_deref(), Some("second"));
}

#[test]
fn only_a_persisting_store_writes_the_index() {
    let tmp = tempfile::tempdir().unwrap();
    let root = &tmp.path().join("store");
    write_session(root, "a", None, 1, "alpha");
    let inspected = inspecting_store(root);
    assert_eq!(inspected.read_title("a").unwrap().as_deref(), Some("alpha"));
    inspected.list_sessions().unwrap();
    drop(inspected);
    assert!(!index_dir(root).join(INDEX_FILE).exists());
    let own = own_store(root);
    own.list_sessions().unwrap();
    drop(own);
    assert!(index_dir(root).join(INDEX_FILE).exists());
    // Nothing but the session's own files is ever inside the store.
    assert!(!root.join(dsh_store::index_file::LEGACY_INDEX_FILE).exists());
    assert!(!root.join(INDEX_FILE).exists());
}

#[test]
fn a_listing_lookup_answers_like_read_title_recent() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write_session(tmp.path(), "a", None, 1, "first");
    write_session(tmp.path(), "b", None, 2, "bee");
    let store = SessionStore::new(tmp.path());
    let hour = Duration::from_secs(3600);
    let mut seen = Vec::new();
    store.with_recent_titles(hour, &mut |lookup| {
        for id in ["a", "b", "missing"] {
            seen.push(
                lookup(id)
                    .map(|t| t.map(|t| t.to_string()))
                    .map_err(|e| e.to_string()),
            );
        }
    });
    assert_eq!(seen[0], Ok(Some("first".into())));
    assert_eq!(seen[1], Ok(Some("bee".into())));
    assert!(
        seen[2].as_ref().is_err_and(|e| e.contains("not found")),
        "{:?}",
        seen[2]
    );
    // Remembered for the age given, then read again.
    let mut text = fs::read_to_string(&path).unwrap();
    text.push_str(&title_line(2, "second"));
    fs::write(&path, text).unwrap();
    let mut again = Vec::new();
    store.with_recent_titles(hour, &mut |lookup| again.push(lookup("a").unwrap()));
    store.with_recent_titles(Duration::ZERO, &mut |lookup| {
        again.push(lookup("a").unwrap());
    });
    let again: Vec<Option<String>> = again
        .into_iter()
        .map(|t| t.map(|t| t.to_string()))
        .collect();
    assert_eq!(again, vec![Some("first".into()), Some("second".into())]);
}

#[test]
fn titles_of_a_listing_just_checked_are_served_without_another_stat() {
    let tmp = tempfile::tempdir().unwrap();
    let root = &tmp.path().join("store");
    let path = write_session(root, "a", Some("/p"), 1, "alpha");
    write_session(root, "b", None, 2, "beta");
    backdate(root);
    // A first process reads the titles into the index.
    assert_eq!(
        fresh_view(root),
        view(&[("b", Some("beta")), ("a", Some("alpha"))])
    );
    let store = own_store(root);
    store.list_sessions().unwrap();
    // The log disappears right after the listing stat-ed it: within the age, the title
    // the listing vouched for answers; a zero age checks the log again.
    fs::remove_file(&path).unwrap();
    let mut within = None;
    store.with_recent_titles(Duration::from_secs(3600), &mut |read| {
        within = Some(read("a").map(|t| t.map(|t| t.to_string())));
    });
    assert_eq!(within.unwrap().unwrap().as_deref(), Some("alpha"));
    let mut zero = None;
    store.with_recent_titles(Duration::ZERO, &mut |read| {
        zero = Some(read("a").map(|t| t.map(|t| t.to_string())));
    });
    assert!(
        matches!(zero, Some(Err(QueryError::NotFound { .. }))),
        "{zero:?}"
    );
}

#[test]
fn an_early_listing_asked_with_no_check_running_is_the_checked_one() {
    let tmp = tempfile::tempdir().unwrap();
    let root = &tmp.path().join("store");
    let gone = write_session(root, "gone", None, 1, "gone");
    write_session(root, "kept", None, 2, "kept");
    backdate(root);
    assert_eq!(fresh_view(root).len(), 2);
    // Deleted inside its directory after the index was written: only a check of its log
    // shows it, and with nobody else checking, the early listing is the checked one.
    fs::remove_file(&gone).unwrap();
    let store = own_store(root);
    let early = store.list_sessions_unchecked().unwrap();
    let ids: Vec<&str> = early.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids, ["kept"]);
    assert!(Arc::ptr_eq(&early, &store.list_sessions().unwrap()));
}

#[test]
fn an_early_listing_allowed_by_the_owner_answers_before_the_check_then_gives_way_to_it() {
    let tmp = tempfile::tempdir().unwrap();
    let root = &tmp.path().join("store");
    let gone = write_session(root, "gone", None, 1, "gone");
    write_session(root, "kept", None, 2, "kept");
    backdate(root);
    assert_eq!(fresh_view(root).len(), 2);
    fs::remove_file(&gone).unwrap();
    write_session(root, "new", None, 3, "new");
    let store = own_store(root);
    store.allow_early_listing();
    let ids = |list: &[SessionHeader]| list.iter().map(|h| h.id.clone()).collect::<Vec<_>>();
    // Before the check: the index's sessions, the directories listed again (the new one
    // shows); the log deleted inside its directory is only seen by the check.
    let early = store.list_sessions_unchecked().unwrap();
    assert_eq!(ids(&early), ["new", "kept", "gone"]);
    assert!(matches!(
        store.read_title("gone"),
        Err(QueryError::NotFound { .. })
    ));
    // The check (the owner's warm-up), then every listing is the checked one.
    assert_eq!(ids(&store.list_sessions().unwrap()), ["new", "kept"]);
    assert_eq!(
        ids(&store.list_sessions_unchecked().unwrap()),
        ["new", "kept"]
    );
}

fn user_line(seq: u64, time: i64) -> String {
    json!({"type": "user/message", "seq": seq, "time": time, "data": {"id": format!("u{seq}"), "role": "user", "content": [{"type": "text", "text": "hello"}], "source": {"kind": "user"}}, "surfaceOp": "append"}).to_string() + "\n"
}

fn turn_end(seq: u64, time: i64) -> String {
    json!({"type": "turn/end", "seq": seq, "time": time, "data": {"turn": 1, "reason": {"kind": "completed"}}}).to_string() + "\n"
}

/// Issue 27 item 3: a log's activity is kept in the index file, and a later process reads
/// only what was appended since. The proof: everything between the header and the last
/// bytes the first process read is overwritten with bytes that do not parse — a process
/// reading the log whole reports damage, one continuing from the index does not.
#[test]
fn activity_is_continued_across_processes_from_the_index_file() {
    let tmp = tempfile::tempdir().unwrap();
    let root = &tmp.path().join("store");
    let path = write_session(root, "a", None, 5, "alpha");
    let mut text = fs::read_to_string(&path).unwrap();
    text.push_str(&user_line(2, 1_000));
    fs::write(&path, &text).unwrap();
    let first_len = text.len();
    {
        let store = own_store(root);
        store.list_sessions().unwrap();
        let s = store.read_summary("a").unwrap();
        assert_eq!(s.title.as_deref(), Some("alpha"));
        assert_eq!((s.last_active_ms, s.messages), (Some(1_000), Some(1)));
    }
    text.push_str(&user_line(3, 2_000));
    text.push_str(&turn_end(4, 2_500));
    let header_len = text.find('\n').unwrap() + 1;
    let mut bytes = text.into_bytes();
    let keep_from = first_len - dsh_store::log_digest::TAIL_CHECK_BYTES;
    for b in &mut bytes[header_len..keep_from] {
        if *b != b'\n' {
            *b = b'#';
        }
    }
    fs::write(&path, &bytes).unwrap();
    let store = own_store(root);
    store.list_sessions().unwrap();
    let s = store.read_summary("a").unwrap();
    assert_eq!(s.damage, None, "read on from the index, not whole");
    assert_eq!(s.title.as_deref(), Some("alpha"));
    assert_eq!((s.last_active_ms, s.messages), (Some(2_500), Some(2)));
    // A store without the index reads it whole and finds the damage.
    let bare = SessionStore::with_options(root, None, false, Limits::default());
    assert!(bare.read_summary("a").unwrap().damage.is_some());
}

/// Issue 27 minor 15: a log damaged at line 14, after its title, is listed with that title
/// (listing lookups and `read_summary`), while `read_title` still reports the damage.
#[test]
fn a_log_damaged_after_its_title_is_listed_with_it() {
    let tmp = tempfile::tempdir().unwrap();
    let root = &tmp.path().join("store");
    let path = write_session(root, "d", None, 5, "Before the damage");
    let mut text = fs::read_to_string(&path).unwrap();
    // Lines 4..=13: messages; line 14: damage; a complete turn/end after it.
    for seq in 2..12 {
        text.push_str(&user_line(seq, 100 + seq as i64));
    }
    text.push_str("{\"type\":\"user/message\",\"seq\":12,\"ti\n");
    text.push_str(&turn_end(13, 500));
    fs::write(&path, &text).unwrap();
    let store = own_store(root);
    store.list_sessions().unwrap();
    match store.read_title("d") {
        Err(QueryError::Corrupt { line, .. }) => assert_eq!(line, 14),
        other => panic!("expected corruption at line 14, got {other:?}"),
    }
    let hour = Duration::from_secs(3600);
    assert_eq!(
        store.read_title_recent("d", hour).unwrap().as_deref(),
        Some("Before the damage")
    );
    let mut listed = None;
    store.with_recent_titles(hour, &mut |lookup| listed = Some(lookup("d").unwrap()));
    assert_eq!(listed.flatten().as_deref(), Some("Before the damage"));
    let summary = store.read_summary("d").unwrap();
    assert_eq!(summary.title.as_deref(), Some("Before the damage"));
    assert!(
        summary
            .damage
            .as_deref()
            .is_some_and(|d| d.contains(":14:")),
        "{summary:?}"
    );
    assert_eq!(
        (summary.messages, summary.last_active_ms),
        (Some(10), Some(111))
    );
    let mut listed = None;
    store.with_recent_summaries(hour, &mut |lookup| listed = Some(lookup("d").unwrap()));
    assert_eq!(listed, Some(summary));
}

/// A digest depends on the lines the limit let in: one read with a lowered
/// `store.max_line_bytes` (a long title line read as a placeholder, its title not loaded) is
/// not taken by a process with the default limit, which reads the log again and finds the
/// title; and back.
#[test]
fn digests_read_with_another_line_limit_are_read_again() {
    let tmp = tempfile::tempdir().unwrap();
    let root = &tmp.path().join("store");
    let long_title = "x".repeat(200_000);
    let path = write_session(root, "long", None, 5, &long_title);
    // A complete turn after it: the long line is not a torn tail.
    let mut text = fs::read_to_string(&path).unwrap();
    text.push_str(&turn_end(2, 10));
    fs::write(&path, text).unwrap();
    let low = Limits {
        max_line_bytes: 65_536,
        ..Limits::default()
    };
    {
        let store = SessionStore::with_options(root, Some(index_dir(root)), true, low);
        store.list_sessions().unwrap();
        let s = store.read_summary("long").unwrap();
        assert_eq!((s.damage, s.title), (None, None));
    }
    {
        let store = own_store(root);
        store.list_sessions().unwrap();
        let s = store.read_summary("long").unwrap();
        assert_eq!(s.damage, None);
        assert_eq!(s.title.as_deref(), Some(long_title.as_str()));
    }
    let store = SessionStore::with_options(root, Some(index_dir(root)), true, low);
    store.list_sessions().unwrap();
    let s = store.read_summary("long").unwrap();
    assert_eq!((s.damage, s.title), (None, None));
}
