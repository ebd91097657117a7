//! Living inside a real dsh store (issue 15): the golden fixture in `tests/fixtures/dsh/`
//! (dsh-shaped lines written by hand from dsh's public session-log, stream-chunk and
//! chunk-row types) reads completely, in both of dsh's encodings, and re-written here keeps
//! its meaning and its shape; a zstd store gets exactly dsh's layout (a header-only frame,
//! then one checksummed frame per write batch, packed chunk rows); a store never gets a
//! second encoding; lone surrogates are data; equal `createdAt` ties sort like
//! JavaScript's `localeCompare`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test

use std::fs;
use std::path::{Path, PathBuf};

use dsh_store::encoding::Compression;
use dsh_store::lone_surrogates;
use dsh_store::paths;
use dsh_store::reader::{self, LogFormat};
use dsh_store::{
    Event, EventData, NewEvent, SessionHeader, SessionQuery, SessionStore, StoreError,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const FIXTURE_ID: &str = "dsh-golden-1";
const FIXTURE_CWD: &str = "/home/dev/proj";
/// zstd magic number, and the frame-header bit that says a content checksum follows.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
const CHECKSUM_FLAG: u8 = 0x04;

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dsh")
}

/// The fixture's lines (header first), each without its `\n`.
fn fixture_lines() -> Vec<String> {
    fs::read_to_string(fixture_dir().join("session.jsonl"))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Line counts of the fixture's write batches (after the header).
fn fixture_batches() -> Vec<usize> {
    fs::read_to_string(fixture_dir().join("batches.txt"))
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.trim().parse().unwrap())
        .collect()
}

fn zstd_frame(text: &[u8]) -> Vec<u8> {
    let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
    enc.include_checksum(true).unwrap();
    std::io::Write::write_all(&mut enc, text).unwrap();
    enc.finish().unwrap()
}

/// Write the fixture into `root` as dsh would: plain, or zstd with the header in a frame of
/// its own and one frame per batch.
fn install_fixture(root: &Path, format: LogFormat) -> PathBuf {
    let dir = paths::session_dir(root, Some(FIXTURE_CWD), FIXTURE_ID).unwrap();
    fs::create_dir_all(&dir).unwrap();
    let lines = fixture_lines();
    match format {
        LogFormat::Plain => {
            let path = dir.join(paths::LOG_FILE);
            fs::write(&path, lines.join("\n") + "\n").unwrap();
            path
        }
        LogFormat::Zstd => {
            let mut bytes = zstd_frame(format!("{}\n", lines[0]).as_bytes());
            let mut at = 1;
            for n in fixture_batches() {
                let batch: String = lines[at..at + n]
                    .iter()
                    .flat_map(|l| [l.as_str(), "\n"])
                    .collect();
                bytes.extend(zstd_frame(batch.as_bytes()));
                at += n;
            }
            assert_eq!(at, lines.len(), "batches.txt covers every line");
            let path = dir.join(paths::ZSTD_LOG_FILE);
            fs::write(&path, bytes).unwrap();
            path
        }
    }
}

/// The `(start, end)` spans of the zstd frames of `data`, which must be exactly frames.
fn frames(data: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let size = zstd::zstd_safe::find_frame_compressed_size(&data[at..]).unwrap();
        out.push((at, at + size));
        at += size;
    }
    out
}

fn frame_text(data: &[u8], (start, end): (usize, usize)) -> String {
    String::from_utf8(zstd::stream::decode_all(&data[start..end]).unwrap()).unwrap()
}

/// A line's JSON with everything that depends on when it was written removed (`time`,
/// `time0`, `dt`), and lone surrogates read as this project reads them.
fn timeless(line: &str) -> Value {
    let repaired = lone_surrogates::repair(line.as_bytes());
    let mut v: Value = serde_json::from_slice(&repaired).unwrap();
    if let Some(m) = v.as_object_mut() {
        m.remove("time");
        m.remove("time0");
        if let Some(Value::Object(data)) = m.get_mut("data") {
            data.remove("dt");
        }
    }
    v
}

fn without_time(events: &[Event]) -> Vec<Value> {
    events
        .iter()
        .map(|e| {
            let mut v = serde_json::to_value(e).unwrap();
            v.as_object_mut().unwrap().remove("time");
            v
        })
        .collect()
}

fn as_new(event: &Event) -> NewEvent {
    NewEvent {
        data: event.data.clone(),
        surface_op: event.surface_op,
        source_event_seqs: event.source_event_seqs.clone(),
    }
}

fn surface_texts(store: &SessionStore, id: &str) -> Vec<String> {
    store
        .read_surface(id)
        .unwrap()
        .events
        .iter()
        .map(|e| e.message().unwrap().joined_text())
        .collect()
}

fn all_events(path: &Path, format: LogFormat) -> Vec<Event> {
    let (events, summary) = reader::read_all(path, format).unwrap();
    assert_eq!(summary.torn_tail, None, "{}", path.display());
    events.into_iter().map(|(e, _)| e).collect()
}

#[test]
fn the_golden_dsh_log_reads_completely_in_both_encodings() {
    let want_surface = vec![
        "Why is the build slow?".to_owned(),
        "The cache is cold.".to_owned(),
        "List the cache dir \u{FFFD} please".to_owned(),
        String::new(),
        // A tool result's text sits inside its tool-result block, not in a text block.
        String::new(),
        "Two files.".to_owned(),
    ];
    let mut seen = Vec::new();
    for format in [LogFormat::Plain, LogFormat::Zstd] {
        let tmp = tempfile::tempdir().unwrap();
        let path = install_fixture(tmp.path(), format);
        let store = SessionStore::new(tmp.path());
        let listed = store.list_sessions().unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].id, FIXTURE_ID);
        assert_eq!(listed[0].cwd.as_deref(), Some(FIXTURE_CWD));
        assert_eq!(
            store.read_title(FIXTURE_ID).unwrap().as_deref(),
            Some("Build \u{FFFD} notes"),
            "a lone surrogate in a title is a replacement character"
        );
        assert_eq!(surface_texts(&store, FIXTURE_ID), want_surface);
        let surface = store.read_surface(FIXTURE_ID).unwrap();
        assert_eq!(surface.captured_through_seq, Some(43));

        let events = all_events(&path, format);
        assert_eq!(
            events.len(),
            44,
            "packed rows expand to one event per member"
        );
        let chunks: Vec<&Value> = events
            .iter()
            .filter_map(|e| match &e.data {
                EventData::AssistantChunk { chunk, .. } => Some(chunk),
                _ => None,
            })
            .collect();
        assert_eq!(
            chunks[1],
            &json!({"type": "reasoning-delta", "index": 0, "text": "Look at "})
        );
        assert_eq!(
            chunks[14],
            &json!({"type": "tool-call-delta", "index": 0, "id": "call-7", "name": "bash", "argumentsDelta": "{\"cmd\":"})
        );
        // Member times come back from time0 and the gaps.
        assert_eq!(events[7].time - events[5].time, 21);
        let EventData::TurnEnd { reason, .. } = &events[43].data else {
            panic!("turn/end expected")
        };
        assert_eq!(reason.kind, "aborted");
        assert!(reason.extra.is_empty());
        let EventData::ToolResult { message, .. } = &events[32].data else {
            panic!("tool/result expected")
        };
        assert_eq!(
            serde_json::to_value(&message.content).unwrap(),
            json!([{"type": "tool-result", "toolCallId": "call-7", "content": [{"type": "text", "text": "a.bin \u{FFFD} b.bin"}]}]),
            "a lone surrogate inside a tool result is a replacement character"
        );
        seen.push(events);
    }
    assert_eq!(seen[0], seen[1], "both encodings hold the same log");
}

#[test]
fn the_golden_log_rewritten_here_keeps_its_meaning_and_its_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let original = all_events(
        &install_fixture(&tmp.path().join("dsh"), LogFormat::Plain),
        LogFormat::Plain,
    );
    for compression in [Compression::None, Compression::Zstd] {
        let root = tmp.path().join(compression.as_str());
        let store = SessionStore::new(&root).with_compression(compression);
        let header = SessionHeader::new(FIXTURE_ID, 1_764_500_000_000, Some(FIXTURE_CWD.into()));
        let mut writer = store.open_writer(FIXTURE_ID, Some(header)).unwrap();
        // Written in dsh's batches: buffered appends, flushed by one sync per batch.
        let mut at = 0;
        for n in fixture_batch_events() {
            for e in &original[at..at + n] {
                writer.append_buffered(vec![as_new(e)]).unwrap();
            }
            writer.sync().unwrap();
            at += n;
        }
        assert_eq!(at, original.len());
        drop(writer);
        let path = store.locate(FIXTURE_ID).unwrap().unwrap();
        let format = match compression {
            Compression::Zstd => LogFormat::Zstd,
            _ => LogFormat::Plain,
        };
        assert_eq!(path.format, format);
        let back = all_events(&path.path, format);
        assert_eq!(
            without_time(&back),
            without_time(&original),
            "{compression:?}"
        );
        assert_eq!(surface_texts(&store, FIXTURE_ID).len(), 6);

        // Line by line the same records as the fixture: the same packed rows in the same
        // places, the same events elsewhere (times aside).
        let text = match format {
            LogFormat::Plain => fs::read_to_string(&path.path).unwrap(),
            LogFormat::Zstd => {
                let data = fs::read(&path.path).unwrap();
                let spans = frames(&data);
                assert_eq!(
                    spans.len(),
                    1 + fixture_batches().len(),
                    "header frame + one per batch"
                );
                spans.iter().map(|&s| frame_text(&data, s)).collect()
            }
        };
        let written: Vec<Value> = text.lines().skip(1).map(timeless).collect();
        let want: Vec<Value> = fixture_lines()
            .iter()
            .skip(1)
            .map(|l| timeless(l))
            .collect();
        assert_eq!(written, want, "{compression:?}");
    }
}

/// How many events each of the fixture's write batches holds (a packed row holds one per
/// member).
fn fixture_batch_events() -> Vec<usize> {
    let lines = fixture_lines();
    let mut at = 1;
    let mut out = Vec::new();
    for n in fixture_batches() {
        let events: usize = lines[at..at + n]
            .iter()
            .map(|l| {
                let v = timeless(l);
                v["data"]["texts"]
                    .as_array()
                    .or_else(|| v["data"]["args"].as_array())
                    .map_or(1, Vec::len)
            })
            .sum();
        out.push(events);
        at += n;
    }
    out
}

fn turn_events(turn: u64, question: &str, answer: &str) -> Vec<NewEvent> {
    use dsh_store::chunk::{self, BlockType};
    use dsh_store::{ContentBlock, Message, Role, Source};
    let chunk = |c: Value| {
        NewEvent::plain(EventData::AssistantChunk {
            turn,
            step: 1,
            chunk: c,
            extra: serde_json::Map::new(),
        })
    };
    let mut events = vec![
        NewEvent::plain(EventData::TurnStart {
            turn,
            trigger: json!({"kind": "message", "source": {"kind": "user"}}),
            extra: serde_json::Map::new(),
        }),
        NewEvent::appended(EventData::UserMessage(Message::user_text(question))),
        NewEvent::plain(EventData::StepStart {
            turn,
            step: 1,
            extra: serde_json::Map::new(),
        }),
        chunk(chunk::block_start(0, BlockType::Text)),
    ];
    for word in answer.split_inclusive(' ') {
        events.push(chunk(chunk::delta(0, BlockType::Text, word)));
    }
    events.push(chunk(chunk::block_end(0, &ContentBlock::text(answer))));
    events.push(chunk(chunk::finish_stop()));
    events.push(NewEvent::appended(EventData::AssistantMessage {
        turn,
        step: 1,
        message: Message::new(
            Role::Assistant,
            vec![ContentBlock::text(answer)],
            Source::model("offline", "m"),
        ),
        usage: None,
        extra: serde_json::Map::new(),
    }));
    events.push(NewEvent::plain(EventData::StepEnd {
        turn,
        step: 1,
        extra: serde_json::Map::new(),
    }));
    events.push(NewEvent::plain(EventData::TurnEnd {
        turn,
        reason: dsh_store::event::TurnEndReason {
            kind: dsh_store::event::TurnEndKind::Completed,
            extra: serde_json::Map::new(),
        },
        extra: serde_json::Map::new(),
    }));
    events
}

fn types_of(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| timeless(l)["type"].as_str().unwrap().to_owned())
        .collect()
}

fn write_header_only(root: &Path, id: &str, created: i64) {
    let dir = paths::session_dir(root, None, id).unwrap();
    fs::create_dir_all(&dir).unwrap();
    let header = SessionHeader::new(id, created, None);
    fs::write(
        dir.join(paths::LOG_FILE),
        format!("{}\n", serde_json::to_string(&header).unwrap()),
    )
    .unwrap();
}

#[test]
fn appending_to_a_dsh_zstd_log_adds_one_frame_per_batch_in_dsh_layout() {
    let tmp = tempfile::tempdir().unwrap();
    let path = install_fixture(tmp.path(), LogFormat::Zstd);
    let before = fs::read(&path).unwrap();
    let old_frames = frames(&before).len();
    // `auto`: the store already uses zstd, so the append is zstd.
    let store = SessionStore::new(tmp.path());
    let mut writer = store.open_writer(FIXTURE_ID, None).unwrap();
    assert_eq!(writer.format(), LogFormat::Zstd);
    let events = turn_events(3, "again?", "Yes it is warm now.");
    let n = events.len();
    writer.append(events).unwrap();
    drop(writer);

    let after = fs::read(&path).unwrap();
    assert_eq!(
        &after[..before.len()],
        &before[..],
        "earlier frames are untouched"
    );
    let spans = frames(&after);
    assert_eq!(spans.len(), old_frames + 1, "one frame for the batch");
    let (start, _) = spans[old_frames];
    assert_eq!(after[start..start + 4], ZSTD_MAGIC);
    assert_eq!(
        after[start + 4] & CHECKSUM_FLAG,
        CHECKSUM_FLAG,
        "checksummed like dsh's"
    );
    let text = frame_text(&after, spans[old_frames]);
    assert!(text.ends_with('\n'), "a frame holds whole lines");
    assert_eq!(
        types_of(&text),
        [
            "turn/start",
            "user/message",
            "step/start",
            "assistant/chunk",
            "text-chunks",
            "assistant/chunk",
            "assistant/chunk",
            "assistant/message",
            "step/end",
            "turn/end",
        ],
        "a run of three or more deltas is one packed row"
    );
    let row = timeless(text.lines().nth(4).unwrap());
    assert_eq!(row["seq0"], json!(48));
    assert_eq!(
        row["data"],
        json!({"turn": 3, "step": 1, "index": 0, "texts": ["Yes ", "it ", "is ", "warm ", "now."]})
    );
    let all = all_events(&path, LogFormat::Zstd);
    assert_eq!(all.len(), 44 + n);
    assert_eq!(
        surface_texts(&store, FIXTURE_ID).last().unwrap(),
        "Yes it is warm now."
    );
}

#[test]
fn a_new_zstd_session_starts_with_a_header_only_frame() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path()).with_compression(Compression::Zstd);
    let header = SessionHeader::new("fresh", 5, Some("/w".into()));
    let mut writer = store.open_writer("fresh", Some(header.clone())).unwrap();
    let path = writer.path().to_owned();
    assert_eq!(path.file_name().unwrap(), paths::ZSTD_LOG_FILE);
    writer.append(turn_events(1, "q", "a b")).unwrap();
    writer
        .append(turn_events(2, "q2", "one two three"))
        .unwrap();
    drop(writer);
    let data = fs::read(&path).unwrap();
    let spans = frames(&data);
    assert_eq!(spans.len(), 3);
    for &(start, _) in &spans {
        assert_eq!(data[start + 4] & CHECKSUM_FLAG, CHECKSUM_FLAG);
    }
    assert_eq!(
        frame_text(&data, spans[0]),
        format!("{}\n", serde_json::to_string(&header).unwrap()),
        "the first frame is exactly the header line"
    );
    // Two deltas stay separate lines; three pack.
    let packed = "text-chunks".to_owned();
    assert!(!types_of(&frame_text(&data, spans[1])).contains(&packed));
    assert!(types_of(&frame_text(&data, spans[2])).contains(&packed));
    assert!(!path.with_file_name(paths::LOG_FILE).exists());
    assert_eq!(store.list_sessions().unwrap()[0].id, "fresh");
    assert_eq!(
        surface_texts(&store, "fresh"),
        ["q", "a b", "q2", "one two three"]
    );
}

#[test]
fn a_torn_final_frame_is_a_torn_tail_cut_on_the_next_open() {
    let tmp = tempfile::tempdir().unwrap();
    let path = install_fixture(tmp.path(), LogFormat::Zstd);
    let committed = fs::read(&path).unwrap();
    let extra = zstd_frame(
        br#"{"type":"turn/start","seq":44,"time":1,"data":{"turn":3,"trigger":{"kind":"message","source":{"kind":"user"}}}}
"#,
    );
    // Cut short at several points, or complete but failing its checksum (the bytes of a
    // write that never finished, or of a power loss): none of it counts, for the reader and
    // for the writer, which cuts it whole.
    let mut damaged = extra.clone();
    if let Some(last) = damaged.last_mut() {
        *last ^= 0x5A;
    }
    let tails = [1, 4, extra.len() / 2, extra.len() - 1]
        .map(|cut| extra[..cut].to_vec())
        .into_iter()
        .chain([damaged]);
    for (cut, tail) in tails.enumerate() {
        let mut torn = committed.clone();
        torn.extend_from_slice(&tail);
        fs::write(&path, &torn).unwrap();
        let store = SessionStore::new(tmp.path());
        let surface = store.read_surface(FIXTURE_ID).unwrap();
        assert_eq!(surface.captured_through_seq, Some(43), "cut {cut}");
        let writer = store.open_writer(FIXTURE_ID, None).unwrap();
        assert_eq!(writer.next_seq(), 44);
        drop(writer);
        assert_eq!(
            fs::read(&path).unwrap(),
            committed,
            "cut {cut}: torn frame truncated"
        );
    }
}

#[test]
fn a_store_holding_both_encodings_is_refused_for_writing() {
    let tmp = tempfile::tempdir().unwrap();
    let fixture = install_fixture(tmp.path(), LogFormat::Zstd);
    let fixture_bytes = fs::read(&fixture).unwrap();
    let plain = SessionStore::new(tmp.path()).with_compression(Compression::None);
    // Opening does not visit the store; the check before the first write refuses.
    let mut writer = plain
        .open_writer("new", Some(SessionHeader::new("new", 1, None)))
        .unwrap();
    let err = writer.check_encoding().unwrap_err();
    assert!(matches!(err, StoreError::EncodingMismatch { .. }), "{err}");
    let err = writer.append(turn_events(1, "hi", "hello")).unwrap_err();
    assert!(matches!(err, StoreError::EncodingMismatch { .. }), "{err}");
    drop(writer);
    assert!(
        !SessionStore::new(tmp.path()).exists("new"),
        "a refused session is never published"
    );
    assert!(
        err.to_string().contains("store.compression = \"none\""),
        "{err}"
    );

    // A plain log appears beside the zstd one (another tool): nothing writes any more.
    write_header_only(tmp.path(), "other", 1);
    for compression in [Compression::Auto, Compression::None, Compression::Zstd] {
        let store = SessionStore::new(tmp.path()).with_compression(compression);
        for (id, create) in [
            (FIXTURE_ID, None),
            ("other", None),
            ("new", Some(SessionHeader::new("new", 1, None))),
        ] {
            let mut writer = store.open_writer(id, create).unwrap();
            let seq = writer.next_seq();
            let err = writer.append(turn_events(9, "more?", "no")).unwrap_err();
            assert!(matches!(err, StoreError::MixedEncoding { .. }), "{err}");
            let message = err.to_string();
            assert!(message.contains("both plain and zstd"), "{message}");
            assert_eq!(writer.next_seq(), seq, "{id}: nothing queued");
        }
    }
    // Reading still works, and no log was written or published.
    let listed = SessionStore::new(tmp.path()).list_sessions().unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(fs::read(&fixture).unwrap(), fixture_bytes);
}

#[test]
fn equal_created_at_ties_list_like_javascript_locale_compare() {
    let tmp = tempfile::tempdir().unwrap();
    for id in [
        "Zeta-tie",
        "_tie",
        "alpha-tie",
        "beta-tie",
        "beta_tie",
        "Ärger-tie",
    ] {
        write_header_only(tmp.path(), id, 7);
    }
    write_header_only(tmp.path(), "newest", 8);
    let listed: Vec<String> = SessionStore::new(tmp.path())
        .list_sessions()
        .unwrap()
        .iter()
        .map(|h| h.id.clone())
        .collect();
    assert_eq!(
        listed,
        [
            "newest",
            "_tie",
            "alpha-tie",
            "Ärger-tie",
            "beta_tie",
            "beta-tie",
            "Zeta-tie"
        ]
    );
}

#[test]
fn lone_surrogates_are_data_except_in_ids() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let header = |id_json: &str| {
        format!(
            r#"{{"type":"session","version":0,"id":{id_json},"createdAt":1,"delegationDepth":0}}"#
        )
    };
    let user = |seq: u64, id: &str, text: &str| {
        format!(
            r#"{{"type":"user/message","seq":{seq},"time":1,"data":{{"id":"{id}","role":"user","content":[{{"type":"text","text":"{text}"}}],"source":{{"kind":"user"}}}},"surfaceOp":"append"}}"#
        )
    };
    let title = |seq: u64, t: &str| {
        format!(
            r#"{{"type":"session/title","seq":{seq},"time":1,"data":{{"title":"{t}","messageSeqs":[],"source":{{"kind":"manual"}}}}}}"#
        )
    };
    let end = |seq: u64| {
        format!(
            r#"{{"type":"turn/end","seq":{seq},"time":1,"data":{{"turn":1,"reason":{{"kind":"completed"}}}}}}"#
        )
    };
    // (directory name as dsh makes it, header id as dsh writes it, event lines)
    let cases = [
        (
            "s-text",
            r#""s-text""#,
            vec![user(0, "m", r"cut \ud83d emoji"), end(1)],
        ),
        (
            "s-title",
            r#""s-title""#,
            vec![user(0, "m", "hi"), title(1, r"T\udc00T"), end(2)],
        ),
        (
            "s-msgid",
            r#""s-msgid""#,
            vec![user(0, r"m\ud800", "hi"), end(1)],
        ),
        (
            "s-id~D800",
            r#""s-id\ud800""#,
            vec![user(0, "m", "hi"), end(1)],
        ),
    ];
    for (dir_name, id_json, body) in &cases {
        let dir = root.join(paths::NO_CWD_DIR).join(dir_name);
        fs::create_dir_all(&dir).unwrap();
        let mut text = header(id_json) + "\n";
        for line in body {
            text.push_str(line);
            text.push('\n');
        }
        fs::write(dir.join(paths::LOG_FILE), text).unwrap();
    }
    let store = SessionStore::new(root);
    let mut listed: Vec<String> = store
        .list_sessions()
        .unwrap()
        .iter()
        .map(|h| h.id.clone())
        .collect();
    listed.sort();
    assert_eq!(
        listed,
        ["s-msgid", "s-text", "s-title"],
        "an id with a lone surrogate is not listed"
    );
    assert_eq!(surface_texts(&store, "s-text"), ["cut \u{FFFD} emoji"]);
    assert_eq!(
        store.read_title("s-title").unwrap().as_deref(),
        Some("T\u{FFFD}T")
    );
    let surface = store.read_surface("s-msgid").unwrap();
    assert_eq!(surface.events[0].message().unwrap().id, "m\u{FFFD}");
    assert_eq!(
        surface.captured_through_seq,
        Some(1),
        "the whole log reads, turn/end included"
    );
    // The id as Rust can hold it names no session.
    assert!(store.read_surface("s-id\u{FFFD}").is_err());
}
