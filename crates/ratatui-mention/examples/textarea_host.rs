//! A host that already edits with `ratatui_textarea::TextArea` adds `@` mentions: type `@`
//! and a name, pick with Up/Down and Tab or Enter; the textarea keeps its own keys, undo
//! (Ctrl+U) and yank. A mention is atomic: the caret steps over it, one Backspace removes
//! it. Ctrl+S prints the text and the mentions in it; Esc or Ctrl+C quits.
//!
//! `cargo run -p ratatui-mention --features textarea --example textarea_host`

use std::io;

use crossterm::event::{self, Event, KeyCode, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::text::Line;
use ratatui::widgets::Block;
use ratatui::{DefaultTerminal, Frame};
use ratatui_mention::{
    DetailPart, Keep, Mention, MentionConfig, MentionItem, Outcome, TextAreaMentions, TextAreaPopup,
};
use ratatui_textarea::TextArea;

/// The source: `(handle, name, team)`.
const PEOPLE: &[(&str, &str, &str)] = &[
    ("ada", "Ada Lovelace", "analytical engines"),
    ("grace", "Grace Hopper", "compilers"),
    ("alan", "Alan Turing", "computability"),
    ("barbara", "Barbara Liskov", "abstraction"),
    ("margaret", "Margaret Hamilton", "apollo software"),
];

fn main() -> io::Result<()> {
    let mut terminal = ratatui::init();
    let result = run(&mut terminal);
    ratatui::restore();
    if let Some(text) = result? {
        println!("{text}");
        for found in config().find_mentions(&text) {
            println!("mentions {} <{}>", found.mention.label, found.mention.uri);
        }
    }
    Ok(())
}

fn run(terminal: &mut DefaultTerminal) -> io::Result<Option<String>> {
    let mut textarea = TextArea::default();
    textarea.set_block(Block::bordered().title(" notes · @ mentions a person · Ctrl+S done "));
    let mut mentions = TextAreaMentions::new(config());
    loop {
        terminal.draw(|frame| draw(frame, &textarea, &mut mentions))?;
        let event = event::read()?;
        if let Event::Key(key) = &event {
            let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
            match key.code {
                KeyCode::Char('s') if ctrl => return Ok(Some(textarea.lines().join("\n"))),
                KeyCode::Char('c') if ctrl => return Ok(None),
                KeyCode::Esc if !mentions.popup_active() => return Ok(None),
                _ => {}
            }
        }
        let outcome = mentions.handle_event(&mut textarea, &event);
        // The rows are at hand: answered at once, so no Tab ever waits for them.
        if let Outcome::Query { id, text, .. } = outcome {
            let _ = mentions.set_results(&mut textarea, id, people(&text));
        }
    }
}

/// Mentions of people, written `@[name](user:handle)`.
fn config() -> MentionConfig {
    MentionConfig::default().with_uri_scheme("user:")
}

/// The people whose handle or name contains `query`, the matched part of the name marked.
fn people(query: &str) -> Vec<MentionItem> {
    let query = query.to_lowercase();
    PEOPLE
        .iter()
        .filter(|(handle, name, _)| handle.contains(&query) || name.to_lowercase().contains(&query))
        .map(|(handle, name, team)| {
            let at = name
                .to_lowercase()
                .find(&query)
                .filter(|_| !query.is_empty());
            MentionItem::new(
                *handle,
                *name,
                &Mention::new(*name, format!("user:{handle}")),
            )
            .with_match_ranges(at.map(|a| a..a + query.len()).into_iter().collect())
            .with_detail(vec![DetailPart::new(*team, Keep::End)])
        })
        .collect()
}

fn draw(frame: &mut Frame, textarea: &TextArea, mentions: &mut TextAreaMentions) {
    let [top, editor] =
        Layout::vertical([Constraint::Fill(1), Constraint::Length(8)]).areas(frame.area());
    frame.render_widget(
        Line::from("textarea_host: ratatui-textarea with @ mentions"),
        top,
    );
    frame.render_widget(textarea, editor);
    // The popup sits above the textarea (below when there is no room).
    frame.render_stateful_widget(TextAreaPopup::new(editor), frame.area(), mentions);
}
