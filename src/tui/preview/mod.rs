//! The preview of the selected session in both pickers (under its title and detail line,
//! which the widget draws): message count, what a reference to it would cost now (the
//! reference layer's estimate, computed off the UI thread through one request slot) and its
//! newest retained messages, sanitized, newest at the bottom.

mod plan_lines;

use std::sync::Arc;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use tokio_util::sync::CancellationToken;

use crate::tui::chrome::status_line::grouped_count;
use crate::tui::event::{AppEvent, AppEventSender};
use crate::tui::request_slot::{Policy, RequestSlot};
use crate::tui::search::conversation_hits::snippet_role;
use dsh_reference::budget_plan::{BudgetPlan, PlanRoom};
use dsh_reference::{
    AgentRef, PreviewTurn, ReferenceError, ReferenceEstimate, SessionReferences, TurnRole,
    neutral_label,
};
use ratatui_mention::{ItemPreview, ItemSnippet};
use term_text::{visible_controls, visible_controls_line};

pub use plan_lines::{PlanRequest, plan_lines};

/// A preview computation the host should run: the session and the label it would be
/// referenced under (the label a mention of it carries).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreviewRequest {
    pub session_id: String,
    pub label: String,
    /// In the composer: the draft's references, for the plan the session would get among
    /// them (docs/references.md: the budget plan).
    pub plan: Option<PlanRequest>,
}

impl PreviewRequest {
    /// The request for the row `key` labelled `label` (a session title): mentions carry
    /// its neutral form.
    pub fn for_row(key: &str, label: &str) -> Self {
        PreviewRequest {
            session_id: key.to_owned(),
            label: neutral_label(label),
            plan: None,
        }
    }

    /// This request with the plan the session would get added to `draft` (of session
    /// `agent`, which has `room` left for it).
    #[must_use]
    pub fn with_plan(mut self, agent: AgentRef, draft: &str, room: PlanRoom) -> Self {
        self.plan = Some(PlanRequest::new(
            agent,
            draft,
            &self.session_id,
            &self.label,
            room,
        ));
        self
    }
}

/// An estimate answered.
#[derive(Debug)]
pub enum PreviewEvent {
    /// The size estimate for `request`, of request `ticket`, and the plan it asked for
    /// (computed when the estimate succeeded).
    Estimated {
        ticket: u64,
        request: PreviewRequest,
        result: Result<Arc<ReferenceEstimate>, ReferenceError>,
        plan: Option<Result<Option<BudgetPlan>, ReferenceError>>,
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

    /// An estimate answered: starts the one that waited, and gives the preview to show —
    /// scrolled to the match when `matched` (the selected row's key and snippet: a row
    /// found in conversations) is of the session it is for, with the plan the session gets
    /// among the draft's references when one was asked for.
    pub fn on_event(
        &mut self,
        event: PreviewEvent,
        refs: &SessionReferences,
        tx: &AppEventSender,
        matched: Option<(&str, &ItemSnippet)>,
    ) -> ItemPreview {
        let PreviewEvent::Estimated {
            ticket,
            request,
            result,
            plan,
        } = event;
        self.finish(ticket, refs, tx);
        let answer = result.map_err(|e| e.message);
        let matched = matched
            .filter(|(key, _)| *key == request.session_id)
            .map(|(_, snippet)| snippet);
        let mut preview =
            item_preview_at_match(&request.session_id, Some(answer.as_ref()), matched);
        if let (Some(asked), Some(plan)) = (&request.plan, &plan) {
            let (lines, body) = plan_lines(asked, &request.session_id, plan);
            preview.lines.extend(lines);
            preview.body.splice(0..0, body);
        }
        preview
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
        let plan = match (&request.plan, &result) {
            (Some(p), Ok(_)) => Some(
                refs.plan_for(
                    &p.agent,
                    &p.mentions,
                    &p.files,
                    p.room,
                    &CancellationToken::new(),
                )
                .await,
            ),
            _ => None,
        };
        tx.send(AppEvent::Preview(PreviewEvent::Estimated {
            ticket,
            request,
            result,
            plan,
        }));
    });
}

/// The host's preview of session `key` for the widget: what a reference would cost
/// (or that it is being estimated), then its newest retained turns.
pub fn item_preview(
    key: &str,
    answer: Option<Result<&Arc<ReferenceEstimate>, &String>>,
) -> ItemPreview {
    item_preview_at_match(key, answer, None)
}

/// [`item_preview`] of a row found in conversations (`matched`: its snippet): scrolled to
/// the message that matched.
pub fn item_preview_at_match(
    key: &str,
    answer: Option<Result<&Arc<ReferenceEstimate>, &String>>,
    matched: Option<&ItemSnippet>,
) -> ItemPreview {
    let (lines, mut body) = estimate_lines(answer);
    if let (Some(snippet), Some(Ok(estimate))) = (matched, answer) {
        body = scrolled_to_match(estimate, snippet);
    }
    ItemPreview {
        key: key.to_owned(),
        lines,
        body,
    }
}

/// Text with every run of whitespace one space (snippets are one line of their message).
fn squeezed(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The body of a conversation hit's preview: the retained turns up to the one that
/// matched (the pane shows a body's end, so it is in view) and how many newer follow; when
/// the matched message is not among them, the turns then the matched line, marked.
fn scrolled_to_match(estimate: &ReferenceEstimate, snippet: &ItemSnippet) -> Vec<Line<'static>> {
    // The snippet's longest piece between the `…` cuts, compared whitespace-squeezed.
    let needle = snippet
        .text
        .split('…')
        .map(squeezed)
        .max_by_key(String::len)
        .unwrap_or_default();
    let found = (!needle.is_empty())
        .then(|| {
            estimate
                .recent
                .iter()
                .rposition(|turn| squeezed(&turn.text).contains(&needle))
        })
        .flatten();
    let dim = Style::new().fg(Color::DarkGray);
    let Some(at) = found else {
        let mut body = turn_lines(&estimate.recent);
        body.push(Line::styled("▼ the matching message (older):", dim));
        body.push(Line::styled(
            snippet_role(snippet).to_owned(),
            Style::new().add_modifier(Modifier::BOLD),
        ));
        body.push(Line::raw(visible_controls_line(&snippet.text).into_owned()));
        return body;
    };
    let newer = estimate.recent.len() - at - 1;
    let mut body = turn_lines(estimate.recent.get(..=at).unwrap_or_default());
    if newer > 0 {
        let noun = if newer == 1 { "message" } else { "messages" };
        body.push(Line::styled(
            format!("▲ the matching message · {newer} newer {noun} below it"),
            dim,
        ));
    }
    body
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
        // In the body, which the pane wraps: a long or multi-line error is read whole.
        Some(Err(message)) => (
            Vec::new(),
            format!("cannot reference: {}", visible_controls(message))
                .lines()
                .map(|line| Line::styled(line.to_owned(), Style::new().fg(Color::Red)))
                .collect(),
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
            let mut lines = vec![
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
            match estimate.redacted_secrets {
                0 => {}
                n => lines.push(Line::styled(
                    format!(
                        "{n} {} redacted before sending",
                        if n == 1 { "secret" } else { "secrets" }
                    ),
                    Style::new().fg(Color::Yellow),
                )),
            }
            (lines, turn_lines(&estimate.recent))
        }
    }
}

/// Retained turns: `user` / `assistant` in colour (the labels the conversation hits and
/// the readable card use), then the text, controls visible.
fn turn_lines(turns: &[PreviewTurn]) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for turn in turns {
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

    fn text_of(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(ToString::to_string).collect()
    }

    /// Issue 27 minor 15: an error is in the body, which the pane wraps (the header's
    /// lines are one screen line each and were cut), one line per line of the message.
    #[test]
    fn an_error_is_wrapped_not_cut() {
        let message = format!("{} END\nsecond line \u{1b}[2J", "a long reason ".repeat(12));
        let (lines, body) = estimate_lines(Some(Err(&message)));
        assert!(lines.is_empty(), "{lines:?}");
        let body = text_of(&body);
        assert_eq!(body.len(), 2, "{body:?}");
        assert!(body[0].starts_with("cannot reference: a long reason"));
        assert!(body[0].ends_with(" END"), "{body:?}");
        assert_eq!(body[1], "second line \\x1B[2J");
    }

    fn turns(texts: &[&str]) -> ReferenceEstimate {
        ReferenceEstimate {
            total_messages: texts.len(),
            kept_messages: texts.len(),
            bytes: 100,
            budget: 65_536,
            truncated: false,
            compacted: false,
            recent: texts
                .iter()
                .enumerate()
                .map(|(i, text)| PreviewTurn {
                    role: if i % 2 == 0 {
                        TurnRole::User
                    } else {
                        TurnRole::Assistant
                    },
                    text: (*text).to_owned(),
                })
                .collect(),
            redacted_secrets: 0,
        }
    }

    /// Issue 25 item 3 (preview part): the preview says how many secrets the reference
    /// would have redacted, and nothing when none.
    #[test]
    fn the_preview_counts_redacted_secrets() {
        let mut estimate = turns(&["a", "b"]);
        let plain = text_of(&estimate_lines(Some(Ok(&Arc::new(estimate.clone())))).0);
        assert!(!plain.iter().any(|l| l.contains("redacted")), "{plain:?}");
        for (n, want) in [
            (1, "1 secret redacted before sending"),
            (3, "3 secrets redacted before sending"),
        ] {
            estimate.redacted_secrets = n;
            let lines = text_of(&estimate_lines(Some(Ok(&Arc::new(estimate.clone())))).0);
            assert_eq!(lines.last().map(String::as_str), Some(want), "{lines:?}");
        }
    }

    fn snippet(text: &str) -> ItemSnippet {
        ItemSnippet {
            lead: "user: ".into(),
            text: text.into(),
            highlights: Vec::new(),
        }
    }

    /// Issue 27 minor 16: the preview of a row found in conversations ends at the message
    /// that matched (the pane shows a body's end), saying how many newer follow; a match
    /// older than the retained turns is shown after them, marked.
    #[test]
    fn a_conversation_hit_is_previewed_at_its_match() {
        let estimate = Arc::new(turns(&[
            "how do we deploy?",
            "with the\nblue-green   script",
            "and the memory leak in the parser?",
            "fixed in 1.2",
            "thanks",
        ]));
        let answer = Some(Ok(&estimate));
        let shown =
            item_preview_at_match("s1", answer, Some(&snippet("…with the blue-green script")));
        let body = text_of(&shown.body);
        assert_eq!(
            body[body.len() - 3..],
            [
                "with the".to_owned(),
                "blue-green   script".to_owned(),
                "▲ the matching message · 3 newer messages below it".to_owned(),
            ]
        );
        let plain = item_preview("s1", answer);
        assert_eq!(
            text_of(&plain.body).last().map(String::as_str),
            Some("thanks")
        );
        let older = item_preview_at_match("s1", answer, Some(&snippet("an old \u{7}remark…")));
        let body = text_of(&older.body);
        assert_eq!(
            body[body.len() - 3..],
            [
                "▼ the matching message (older):".to_owned(),
                "user".to_owned(),
                "an old \\x07remark…".to_owned(),
            ]
        );
        assert_eq!(shown.lines, plain.lines, "the cost lines stay");
    }

    #[test]
    fn a_request_carries_the_label_a_mention_would() {
        let request = PreviewRequest::for_row("s1", "</x>\u{1b}[2J");
        assert_eq!(request.session_id, "s1");
        assert_eq!(request.label, "‹/x› [2J");
    }
}
