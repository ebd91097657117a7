//! Secret redaction (docs/references.md: secret redaction): credential-shaped strings in the
//! text a reference sends — session snapshots, file contexts, labels — and in the titles the
//! app and the CLI show become `[redacted: kind]`.
//!
//! It runs after projection and before any byte is counted, outside the functions the
//! conformance vectors pin (they run with it off). The rules (`rules.rs`) are regular
//! expressions over known shapes — provider key prefixes, PEM and `PuTTY` keys, JWTs, URL,
//! `.netrc`, `.pgpass` and command-line passwords, `Authorization` headers, assignments whose
//! name says password, secret, token or key — plus measured checks (`accept.rs`): entropy,
//! placeholders. Each rule is searched in time linear in the text (`scanner.rs` counts the
//! bytes the regex engine reads); invisible characters inside a key do not split it
//! (`invisible.rs`). A maintained catalogue (Gitleaks' rules through a crate) was measured
//! against these rules on one corpus; the numbers and why these stay are in the docs.

mod accept;
mod cut_key;
mod invisible;
mod rules;
mod scanner;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::LazyLock;

pub use accept::shannon_bits;

use invisible::Folded;
use rules::{Judge, RuleSource, kind_of_name, named_line_value, named_value, rule_sources};
use scanner::{CountedRegex, RuleCache};

/// One kind of secret, as it appears in `[redacted: kind]`.
pub type SecretKind = &'static str;

/// A rule ready to search.
struct Rule {
    source: RuleSource,
    regex: CountedRegex,
}

/// Every rule, in priority order. A pattern that does not compile is left out (the tests
/// check that none is).
static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    rule_sources()
        .into_iter()
        .filter_map(|source| {
            CountedRegex::new(&source.pattern, source.skip)
                .ok()
                .map(|regex| Rule { source, regex })
        })
        .collect()
});

thread_local! {
    /// Each rule's search state on this thread (a lazy DFA keeps the states it built).
    static CACHES: RefCell<Vec<RuleCache>> =
        RefCell::new(RULES.iter().map(|r| r.regex.cache()).collect());
}

/// How many secrets of each kind were redacted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Redactions {
    pub by_kind: BTreeMap<SecretKind, usize>,
}

impl Redactions {
    /// All redacted secrets.
    pub fn total(&self) -> usize {
        self.by_kind.values().sum()
    }

    /// Add `other`'s counts.
    pub fn add(&mut self, other: &Redactions) {
        for (kind, n) in &other.by_kind {
            *self.by_kind.entry(kind).or_default() += n;
        }
    }

    fn count(&mut self, kind: SecretKind) {
        *self.by_kind.entry(kind).or_default() += 1;
    }
}

/// One secret found: its byte range in the text and its kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finding {
    pub start: usize,
    pub end: usize,
    pub kind: SecretKind,
}

/// What a search cost: the bytes the regex engine read, over every rule.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScanCost {
    pub engine_bytes: usize,
}

/// Every secret in `text`, in order, without overlaps.
pub fn find_secrets(text: &str) -> Vec<Finding> {
    find_secrets_counted(text).0
}

/// [`find_secrets`] and the bytes the regex engine read for it.
pub fn find_secrets_counted(text: &str) -> (Vec<Finding>, ScanCost) {
    let folded = Folded::new(text);
    let mut cost = ScanCost::default();
    let mut found: Vec<(usize, usize, usize, SecretKind)> = Vec::new();
    CACHES.with(|caches| {
        let mut caches = caches.borrow_mut();
        for ((priority, rule), cache) in RULES.iter().enumerate().zip(caches.iter_mut()) {
            search_rule(
                rule,
                cache,
                folded.text(),
                &mut cost,
                &mut |start, end, kind| {
                    found.push((start, priority, end, kind));
                },
            );
        }
    });
    (resolve(found, &folded), cost)
}

/// Each secret `rule` finds in `text`, handed to `found` as (start, end, kind); the bytes
/// the engine read are added to `cost`.
fn search_rule(
    rule: &Rule,
    cache: &mut RuleCache,
    text: &str,
    cost: &mut ScanCost,
    found: &mut dyn FnMut(usize, usize, SecretKind),
) {
    let mut from = 0;
    while from < text.len() {
        let Some(hit) = rule
            .regex
            .find_at(cache, text, from, &mut cost.engine_bytes)
        else {
            break;
        };
        let part = text.get(hit.part.start..hit.part.end).unwrap_or_default();
        let kind = match rule.source.judge {
            Judge::Fixed(kind, accept) => accept(part).then_some(kind),
            Judge::ByName { line } => {
                let name = text
                    .get(hit.whole.start..hit.part.start)
                    .unwrap_or_default();
                let kind = kind_of_name(name);
                // `name: value` unquoted: as often a type annotation as a YAML value.
                let typed = name.trim_end().ends_with(':');
                let ok = if line {
                    named_line_value(kind, part)
                } else if code_binding(text, hit.whole.start, hit.part.start) {
                    false
                } else {
                    named_value(kind, part, typed)
                };
                ok.then_some(kind)
            }
        };
        if let Some(kind) = kind.filter(|_| !part.is_empty()) {
            found(hit.part.start, hit.part.end, kind);
        }
        // The next search starts where this match ended (one character on when it was
        // empty): no byte of a match is searched twice.
        from = if hit.whole.end > from {
            hit.whole.end
        } else {
            next_char_boundary(text, from)
        };
    }
}

/// Whether the name at `name` is bound in code to an unquoted value (`let secret =
/// our_key_share`, `const token = next()`): a variable, never a secret written out.
fn code_binding(text: &str, name: usize, value: usize) -> bool {
    // The whole name (the match starts at the word that says secret: `shared_secret`).
    let before = text
        .get(..name)
        .unwrap_or_default()
        .trim_end_matches(|c: char| c.is_ascii_alphanumeric() || "_.-".contains(c));
    let line = before.rsplit('\n').next().unwrap_or_default().trim_end();
    let quoted = text
        .get(..value)
        .is_some_and(|v| v.ends_with(['"', '\'', '`']));
    !quoted
        && [
            "let", "let mut", "const", "var", "val", "auto", "my", "local", "static",
        ]
        .iter()
        .any(|kw| {
            line.strip_suffix(kw)
                .is_some_and(|rest| rest.is_empty() || rest.ends_with([' ', '\t', '(', '{', ';']))
        })
}

/// The first character boundary after `at`.
fn next_char_boundary(text: &str, at: usize) -> usize {
    (at + 1..=text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len())
}

/// Findings sorted by start (then rule), overlaps dropped, mapped back to the original text.
fn resolve(mut found: Vec<(usize, usize, usize, SecretKind)>, folded: &Folded) -> Vec<Finding> {
    found.sort_unstable();
    let mut out: Vec<Finding> = Vec::with_capacity(found.len());
    let mut last_end = 0;
    for (start, _, end, kind) in found {
        if !out.is_empty() && start < last_end {
            continue;
        }
        last_end = end;
        let (start, end) = folded.original(start, end);
        out.push(Finding { start, end, kind });
    }
    out
}

/// `text` with every secret replaced by `[redacted: kind]`, and the counts.
pub fn redact(text: &str) -> (Cow<'_, str>, Redactions) {
    replace(text, find_secrets(text))
}

/// `text` with each of `findings` (in order, not overlapping) replaced.
fn replace(text: &str, findings: Vec<Finding>) -> (Cow<'_, str>, Redactions) {
    let mut counts = Redactions::default();
    if findings.is_empty() {
        return (Cow::Borrowed(text), counts);
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for f in findings {
        out.push_str(text.get(at..f.start).unwrap_or_default());
        out.push_str("[redacted: ");
        out.push_str(f.kind);
        out.push(']');
        counts.count(f.kind);
        at = f.end;
    }
    out.push_str(text.get(at..).unwrap_or_default());
    (Cow::Owned(out), counts)
}

/// A label or title redacted: every secret [`redact`] finds, and a key cut short at its end
/// (a title cut to its byte limit keeps a known key prefix and a few characters the rules
/// no longer recognise — `Deploy with sk-ant-api03-AbCd`).
pub fn redact_label(label: &str) -> (Cow<'_, str>, Redactions) {
    let mut findings = find_secrets(label);
    if let Some((start, kind)) = cut_key::cut_key_at_end(label)
        && findings.last().is_none_or(|last| last.end <= start)
    {
        findings.push(Finding {
            start,
            end: label.trim_end().len(),
            kind,
        });
    }
    replace(label, findings)
}

/// [`redact_label`] of an owned label when `on`, else the label unchanged with no counts.
pub fn redact_label_if(on: bool, label: String) -> (String, Redactions) {
    if !on {
        return (label, Redactions::default());
    }
    match redact_label(&label) {
        (Cow::Borrowed(_), counts) => (label, counts),
        (Cow::Owned(out), counts) => (out, counts),
    }
}

/// A session title as the app and the CLI show it (popup and `/resume` rows, `sessions`,
/// `search`): secrets redacted as in a label when `redact_secrets` is on, else unchanged.
/// JSON output keeps the stored title.
pub fn display_title(title: &str, redact_secrets: bool) -> Cow<'_, str> {
    if redact_secrets {
        redact_label(title).0
    } else {
        Cow::Borrowed(title)
    }
}

/// The rules' key prefixes with their kinds (the cut-off key check reads them).
fn key_prefixes() -> impl Iterator<Item = (&'static str, SecretKind)> {
    RULES.iter().flat_map(|rule| {
        let kind = match rule.source.judge {
            Judge::Fixed(kind, _) => kind,
            Judge::ByName { .. } => "key",
        };
        rule.source.key_prefixes.iter().map(move |&p| (p, kind))
    })
}
