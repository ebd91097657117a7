//! Property tests (issue 7 item 2): URI round trip, retention invariants, surface folding
//! against a naive model (in memory and through the store), and `@`-token detection on
//! arbitrary text and cursors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::needless_pass_by_value,
    clippy::similar_names
)] // test code: small known values, helpers that take values for brevity

use std::borrow::Cow;

use dsh_reference::json_text::source_json;
use dsh_reference::json_text::{Escaping, escaped_len, item_len, source_fixed_len};
use dsh_reference::retention::ConversationTurn;
use dsh_reference::{
    ConversationItem, ErrorCode, SourceHeader, TurnRole, decode_uri, encode_uri, format_mention,
    parse_text, retain_source,
};
use dsh_refs::tui::composer::session_items::composer_config;
use dsh_store::{
    ContentBlock, Event, EventData, Message, NewEvent, Role, SessionHeader, SessionQuery,
    SessionStore, Source, SurfaceFolder, SurfaceOp, fold_surface,
};
use proptest::prelude::*;
use ratatui_mention::MentionInputState;
use serde_json::{Map, Value};

// ---------------------------------------------------------------------------------------
// Shared strategies.

/// Text built from pieces that stress escaping, char boundaries and the mention grammar.
fn tricky_text(max_parts: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just("a".to_owned()),
            Just("word ".to_owned()),
            Just("<".to_owned()),
            Just("\"".to_owned()),
            Just("\\".to_owned()),
            Just("]".to_owned()),
            Just("@".to_owned()),
            Just("@[".to_owned()),
            Just("](".to_owned()),
            Just(")".to_owned()),
            Just("dsh-session:".to_owned()),
            Just("ImEi".to_owned()),
            Just("\n".to_owned()),
            Just("\r".to_owned()),
            Just("\u{1}".to_owned()),
            Just("\u{1b}[2J".to_owned()),
            Just("\u{9b}".to_owned()),
            Just("\u{3000}".to_owned()),
            Just("\u{2028}".to_owned()),
            Just("\u{feff}".to_owned()),
            Just("漢".to_owned()),
            Just("😀".to_owned()),
            Just("e\u{301}".to_owned()),
            any::<char>().prop_map(String::from),
        ],
        0..max_parts,
    )
    .prop_map(|parts| parts.concat())
}

// ---------------------------------------------------------------------------------------
// URI round trip.

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn any_string_round_trips_through_its_uri(id in any::<String>()) {
        let uri = encode_uri(&id);
        prop_assert!(uri.starts_with("dsh-session:"));
        prop_assert_eq!(decode_uri(&uri).unwrap(), id);
    }

    #[test]
    fn tricky_ids_round_trip_and_mentions_parse_back(id in tricky_text(12), label in tricky_text(8)) {
        let uri = encode_uri(&id);
        prop_assert_eq!(decode_uri(&uri).unwrap(), id.clone());
        // A formatted mention parses back to exactly one reference with that id and label.
        let label = if label.is_empty() { None } else { Some(label.as_str()) };
        let parsed = parse_text(&format_mention(&id, label)).unwrap();
        prop_assert_eq!(parsed.references.len(), 1);
        prop_assert_eq!(&parsed.references[0].session_id, &id);
        let shown = label.unwrap_or(&id);
        prop_assert_eq!(parsed.text, format!("@{shown}"));
    }

    #[test]
    fn decode_accepts_only_what_encode_produces(payload in "[A-Za-z0-9_=+/-]{0,24}") {
        let uri = format!("dsh-session:{payload}");
        match decode_uri(&uri) {
            Ok(id) => prop_assert_eq!(encode_uri(&id), uri),
            Err(e) => prop_assert_eq!(e.code, ErrorCode::InvalidReference),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Retention invariants.

#[derive(Debug, Clone)]
struct GenItem {
    assistant: bool,
    checkpoint: bool,
    text: String,
}

fn gen_item() -> impl Strategy<Value = GenItem> {
    (any::<bool>(), prop::bool::weighted(0.15), tricky_text(60)).prop_map(
        |(assistant, checkpoint, text)| GenItem {
            assistant: assistant && !checkpoint,
            checkpoint,
            // Projection never yields an empty item.
            text: if text.is_empty() { "x".into() } else { text },
        },
    )
}

fn role(item: &GenItem) -> TurnRole {
    if item.assistant {
        TurnRole::Assistant
    } else {
        TurnRole::User
    }
}

const NOTICE_HEAD: &str = "\n[… omitted ";
const NOTICE_TAIL: &str = " UTF-8 bytes …]";

/// If `cut` is a middle-cut of `original` (head + tail + notice), the omitted byte count.
fn cut_of(original: &str, cut: &str) -> Option<u64> {
    if cut.is_empty() {
        return Some(original.len() as u64);
    }
    let body = cut.strip_suffix(NOTICE_TAIL)?;
    let at = body.rfind(NOTICE_HEAD)?;
    let omitted: u64 = body[at + NOTICE_HEAD.len()..].parse().ok()?;
    let kept = &body[..at];
    if kept.len() as u64 + omitted != original.len() as u64 {
        return None;
    }
    // kept = a prefix of the original followed by a suffix of it.
    let ok = (0..=kept.len()).any(|split| {
        kept.is_char_boundary(split)
            && original.starts_with(&kept[..split])
            && original.ends_with(&kept[split..])
    });
    ok.then_some(omitted)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn retention_invariants(
        items in prop::collection::vec(gen_item(), 0..10),
        budget in 0usize..2500,
        session_id in tricky_text(6),
        label in tricky_text(6),
        cwd in prop::option::of(tricky_text(6)),
        seq in prop::option::of(any::<u64>()),
    ) {
        let header = SourceHeader {
            session_id: session_id.clone(),
            label: label.clone(),
            cwd: cwd.clone(),
            captured_through_seq: seq,
        };
        let input: Vec<ConversationItem<'_>> = items
            .iter()
            .map(|i| ConversationItem { role: role(i), text: Cow::Borrowed(&i.text), checkpoint: i.checkpoint })
            .collect();
        // The smallest the object can get: every undroppable item (checkpoints, newest) cut to "".
        let newest = items.len().saturating_sub(1);
        let undroppable: Vec<&GenItem> = items
            .iter()
            .enumerate()
            .filter(|(n, i)| i.checkpoint || *n == newest)
            .map(|(_, i)| i)
            .collect();
        let min_size = source_fixed_len(&session_id, &label, cwd.as_deref(), seq)
            + undroppable.iter().map(|i| item_len(role(i).as_str(), 0)).sum::<usize>()
            + undroppable.len().saturating_sub(1);
        let full_size = source_fixed_len(&session_id, &label, cwd.as_deref(), seq)
            + items.iter().map(|i| item_len(role(i).as_str(), escaped_len(&i.text, Escaping::TagSafe))).sum::<usize>()
            + items.len().saturating_sub(1);

        match retain_source(header, input, budget) {
            Err(e) => {
                prop_assert_eq!(e.code, ErrorCode::BudgetExceeded);
                prop_assert!(min_size > budget, "failed although {min_size} <= {budget}");
            }
            Ok(r) => {
                let json = source_json(&r.data);
                // Serialized size is exact and within budget; no framing tag can be spelled.
                prop_assert_eq!(json.len(), r.serialized_bytes);
                prop_assert!(json.len() <= budget, "{} > {budget}", json.len());
                prop_assert!(!json.contains('<'));
                if full_size <= budget {
                    prop_assert!(!r.stats.truncated);
                    prop_assert_eq!(json.len(), full_size);
                }
                // Which originals survived: drops remove oldest droppables only, in order.
                let mut kept_idx = Vec::new();
                let mut dropped_bytes = 0u64;
                let mut to_drop = r.stats.omitted_messages;
                for (n, i) in items.iter().enumerate() {
                    if to_drop > 0 && !i.checkpoint && n != newest {
                        to_drop -= 1;
                        dropped_bytes += i.text.len() as u64;
                    } else {
                        kept_idx.push(n);
                    }
                }
                prop_assert_eq!(to_drop, 0);
                prop_assert_eq!(r.data.conversation.len(), kept_idx.len());
                // Checkpoints and the newest item are always kept (when there is any item).
                for (n, i) in items.iter().enumerate() {
                    if i.checkpoint || n == newest {
                        prop_assert!(kept_idx.contains(&n), "item {n} lost");
                    }
                }
                // Each kept item is the original or a middle cut of it; the bytes add up.
                let mut cut_bytes = 0u64;
                let mut any_cut = false;
                for (turn, &n) in r.data.conversation.iter().zip(&kept_idx) {
                    let original = &items[n];
                    prop_assert_eq!(turn.role, role(original));
                    if turn.text != original.text {
                        any_cut = true;
                        let omitted = cut_of(&original.text, &turn.text);
                        prop_assert!(omitted.is_some(), "{:?} is not a cut of {:?}", turn.text, original.text);
                        cut_bytes += omitted.unwrap_or(0);
                    }
                }
                let s = r.stats;
                prop_assert_eq!(s.original_messages, items.len());
                prop_assert_eq!(s.retained_messages + s.omitted_messages, s.original_messages);
                prop_assert_eq!(s.retained_messages, r.data.conversation.len());
                prop_assert_eq!(s.omitted_bytes, dropped_bytes + cut_bytes);
                prop_assert_eq!(s.truncated, s.omitted_messages > 0 || any_cut);
                prop_assert_eq!(s.compacted, items.iter().any(|i| i.checkpoint));
                // The JSON parses back to exactly the retained values.
                let back: Value = serde_json::from_str(&json).unwrap();
                prop_assert_eq!(&back["sessionId"], &Value::from(session_id.clone()));
                prop_assert_eq!(&back["label"], &Value::from(label.clone()));
                prop_assert_eq!(&back["cwd"], &cwd.clone().map_or(Value::Null, Value::from));
                prop_assert_eq!(&back["capturedThroughSeq"], &seq.map_or(Value::Null, Value::from));
                let conversation: Vec<ConversationTurn> = back["conversation"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| ConversationTurn {
                        role: if t["role"] == "assistant" { TurnRole::Assistant } else { TurnRole::User },
                        text: t["text"].as_str().unwrap().to_owned(),
                    })
                    .collect();
                prop_assert_eq!(conversation, r.data.conversation);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Surface folding against a naive model.

/// One generated surface step: append, or replace the span between two surface positions
/// (chosen as fractions so any surface length works).
#[derive(Debug, Clone)]
enum Step {
    Plain,
    Append,
    Replace {
        a: u16,
        b: u16,
    },
    /// An invalid replace: a seq that is not on the surface, or start after end.
    BadReplace {
        after_end: bool,
    },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        2 => Just(Step::Plain),
        6 => Just(Step::Append),
        3 => (any::<u16>(), any::<u16>()).prop_map(|(a, b)| Step::Replace { a, b }),
        1 => any::<bool>().prop_map(|after_end| Step::BadReplace { after_end }),
    ]
}

fn message_data(seq: u64) -> EventData {
    EventData::UserMessage(Message {
        id: format!("m{seq}"),
        role: Role::User,
        content: vec![ContentBlock::text(format!("t{seq}"))],
        source: Some(Source::user()),
        extra: Map::new(),
    })
}

/// A log-only event (dsh wants it inside a turn: the store test opens one first).
fn plain_data() -> EventData {
    EventData::Other {
        kind: "todo/write".into(),
        data: serde_json::json!({"todos": []}),
    }
}

/// Build a valid event list from `steps`, seqs from `base`, with the model surface after
/// each; invalid steps are returned separately with the surface they were tried against.
/// A replacement cites every node it shadows.
fn build(steps: &[Step], base: u64) -> (Vec<Event>, Vec<u64>, Vec<(Event, usize)>) {
    let mut events = Vec::new();
    let mut model: Vec<u64> = Vec::new();
    let mut bad = Vec::new();
    for s in steps {
        let seq = base + events.len() as u64;
        let mut sources = None;
        let (data, op) = match *s {
            Step::Plain => (plain_data(), None),
            Step::Append => {
                model.push(seq);
                (message_data(seq), Some(SurfaceOp::Append))
            }
            Step::Replace { a, b } => {
                if model.is_empty() {
                    continue;
                }
                let i = usize::from(a) % model.len();
                let j = usize::from(b) % model.len();
                let (i, j) = (i.min(j), i.max(j));
                let (start, end) = (model[i], model[j]);
                let op = SurfaceOp::Replace { start, end };
                sources = Some(model[i..=j].to_vec());
                model.splice(i..=j, [seq]);
                (message_data(seq), Some(op))
            }
            Step::BadReplace { after_end } => {
                let op = if after_end && model.len() >= 2 {
                    SurfaceOp::Replace {
                        start: model[model.len() - 1],
                        end: model[0],
                    }
                } else {
                    // A seq never put on the surface (or already replaced away).
                    let missing = (0..=seq).find(|s| !model.contains(s)).unwrap_or(seq + 1);
                    SurfaceOp::Replace {
                        start: missing,
                        end: missing,
                    }
                };
                let event = Event {
                    seq,
                    time: 1,
                    data: message_data(seq),
                    surface_op: Some(op),
                    source_event_seqs: None,
                };
                bad.push((event, events.len()));
                continue;
            }
        };
        events.push(Event {
            seq,
            time: 1,
            data,
            surface_op: op,
            source_event_seqs: sources,
        });
    }
    (events, model, bad)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn folding_matches_a_naive_model(steps in prop::collection::vec(step(), 0..40)) {
        let (events, model, bad) = build(&steps, 0);
        let folded: Vec<u64> = fold_surface(&events).unwrap().into_iter().map(|i| i as u64).collect();
        prop_assert_eq!(&folded, &model);
        let mut folder = SurfaceFolder::new();
        for e in &events {
            folder.push(e).unwrap();
        }
        prop_assert_eq!(folder.surface(), model.as_slice());
        // Every invalid replace is an error naming its seq, against the prefix it followed.
        for (event, at) in bad {
            let mut prefix: Vec<Event> = events[..at].to_vec();
            prefix.push(event.clone());
            let err = fold_surface(&prefix).unwrap_err();
            prop_assert_eq!(err.seq(), event.seq);
        }
    }

    #[test]
    fn the_store_folds_like_the_model(steps in prop::collection::vec(step(), 0..24)) {
        // Inside one turn (dsh's rules want log-only events in a turn).
        let (events, model, _) = build(&steps, 1);
        let tmp = tempfile::tempdir().unwrap();
        let store = SessionStore::new(tmp.path());
        let mut w = store.open_writer("fold", Some(SessionHeader::new("fold", 1, None))).unwrap();
        w.append_buffered(vec![NewEvent::plain(EventData::TurnStart {
            turn: 1,
            trigger: serde_json::json!({"kind": "test"}),
            extra: Map::new(),
        })])
        .unwrap();
        for e in &events {
            let new = NewEvent {
                data: e.data.clone(),
                surface_op: e.surface_op,
                source_event_seqs: e.source_event_seqs.clone(),
            };
            let written = w.append_buffered(vec![new]).unwrap();
            prop_assert_eq!(written[0].seq, e.seq);
        }
        w.sync().unwrap();
        prop_assert_eq!(w.surface(), model.as_slice());
        // An invalid replace is refused and writes nothing.
        let before = w.next_seq();
        let missing = u64::MAX;
        let refused = w.append(vec![NewEvent {
            data: message_data(0),
            surface_op: Some(SurfaceOp::Replace { start: missing, end: missing }),
            source_event_seqs: None,
        }]);
        prop_assert!(refused.is_err());
        prop_assert_eq!(w.next_seq(), before);
        drop(w);
        let surface = store.read_surface("fold").unwrap();
        let seqs: Vec<u64> = surface.events.iter().map(|e| e.seq).collect();
        prop_assert_eq!(seqs, model);
        prop_assert_eq!(surface.captured_through_seq, Some(events.len() as u64));
    }
}

// ---------------------------------------------------------------------------------------
// `@` token detection.

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// The composer as the app configures it, fed any text and caret: a `@` popup's query
    /// is the whitespace-free word after an `@` in the text, and every mention found is
    /// a whole `@[…](…)` that reads back as the same text.
    #[test]
    fn token_detection_never_panics_and_is_consistent(
        text in prop_oneof![tricky_text(30), any::<String>()],
        cursor in 0usize..80,
    ) {
        let mut state = MentionInputState::new(composer_config(0));
        let _ = state.set_draft(&text);
        let _ = state.set_caret(cursor);
        prop_assert_eq!(state.draft(), text.clone());
        if let Some(results) = state.results() {
            let query = results.query();
            let token = format!("@{query}");
            prop_assert!(text.contains(&token));
            // The token is whitespace-delimited (JavaScript's \s set).
            prop_assert!(!query.chars().any(dsh_reference::js_chars::is_js_whitespace));
        }
        let config = composer_config(0);
        let mut last_end = 0;
        for span in config.find_mentions(&text) {
            prop_assert!(span.range.start >= last_end && span.range.start < span.range.end);
            last_end = span.range.end;
            let mention = &text[span.range.clone()];
            prop_assert!(mention.starts_with("@[") && mention.ends_with(')'));
            let alone = config.find_mentions(mention);
            prop_assert_eq!(alone.len(), 1);
            prop_assert_eq!(&alone[0].mention, &span.mention);
            // What the composer writes for it reads back as the same mention.
            let written = config.write_mention(&span.mention);
            let again = config.find_mentions(&written);
            prop_assert_eq!(again.len(), 1);
            prop_assert_eq!(&again[0].mention, &span.mention);
        }
    }
}
