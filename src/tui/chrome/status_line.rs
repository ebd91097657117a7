//! The status line: what the app is doing (idle / waiting / responding / preparing
//! references…, with a spinner and the turn's elapsed time while busy), the model, token
//! totals (`~` while part of them is an estimate) and the `N queued` badge while staged
//! steering messages wait for the next step.

use std::time::Duration;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use crate::tui::text_width::display_width;
use crate::tui::transcript::TokenTotals;
use dsh_search::Progress;
use term_text::truncate_to_width;
use term_text::visible_controls_line;

/// What the app is doing right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Nothing running.
    Idle,
    /// A turn is running but no reply text has arrived yet.
    Waiting,
    /// A reply is streaming.
    Responding,
    /// `prepare` is reading referenced sessions.
    Preparing,
}

impl Phase {
    /// The label shown in the status line.
    pub fn label(self) -> &'static str {
        match self {
            Phase::Idle => "idle",
            Phase::Waiting => "waiting",
            Phase::Responding => "responding",
            Phase::Preparing => "preparing references…",
        }
    }
    /// Whether the spinner turns (and the app ticks) in this phase.
    pub fn is_busy(self) -> bool {
        match self {
            Phase::Idle => false,
            Phase::Waiting | Phase::Responding | Phase::Preparing => true,
        }
    }
}

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// The status line widget.
#[derive(Debug, Clone)]
pub struct StatusLine<'a> {
    pub phase: Phase,
    pub spinner_frame: usize,
    pub model: &'a str,
    pub tokens: TokenTotals,
    pub queued: usize,
    /// Time since the running turn started; `None` when no turn runs.
    pub elapsed: Option<Duration>,
    /// A full-text index update running in the background: `indexing 3 400 / 10 000 sessions`.
    pub indexing: Option<Progress>,
}

/// `7s`, `1m 05s`, `1h 02m`.
pub fn format_elapsed(elapsed: Duration) -> String {
    let secs = elapsed.as_secs();
    match secs {
        0..=59 => format!("{secs}s"),
        60..=3599 => format!("{}m {:02}s", secs / 60, secs % 60),
        _ => format!("{}h {:02}m", secs / 3600, (secs % 3600) / 60),
    }
}

/// `1234` → `1.2k`, `1_500_000` → `1.5M`.
#[allow(clippy::cast_precision_loss)] // shown with one decimal: 2^52 tokens is far away
pub fn format_count(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => format!("{:.1}k", n as f64 / 1_000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

/// `10000` → `10 000`: exact counts grouped by three (a thin grouping that reads in every
/// locale).
pub fn grouped_count(n: impl std::fmt::Display) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

impl Widget for StatusLine<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if area.is_empty() {
            return;
        }
        let dim = Style::new().add_modifier(Modifier::DIM);
        let mut left = Vec::new();
        if self.phase.is_busy() {
            let frame = SPINNER
                .get(self.spinner_frame % SPINNER.len())
                .copied()
                .unwrap_or("*");
            left.push(Span::styled(
                format!("{frame} "),
                Style::new().fg(Color::Cyan),
            ));
            left.push(Span::styled(
                self.phase.label(),
                Style::new().fg(Color::Cyan),
            ));
            if let Some(elapsed) = self.elapsed {
                left.push(Span::styled(format!(" · {}", format_elapsed(elapsed)), dim));
            }
        } else {
            left.push(Span::styled("● ", Style::new().fg(Color::Green)));
            left.push(Span::styled(self.phase.label(), dim));
        }
        if self.queued > 0 {
            left.push(Span::raw(" "));
            left.push(Span::styled(
                format!(" {} queued ", self.queued),
                Style::new().fg(Color::Black).bg(Color::Yellow),
            ));
        }
        if let Some(p) = self.indexing {
            left.push(Span::styled(
                format!(
                    " · indexing {} / {} sessions",
                    grouped_count(p.done),
                    grouped_count(p.total)
                ),
                dim,
            ));
        }
        let about = if self.tokens.estimated { "~" } else { "" };
        let right = format!(
            "{} · {about}{} in / {about}{} out ",
            visible_controls_line(self.model),
            format_count(self.tokens.input),
            format_count(self.tokens.output)
        );
        let left_line = Line::from(left);
        let left_width = left_line.width();
        left_line.render(area, buf);
        let room = usize::from(area.width).saturating_sub(left_width + 2);
        if room >= 8 {
            let right = truncate_to_width(&right, room);
            let w = u16::try_from(display_width(&right)).unwrap_or(area.width);
            buf.set_string(area.right().saturating_sub(w), area.y, right, dim);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elapsed_is_compact() {
        for (secs, want) in [(0, "0s"), (59, "59s"), (65, "1m 05s"), (3725, "1h 02m")] {
            assert_eq!(format_elapsed(Duration::from_secs(secs)), want);
        }
    }

    #[test]
    fn indexing_progress_is_shown_with_grouped_counts() {
        let area = Rect::new(0, 0, 80, 1);
        let mut buf = Buffer::empty(area);
        StatusLine {
            phase: Phase::Idle,
            spinner_frame: 0,
            model: "m",
            tokens: TokenTotals::default(),
            queued: 0,
            elapsed: None,
            indexing: Some(Progress {
                done: 3400,
                total: 10_000,
            }),
        }
        .render(area, &mut buf);
        let row: String = (0..80).map(|x| buf[(x, 0)].symbol().to_owned()).collect();
        assert!(
            row.contains("idle · indexing 3 400 / 10 000 sessions"),
            "{row}"
        );
        assert_eq!(grouped_count(999), "999");
        assert_eq!(grouped_count(1_234_567), "1 234 567");
    }

    #[test]
    fn counts_are_compact() {
        for (n, want) in [(0, "0"), (999, "999"), (1234, "1.2k"), (1_500_000, "1.5M")] {
            assert_eq!(format_count(n), want);
        }
    }
}
