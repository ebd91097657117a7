//! What listing keeps of one foreign log: id, cwd, creation time and title inputs, plus where
//! a scan of the file stopped so a log that only grew is read from there next time.

use serde::{Deserialize, Serialize};

/// Cleans a person's first message into a title: the whole request on one line (the app
/// passes `one_line_title`; only the display cuts a title).
pub type TitleCleaner = fn(&str) -> Option<String>;

/// Longest title kept (bytes, cut at a character boundary): a bound on what the listing
/// cache holds per session whatever a log holds, far past what any row shows.
pub const MAX_TITLE_BYTES: usize = 1024;

/// Most `summary` records waiting for their leaf kept per log (the newest ones).
const MAX_PENDING_SUMMARIES: usize = 32;

/// A title input, trimmed and cut to [`MAX_TITLE_BYTES`]; `None` when it is blank.
pub fn title_text(text: &str) -> Option<String> {
    let t = text.trim();
    if t.is_empty() {
        return None;
    }
    let mut end = t.len().min(MAX_TITLE_BYTES);
    while !t.is_char_boundary(end) {
        end -= 1;
    }
    t.get(..end).map(str::to_owned)
}

/// A `summary` record seen before (or without) the record its leaf names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingSummary {
    pub leaf: String,
    pub line: u64,
    pub text: String,
}

/// The listing facts of one log, as far as it has been scanned.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogMeta {
    /// The tool's own session id (not yet namespaced).
    pub native_id: Option<String>,
    pub cwd: Option<String>,
    /// Unix milliseconds of the first timestamp.
    pub created_at: Option<i64>,
    /// The newest title the person gave the session (Claude Code `custom-title`, a Gemini
    /// saved chat's tag).
    #[serde(default)]
    pub custom_title: Option<String>,
    /// The newest title the tool generated (Claude Code `ai-title`, Gemini's summary).
    #[serde(default)]
    pub ai_title: Option<String>,
    /// The newest `summary` record whose leaf is a record of this log: its line and text.
    pub summary: Option<(u64, String)>,
    /// `summary` records whose leaf was not found in this log (yet).
    #[serde(default)]
    pub pending_summaries: Vec<PendingSummary>,
    /// The first text the person typed, cleaned like a fallback title.
    pub first_user: Option<String>,
    /// A first user text was found (even one that cleaned to nothing): stop looking.
    pub first_user_seen: bool,
    /// Byte offset and 1-based line to continue from; `None` after damage (scan again whole).
    pub resume: Option<(u64, u64)>,
    /// Gemini: the hash of the project root the chat was recorded under.
    #[serde(default)]
    pub project_hash: Option<String>,
    /// Not a session of its own (a Gemini sub-agent chat): never listed.
    #[serde(default)]
    pub hidden: bool,
    /// The git branch the tool recorded for the session (Claude Code: the newest
    /// `gitBranch`; Codex: `session_meta.git.branch`).
    #[serde(default)]
    pub branch: Option<String>,
}

impl LogMeta {
    /// The title: a custom title, then the tool's own title, then a summary of this log,
    /// then the cleaned first user text.
    pub fn title(&self) -> Option<&str> {
        self.custom_title
            .as_deref()
            .or(self.ai_title.as_deref())
            .or(self.summary.as_ref().map(|(_, s)| s.as_str()))
            .or(self.first_user.as_deref())
    }

    /// Whether the log is a session to list: it has an id and a creation time.
    pub fn listable(&self) -> bool {
        self.native_id.is_some() && self.created_at.is_some() && !self.hidden
    }

    /// Record the first user text, once.
    pub fn see_user_text(&mut self, text: &str, clean: TitleCleaner) {
        if !self.first_user_seen {
            self.first_user_seen = true;
            self.first_user = clean(text).and_then(|t| title_text(&t));
        }
    }

    /// A summary whose leaf is a record of this log, on `line`: the newest one is kept.
    pub fn see_own_summary(&mut self, line: u64, text: String) {
        if self.summary.as_ref().is_none_or(|(at, _)| *at <= line) {
            self.summary = Some((line, text));
        }
    }

    /// A summary whose leaf is not known yet: kept (the newest few) until it is.
    pub fn see_pending_summary(&mut self, leaf: String, line: u64, text: String) {
        self.pending_summaries
            .push(PendingSummary { leaf, line, text });
        if self.pending_summaries.len() > MAX_PENDING_SUMMARIES {
            self.pending_summaries.remove(0);
        }
    }

    /// A record `uuid` was found: the pending summaries whose leaf it is become this log's.
    pub fn see_record(&mut self, uuid: &str) {
        if self.pending_summaries.iter().all(|p| p.leaf != uuid) {
            return;
        }
        let (found, rest): (Vec<PendingSummary>, Vec<PendingSummary>) =
            std::mem::take(&mut self.pending_summaries)
                .into_iter()
                .partition(|p| p.leaf == uuid);
        self.pending_summaries = rest;
        for p in found {
            self.see_own_summary(p.line, p.text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn title_order_and_pending_summaries() {
        let mut meta = LogMeta::default();
        meta.see_user_text("first request", |t| Some(t.to_owned()));
        assert_eq!(meta.title(), Some("first request"));
        meta.see_pending_summary("leaf-1".into(), 1, "Summary one".into());
        meta.see_pending_summary("other".into(), 2, "Another session".into());
        assert_eq!(meta.title(), Some("first request"), "no leaf seen yet");
        meta.see_record("leaf-1");
        assert_eq!(meta.title(), Some("Summary one"));
        meta.see_own_summary(0, "older".into());
        assert_eq!(meta.title(), Some("Summary one"), "the newest summary wins");
        meta.ai_title = Some("AI title".into());
        assert_eq!(meta.title(), Some("AI title"));
        meta.custom_title = Some("mine".into());
        assert_eq!(meta.title(), Some("mine"));
        assert_eq!(meta.pending_summaries.len(), 1);
        for i in 0..100 {
            meta.see_pending_summary(format!("l{i}"), i, "x".into());
        }
        assert_eq!(meta.pending_summaries.len(), MAX_PENDING_SUMMARIES);
        assert_eq!(
            meta.pending_summaries.last().map(|p| p.leaf.as_str()),
            Some("l99")
        );
    }

    #[test]
    fn title_text_is_trimmed_and_bounded() {
        assert_eq!(title_text("  a b \n"), Some("a b".into()));
        assert_eq!(title_text(" \n "), None);
        let long = "結".repeat(400);
        let cut = title_text(&long).unwrap();
        assert!(cut.len() <= MAX_TITLE_BYTES && cut.chars().all(|c| c == '結'));
    }
}
