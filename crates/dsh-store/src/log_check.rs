//! Checking a log against the rule book (docs/session-store.md: the rule book), for
//! `dsh-refs check`: one streaming read, nothing written, memory bounded by the surface.
//!
//! Unlike the writer's fold of an existing log, the check sees each line's envelope (keys
//! the event model does not keep, such as `ignorable`), so envelope rules are judged too.

use std::path::Path;
use std::rc::Rc;

use serde_json::Value;

use super::event::{Event, EventData, SessionHeader, kind};
use super::kinds::{TitleSourceKind, TurnEndKind};
use super::not_loaded::NotLoaded;
use super::query_error::QueryError;
use super::reader::{self, Limits, LineItems, LogFormat, ScanItem, TornTail};
use super::rule_book::{Envelope, Findings, Mode, RuleBook};

/// Who most likely wrote a log that breaks the rules, judged by the records only that
/// writer leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WrittenBy {
    /// Nothing tells.
    Unknown,
    /// An earlier version of this project (before the rule book): its `compact/*` records,
    /// `manual` titles, `message/discarded` or `{kind:"error", code, message}` turn ends.
    EarlierDshRefs,
    /// dsh before 0.1.0-rc.8 (or its followed commit): `compact/*` records in dsh's shape,
    /// which that release refuses.
    DshBeforeRelease,
    /// dsh 0.1.0-rc.8 or newer: records only it writes (a cancelled turn's cause, a
    /// compaction or rename outside any turn), which the followed commit refuses or its
    /// invariants reject.
    DshRelease,
}

impl WrittenBy {
    /// A stable name for JSON output.
    pub fn code(self) -> &'static str {
        match self {
            WrittenBy::Unknown => "unknown",
            WrittenBy::EarlierDshRefs => "earlier-dsh-refs",
            WrittenBy::DshBeforeRelease => "dsh-before-0.1.0-rc.8",
            WrittenBy::DshRelease => "dsh-0.1.0-rc.8-or-newer",
        }
    }

    /// One line saying what wrote the log (`None` when nothing tells).
    pub fn explanation(self) -> Option<&'static str> {
        match self {
            WrittenBy::Unknown => None,
            WrittenBy::EarlierDshRefs => Some(
                "written by an earlier version of dsh-refs, before it checked dsh's rules; \
                 the log itself is untouched, and new events follow the rules",
            ),
            WrittenBy::DshBeforeRelease => Some(
                "written by dsh before 0.1.0-rc.8, whose compact/* records that release \
                 refuses; the log itself is untouched",
            ),
            WrittenBy::DshRelease => Some(
                "written by dsh 0.1.0-rc.8 or newer, whose own records (a cancellation's \
                 cause, compactions and renames outside a turn) the older 6816e8a3d5 refuses \
                 or its invariants reject; the log itself is untouched",
            ),
        }
    }
}

/// What checking one log found.
#[derive(Debug, Clone)]
pub struct LogReport {
    pub header: SessionHeader,
    /// Readable events.
    pub events: u64,
    pub findings: Findings,
    pub written_by: WrittenBy,
    /// Where the readable log ends early, if it does (a write in progress or a crash).
    pub torn_tail: Option<TornTail>,
    /// Lines too long to load (`store.max_line_bytes`), read as placeholders.
    pub not_loaded: NotLoadedLines,
}

/// Lines of a log longer than `store.max_line_bytes`: dsh reads them, this project's
/// reader keeps a placeholder for each event (docs/session-store.md: damage).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NotLoadedLines {
    pub lines: u64,
    /// Of them, lines within `store.max_line_bytes` too dense to decode within their
    /// memory budget (`crate::line_cost`).
    pub dense: u64,
    /// The first few.
    pub first: Vec<NotLoadedLine>,
}

/// One line too long to load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotLoadedLine {
    /// 1-based line number.
    pub line: u64,
    /// Seq of its (first) event.
    pub seq: u64,
    /// Its `type` (`assistant/chunk` for a packed row).
    pub kind: String,
    /// Its length with the `\n`.
    pub bytes: u64,
    /// Too dense to decode, rather than too long.
    pub dense: bool,
}

/// Not-loaded lines kept in full.
const NOT_LOADED_KEPT: usize = 3;

/// An event with the envelope of the line it came from.
struct Checked {
    event: Event,
    envelope: Envelope,
}

impl ScanItem for Checked {
    fn not_loaded(event: Event) -> Self {
        Checked {
            event,
            envelope: Envelope::plain(),
        }
    }

    fn decode(
        line: &Rc<Vec<u8>>,
        body_len: usize,
        next_seq: u64,
        limits: &Limits,
    ) -> Result<LineItems<Self>, String> {
        let body = line.get(..body_len).unwrap_or_default();
        let items = reader::decode_items(body, next_seq, limits)?;
        let envelope = match &items {
            LineItems::One(_) => Envelope::of_line(body),
            // A packed row expands into events with the plain envelope.
            LineItems::Many(_) | LineItems::Lazy { .. } => Envelope::plain(),
        };
        Ok(items.map(move |event| Checked {
            event,
            envelope: envelope.clone(),
        }))
    }
}

/// Check the log at `path` against every rule of both dsh versions.
pub fn check_log(path: &Path, format: LogFormat, limits: &Limits) -> Result<LogReport, QueryError> {
    let src = reader::open_log(path, format)?;
    let mut book = RuleBook::new();
    let mut findings = Findings::default();
    let mut written_by = WrittenBy::Unknown;
    let mut events = 0u64;
    let mut not_loaded = NotLoadedLines::default();
    let mut last_line = 0;
    let summary = reader::scan_at_limited(path, src, limits, &mut |item: Checked, pos| {
        events += 1;
        if let Some(n) = NotLoaded::of(&item.event)
            && pos.line != last_line
        {
            not_loaded.lines += 1;
            not_loaded.dense += u64::from(n.dense);
            if not_loaded.first.len() < NOT_LOADED_KEPT {
                not_loaded.first.push(NotLoadedLine {
                    line: pos.line,
                    seq: item.event.seq,
                    kind: item.event.kind().to_owned(),
                    bytes: n.line_bytes,
                    dense: n.dense,
                });
            }
        }
        last_line = pos.line;
        let broken = book.admit(&item.event, &item.envelope, Mode::Scan);
        if written_by == WrittenBy::Unknown {
            written_by = telltale(&item.event);
        }
        findings.extend(broken);
        // A replacement naming seqs that are not on the surface: counted above
        // (SURFACE_MARKER); the fold goes on without it.
        book.take_fold_error();
        Ok(())
    })?;
    findings.extend(book.finish());
    findings.extend(super::rule_book::check_header(&summary.header));
    Ok(LogReport {
        header: summary.header,
        events,
        written_by: if findings.is_empty() {
            WrittenBy::Unknown
        } else {
            written_by
        },
        findings,
        torn_tail: summary.torn_tail,
        not_loaded,
    })
}

/// The writer an event betrays, if any.
fn telltale(event: &Event) -> WrittenBy {
    match &event.data {
        EventData::Other { kind: k, data } if k == kind::COMPACT_START => {
            if data.get("reason").is_some_and(Value::is_string) {
                WrittenBy::EarlierDshRefs
            } else {
                WrittenBy::DshBeforeRelease
            }
        }
        EventData::Other { kind: k, .. } if k == kind::MESSAGE_DISCARDED => {
            WrittenBy::EarlierDshRefs
        }
        EventData::SessionTitle(t) if t.source.kind == TitleSourceKind::Manual => {
            WrittenBy::EarlierDshRefs
        }
        EventData::TurnEnd { reason, .. }
            if reason.kind == TurnEndKind::Error
                && reason.extra.contains_key("code")
                && !reason.extra.contains_key("step") =>
        {
            WrittenBy::EarlierDshRefs
        }
        // rc.8's cancellation with its cause, and its standalone compaction (`turn: null`).
        EventData::TurnEnd { reason, .. }
            if reason.kind == TurnEndKind::Aborted && reason.extra.contains_key("reason") =>
        {
            WrittenBy::DshRelease
        }
        EventData::Other { kind: k, data }
            if k == kind::COMPACTION_START && data.get("turn").is_some_and(Value::is_null) =>
        {
            WrittenBy::DshRelease
        }
        _ => WrittenBy::Unknown,
    }
}
