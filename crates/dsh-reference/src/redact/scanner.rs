//! One rule's pattern, searched so that every byte the regex engine reads is counted
//! (docs/references.md: secret redaction, linear time).
//!
//! A rule is a lazy DFA stepped here byte by byte, so the redactor knows exactly how far each
//! search read past its start; the capture groups of a match are then read by the meta regex
//! inside the span the DFA already read. While no match is under way the search skips ahead
//! to the next place a match could start ([`Skip`]): the pattern's literal prefix, a keyword,
//! a literal the match holds near its start, or the start of a line holding a separator; the
//! bytes skipped are counted as read. A rule "rescans" when its searches read far past the
//! matches they report: the counts make that visible, and the linearity test holds every
//! rule to at most a constant number of bytes per byte of text.

use memchr::{memchr, memmem, memrchr};
use regex_automata::hybrid::LazyStateID;
use regex_automata::hybrid::dfa::{Cache, DFA};
use regex_automata::util::captures::Captures;
use regex_automata::util::prefilter::Prefilter;
use regex_automata::util::syntax;
use regex_automata::{Input, MatchKind, Span, meta};

/// Most heap one rule's lazy DFA keeps per thread; past it the DFA clears its states and
/// goes on (never gives up), so adversarial text costs time, never unbounded memory.
const DFA_CACHE_BYTES: usize = 1 << 20;

/// Where a match of a rule can start, so a search may jump there while no match is under
/// way.
#[derive(Debug, Clone, Copy)]
pub enum Skip {
    /// At the pattern's literal prefix, when it has a usable one.
    Prefix,
    /// At one of these words, in any case (a name the pattern starts with).
    Words(&'static [&'static str]),
    /// At most `back` bytes before `needle`, which every match holds.
    Near { needle: &'static str, back: usize },
    /// At the start of a line holding `byte` (a line-anchored pattern with a separator).
    LineWith(u8),
}

/// How a search jumps ahead.
enum Jump {
    None,
    Prefilter(Prefilter),
    Near {
        finder: Box<memmem::Finder<'static>>,
        back: usize,
    },
    LineWith(u8),
}

/// Where a jump lands (see [`CountedRegex::next_start`]).
struct Jumped {
    next: Option<usize>,
    read: usize,
    settled: usize,
}

/// A rule's compiled pattern: the DFA that finds where a match ends, the meta regex that
/// reads its groups.
pub struct CountedRegex {
    dfa: DFA,
    jump: Jump,
    groups: meta::Regex,
}

/// One match: the whole span and the part that is the secret (the first capture group that
/// took part, or the whole match when the pattern has none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    pub whole: Span,
    pub part: Span,
}

/// A rule's per-thread search state.
pub struct RuleCache {
    dfa: Cache,
    captures: Captures,
}

impl CountedRegex {
    /// Compile `pattern`; an error names why (a pattern the lazy DFA cannot run, such as a
    /// Unicode word boundary, is refused here rather than searched slowly).
    pub fn new(pattern: &str, skip: Skip) -> Result<Self, String> {
        let jump = match skip {
            Skip::Prefix => {
                let hir = syntax::parse(pattern).map_err(|e| e.to_string())?;
                Prefilter::from_hir_prefix(MatchKind::LeftmostFirst, &hir)
                    .filter(Prefilter::is_fast)
                    .map_or(Jump::None, Jump::Prefilter)
            }
            Skip::Words(words) => Prefilter::new(MatchKind::LeftmostFirst, &case_variants(words))
                .map_or(Jump::None, Jump::Prefilter),
            Skip::Near { needle, back } => Jump::Near {
                finder: Box::new(memmem::Finder::new(needle.as_bytes()).into_owned()),
                back,
            },
            Skip::LineWith(byte) => Jump::LineWith(byte),
        };
        let dfa = DFA::builder()
            .configure(
                DFA::config()
                    .specialize_start_states(!matches!(jump, Jump::None))
                    .cache_capacity(DFA_CACHE_BYTES),
            )
            .build(pattern)
            .map_err(|e| e.to_string())?;
        let groups = meta::Regex::new(pattern).map_err(|e| e.to_string())?;
        Ok(Self { dfa, jump, groups })
    }

    /// Fresh search state for this rule.
    pub fn cache(&self) -> RuleCache {
        RuleCache {
            dfa: self.dfa.create_cache(),
            captures: self.groups.create_captures(),
        }
    }

    /// The leftmost-first match at or after `from` in `hay`, adding to `read` every byte the
    /// engine reads for it: the DFA's steps and skips, then the span handed to the group
    /// search.
    pub fn find_at(
        &self,
        cache: &mut RuleCache,
        hay: &str,
        from: usize,
        read: &mut usize,
    ) -> Option<Hit> {
        let end = match self.match_end(&mut cache.dfa, hay.as_bytes(), from, read) {
            Ok(Some(end)) => end,
            Ok(None) => return None,
            // Not reached with the rule table (every pattern builds for the lazy DFA and its
            // cache never gives up); if it were, the meta regex searches the rest once.
            Err(()) => {
                *read += hay.len().saturating_sub(from);
                hay.len()
            }
        };
        *read += end.saturating_sub(from);
        let input = Input::new(hay).range(from..end);
        self.groups.search_captures(&input, &mut cache.captures);
        let whole = cache.captures.get_match()?.span();
        let part = (1..cache.captures.group_len())
            .find_map(|g| cache.captures.get_group(g))
            .unwrap_or(whole);
        Some(Hit { whole, part })
    }

    /// The next place at or after `at` where a match could start (`None`: no match can
    /// start from `at` on), how many bytes were read to find it, and the place before which
    /// no new jump is looked for (past the literal or separator found). A rule that cannot
    /// jump answers `at`.
    fn next_start(&self, hay: &[u8], at: usize) -> Jumped {
        let len = hay.len();
        let rest = hay.get(at..).unwrap_or_default();
        let nowhere = Jumped {
            next: None,
            read: len.saturating_sub(at),
            settled: len,
        };
        match &self.jump {
            Jump::None => Jumped {
                next: Some(at),
                read: 0,
                settled: len,
            },
            Jump::Prefilter(pre) => {
                pre.find(hay, Span::from(at..len))
                    .map_or(nowhere, |found| Jumped {
                        next: Some(found.start),
                        read: found.end - at,
                        settled: found.start + 1,
                    })
            }
            Jump::Near { finder, back } => finder.find(rest).map_or(nowhere, |i| {
                let past = i + finder.needle().len();
                Jumped {
                    next: Some(at + i.saturating_sub(*back)),
                    read: past,
                    settled: at + past,
                }
            }),
            Jump::LineWith(byte) => memchr(*byte, rest).map_or(nowhere, |i| {
                let line = rest
                    .get(..i)
                    .and_then(|before| memrchr(b'\n', before))
                    .map_or(0, |nl| nl + 1);
                Jumped {
                    next: Some(at + line),
                    read: i + 1 + (i - line),
                    settled: at + i + 1,
                }
            }),
        }
    }

    /// Where the leftmost-first match at or after `from` ends, stepping the lazy DFA one
    /// byte at a time (jumping ahead while no match is under way); every byte stepped or
    /// skipped is added to `read`. `Err` when the DFA cannot go on.
    fn match_end(
        &self,
        cache: &mut Cache,
        hay: &[u8],
        from: usize,
        read: &mut usize,
    ) -> Result<Option<usize>, ()> {
        let len = hay.len();
        let first = self.next_start(hay, from);
        *read += first.read;
        let Some(mut at) = first.next else {
            return Ok(None);
        };
        let mut settled = first.settled;
        let mut sid = self.start(cache, hay, at)?;
        let mut end = None;
        while let Some(&byte) = hay.get(at) {
            sid = self.dfa.next_state(cache, sid, byte).map_err(|_| ())?;
            *read += 1;
            if sid.is_tagged() {
                if sid.is_start() {
                    // Nothing under way: jump to the next place a match could start.
                    if end.is_none() && at >= settled {
                        let jumped = self.next_start(hay, at);
                        *read += jumped.read;
                        settled = jumped.settled;
                        match jumped.next {
                            None => return Ok(None),
                            Some(next) if next > at => {
                                at = next;
                                sid = self.start(cache, hay, at)?;
                                continue;
                            }
                            Some(_) => {}
                        }
                    }
                } else if sid.is_match() {
                    // Matches show one byte late: the match ended before this byte.
                    end = Some(at);
                } else if sid.is_dead() {
                    return Ok(end);
                } else {
                    return Err(());
                }
            }
            at += 1;
        }
        sid = self.dfa.next_eoi_state(cache, sid).map_err(|_| ())?;
        if sid.is_match() {
            end = Some(len);
        }
        Ok(end)
    }

    /// The DFA's start state for a search from `at` (it depends on the byte before).
    fn start(&self, cache: &mut Cache, hay: &[u8], at: usize) -> Result<LazyStateID, ()> {
        let input = Input::new(hay).range(at..hay.len());
        self.dfa.start_state_forward(cache, &input).map_err(|_| ())
    }
}

/// Every spelling of `words` in upper and lower case (`pwd`, `Pwd`, … `PWD`).
fn case_variants(words: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for word in words {
        let mut variants = vec![String::new()];
        for c in word.chars() {
            let (lower, upper) = (c.to_ascii_lowercase(), c.to_ascii_uppercase());
            variants = variants
                .into_iter()
                .flat_map(|v| {
                    if lower == upper {
                        vec![format!("{v}{c}")]
                    } else {
                        vec![format!("{v}{lower}"), format!("{v}{upper}")]
                    }
                })
                .collect();
        }
        out.extend(variants);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every match `find_at` reports, from the start, resuming at each match's end.
    fn all_with(
        pattern: &str,
        skip: Skip,
        hay: &str,
    ) -> (Vec<(usize, usize, usize, usize)>, usize) {
        let re = CountedRegex::new(pattern, skip).unwrap();
        let mut cache = re.cache();
        let (mut out, mut read, mut from) = (Vec::new(), 0, 0);
        while let Some(hit) = re.find_at(&mut cache, hay, from, &mut read) {
            out.push((hit.whole.start, hit.whole.end, hit.part.start, hit.part.end));
            from = hit.whole.end.max(from + 1);
        }
        (out, read)
    }

    fn all(pattern: &str, hay: &str) -> (Vec<(usize, usize, usize, usize)>, usize) {
        all_with(pattern, Skip::Prefix, hay)
    }

    #[test]
    fn finds_what_the_meta_regex_finds() {
        let cases: &[(&str, &str)] = &[
            (r"(?-u:\b)ab+c", "xx abbbc abc zabc ab"),
            (r"k=([a-z]+)|q=([0-9]+)", "k=abc q=42 k= q=x"),
            (r"(?m)^[ \t]*x=(\S+)$", "x=1\n  x=22\nyx=3\nx=4 5\n"),
            (
                r"-----BEGIN(?:[^-]|-[^-])*-----",
                "a -----BEGIN X----- b -----BEGIN",
            ),
            (
                r"(?i)pass(?:word)?[=:]([^\s]{4,})",
                "PASSWORD=abcd pass:xy Pass:long1",
            ),
            (r"ä[a-z]+", "ää äbc ü äd"),
            (r"x*", "aaa"),
        ];
        for (pattern, hay) in cases {
            let meta = meta::Regex::new(pattern).unwrap();
            let want: Vec<(usize, usize)> = meta
                .find_iter(hay)
                .filter(|m| !m.is_empty())
                .map(|m| (m.start(), m.end()))
                .collect();
            let (got, read) = all(pattern, hay);
            let got: Vec<(usize, usize)> = got
                .into_iter()
                .filter(|m| m.0 != m.1)
                .map(|m| (m.0, m.1))
                .collect();
            assert_eq!(got, want, "{pattern} on {hay:?}");
            assert!(read >= hay.len().min(1), "{pattern}: read {read}");
        }
    }

    /// Every way of jumping ahead finds what a search that never jumps finds.
    #[test]
    fn jumping_ahead_finds_the_same_matches() {
        let hay = "x=1\nab:cd\n  KEY=zz9\nno sep here\nq:AAaaaaaaa 12345678:AAbb\n\
                   Pass=word PASSWORD=x pwd:y tok://\n";
        let cases: &[(&str, Skip)] = &[
            (r"(?m)^[ \t]*[A-Za-z]+=(\S+)$", Skip::LineWith(b'=')),
            (r"(?m)^[a-z]+:([a-z]+)$", Skip::LineWith(b':')),
            (
                r"(?-u:\b)[0-9]{1,10}:AA[a-z]+",
                Skip::Near {
                    needle: ":AA",
                    back: 10,
                },
            ),
            (
                r"[a-z]{1,5}://",
                Skip::Near {
                    needle: "://",
                    back: 5,
                },
            ),
            (
                r"(?i)(?:pass|pwd)[a-z]*[=:](\S+)",
                Skip::Words(&["pas", "pwd"]),
            ),
        ];
        for &(pattern, skip) in cases {
            let (never, _) = all_with(pattern, Skip::Prefix, hay);
            let (jumping, read) = all_with(pattern, skip, hay);
            assert!(!never.is_empty(), "{pattern}");
            assert_eq!(jumping, never, "{pattern}");
            assert!(read <= 4 * hay.len(), "{pattern}: {read}");
        }
    }

    #[test]
    fn the_secret_part_is_the_first_group_that_took_part() {
        let (hits, _) = all(r"k=([a-z]+)|q=([0-9]+)", "q=42 k=ab");
        assert_eq!(hits, vec![(0, 4, 2, 4), (5, 9, 7, 9)]);
    }

    #[test]
    fn a_pattern_the_lazy_dfa_cannot_run_is_refused() {
        assert!(
            CountedRegex::new(r"\bsk-", Skip::Prefix).is_err(),
            "Unicode word boundary"
        );
        assert!(CountedRegex::new(r"(?-u:\b)sk-", Skip::Prefix).is_ok());
    }

    /// A lazy search that must look to the end of the text for each match reads the text
    /// again per match: the count shows it.
    #[test]
    fn the_count_shows_a_search_that_reads_far_past_its_match() {
        let hay = "B-".repeat(2000);
        let (lazy, lazy_read) = all(r"B(?s:.*?)E|B", &hay);
        let (bounded, bounded_read) = all(r"B", &hay);
        assert_eq!(lazy.len(), bounded.len());
        assert!(lazy_read > 100 * hay.len(), "{lazy_read}");
        assert!(bounded_read <= 4 * hay.len(), "{bounded_read}");
    }
}
