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
