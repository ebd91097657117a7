//! Hostile content (issue 7 item 4): terminal escapes, framing tags and instruction-like text
//! in every untrusted field, a 10 MB message, deeply nested JSON, invalid UTF-8 and NUL bytes
//! in logs, and ids that try to leave the store root. Corpus: `tests/fixtures/hostile/`.
//!
//! For each: the prepared context stays well framed and equals the projected conversation,
//! `sessions` output (the real binary) carries no raw control characters, nothing panics, and
//! nothing is created or read outside the store root.
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
use std::process::Command;
use std::sync::Arc;

use dsh_reference::prompt::{CLOSE_TAG, HEADING, OPEN_TAG, serialized_sources};
use dsh_reference::{
    AgentRef, ErrorCode, Prepared, ReferenceConfig, SessionReferences, format_mention, parse_text,
    project_surface,
};
use dsh_store::{
    ContentBlock, EventData, Message, NewEvent, QueryError, Role, SessionHeader, SessionQuery,
    SessionStore, Source, StoreError,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

mod common;
use common::events::{assistant, title, user};
use dsh_store::layout::in_turns;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hostile")
}

/// The hostile strings: (`text` corpus, `ids` corpus).
fn corpus() -> (Vec<String>, Vec<String>) {
    let raw = fs::read_to_string(fixtures().join("strings.json")).unwrap();
    let v: Value = serde_json::from_str(&raw).unwrap();
    let list = |key: &str| -> Vec<String> {
        v[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_owned())
            .collect()
    };
    (list("text"), list("ids"))
}

/// Every char of `text` that a terminal could act on: C0 (but `\n`), DEL and C1.
fn raw_controls(text: &str) -> Vec<char> {
    text.chars()
        .filter(|&c| c != '\n' && c.is_control())
        .collect()
}

/// Run the real binary on `root`; (stdout, stderr, success). Output must be UTF-8.
fn run_cli(args: &[&str], root: &Path) -> (String, String, bool) {
    let home = root.parent().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_dsh-refs"))
        .env(
            "XDG_CACHE_HOME",
            std::env::temp_dir().join("dsh-refs-test-cache"),
        )
        .args(args)
        .arg("--store")
        .arg(root)
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

/// Every file below `dir`.
fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}

fn prepare(
    store: &SessionStore,
    budget: i64,
    text: &str,
) -> Result<Prepared, dsh_reference::ReferenceError> {
    let parsed = parse_text(text)?;
    let refs = SessionReferences::new(
        Arc::new(store.clone()),
        ReferenceConfig::new(3, 50, budget).unwrap(),
    );
    let agent = AgentRef {
        session_id: "agent".into(),
        cwd: None,
    };
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(refs.prepare(
            &agent,
            &[ContentBlock::text(parsed.text)],
            &parsed.references,
            &CancellationToken::new(),
        ))
}

/// The context is framed once, and the JSON between the tags parses.
fn framed_sources(prepared: &Prepared) -> Vec<Value> {
    let text = prepared.context.as_ref().unwrap().joined_text();
    assert!(text.starts_with(HEADING));
    assert_eq!(text.matches(OPEN_TAG).count(), 1, "{text}");
    assert_eq!(text.matches(CLOSE_TAG).count(), 1, "{text}");
    assert!(text.ends_with(CLOSE_TAG));
    serde_json::from_str(serialized_sources(&text).unwrap()).unwrap()
}

/// The projected conversation of a stored session as `[{role, text}]`.
fn projected(store: &SessionStore, id: &str) -> Value {
    let surface = store.read_surface(id).unwrap();
    Value::Array(
        project_surface(&surface.events)
            .iter()
            .map(|i| json!({"role": i.role.as_str(), "text": i.text}))
            .collect(),
    )
}

#[test]
fn hostile_fields_stay_framed_listed_safely_and_inside_the_root() {
    let (texts, ids) = corpus();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    let store = SessionStore::new(&root);
    for (n, id) in ids.iter().enumerate() {
        let cwd = format!("/{}", texts[n % texts.len()]);
        let header = SessionHeader::new(id.clone(), n as i64, Some(cwd));
        let mut w = store.open_writer(id, Some(header)).unwrap();
        w.append(in_turns(
            1,
            [
                user(&texts.join("\n")),
                assistant(&texts[(n + 3) % texts.len()]),
                title(&texts[(n + 1) % texts.len()]),
            ],
        ))
        .unwrap();
        assert!(
            w.path().starts_with(&root),
            "{id:?}: {}",
            w.path().display()
        );
    }
    // Nothing outside the root.
    for file in files_below(tmp.path()) {
        assert!(
            file.starts_with(&root),
            "{} outside the store",
            file.display()
        );
    }

    // `sessions`, human and JSON: no raw controls; JSON keeps the exact values.
    let (table, err, ok) = run_cli(&["sessions"], &root);
    assert!(ok, "{err}");
    assert_eq!(raw_controls(&table), Vec::<char>::new(), "{table}");
    assert_eq!(raw_controls(&err), Vec::<char>::new());
    let (out, err, ok) = run_cli(&["sessions", "--json"], &root);
    assert!(ok, "{err}");
    assert_eq!(raw_controls(&out), Vec::<char>::new(), "{out}");
    let listed: Vec<Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(listed.len(), ids.len());
    for (n, id) in ids.iter().enumerate() {
        let row = listed.iter().find(|r| r["sessionId"] == *id).unwrap();
        assert_eq!(row["title"], texts[(n + 1) % texts.len()]);
        assert_eq!(row["cwd"], format!("/{}", texts[n % texts.len()]));
    }

    // `candidates` and `prepare`, human and JSON, including an error naming a hostile id.
    let (table, err, ok) = run_cli(&["candidates", "--session", "agent"], &root);
    assert!(ok, "{err}");
    assert_eq!(raw_controls(&table), Vec::<char>::new(), "{table}");
    let (out, err, ok) = run_cli(&["candidates", "--session", "agent", "--json"], &root);
    assert!(ok, "{err}");
    assert_eq!(raw_controls(&out), Vec::<char>::new(), "{out}");
    let candidates: Vec<Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(candidates.len(), ids.len());
    for c in &candidates {
        let id = c["sessionId"].as_str().unwrap();
        let label = c["label"].as_str().unwrap();
        // The mention to paste names the session by its neutral label, as the popup does.
        assert_eq!(
            c["mention"],
            format_mention(id, Some(&dsh_reference::neutral_label(label)))
        );
    }
    let mentions: Vec<String> = ids
        .iter()
        .take(3)
        .enumerate()
        .map(|(k, id)| format_mention(id, Some(&texts[k])))
        .collect();
    let message = mentions.join(" ");
    for json_flag in [false, true] {
        let mut args = vec!["prepare", "--session", "agent"];
        if json_flag {
            args.push("--json");
        }
        args.push(&message);
        let (out, err, ok) = run_cli(&args, &root);
        assert!(ok, "{err}");
        assert_eq!(raw_controls(&out), Vec::<char>::new(), "{out}");
        if json_flag {
            let v: Value = serde_json::from_str(&out).unwrap();
            let text = v["context"]["content"][0]["text"].as_str().unwrap();
            assert_eq!(text.matches(OPEN_TAG).count(), 1);
            assert_eq!(text.matches(CLOSE_TAG).count(), 1);
        }
    }
    let missing = format_mention("gone\u{9b}2J\u{1b}]0;x\u{7}", None);
    let (out, _, ok) = run_cli(
        &["prepare", "--session", "agent", "--json", &missing],
        &root,
    );
    assert!(!ok);
    assert_eq!(raw_controls(&out), Vec::<char>::new(), "{out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["error"]["code"], "SESSION_REFERENCE_READ_FAILED");

    // Prepared contexts through the submit path (mentions with hostile ids and labels).
    for (n, chunk) in ids.chunks(3).enumerate() {
        let message: Vec<String> = chunk
            .iter()
            .enumerate()
            .map(|(k, id)| format_mention(id, Some(&texts[(n + k) % texts.len()])))
            .collect();
        let prepared = prepare(&store, 1 << 20, &message.join(" and ")).unwrap();
        let sources = framed_sources(&prepared);
        assert_eq!(sources.len(), chunk.len());
        for (k, (source, id)) in sources.iter().zip(chunk).enumerate() {
            assert_eq!(source["sessionId"], *id);
            assert_eq!(source["label"], texts[(n + k) % texts.len()]);
            let header = store.read_surface(id).unwrap().session;
            assert_eq!(source["cwd"], header.cwd.unwrap());
            assert_eq!(source["conversation"], projected(&store, id));
        }
    }
}

/// A session whose newest message is `big`, after a checkpoint and an older reply.
fn big_session(store: &SessionStore, id: &str, big: &str) {
    let mut w = store
        .open_writer(id, Some(SessionHeader::new(id, 1, None)))
        .unwrap();
    let checkpoint = Message::new(
        Role::User,
        vec![ContentBlock::text(
            "<compacted-summary>s</compacted-summary>",
        )],
        Source::compact_checkpoint(),
    );
    w.append(in_turns(
        1,
        [
            NewEvent::appended(EventData::UserMessage(checkpoint)),
            assistant("old reply"),
            user(big),
        ],
    ))
    .unwrap();
}

/// Prepare a reference to `id` with the default budget: (conversation, reference entry).
fn prepare_big(store: &SessionStore, id: &str) -> (Vec<Value>, Value) {
    let uri = dsh_reference::encode_uri(id);
    let prepared = prepare(store, 65_536, &format!("see {uri}")).unwrap();
    let sources = framed_sources(&prepared);
    // Re-serialized compactly (without `<` escaping) the object is no bigger than its budget.
    let source = serde_json::to_string(&sources[0]).unwrap();
    assert!(source.len() <= 65_536, "{}", source.len());
    let entry = prepared.context.unwrap().source.unwrap().0["references"][0].clone();
    // The checkpoint is kept, the old reply dropped, the huge newest message cut.
    assert_eq!(entry["truncated"], true);
    assert_eq!(entry["compacted"], true);
    assert_eq!(entry["omittedMessages"], 1);
    let conversation = sources[0]["conversation"].as_array().unwrap().clone();
    assert_eq!(conversation.len(), 2);
    assert_eq!(
        conversation[0]["text"],
        "<compacted-summary>s</compacted-summary>"
    );
    (conversation, entry)
}

#[test]
fn a_ten_megabyte_message_is_cut_to_the_budget() {
    let (texts, _) = corpus();
    let hostile = texts.join("\n");
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    let store = SessionStore::new(&root);

    // Mostly plain prose with hostile text at both ends: head and tail survive the cut.
    let mut big = hostile.clone();
    while big.len() < 10 << 20 {
        big.push_str("lorem ipsum dolor sit amet 漢字😀 ");
    }
    big.push_str(&hostile);
    big_session(&store, "big", &big);
    let (conversation, entry) = prepare_big(&store, "big");
    let cut = conversation[1]["text"].as_str().unwrap();
    let (head, notice) = cut.split_once("\n[… omitted ").unwrap();
    assert!(notice.ends_with(" UTF-8 bytes …]"));
    // Both hostile ends survive verbatim inside the JSON string.
    assert!(head.starts_with(&hostile) && head.ends_with(&hostile));
    let omitted: u64 = notice.trim_end_matches(" UTF-8 bytes …]").parse().unwrap();
    assert_eq!(
        omitted,
        entry["omittedBytes"].as_u64().unwrap() - "old reply".len() as u64
    );
    assert!(omitted > (10 << 20) - 65_536);

    // Escape-heavy text: docs/references.md (retention) computes the cut target from raw bytes, so an item whose
    // escaped form is far larger than its text is cut to nothing (pinned dsh behaviour).
    let mut dense = String::with_capacity(10 << 20);
    while dense.len() < 10 << 20 {
        dense.push_str(&hostile);
    }
    big_session(&store, "dense", &dense);
    let (conversation, entry) = prepare_big(&store, "dense");
    assert_eq!(conversation[1]["text"], "");
    assert_eq!(
        entry["omittedBytes"].as_u64().unwrap(),
        (dense.len() + "old reply".len()) as u64
    );

    let (out, err, ok) = run_cli(&["sessions", "--json"], &root);
    assert!(ok, "{err}");
    assert!(out.contains("\"big\"") && out.contains("\"dense\""));
}

fn write_raw(root: &Path, id: &str, body: &[u8]) -> PathBuf {
    let dir = dsh_store::paths::session_dir(root, None, id).unwrap();
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join("session.jsonl");
    fs::write(&path, body).unwrap();
    path
}

fn header_line(id: &str) -> String {
    serde_json::to_string(&SessionHeader::new(id, 5, None)).unwrap()
}

const U1: &str = r#"{"type":"user/message","seq":0,"time":1,"data":{"id":"u","role":"user","content":[{"type":"text","text":"before"}],"source":{"kind":"user"}},"surfaceOp":"append"}"#;

fn turn_end_line(seq: u64) -> String {
    format!(
        r#"{{"type":"turn/end","seq":{seq},"time":1,"data":{{"turn":1,"reason":{{"kind":"completed"}}}}}}"#
    )
}

fn nested(depth: usize) -> String {
    format!(
        r#"{{"type":"future/deep","seq":1,"time":1,"data":{}1{}}}"#,
        "[".repeat(depth),
        "]".repeat(depth)
    )
}

#[test]
fn deeply_nested_json_is_damage_not_a_crash() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    let store = SessionStore::new(&root);
    // 200 levels (over the parser's limit of 128) as the last line: a torn tail
    // (unparsable), readable before it.
    let tail = write_raw(
        &root,
        "deep-tail",
        format!("{}\n{U1}\n{}\n", header_line("deep-tail"), nested(200)).as_bytes(),
    );
    let surface = store.read_surface("deep-tail").unwrap();
    assert_eq!(surface.captured_through_seq, Some(0));
    assert_eq!(
        projected(&store, "deep-tail"),
        json!([{"role":"user","text":"before"}])
    );
    // The same before a complete turn/end: corruption naming file and line.
    let mid = write_raw(
        &root,
        "deep-mid",
        format!(
            "{}\n{U1}\n{}\n{}\n",
            header_line("deep-mid"),
            nested(200),
            turn_end_line(2)
        )
        .as_bytes(),
    );
    match store.read_surface("deep-mid") {
        Err(QueryError::Corrupt { path, line, .. }) => {
            assert_eq!((path, line), (mid.clone(), 3));
        }
        other => panic!("expected corruption, got {other:?}"),
    }
    // Moderate nesting (under the parser's limit) is an unknown event: kept and ignored.
    write_raw(
        &root,
        "deep-ok",
        format!(
            "{}\n{U1}\n{}\n{}\n",
            header_line("deep-ok"),
            nested(100),
            turn_end_line(2)
        )
        .as_bytes(),
    );
    assert_eq!(
        store.read_surface("deep-ok").unwrap().captured_through_seq,
        Some(2)
    );
    // 100 000 levels cost too much to decode (docs/session-store.md, line_cost): never
    // parsed, the line is one placeholder event and the log goes on after it.
    write_raw(
        &root,
        "deep-dense",
        format!(
            "{}\n{U1}\n{}\n{}\n",
            header_line("deep-dense"),
            nested(100_000),
            turn_end_line(2)
        )
        .as_bytes(),
    );
    assert_eq!(
        store
            .read_surface("deep-dense")
            .unwrap()
            .captured_through_seq,
        Some(2)
    );
    // A deeply nested header is an unusable session: skipped by listings.
    let deep_header = format!(
        r#"{{"type":"session","version":0,"id":"deep-head","createdAt":1,"x":{}0{}}}"#,
        "[".repeat(50_000),
        "]".repeat(50_000)
    );
    write_raw(&root, "deep-head", format!("{deep_header}\n").as_bytes());

    let (out, err, ok) = run_cli(&["sessions", "--json"], &root);
    assert!(ok, "{err}");
    let ids: Vec<String> = serde_json::from_str::<Vec<Value>>(&out)
        .unwrap()
        .iter()
        .map(|r| r["sessionId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids, ["deep-dense", "deep-mid", "deep-ok", "deep-tail"]);
    assert!(err.contains(&format!("{}:3", mid.display())), "{err}");
    // prepare: the torn one works, the corrupt one is READ_FAILED (all or nothing).
    let ok_uri = dsh_reference::encode_uri("deep-tail");
    let bad_uri = dsh_reference::encode_uri("deep-mid");
    assert!(prepare(&store, 65_536, &ok_uri).is_ok());
    let err = prepare(&store, 65_536, &format!("{ok_uri} {bad_uri}")).unwrap_err();
    assert_eq!(err.code, ErrorCode::ReadFailed);
    // Opening for writing truncates the torn tail but refuses the corrupt log untouched.
    let before = fs::read(&mid).unwrap();
    assert!(matches!(
        store.open_writer("deep-mid", None),
        Err(StoreError::Query(QueryError::Corrupt { line: 3, .. }))
    ));
    assert_eq!(fs::read(&mid).unwrap(), before);
    drop(store.open_writer("deep-tail", None).unwrap());
    let repaired = fs::read_to_string(&tail).unwrap();
    assert_eq!(repaired, format!("{}\n{U1}\n", header_line("deep-tail")));
}

#[test]
fn invalid_utf8_and_nul_bytes_in_logs() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    let store = SessionStore::new(&root);
    let mid = write_raw(
        &root,
        "bad-bytes",
        &fs::read(fixtures().join("invalid_utf8_mid.jsonl")).unwrap(),
    );
    let tail = write_raw(
        &root,
        "bad-tail",
        &fs::read(fixtures().join("invalid_utf8_tail.jsonl")).unwrap(),
    );
    // Damage before a complete turn/end: corruption with file and line, file untouched.
    match store.read_surface("bad-bytes") {
        Err(QueryError::Corrupt { path, line, .. }) => assert_eq!((path, line), (mid.clone(), 3)),
        other => panic!("expected corruption, got {other:?}"),
    }
    let before = fs::read(&mid).unwrap();
    assert!(matches!(
        store.open_writer("bad-bytes", None),
        Err(StoreError::Query(QueryError::Corrupt { .. }))
    ));
    assert_eq!(fs::read(&mid).unwrap(), before);
    // Damage in the tail: the readable part keeps escaped NUL and ESC exactly.
    let surface = store.read_surface("bad-tail").unwrap();
    assert_eq!(surface.captured_through_seq, Some(3));
    assert_eq!(
        projected(&store, "bad-tail"),
        json!([{"role":"user","text":"escaped nul \u{0} and \u{1b}[2J are fine"}])
    );
    let prepared = prepare(&store, 65_536, &dsh_reference::encode_uri("bad-tail")).unwrap();
    assert_eq!(
        framed_sources(&prepared)[0]["conversation"],
        projected(&store, "bad-tail")
    );
    // The context text itself carries the controls only JSON-escaped.
    let context = prepared.context.unwrap().joined_text();
    assert_eq!(raw_controls(&context), Vec::<char>::new());

    let (out, err, ok) = run_cli(&["sessions"], &root);
    assert!(ok, "{err}");
    assert_eq!(raw_controls(&out), Vec::<char>::new());
    assert_eq!(raw_controls(&err), Vec::<char>::new());
    assert!(out.contains("bad-bytes") && out.contains("bad-tail"));
    drop(store.open_writer("bad-tail", None).unwrap());
    assert!(
        fs::read(&tail).unwrap().len()
            < fs::read(fixtures().join("invalid_utf8_tail.jsonl"))
                .unwrap()
                .len()
    );
}

#[test]
fn ids_never_read_logs_outside_the_root() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    let store = SessionStore::new(&root);
    // Decoys where a naive `root/<project>/<id>/session.jsonl` join would land.
    let decoys = [
        ("../../decoy", tmp.path().join("decoy")),
        ("../x", root.join("x")),
    ];
    for (id, dir) in &decoys {
        fs::create_dir_all(dir).unwrap();
        let line = header_line(id);
        fs::write(dir.join("session.jsonl"), format!("{line}\n{U1}\n")).unwrap();
    }
    for (id, _) in &decoys {
        assert!(
            !store.exists(id),
            "{id:?} found outside its encoded directory"
        );
        let err = prepare(&store, 65_536, &dsh_reference::encode_uri(id)).unwrap_err();
        assert_eq!(err.code, ErrorCode::ReadFailed);
        assert!(
            matches!(err.query_error(), Some(QueryError::NotFound { .. })),
            "{err:?}"
        );
    }
    // Listings skip a log whose header does not match its directory.
    assert!(store.list_sessions().unwrap().is_empty());
    // The real session with that id lives under its encoded name, and only it is read.
    let mut w = store
        .open_writer(
            "../../decoy",
            Some(SessionHeader::new("../../decoy", 1, None)),
        )
        .unwrap();
    w.append(vec![user("the real one")]).unwrap();
    assert!(w.path().starts_with(&root));
    drop(w);
    assert_eq!(
        projected(&store, "../../decoy"),
        json!([{"role":"user","text":"the real one"}])
    );
}

/// Issue 14, finding 7: `sessions` reports every session it leaves out (unreadable, a link, a
/// special file, a bad header) on stderr like a corrupt one, keeps `--json` unchanged, and
/// shows bidi controls, zero-width characters and line separators visibly.
#[test]
fn sessions_warns_about_skipped_sessions_and_shows_invisible_characters() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    let title_text = "e\u{202E}x\u{2067} z\u{200B} l\u{2028} k\u{200D}";
    let title = json!({"type": "session/title", "seq": 0, "time": 1, "data": {"title": title_text, "messageSeqs": [], "source": {"kind": "manual"}}});
    write_raw(
        &root,
        "shown",
        format!("{}\n{title}\n", header_line("shown")).as_bytes(),
    );
    write_raw(&root, "badheader", b"{not a header\n");
    let outside = tmp.path().join("outside.jsonl");
    fs::write(&outside, format!("{}\n", header_line("linked"))).unwrap();
    let linked = dsh_store::paths::session_dir(&root, None, "linked").unwrap();
    fs::create_dir_all(&linked).unwrap();
    std::os::unix::fs::symlink(&outside, linked.join("session.jsonl")).unwrap();

    let (human, stderr, ok) = run_cli(&["sessions"], &root);
    assert!(ok, "{stderr}");
    assert!(human.contains("e\\u{202E}x\\u{2067}"), "{human}");
    assert!(human.contains("z\\u{200B} l\\u{2028}"), "{human}");
    assert!(human.contains("k\u{200D}"), "ZWJ is kept: {human}");
    for c in ['\u{202E}', '\u{2067}', '\u{200B}', '\u{2028}'] {
        assert!(!human.contains(c), "raw {c:?} in {human}");
    }
    for needle in ["badheader", "linked", "symbolic link"] {
        assert!(
            stderr
                .lines()
                .any(|l| l.starts_with("dsh-refs: warning: ") && l.contains(needle)),
            "{needle}: {stderr}"
        );
    }
    let (json_out, json_err, ok) = run_cli(&["sessions", "--json"], &root);
    assert!(ok);
    assert_eq!(json_err, stderr, "the same warnings for --json");
    assert!(json_out.contains("\\u202e") && !json_out.contains('\u{202E}'));
    let rows: Value = serde_json::from_str(&json_out).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 1);
    assert_eq!(rows[0]["title"], title_text);
    // The link's target was never touched.
    assert_eq!(
        fs::read_to_string(&outside).unwrap(),
        format!("{}\n", header_line("linked"))
    );
}

/// Issue 14, finding 1: `store.max_line_bytes` from the config bounds every line read.
/// Issue 23 item 3: a complete longer line that is one event stays as a placeholder (the
/// session lists, and `check` names the line); one that is not (here: a seq out of order)
/// before a complete turn is corruption naming the file and line.
#[test]
fn a_line_over_the_configured_limit_is_reported_with_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    let big = |seq: u64| json!({"type": "session/title", "seq": seq, "time": 1, "data": {"title": "x".repeat(200_000), "messageSeqs": [], "source": {"kind": "manual"}}});
    write_raw(
        &root,
        "long",
        format!(
            "{}\n{}\n{}\n",
            header_line("long"),
            big(0),
            turn_end_line(1)
        )
        .as_bytes(),
    );
    let bad = write_raw(
        &root,
        "bad",
        format!("{}\n{}\n{}\n", header_line("bad"), big(5), turn_end_line(1)).as_bytes(),
    );
    let config = tmp.path().join("config.toml");
    fs::write(&config, "[store]\nmax_line_bytes = 65536\n").unwrap();
    let config = config.to_str().unwrap();
    let (stdout, stderr, ok) = run_cli(&["--config", config, "sessions"], &root);
    assert!(ok, "{stderr}");
    let want = format!(
        "{}:2: corrupt session log: line of 200106 bytes, longer than store.max_line_bytes \
         (65536 bytes); its seq 5 breaks continuity, expected 0",
        bad.display()
    );
    assert!(stderr.contains(&want), "{stderr}");
    assert!(
        stdout.contains("long") && !stdout.contains("xxxx"),
        "{stdout}"
    );
    assert!(!stderr.contains("long/session.jsonl"), "{stderr}");
    let (stdout, stderr, _) = run_cli(&["--config", config, "check", "--session", "long"], &root);
    assert!(
        stdout.contains("1 line longer than store.max_line_bytes, read as placeholders")
            && stdout.contains("first: line 2, seq 0, session/title of 196 KiB"),
        "{stdout}{stderr}"
    );
    // Without the lowered limit the same log reads whole (a fresh store: a title read is
    // remembered until its log changes).
    let fresh = tmp.path().join("fresh");
    write_raw(
        &fresh,
        "long",
        format!(
            "{}\n{}\n{}\n",
            header_line("long"),
            big(0),
            turn_end_line(1)
        )
        .as_bytes(),
    );
    let (stdout, stderr, ok) = run_cli(&["sessions"], &fresh);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("xxxx"));
}
