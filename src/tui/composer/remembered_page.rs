//! The first page of the `@` popup's empty query, remembered between runs (in the store's
//! cache directory, never in the store), so a `@` typed right after start shows rows at
//! once while the store's listing is still loading; the checked answer replaces it as soon
//! as it arrives. A remembered row is offered only while its session still has a log.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use std::collections::HashMap;

use super::listed_page::ListedPage;
use dsh_reference::{Candidate, CandidatePage, SessionDetails};
use dsh_store::SessionStore;

/// The file, in the store's cache directory.
const FILE_NAME: &str = "first-page.json";
/// A remembered page larger than this is not read (it is a few KiB).
const MAX_FILE_BYTES: u64 = 512 * 1024;
/// Rows remembered: a page's worth.
pub const MAX_ROWS: usize = 60;
/// The file's format (2: rows in last-activity order, with their details).
const VERSION: u32 = 2;

/// One remembered row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Row {
    id: String,
    label: String,
    cwd: Option<String>,
    created_at: i64,
    #[serde(default)]
    last_active_ms: Option<i64>,
    #[serde(default)]
    messages: Option<u64>,
}

/// The empty query's first page as last answered for an agent in `agent_cwd`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RememberedPage {
    version: u32,
    agent_cwd: Option<String>,
    total: usize,
    rows: Vec<Row>,
}

/// Pages remembered: one per agent directory used lately, newest first, and one for an
/// agent without a directory — the order a directory holding no session of its own gets
/// (sessions without a cwd, then all others), the head start in a directory not seen yet.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RememberedPages {
    version: u32,
    pages: Vec<RememberedPage>,
}

/// Directories remembered (besides the one without).
const MAX_DIRS: usize = 8;

impl RememberedPages {
    /// The page for an agent in `agent_cwd`: its own, else the one for no directory.
    pub fn best_for(&self, agent_cwd: Option<&str>) -> Option<&RememberedPage> {
        let own = self.pages.iter().find(|p| p.fits(agent_cwd));
        own.or_else(|| self.pages.iter().find(|p| p.agent_cwd.is_none()))
    }

    /// Whether the page for no directory is there.
    pub fn has_generic(&self) -> bool {
        self.pages.iter().any(|p| p.agent_cwd.is_none())
    }

    /// Keep `page` in place of the one for its directory; the oldest directories go first.
    /// False when it was remembered already.
    pub fn upsert(&mut self, page: RememberedPage) -> bool {
        if self.pages.contains(&page) {
            return false;
        }
        self.version = VERSION;
        self.pages.retain(|p| p.agent_cwd != page.agent_cwd);
        self.pages.insert(0, page);
        let mut dirs = 0;
        self.pages.retain(|p| {
            if p.agent_cwd.is_none() {
                return true;
            }
            dirs += 1;
            dirs <= MAX_DIRS
        });
        true
    }
}

impl RememberedPage {
    /// The first rows of `listed` (the answer to the empty query for an agent in
    /// `agent_cwd`) with their details.
    pub fn of(listed: &ListedPage, agent_cwd: Option<&str>) -> Self {
        let page = &listed.page;
        RememberedPage {
            version: VERSION,
            agent_cwd: agent_cwd.map(str::to_owned),
            total: page.total,
            rows: page
                .rows
                .iter()
                .take(MAX_ROWS)
                .map(|c| {
                    let details = listed
                        .details
                        .get(&c.session_id)
                        .copied()
                        .unwrap_or_default();
                    Row {
                        id: c.session_id.clone(),
                        label: c.label.clone(),
                        cwd: c.cwd.clone(),
                        created_at: c.created_at,
                        last_active_ms: details.last_active_ms,
                        messages: details.messages,
                    }
                })
                .collect(),
        }
    }

    /// Whether it can stand in for the answer to an agent in `agent_cwd` (the order of the
    /// rows depends on it).
    pub fn fits(&self, agent_cwd: Option<&str>) -> bool {
        self.version == VERSION && self.agent_cwd.as_deref() == agent_cwd
    }

    /// The page to show at `now_ms`: the rows whose session still has a log in `store`,
    /// without the agent's own session (`exclude`), with their remembered details (no
    /// branches), their mentions' labels redacted when `redact_labels`. Reads one directory
    /// entry per row.
    pub fn verified(
        &self,
        store: &SessionStore,
        exclude: &str,
        now_ms: i64,
        redact_labels: bool,
    ) -> ListedPage {
        let kept: Vec<&Row> = self
            .rows
            .iter()
            .filter(|r| r.id != exclude && store.exists(&r.id))
            .collect();
        let details = kept
            .iter()
            .map(|r| {
                let details = SessionDetails {
                    last_active_ms: r.last_active_ms,
                    messages: r.messages,
                };
                (r.id.clone(), details)
            })
            .collect();
        let rows: Vec<Candidate> = kept
            .iter()
            .map(|r| Candidate {
                session_id: r.id.clone(),
                label: r.label.clone(),
                cwd: r.cwd.clone(),
                created_at: r.created_at,
            })
            .collect();
        let gone = self.rows.len() - rows.len();
        ListedPage {
            page: CandidatePage {
                total: self.total.saturating_sub(gone).max(rows.len()),
                rows,
                closest: Vec::new(),
            },
            details,
            branches: HashMap::new(),
            listed_at_ms: now_ms,
            redact_labels,
            ..ListedPage::default()
        }
    }
}

/// Where the remembered page of the store at `root` lives, if there is a cache directory.
pub fn path_for(root: &Path) -> Option<PathBuf> {
    dsh_store::cache::store_cache_dir(root).map(|dir| dir.join(FILE_NAME))
}

/// The pages remembered at `path`: `None` when there are none, or it is not a regular file,
/// too large, or not one this version wrote (it is only a head start: never an error).
pub fn load(path: &Path) -> Option<RememberedPages> {
    // Opened without following a link or blocking on a FIFO, and checked on the open file.
    let bytes = dsh_store::own_file::read_capped(path, MAX_FILE_BYTES).ok()?;
    let pages: RememberedPages = serde_json::from_slice(&bytes).ok()?;
    let fine = pages.version == VERSION
        && pages.pages.len() <= MAX_DIRS + 1
        && pages
            .pages
            .iter()
            .all(|p| p.version == VERSION && p.rows.len() <= MAX_ROWS);
    fine.then_some(pages)
}

/// Remember `page` at `path` (a temporary file created new, renamed over it, so a reader
/// never sees half of one and nothing is written through a link); a failure is only logged.
pub fn save(path: &Path, page: &RememberedPages) {
    let write = || -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let bytes = serde_json::to_vec(page).map_err(std::io::Error::other)?;
        dsh_store::own_file::write_replacing(path, &bytes)
    };
    if let Err(e) = write() {
        tracing::debug!(path = %path.display(), error = %e, "first page not remembered");
    }
}

/// Remember what `slot` holds when the write begins, one write at a time: two saves of
/// one run (the checked page, then the page for an unseen directory) may run at once, and
/// a write of an older snapshot finishing last (its sync can take seconds on a busy disk)
/// would undo the newer one. Each write takes the slot's latest pages, so the last write
/// holds everything.
pub fn save_latest(path: &Path, slot: &std::sync::Mutex<Option<RememberedPages>>) {
    static WRITING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _writing = WRITING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let pages = slot
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    if let Some(pages) = pages {
        save(path, &pages);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_store::SessionHeader;
    use pretty_assertions::assert_eq;

    fn candidate(id: &str) -> Candidate {
        Candidate {
            session_id: id.into(),
            label: format!("{id} title"),
            cwd: Some("/w".into()),
            created_at: 1,
        }
    }

    #[test]
    fn a_page_round_trips_and_only_sessions_with_a_log_are_offered() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path().join("store"));
        for id in ["s-a", "s-b"] {
            let mut w = store
                .open_writer(id, Some(SessionHeader::new(id, 1, Some("/w".into()))))
                .unwrap();
            w.append(vec![dsh_store::NewEvent::appended(
                dsh_store::EventData::UserMessage(dsh_store::Message::user_text("hi")),
            )])
            .unwrap();
        }
        let page = ListedPage {
            page: CandidatePage {
                rows: vec![candidate("s-a"), candidate("s-gone"), candidate("s-b")],
                total: 10,
                closest: Vec::new(),
            },
            details: HashMap::from([(
                "s-a".to_owned(),
                SessionDetails {
                    last_active_ms: Some(5),
                    messages: Some(3),
                },
            )]),
            ..ListedPage::default()
        };
        let remembered = RememberedPage::of(&page, Some("/w"));
        let mut pages = RememberedPages::default();
        assert!(pages.upsert(remembered.clone()));
        assert!(!pages.upsert(remembered.clone()), "the same page again");
        let path = dir.path().join("cache").join(FILE_NAME);
        save(&path, &pages);
        let back = load(&path).unwrap();
        assert_eq!(back, pages);
        assert_eq!(back.best_for(Some("/w")), Some(&remembered));
        assert_eq!(
            back.best_for(Some("/elsewhere")),
            None,
            "ranked for another dir"
        );
        let back = back.best_for(Some("/w")).unwrap();
        let shown = back.verified(&store, "s-b", 99, true);
        let ids: Vec<&str> = shown
            .page
            .rows
            .iter()
            .map(|c| c.session_id.as_str())
            .collect();
        assert_eq!(ids, ["s-a"], "gone and own session left out");
        assert_eq!(shown.page.total, 8);
        assert_eq!(shown.details, page.details, "details kept");
        assert_eq!(shown.listed_at_ms, 99);
    }

    #[test]
    fn a_dir_not_seen_gets_the_page_for_no_dir_and_old_dirs_are_forgotten() {
        let page = |cwd: Option<&str>, id: &str| {
            RememberedPage::of(
                &ListedPage {
                    page: CandidatePage {
                        rows: vec![candidate(id)],
                        total: 1,
                        closest: Vec::new(),
                    },
                    ..ListedPage::default()
                },
                cwd,
            )
        };
        let mut pages = RememberedPages::default();
        pages.upsert(page(None, "generic"));
        for n in 0..12 {
            pages.upsert(page(Some(&format!("/p{n}")), &format!("s{n}")));
        }
        assert!(pages.has_generic());
        assert_eq!(pages.pages.len(), MAX_DIRS + 1);
        assert_eq!(
            pages.best_for(Some("/p11")),
            Some(&page(Some("/p11"), "s11"))
        );
        assert_eq!(pages.best_for(Some("/p4")), Some(&page(Some("/p4"), "s4")));
        assert_eq!(
            pages.best_for(Some("/p3")),
            Some(&page(None, "generic")),
            "forgotten: the oldest dirs go first"
        );
        assert_eq!(pages.best_for(Some("/new")), Some(&page(None, "generic")));
        pages.upsert(page(Some("/p4"), "again"));
        assert_eq!(
            pages.best_for(Some("/p4")),
            Some(&page(Some("/p4"), "again"))
        );
    }

    #[test]
    fn what_is_not_a_page_of_this_version_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        assert_eq!(load(&path), None, "absent");
        // Version 1 held rows in creation order: not shown as the last-activity order.
        let v1 = r#"{"version":1,"pages":[{"version":1,"agent_cwd":null,"total":1,"rows":[{"id":"s","label":"l","cwd":null,"created_at":1}]}]}"#;
        for text in ["", "{", "[]", r#"{"version":3,"pages":[]}"#, v1] {
            std::fs::write(&path, text).unwrap();
            assert_eq!(load(&path), None, "{text:?}");
        }
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        assert_eq!(load(&path), None, "a directory");
        std::fs::remove_dir(&path).unwrap();
        std::fs::write(&path, vec![b' '; 600 * 1024]).unwrap();
        assert_eq!(load(&path), None, "too large");
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", &path).unwrap();
        assert_eq!(load(&path), None, "a link");
    }
}
