//! Recall in the app (issue 37 items 5 and 6): a message with a reference and a
//! `recall:` line runs the search through the offline model; the transcript shows the call
//! as one row that expands to the text the model received, the answer's citation as a link
//! with the reference's label, and Alt+C opens the cited message in the read-only view of
//! the referenced session.

use std::sync::Arc;

use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};

use super::super::tests::{ctrl, harness, key, pump_until, screen};
use crate::agent::AgentStatus;
use crate::tui::transcript::HistoryCell;
use dsh_foreign::SessionSources;
use dsh_reference::format_mention;
use dsh_store::{SessionQuery, SessionStore};

fn alt(c: char) -> TermEvent {
    TermEvent::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::ALT))
}

#[tokio::test]
async fn a_recall_is_one_row_its_citation_a_link_that_opens_the_cited_message() {
    let mut h = harness(true).await;
    let store: Arc<dyn SessionQuery> = Arc::new(SessionStore::new(h.app.store.root()));
    h.app
        .set_sources(Arc::new(SessionSources::new(store, Vec::new())), &[]);
    let draft = format!(
        "{} what failed?\nrecall: login",
        format_mention("s-alpha", Some("Alpha login bug"))
    );
    h.app.handle_terminal_event(TermEvent::Paste(draft));
    h.app.handle_terminal_event(key(KeyCode::Enter));
    let app = &mut h.app;
    pump_until(app, |app| {
        app.session.status == AgentStatus::Idle
            && app
                .agent()
                .snapshot_events()
                .iter()
                .any(|e| e.kind() == "turn/end")
    })
    .await;
    let cells = app.chat.transcript().cells().to_vec();
    // One row for the call (its tool/call shows nothing of its own).
    let rows: Vec<&HistoryCell> = cells
        .iter()
        .filter(|c| matches!(c, HistoryCell::Recall(_) | HistoryCell::Tool { .. }))
        .collect();
    assert_eq!(rows.len(), 1, "{rows:?}");
    let text = screen(app, 100, 40).backend().to_string();
    assert!(
        text.contains("⌕ searched Alpha login bug for “login”: 1 exchange"),
        "{text}"
    );
    // The answer's citation, as a link with the label: the question is seq 1 of s-alpha.
    assert!(text.contains("⟦Alpha login bug #1⟧"), "{text}");
    assert!(!text.contains("[ref 1 #1]"), "{text}");
    // Expanded, the row shows the exact text the model received.
    app.handle_terminal_event(ctrl('g'));
    let expanded = screen(app, 100, 60).backend().to_string();
    assert!(expanded.contains("<referenced-sessions>"), "{expanded}");
    // Alt+C opens the cited session read-only, the cited message on screen.
    app.handle_terminal_event(alt('c'));
    pump_until(app, |app| {
        app.read_only.as_ref().is_some_and(|v| !v.chat.is_loading())
    })
    .await;
    let shown = screen(app, 100, 20).backend().to_string();
    assert!(shown.contains("Why does login fail?"), "{shown}");
    assert!(shown.contains("read-only"), "{shown}");
}

/// A session `id` titled `title` of `n` exchanges of about 600-byte messages.
fn seed_long(store: &SessionStore, id: &str, title: &str, n: u64) {
    use dsh_store::{ContentBlock, EventData, Message, NewEvent, Role, SessionHeader, Source};
    let header = SessionHeader::new(id, 1_700_000_000_000, Some(super::super::tests::CWD.into()));
    let mut writer = store.open_writer(id, Some(header)).unwrap();
    let filler = "lorem ipsum ".repeat(50);
    let mut events = Vec::new();
    for i in 0..n {
        events.push(NewEvent::appended(EventData::UserMessage(
            Message::user_text(format!("question {i} {filler}")),
        )));
        events.push(NewEvent::appended(EventData::AssistantMessage {
            turn: i + 1,
            step: 1,
            message: Message::new(
                Role::Assistant,
                vec![ContentBlock::text(format!("answer {i} {filler}"))],
                Source::model("offline", "offline-echo"),
            ),
            usage: None,
            extra: serde_json::Map::new(),
        }));
    }
    events.push(super::super::tests::user_title(title));
    writer
        .append(dsh_store::layout::in_turns(1, events))
        .unwrap();
}

#[tokio::test]
async fn the_preview_shows_the_plan_the_session_gets_among_the_draft_s_references() {
    use crate::llm::configured::Configured;
    use crate::llm::{OfflineProvider, Provider};
    use crate::tui::app::{App, AppOptions};
    use dsh_reference::{ReferenceConfig, SessionReferences};
    use dsh_store::SessionHeader;

    let dir = tempfile::TempDir::new().unwrap();
    let store = SessionStore::new(dir.path());
    seed_long(&store, "s-first", "First long design talk", 40);
    seed_long(&store, "s-second", "Second long design talk", 40);
    let query: Arc<dyn SessionQuery> = Arc::new(store.clone());
    let refs = SessionReferences::new(query, ReferenceConfig::default());
    let header = SessionHeader::new("s-test", 1_700_000_000_500, None);
    let writer = store.open_writer("s-test", Some(header)).unwrap();
    // A window of 50 000 tokens: half of its input budget is about 65 KB, for sessions of
    // about 50 KB each.
    let provider: Arc<dyn Provider> =
        Arc::new(Configured::new(Arc::new(OfflineProvider::new())).with_context_tokens(50_000));
    let options = AppOptions {
        history_size: 50,
        show_reasoning: false,
    };
    let mut app = App::new(store, Some(refs), provider, writer, options);
    pump_until(&mut app, |app| !app.transcript_loading()).await;
    screen(&mut app, 140, 40);
    let preview_of = async |app: &mut App, typed: &str| {
        super::super::tests::type_text(app, typed);
        pump_until(app, |app| app.previews.is_busy()).await;
        pump_until(app, |app| !app.previews.is_busy()).await;
        screen(app, 140, 40).backend().to_string()
    };
    // Alone, the session fits what the window has left.
    let alone = preview_of(&mut app, "@Second long").await;
    assert!(alone.contains("80 of 80 messages kept"), "{alone}");
    assert!(alone.contains("plan: fits the window"), "{alone}");
    // After a reference to the first, both share the room: the second's budget is lowered.
    app.handle_terminal_event(key(KeyCode::Esc));
    let draft = format!(
        "{} ",
        format_mention("s-first", Some("First long design talk"))
    );
    let _ = app.composer.input.set_draft(&draft);
    let shared = preview_of(&mut app, "@Second long").await;
    assert!(
        shared.contains("plan: lowered to") && shared.contains("(2 references)"),
        "{shared}"
    );
    assert!(shared.contains("omitted"), "{shared}");
}
