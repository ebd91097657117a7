//! The rule book against logs dsh itself wrote (`tests/fixtures/dsh-written/`, README there):
//! it names what each dsh version's own readers said about them, and a log continued here
//! gains no new violation.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test

use std::fs;
use std::path::{Path, PathBuf};

use dsh_store::layout::{compaction, in_turns};
use dsh_store::log_check::{LogReport, WrittenBy};
use dsh_store::{
    ContentBlock, DshVersion, EventData, Message, NewEvent, Role, Rule, SessionQuery, SessionStore,
    Source,
};
use pretty_assertions::assert_eq;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dsh-written")
}

/// A copy of fixture store `which` (`rc8`, `followed` or `rc2`), so writes never touch the fixture.
fn store_copy(which: &str) -> (tempfile::TempDir, SessionStore) {
    let tmp = tempfile::tempdir().unwrap();
    let from = fixtures().join(which);
    for project in fs::read_dir(&from).unwrap() {
        let project = project.unwrap().path();
        for session in fs::read_dir(&project).unwrap() {
            let session = session.unwrap().path();
            let to = tmp
                .path()
                .join(project.file_name().unwrap())
                .join(session.file_name().unwrap());
            fs::create_dir_all(&to).unwrap();
            fs::copy(session.join("session.jsonl"), to.join("session.jsonl")).unwrap();
        }
    }
    let store = SessionStore::new(tmp.path());
    (tmp, store)
}

/// `(rule, breaks 6816e8a3d5, breaks 0.1.0-rc.8, events)` of a report.
fn summary(report: &LogReport) -> Vec<(Rule, bool, bool, u64)> {
    report
        .findings
        .rules()
        .map(|(rule, c)| {
            (
                rule,
                c.versions.contains(DshVersion::Followed),
                c.versions.contains(DshVersion::Release),
                c.events,
            )
        })
        .collect()
}

#[test]
fn logs_dsh_wrote_are_judged_as_its_own_readers_judge_them() {
    let (_tmp, rc8) = store_copy("rc8");
    // 0.1.0-rc.8 reads all three (its readers and invariants pass); 6816e8a3d5 refuses the
    // reason-bearing aborted turn end and its invariants want titles and end-seeds in a turn.
    let cases = [
        (
            "rc8-parent",
            vec![
                (Rule::LegacyShape, true, false, 1),
                (Rule::TurnStructure, true, false, 1),
            ],
        ),
        (
            "rc8-fork",
            vec![
                (Rule::LegacyShape, true, false, 1),
                (Rule::TurnStructure, true, false, 2),
            ],
        ),
        (
            "rc8-fork-early",
            vec![(Rule::TurnStructure, true, false, 1)],
        ),
    ];
    for (id, want) in cases {
        let report = rc8.check_session(id).unwrap();
        assert_eq!(summary(&report), want, "{id}");
        assert!(!report.findings.refused_by(DshVersion::Release), "{id}");
        // Told by rc.8's own records: a cancellation's cause (the early fork has none).
        let by = if id == "rc8-fork-early" {
            WrittenBy::Unknown
        } else {
            WrittenBy::DshRelease
        };
        assert_eq!(report.written_by, by, "{id}");
    }
    // dsh 0.1.1-rc.2's image blocks break no rule of either version (all three read it).
    let (_tmp, rc2) = store_copy("rc2");
    let report = rc2.check_session("rc2-images").unwrap();
    assert_eq!(summary(&report), vec![], "rc2-images");
    assert_eq!(report.events, 17);
    let (_tmp, followed) = store_copy("followed");
    // 6816e8a3d5 reads both; 0.1.0-rc.8 refuses its compact/* records.
    for id in ["followed-compacted", "followed-fork"] {
        let report = followed.check_session(id).unwrap();
        assert_eq!(
            summary(&report),
            vec![
                (Rule::KnownEventType, false, true, 3),
                (Rule::CompactionCheckpoint, false, true, 1),
            ],
            "{id}"
        );
        assert!(report.findings.refused_by(DshVersion::Release));
        assert!(!report.findings.refused_by(DshVersion::Followed));
        assert_eq!(report.written_by, WrittenBy::DshBeforeRelease);
    }
}

fn reply(text: &str) -> NewEvent {
    NewEvent::appended(EventData::AssistantMessage {
        turn: 0,
        step: 0,
        message: Message::new(
            Role::Assistant,
            vec![ContentBlock::text(text)],
            Source::model("offline", "offline"),
        ),
        usage: None,
        extra: serde_json::Map::new(),
    })
}

#[test]
fn a_dsh_log_continued_here_gains_no_violation() {
    for (which, ids) in [
        ("rc8", vec!["rc8-parent", "rc8-fork", "rc8-fork-early"]),
        ("followed", vec!["followed-compacted", "followed-fork"]),
        ("rc2", vec!["rc2-images"]),
    ] {
        let (_tmp, store) = store_copy(which);
        for id in ids {
            let before = summary(&store.check_session(id).unwrap());
            let mut w = store.open_writer(id, None).unwrap();
            assert!(w.interrupted_closers().is_empty(), "{id}");
            // One more exchange, then a compaction of the whole surface in a turn of its own
            // (a forked surface holds the parent's checkpoint, a high seq first).
            let turn = w.rules().next_turn();
            w.append(in_turns(
                turn,
                [
                    NewEvent::appended(EventData::UserMessage(Message::user_text("go on"))),
                    reply("going on"),
                ],
            ))
            .unwrap();
            let turn = w.rules().next_turn();
            let shadowed = w.surface().to_vec();
            let mut batch = vec![NewEvent::plain(EventData::TurnStart {
                turn,
                trigger: serde_json::json!({"kind": "compaction"}),
                extra: serde_json::Map::new(),
            })];
            batch.extend(compaction(w.next_seq() + 1, turn, &shadowed, "all of it"));
            batch.push(NewEvent::plain(EventData::TurnEnd {
                turn,
                reason: dsh_store::event::TurnEndReason::of(
                    dsh_store::kinds::TurnEndKind::Completed,
                ),
                extra: serde_json::Map::new(),
            }));
            w.append(batch).unwrap();
            drop(w);
            let after = store.check_session(id).unwrap();
            assert_eq!(summary(&after), before, "{id}: new events broke a rule");
            assert_eq!(store.read_surface(id).unwrap().events.len(), 1, "{id}");
        }
    }
}

#[test]
fn the_writer_never_writes_a_line_the_reader_would_refuse() {
    let tmp = tempfile::tempdir().unwrap();
    let limits = dsh_store::reader::Limits {
        max_line_bytes: 4096,
        ..dsh_store::reader::Limits::default()
    };
    let store = SessionStore::new(tmp.path()).with_limits(limits);
    let mut w = store
        .open_writer("s", Some(dsh_store::SessionHeader::new("s", 1, None)))
        .unwrap();
    w.append(vec![NewEvent::appended(EventData::UserMessage(
        Message::user_text("fits"),
    ))])
    .unwrap();
    let len = fs::metadata(w.path()).unwrap().len();
    let big = NewEvent::appended(EventData::UserMessage(Message::user_text("x".repeat(4096))));
    match w.append(vec![big]) {
        Err(dsh_store::StoreError::LineTooLong {
            seq: 1, max: 4096, ..
        }) => {}
        other => panic!("expected LineTooLong, got {other:?}"),
    }
    assert_eq!(
        fs::metadata(w.path()).unwrap().len(),
        len,
        "nothing written"
    );
    assert_eq!(w.next_seq(), 1);
    assert_eq!(w.surface(), &[0]);
}

/// Issue 34 item 3: nor a line the reader would read back as a placeholder because
/// decoding it would cost more than its budget (`dsh_store::line_cost`).
#[test]
fn the_writer_never_writes_a_line_too_dense_to_read_back() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    let mut w = store
        .open_writer("s", Some(dsh_store::SessionHeader::new("s", 1, None)))
        .unwrap();
    // A message of `n` one-letter text blocks.
    let dense = |n: usize| {
        let blocks = vec![dsh_store::ContentBlock::text("a"); n];
        NewEvent::appended(EventData::UserMessage(Message::new(
            dsh_store::Role::User,
            blocks,
            dsh_store::Source::user(),
        )))
    };
    w.append(vec![dense(1000)]).unwrap();
    let len = fs::metadata(w.path()).unwrap().len();
    match w.append(vec![dense(200_000)]) {
        Err(dsh_store::StoreError::LineTooDense { seq: 1, .. }) => {}
        other => panic!("expected LineTooDense, got {other:?}"),
    }
    assert_eq!(
        fs::metadata(w.path()).unwrap().len(),
        len,
        "nothing written"
    );
    assert_eq!(w.next_seq(), 1);
}
