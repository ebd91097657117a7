//! The preview of the selected session in both pickers: title, id, cwd, created, message
//! count, what a reference to it would cost now (the reference layer's estimate, computed
//! off the UI thread) and its newest retained messages, sanitized, newest at the bottom.

use std::sync::Arc;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::session_items::{DisplayZone, format_created};
use dsh_reference::{Candidate, ReferenceEstimate, TurnRole};
use ratatui_mention::untrusted::{visible_controls, visible_controls_line};

/// A preview computation the host should run: the session and the label it would be
/// referenced under (the label a mention would carry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreviewRequest {
    pub session_id: String,
    pub label: String,
}

impl PreviewRequest {
    /// The request for `row`.
    pub fn for_row(row: &Candidate) -> Self {
        PreviewRequest {
            session_id: row.session_id.clone(),
            // Mentions carry the label with its controls made visible (see the pane's insert).
            label: visible_controls_line(&row.label).into_owned(),
        }
    }
}

/// The estimate on show (or being computed) for one session.
#[derive(Debug, Clone, Default)]
pub struct PreviewState {
    /// The request answered or in flight.
    request: Option<PreviewRequest>,
    answer: Option<Result<Arc<ReferenceEstimate>, String>>,
}

impl PreviewState {
    /// The request to send for `selected`, if its estimate is neither here nor asked for.
    /// Marks it as asked.
    pub fn want(&mut self, selected: Option<&Candidate>) -> Option<PreviewRequest> {
        let request = PreviewRequest::for_row(selected?);
        if self.request.as_ref() == Some(&request) {
            return None;
        }
        self.request = Some(request.clone());
        self.answer = None;
        Some(request)
    }

    /// Forgets what was asked (e.g. the preview was hidden), so it is asked again.
    pub fn reset(&mut self) {
        *self = PreviewState::default();
    }

    /// Takes the answer to `request`; an answer for anything else is stale and dropped.
    pub fn set(
        &mut self,
        request: &PreviewRequest,
        answer: Result<Arc<ReferenceEstimate>, String>,
    ) -> bool {
        if self.request.as_ref() != Some(request) {
            return false;
        }
        self.answer = Some(answer);
        true
    }

    /// `(header, body)` lines for `row` (the selected row this state follows).
    pub fn lines(
        &self,
        row: &Candidate,
        zone: DisplayZone,
    ) -> (Vec<Line<'static>>, Vec<Line<'static>>) {
        let dim = Style::new().fg(Color::DarkGray);
        let mut header = vec![
            Line::styled(
                visible_controls_line(&row.label).into_owned(),
                Style::new().add_modifier(Modifier::BOLD),
            ),
            Line::styled(
                format!(
                    "{} · {}",
                    visible_controls_line(&row.session_id),
                    row.cwd.as_deref().map_or_else(
                        || "(no cwd)".to_owned(),
                        |c| visible_controls_line(c).into_owned()
                    )
                ),
                dim,
            ),
        ];
        let matches_row = self
            .request
            .as_ref()
            .is_some_and(|r| r.session_id == row.session_id);
        header.push(Line::styled(
            format!("created {}", format_created(row.created_at, zone)),
            dim,
        ));
        let (lines, body) = estimate_lines(
            self.answer
                .as_ref()
                .filter(|_| matches_row)
                .map(|a| a.as_ref()),
        );
        header.extend(lines);
        (header, body)
    }
}

/// What the preview says about a reference's cost under the session's own title and
/// detail: `(lines, body)` — the message count, `188 of 400 messages kept · 63.9 of 64 KiB`,
/// `≈16 359 tokens · truncated` (or why it cannot be referenced, or that it is being
/// estimated), then the newest retained turns.
pub fn estimate_lines(
    answer: Option<Result<&Arc<ReferenceEstimate>, &String>>,
) -> (Vec<Line<'static>>, Vec<Line<'static>>) {
    let dim = Style::new().fg(Color::DarkGray);
    match answer {
        None => (
            vec![Line::styled(
                "estimating the reference size…",
                dim.add_modifier(Modifier::ITALIC),
            )],
            Vec::new(),
        ),
        Some(Err(message)) => (
            vec![Line::styled(
                format!("cannot reference: {}", visible_controls_line(message)),
                Style::new().fg(Color::Red),
            )],
            Vec::new(),
        ),
        Some(Ok(estimate)) => {
            let messages = if estimate.total_messages == 1 {
                "message"
            } else {
                "messages"
            };
            let (verdict, style) = if estimate.truncated {
                ("truncated", Style::new().fg(Color::Yellow))
            } else {
                ("not truncated", Style::new().fg(Color::Green))
            };
            let lines = vec![
                Line::styled(format!("{} {messages}", estimate.total_messages), dim),
                Line::from(estimate.summary()),
                Line::from(vec![
                    Span::raw(format!(
                        "≈{} tokens · ",
                        group_digits(estimate.approx_tokens())
                    )),
                    Span::styled(verdict, style),
                ]),
            ];
            (lines, turn_lines(estimate))
        }
    }
}

/// The newest retained turns: `user` / `assistant` in colour (the labels the conversation hits and the readable card use), then the text, controls visible.
fn turn_lines(estimate: &ReferenceEstimate) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for turn in &estimate.recent {
        let (who, style) = match turn.role {
            TurnRole::User => (
                "user",
                Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            ),
            TurnRole::Assistant => (
                "assistant",
                Style::new().fg(Color::Magenta).add_modifier(Modifier::BOLD),
            ),
        };
        out.push(Line::styled(who, style));
        for line in visible_controls(&turn.text).lines() {
            out.push(Line::raw(line.to_owned()));
        }
    }
    out
}

/// `16359` → `16 359` (a thin grouping that reads in every locale).
fn group_digits(n: u64) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_are_grouped_by_three() {
        let cases = [
            (0, "0"),
            (999, "999"),
            (1000, "1 000"),
            (16_359, "16 359"),
            (1_234_567, "1 234 567"),
        ];
        for (n, want) in cases {
            assert_eq!(group_digits(n), want);
        }
    }

    #[test]
    fn stale_answers_are_dropped() {
        let row = |id: &str| Candidate {
            session_id: id.into(),
            label: "L".into(),
            cwd: None,
            created_at: 0,
        };
        let mut state = PreviewState::default();
        let a = state.want(Some(&row("a"))).unwrap();
        assert_eq!(state.want(Some(&row("a"))), None, "already asked");
        let b = state.want(Some(&row("b"))).unwrap();
        assert!(!state.set(&a, Err("late".into())), "a is stale now");
        assert!(state.set(&b, Err("boom".into())));
        let (header, _) = state.lines(&row("b"), DisplayZone::Local);
        assert!(
            header
                .iter()
                .any(|l| l.to_string().contains("cannot reference: boom"))
        );
        state.reset();
        assert!(
            state.want(Some(&row("b"))).is_some(),
            "asked again after a reset"
        );
    }
}
