//! Other tools' sessions (Claude Code, Codex CLI, Gemini CLI, OpenCode;
//! docs/foreign-sources.md) as the index sees them: listed through their read-only
//! [`ForeignSource`], keyed `<origin>:<where the source keeps it>` (a log file; for an
//! OpenCode session in its database, `<db>#<id>`), stamped by the source, and read whole
//! (through the same folded surface and projection) whenever their stamp changes.

use std::collections::HashSet;
use std::path::Path;

use dsh_foreign::{ForeignSource, Origin};
use dsh_store::listing::Stamp;
use dsh_store::reader::LogFormat;
use dsh_store::{QueryError, SessionQuery};

use crate::session_text::{self, IndexedMessage, SessionText};
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

/// A foreign session's indexed content: its surface projected like a dsh session's.
pub fn read(source: &ForeignSource, id: &str) -> Result<SessionText, QueryError> {
    let surface = source.read_surface(id)?;
    let title = source.read_title(id)?;
    let messages: Vec<IndexedMessage> = surface
        .events
        .iter()
        .filter_map(session_text::message_of)
        .collect();
    let last_time = surface
        .events
        .iter()
        .map(|e| e.time)
        .max()
        .unwrap_or(surface.session.created_at);
    Ok(SessionText {
        header: surface.session,
        title,
        messages,
        resume: None,
        last_time,
    })
}
