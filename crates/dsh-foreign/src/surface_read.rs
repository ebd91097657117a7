//! Streaming surface reads of foreign logs: each visible item is shown to the visitor once
//! and only its line's position is kept, so memory follows the number of records, not the
//! log's size; the items retention keeps are decoded again from their lines.
//!
//! Items are numbered 0, 1, 2, … in log order (`seq`); `capturedThroughSeq` is the last
//! item's number.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use dsh_store::{Event, EventReread, QueryError, SessionHeader, SurfaceScan, SurfaceVisitor};

use super::codex::{self, RequestDedup};
use super::jsonl::{JsonlLines, LineAt};
use super::line_items::{DecodeLine, LineItem, LineItems};
use super::open_file::open_regular;
use super::origin::Origin;
use super::surface_events::item_event;
use super::{claude_code, copilot, qwen};

/// Where an item's event comes from: its line and its place among the line's items.
#[derive(Debug, Clone, Copy)]
struct ItemAt {
    line: LineAt,
    sub: usize,
}

/// Reads the kept items of a scanned foreign log again through the file opened for the
/// scan (a file replaced meanwhile cannot be mixed in).
#[derive(Debug)]
struct LineReread {
    origin: Origin,
    path: PathBuf,
    file: File,
    items: HashMap<u64, ItemAt>,
    /// The time of items whose line has none (the session's creation time).
    default_time: i64,
}

impl EventReread for LineReread {
    fn reread(&mut self, seqs: &[u64]) -> Result<Vec<Event>, QueryError> {
        let mut out = Vec::with_capacity(seqs.len());
        let mut buf = Vec::new();
        for &seq in seqs {
            let at = self.items.get(&seq).copied().ok_or_else(|| {
                changed(
                    &self.path,
                    0,
                    &format!("item {seq} is not on the scanned surface"),
                )
            })?;
            let len = usize::try_from(at.line.len)
                .map_err(|_| io_err(&self.path, io::ErrorKind::InvalidData.into()))?;
            buf.resize(len, 0);
            (&self.file)
                .seek(SeekFrom::Start(at.line.offset))
                .and_then(|_| (&self.file).read_exact(&mut buf))
                .map_err(|e| io_err(&self.path, e))?;
            let body = buf.strip_suffix(b"\n").ok_or_else(|| {
                changed(&self.path, at.line.number, "line is no longer terminated")
            })?;
            let first_seq = seq.saturating_sub(at.sub as u64);
            let event = decode_items(&self.origin, body, first_seq, self.default_time)
                .unwrap_or_default()
                .into_iter()
                .nth(at.sub)
                .map(|d| d.event)
                .ok_or_else(|| {
                    changed(
                        &self.path,
                        at.line.number,
                        &format!("line no longer holds item {seq}"),
                    )
                })?;
            out.push(event);
        }
        Ok(out)
    }
}

/// One decoded item of a line: whether it replaces the surface so far, whether it is a
/// request copied from an `event_msg` (Codex), and its event.
struct Decoded {
    replace: bool,
    item: Option<LineItem>,
    event: Event,
}

/// The events of one line, numbered from `seq`; `Err` (the reason) when the line is not
/// JSON.
fn decode_items(
    origin: &Origin,
    body: &[u8],
    seq: u64,
    default_time: i64,
) -> Result<Vec<Decoded>, String> {
    match origin {
        Origin::ClaudeCode => Ok(claude_code::decode_chain_line(body, seq)
            .map(|event| {
                vec![Decoded {
                    replace: false,
                    item: None,
                    event,
                }]
            })
            .unwrap_or_default()),
        Origin::Dsh | Origin::Other(_) | Origin::Gemini | Origin::OpenCode => Ok(Vec::new()),
        Origin::Codex | Origin::Qwen | Origin::Copilot => {
            let decode: DecodeLine = match origin {
                Origin::Qwen => qwen::decode_line,
                Origin::Copilot => copilot::decode_line,
                _ => codex::decode_line,
            };
            let (items, time) = decode(body, default_time)?;
            let (replace, items) = match items {
                LineItems::None => return Ok(Vec::new()),
                LineItems::Append(items) => (false, items),
                LineItems::Replace(items) => (true, items),
            };
            let mut seq = seq;
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                let id = format!("line-{seq}-{i}");
                let event = item_event(item.kind, seq, time, id, item.text.clone());
                out.push(Decoded {
                    replace: replace && i == 0,
                    item: Some(item),
                    event,
                });
                seq += 1;
            }
            // A compaction that leaves nothing still clears the surface.
            if replace && out.is_empty() {
                return Ok(vec![Decoded {
                    replace: true,
                    item: None,
                    event: placeholder(seq),
                }]);
            }
            Ok(out)
        }
    }
}

/// Marks a compaction that left no items (never put on the surface).
fn placeholder(seq: u64) -> Event {
    Event {
        seq,
        time: 0,
        data: dsh_store::EventData::Other {
            kind: "foreign/compacted".into(),
            data: serde_json::Value::Null,
        },
        surface_op: None,
        source_event_seqs: None,
    }
}

/// Stream the surface of the log at `path` (of `origin`) to `visitor`.
pub fn scan(
    origin: &Origin,
    path: &Path,
    header: SessionHeader,
    max_line_bytes: u64,
    visitor: &mut dyn SurfaceVisitor,
) -> Result<SurfaceScan, QueryError> {
    let file = open_regular(path)?;
    let wanted = match origin {
        Origin::ClaudeCode => Some(claude_code::chain_lines(path, &file, max_line_bytes)?.0),
        _ => None,
    };
    let default_time = header.created_at;
    // A clone shares the file position, which the first pass moved: start again.
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
    let mut surface: Vec<u64> = Vec::new();
    let mut items: HashMap<u64, ItemAt> = HashMap::new();
    let mut next_seq = 0u64;
    let mut removed = Vec::new();
    let mut cursor = 0usize;
    let mut dedup = RequestDedup::default();
    while let Some((at, body)) = lines.next_line()? {
        if let Some(chain) = &wanted {
            // Only chain lines matter; the first pass already checked every line.
            while chain.get(cursor).is_some_and(|&l| l < at.number) {
                cursor += 1;
            }
            if chain.get(cursor) != Some(&at.number) {
                continue;
            }
        }
        let decoded = match decode_items(origin, body, next_seq, default_time) {
            Ok(events) => events,
            Err(reason) => {
                lines.damaged(at, format!("not JSON: {reason}"))?;
                continue;
            }
        };
        for (sub, decoded) in decoded.into_iter().enumerate() {
            let Decoded {
                replace,
                item,
                event,
            } = decoded;
            next_seq = event.seq + 1;
            if replace {
                for seq in &surface {
                    items.remove(seq);
                }
                // Told with the next item shown (a compaction that leaves nothing has none).
                removed.append(&mut surface);
                dedup = RequestDedup::default();
            }
            if event.surface_op.is_none() || item.is_some_and(|i| !dedup.keep(&i)) {
                continue;
            }
            surface.push(event.seq);
            items.insert(event.seq, ItemAt { line: at, sub });
            visitor.visit(&event, &removed);
            removed.clear();
        }
    }
    Ok(SurfaceScan::from_reread(
        header,
        next_seq.checked_sub(1),
        surface,
        Box::new(LineReread {
            origin: origin.clone(),
            path: path.to_owned(),
            file,
            items,
            default_time,
        }),
    ))
}

/// A visitor that looks at nothing (a whole read keeps every item itself).
pub struct Nothing;

impl SurfaceVisitor for Nothing {
    fn visit(&mut self, _: &Event, _: &[u64]) {}
}

fn changed(path: &Path, line: u64, why: &str) -> QueryError {
    QueryError::Corrupt {
        path: path.to_owned(),
        line,
        reason: format!("log changed while being read: {why}"),
    }
}

fn io_err(path: &Path, source: io::Error) -> QueryError {
    QueryError::Io {
        path: path.to_owned(),
        source,
    }
}
