//! What the draft already references, against the limits of one message
//! (docs/composer.md: limits before the pick): with `max_references` distinct sessions and
//! excerpts in the draft a session row that would add one more is blocked, and so is a file
//! row with `max_files` files mentioned — the popup says so and Enter inserts nothing,
//! instead of the message being refused at send.

use std::collections::HashSet;
use std::path::Path;

use dsh_reference::file_context::resolve_file_mentions;
use dsh_reference::file_mention::scan_file_mentions;
use dsh_reference::parse::Mentioned;
use dsh_reference::parse_text;

/// The draft's references and the limits they are counted against. The default limits
/// nothing (no reference service).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DraftLimits {
    /// `max_references`, and the sources the draft names (whole sessions and excerpts).
    max_sources: Option<usize>,
    sources: usize,
    /// Sessions mentioned whole: mentioning one again adds no source.
    whole: HashSet<String>,
    /// `max_files`, and the files the draft mentions (as written, and how many resolve).
    max_files: Option<usize>,
    files: usize,
    file_paths: HashSet<String>,
}

impl DraftLimits {
    /// The sessions and excerpts `draft` mentions, against `max_sources`; the files are
    /// counted by [`count_files`](Self::count_files) (it reads the file system).
    pub fn of_sessions(draft: &str, max_sources: usize, max_files: usize) -> Self {
        let mut limits = DraftLimits {
            max_sources: Some(max_sources),
            max_files: Some(max_files),
            ..DraftLimits::default()
        };
        let Ok(parsed) = parse_text(draft) else {
            return limits;
        };
        let mut seen = HashSet::new();
        for mention in &parsed.mentions {
            let source = match mention {
                Mentioned::Session(r) => {
                    limits.whole.insert(r.session_id.clone());
                    (r.session_id.clone(), None)
                }
                Mentioned::Excerpt(e) => (e.range.session_id.clone(), Some(e.range.clone())),
            };
            seen.insert(source);
        }
        limits.sources = seen.len();
        limits
    }

    /// Counts the files `draft` mentions in `cwd` (each once, as `prepare` does), leaving
    /// out the token at char `caret` (the query being typed). Blocking: off the UI thread.
    pub fn count_files(&mut self, cwd: &Path, draft: &str, caret: usize) {
        let skip = parse_text(draft).map(|p| p.spans).unwrap_or_default();
        let caret = draft
            .char_indices()
            .nth(caret)
            .map_or(draft.len(), |(at, _)| at);
        let mentions: Vec<_> = scan_file_mentions(draft, &skip)
            .into_iter()
            .filter(|m| !(m.span.start < caret && caret <= m.span.end))
            .collect();
        if mentions.is_empty() {
            return;
        }
        // A mention that cannot be attached is refused at send anyway: count what resolves.
        if let Ok(files) = resolve_file_mentions(cwd, &mentions) {
            self.files = files.len();
            self.file_paths = files.into_iter().map(|f| f.path).collect();
        }
    }

    /// Why a row inserting a whole mention of `session_id` is blocked, if it is.
    pub fn session_blocked(&self, session_id: &str) -> Option<String> {
        if self.whole.contains(session_id) {
            return None;
        }
        self.sources_full()
    }

    /// Why an excerpt cannot be inserted, if it cannot.
    pub fn excerpt_blocked(&self) -> Option<String> {
        self.sources_full()
    }

    /// Why a row inserting a mention of the file `path` is blocked, if it is.
    pub fn file_blocked(&self, path: &str) -> Option<String> {
        let max = self.max_files?;
        (self.files >= max && !self.file_paths.contains(path))
            .then(|| format!("limit: {max} {} per message", plural(max, "file")))
    }

    fn sources_full(&self) -> Option<String> {
        let max = self.max_sources?;
        (self.sources >= max)
            .then(|| format!("limit: {max} {} per message", plural(max, "session")))
    }
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        what.to_owned()
    } else {
        format!("{what}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn mention(id: &str) -> String {
        dsh_reference::format_mention(id, Some(id))
    }

    #[test]
    fn sessions_count_distinct_sources_and_a_repeat_is_free() {
        let draft = format!("{} {} {} @que", mention("a"), mention("b"), mention("a"));
        let limits = DraftLimits::of_sessions(&draft, 3, 3);
        assert_eq!(limits.session_blocked("c"), None, "two of three");
        let draft = format!("{draft} {}", mention("c"));
        let limits = DraftLimits::of_sessions(&draft, 3, 3);
        let full = Some("limit: 3 sessions per message".to_owned());
        assert_eq!(limits.session_blocked("d"), full);
        assert_eq!(limits.excerpt_blocked(), full);
        assert_eq!(limits.session_blocked("a"), None, "already mentioned whole");
        assert_eq!(DraftLimits::default().session_blocked("x"), None);
        let one = DraftLimits::of_sessions(&mention("a"), 1, 1);
        assert_eq!(
            one.session_blocked("b").as_deref(),
            Some("limit: 1 session per message")
        );
    }

    #[test]
    fn files_count_what_resolves_without_the_token_typed() {
        let tmp = tempfile::tempdir().unwrap();
        for name in ["a.md", "b.md", "c.md"] {
            std::fs::write(tmp.path().join(name), "x").unwrap();
        }
        let draft = "see @a.md @b.md @gone.md @c";
        let mut limits = DraftLimits::of_sessions(draft, 3, 2);
        limits.count_files(tmp.path(), draft, draft.chars().count());
        let full = Some("limit: 2 files per message".to_owned());
        assert_eq!(limits.file_blocked("c.md"), full);
        assert_eq!(limits.file_blocked("a.md"), None, "mentioned already");
        let mut limits = DraftLimits::of_sessions(draft, 3, 3);
        limits.count_files(tmp.path(), draft, draft.chars().count());
        assert_eq!(limits.file_blocked("c.md"), None, "two of three");
    }
}
