//! Finding the query in a session's messages again, to show where it matched: the same
//! analyzer and the same clause rules as the index, over the stored (or freshly read) text.
//!
//! A snippet says what the message is — the person's (`user`), the assistant's, or a
//! compaction `summary` standing for what it replaced (shown without its framing) — and
//! which message of the conversation it is (`number`, 1 for the first message of the
//! conversation as the model sees it), not its event seq.

use std::collections::VecDeque;
use std::ops::Range;

use dsh_store::projection::TurnRole;
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

/// What a snippet's message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnippetRole {
    /// What the person said.
    User,
    /// The assistant's reply.
    Assistant,
    /// A compaction summary: the checkpoint standing for the conversation before it.
    Summary,
}

impl SnippetRole {
    /// The role of `m`.
    pub fn of(m: &IndexedMessage) -> Self {
        match (m.role, m.checkpoint) {
            (_, true) => SnippetRole::Summary,
            (TurnRole::User, false) => SnippetRole::User,
            (TurnRole::Assistant, false) => SnippetRole::Assistant,
        }
    }

    /// The label shown and written: `user`, `assistant`, `summary`.
    pub fn as_str(self) -> &'static str {
        match self {
            SnippetRole::User => "user",
            SnippetRole::Assistant => "assistant",
            SnippetRole::Summary => "summary",
        }
    }
}

/// One matched message, cut around the match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snippet {
    pub role: SnippetRole,
    /// Which message of the conversation it is, from 1.
    pub number: u64,
    /// The event's seq in its log.
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
/// order their last term occurs.
fn matches_in(
    analyzer: &mut TextAnalyzer,
    clauses: &[Clause],
    text: &str,
) -> Vec<(usize, Range<usize>)> {
    matches_positioned(analyzer, clauses, text)
        .into_iter()
        .map(|(ci, range, ..)| (ci, range))
        .collect()
}

/// How often each clause matches in `text` (one count per clause, in clause order).
pub(crate) fn clause_hits(
    analyzer: &mut TextAnalyzer,
    clauses: &[Clause],
    text: &str,
) -> Vec<usize> {
    let mut counts = vec![0usize; clauses.len()];
    for (ci, _) in matches_in(analyzer, clauses, text) {
        if let Some(n) = counts.get_mut(ci) {
            *n += 1;
        }
    }
    counts
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

/// Words between two clauses still counted as said together.
const NEAR: usize = 3;

/// How a message says consecutive clauses (`i`, `i + 1`) together, in that order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
struct Together {
    /// Pairs said as a phrase.
    phrases: usize,
    /// Pairs said within [`NEAR`] words (phrases included).
    near: usize,
}

/// How `found` (clause index, range, first position, last position) says consecutive
/// clauses together, and where the first phrase (else near pair) starts.
fn together(found: &[(usize, Range<usize>, u64, u64)]) -> (Together, Option<usize>) {
    let mut t = Together::default();
    let (mut first_phrase, mut first_near): (Option<usize>, Option<usize>) = (None, None);
    let earliest = |at: Option<usize>, start: usize| Some(at.map_or(start, |f| f.min(start)));
    for (a, ra, _, a_end) in found {
        let gaps = found
            .iter()
            .filter(|(b, _, b_start, _)| *b == a + 1 && *b_start > *a_end)
            .map(|(_, _, b_start, _)| b_start - a_end);
        let Some(gap) = gaps.min() else { continue };
        if gap == 1 {
            t.phrases += 1;
            first_phrase = earliest(first_phrase, ra.start);
        }
        if gap <= NEAR as u64 + 1 {
            t.near += 1;
            first_near = earliest(first_near, ra.start);
        }
    }
    (t, first_phrase.or(first_near))
}

/// Up to `max` snippets of `messages`, best first: the messages matching the most distinct
/// clauses, then those saying the most of the query's consecutive words as a phrase, then
/// near each other (in the query's order), earliest first among equals; each cut around its
/// first match (its first phrase, when it has one). A message's number is its own place in
/// the conversation ([`IndexedMessage::number`], given when a read numbered it — pieces of a
/// long session carry theirs); a message never numbered counts as its place in `messages`
/// from 1 (a whole conversation given in order).
pub fn snippets(
    analyzer: &mut TextAnalyzer,
    query: &ParsedQuery,
    messages: &[IndexedMessage],
    max: usize,
) -> Vec<Snippet> {
    let wanted = query.clauses.len();
    let mut scored: Vec<Scored> = Vec::new();
    let mut scanned = 0usize;
    // Messages with every clause, its words together: nothing better can come later.
    let mut best = 0usize;
    for (mi, m) in messages.iter().enumerate() {
        if scanned > SCAN_BUDGET || best >= max {
            break;
        }
        scanned += m.text.len();
        let found = matches_positioned(analyzer, &query.clauses, &m.text);
        if found.is_empty() {
            continue;
        }
        let mut distinct: Vec<usize> = found.iter().map(|(c, ..)| *c).collect();
        distinct.sort_unstable();
        distinct.dedup();
        let (pairs, phrase_at) = together(&found);
        if distinct.len() == wanted && pairs.phrases + 1 >= wanted {
            best += 1;
        }
        let mut ranges: Vec<Range<usize>> = found.into_iter().map(|(_, r, ..)| r).collect();
        ranges.sort_by_key(|r| (r.start, r.end));
        scored.push(Scored {
            distinct: distinct.len(),
            pairs,
            index: mi,
            ranges,
            focus: phrase_at,
        });
    }
    scored.sort_by(|a, b| {
        b.distinct
            .cmp(&a.distinct)
            .then(b.pairs.cmp(&a.pairs))
            .then(a.index.cmp(&b.index))
    });
    scored.truncate(max);
    scored
        .into_iter()
        .filter_map(|s| {
            let m = messages.get(s.index)?;
            let number = match m.number {
                0 => (s.index as u64).saturating_add(1),
                n => n,
            };
            Some(cut(m, number, &s.ranges, s.focus))
        })
        .collect()
}

/// A message matching the query, and how well.
struct Scored {
    distinct: usize,
    pairs: Together,
    index: usize,
    ranges: Vec<Range<usize>>,
    /// Where its first phrase starts, if it has one.
    focus: Option<usize>,
}

/// Where each clause matches in `text`: (clause index, byte range, first and last term
/// position), in the order their last term occurs. Streams the terms, keeping only the last
/// few (as many as the longest clause has), their buffers reused.
fn matches_positioned(
    analyzer: &mut TextAnalyzer,
    clauses: &[Clause],
    text: &str,
) -> Vec<(usize, Range<usize>, u64, u64)> {
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
                out.push((
                    ci,
                    window[0].start..window[n - 1].end,
                    window[0].position as u64,
                    window[n - 1].position as u64,
                ));
            }
        }
    }
    out
}

/// The window of `m` (message `number` of its conversation) around its first match, or
/// around `focus` (where the first phrase starts), with the matches inside it.
fn cut(m: &IndexedMessage, number: u64, ranges: &[Range<usize>], focus: Option<usize>) -> Snippet {
    let text = m.text.as_str();
    let first = focus.unwrap_or_else(|| ranges.first().map_or(0, |r| r.start));
    let mut start = floor_boundary(text, first.saturating_sub(BEFORE));
    if start > 0
        && let Some(space) = text[start..first].find(char::is_whitespace)
    {
        start += space;
        start = ceil_boundary(text, start + 1).min(first);
    }
    let first_end = ranges
        .iter()
        .find(|r| r.start >= first)
        .map_or(first, |r| r.end);
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
        role: SnippetRole::of(m),
        number,
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
            checkpoint: false,
            seq,
            time: 0,
            text: text.into(),
            number: 0,
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
                vec![(2, vec!["kafka", "redis"]), (1, vec!["kafka"])],
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
    fn snippets_say_what_and_which_message_it_is() {
        let mut a = text_analysis::analyzer();
        let q = parse(&mut a, "bucket ").unwrap();
        let summary = IndexedMessage {
            checkpoint: true,
            ..msg(900, "one bucket per key")
        };
        let reply = IndexedMessage {
            role: TurnRole::Assistant,
            ..msg(950, "the bucket is sized")
        };
        let messages = [summary, msg(940, "nothing here"), reply];
        let got: Vec<(&str, u64, u64)> = snippets(&mut a, &q, &messages, 3)
            .iter()
            .map(|s| (s.role.as_str(), s.number, s.seq))
            .collect();
        assert_eq!(got, [("summary", 1, 900), ("assistant", 3, 950)]);
        // Pieces of a longer conversation: each message by its own place.
        let placed: Vec<IndexedMessage> = messages
            .iter()
            .zip([41, 42, 4000])
            .map(|(m, number)| IndexedMessage {
                number,
                ..m.clone()
            })
            .collect();
        let got: Vec<u64> = snippets(&mut a, &q, &placed, 3)
            .iter()
            .map(|s| s.number)
            .collect();
        assert_eq!(got, [41, 4000]);
    }

    #[test]
    fn the_message_saying_the_words_together_is_shown_first() {
        let mut a = text_analysis::analyzer();
        let q = parse(&mut a, "rate limiter ").unwrap();
        let messages = [
            msg(1, "the rate is fine; the limiter is not"),
            msg(2, "rate and limiter again, apart"),
            msg(3, "we tuned the rate limiter today"),
            msg(4, "a rate   limiter with spaces"),
        ];
        let got: Vec<u64> = snippets(&mut a, &q, &messages, 3)
            .iter()
            .map(|s| s.seq)
            .collect();
        assert_eq!(got, [3, 4, 1], "best first");
        // Reversed words are no phrase; within three words still counts.
        let q = parse(&mut a, "limiter rate ").unwrap();
        let got: Vec<u64> = snippets(
            &mut a,
            &q,
            &[msg(1, "rate limiter"), msg(2, "limiter of the rate")],
            1,
        )
        .iter()
        .map(|s| s.seq)
        .collect();
        assert_eq!(got, [2]);
    }

    #[test]
    fn all_clauses_across_texts() {
        let mut a = text_analysis::analyzer();
        let q = parse(&mut a, "kafka redis").unwrap();
        assert!(all_clauses_match(&mut a, &q, ["kafka", "redis!"]));
        assert!(!all_clauses_match(&mut a, &q, ["kafka", "red"]));
    }
}
