//! Claude Code session logs (`<projects>/<encoded-cwd>/<session-uuid>.jsonl`): one JSON record
//! per line (`user`, `assistant`, `summary`, `system`, `file-history-snapshot`, …) linked into
//! a tree by `uuid` / `parentUuid`.
//!
//! The visible conversation is the chain of parents that ends at the last record: records
//! of edited or retried branches are off that chain. On it, only what the person typed and
//! the assistant's `text` blocks count; tool results, thinking, tool calls, sidechain
//! (sub-agent) records and meta/command records are left out. A compaction starts a new
//! root (a `compact_boundary` record without a parent), so the chain stops there, and the
//! compaction summary that follows it becomes a checkpoint.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::hash::{BuildHasher, RandomState};
use std::io::{BufReader, Seek, SeekFrom};
use std::path::Path;

use serde::Deserialize;

use dsh_store::{Event, QueryError};

use super::claude_user_text::typed_text;
use super::jsonl::{JsonlLines, LineAt, Parsed, for_each_record, parse_line};
use super::log_meta::{LogMeta, TitleCleaner, title_text};
use super::open_file::open_regular;
use super::surface_events::{ItemKind, item_event, parse_time_ms};

/// The fields listing needs from any record.
#[derive(Debug, Deserialize)]
struct MetaRecord {
    #[serde(rename = "type")]
    kind: Option<String>,
    uuid: Option<String>,
    cwd: Option<String>,
    timestamp: Option<String>,
    #[serde(rename = "sessionId")]
    session_id: Option<String>,
    /// `summary`: the text and the last record of the conversation it describes.
    summary: Option<String>,
    #[serde(rename = "leafUuid")]
    leaf_uuid: Option<String>,
    /// `custom-title`: the name the person gave the session.
    #[serde(rename = "customTitle")]
    custom_title: Option<String>,
    /// `ai-title`: the title Claude Code generated.
    #[serde(rename = "aiTitle")]
    ai_title: Option<String>,
    #[serde(rename = "isSidechain")]
    is_sidechain: Option<bool>,
    /// The git branch the record was written on (on every record; empty outside a
    /// repository).
    #[serde(rename = "gitBranch")]
    git_branch: Option<String>,
}

/// The fields that place a record in the conversation tree.
#[derive(Debug, Deserialize)]
struct LinkRecord {
    uuid: Option<String>,
    #[serde(rename = "parentUuid")]
    parent_uuid: Option<String>,
    #[serde(rename = "isSidechain")]
    is_sidechain: Option<bool>,
}

/// A conversation record with its message.
#[derive(Debug, Deserialize)]
struct MessageRecord {
    #[serde(rename = "type")]
    kind: Option<String>,
    uuid: Option<String>,
    timestamp: Option<String>,
    #[serde(rename = "isSidechain")]
    is_sidechain: Option<bool>,
    #[serde(rename = "isMeta")]
    is_meta: Option<bool>,
    #[serde(rename = "isCompactSummary")]
    is_compact_summary: Option<bool>,
    message: Option<ClaudeMessage>,
}

#[derive(Debug, Deserialize)]
struct ClaudeMessage {
    content: Option<Content>,
}

/// `content`: a plain string or a list of blocks.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Content {
    Text(String),
    Blocks(Vec<Block>),
}

#[derive(Debug, Deserialize)]
struct Block {
    #[serde(rename = "type")]
    kind: Option<String>,
    text: Option<String>,
}

impl Content {
    /// The text blocks that show something, joined with `\n` (tool results, thinking,
    /// images and whitespace-only blocks left out); in a user record only what the person
    /// typed (`claude_user_text`).
    fn text(self, user: bool) -> String {
        let keep = |t: String| {
            if user {
                typed_text(&t)
            } else {
                (!t.trim().is_empty()).then_some(t)
            }
        };
        match self {
            Content::Text(t) => keep(t).unwrap_or_default(),
            Content::Blocks(blocks) => {
                let texts: Vec<String> = blocks
                    .into_iter()
                    .filter(|b| b.kind.as_deref() == Some("text"))
                    .filter_map(|b| b.text)
                    .filter_map(keep)
                    .collect();
                texts.join("\n")
            }
        }
    }
}

/// The visible item of one record on the chain, if it has one.
fn item_of(record: MessageRecord) -> Option<(ItemKind, String, i64, String)> {
    if record.is_sidechain == Some(true) {
        return None;
    }
    let kind = match record.kind.as_deref() {
        Some("user") if record.is_compact_summary == Some(true) => ItemKind::Checkpoint,
        Some("user") if record.is_meta == Some(true) => return None,
        Some("user") => ItemKind::User,
        Some("assistant") => ItemKind::Assistant,
        _ => return None,
    };
    let text = record.message?.content?.text(kind == ItemKind::User);
    if text.trim().is_empty() {
        return None;
    }
    let time = record
        .timestamp
        .as_deref()
        .and_then(parse_time_ms)
        .unwrap_or(0);
    Some((kind, text, time, record.uuid.unwrap_or_default()))
}

/// Continue (or start) the listing scan of `path` from `meta.resume`.
///
/// Titles (docs/foreign-sources.md): the newest `custom-title`, then the newest `ai-title`
/// (both only for this session's id), then the newest `summary` whose `leafUuid` is a record
/// of this log — Claude Code also writes summaries of *other* sessions into a log — then the
/// first request. A summary may come before or after its leaf: one seen before waits in
/// `meta.pending_summaries`; one whose leaf an earlier scan of a grown log may have passed
/// makes the scan start over from the beginning (once).
pub fn scan_meta(
    path: &Path,
    meta: LogMeta,
    max_line_bytes: u64,
    clean: TitleCleaner,
) -> Result<LogMeta, QueryError> {
    match scan_meta_from(path, meta, max_line_bytes, clean)? {
        Scanned::Done(meta) => Ok(*meta),
        Scanned::StartOver => {
            match scan_meta_from(path, LogMeta::default(), max_line_bytes, clean)? {
                Scanned::Done(meta) => Ok(*meta),
                // From the beginning every earlier record is seen: a second start over cannot
                // happen; answer with nothing rather than loop.
                Scanned::StartOver => Ok(LogMeta::default()),
            }
        }
    }
}

/// How a listing scan ended.
enum Scanned {
    Done(Box<LogMeta>),
    /// A summary's leaf may be in the part of the log a previous scan read.
    StartOver,
}

fn scan_meta_from(
    path: &Path,
    mut meta: LogMeta,
    max_line_bytes: u64,
    clean: TitleCleaner,
) -> Result<Scanned, QueryError> {
    let (offset, line) = meta.resume.unwrap_or((0, 1));
    if meta.resume.is_none() {
        meta = LogMeta::default();
    }
    if meta.native_id.is_none() {
        meta.native_id = path
            .file_stem()
            .and_then(|s| s.to_str())
            .filter(|s| !s.is_empty())
            .map(str::to_owned);
    }
    let mut file = open_regular(path)?;
    file.seek(SeekFrom::Start(offset))
        .map_err(|e| io_err(path, e))?;
    let mut lines = JsonlLines::new(
        path,
        BufReader::with_capacity(64 * 1024, file),
        max_line_bytes,
        offset,
        line,
    );
    // The records of this pass (keyed hashes, 8 bytes each), for summaries after their leaf.
    let hasher = RandomState::new();
    let mut seen: HashSet<u64> = HashSet::new();
    let mut result = Ok(());
    loop {
        let (at, record) = match lines.next_record::<MetaRecord>() {
            Err(e) => {
                result = Err(e);
                break;
            }
            Ok(None) => break,
            Ok(Some(found)) => found,
        };
        let this_session = record
            .session_id
            .as_deref()
            .is_none_or(|s| Some(s) == meta.native_id.as_deref());
        match record.kind.as_deref() {
            Some("summary") => {
                if let (Some(text), Some(leaf)) = (
                    record.summary.as_deref().and_then(title_text),
                    record.leaf_uuid,
                ) {
                    if seen.contains(&hasher.hash_one(&leaf)) {
                        meta.see_own_summary(at.number, text);
                    } else {
                        meta.see_pending_summary(leaf, at.number, text);
                    }
                }
                continue;
            }
            Some("custom-title") => {
                if let Some(t) = record.custom_title.as_deref().and_then(title_text)
                    && this_session
                {
                    meta.custom_title = Some(t);
                }
                continue;
            }
            Some("ai-title") => {
                if let Some(t) = record.ai_title.as_deref().and_then(title_text)
                    && this_session
                {
                    meta.ai_title = Some(t);
                }
                continue;
            }
            _ => {}
        }
        if let Some(uuid) = &record.uuid {
            seen.insert(hasher.hash_one(uuid));
            meta.see_record(uuid);
        }
        if record.is_sidechain == Some(true) {
            continue;
        }
        if meta.created_at.is_none() {
            meta.created_at = record.timestamp.as_deref().and_then(parse_time_ms);
        }
        if meta.cwd.is_none() {
            meta.cwd = record.cwd.filter(|c| !c.is_empty());
        }
        if let Some(branch) = record.git_branch.filter(|b| !b.trim().is_empty()) {
            meta.branch = Some(branch);
        }
        if record.kind.as_deref() == Some("user") && !meta.first_user_seen {
            // Read the line again for its message only when a title still needs it.
            if let Some(text) = first_user_text(path, at, max_line_bytes)? {
                meta.see_user_text(&text, clean);
            }
        }
    }
    meta.resume = match result {
        Ok(()) => Some(lines.resume_at()),
        Err(e @ QueryError::Io { .. }) => return Err(e),
        Err(e) => {
            tracing::warn!(error = %e, "Claude Code log damaged; listed with what was read");
            None
        }
    };
    // A summary found in this pass of a grown log whose leaf was not in this pass may name a
    // record of the part read before: only a scan from the beginning can tell.
    let unsure = offset > 0 && meta.pending_summaries.iter().any(|p| p.line >= line);
    if unsure {
        return Ok(Scanned::StartOver);
    }
    Ok(Scanned::Done(Box::new(meta)))
}

/// The typed text of the user record at `at`, if it is one the person wrote.
fn first_user_text(
    path: &Path,
    at: LineAt,
    max_line_bytes: u64,
) -> Result<Option<String>, QueryError> {
    let body = read_line_at(path, at, max_line_bytes)?;
    Ok(match parse_line::<MessageRecord>(&body) {
        Parsed::Record(r) => match item_of(r) {
            Some((ItemKind::User, text, _, _)) => Some(text),
            _ => None,
        },
        Parsed::Other | Parsed::NotJson(_) => None,
    })
}

/// The body (without `\n`) of the line at `at`.
pub fn read_line_at(path: &Path, at: LineAt, max_line_bytes: u64) -> Result<Vec<u8>, QueryError> {
    use std::io::Read;
    let len = at.len.min(max_line_bytes.saturating_add(1));
    let mut file = open_regular(path)?;
    file.seek(SeekFrom::Start(at.offset))
        .map_err(|e| io_err(path, e))?;
    let mut buf = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(len)
        .read_to_end(&mut buf)
        .map_err(|e| io_err(path, e))?;
    if buf.last() == Some(&b'\n') {
        buf.pop();
    }
    Ok(buf)
}

/// The link index of one log: for each record with a `uuid`, its parent and its line, kept
/// compact (16 bytes per record plus about 20 in the uuid map) so memory stays a small
/// fraction of the log whatever its records hold. A uuid is kept as a 64-bit hash keyed
/// per process: two uuids of one log share a hash with odds of about n²/2⁶⁴, and the key
/// is unknown to whoever wrote the log.
struct LinkIndex {
    hasher: RandomState,
    /// Per record, in log order: the parent's hash ([`NO_PARENT`] for a root) and the
    /// line, with [`SIDECHAIN`] set for a sidechain record (it cannot end the chain).
    nodes: Vec<(u64, u64)>,
    /// Record index by uuid hash (the last record with a uuid wins).
    by_uuid: HashMap<u64, u32>,
}

/// The parent hash of a record without a parent (a hash is never 0: its low bit is set).
const NO_PARENT: u64 = 0;
/// Marks a sidechain record's line number.
const SIDECHAIN: u64 = 1 << 63;

impl LinkIndex {
    fn new() -> Self {
        LinkIndex {
            hasher: RandomState::new(),
            nodes: Vec::new(),
            by_uuid: HashMap::new(),
        }
    }

    fn hash(&self, uuid: &str) -> u64 {
        self.hasher.hash_one(uuid) | 1
    }

    fn add(&mut self, path: &Path, record: LinkRecord, line: u64) -> Result<(), QueryError> {
        let Some(uuid) = record.uuid else {
            return Ok(());
        };
        let index = u32::try_from(self.nodes.len()).map_err(|_| QueryError::Corrupt {
            path: path.to_owned(),
            line,
            reason: "more linked records than a log can hold".into(),
        })?;
        let parent = record
            .parent_uuid
            .as_deref()
            .map_or(NO_PARENT, |p| self.hash(p));
        let flag = if record.is_sidechain == Some(true) {
            SIDECHAIN
        } else {
            0
        };
        self.by_uuid.insert(self.hash(&uuid), index);
        self.nodes.push((parent, line | flag));
        Ok(())
    }

    /// The lines of the chain that ends at the last main-line record, ascending.
    fn chain(&self) -> Vec<u64> {
        let mut chain = Vec::new();
        // One bit per record: a parent loop ends the chain at its first repeat.
        let mut seen = vec![0u64; self.nodes.len().div_ceil(64)];
        let mut at = self.nodes.iter().rposition(|(_, l)| l & SIDECHAIN == 0);
        while let Some(i) = at {
            let Some(word) = seen.get_mut(i / 64) else {
                break;
            };
            let bit = 1u64 << (i % 64);
            if *word & bit != 0 {
                break;
            }
            *word |= bit;
            let Some(&(parent, line)) = self.nodes.get(i) else {
                break;
            };
            chain.push(line & !SIDECHAIN);
            at = (parent != NO_PARENT)
                .then(|| self.by_uuid.get(&parent))
                .flatten()
                .and_then(|&p| usize::try_from(p).ok());
        }
        // Log order (a parent written after its child is still read in place).
        chain.sort_unstable();
        chain
    }
}

/// The lines (1-based) of the visible chain, ascending: from the root (or the last
/// compaction) to the last main-line record.
pub fn chain_lines(
    path: &Path,
    file: &File,
    max_line_bytes: u64,
) -> Result<(Vec<u64>, u64), QueryError> {
    // A clone shares the file position: start from the beginning.
    let mut reading = file.try_clone().map_err(|e| io_err(path, e))?;
    reading
        .seek(SeekFrom::Start(0))
        .map_err(|e| io_err(path, e))?;
    let mut lines = JsonlLines::new(
        path,
        BufReader::with_capacity(256 * 1024, reading),
        max_line_bytes,
        0,
        1,
    );
    let mut index = LinkIndex::new();
    for_each_record::<LinkRecord, _>(&mut lines, &mut |at, r| index.add(path, r, at.number))?;
    let last_line = lines.next_number().saturating_sub(1);
    Ok((index.chain(), last_line))
}

/// The surface event of the chain record at `line`, numbered `seq`, if it shows anything.
pub fn decode_chain_line(body: &[u8], seq: u64) -> Option<Event> {
    match parse_line::<MessageRecord>(body) {
        Parsed::Record(r) => {
            item_of(r).map(|(kind, text, time, id)| item_event(kind, seq, time, id, text))
        }
        Parsed::Other | Parsed::NotJson(_) => None,
    }
}

fn io_err(path: &Path, source: std::io::Error) -> QueryError {
    QueryError::Io {
        path: path.to_owned(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain_of(records: &[serde_json::Value]) -> Vec<u64> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let lines: Vec<String> = records.iter().map(ToString::to_string).collect();
        let text = lines.join("\n") + "\n";
        std::fs::write(&path, text).unwrap();
        let file = File::open(&path).unwrap();
        chain_lines(&path, &file, 1 << 20).unwrap().0
    }

    fn rec(uuid: &str, parent: Option<&str>) -> serde_json::Value {
        serde_json::json!({"type": "user", "uuid": uuid, "parentUuid": parent})
    }

    #[test]
    fn the_chain_follows_parents_from_the_last_main_line_record() {
        let side = serde_json::json!({"uuid": "s", "parentUuid": "b", "isSidechain": true});
        let cases: Vec<(&str, Vec<serde_json::Value>, Vec<u64>)> = vec![
            (
                "linear",
                vec![rec("a", None), rec("b", Some("a")), rec("c", Some("b"))],
                vec![1, 2, 3],
            ),
            (
                "an edited message branches off",
                vec![
                    rec("a", None),
                    rec("b", Some("a")),
                    rec("b2", Some("a")),
                    rec("c2", Some("b2")),
                ],
                vec![1, 3, 4],
            ),
            (
                "a sidechain record last does not end it",
                vec![rec("a", None), rec("b", Some("a")), side],
                vec![1, 2],
            ),
            (
                "a compaction is a new root",
                vec![rec("a", None), rec("k", None), rec("c", Some("k"))],
                vec![2, 3],
            ),
            (
                "a missing parent ends it",
                vec![rec("a", None), rec("c", Some("gone"))],
                vec![2],
            ),
            (
                "a parent loop ends at the first repeat",
                vec![
                    rec("a", Some("c")),
                    rec("b", Some("a")),
                    rec("c", Some("b")),
                ],
                vec![1, 2, 3],
            ),
            (
                "a parent later in the file",
                vec![rec("b", Some("a")), rec("a", None), rec("c", Some("b"))],
                vec![1, 2, 3],
            ),
            (
                "no uuids",
                vec![serde_json::json!({"type": "summary"})],
                vec![],
            ),
        ];
        for (name, records, want) in cases {
            let got = chain_of(&records);
            assert_eq!(got, want, "{name}");
        }
    }
}
