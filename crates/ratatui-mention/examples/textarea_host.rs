//! A host that already edits with `ratatui_textarea::TextArea` adds `@` mentions of people
//! and `#` tags: type `@` and a name (or `#` and a tag), pick with Up/Down and Tab or Enter;
//! the textarea keeps its own keys, undo (Ctrl+U) and yank. The textarea is drawn through
//! `TextAreaMentions::widget`, so a mention shows as its chip (`@Ada Lovelace`, `#ui`)
//! while the text holds `@[Ada Lovelace](user:ada)`. A mention is atomic: the caret steps
//! over it, one Backspace (or Ctrl+W) removes it. Ctrl+S prints the text and the mentions
//! in it; Esc or Ctrl+C quits.
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

/// The tags `#` offers.
const TAGS: &[&str] = &["ui", "backend", "docs", "urgent"];

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
    textarea.set_block(Block::bordered().title(" notes · @ a person · # a tag · Ctrl+S done "));
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
        if let Outcome::Query {
            id, text, trigger, ..
        } = outcome
        {
            let rows = if trigger == '#' {
                tags(&text)
            } else {
                people(&text)
            };
            let _ = mentions.set_results(&mut textarea, id, rows);
        }
    }
}

/// Mentions of people, written `@[name](user:handle)`, and tags, `#[name](tag:name)`.
fn config() -> MentionConfig {
    MentionConfig::default()
        .with_triggers(['@', '#'])
        .with_uri_scheme("user:")
        .with_uri_scheme("tag:")
}

/// The tags starting with `query`.
fn tags(query: &str) -> Vec<MentionItem> {
    TAGS.iter()
        .filter(|tag| tag.starts_with(&query.to_lowercase()))
        .map(|tag| MentionItem::new(*tag, *tag, &Mention::new(*tag, format!("tag:{tag}"))))
        .collect()
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
    // In place of `frame.render_widget(textarea, editor)`: the same textarea, its mentions
    // drawn as chips.
    frame.render_widget(mentions.widget(textarea), editor);
    // The popup sits above the textarea (below when there is no room).
    frame.render_stateful_widget(TextAreaPopup::new(editor), frame.area(), mentions);
}
