//! A listing's page as `/resume` and the `@` popup show it (docs/tui-app.md: rows): the
//! rows in last-activity order with each session's details — when it was last active, how
//! many messages it holds — the git branch each working directory on the page is on, and
//! when it was listed (relative times count from then, so a frame never reads the clock).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use dsh_reference::{
    Candidate, CandidatePage, DetailedPage, SessionDetails, git_head, relative_time,
};

/// A page of sessions with what each row shows beside its title.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListedPage {
    pub page: CandidatePage,
    /// Per session id: last activity and message count, as far as its source tells.
    pub details: HashMap<String, SessionDetails>,
    /// Per working directory on the page that is in a git repository: its branch (or
    /// `detached abc1234`), read from the repository's `HEAD` — untrusted text.
    pub branches: HashMap<String, String>,
    /// When the page was listed (Unix milliseconds).
    pub listed_at_ms: i64,
    /// Whether the mentions its rows insert have the secrets in their labels redacted
    /// (`[references] redact_secrets`).
    pub redact_labels: bool,
}

impl ListedPage {
    /// A page answered with details at `listed_at_ms`, the branches of its directories
    /// given.
    pub fn new(
        detailed: DetailedPage,
        branches: HashMap<String, String>,
        listed_at_ms: i64,
        redact_labels: bool,
    ) -> Self {
        ListedPage {
            page: detailed.page,
            details: detailed.details,
            branches,
            listed_at_ms,
            redact_labels,
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

    /// The git branch of `candidate`'s working directory, when it is in a repository.
    pub fn branch(&self, candidate: &Candidate) -> Option<&str> {
        self.branches
            .get(candidate.cwd.as_deref()?)
            .map(String::as_str)
    }
}

/// Now, in Unix milliseconds.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// How long a directory's branch is trusted before its `HEAD` is read again.
const BRANCH_MAX_AGE: Duration = Duration::from_secs(15);
/// Most directories remembered (the cache is emptied past it).
const MAX_REMEMBERED: usize = 4096;
/// Most `HEAD`s read for one page (a page holds 60 rows at most by default).
const MAX_READS_PER_PAGE: usize = 128;

/// The git branch of working directories, read from `.git/HEAD` (no process) and kept a
/// few seconds, so listing a page per keystroke reads each `HEAD` once in a while. Cheap
/// to clone; clones share what was read. Call [`branches_of`](Self::branches_of) off the
/// UI thread.
#[derive(Debug, Clone, Default)]
pub struct GitBranches {
    read: Arc<Mutex<HashMap<String, ReadBranch>>>,
}

/// A directory's branch (`None`: not in a repository) and when it was read.
type ReadBranch = (Option<String>, Instant);

impl GitBranches {
    /// The branch of every working directory of `page`'s rows and closest matches that is
    /// in a repository.
    pub fn branches_of(&self, page: &CandidatePage) -> HashMap<String, String> {
        let cwds = page
            .rows
            .iter()
            .chain(page.closest.iter().map(|c| &c.candidate))
            .filter_map(|c| c.cwd.as_deref());
        let mut out = HashMap::new();
        let mut reads = 0;
        for cwd in cwds {
            if out.contains_key(cwd) {
                continue;
            }
            let known = {
                let read = self.read.lock().unwrap_or_else(PoisonError::into_inner);
                read.get(cwd)
                    .filter(|(_, at)| at.elapsed() < BRANCH_MAX_AGE)
                    .map(|(branch, _)| branch.clone())
            };
            let branch = match known {
                Some(branch) => branch,
                None if reads < MAX_READS_PER_PAGE => {
                    reads += 1;
                    let branch = git_head(Path::new(cwd)).map(|h| h.label());
                    let mut read = self.read.lock().unwrap_or_else(PoisonError::into_inner);
                    if read.len() >= MAX_REMEMBERED {
                        read.clear();
                    }
                    read.insert(cwd.to_owned(), (branch.clone(), Instant::now()));
                    branch
                }
                None => None,
            };
            if let Some(branch) = branch {
                out.insert(cwd.to_owned(), branch);
            }
        }
        out
    }
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
            branches: HashMap::from([("/repo".to_owned(), "main".to_owned())]),
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

    #[test]
    fn branches_are_read_from_head_and_kept_a_while() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        let sub = repo.join("src/deep");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::write(repo.join(".git/HEAD"), "ref: refs/heads/feat/x\n").unwrap();
        let outside = tmp.path().join("plain");
        std::fs::create_dir_all(&outside).unwrap();
        let s = |p: &Path| p.to_str().unwrap().to_owned();
        let page = CandidatePage {
            rows: vec![
                candidate("1", Some(&s(&repo)), 0),
                candidate("2", Some(&s(&sub)), 0),
                candidate("3", Some(&s(&outside)), 0),
                candidate("4", None, 0),
            ],
            total: 4,
            closest: Vec::new(),
        };
        let branches = GitBranches::default();
        let got = branches.branches_of(&page);
        assert_eq!(
            got,
            HashMap::from([
                (s(&repo), "feat/x".to_owned()),
                (s(&sub), "feat/x".to_owned()),
            ])
        );
        // Kept: a checkout in between shows on a later page, not on every keystroke.
        std::fs::write(repo.join(".git/HEAD"), "ref: refs/heads/other\n").unwrap();
        assert_eq!(branches.branches_of(&page), got);
        let fresh = GitBranches::default().branches_of(&page);
        assert_eq!(fresh.get(&s(&repo)).map(String::as_str), Some("other"));
    }
}
