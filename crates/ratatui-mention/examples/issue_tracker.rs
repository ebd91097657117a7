//! An issue tracker's comment box: `@` mentions an issue, stored `@[Fix login crash](issue:7)`
//! by the built-in syntax; `#` adds a tag, stored in the tracker's own syntax as `#ui` and
//! drawn as the chip `#ui`. Each trigger has its popup title. Enter sends the comment: it
//! is printed with the issues and tags found in it (Esc or Ctrl+C quit).
//!
//! `cargo run -p ratatui-mention --example issue_tracker`

use std::io;
use std::time::{Duration, Instant};

use crossterm::event::{self, Event, KeyCode, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::text::Line;
use ratatui::widgets::Block;
use ratatui::{DefaultTerminal, Frame};
use ratatui_mention::{
    DetailPart, Keep, Mention, MentionConfig, MentionInput, MentionInputState, MentionItem,
    MentionSpan, MentionSyntax, Outcome, PopupLabels, Trigger,
};

/// The issues: `(number, title, state)`.
const ISSUES: &[(u32, &str, &str)] = &[
    (7, "Fix login crash", "open"),
    (12, "Dark mode for the settings page", "open"),
    (31, "Export to CSV drops the last row", "closed"),
    (42, "Slow search on large projects", "open"),
    (58, "Login page: keyboard focus is lost", "open"),
];

/// The tags a comment may carry.
const TAGS: &[&str] = &["ui", "bug", "perf", "docs", "login", "security"];

/// Tags as the tracker stores them: `#name`, a known tag's name ending at a character that
/// cannot be part of a name.
struct TagSyntax;

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

impl MentionSyntax for TagSyntax {
    fn write(&self, mention: &Mention) -> String {
        format!("#{}", mention.label)
    }

    /// Every `#name` of a known tag that starts a word: one pass over the text.
    fn find(&self, text: &str) -> Vec<MentionSpan> {
        let mut found = Vec::new();
        let mut before = None;
        for (at, c) in text.char_indices() {
            let starts_word = !before.is_some_and(is_name_char);
            before = Some(c);
            if c != '#' || !starts_word {
                continue;
            }
            let rest = &text[at + 1..];
            let len = rest.find(|c| !is_name_char(c)).unwrap_or(rest.len());
            let name = &rest[..len];
            if TAGS.contains(&name) {
                found.push(MentionSpan {
                    range: at..at + 1 + len,
                    mention: Mention::new(name, format!("tag:{name}")).with_trigger('#'),
                });
            }
        }
        found
    }
}

/// `@` writes issues in the built-in syntax (only `issue:` URIs are mentions); `#` writes
/// tags in the tracker's own, under a popup of its own.
fn config() -> MentionConfig {
    MentionConfig::default()
        .with_uri_scheme("issue:")
        .with_trigger(
            Trigger::new('#').with_syntax(TagSyntax).with_labels(
                PopupLabels::default()
                    .with_title(" # tags ")
                    .with_no_match("no such tag"),
            ),
        )
}

fn main() -> io::Result<()> {
    let mut terminal = ratatui::init();
    let result = run(&mut terminal);
    ratatui::restore();
    if let Some(text) = result? {
        println!("{text}");
        for found in config().find_mentions(&text) {
            let m = found.mention;
            println!("{} {} <{}>", m.trigger, m.label, m.uri);
        }
    }
    Ok(())
}

/// The event loop: the host owns it, the widget answers events and runs its timers at
/// `tick`.
fn run(terminal: &mut DefaultTerminal) -> io::Result<Option<String>> {
    let mut state = MentionInputState::new(config());
    loop {
        terminal.draw(|frame| draw(frame, &mut state))?;
        let _ = state.tick(Instant::now());
        let wait = state.next_tick().map_or(Duration::from_secs(60), |at| {
            at.saturating_duration_since(Instant::now())
        });
        if !event::poll(wait)? {
            continue;
        }
        let event = event::read()?;
        match state.handle_event(&event) {
            Outcome::Submit(text) => {
                // Sent: the widget records it in the Up history and clears the draft.
                state.take_submit(&text);
                return Ok(Some(text));
            }
            Outcome::Query {
                id, text, trigger, ..
            } => {
                let rows = if trigger == '#' {
                    tags(&text)
                } else {
                    issues(&text)
                };
                let _ = state.set_results(id, rows);
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

/// The issues whose number or title contains `query`.
fn issues(query: &str) -> Vec<MentionItem> {
    let query = query.to_lowercase();
    ISSUES
        .iter()
        .filter(|(n, title, _)| {
            n.to_string().contains(&query) || title.to_lowercase().contains(&query)
        })
        .map(|(n, title, state)| {
            MentionItem::new(
                n.to_string(),
                *title,
                &Mention::new(*title, format!("issue:{n}")),
            )
            .with_kind(format!("#{n}"))
            .with_detail(vec![DetailPart::new(*state, Keep::Whole)])
        })
        .collect()
}

/// The tags that start with `query`.
fn tags(query: &str) -> Vec<MentionItem> {
    let query = query.to_lowercase();
    TAGS.iter()
        .filter(|tag| tag.starts_with(&query))
        .map(|tag| MentionItem::new(*tag, *tag, &Mention::new(*tag, format!("tag:{tag}"))))
        .collect()
}

fn draw(frame: &mut Frame, state: &mut MentionInputState) {
    let [top, rest] =
        Layout::vertical([Constraint::Length(1), Constraint::Fill(1)]).areas(frame.area());
    frame.render_widget(
        Line::from("issue_tracker: @ an issue, # a tag · Enter sends · Esc quits"),
        top,
    );
    let input = MentionInput::new()
        .block(Block::bordered().title(" comment on #42 "))
        .placeholder("Write a comment…")
        .labels(PopupLabels::default().with_title(" @ issues "));
    frame.render_stateful_widget(input, rest, state);
    if let Some(at) = state.cursor_position() {
        frame.set_cursor_position(at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyEvent;

    fn type_str(state: &mut MentionInputState, text: &str) {
        for c in text.chars() {
            let key = Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
            if let Outcome::Query {
                id, text, trigger, ..
            } = state.handle_event(&key)
            {
                let rows = if trigger == '#' {
                    tags(&text)
                } else {
                    issues(&text)
                };
                let _ = state.set_results(id, rows);
            }
        }
    }

    #[test]
    fn a_tag_is_stored_and_shown_as_hash_name_and_an_issue_as_a_link() {
        let mut state = MentionInputState::new(config());
        let tab = Event::Key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE));
        type_str(&mut state, "see @crash");
        assert!(matches!(state.handle_event(&tab), Outcome::Inserted { .. }));
        type_str(&mut state, "#u");
        assert!(matches!(state.handle_event(&tab), Outcome::Inserted { .. }));
        assert_eq!(state.draft(), "see @[Fix login crash](issue:7) #ui ");
        let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(60, 6))
            .expect("a test terminal");
        terminal
            .draw(|frame| draw(frame, &mut state))
            .expect("drawn");
        let shown = format!("{}", terminal.backend());
        assert!(shown.contains("see @Fix login crash #ui"), "{shown}");
        let found: Vec<(char, String)> = config()
            .find_mentions(&state.draft())
            .into_iter()
            .map(|f| (f.mention.trigger, f.mention.uri))
            .collect();
        assert_eq!(
            found,
            [('@', "issue:7".to_owned()), ('#', "tag:ui".to_owned())]
        );
    }
}
