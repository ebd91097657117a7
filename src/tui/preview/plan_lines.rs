//! The budget plan in a session's preview (docs/references.md: the budget plan): what the
//! plan would give the selected session among the draft's other references, in what the
//! model's context window has left now — its budget, messages kept and left out and tokens
//! when the plan lowers it, or that sending would be refused.

use ratatui::style::{Color, Style};
use ratatui::text::Line;

use dsh_reference::budget_plan::{BudgetPlan, PlanRoom};
use dsh_reference::file_mention::{FileMention, scan_file_mentions};
use dsh_reference::{
    AgentRef, ErrorCode, Mentioned, Reference, ReferenceError, kib, parse_message,
};
use term_text::visible_controls;

use crate::tui::chrome::status_line::grouped_count;

/// What the plan of a preview needs: the draft's references with the selected session
/// last, its file mentions, and the room the draft has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanRequest {
    pub agent: AgentRef,
    pub mentions: Vec<Mentioned>,
    pub files: Vec<FileMention>,
    pub room: PlanRoom,
}

impl PlanRequest {
    /// The plan request of session `session_id` (mentioned as `label`) added to `draft`
    /// (a draft that does not parse plans the session alone).
    pub fn new(
        agent: AgentRef,
        draft: &str,
        session_id: &str,
        label: &str,
        room: PlanRoom,
    ) -> Self {
        let (mut mentions, files) = match parse_message(draft) {
            Ok(parsed) => {
                let files = scan_file_mentions(draft, &parsed.spans);
                (parsed.mentions, files)
            }
            Err(_) => (Vec::new(), Vec::new()),
        };
        mentions.push(Mentioned::Session(Reference {
            session_id: session_id.to_owned(),
            label: Some(label.to_owned()),
        }));
        PlanRequest {
            agent,
            mentions,
            files,
            room,
        }
    }

    /// The distinct references the message would carry (a session mentioned twice is one,
    /// as prepare counts them).
    fn references(&self) -> usize {
        let key = |m: &Mentioned| match m {
            Mentioned::Session(r) => (r.session_id.clone(), None),
            Mentioned::Excerpt(e) => (e.range.session_id.clone(), Some(e.range.clone())),
        };
        let mut seen = Vec::new();
        for m in &self.mentions {
            let k = key(m);
            if !seen.contains(&k) {
                seen.push(k);
            }
        }
        seen.len()
    }
}

/// The preview's plan lines for session `session_id`, then lines for the top of its body
/// (an error, wrapped by the pane).
pub fn plan_lines(
    request: &PlanRequest,
    session_id: &str,
    plan: &Result<Option<BudgetPlan>, ReferenceError>,
) -> (Vec<Line<'static>>, Vec<Line<'static>>) {
    let dim = Style::new().fg(Color::DarkGray);
    // Short enough for a narrow preview pane: the lines are not wrapped.
    let with = match request.references() {
        0 | 1 => String::new(),
        n => format!(" ({n} references)"),
    };
    let fits = || Line::styled(format!("plan: fits the window{with}"), dim);
    match plan {
        Ok(None) if request.references() <= 1 => (Vec::new(), Vec::new()),
        Ok(None) => (vec![fits()], Vec::new()),
        Ok(Some(plan)) => {
            let line = plan
                .sources
                .iter()
                .rev()
                .find(|s| s.session_id == session_id);
            match line {
                Some(s) if s.budget_bytes < plan.max_reference_bytes => {
                    let yellow = Style::new().fg(Color::Yellow);
                    let lines = vec![
                        Line::styled(
                            format!("plan: lowered to {} KiB{with}", kib(s.budget_bytes)),
                            yellow,
                        ),
                        Line::styled(
                            format!(
                                "{} kept · {} omitted · ≈{} tokens",
                                s.retained_messages,
                                s.omitted_messages,
                                grouped_count(s.tokens)
                            ),
                            yellow,
                        ),
                    ];
                    (lines, Vec::new())
                }
                _ => (vec![fits()], Vec::new()),
            }
        }
        // Only the plan's own refusal: the popup and the send say every other error (too
        // many references, a session that cannot be read) in their own words.
        Err(e) if e.code == ErrorCode::BudgetExceeded => {
            let red = Style::new().fg(Color::Red);
            (
                vec![
                    Line::styled(format!("plan: sending would fail{with}"), red),
                    Line::styled(e.code.as_str(), red),
                ],
                visible_controls(&e.message)
                    .lines()
                    .map(|l| Line::styled(l.to_owned(), red))
                    .collect(),
            )
        }
        Err(_) => (Vec::new(), Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_reference::budget_plan::PlannedSource;
    use dsh_reference::format_mention;
    use pretty_assertions::assert_eq;

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(ToString::to_string).collect()
    }

    fn request(draft: &str) -> PlanRequest {
        let agent = AgentRef {
            session_id: "me".into(),
            cwd: None,
        };
        let room = PlanRoom {
            input_tokens: 1000,
            window_tokens: 0,
            draft_tokens: 0,
        };
        PlanRequest::new(agent, draft, "c", "C", room)
    }

    fn source(id: &str, budget_bytes: usize) -> PlannedSource {
        PlannedSource {
            session_id: id.into(),
            label: id.to_uppercase(),
            budget_bytes,
            minimum_bytes: 100,
            holds_bytes: 65_536,
            retained_messages: 12,
            omitted_messages: 88,
            tokens: 7_004,
        }
    }

    #[test]
    fn the_draft_s_references_come_first_and_the_session_last() {
        let draft = format!(
            "{} and {} @src/main.rs @",
            format_mention("a", None),
            format_mention("b", Some("B"))
        );
        let r = request(&draft);
        let ids: Vec<&str> = r
            .mentions
            .iter()
            .filter_map(|m| match m {
                Mentioned::Session(s) => Some(s.session_id.as_str()),
                Mentioned::Excerpt(_) => None,
            })
            .collect();
        assert_eq!(ids, ["a", "b", "c"]);
        assert_eq!(r.files.len(), 1);
        assert_eq!(r.references(), 3);
        // A session already in the draft is one reference.
        let again = request(&format!("{} @", format_mention("c", Some("C"))));
        assert_eq!(again.references(), 1);
    }

    #[test]
    fn the_plan_says_what_it_lowered_or_that_sending_would_fail() {
        let alone = request("what now? @");
        assert_eq!(plan_lines(&alone, "c", &Ok(None)), (Vec::new(), Vec::new()));
        let two = request(&format!("{} @", format_mention("a", None)));
        assert_eq!(
            text(&plan_lines(&two, "c", &Ok(None)).0),
            ["plan: fits the window (2 references)"]
        );
        let plan = BudgetPlan {
            share_bytes: 40_000,
            max_reference_bytes: 65_536,
            sources: vec![source("a", 65_536), source("c", 21_504)],
        };
        assert_eq!(
            text(&plan_lines(&two, "c", &Ok(Some(plan.clone()))).0),
            [
                "plan: lowered to 21 KiB (2 references)",
                "12 kept · 88 omitted · ≈7 004 tokens"
            ]
        );
        assert_eq!(
            text(&plan_lines(&two, "a", &Ok(Some(plan))).0),
            ["plan: fits the window (2 references)"]
        );
        let refused =
            ReferenceError::new(ErrorCode::BudgetExceeded, "A needs 9 bytes\nthe share is 3");
        let (lines, body) = plan_lines(&two, "c", &Err(refused));
        assert_eq!(
            text(&lines),
            [
                "plan: sending would fail (2 references)",
                "SESSION_REFERENCE_BUDGET_EXCEEDED"
            ]
        );
        assert_eq!(text(&body), ["A needs 9 bytes", "the share is 3"]);
        // Other errors are the popup's and the send's to say.
        let too_many = ReferenceError::new(ErrorCode::TooMany, "at most 3");
        assert_eq!(
            plan_lines(&two, "c", &Err(too_many)),
            (Vec::new(), Vec::new())
        );
    }
}
