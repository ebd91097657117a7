//! The `/resume` session picker: a list of sessions (title, id, cwd, creation time) with
//! Up/Down to move, Enter to open and Esc to close.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Widget};

use dsh_store::StoreError;
use ratatui_mention::untrusted::visible_controls_line;
use ratatui_mention::wrap::truncate_to_width;

/// One session in the picker.
#[derive(Debug, Clone, PartialEq)]
pub struct PickerRow {
    pub session_id: String,
    pub title: Option<String>,
    pub cwd: Option<String>,
    pub created_at: i64,
    /// Origin badge of another tool's (read-only) session: `claude`, `codex`.
    pub badge: Option<&'static str>,
}

/// What a key did to the picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PickerOutcome {
    /// Still open (maybe moved).
    Continue,
    /// Open this session.
    Open(String),
    /// Closed without choosing.
    Close,
}

/// Picker state: rows (or why loading failed) and the selection.
#[derive(Debug)]
pub struct SessionPicker {
    rows: Option<Result<Vec<PickerRow>, StoreError>>,
    selected: usize,
    /// The session currently open, marked in the list.
    current: String,
}

impl SessionPicker {
    /// A picker waiting for its rows.
    pub fn loading(current: impl Into<String>) -> Self {
        SessionPicker {
            rows: None,
            selected: 0,
            current: current.into(),
        }
    }

    /// Rows arrived (or failed).
    pub fn set_rows(&mut self, rows: Result<Vec<PickerRow>, StoreError>) {
        self.rows = Some(rows);
        self.selected = 0;
    }

    fn len(&self) -> usize {
        match &self.rows {
            Some(Ok(rows)) => rows.len(),
            Some(Err(_)) | None => 0,
        }
    }

    /// Handle one key.
    pub fn handle_key(&mut self, key: &KeyEvent) -> PickerOutcome {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let len = self.len();
        let up = key.code == KeyCode::Up || (ctrl && key.code == KeyCode::Char('p'));
        let down = key.code == KeyCode::Down || (ctrl && key.code == KeyCode::Char('n'));
        if key.code == KeyCode::Esc || (ctrl && key.code == KeyCode::Char('c')) {
            return PickerOutcome::Close;
        }
        if up && len > 0 {
            self.selected = (self.selected + len - 1) % len;
        } else if down && len > 0 {
            self.selected = (self.selected + 1) % len;
        } else if key.code == KeyCode::Enter
            && let Some(Ok(rows)) = &self.rows
            && let Some(row) = rows.get(self.selected)
        {
            return PickerOutcome::Open(row.session_id.clone());
        }
        PickerOutcome::Continue
    }

    /// Render as a bordered overlay filling `area`.
    pub fn render(&self, area: Rect, buf: &mut Buffer) {
        if area.height < 3 || area.width < 10 {
            return;
        }
        Clear.render(area, buf);
        let block = Block::default()
            .borders(Borders::ALL)
            .title(" Resume a session · ↑↓ move · Enter open · Esc close ");
        let inner = block.inner(area);
        block.render(area, buf);
        let dim = Style::new().add_modifier(Modifier::DIM);
        let width = usize::from(inner.width);
        let rows = match &self.rows {
            None => {
                buf.set_string(inner.x, inner.y, "loading sessions…", dim);
                return;
            }
            Some(Err(e)) => {
                let text = truncate_to_width(&visible_controls_line(&e.to_string()), width);
                buf.set_string(inner.x, inner.y, text, Style::new().fg(Color::Red));
                return;
            }
            Some(Ok(rows)) if rows.is_empty() => {
                buf.set_string(inner.x, inner.y, "no sessions yet", dim);
                return;
            }
            Some(Ok(rows)) => rows,
        };
        // Two lines per row; keep the selection visible.
        let per_page = usize::from(inner.height / 2).max(1);
        let first = self.selected.saturating_sub(per_page - 1);
        for (i, row) in rows.iter().enumerate().skip(first).take(per_page) {
            let y = inner.y + u16::try_from((i - first) * 2).unwrap_or(0);
            let selected = i == self.selected;
            let marker = if selected { "› " } else { "  " };
            let title = row.title.as_deref().unwrap_or(&row.session_id);
            let mut title = visible_controls_line(title).into_owned();
            if row.session_id == self.current {
                title.push_str(" (open)");
            }
            let style = if selected {
                Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD)
            } else {
                Style::new()
            };
            let badge = row.badge.map(|b| format!("[{b}] ")).unwrap_or_default();
            let badge_cells = unicode_width::UnicodeWidthStr::width(badge.as_str());
            let first_line = Line::from(vec![
                Span::styled(marker, style),
                Span::styled(badge, Style::new().fg(Color::Magenta)),
                Span::styled(
                    truncate_to_width(&title, width.saturating_sub(2 + badge_cells)),
                    style,
                ),
            ]);
            first_line.render(Rect::new(inner.x, y, inner.width, 1), buf);
            if y + 1 < inner.bottom() {
                let detail = format!(
                    "{} · {} · {}",
                    visible_controls_line(&row.session_id),
                    row.cwd.as_deref().map_or_else(
                        || "(no cwd)".to_owned(),
                        |c| visible_controls_line(c).into_owned()
                    ),
                    local_time(row.created_at)
                );
                let detail = truncate_to_width(&detail, width.saturating_sub(2));
                buf.set_string(inner.x + 2, y + 1, detail, dim);
            }
        }
    }
}

/// Unix milliseconds as local `YYYY-MM-DD HH:MM`.
pub fn local_time(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).map_or_else(
        || "?".to_owned(),
        |t| {
            t.with_timezone(&chrono::Local)
                .format("%Y-%m-%d %H:%M")
                .to_string()
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn moves_wrap_and_enter_opens_the_selection() {
        let mut p = SessionPicker::loading("a");
        assert_eq!(p.handle_key(&key(KeyCode::Enter)), PickerOutcome::Continue);
        let row = |id: &str| PickerRow {
            session_id: id.into(),
            title: None,
            cwd: None,
            created_at: 0,
            badge: None,
        };
        p.set_rows(Ok(vec![row("a"), row("b"), row("c")]));
        assert_eq!(p.handle_key(&key(KeyCode::Up)), PickerOutcome::Continue);
        assert_eq!(
            p.handle_key(&key(KeyCode::Enter)),
            PickerOutcome::Open("c".into())
        );
        p.handle_key(&key(KeyCode::Down));
        p.handle_key(&key(KeyCode::Down));
        assert_eq!(
            p.handle_key(&key(KeyCode::Enter)),
            PickerOutcome::Open("b".into())
        );
        assert_eq!(p.handle_key(&key(KeyCode::Esc)), PickerOutcome::Close);
    }

    #[test]
    fn foreign_rows_show_their_badge() {
        let mut p = SessionPicker::loading("a");
        p.set_rows(Ok(vec![PickerRow {
            session_id: "claude-code:u1".into(),
            title: Some("Fix checkout".into()),
            cwd: None,
            created_at: 0,
            badge: Some("claude"),
        }]));
        let area = Rect::new(0, 0, 60, 5);
        let mut buf = Buffer::empty(area);
        p.render(area, &mut buf);
        let line: String = (0..60).map(|x| buf[(x, 1)].symbol().to_owned()).collect();
        assert!(line.contains("› [claude] Fix checkout"), "{line}");
    }
}
