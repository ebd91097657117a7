//! What listing keeps of one foreign log: id, cwd, creation time and title inputs, plus where
//! a scan of the file stopped so a log that only grew is read from there next time.

use serde::{Deserialize, Serialize};

/// Cleans a person's first message into a title (the app's fallback-title rule).
pub type TitleCleaner = fn(&str) -> Option<String>;

/// The listing facts of one log, as far as it has been scanned.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogMeta {
    /// The tool's own session id (not yet namespaced).
    pub native_id: Option<String>,
    pub cwd: Option<String>,
    /// Unix milliseconds of the first timestamp.
    pub created_at: Option<i64>,
    /// The newest summary record's text (Claude Code).
    pub summary: Option<String>,
    /// The first text the person typed, cleaned like a fallback title.
    pub first_user: Option<String>,
    /// A first user text was found (even one that cleaned to nothing): stop looking.
    pub first_user_seen: bool,
    /// Byte offset and 1-based line to continue from; `None` after damage (scan again whole).
    pub resume: Option<(u64, u64)>,
}

impl LogMeta {
    /// The title: the newest summary, else the cleaned first user text.
    pub fn title(&self) -> Option<&str> {
        self.summary.as_deref().or(self.first_user.as_deref())
    }

    /// Whether the log is a session to list: it has an id and a creation time.
    pub fn listable(&self) -> bool {
        self.native_id.is_some() && self.created_at.is_some()
    }

    /// Record the first user text, once.
    pub fn see_user_text(&mut self, text: &str, clean: TitleCleaner) {
        if !self.first_user_seen {
            self.first_user_seen = true;
            self.first_user = clean(text);
        }
    }
}
