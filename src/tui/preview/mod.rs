//! The preview of the selected session in both pickers (under its title and detail line,
//! which the widget draws): message count, what a reference to it would cost now (the
//! reference layer's estimate, computed off the UI thread through one request slot) and its
//! newest retained messages, sanitized, newest at the bottom.

use std::sync::Arc;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use tokio_util::sync::CancellationToken;

use crate::tui::app::event::{AppEvent, AppEventSender};
use crate::tui::chrome::status_line::grouped_count;
use crate::tui::request_slot::{Policy, RequestSlot};
use dsh_reference::{
    ReferenceError, ReferenceEstimate, SessionReferences, TurnRole, neutral_label,
};
use ratatui_mention::{ItemPreview, visible_controls, visible_controls_line};

/// A preview computation the host should run: the session and the label it would be
/// referenced under (the label a mention of it carries).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreviewRequest {
    pub session_id: String,
    pub label: String,
}

impl PreviewRequest {
    /// The request for the row `key` labelled `label` (a session title): mentions carry
    /// its neutral form.
    pub fn for_row(key: &str, label: &str) -> Self {
        PreviewRequest {
            session_id: key.to_owned(),
            label: neutral_label(label),
        }
    }
}

/// An estimate answered.
#[derive(Debug)]
pub enum PreviewEvent {
    /// The size estimate for `request`, of request `ticket`.
    Estimated {
        ticket: u64,
        request: PreviewRequest,
        result: Result<Arc<ReferenceEstimate>, ReferenceError>,
    },
}

/// The size estimates the previews need, one computed at a time off the UI thread: while
/// one runs only the newest wanted one waits, so moving fast never queues up reads.
#[derive(Debug)]
pub struct Previews {
    slot: RequestSlot<PreviewRequest>,
}

impl Default for Previews {
    fn default() -> Self {
        Previews {
            slot: RequestSlot::new(Policy::OneAtATime),
        }
    }
}

impl Previews {
    /// Wants the estimate for `request` (started now, or when the running one is done).
    pub fn request(
        &mut self,
        request: PreviewRequest,
        refs: &SessionReferences,
        tx: &AppEventSender,
    ) {
        if let Some(ticket) = self.slot.request(request.clone()) {
            spawn_estimate(ticket.id, request, refs.clone(), tx.clone());
        }
    }

    /// The estimate of `ticket` arrived: starts the one that waited, if any.
    pub fn finish(&mut self, ticket: u64, refs: &SessionReferences, tx: &AppEventSender) {
        if let (_, Some((next, request))) = self.slot.finish(ticket) {
            spawn_estimate(next.id, request, refs.clone(), tx.clone());
        }
    }

    /// Whether an estimate is being computed.
    pub fn is_busy(&self) -> bool {
        self.slot.running().is_some()
    }
}

fn spawn_estimate(
    ticket: u64,
    request: PreviewRequest,
    refs: SessionReferences,
    tx: AppEventSender,
) {
    tokio::spawn(async move {
        let result = refs
            .estimate(
                &request.session_id,
                &request.label,
                &CancellationToken::new(),
            )
            .await;
        tx.send(AppEvent::Preview(PreviewEvent::Estimated {
            ticket,
            request,
            result,
        }));
    });
}

/// The host's preview of session `key` for the widget: what a reference would cost
/// (or that it is being estimated), then its newest retained turns.
pub fn item_preview(
    key: &str,
    answer: Option<Result<&Arc<ReferenceEstimate>, &String>>,
) -> ItemPreview {
    let (lines, body) = estimate_lines(answer);
    ItemPreview {
        key: key.to_owned(),
        lines,
        body,
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
                        grouped_count(estimate.approx_tokens())
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
            assert_eq!(grouped_count(n), want);
        }
    }

    #[test]
    fn a_request_carries_the_label_a_mention_would() {
        let request = PreviewRequest::for_row("s1", "</x>\u{1b}[2J");
        assert_eq!(request.session_id, "s1");
        assert_eq!(request.label, "‹/x› [2J");
    }
}
