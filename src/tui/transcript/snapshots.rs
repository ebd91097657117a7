//! Snapshot tests of transcript cells and the status line as a user sees them: reference
//! cards (rows, readable view, exact bytes), collapsed and expanded tool results, the error
//! style, and the status line while streaming and after an interrupt.

use std::time::Duration;

use pretty_assertions::assert_eq;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier};
use ratatui::widgets::Widget;
use serde_json::json;

use super::{HistoryCell, RenderOptions, SnapshotView, Transcript, render_cell};
use crate::tui::chrome::status_line::{Phase, StatusLine};
use dsh_reference::prompt::prompt_text;
use dsh_store::event::kind;
use dsh_store::{ContentBlock, Event, EventData, Message, Role, Source, SurfaceOp};

fn ev(seq: u64, data: EventData) -> Event {
    let surface = matches!(data, EventData::UserMessage(_));
    Event {
        seq,
        time: 0,
        data,
        surface_op: surface.then_some(SurfaceOp::Append),
        source_event_seqs: None,
    }
}

fn text_of(cell: &HistoryCell, width: u16, options: RenderOptions) -> String {
    render_cell(cell, width, options)
        .iter()
        .map(|l| l.to_string().trim_end().to_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A context message with two sources, as `prepare` writes it.
fn card() -> HistoryCell {
    let build = format!(
        r#"{{"sessionId":"s-vite","label":"Speed up the Vite build","cwd":"/home/ana/web","capturedThroughSeq":812,"conversation":[{{"role":"user","text":"Why is the build slow?"}},{{"role":"assistant","text":"Two causes:\nthe cache is cold and {}"}}]}}"#,
        "x".repeat(2000)
    );
    let docs = r#"{"sessionId":"s-docs","label":"Docs","cwd":null,"capturedThroughSeq":3,"conversation":[{"role":"user","text":"hi"}]}"#;
    let message = Message::new(
        Role::User,
        vec![ContentBlock::text(prompt_text(&format!(
            "[{build},{docs}]"
        )))],
        Source::session_reference(json!([
            {"sessionId": "s-vite", "label": "Speed up the Vite build", "capturedThroughSeq": 812,
             "compacted": false, "originalMessages": 400, "retainedMessages": 188,
             "omittedMessages": 212, "omittedBytes": 91000, "truncated": true, "inputIndex": 0},
            {"sessionId": "s-docs", "label": "Docs", "capturedThroughSeq": 3, "compacted": false,
             "originalMessages": 1, "retainedMessages": 1, "omittedMessages": 0,
             "omittedBytes": 0, "truncated": false, "inputIndex": 1}
        ])),
    );
    let mut t = Transcript::default();
    t.apply(&ev(0, EventData::UserMessage(message)));
    t.cells()[0].clone()
}

fn with_snapshots(snapshots: SnapshotView) -> RenderOptions {
    RenderOptions {
        snapshots,
        ..RenderOptions::default()
    }
}

#[test]
fn reference_card_rows() {
    insta::assert_snapshot!(text_of(&card(), 80, with_snapshots(SnapshotView::Hidden)));
}

#[test]
fn reference_card_readable_conversations() {
    insta::assert_snapshot!(text_of(&card(), 60, with_snapshots(SnapshotView::Readable)));
}

#[test]
fn reference_card_exact_bytes_are_the_context_text() {
    let cell = card();
    let HistoryCell::ReferenceCard { snapshot, .. } = &cell else {
        panic!("not a card");
    };
    let shown = text_of(&cell, 10_000, with_snapshots(SnapshotView::Exact));
    let body: Vec<&str> = shown
        .lines()
        .filter_map(|l| l.strip_prefix("│ ").or(l.strip_prefix("│")))
        .collect();
    assert_eq!(body.join("\n"), *snapshot);
}

fn tool_cell() -> HistoryCell {
    let lines: Vec<String> = (1..=9).map(|i| format!("line {i}")).collect();
    HistoryCell::Tool {
        text: format!("tool result: {}", lines.join("\n")),
    }
}

#[test]
fn tool_result_collapsed() {
    insta::assert_snapshot!(text_of(&tool_cell(), 60, RenderOptions::default()));
}

#[test]
fn tool_result_expanded() {
    let options = RenderOptions {
        expand_long: true,
        ..RenderOptions::default()
    };
    insta::assert_snapshot!(text_of(&tool_cell(), 60, options));
}

#[test]
fn error_is_one_red_code_line_and_a_dim_message() {
    let cell = HistoryCell::Error {
        code: "LLM_TIMEOUT".into(),
        message: "no reply within 120 s\nfrom https://api.deepseek.com".into(),
    };
    let lines = render_cell(&cell, 40, RenderOptions::default());
    insta::assert_snapshot!(text_of(&cell, 40, RenderOptions::default()));
    let code = &lines[0].spans[1];
    assert_eq!(code.style.fg, Some(Color::Red));
    assert!(!code.style.add_modifier.contains(Modifier::BOLD));
    for line in &lines[1..] {
        for span in &line.spans {
            let style = line.style.patch(span.style);
            assert!(style.add_modifier.contains(Modifier::DIM), "{line}");
            assert_eq!(style.fg, None);
        }
    }
}

fn status(transcript: &Transcript, phase: Phase, elapsed: Option<Duration>) -> String {
    let mut terminal = Terminal::new(TestBackend::new(64, 1)).unwrap();
    terminal
        .draw(|frame| {
            let area: Rect = frame.area();
            let buf: &mut Buffer = frame.buffer_mut();
            StatusLine {
                phase,
                spinner_frame: 0,
                model: "deepseek-chat",
                tokens: transcript.tokens(),
                queued: 0,
                elapsed,
                indexing: None,
            }
            .render(area, buf);
        })
        .unwrap();
    format!("{}", terminal.backend())
}

#[test]
fn status_line_while_streaming_and_after_an_interrupt() {
    let mut t = Transcript::default();
    t.apply(&ev(
        0,
        EventData::UserMessage(Message::user_text("q".repeat(4000))),
    ));
    t.apply(&ev(
        1,
        Event::parse_data(kind::STEP_START, json!({"turn": 1, "step": 0})).unwrap(),
    ));
    for seq in 2..12 {
        t.apply(&ev(
            seq,
            EventData::AssistantChunk {
                turn: 1,
                step: 0,
                chunk: json!({"type": "text", "text": "forty bytes of streamed reply text here "}),
                extra: serde_json::Map::default(),
            },
        ));
    }
    let streaming = status(&t, Phase::Responding, Some(Duration::from_secs(75)));
    t.apply(&ev(
        12,
        Event::parse_data(
            kind::TURN_END,
            json!({"turn": 1, "reason": {"kind": "aborted"}}),
        )
        .unwrap(),
    ));
    let interrupted = status(&t, Phase::Idle, None);
    insta::assert_snapshot!(format!("{streaming}\n{interrupted}"));
}

#[test]
fn exact_usage_replaces_the_estimate() {
    let mut t = Transcript::default();
    t.apply(&ev(
        0,
        Event::parse_data(kind::STEP_START, json!({"turn": 1, "step": 0})).unwrap(),
    ));
    t.apply(&ev(
        1,
        EventData::AssistantMessage {
            turn: 1,
            step: 0,
            message: Message::new(
                Role::Assistant,
                vec![ContentBlock::text("hello")],
                Source::model("openai", "m"),
            ),
            usage: Some(json!({"inputTokens": 1234, "outputTokens": 56})),
            extra: serde_json::Map::default(),
        },
    ));
    insta::assert_snapshot!(status(&t, Phase::Idle, None));
}
