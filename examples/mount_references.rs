//! The standard bundle in miniature: `SessionReferences` mounted on a session store drives
//! the `ratatui-mention` widget. Typing `@` and a query asks for rows, `list_candidates`
//! answers them, Tab inserts the canonical mention, Enter submits, and `prepare` attaches
//! the mentioned session's snapshot. Every frame is drawn into a test backend and printed.
//!
//! `cargo run --example mount_references [STORE_DIR [QUERY]]` — without a store, a temporary
//! one with three sessions is made; the query defaults to `release`.

use std::error::Error;
use std::path::Path;
use std::sync::Arc;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use dsh_reference::{AgentRef, ReferenceConfig, SessionReferences};
use dsh_refs::agent::parse_submission;
use dsh_refs::tui::composer::session_items::{
    DisplayZone, composer_look, composer_state, popup_labels, session_item,
};
use dsh_store::{EventData, Message, NewEvent, SessionHeader, SessionStore};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui_mention::{MentionInputState, Outcome};
use tokio_util::sync::CancellationToken;

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let temp = tempfile::tempdir()?;
    let root = if let Some(dir) = args.next() {
        dir.into()
    } else {
        write_sessions(temp.path())?;
        temp.path().to_path_buf()
    };
    let query = args.next().unwrap_or_else(|| "release".to_string());
    let refs = SessionReferences::new(
        Arc::new(SessionStore::new(root)),
        ReferenceConfig::default(),
    );
    // The session the user is writing in (it is never offered to itself).
    let me = AgentRef {
        session_id: "s-example-host".into(),
        cwd: Some("/home/ana/project".into()),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let cancel = CancellationToken::new();
    let mut state = composer_state(10);
    let mut terminal = Terminal::new(TestBackend::new(72, 14))?;

    for c in format!("Compare with @{query}").chars() {
        let key = Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        // What the app does off the UI thread: answer each query with its id.
        if let Outcome::Query { id, text, .. } = state.handle_event(&key) {
            match runtime.block_on(refs.list_candidates(&me, &text, None, &cancel)) {
                Ok(rows) => {
                    let items = rows.iter().map(|c| {
                        session_item(c, &dsh_foreign::Origin::Dsh, DisplayZone::Local, true)
                    });
                    // Answered before the next key: no Enter waits, nothing to act on.
                    let _ = state.set_results(id, items.collect());
                }
                Err(e) => {
                    let _ = state.set_failed(id, format!("{}: {}", e.code, e.message));
                }
            }
        }
    }
    print_frame(&mut terminal, &mut state, "after typing")?;

    let tab = Event::Key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE));
    if let Outcome::Inserted { key, .. } = state.handle_event(&tab) {
        println!("inserted session {key}");
    }
    print_frame(&mut terminal, &mut state, "after Tab")?;

    let enter = Event::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    let Outcome::Submit(text) = state.handle_event(&enter) else {
        println!("nothing to submit (no session matched {query:?})");
        return Ok(());
    };
    println!("submitted: {text}");
    let submission =
        runtime.block_on(parse_submission(Some(&refs), &text)?.prepare(&me, &cancel))?;
    println!("message:   {}", readable(&submission.message));
    match &submission.context {
        Some(context) => println!(
            "context:   one message of {} bytes with the referenced snapshot",
            readable(context).len()
        ),
        None => println!("context:   none"),
    }
    Ok(())
}

/// Draws the widget at the bottom of the test screen and prints the screen.
fn print_frame(
    terminal: &mut Terminal<TestBackend>,
    state: &mut MentionInputState,
    title: &str,
) -> Result<(), Box<dyn Error>> {
    let labels = popup_labels();
    terminal.draw(|frame| {
        // The widget takes the rows it needs at the bottom of the screen.
        frame.render_stateful_widget(composer_look(&labels, true), frame.area(), state);
    })?;
    println!("── {title} ──");
    let buffer = terminal.backend().buffer();
    for y in 0..buffer.area.height {
        let line: String = (0..buffer.area.width)
            .map(|x| buffer[(x, y)].symbol())
            .collect();
        println!("{}", line.trim_end());
    }
    Ok(())
}

/// The text blocks of `message`, joined.
fn readable(message: &Message) -> String {
    message
        .content
        .iter()
        .filter_map(|block| block.as_text())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Three small sessions in `root`, each with one user message.
fn write_sessions(root: &Path) -> Result<(), Box<dyn Error>> {
    let store = SessionStore::new(root);
    let sessions = [
        ("s-login-bug", "Why does login fail after the upgrade?"),
        ("s-release-notes", "Draft the release notes for 2.4."),
        ("s-release-checklist", "What is left before the release?"),
    ];
    for (i, (id, question)) in (0_i64..).zip(sessions) {
        let header = SessionHeader::new(id, 1_700_000_000_000 + i * 60_000, None);
        let mut writer = store.open_writer(id, Some(header))?;
        writer.append(vec![NewEvent::appended(EventData::UserMessage(
            Message::user_text(question),
        ))])?;
    }
    Ok(())
}
