//! Table-driven tests of the rule book: small logs as dsh would write them, or break them,
//! and the rules each version would refuse them for.
#![allow(clippy::needless_pass_by_value)] // test code: builders take values for brevity

use serde_json::{Value, json};

use super::*;
use crate::reader;

/// `(rule code, breaks 6816e8a3d5, breaks 0.1.0-rc.8)` of one violation.
type Judged = (&'static str, bool, bool);

/// Fold `lines` (JSON events, seqs from 0) and list `(rule, followed?, release?)` per
/// violation.
fn judge(lines: &[Value]) -> Vec<Judged> {
    let mut book = RuleBook::new();
    let mut out = Vec::new();
    for (seq, line) in lines.iter().enumerate() {
        let body = serde_json::to_vec(line).unwrap();
        let events = reader::decode_line(&body, seq as u64).unwrap();
        let envelope = Envelope::of_line(&body);
        for e in &events {
            out.extend(book.admit(e, &envelope, Mode::Scan));
        }
    }
    out.extend(book.finish());
    out.into_iter()
        .map(|v| {
            (
                v.rule.code(),
                v.versions.contains(DshVersion::Followed),
                v.versions.contains(DshVersion::Release),
            )
        })
        .collect()
}

fn ev(seq: u64, kind: &str, data: Value) -> Value {
    json!({"type": kind, "seq": seq, "time": 1, "data": data})
}

fn user(seq: u64, text: &str) -> Value {
    json!({"type": "user/message", "seq": seq, "time": 1,
        "data": {"id": format!("u{seq}"), "role": "user", "content": [{"type": "text", "text": text}], "source": {"kind": "user"}},
        "surfaceOp": "append"})
}

fn assistant(seq: u64, turn: u64, step: u64) -> Value {
    json!({"type": "assistant/message", "seq": seq, "time": 1,
        "data": {"turn": turn, "step": step, "message": {"id": format!("a{seq}"), "role": "assistant",
            "content": [{"type": "text", "text": "ok"}], "source": {"kind": "model", "provider": "p", "model": "m"}}},
        "surfaceOp": "append"})
}

fn start(seq: u64, turn: u64) -> Value {
    ev(
        seq,
        "turn/start",
        json!({"turn": turn, "trigger": {"kind": "message", "source": {"kind": "user"}}}),
    )
}

fn end(seq: u64, turn: u64) -> Value {
    ev(
        seq,
        "turn/end",
        json!({"turn": turn, "reason": {"kind": "completed"}}),
    )
}

/// One whole turn `turn` from seq `at`: 6 events, the user message at `at + 1` and the
/// reply at `at + 3`.
fn exchange(at: u64, turn: u64) -> Vec<Value> {
    vec![
        start(at, turn),
        user(at + 1, "q"),
        ev(at + 2, "step/start", json!({"turn": turn, "step": 1})),
        assistant(at + 3, turn, 1),
        ev(at + 4, "step/end", json!({"turn": turn, "step": 1})),
        end(at + 5, turn),
    ]
}

fn checkpoint(seq: u64, id: Option<&str>, start: u64, end: u64, sources: &[u64]) -> Value {
    let mut source = json!({"kind": "plugin", "plugin": "compact"});
    if let Some(id) = id {
        source["compactionId"] = json!(id);
    }
    json!({"type": "user/message", "seq": seq, "time": 1,
        "data": {"id": format!("c{seq}"), "role": "user", "content": [{"type": "text", "text": "summary"}], "source": source},
        "surfaceOp": {"op": "replace", "start": start, "end": end}, "sourceEventSeqs": sources})
}

fn summary(seq: u64, id: &str, shadowed: &[u64]) -> Value {
    ev(
        seq,
        "compaction/summary",
        json!({"compactionId": id, "summary": [{"type": "text", "text": "s"}],
        "shadowedRange": {"start": shadowed[0], "end": shadowed[shadowed.len() - 1]},
        "shadowedSeqs": shadowed, "shadowedTokenCount": 10, "provider": "p", "model": "m"}),
    )
}

/// Two exchanges then turn 3 compacting them the way this project does (seqs 12..=19).
fn compacted_log() -> Vec<Value> {
    let mut log = exchange(0, 1);
    log.extend(exchange(6, 2));
    log.extend([
        start(12, 3),
        user(13, "next"),
        ev(
            14,
            "compaction/start",
            json!({"compactionId": "k", "turn": 3}),
        ),
        summary(15, "k", &[1, 3, 7, 9]),
        checkpoint(16, Some("k"), 1, 9, &[14, 15, 1, 3, 7, 9]),
        ev(
            17,
            "compaction/end",
            json!({"compactionId": "k", "turn": 3}),
        ),
        ev(18, "step/start", json!({"turn": 3, "step": 1})),
        assistant(19, 3, 1),
        ev(20, "step/end", json!({"turn": 3, "step": 1})),
        end(21, 3),
    ]);
    log
}

const BOTH: (bool, bool) = (true, true);
const FOLLOWED: (bool, bool) = (true, false);
const RELEASE: (bool, bool) = (false, true);

fn rules(list: &[(&'static str, (bool, bool))]) -> Vec<Judged> {
    list.iter().map(|(r, (f, rel))| (*r, *f, *rel)).collect()
}

#[test]
fn logs_written_as_this_project_writes_them_break_no_rule() {
    assert_eq!(judge(&exchange(0, 1)), vec![]);
    assert_eq!(judge(&compacted_log()), vec![]);
    // A compaction of a surface whose replacement already sits before older nodes (a high
    // seq first): the range is the first and last node in surface order.
    let mut log = compacted_log();
    log.extend([
        start(22, 4),
        ev(
            23,
            "compaction/start",
            json!({"compactionId": "k2", "turn": 4}),
        ),
        summary(24, "k2", &[16, 13, 19]),
        checkpoint(25, Some("k2"), 16, 19, &[23, 24, 16, 13, 19]),
        ev(
            26,
            "compaction/end",
            json!({"compactionId": "k2", "turn": 4}),
        ),
        end(27, 4),
    ]);
    assert_eq!(judge(&log), vec![]);
}

#[test]
fn each_broken_rule_is_named_with_its_versions() {
    let cases: Vec<(&str, Vec<Value>, Vec<Judged>)> = vec![
        (
            // The break: a replacement citing only part of what it shadows.
            "replacement missing shadowed nodes",
            {
                let mut log = exchange(0, 1);
                log.extend([start(6, 2), checkpoint(7, None, 1, 3, &[3])]);
                log
            },
            rules(&[("SHADOWED_NODES", BOTH), ("COMPACTION_CHECKPOINT", RELEASE)]),
        ),
        (
            "the compact/* vocabulary as earlier versions of this project wrote it",
            vec![
                start(0, 1),
                user(1, "q"),
                ev(2, "compact/start", json!({"reason": "manual"})),
                ev(3, "compact/summary", json!({"summary": "text"})),
                ev(4, "compact/end", json!({})),
                end(5, 1),
            ],
            rules(&[
                ("KNOWN_EVENT_TYPE", RELEASE),
                ("KNOWN_EVENT_TYPE", RELEASE),
                ("COMPACTION_BRACKET", FOLLOWED),
                ("KNOWN_EVENT_TYPE", RELEASE),
            ]),
        ),
        (
            "a manual title outside any turn",
            vec![ev(
                0,
                "session/title",
                json!({"title": "T", "messageSeqs": [], "source": {"kind": "manual"}}),
            )],
            rules(&[
                ("TURN_STRUCTURE", FOLLOWED),
                ("TITLE_SOURCE", RELEASE),
                ("TITLE_CITATIONS", RELEASE),
            ]),
        ),
        (
            "a user title citing a message",
            vec![
                start(0, 1),
                user(1, "q"),
                ev(
                    2,
                    "session/title",
                    json!({"title": "T", "messageSeqs": [1], "source": {"kind": "user"}}),
                ),
                end(3, 1),
            ],
            rules(&[("TITLE_CITATIONS", RELEASE)]),
        ),
        (
            "message/discarded between turns",
            vec![ev(
                0,
                "message/discarded",
                json!({"messageIds": ["m"], "reason": "cancelled"}),
            )],
            rules(&[("KNOWN_EVENT_TYPE", RELEASE), ("TURN_STRUCTURE", FOLLOWED)]),
        ),
        (
            "an error turn end in this project's earlier shape",
            vec![
                start(0, 1),
                ev(
                    1,
                    "turn/end",
                    json!({"turn": 1, "reason": {"kind": "error", "code": "X", "message": "m"}}),
                ),
            ],
            rules(&[("LEGACY_SHAPE", RELEASE)]),
        ),
        (
            "rc.8's aborted turn end with its cause",
            vec![
                start(0, 1),
                ev(
                    1,
                    "turn/end",
                    json!({"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "user"}}}),
                ),
            ],
            rules(&[("LEGACY_SHAPE", FOLLOWED)]),
        ),
        (
            "an unknown type marked ignorable",
            vec![
                start(0, 1),
                json!({"type": "x/y", "seq": 1, "time": 1, "data": {}, "ignorable": true}),
                end(2, 1),
            ],
            rules(&[("ENVELOPE", FOLLOWED)]),
        ),
        (
            "ignorable that is not true",
            vec![
                start(0, 1),
                json!({"type": "x/y", "seq": 1, "time": 1, "data": {}, "ignorable": 1}),
                end(2, 1),
            ],
            rules(&[
                ("ENVELOPE", FOLLOWED),
                ("ENVELOPE", RELEASE),
                ("KNOWN_EVENT_TYPE", RELEASE),
            ]),
        ),
        (
            "a turn opened twice and steps out of order",
            vec![
                start(0, 1),
                start(1, 2),
                ev(2, "step/start", json!({"turn": 2, "step": 2})),
                assistant(3, 2, 2),
                ev(4, "step/end", json!({"turn": 2, "step": 2})),
                end(5, 2),
            ],
            rules(&[
                ("TURN_STRUCTURE", BOTH),
                ("TURN_STRUCTURE", BOTH),
                ("TURN_STRUCTURE", BOTH),
            ]),
        ),
        (
            "a standalone compaction between turns",
            vec![
                user(0, "q"),
                ev(
                    1,
                    "compaction/start",
                    json!({"compactionId": "k", "turn": null}),
                ),
                summary(2, "k", &[0]),
                checkpoint(3, Some("k"), 0, 0, &[1, 2, 0]),
                ev(
                    4,
                    "compaction/end",
                    json!({"compactionId": "k", "turn": null}),
                ),
            ],
            // rc.8 allows it; 6816e8a3d5's session invariant wants it inside a turn.
            rules(&[
                ("TURN_STRUCTURE", FOLLOWED),
                ("TURN_STRUCTURE", FOLLOWED),
                ("TURN_STRUCTURE", FOLLOWED),
            ]),
        ),
        (
            "a compaction owned by another turn, and a summary not followed by its replacement",
            {
                let mut log = exchange(0, 1);
                log.extend([
                    start(6, 2),
                    ev(
                        7,
                        "compaction/start",
                        json!({"compactionId": "k", "turn": 1}),
                    ),
                    summary(8, "k", &[1, 3]),
                    user(9, "between"),
                    ev(
                        10,
                        "compaction/end",
                        json!({"compactionId": "k", "turn": 1, "error": "E: gave up"}),
                    ),
                    end(11, 2),
                ]);
                log
            },
            rules(&[
                ("COMPACTION_BRACKET", RELEASE),
                ("COMPACTION_BRACKET", RELEASE),
                ("SHADOW_PRICE", RELEASE),
                ("COMPACTION_BRACKET", RELEASE),
            ]),
        ),
        (
            "a turn ending inside its compaction",
            {
                let mut log = exchange(0, 1);
                log.extend([
                    start(6, 2),
                    ev(
                        7,
                        "compaction/start",
                        json!({"compactionId": "k", "turn": 2}),
                    ),
                    end(8, 2),
                    start(9, 3),
                    ev(
                        10,
                        "compaction/end",
                        json!({"compactionId": "k", "turn": 2, "error": "E: late"}),
                    ),
                    end(11, 3),
                ]);
                log
            },
            // Closed later: the crossings count (one left open by a crash would not).
            rules(&[
                ("COMPACTION_BRACKET", RELEASE),
                ("COMPACTION_BRACKET", RELEASE),
                ("COMPACTION_BRACKET", RELEASE),
            ]),
        ),
        (
            "surface markers where they do not belong",
            vec![
                start(0, 1),
                json!({"type": "step/start", "seq": 1, "time": 1, "data": {"turn": 1, "step": 1}, "surfaceOp": "append"}),
                json!({"type": "user/message", "seq": 2, "time": 1,
                    "data": {"id": "u", "role": "user", "content": [], "source": {"kind": "user"}},
                    "surfaceOp": "append", "sourceEventSeqs": [2, 2]}),
            ],
            rules(&[
                ("SURFACE_MARKER", BOTH),
                ("PROVENANCE", BOTH),
                ("PROVENANCE", BOTH),
            ]),
        ),
        (
            "messages without an id, role or model source",
            vec![
                start(0, 1),
                ev(1, "step/start", json!({"turn": 1, "step": 1})),
                json!({"type": "assistant/message", "seq": 2, "time": 1,
                    "data": {"turn": 1, "step": 1, "message": {"id": "", "role": "user", "content": [], "source": {"kind": "model"}}},
                    "surfaceOp": "append"}),
            ],
            rules(&[
                ("MESSAGE_SHAPE", BOTH),
                ("MESSAGE_SHAPE", RELEASE),
                ("MESSAGE_SHAPE", RELEASE),
            ]),
        ),
    ];
    for (name, log, want) in cases {
        assert_eq!(judge(&log), want, "{name}");
    }
}

#[test]
fn a_compaction_a_crash_left_open_is_forgotten_but_a_closed_one_is_judged() {
    // Left open by a crash: dsh forgets it on resume (session/end-seed), so the turn end that
    // crossed it does not count while scanning.
    let mut log = exchange(0, 1);
    log.extend([
        start(6, 2),
        ev(
            7,
            "compaction/start",
            json!({"compactionId": "k", "turn": 2}),
        ),
        end(8, 2),
    ]);
    assert_eq!(judge(&log), vec![]);
    // Appending, every crossing is refused at once.
    let mut book = RuleBook::new();
    let mut broken = Vec::new();
    for (seq, line) in log.iter().enumerate() {
        let body = serde_json::to_vec(line).unwrap();
        for e in reader::decode_line(&body, seq as u64).unwrap() {
            broken.extend(book.admit(&e, &Envelope::of_line(&body), Mode::Append));
        }
    }
    assert_eq!(broken.len(), 1);
    assert_eq!(broken[0].rule, Rule::CompactionBracket);
    assert_eq!(broken[0].seq, 8);
}

#[test]
fn a_rolled_back_batch_leaves_the_book_as_it_was() {
    let log = exchange(0, 1);
    let mut book = RuleBook::new();
    let decode = |seq: usize, line: &Value| {
        reader::decode_line(&serde_json::to_vec(line).unwrap(), seq as u64).unwrap()
    };
    for (seq, line) in log.iter().enumerate() {
        for e in decode(seq, line) {
            book.admit(&e, &Envelope::plain(), Mode::Append);
        }
    }
    let before = (book.surface().to_vec(), book.next_seq(), book.next_turn());
    let save = book.begin();
    let batch = [
        start(6, 2),
        user(7, "x"),
        checkpoint(8, None, 1, 7, &[1, 3, 7]),
    ];
    for (i, line) in batch.iter().enumerate() {
        for e in decode(6 + i, line) {
            book.admit(&e, &Envelope::plain(), Mode::Append);
        }
    }
    assert_eq!(book.surface(), &[8]);
    book.rollback(save);
    assert_eq!(
        (book.surface().to_vec(), book.next_seq(), book.next_turn()),
        before
    );
    assert_eq!(book.open_turn(), None);
}

#[test]
fn the_known_types_are_sorted_for_lookup() {
    let mut sorted = RELEASE_KNOWN_EVENT_TYPES;
    sorted.sort_unstable();
    assert_eq!(sorted, RELEASE_KNOWN_EVENT_TYPES);
}

/// An assistant message of `(turn, step)` asking for the calls `ids` (tool `recall`).
fn asking(seq: u64, turn: u64, step: u64, ids: &[&str]) -> Value {
    let blocks: Vec<Value> = ids
        .iter()
        .map(
            |id| json!({"type": "tool-call", "id": id, "name": "recall", "arguments": "{\"q\":1}"}),
        )
        .collect();
    json!({"type": "assistant/message", "seq": seq, "time": 1,
        "data": {"turn": turn, "step": step, "message": {"id": format!("a{seq}"), "role": "assistant",
            "content": blocks, "source": {"kind": "model", "provider": "p", "model": "m"}}},
        "surfaceOp": "append"})
}

fn call(seq: u64, turn: u64, step: u64, id: &str) -> Value {
    ev(
        seq,
        "tool/call",
        json!({"turn": turn, "step": step, "callId": id, "name": "recall", "arguments": "{\"q\":1}"}),
    )
}

/// The result of call `id`; `error` adds dsh's error info, `cites` the call's seq.
fn result(
    seq: u64,
    turn: u64,
    step: u64,
    id: &str,
    error: Option<&str>,
    cites: Option<u64>,
) -> Value {
    let mut data = json!({"turn": turn, "step": step, "message": {"id": format!("r{seq}"), "role": "user",
        "source": {"kind": "tool", "callId": id},
        "content": [{"type": "tool-result", "toolCallId": id, "content": [{"type": "text", "text": "found"}],
            "isError": error.is_some()}]}});
    if let Some(code) = error {
        data["error"] = json!({"name": "E", "code": code});
    }
    let mut line =
        json!({"type": "tool/result", "seq": seq, "time": 1, "data": data, "surfaceOp": "append"});
    if let Some(c) = cites {
        line["sourceEventSeqs"] = json!([c]);
    }
    line
}

fn delta(seq: u64, turn: u64, step: u64, chunk: Value) -> Value {
    ev(
        seq,
        "assistant/chunk",
        json!({"turn": turn, "step": step, "chunk": chunk}),
    )
}

/// Turn 1: a step whose reply streams and asks for calls `c1` and `c2`, both run (their
/// deltas, block ends, calls and results), then a second step answering.
fn tool_round() -> Vec<Value> {
    vec![
        start(0, 1),
        user(1, "q"),
        ev(2, "step/start", json!({"turn": 1, "step": 1})),
        delta(
            3,
            1,
            1,
            json!({"type": "block-start", "index": 0, "blockType": "tool-call"}),
        ),
        delta(
            4,
            1,
            1,
            json!({"type": "tool-call-delta", "index": 0, "id": "c1", "name": "recall", "argumentsDelta": "{\"q\""}),
        ),
        delta(
            5,
            1,
            1,
            json!({"type": "tool-call-delta", "index": 0, "id": "c1", "argumentsDelta": ":1}"}),
        ),
        delta(
            6,
            1,
            1,
            json!({"type": "block-end", "index": 0, "block": {"type": "tool-call", "id": "c1", "name": "recall", "arguments": "{\"q\":1}"}}),
        ),
        asking(7, 1, 1, &["c1", "c2"]),
        call(8, 1, 1, "c1"),
        result(9, 1, 1, "c1", None, Some(8)),
        call(10, 1, 1, "c2"),
        result(11, 1, 1, "c2", Some("RECALL_LIMIT"), Some(10)),
        ev(12, "step/end", json!({"turn": 1, "step": 1})),
        ev(13, "step/start", json!({"turn": 1, "step": 2})),
        assistant(14, 1, 2),
        ev(15, "step/end", json!({"turn": 1, "step": 2})),
        end(16, 1),
    ]
}

#[test]
fn a_tool_round_as_dsh_writes_it_breaks_no_rule() {
    assert_eq!(judge(&tool_round()), vec![]);
    // A call that never started is answered without a tool/call, by dsh's repair code.
    let mut log = tool_round();
    log[10] = result(10, 1, 1, "c2", Some("TOOL_NOT_STARTED"), None);
    log[11] = ev(11, "todo/write", json!({"turn": 1, "todos": []}));
    assert_eq!(judge(&log), vec![]);
}

#[test]
fn each_broken_tool_shape_is_named() {
    let tool = ("TOOL_SHAPE", BOTH);
    let with = |at: usize, line: Value| {
        let mut log = tool_round();
        log[at] = line;
        log
    };
    let cases: Vec<(&str, Vec<Value>, Vec<Judged>)> = vec![
        (
            "a step ends with a call unanswered",
            with(11, ev(11, "todo/write", json!({"turn": 1, "todos": []}))),
            rules(&[tool]),
        ),
        (
            "a tool/call without its name",
            with(
                8,
                ev(
                    8,
                    "tool/call",
                    json!({"turn": 1, "step": 1, "callId": "c1", "arguments": "{}"}),
                ),
            ),
            rules(&[tool]),
        ),
        (
            "a tool/call the model never asked for",
            with(10, call(10, 1, 1, "c9")),
            rules(&[tool, ("TURN_STRUCTURE", BOTH)]),
        ),
        (
            "a tool-call delta with parsed arguments",
            with(
                5,
                delta(
                    5,
                    1,
                    1,
                    json!({"type": "tool-call-delta", "index": 0, "id": "c1", "argumentsDelta": {"q": 1}}),
                ),
            ),
            rules(&[tool]),
        ),
        (
            "a tool-call block with object arguments",
            with(
                6,
                delta(
                    6,
                    1,
                    1,
                    json!({"type": "block-end", "index": 0, "block": {"type": "tool-call", "id": "c1", "name": "recall", "arguments": {}}}),
                ),
            ),
            rules(&[tool]),
        ),
        (
            "an error that is not dsh's error info",
            with(11, {
                let mut r = result(11, 1, 1, "c2", Some("X"), Some(10));
                r["data"]["error"] = json!("failed");
                r
            }),
            rules(&[tool]),
        ),
    ];
    for (name, log, want) in cases {
        assert_eq!(judge(&log), want, "{name}");
    }
}
