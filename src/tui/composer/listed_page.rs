//! A listing's page as `/resume` and the `@` popup show it (docs/tui-app.md: rows): the
//! rows in last-activity order with each session's details — when it was last active, how
//! many messages it holds — the git branch each session was recorded on, and
//! when it was listed (relative times count from then, so a frame never reads the clock).

use std::collections::{HashMap, HashSet};

use dsh_reference::frecency::UsageBook;
use dsh_reference::{
    Candidate, CandidatePage, DetailedPage, ListingScope, SessionDetails, relative_time,
};

/// A page of sessions with what each row shows beside its title.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListedPage {
    pub page: CandidatePage,
    /// Per session id: last activity and message count, as far as its source tells.
    pub details: HashMap<String, SessionDetails>,
    /// Per session id: the git branch the session was recorded on, when it recorded one
    /// (`DetailedPage::branches`) — untrusted text. Never the branch its working directory
    /// is on now: a session without a recorded branch shows none.
    pub branches: HashMap<String, String>,
    /// When the page was listed (Unix milliseconds).
    pub listed_at_ms: i64,
    /// Whether the mentions its rows insert have the secrets in their labels redacted
    /// (`[references] redact_secrets`).
    pub redact_labels: bool,
    /// Sessions pinned (Alt+.), and per session the uses the usage book remembers.
    pub usage: RowUsage,
    /// Paths of the agent's cwd matching the query (the `@` popup's file section).
    pub files: Vec<super::file_section::FileRow>,
    /// The query is shaped like a path: the files come first.
    pub files_first: bool,
    /// What the draft references already, against the limits of a message.
    pub limits: super::draft_limits::DraftLimits,
}

/// What the usage book says about the rows of a page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RowUsage {
    pub pinned: HashSet<String>,
    pub uses: HashMap<String, usize>,
}

impl RowUsage {
    /// What `book` says about the sessions of `page`.
    pub fn of(page: &CandidatePage, book: &UsageBook) -> Self {
        let mut usage = RowUsage::default();
        let ids = page
            .rows
            .iter()
            .chain(page.closest.iter().map(|c| &c.candidate))
            .map(|c| &c.session_id);
        for id in ids {
            let Some(used) = book.sessions.get(id) else {
                continue;
            };
            if used.pinned_at.is_some() {
                usage.pinned.insert(id.clone());
            }
            if !used.uses.is_empty() {
                usage.uses.insert(id.clone(), used.uses.len());
            }
        }
        usage
    }
}

/// The group of `scope` a session in `cwd` is ranked in: the `@` popup's and `/resume`'s
/// three (same cwd as the agent's or the project's, none, other), or one for all.
fn group_of(scope: &ListingScope, cwd: Option<&str>) -> u8 {
    let first = match scope {
        ListingScope::Agent(agent) => agent.cwd.as_deref(),
        ListingScope::Project(project) => project.as_deref(),
        ListingScope::All => return 0,
    };
    match cwd {
        Some(c) if first == Some(c) => 0,
        None => 1,
        Some(_) => 2,
    }
}

/// Orders `rows` (by tier of `query`, grouped by `scope`, each group by last activity) by
/// the usage book: within each tier and group pinned sessions first (the newest pin first),
/// then by frecency score at `now_ms` (docs/references.md: frecency and pins), then as they
/// were (a stable sort). The tiers (`dsh_reference::MatchTier`: the title or id is the
/// query, begins with it, or neither) put an exact title above a recent partial match.
pub fn rank_by_usage(
    rows: &mut [Candidate],
    book: &UsageBook,
    scope: &ListingScope,
    query: &str,
    now_ms: u64,
) {
    rows.sort_by_cached_key(|c| {
        let pin = book.sessions.get(&c.session_id).and_then(|u| u.pinned_at);
        (
            dsh_reference::match_tier(query, &c.session_id, &c.label),
            group_of(scope, c.cwd.as_deref()),
            pin.is_none(),
            std::cmp::Reverse(pin.unwrap_or(0)),
            std::cmp::Reverse(book.score(&c.session_id, now_ms)),
        )
    });
}

/// Whether every word of `query` is a case-insensitive substring of `candidate`'s id or
/// label, or names its cwd's trailing segments (the pickers' rule,
/// `dsh_reference::QueryMatch::Words`).
pub fn matches_words(candidate: &Candidate, query: &str) -> bool {
    let fields = [
        candidate.session_id.to_lowercase(),
        candidate.label.to_lowercase(),
    ];
    let cwd = candidate.cwd.as_deref().map(str::to_lowercase);
    dsh_reference::query_words(query).iter().all(|w| {
        fields.iter().any(|f| f.contains(w.as_str()))
            || cwd
                .as_deref()
                .is_some_and(|c| dsh_reference::names_cwd_tail(c.as_bytes(), w.as_bytes()))
    })
}

impl ListedPage {
    /// A page answered with details and recorded branches at `listed_at_ms`.
    pub fn new(detailed: DetailedPage, listed_at_ms: i64, redact_labels: bool) -> Self {
        ListedPage {
            page: detailed.page,
            details: detailed.details,
            branches: detailed.branches,
            listed_at_ms,
            redact_labels,
            usage: RowUsage::default(),
            files: Vec::new(),
            files_first: false,
            limits: super::draft_limits::DraftLimits::default(),
        }
    }

    /// `page` without details or branches, listed at `listed_at_ms` (its rows show their
    /// creation time relative to it).
    pub fn without_details(page: CandidatePage, listed_at_ms: i64) -> Self {
        ListedPage {
            page,
            listed_at_ms,
            redact_labels: true,
            ..ListedPage::default()
        }
    }

    /// When `candidate` was last active, relative to the listing: `2 h ago`; its creation
    /// time stands in when it has no activity yet or its source cannot tell.
    pub fn activity(&self, candidate: &Candidate) -> String {
        let at = self
            .details
            .get(&candidate.session_id)
            .and_then(|d| d.last_active_ms)
            .unwrap_or(candidate.created_at);
        relative_time(self.listed_at_ms, at)
    }

    /// `14 msgs` (`1 msg`), when `candidate`'s source counts messages.
    pub fn messages(&self, candidate: &Candidate) -> Option<String> {
        let n = self.details.get(&candidate.session_id)?.messages?;
        Some(if n == 1 {
            "1 msg".to_owned()
        } else {
            format!("{n} msgs")
        })
    }

    /// Whether `candidate` is pinned.
    pub fn pinned(&self, candidate: &Candidate) -> bool {
        self.usage.pinned.contains(&candidate.session_id)
    }

    /// `used 3×`: how many uses (references, resumes) the usage book remembers.
    pub fn uses(&self, candidate: &Candidate) -> Option<String> {
        let n = self.usage.uses.get(&candidate.session_id)?;
        Some(format!("used {n}×"))
    }

    /// The git branch `candidate` was recorded on, when it recorded one.
    pub fn branch(&self, candidate: &Candidate) -> Option<&str> {
        self.branches.get(&candidate.session_id).map(String::as_str)
    }
}

/// Now, in Unix milliseconds.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn candidate(id: &str, cwd: Option<&str>, created_at: i64) -> Candidate {
        Candidate {
            session_id: id.into(),
            label: id.into(),
            cwd: cwd.map(str::to_owned),
            created_at,
        }
    }

    #[test]
    fn rows_tell_activity_messages_and_branch() {
        const HOUR: i64 = 3_600_000;
        let now = 1_800_000_000_000;
        let details = HashMap::from([
            (
                "a".to_owned(),
                SessionDetails {
                    last_active_ms: Some(now - 2 * HOUR),
                    messages: Some(14),
                },
            ),
            (
                "b".to_owned(),
                SessionDetails {
                    last_active_ms: None,
                    messages: Some(1),
                },
            ),
        ]);
        let page = ListedPage {
            details,
            // Recorded per session: `b` shares nothing with `a`'s directory's branch.
            branches: HashMap::from([("a".to_owned(), "main".to_owned())]),
            listed_at_ms: now,
            ..ListedPage::default()
        };
        let a = candidate("a", Some("/repo"), now - 30 * 24 * HOUR);
        let b = candidate("b", Some("/else"), now - 3 * 24 * HOUR);
        let foreign = candidate("c", None, now - 30_000);
        assert_eq!(page.activity(&a), "2 h ago");
        assert_eq!(page.activity(&b), "3 d ago", "no activity: its creation");
        assert_eq!(page.activity(&foreign), "just now");
        assert_eq!(page.messages(&a).as_deref(), Some("14 msgs"));
        assert_eq!(page.messages(&b).as_deref(), Some("1 msg"));
        assert_eq!(page.messages(&foreign), None, "not counted");
        assert_eq!(page.branch(&a), Some("main"));
        assert_eq!(page.branch(&b), None);
        assert_eq!(page.branch(&foreign), None);
    }
}

#[cfg(test)]
mod usage_tests {
    use super::*;
    use dsh_reference::AgentRef;
    use dsh_reference::frecency::UseKind;
    use pretty_assertions::assert_eq;

    fn row(id: &str, cwd: Option<&str>) -> Candidate {
        Candidate {
            session_id: id.into(),
            label: format!("Title of {id}"),
            cwd: cwd.map(str::to_owned),
            created_at: 0,
        }
    }

    #[test]
    fn pins_then_frecency_then_activity_within_each_group() {
        const NOW: u64 = 1_000_000_000;
        let mut book = UsageBook::default();
        book.toggle_pin("w-old", NOW - 10);
        book.toggle_pin("w-older", NOW - 20);
        book.toggle_pin("none-pinned", NOW - 5);
        book.record("w-used", UseKind::Referenced, NOW - 1);
        book.record("x-used", UseKind::Resumed, NOW - 1);
        // As the listing gives them: by group, then by last activity.
        let listed = [
            row("w-new", Some("/w")),
            row("w-used", Some("/w")),
            row("w-older", Some("/w")),
            row("w-old", Some("/w")),
            row("none-a", None),
            row("none-pinned", None),
            row("x-a", Some("/x")),
            row("x-used", Some("/x")),
        ];
        let agent = ListingScope::Agent(AgentRef {
            session_id: "me".into(),
            cwd: Some("/w".into()),
        });
        let ids = |rows: &[Candidate]| -> Vec<String> {
            rows.iter().map(|c| c.session_id.clone()).collect()
        };
        let mut rows = listed.to_vec();
        rank_by_usage(&mut rows, &book, &agent, "", NOW);
        assert_eq!(
            ids(&rows),
            [
                "w-old",
                "w-older",
                "w-used",
                "w-new",
                "none-pinned",
                "none-a",
                "x-used",
                "x-a"
            ],
            "newest pin first, then used, then as listed; groups stay"
        );
        // `/resume` has one group: pins and uses lead across directories.
        let mut rows = listed.to_vec();
        rank_by_usage(&mut rows, &book, &ListingScope::All, "", NOW);
        assert_eq!(
            ids(&rows),
            [
                "none-pinned",
                "w-old",
                "w-older",
                "w-used",
                "x-used",
                "w-new",
                "none-a",
                "x-a"
            ]
        );
        let page = CandidatePage {
            rows,
            total: 8,
            closest: Vec::new(),
        };
        let usage = RowUsage::of(&page, &book);
        let mut pinned: Vec<&str> = usage.pinned.iter().map(String::as_str).collect();
        pinned.sort_unstable();
        assert_eq!(pinned, ["none-pinned", "w-old", "w-older"]);
        assert_eq!(usage.uses.get("w-used"), Some(&1));
        let listed = ListedPage {
            usage,
            ..ListedPage::default()
        };
        assert!(listed.pinned(&row("w-old", None)));
        assert_eq!(
            listed.uses(&row("x-used", None)).as_deref(),
            Some("used 1×")
        );
        assert_eq!(listed.uses(&row("x-a", None)), None);
    }

    /// Issue 32 item 2: what was typed ranks first — an exact title, then one beginning
    /// with the query — above groups, pins and frecency, which order each tier.
    #[test]
    fn an_exact_title_comes_before_pins_and_groups() {
        const NOW: u64 = 1_000_000_000;
        let mut book = UsageBook::default();
        book.toggle_pin("partial", NOW - 1);
        let titled = |id: &str, title: &str, cwd: Option<&str>| Candidate {
            label: title.into(),
            ..row(id, cwd)
        };
        let mut rows = vec![
            titled("partial", "@Deploy plan what now", Some("/w")),
            titled("prefix", "Deploy plan B", Some("/w")),
            titled("exact", "Deploy plan", Some("/x")),
        ];
        let agent = ListingScope::Agent(AgentRef {
            session_id: "me".into(),
            cwd: Some("/w".into()),
        });
        rank_by_usage(&mut rows, &book, &agent, "deploy plan", NOW);
        let ids: Vec<&str> = rows.iter().map(|c| c.session_id.as_str()).collect();
        assert_eq!(ids, ["exact", "prefix", "partial"]);
    }

    #[test]
    fn words_match_like_the_listing() {
        let c = row("s-kafka", Some("/home/ana/billing"));
        let cases = [
            ("", true),
            ("kafka", true),
            ("KAFKA billing", true),
            ("title billing", true),
            ("title ana", false),
            ("ana/billing", true),
            ("kafka redis", false),
            ("  s-kaf  ", true),
        ];
        for (query, want) in cases {
            assert_eq!(matches_words(&c, query), want, "{query:?}");
        }
    }
}
