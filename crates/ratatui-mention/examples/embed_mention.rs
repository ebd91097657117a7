//! A minimal host: a static list of people as the popup's source. Type `@`, pick someone
//! with Up/Down and Tab or Enter, then Enter prints the text and exits (Esc or Ctrl+C quit).
//!
//! `cargo run -p ratatui-mention --example embed_mention`

use std::io;

use crossterm::event::{
    self, DisableBracketedPaste, EnableBracketedPaste, Event, KeyCode, KeyModifiers,
};
use crossterm::execute;
use ratatui::layout::{Constraint, Layout};
use ratatui::text::Line;
use ratatui::widgets::Block;
use ratatui::{DefaultTerminal, Frame};
use ratatui_mention::{
    DetailPart, Keep, Mention, MentionConfig, MentionInput, MentionInputState, MentionItem,
    Outcome, PopupLabels,
};

/// The source: `(handle, name, team)`.
const PEOPLE: &[(&str, &str, &str)] = &[
    ("ada", "Ada Lovelace", "analytical engines"),
    ("grace", "Grace Hopper", "compilers"),
    ("alan", "Alan Turing", "computability"),
    ("edsger", "Edsger Dijkstra", "structured programming"),
    ("barbara", "Barbara Liskov", "abstraction"),
    ("ken", "Ken Thompson", "unix"),
    ("dennis", "Dennis Ritchie", "c"),
    ("margaret", "Margaret Hamilton", "apollo software"),
    ("donald", "Donald Knuth", "typesetting"),
    ("frances", "Frances Allen", "optimizing compilers"),
];

fn main() -> io::Result<()> {
    let mut terminal = ratatui::init();
    execute!(io::stdout(), EnableBracketedPaste)?;
    let result = run(&mut terminal);
    execute!(io::stdout(), DisableBracketedPaste)?;
    ratatui::restore();
    if let Some(text) = result? {
        println!("{text}");
    }
    Ok(())
}

/// The event loop: the host owns it, the widget only answers events.
fn run(terminal: &mut DefaultTerminal) -> io::Result<Option<String>> {
    let mut state = MentionInputState::new(MentionConfig::default().with_uri_scheme("user:"));
    loop {
        terminal.draw(|frame| draw(frame, &mut state))?;
        let event = event::read()?;
        match state.handle_event(&event) {
            Outcome::Submit(text) => return Ok(Some(text)),
            // Answered at once, so no Enter ever waits for an answer: nothing to act on.
            Outcome::Query { id, text, .. } => {
                let _ = state.set_results(id, matching(&text));
            }
            Outcome::Ignored if is_quit(&event) => return Ok(None),
            _ => {}
        }
    }
}

fn is_quit(event: &Event) -> bool {
    let Event::Key(key) = event else {
        return false;
    };
    key.code == KeyCode::Esc
        || (key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL))
}

/// The people whose handle or name contains `query` (case-insensitive), as popup rows with
/// the part of the name that matched highlighted.
fn matching(query: &str) -> Vec<MentionItem> {
    let query = query.to_lowercase();
    PEOPLE
        .iter()
        .filter(|(handle, name, _)| handle.contains(&query) || name.to_lowercase().contains(&query))
        .map(|(handle, name, team)| {
            let mention = Mention::new(*name, format!("user:{handle}"));
            // ASCII names: the lowercase name's byte offsets are the name's.
            let matched = name
                .to_lowercase()
                .find(&query)
                .filter(|_| !query.is_empty());
            MentionItem::new(*handle, *name, &mention)
                .with_match_ranges(matched.map(|at| at..at + query.len()).into_iter().collect())
                .with_kind("Person ·")
                .with_detail(vec![
                    DetailPart::new(format!("@{handle}"), Keep::Start),
                    DetailPart::new(*team, Keep::End),
                ])
        })
        .collect()
}

fn draw(frame: &mut Frame, state: &mut MentionInputState) {
    let [top, rest] =
        Layout::vertical([Constraint::Length(1), Constraint::Fill(1)]).areas(frame.area());
    frame.render_widget(
        Line::from("embed_mention: a ratatui host with a static list of people"),
        top,
    );
    let input = MentionInput::new()
        .block(Block::bordered())
        .placeholder("Write a note · @ mentions a person · Esc quits")
        .labels(
            PopupLabels::default()
                .with_title(" @ people ")
                .with_no_match("nobody by that name"),
        );
    // The widget takes the rows it needs at the bottom of `rest`.
    frame.render_stateful_widget(input, rest, state);
    if let Some(at) = state.cursor_position() {
        frame.set_cursor_position(at);
    }
}
