//! [`SessionIndex`]: the full-text index of one store — open it, keep it up to date
//! ([`SessionIndex::refresh`], in `index_update`), search it with every hit checked against
//! the store.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};

use dsh_foreign::{ForeignSource, Origin};
use tantivy::collector::TopDocs;
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{DocAddress, DocId, Score, Searcher, SegmentReader, TantivyDocument};

use crate::cache_location;
use crate::engine::{self, DirKind, Engine};
use crate::error::SearchError;
use crate::foreign_logs;
use crate::log_state::{Change, LogState};
use crate::long_sessions::{self, LongHit};
use crate::query_plan;
use crate::query_syntax::{self, ParsedQuery};
use crate::schema::Fields;
use crate::session_doc::{self, StoredSession};
use crate::session_text::{self, IndexedMessage};
use crate::snippets::{self, Snippet};
use crate::store_logs;
use crate::text_analysis;

/// Snippets per hit at most.
const SNIPPETS_PER_HIT: usize = 3;
/// How much a session active right now gains over an old one (a factor of `1 + RECENCY`).
const RECENCY: f32 = 0.5;
/// Age at which the recency gain has halved, in days.
const RECENCY_HALF_LIFE_DAYS: f32 = 30.0;

/// Where the index lives.
#[derive(Debug, Clone, Default)]
pub struct IndexOptions {
    /// The index directory; `None` for the default under the platform cache dir.
    pub index_dir: Option<PathBuf>,
}

/// A way to stop a running update or search early; cheap to clone and to check.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    pub fn new() -> Self {
        Self::default()
    }
    /// Ask the operations holding this token to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Progress of an update: `done` of `total` sessions are in the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Progress {
    pub done: usize,
    pub total: usize,
}

/// What the index is doing, for a status line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IndexStatus {
    /// An update is running in this process.
    pub updating: bool,
    pub progress: Progress,
    /// Another process holds the writer lock: this one searches what is committed.
    pub busy_elsewhere: bool,
    /// Something the user should know (index rebuilt, kept in memory only).
    pub notice: Option<String>,
}

/// One session found by a search.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    pub session_id: String,
    /// Latest title, else the id.
    pub label: String,
    /// The session's title, when it has one.
    pub title: Option<String>,
    pub cwd: Option<String>,
    /// Header `createdAt`, Unix ms.
    pub created_at: i64,
    /// BM25 with the recency boost; higher is better.
    pub score: f32,
    pub snippets: Vec<Snippet>,
    /// The tool the session comes from (dsh, or a read-only foreign source).
    pub origin: Origin,
}

/// The full-text index of one store.
pub struct SessionIndex {
    pub(crate) root: PathBuf,
    /// Whose directory the index is in (a rebuild repairs our own cache location only).
    dir_kind: DirKind,
    engine: RwLock<Arc<Engine>>,
    pub(crate) status: Mutex<IndexStatus>,
    pub(crate) analyzer: TextAnalyzer,
    /// Every log and its stamp as of the last complete update of the whole store, so a
    /// change check ([`SessionIndex::refresh_if_changed`]) needs no index access.
    pub(crate) last_listing: Mutex<Option<Vec<(String, dsh_store::listing::Stamp)>>>,
    /// Other tools' sessions indexed beside the store's.
    pub(crate) foreign: Vec<ForeignSource>,
    /// Bytes of message text per piece (docs/search.md: long sessions).
    pub(crate) piece_bytes: usize,
    /// The store itself: a hit is answered only when its listing lists that session at that
    /// log ([`with_store`](SessionIndex::with_store)).
    pub(crate) store: dsh_store::SessionStore,
}

impl std::fmt::Debug for SessionIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionIndex")
            .field("root", &self.root)
            .field("engine", &self.engine)
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl SessionIndex {
    /// Open (or create) the index of the store at `store_root`. A damaged index or one of
    /// another format is rebuilt from nothing; when no directory can be used the index is
    /// kept in memory. Either way [`status`](Self::status) carries a notice. Nothing is
    /// written to the store. An index directory that is not ours to use — not empty and
    /// without our mark, or inside, at or above the store — is
    /// [`SearchError::IndexDirRefused`], nothing in it touched.
    pub fn open(store_root: &Path, options: &IndexOptions) -> Result<SessionIndex, SearchError> {
        let (dir, kind) = match &options.index_dir {
            Some(dir) => (Some(dir.clone()), DirKind::Configured),
            None => (
                cache_location::default_index_dir(store_root),
                DirKind::OwnCache,
            ),
        };
        let (engine, notice) = match dir {
            Some(dir) => match cache_location::check_apart(&dir, store_root)
                .and_then(|()| engine::open_dir(&dir, kind))
            {
                Ok(opened) => opened,
                // A directory not ours to use: said so, never replaced by a quiet fallback.
                Err(e @ SearchError::IndexDirRefused { .. }) => return Err(e),
                Err(e) => (
                    engine::in_memory()?,
                    Some(format!("{e}; using an in-memory index for this run")),
                ),
            },
            None => (
                engine::in_memory()?,
                Some("no cache directory; using an in-memory index for this run".into()),
            ),
        };
        Ok(SessionIndex {
            root: store_root.to_owned(),
            dir_kind: kind,
            engine: RwLock::new(Arc::new(engine)),
            status: Mutex::new(IndexStatus {
                notice,
                ..IndexStatus::default()
            }),
            analyzer: text_analysis::analyzer(),
            last_listing: Mutex::new(None),
            foreign: Vec::new(),
            piece_bytes: session_text::PIECE_BYTES,
            store: dsh_store::SessionStore::new(store_root),
        })
    }

    /// Index these foreign sources' sessions too (docs/foreign-sources.md): listed and
    /// stamped like the store's logs, read whole when they change, found with their origin.
    /// Sessions of a source left out are dropped from the index at the next update.
    #[must_use]
    pub fn with_foreign_sources(mut self, sources: Vec<ForeignSource>) -> SessionIndex {
        self.foreign = sources;
        self
    }

    /// Check hits against this store's listing (the caller's, with its warm listing and
    /// limits) instead of one of the index's own, which reads every header at the first
    /// search. It must be the store at this index's root.
    #[must_use]
    pub fn with_store(mut self, store: dsh_store::SessionStore) -> SessionIndex {
        self.store = store;
        self
    }

    /// Index sessions in pieces of at most `bytes` of message text instead of
    /// [`PIECE_BYTES`](session_text::PIECE_BYTES) (docs/search.md: long sessions): for tests
    /// and measurements. Pieces already indexed stay as they are until their log changes.
    #[must_use]
    pub fn with_piece_bytes(mut self, bytes: usize) -> SessionIndex {
        self.piece_bytes = bytes.max(1);
        self
    }

    /// The store root this index covers.
    pub fn store_root(&self) -> &Path {
        &self.root
    }

    /// The index directory (`None` when in memory).
    pub fn index_dir(&self) -> Option<PathBuf> {
        self.engine().dir.clone()
    }

    /// What the index is doing right now.
    pub fn status(&self) -> IndexStatus {
        lock(&self.status).clone()
    }

    pub(crate) fn engine(&self) -> Arc<Engine> {
        self.engine
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Throw the index away and start an empty one in the same place (after damage found
    /// while using it), with a notice.
    pub(crate) fn rebuild(&self, why: &str) -> Result<(), SearchError> {
        let old = self.engine();
        let fresh = match &old.dir {
            Some(dir) => {
                engine::wipe(dir)?;
                engine::open_dir(dir, self.dir_kind)?.0
            }
            None => engine::in_memory()?,
        };
        *self.engine.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(fresh);
        lock(&self.status).notice = Some(format!("search index {why}; rebuilding it"));
        Ok(())
    }

    /// Sessions matching `query`, best first, at most `limit` (see the crate docs for the
    /// query language). An empty query finds nothing.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>, SearchError> {
        self.search_cancellable(query, limit, &Cancel::new())
    }

    /// [`search`](Self::search) that stops with [`SearchError::Cancelled`] once `cancel` is
    /// set (checked between hits).
    pub fn search_cancellable(
        &self,
        query: &str,
        limit: usize,
        cancel: &Cancel,
    ) -> Result<Vec<SearchHit>, SearchError> {
        let mut analyzer = self.analyzer.clone();
        let parsed = query_syntax::parse(&mut analyzer, query)?;
        if parsed.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let engine = self.engine();
        engine.reader.reload()?;
        let searcher = engine.reader.searcher();
        let mut plan = query_plan::build(&searcher, &engine.fields, &parsed);
        let has_long = long_sessions::piece_count(&searcher, &engine.fields) > 0;
        if has_long {
            plan = long_sessions::one_piece_only(plan, &engine.fields);
        }
        let now = dsh_store::event::now_ms();
        // Some hits may turn out stale; ask for a few more than needed.
        let wanted = limit.saturating_mul(2).saturating_add(4);
        let top = searcher.search(
            &plan,
            &TopDocs::with_limit(wanted).tweak_score(move |segment: &SegmentReader| {
                let times = segment
                    .fast_fields()
                    .i64("time")
                    .ok()
                    .map(|c| c.first_or_default_col(0));
                move |doc: DocId, score: Score| {
                    let time = times.as_ref().map_or(0, |c| c.get_val(doc));
                    score * recency_factor(now, time)
                }
            }),
        )?;
        let long = if has_long {
            long_sessions::search(
                &searcher,
                &engine.fields,
                &parsed,
                &|time| recency_factor(now, time),
                SNIPPETS_PER_HIT,
            )?
        } else {
            Vec::new()
        };
        let mut found: Vec<(f32, Found)> = top
            .into_iter()
            .map(|(score, address)| (score, Found::OnePiece(address)))
            .chain(long.into_iter().map(|hit| (hit.score, Found::Long(hit))))
            .collect();
        // Stable: sessions of one piece keep the engine's order among equal scores.
        found.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut hits = Vec::with_capacity(limit.min(found.len()));
        let mut listed = false;
        for (score, found) in found {
            if cancel.is_cancelled() {
                return Err(SearchError::Cancelled);
            }
            let Some(stored) = stored_of_found(&searcher, &engine.fields, &found)? else {
                continue;
            };
            if !listed {
                // The store's listing, brought up to date once per search.
                dsh_store::SessionQuery::list_sessions(&self.store)?;
                listed = true;
            }
            if !self.is_listed(&stored) {
                continue;
            }
            if let Some(hit) = self.checked_hit(&mut analyzer, &parsed, stored, score) {
                hits.push(hit);
                if hits.len() == limit {
                    break;
                }
            }
        }
        Ok(hits)
    }

    /// Whether the session of `stored` is one its source lists, at the very log indexed: a
    /// dsh log the store's listing leaves out (its header id does not match its directory,
    /// a damaged header, a link) or lists at another log is never answered.
    fn is_listed(&self, stored: &StoredSession) -> bool {
        let Some(state) = stored.state.as_ref() else {
            return false;
        };
        let origin = state.origin();
        if origin == Origin::Dsh {
            let indexed = stored
                .path
                .split('/')
                .fold(self.store.root().to_owned(), |p, part| p.join(part));
            return self
                .store
                .listed_location(&stored.id)
                .is_some_and(|loc| loc.path == indexed);
        }
        // Another tool's session: indexed from its source's own listing; one that source now
        // lists at another log (an id held by two logs) is not answered from this one.
        let Some(source) = self.foreign.iter().find(|s| *s.origin() == origin) else {
            return false;
        };
        let Some(path) = foreign_logs::path_of_key(&origin, &stored.path) else {
            return false;
        };
        source
            .path_of(&stored.id)
            .is_none_or(|listed| listed == Path::new(path))
    }

    /// The hit for `stored` as the store has it now: as indexed when its log is unchanged,
    /// read afresh (and matched again) when it changed, dropped when it is gone.
    fn checked_hit(
        &self,
        analyzer: &mut TextAnalyzer,
        parsed: &ParsedQuery,
        stored: StoredSession,
        score: f32,
    ) -> Option<SearchHit> {
        let state = stored.state.as_ref()?;
        let origin = state.origin();
        let format = if state.zstd {
            dsh_store::reader::LogFormat::Zstd
        } else {
            dsh_store::reader::LogFormat::Plain
        };
        let budget = self.piece_bytes;
        // An unchanged log matched in the index as it is; a changed one is read again, in
        // pieces, and must match again.
        let current = if origin == Origin::Dsh {
            let (abs, stamp) = store_logs::stat(&self.root, &stored.path)?;
            if state.change(&stamp, format) == Change::Unchanged {
                stored
            } else {
                fresh_match(analyzer, parsed, &stored.path, &mut |emit| {
                    session_text::read_pieces(&abs, format, budget, emit)
                })?
            }
        } else {
            // Only the sources this index was given are searched.
            let source = self.foreign.iter().find(|s| *s.origin() == origin)?;
            let path = foreign_logs::path_of_key(&origin, &stored.path)?;
            let stamp = foreign_logs::stat(source, Path::new(path))?;
            if state.change(&stamp, format) == Change::Unchanged {
                stored
            } else {
                let id = stored.id.clone();
                fresh_match(analyzer, parsed, &stored.path, &mut |emit| {
                    foreign_logs::read_pieces(source, &id, budget, emit)
                })?
            }
        };
        let snippets = snippets::snippets(analyzer, parsed, &current.messages, SNIPPETS_PER_HIT);
        Some(SearchHit {
            label: current.title.clone().unwrap_or_else(|| current.id.clone()),
            session_id: current.id,
            title: current.title,
            cwd: current.cwd,
            created_at: current.created_at,
            score,
            snippets,
            origin,
        })
    }
}

/// A hit before it is checked against the store.
enum Found {
    /// A session in one piece: its document.
    OnePiece(DocAddress),
    /// A session in several pieces.
    Long(LongHit),
}

/// The stored session of `found`; for a long session, its lead's fields with the messages
/// of the pieces that matched best (docs/search.md: long sessions).
fn stored_of_found(
    searcher: &Searcher,
    fields: &Fields,
    found: &Found,
) -> Result<Option<StoredSession>, SearchError> {
    match found {
        Found::OnePiece(address) => {
            let doc: TantivyDocument = searcher.doc(*address)?;
            Ok(session_doc::stored(fields, &doc))
        }
        Found::Long(hit) => {
            let doc: TantivyDocument = searcher.doc(hit.lead)?;
            let Some(mut lead) = session_doc::stored(fields, &doc) else {
                return Ok(None);
            };
            let mut messages = Vec::new();
            for address in &hit.pieces {
                if *address == hit.lead {
                    messages.append(&mut lead.messages.clone());
                    continue;
                }
                let doc: TantivyDocument = searcher.doc(*address)?;
                messages.extend(session_doc::stored_messages(fields, &doc).unwrap_or_default());
            }
            lead.messages = messages;
            Ok(Some(lead))
        }
    }
}

/// A changed log read again by `read`, in pieces: the session, when every clause of
/// `parsed` still matches its messages, id, cwd or title. Its messages are all of them for a
/// session of one piece; for a longer one, the pieces where clauses first matched (at most
/// [`SNIPPETS_PER_HIT`]), so a re-read holds a few pieces however long the log is.
fn fresh_match(
    analyzer: &mut TextAnalyzer,
    parsed: &ParsedQuery,
    rel: &str,
    read: &mut dyn FnMut(&mut session_text::EmitPiece<'_>) -> session_text::PieceRead,
) -> Option<StoredSession> {
    let mut seen = Rematch {
        found: vec![false; parsed.clauses.len()],
        shown: Vec::new(),
        emitted: 0,
    };
    let (meta, last) = read(&mut |piece| {
        seen.emitted += 1;
        seen.look(analyzer, parsed, piece);
        Ok(())
    })
    .ok()?;
    let emitted = seen.emitted;
    let header_texts = [
        Some(meta.header.id.as_str()),
        meta.header.cwd.as_deref(),
        meta.title.as_deref(),
    ];
    let meta_piece: Vec<IndexedMessage> = header_texts
        .into_iter()
        .flatten()
        .map(|text| IndexedMessage {
            role: dsh_store::projection::TurnRole::User,
            checkpoint: false,
            seq: 0,
            time: 0,
            text: text.to_owned(),
            number: 0,
        })
        .collect();
    seen.found_in(analyzer, parsed, &meta_piece);
    let messages = if emitted == 0 {
        seen.found_in(analyzer, parsed, &last);
        last
    } else {
        seen.look(analyzer, parsed, last);
        std::mem::take(&mut seen.shown)
            .into_iter()
            .flatten()
            .collect()
    };
    if !seen.found.iter().all(|f| *f) {
        return None;
    }
    Some(StoredSession {
        path: rel.to_owned(),
        id: meta.header.id,
        cwd: meta.header.cwd,
        title: meta.title,
        created_at: meta.header.created_at,
        last_time: meta.last_time,
        messages,
        state: None::<LogState>,
        piece: 0,
        split: emitted > 0,
    })
}

/// What a re-read of a changed log has matched so far.
struct Rematch {
    /// Per clause: matched somewhere.
    found: Vec<bool>,
    /// Pieces where some clause matched first, at most [`SNIPPETS_PER_HIT`].
    shown: Vec<Vec<IndexedMessage>>,
    /// Full pieces read.
    emitted: usize,
}

impl Rematch {
    /// Match `piece`'s messages; keep it to show when a clause matched there first.
    fn look(
        &mut self,
        analyzer: &mut TextAnalyzer,
        parsed: &ParsedQuery,
        piece: Vec<IndexedMessage>,
    ) {
        if self.found_in(analyzer, parsed, &piece) && self.shown.len() < SNIPPETS_PER_HIT {
            self.shown.push(piece);
        }
    }

    /// Mark the clauses not found before that match in `texts`; whether any did.
    fn found_in(
        &mut self,
        analyzer: &mut TextAnalyzer,
        parsed: &ParsedQuery,
        texts: &[IndexedMessage],
    ) -> bool {
        let mut new = false;
        for (clause, found) in parsed.clauses.iter().zip(self.found.iter_mut()) {
            if *found {
                continue;
            }
            let one = ParsedQuery {
                clauses: vec![clause.clone()],
            };
            if snippets::all_clauses_match(analyzer, &one, texts.iter().map(|m| m.text.as_str())) {
                *found = true;
                new = true;
            }
        }
        new
    }
}

/// `1 + RECENCY` for a session active now, halving its gain every half-life.
fn recency_factor(now_ms: i64, time_ms: i64) -> f32 {
    // Whole days are precise enough for a boost (and fit an f32 exactly).
    let days = (now_ms.saturating_sub(time_ms)).max(0) / 86_400_000;
    let age_days = f32::from(u16::try_from(days).unwrap_or(u16::MAX));
    1.0 + RECENCY * 0.5f32.powf(age_days / RECENCY_HALF_LIFE_DAYS)
}
