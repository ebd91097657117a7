//! Drawing a frame: the layout is computed once, every part draws into its area, and the
//! app's own state is only read (the widgets keep their scroll and caret in their states).

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};

use super::App;
use super::keys::help_rows;
use super::layout::ScreenLayout;
use crate::agent::AgentStatus;
use crate::tui::chrome::header::Header;
use crate::tui::chrome::status_line::StatusLine;
use crate::tui::commands::COMMANDS;
use crate::tui::composer::file_section::{DIR_KEY, FILE_KEY};
use crate::tui::composer::session_items::{composer_config, composer_look};
use crate::tui::picker::ResumePicker;
use crate::tui::session::read_only::READ_ONLY_TYPED;
use crate::tui::transcript::HelpSection;
use ratatui_mention::{EnterAction, MentionItem, ResultsList};
use term_text::truncate_to_width;

impl App {
    /// Draws the whole screen into `frame` and places the terminal cursor.
    pub(super) fn render(&mut self, frame: &mut Frame<'_>) {
        let area = frame.area();
        let focused = self.picker.is_none() && self.read_only.is_none();
        let mut look = composer_look(&self.composer.labels, focused);
        if self.read_only.is_some() {
            look = look.placeholder(READ_ONLY_TYPED);
        }
        let layout = ScreenLayout::compute(area, &look, &self.composer.input);
        self.frames.too_small = layout.is_none();
        let Some(layout) = layout else {
            render_too_small(area, frame.buffer_mut());
            return;
        };
        // A read-only session shown from `/resume` takes the header and the transcript.
        if let Some(view) = self.read_only.as_mut() {
            let heading = view.heading();
            frame.render_widget(
                Header {
                    session_id: &view.id,
                    title: Some(&heading),
                    cwd: view.cwd.as_deref(),
                },
                layout.header,
            );
            view.chat.render(layout.transcript, frame.buffer_mut());
        } else {
            let title = self.chat.transcript().title().map(str::to_owned);
            frame.render_widget(
                Header {
                    session_id: &self.session.id,
                    title: title.as_deref(),
                    cwd: self.session.cwd.as_deref(),
                },
                layout.header,
            );
            self.chat.render(layout.transcript, frame.buffer_mut());
        }
        let (_, model) = self.session.agent.model();
        // A read-only session's own totals are shown with it.
        let tokens = match &self.read_only {
            Some(view) => view.chat.transcript().tokens(),
            None => self.chat.transcript().tokens(),
        };
        frame.render_widget(
            StatusLine {
                phase: self.phase(),
                spinner_frame: self.ticks.spinner_frame,
                model: &model,
                tokens,
                queued: self.session.queued,
                elapsed: self.session.turn_started.map(|t| t.elapsed()),
                indexing: self.search.progress,
            },
            layout.status,
        );
        frame.render_stateful_widget(look, layout.widget, &mut self.composer.input);
        let hint = truncate_to_width(&self.hint(), usize::from(area.width));
        // A key typed into a read-only view is answered where it is seen.
        let style = if self.read_only.as_ref().is_some_and(|v| v.typed) {
            Style::new().fg(Color::Yellow)
        } else {
            Style::new().add_modifier(Modifier::DIM)
        };
        frame
            .buffer_mut()
            .set_string(layout.hint.x, layout.hint.y, hint, style);
        let cursor = match self.picker.as_mut() {
            // Over everything between the header and the hint line: a low window still
            // shows its filter and rows.
            Some(picker) => {
                let view = ResumePicker::view();
                frame.render_stateful_widget(view, layout.overlay(), &mut picker.picker);
                picker.picker.cursor_position()
            }
            None => self.composer.input.cursor_position(),
        };
        if let Some(cursor) = cursor {
            frame.set_cursor_position(cursor);
        }
    }

    fn hint(&self) -> String {
        let input = &self.composer.input;
        let fixed = if let Some(view) = &self.read_only {
            if view.typed {
                return format!(" {READ_ONLY_TYPED} · PgUp/PgDn scroll");
            }
            " read-only · Tab/Enter reference it with @ · PgUp/PgDn scroll · Esc back"
        } else if self.picker.is_some() {
            " type to filter · ↑↓ PgUp/PgDn Home/End move · Enter open · Alt+P preview · Esc close"
        } else if self.quit_armed() {
            " Ctrl+C again to quit"
        } else if input.edit_refused() {
            " not typed: an unclosed @[ would join the mention after it (paste @[…] whole)"
        } else if input.command_popup_active() {
            " ↑↓ move · Tab complete · Enter run · Esc close"
        } else if let Some(results) = input.results() {
            return popup_hint(results);
        } else if self.submit_flow.is_preparing() {
            " Esc cancel preparing (your text comes back)"
        } else if let Some(chip) = self.composer.chip_hint() {
            return chip;
        } else if self.session.status == AgentStatus::Running {
            " Esc interrupt · Enter steer the reply · PgUp/PgDn scroll"
        } else {
            " Enter send · Shift+Enter/Ctrl+J newline · @ reference a session · /help"
        };
        fixed.to_owned()
    }
}

/// The hint line with the `@` popup open: first exactly what Enter (and Tab) would do now —
/// insert the highlighted session, file or excerpt-able hit, open the directory, nothing
/// (the row is over a limit: why), wait for the answer, or send the text as typed.
pub(super) fn popup_hint(results: &ResultsList<MentionItem>) -> String {
    let row = results.selected();
    let enter = match (results.enter_action(), row) {
        (EnterAction::Take, Some(row)) if row.key().starts_with(DIR_KEY) => {
            "Enter/Tab open this folder".to_owned()
        }
        (EnterAction::Take, Some(row)) if row.key().starts_with(FILE_KEY) => {
            "Enter/Tab insert this file".to_owned()
        }
        (EnterAction::Take, Some(row)) if row.snippet().is_some() => {
            "Enter/Tab insert this session · Alt+E only the matching exchange".to_owned()
        }
        (EnterAction::Take, _) => "Enter/Tab insert this session".to_owned(),
        (EnterAction::Blocked, Some(row)) => format!(
            "Enter/Tab insert nothing ({})",
            row.blocked().unwrap_or("over the limit")
        ),
        (EnterAction::Wait, _) => "Enter waits for the answer".to_owned(),
        _ => "Enter sends your text as typed".to_owned(),
    };
    // What Enter does comes first and whole; the moves as far as an 80-column line allows.
    let keys = match row {
        None => "Esc close",
        Some(_) if enter.len() > 48 => "Esc close",
        Some(_) if enter.len() > 32 => "↑↓ move · Esc close",
        Some(_) => "↑↓ PgUp/PgDn move · Alt+P preview · Esc close",
    };
    format!(" {enter} · {keys}")
}

/// The one line shown when the window is below the app's minimum size.
fn render_too_small(area: Rect, buf: &mut Buffer) {
    let text = "window too small";
    let width = u16::try_from(text.len())
        .unwrap_or(u16::MAX)
        .min(area.width);
    let x = area.x + (area.width - width) / 2;
    let y = area.y + area.height / 2;
    buf.set_stringn(x, y, text, usize::from(width), Style::new());
}

/// The `/help` table: commands, composer keys and app keys, from their tables.
pub(super) fn help_sections() -> Vec<HelpSection> {
    vec![
        HelpSection {
            title: "Commands".to_owned(),
            rows: COMMANDS
                .iter()
                .map(|spec| (spec.usage(), spec.help.to_owned()))
                .collect(),
        },
        HelpSection {
            title: "Keys".to_owned(),
            rows: key_rows()
                .into_iter()
                .map(|(keys, help)| (keys, help.to_owned()))
                .collect(),
        },
    ]
}

/// Every key `/help` lists ([`help_rows`] over the app's key map).
/// The README's key table is this list too (a test compares them).
pub fn key_rows() -> Vec<(String, &'static str)> {
    help_rows(composer_config(0).key_map())
}
