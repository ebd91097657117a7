//! Recall in the transcript (docs/tui-app.md: recall and citations): a `search_references`
//! call is one compact row — "⌕ searched Label for “query”: 3 exchanges" — that the expand
//! key opens to the exact text the model received; citations `[ref K #SEQ]` in a reply are
//! shown as links `⟦Label #SEQ⟧`, and the transcript remembers where each points
//! ([`CitationTarget`]) for the key that opens the cited message.

use std::fmt::Write as _;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use term_text::{visible_controls, visible_controls_line};

use super::RenderOptions;
use dsh_reference::citation::find_citations;
use dsh_reference::recall_result::decode_recall;
use dsh_store::Message;
use dsh_store::tool_round::ToolResultBlock;

/// Opening and closing marks of a citation as shown.
const OPEN: char = '⟦';
const CLOSE: char = '⟧';

/// One `search_references` call as the transcript shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecallRow {
    /// The searched reference's label (from the result), or why the search failed.
    pub label: String,
    pub query: String,
    /// Exchanges the model received, and matches found in all.
    pub shown: usize,
    pub matched: usize,
    /// `CODE: message` of an error result.
    pub error: Option<String>,
    /// The exact text the model received.
    pub text: String,
}

impl RecallRow {
    /// The row of a tool result, when it answers `search_references` (a result it wrote, or
    /// one of its error codes).
    pub fn of(message: &Message) -> Option<(RecallRow, Vec<Recalled>)> {
        let result = ToolResultBlock::of(message)?;
        if result.is_error {
            result.text.starts_with("RECALL_").then(|| {
                let row = RecallRow {
                    label: String::new(),
                    query: String::new(),
                    shown: 0,
                    matched: 0,
                    error: Some(result.text.clone()),
                    text: result.text.clone(),
                };
                (row, Vec::new())
            })
        } else {
            let view = decode_recall(&result.text)?;
            let recalled = view
                .exchanges
                .iter()
                .flat_map(|e| e.messages.iter())
                .map(|m| Recalled {
                    reference: view.reference,
                    session_id: view.session_id.clone(),
                    seq: m.seq,
                    role: m.role.clone(),
                    text: m.text.clone(),
                })
                .collect();
            let row = RecallRow {
                label: view.label,
                query: view.query,
                shown: view.exchanges.len(),
                matched: view.matched,
                error: None,
                text: result.text,
            };
            Some((row, recalled))
        }
    }

    /// Text bytes held (the transcript's memory bound).
    pub fn bytes(&self) -> usize {
        self.label.len() + self.query.len() + self.text.len()
    }
}

/// A message a search returned this turn (a cited message a compaction replaced is shown
/// from here).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recalled {
    pub reference: usize,
    pub session_id: String,
    pub seq: u64,
    pub role: String,
    pub text: String,
}

/// Where a citation in a reply points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CitationTarget {
    /// The reference's label and session (`None` when the reply cites a reference its
    /// message did not have).
    pub label: String,
    pub session_id: Option<String>,
    pub seq: u64,
    /// The text a search of this turn returned for it, if one did.
    pub recalled: Option<Recalled>,
}

/// The rows of a recall cell: one line collapsed; the exact text below when expanded.
pub fn lines(row: &RecallRow, width: u16, options: RenderOptions) -> Vec<Line<'static>> {
    let accent = Style::new().fg(Color::Cyan);
    let dim = Style::new().add_modifier(Modifier::DIM);
    let head = if let Some(error) = &row.error {
        Line::from(vec![
            Span::styled("⌕ ", accent),
            Span::styled("search failed: ", Style::new().fg(Color::Red)),
            Span::styled(visible_controls_line(error).into_owned(), dim),
        ])
    } else {
        let s = if row.shown == 1 { "" } else { "s" };
        let more = if row.matched > row.shown {
            format!(" (of {} matches)", row.matched)
        } else {
            String::new()
        };
        Line::from(vec![
            Span::styled("⌕ ", accent),
            Span::styled("searched ", dim),
            Span::styled(visible_controls_line(&row.label).into_owned(), accent),
            Span::styled(
                format!(" for “{}”: ", visible_controls_line(&row.query)),
                dim,
            ),
            Span::raw(format!("{} exchange{s}{more}", row.shown)),
        ])
    };
    let mut out = vec![head];
    if options.expand_long {
        let body = usize::from(width.saturating_sub(2).max(1));
        for raw in visible_controls(&row.text).split('\n') {
            let chars: Vec<char> = raw.chars().collect();
            if chars.is_empty() {
                out.push(Line::styled("  ", dim));
            }
            for part in chars.chunks(body) {
                let text: String = part.iter().collect();
                out.push(Line::styled(format!("  {text}"), dim));
            }
        }
    } else {
        out.push(Line::styled(
            "  Ctrl+G shows the text the model received",
            dim,
        ));
    }
    out
}

/// `text` with each `[ref K #SEQ]` shown as `⟦Label #SEQ⟧` (`labels[K-1]`; a place the
/// message had no reference for shows `⟦ref K? #SEQ⟧`), and where each one points.
pub fn show_citations(
    text: &str,
    references: &[(String, String)],
    recalled: &[Recalled],
) -> (String, Vec<CitationTarget>) {
    let found = find_citations(text);
    if found.is_empty() {
        return (text.to_owned(), Vec::new());
    }
    let mut out = String::with_capacity(text.len());
    let mut targets = Vec::with_capacity(found.len());
    let mut at = 0;
    for c in found {
        out.push_str(text.get(at..c.range.start).unwrap_or_default());
        let reference = c.reference.checked_sub(1).and_then(|i| references.get(i));
        let label = reference.map_or_else(|| format!("ref {}?", c.reference), |r| r.1.clone());
        let _ = write!(
            out,
            "{OPEN}{} #{}{CLOSE}",
            visible_controls_line(&label),
            c.seq
        );
        targets.push(CitationTarget {
            label,
            session_id: reference.map(|r| r.0.clone()),
            seq: c.seq,
            recalled: recalled
                .iter()
                .find(|r| r.reference == c.reference && r.seq == c.seq)
                .cloned(),
        });
        at = c.range.end;
    }
    out.push_str(text.get(at..).unwrap_or_default());
    (out, targets)
}

/// `line` (not yet wrapped) with every `⟦…⟧` shown as a link (underlined, cyan).
pub fn style_citation_line(line: Line<'static>) -> Line<'static> {
    style_citations(vec![line])
        .into_iter()
        .next()
        .unwrap_or_default()
}

/// `lines` with every `⟦…⟧` shown as a link (underlined, cyan).
pub fn style_citations(lines: Vec<Line<'static>>) -> Vec<Line<'static>> {
    lines
        .into_iter()
        .map(|line| {
            if !line.spans.iter().any(|s| s.content.contains(OPEN)) {
                return line;
            }
            let style = line.style;
            let mut spans = Vec::with_capacity(line.spans.len() + 2);
            for span in line.spans {
                let mut rest: &str = &span.content;
                while let Some(start) = rest.find(OPEN) {
                    let Some(len) = rest.get(start..).and_then(|r| r.find(CLOSE)) else {
                        break;
                    };
                    let end = start + len + CLOSE.len_utf8();
                    if start > 0 {
                        spans.push(Span::styled(rest[..start].to_owned(), span.style));
                    }
                    spans.push(Span::styled(
                        rest[start..end].to_owned(),
                        span.style
                            .fg(Color::Cyan)
                            .add_modifier(Modifier::UNDERLINED),
                    ));
                    rest = &rest[end..];
                }
                if !rest.is_empty() {
                    spans.push(Span::styled(rest.to_owned(), span.style));
                }
            }
            Line::from(spans).style(style)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn citations_show_as_labelled_links_and_remember_their_target() {
        let refs = vec![("sess-a".to_owned(), "Kafka plan".to_owned())];
        let recalled = vec![Recalled {
            reference: 1,
            session_id: "sess-a".into(),
            seq: 12,
            role: "user".into(),
            text: "we chose kafka".into(),
        }];
        let (shown, targets) = show_citations(
            "It was kafka [ref 1 #12], not redis [ref 2 #3].",
            &refs,
            &recalled,
        );
        assert_eq!(
            shown,
            "It was kafka ⟦Kafka plan #12⟧, not redis ⟦ref 2? #3⟧."
        );
        assert_eq!(targets.len(), 2);
        assert_eq!(targets[0].session_id.as_deref(), Some("sess-a"));
        assert_eq!(targets[0].recalled.as_ref().unwrap().text, "we chose kafka");
        assert_eq!((targets[1].session_id.as_ref(), targets[1].seq), (None, 3));
        let styled = style_citations(vec![Line::from(shown)]);
        let spans: Vec<(String, bool)> = styled[0]
            .spans
            .iter()
            .map(|s| {
                (
                    s.content.to_string(),
                    s.style.add_modifier.contains(Modifier::UNDERLINED),
                )
            })
            .collect();
        assert_eq!(
            spans,
            [
                ("It was kafka ".to_owned(), false),
                ("⟦Kafka plan #12⟧".to_owned(), true),
                (", not redis ".to_owned(), false),
                ("⟦ref 2? #3⟧".to_owned(), true),
                (".".to_owned(), false),
            ]
        );
    }
}
