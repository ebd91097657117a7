//! Finding the query in a session's messages again, to show where it matched: the same
//! analyzer and the same clause rules as the index, over the stored (or freshly read) text.

use std::collections::VecDeque;
use std::ops::Range;

use dsh_reference::TurnRole;
use tantivy::tokenizer::TextAnalyzer;

use crate::query_syntax::{Clause, ParsedQuery};
use crate::session_text::IndexedMessage;
use crate::text_analysis::Term;

/// Message text scanned per session for snippets at most (bytes); bounds the cost of a hit
/// on a huge session.
const SCAN_BUDGET: usize = 4 << 20;
/// Bytes of context kept before the first match of a snippet, about.
const BEFORE: usize = 60;
/// Snippet length, about (bytes).
const WINDOW: usize = 200;

/// One matched message, cut around the match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snippet {
    pub role: TurnRole,
    pub seq: u64,
    /// Message time, Unix ms.
    pub time: i64,
    /// One line of the message (newlines and tabs as spaces; other control characters kept,
    /// for the display to make visible), `…` where it was cut.
    pub text: String,
    /// Byte ranges of `text` that matched.
    pub highlights: Vec<Range<usize>>,
}

/// Byte ranges of `text` where each clause matches, as `(clause index, range)`, in the
/// order their last term occurs. Streams the terms, keeping only the last few (as many as
/// the longest clause has), their buffers reused.
fn matches_in(
    analyzer: &mut TextAnalyzer,
    clauses: &[Clause],
    text: &str,
) -> Vec<(usize, Range<usize>)> {
    let longest = clauses.iter().map(|c| c.terms.len()).max().unwrap_or(0);
    let mut out = Vec::new();
    if longest == 0 {
        return out;
    }
    let mut recent: VecDeque<Term> = VecDeque::with_capacity(longest);
    let mut stream = analyzer.token_stream(text);
    while let Some(token) = stream.next() {
        let mut slot = if recent.len() == longest {
            recent.pop_front().unwrap_or_else(empty_term)
        } else {
            empty_term()
        };
        slot.text.clear();
        slot.text.push_str(&token.text);
        slot.position = token.position;
        slot.start = token.offset_from;
        slot.end = token.offset_to;
        recent.push_back(slot);
        let window_all = recent.make_contiguous();
        for (ci, clause) in clauses.iter().enumerate() {
            let n = clause.terms.len();
            if n == 0 || window_all.len() < n {
                continue;
            }
            let window = &window_all[window_all.len() - n..];
            if clause_matches(clause, window) {
                out.push((ci, window[0].start..window[n - 1].end));
            }
        }
    }
    out
}

fn empty_term() -> Term {
    Term {
        text: String::new(),
        position: 0,
        start: 0,
        end: 0,
    }
}

fn clause_matches(clause: &Clause, window: &[Term]) -> bool {
    let n = clause.terms.len();
    window.iter().enumerate().all(|(i, t)| {
        let consecutive = i == 0 || t.position == window[i - 1].position + 1;
        let want = &clause.terms[i];
        consecutive
            && if clause.prefix && i + 1 == n {
                t.text.starts_with(want.as_str())
            } else {
                t.text == *want
            }
    })
}

/// Whether every clause matches somewhere in `texts` (a session: its messages, id, cwd and
/// title).
pub fn all_clauses_match<'a>(
    analyzer: &mut TextAnalyzer,
    query: &ParsedQuery,
    texts: impl IntoIterator<Item = &'a str>,
) -> bool {
    let mut found = vec![false; query.clauses.len()];
    for text in texts {
        for (ci, _) in matches_in(analyzer, &query.clauses, text) {
            found[ci] = true;
        }
        if found.iter().all(|f| *f) {
            return true;
        }
    }
    found.iter().all(|f| *f)
}

/// Up to `max` snippets: the messages matching the most distinct clauses, earliest first
/// among equals, each cut around its first match.
pub fn snippets(
    analyzer: &mut TextAnalyzer,
    query: &ParsedQuery,
    messages: &[IndexedMessage],
    max: usize,
) -> Vec<Snippet> {
    let wanted = query.clauses.len();
    let mut scored: Vec<(usize, usize, Vec<Range<usize>>)> = Vec::new();
    let mut scanned = 0usize;
    let mut complete = 0usize;
    for (mi, m) in messages.iter().enumerate() {
        if scanned > SCAN_BUDGET || complete >= max {
            break;
        }
        scanned += m.text.len();
        let found = matches_in(analyzer, &query.clauses, &m.text);
        if found.is_empty() {
            continue;
        }
        let mut distinct: Vec<usize> = found.iter().map(|(c, _)| *c).collect();
        distinct.sort_unstable();
        distinct.dedup();
        if distinct.len() == wanted {
            complete += 1;
        }
        let mut ranges: Vec<Range<usize>> = found.into_iter().map(|(_, r)| r).collect();
        ranges.sort_by_key(|r| (r.start, r.end));
        scored.push((distinct.len(), mi, ranges));
    }
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.truncate(max);
    scored.sort_by_key(|s| s.1);
    scored
        .into_iter()
        .filter_map(|(_, mi, ranges)| {
            let m = messages.get(mi)?;
            Some(cut(m, &ranges))
        })
        .collect()
}

/// The window of `m` around its first match, with the matches inside it.
fn cut(m: &IndexedMessage, ranges: &[Range<usize>]) -> Snippet {
    let text = m.text.as_str();
    let first = ranges.first().map_or(0, |r| r.start);
    let mut start = floor_boundary(text, first.saturating_sub(BEFORE));
    if start > 0
        && let Some(space) = text[start..first].find(char::is_whitespace)
    {
        start += space;
        start = ceil_boundary(text, start + 1).min(first);
    }
    let first_end = ranges.first().map_or(0, |r| r.end);
    let mut end = ceil_boundary(text, (start + WINDOW).max(first_end));
    if end < text.len()
        && let Some(space) = text[first_end..end].rfind(char::is_whitespace)
    {
        end = first_end + space;
    }
    let mut out = String::with_capacity(end - start + 8);
    let lead = if start > 0 { "…" } else { "" };
    out.push_str(lead);
    out.extend(text[start..end].chars().map(|c| match c {
        '\n' | '\r' | '\t' => ' ',
        c => c,
    }));
    if end < text.len() {
        out.push('…');
    }
    let shift = lead.len();
    let highlights = ranges
        .iter()
        .filter(|r| r.start >= start && r.end <= end)
        .map(|r| r.start - start + shift..r.end - start + shift)
        .collect();
    Snippet {
        role: m.role,
        seq: m.seq,
        time: m.time,
        text: out,
        highlights,
    }
}

fn floor_boundary(text: &str, mut i: usize) -> usize {
    i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(text: &str, mut i: usize) -> usize {
    i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query_syntax::parse;
    use crate::text_analysis;
    use pretty_assertions::assert_eq;

    fn msg(seq: u64, text: &str) -> IndexedMessage {
        IndexedMessage {
            role: TurnRole::User,
            seq,
            time: 0,
            text: text.into(),
        }
    }

    fn highlighted(q: &str, messages: &[IndexedMessage]) -> Vec<(u64, Vec<String>)> {
        let mut a = text_analysis::analyzer();
        let parsed = parse(&mut a, q).unwrap();
        snippets(&mut a, &parsed, messages, 3)
            .into_iter()
            .map(|s| {
                let words = s
                    .highlights
                    .iter()
                    .map(|r| s.text[r.clone()].to_owned())
                    .collect();
                (s.seq, words)
            })
            .collect()
    }

    type Case<'a> = (&'a str, Vec<IndexedMessage>, Vec<(u64, Vec<&'a str>)>);

    #[test]
    fn matching_table() {
        let m = |t| vec![msg(1, t)];
        let cases: Vec<Case> = vec![
            ("kafka", m("We chose KAFKA."), vec![(1, vec!["KAFKA"])]),
            ("kaf", m("Kafka over Redis"), vec![(1, vec!["Kafka"])]),
            ("kaf ", m("Kafka over Redis"), vec![]),
            ("cafe", m("un café crème"), vec![(1, vec!["café"])]),
            ("CAFÉ", m("cafe"), vec![(1, vec!["cafe"])]),
            ("结账", m("结账页面简体中文本地化"), vec![(1, vec!["结账"])]),
            (
                "页面简体",
                m("结账页面简体中文本地化"),
                vec![(1, vec!["页面简体"])],
            ),
            ("面结", m("结账页面简体中文本地化"), vec![]),
            (
                "\"over redis\"",
                m("Kafka over Redis"),
                vec![(1, vec!["over Redis"])],
            ),
            ("\"redis over\"", m("Kafka over Redis"), vec![]),
            (
                "kafka redis",
                vec![msg(1, "about kafka"), msg(2, "kafka and redis")],
                vec![(1, vec!["kafka"]), (2, vec!["kafka", "redis"])],
            ),
            (
                "evil",
                m("\u{1b}[2J<script>\u{202e}evil"),
                vec![(1, vec!["evil"])],
            ),
        ];
        for (q, messages, want) in cases {
            let want: Vec<(u64, Vec<String>)> = want
                .into_iter()
                .map(|(s, w)| (s, w.into_iter().map(str::to_owned).collect()))
                .collect();
            assert_eq!(highlighted(q, &messages), want, "{q:?}");
        }
    }

    #[test]
    fn snippet_is_one_line_cut_around_the_match() {
        let long = format!(
            "{}\nthe Kafka decision\n{}",
            "word ".repeat(100),
            "tail ".repeat(100)
        );
        let mut a = text_analysis::analyzer();
        let q = parse(&mut a, "kafka").unwrap();
        let s = snippets(&mut a, &q, &[msg(4, &long)], 3);
        assert_eq!(s.len(), 1);
        let s = &s[0];
        assert!(
            s.text.starts_with('…') && s.text.ends_with('…'),
            "{:?}",
            s.text
        );
        assert!(!s.text.contains('\n'));
        assert!(s.text.len() < 300);
        assert_eq!(&s.text[s.highlights[0].clone()], "Kafka");
    }

    #[test]
    fn all_clauses_across_texts() {
        let mut a = text_analysis::analyzer();
        let q = parse(&mut a, "kafka redis").unwrap();
        assert!(all_clauses_match(&mut a, &q, ["kafka", "redis!"]));
        assert!(!all_clauses_match(&mut a, &q, ["kafka", "red"]));
    }
}
