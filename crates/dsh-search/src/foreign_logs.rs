//! Other tools' sessions (Claude Code, Codex CLI, Gemini CLI, OpenCode;
//! docs/foreign-sources.md) as the index sees them: listed through their read-only
//! [`ForeignSource`], keyed `<origin>:<where the source keeps it>` (a log file; for an
//! OpenCode session in its database, `<db>#<id>`), stamped by the source, and read whole
//! (through the same folded surface and projection, in pieces: docs/search.md, long
//! sessions) whenever their stamp changes.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use dsh_foreign::{ForeignSource, Origin};
use dsh_store::listing::Stamp;
use dsh_store::reader::LogFormat;
use dsh_store::{Event, SessionQuery, SurfaceVisitor};

use crate::session_text::{self, EmitPiece, IndexedMessage, PieceBuilder, PieceRead, SessionMeta};
use crate::store_logs::LogFile;

/// The index key of a foreign log.
pub fn key(origin: &Origin, path: &Path) -> String {
    format!("{}:{}", origin.as_str(), path.display())
}

/// The log path a foreign key names.
pub fn path_of_key<'k>(origin: &Origin, key: &'k str) -> Option<&'k str> {
    key.strip_prefix(origin.as_str())?.strip_prefix(':')
}

/// The current stamp of a foreign session kept at `path`, as its source tells it (no link
/// is followed below a foreign root); `None` when it is gone.
pub fn stat(source: &ForeignSource, path: &Path) -> Option<Stamp> {
    source.stamp_at(path)
}

/// Every session log of the foreign sources, and the origins whose listing failed (their
/// indexed sessions are kept, not dropped, until they can be listed again).
pub fn list(sources: &[ForeignSource]) -> (Vec<LogFile>, HashSet<Origin>) {
    let mut out = Vec::new();
    let mut failed = HashSet::new();
    for source in sources {
        let headers = match source.list_sessions() {
            Ok(h) => h,
            Err(e) => {
                tracing::warn!(origin = %source.origin(), error = %e, "foreign sessions not indexed");
                failed.insert(source.origin().clone());
                continue;
            }
        };
        for header in headers.iter() {
            let Some(path) = source.path_of(&header.id) else {
                continue;
            };
            let Some(stamp) = stat(source, &path) else {
                continue;
            };
            out.push(LogFile {
                rel: key(source.origin(), &path),
                abs: path,
                format: LogFormat::Plain,
                stamp,
                origin: source.origin().clone(),
                id: Some(header.id.clone()),
            });
        }
    }
    (out, failed)
}

/// Surface items read again per batch when a long foreign session is read in pieces.
const REREAD_BATCH: usize = 256;

/// A foreign session's indexed content in pieces of at most `budget` bytes of text: its
/// surface projected like a dsh session's. Full pieces go to `emit`; the last one comes back
/// with the session's fields. A session whose text fits one piece is read in one pass; a
/// longer one streams its surface once and reads its items again in batches (docs/search.md:
/// long sessions).
pub fn read_pieces(
    source: &ForeignSource,
    id: &str,
    budget: usize,
    emit: &mut EmitPiece<'_>,
) -> PieceRead {
    let mut kept = Kept {
        budget,
        messages: HashMap::new(),
        times: HashMap::new(),
        bytes: 0,
        overflow: false,
        max_time: None,
    };
    let mut scan = source.scan_surface(id, &mut kept)?;
    let title = source.read_title(id)?;
    let seqs = scan.surface_seqs();
    let last_time = if kept.overflow {
        kept.max_time
    } else {
        seqs.iter().filter_map(|s| kept.times.get(s)).copied().max()
    }
    .unwrap_or(scan.session.created_at);
    let last = if kept.overflow {
        let mut builder = PieceBuilder::new(budget, emit);
        let mut at = 0usize;
        for batch in seqs.chunks(REREAD_BATCH) {
            for event in scan.reread(batch)? {
                if let Some(m) = session_text::message_of(&event) {
                    builder.push((0, at as u64), m)?;
                }
                at += 1;
            }
        }
        builder.finish()
    } else {
        let mut messages: Vec<IndexedMessage> = seqs
            .iter()
            .filter_map(|s| kept.messages.remove(s))
            .collect();
        session_text::number_from_one(&mut messages);
        messages
    };
    Ok((
        SessionMeta {
            header: scan.session,
            title,
            resume: None,
            last_time,
        },
        last,
    ))
}

/// What a first pass over a foreign surface keeps: the projected messages and event times
/// while they fit one piece; past that, only the latest time seen.
struct Kept {
    budget: usize,
    messages: HashMap<u64, IndexedMessage>,
    times: HashMap<u64, i64>,
    bytes: usize,
    overflow: bool,
    max_time: Option<i64>,
}

impl SurfaceVisitor for Kept {
    fn visit(&mut self, event: &Event, removed: &[u64]) {
        self.max_time = Some(self.max_time.map_or(event.time, |t| t.max(event.time)));
        if self.overflow {
            return;
        }
        for seq in removed {
            self.times.remove(seq);
            if let Some(m) = self.messages.remove(seq) {
                self.bytes -= m.text.len();
            }
        }
        self.times.insert(event.seq, event.time);
        if let Some(m) = session_text::message_of(event) {
            self.bytes += m.text.len();
            self.messages.insert(event.seq, m);
        }
        if self.bytes > self.budget {
            self.overflow = true;
            self.messages = HashMap::new();
            self.times = HashMap::new();
        }
    }
}
