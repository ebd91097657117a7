//! Surface markers, provenance and replacements (dsh's `surface.ts`, the same in both
//! versions apart from `steering/message`, which rc.8 reads as a `user/message`).
//!
//! - Only `user/message`, `assistant/message`, `tool/result` (and `steering/message`) carry
//!   `surfaceOp` and `sourceEventSeqs`.
//! - `sourceEventSeqs`, when present: not empty (except on `assistant/message`), no
//!   duplicates, every seq earlier than the event's own.
//! - A replacement `{op:"replace", start, end}` names two nodes of the surface, `start` not
//!   after `end` by position; its `sourceEventSeqs` include every node it shadows.
//! - A `tool/result` replacement shadows exactly one current `tool/result` and changes
//!   only its content (6816e8a3d5: the message's `content`; rc.8: the content of the
//!   message's one `tool-result` block).

use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::Value;

use super::{Rule, Versions, Violation};
use crate::event::{Event, EventData, SurfaceOp, kind};
use crate::fold::FoldError;

/// Hashes of a `tool/result`'s data with what a rewrite may change blanked out, per version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ToolRest {
    followed: u64,
    release: u64,
}

/// One undoable change.
#[derive(Debug, Clone)]
enum Undo {
    Pushed,
    Spliced { from: usize, removed: Vec<u64> },
    ToolAdded(u64),
    ToolRemoved(u64, ToolRest),
}

/// Proof that a batch was begun: ended by [`SurfaceRules::commit`] or
/// [`SurfaceRules::rollback`].
#[derive(Debug)]
pub(super) struct Journal(());

#[derive(Debug, Clone, Default)]
pub(super) struct SurfaceRules {
    nodes: Vec<u64>,
    tool_results: HashMap<u64, ToolRest>,
    /// What to undo, while a batch is open (between `begin` and `commit`/`rollback`).
    journal: Option<Vec<Undo>>,
    /// The last replacement that could not be folded at all (this project's readers call
    /// such a log corrupt).
    fold_error: Option<FoldError>,
}

fn surface_eligible(kind: &str) -> bool {
    matches!(
        kind,
        kind::USER_MESSAGE | kind::ASSISTANT_MESSAGE | kind::TOOL_RESULT | kind::STEERING_MESSAGE
    )
}

fn list(seqs: &[u64]) -> String {
    const SHOWN: usize = 20;
    let shown: Vec<String> = seqs.iter().take(SHOWN).map(u64::to_string).collect();
    let more = seqs.len().saturating_sub(SHOWN);
    if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

impl SurfaceRules {
    pub(super) fn nodes(&self) -> &[u64] {
        &self.nodes
    }

    pub(super) fn take_fold_error(&mut self) -> Option<FoldError> {
        self.fold_error.take()
    }

    pub(super) fn begin(&mut self) -> Journal {
        self.journal = Some(Vec::new());
        Journal(())
    }

    pub(super) fn commit(&mut self, _journal: Journal) {
        self.journal = None;
    }

    pub(super) fn rollback(&mut self, _journal: Journal) {
        let entries = self.journal.take().unwrap_or_default();
        for undo in entries.into_iter().rev() {
            match undo {
                Undo::Pushed => {
                    self.nodes.pop();
                }
                Undo::Spliced { from, removed } => {
                    if from < self.nodes.len() {
                        self.nodes.splice(from..=from, removed);
                    }
                }
                Undo::ToolAdded(seq) => {
                    self.tool_results.remove(&seq);
                }
                Undo::ToolRemoved(seq, rest) => {
                    self.tool_results.insert(seq, rest);
                }
            }
        }
    }

    fn record(&mut self, undo: Undo) {
        if let Some(j) = &mut self.journal {
            j.push(undo);
        }
    }

    /// Judge and fold one event. Returns the nodes a replacement shadowed (in surface
    /// order), `None` for any other event.
    pub(super) fn admit(&mut self, event: &Event, out: &mut Vec<Violation>) -> Option<Vec<u64>> {
        let seq = event.seq;
        let eligible = surface_eligible(event.kind());
        if !eligible {
            if event.surface_op.is_some() {
                out.push(Violation::new(
                    Rule::SurfaceMarker,
                    Versions::BOTH,
                    seq,
                    format!(
                        "\"{}\" is not a surface event and cannot carry surfaceOp",
                        event.kind()
                    ),
                ));
            }
            if event.source_event_seqs.is_some() {
                out.push(Violation::new(
                    Rule::SurfaceMarker,
                    Versions::BOTH,
                    seq,
                    format!(
                        "\"{}\" is not a surface event and cannot carry sourceEventSeqs",
                        event.kind()
                    ),
                ));
            }
        } else if event.surface_op.is_none() {
            out.push(Violation::new(
                Rule::SurfaceMarker,
                Versions::BOTH,
                seq,
                format!("\"{}\" requires a surfaceOp", event.kind()),
            ));
        }
        let sources = provenance(event, out);
        match event.surface_op {
            None => None,
            Some(SurfaceOp::Append) => {
                self.nodes.push(seq);
                self.record(Undo::Pushed);
                self.note_tool_result(event);
                None
            }
            Some(SurfaceOp::Replace { start, end }) => {
                let from = self.nodes.iter().position(|&s| s == start);
                let to = self.nodes.iter().position(|&s| s == end);
                let (Some(from), Some(to)) = (from, to) else {
                    let (which, missing) = if from.is_none() {
                        ("start", start)
                    } else {
                        ("end", end)
                    };
                    self.fold_error = Some(FoldError::NotOnSurface {
                        seq,
                        which,
                        missing,
                    });
                    out.push(Violation::new(
                        Rule::SurfaceMarker,
                        Versions::BOTH,
                        seq,
                        format!("replace names seq {missing}, which is not on the surface"),
                    ));
                    return None;
                };
                if from > to {
                    self.fold_error = Some(FoldError::StartAfterEnd { seq, start, end });
                    out.push(Violation::new(
                        Rule::SurfaceMarker,
                        Versions::BOTH,
                        seq,
                        format!(
                            "replace start seq {start} (index {from}) is after end seq {end} \
                             (index {to})"
                        ),
                    ));
                    return None;
                }
                let shadowed: Vec<u64> = self.nodes.get(from..=to).unwrap_or_default().to_vec();
                let missing: Vec<u64> = shadowed
                    .iter()
                    .copied()
                    .filter(|s| !sources.contains(s))
                    .collect();
                if !missing.is_empty() {
                    out.push(Violation::new(
                        Rule::ShadowedNodes,
                        Versions::BOTH,
                        seq,
                        format!(
                            "sourceEventSeqs must include every shadowed surface node; missing {}",
                            list(&missing)
                        ),
                    ));
                }
                if event.kind() == kind::TOOL_RESULT {
                    self.tool_result_rewrite(event, &shadowed, out);
                }
                let removed: Vec<u64> = self.nodes.splice(from..=to, [seq]).collect();
                for s in &removed {
                    if let Some(rest) = self.tool_results.remove(s) {
                        self.record(Undo::ToolRemoved(*s, rest));
                    }
                }
                self.record(Undo::Spliced { from, removed });
                self.note_tool_result(event);
                Some(shadowed)
            }
        }
    }

    fn note_tool_result(&mut self, event: &Event) {
        if let Some(rest) = tool_rest(event) {
            self.tool_results.insert(event.seq, rest);
            self.record(Undo::ToolAdded(event.seq));
        }
    }

    fn tool_result_rewrite(&self, event: &Event, shadowed: &[u64], out: &mut Vec<Violation>) {
        let seq = event.seq;
        let [original] = shadowed else {
            out.push(Violation::new(
                Rule::ToolResultRewrite,
                Versions::BOTH,
                seq,
                format!(
                    "a tool/result replacement must rewrite exactly one node, not {}",
                    shadowed.len()
                ),
            ));
            return;
        };
        let Some(before) = self.tool_results.get(original) else {
            out.push(Violation::new(
                Rule::ToolResultRewrite,
                Versions::BOTH,
                seq,
                format!("a tool/result replacement must target a tool/result, not seq {original}"),
            ));
            return;
        };
        let Some(after) = tool_rest(event) else {
            return;
        };
        for (versions, same) in [
            (Versions::FOLLOWED, before.followed == after.followed),
            (Versions::RELEASE, before.release == after.release),
        ] {
            if !same {
                out.push(Violation::new(
                    Rule::ToolResultRewrite,
                    versions,
                    seq,
                    format!("the rewrite of tool/result {original} changes more than its content"),
                ));
            }
        }
    }
}

/// The provenance rules; returns the set of cited seqs.
fn provenance(event: &Event, out: &mut Vec<Violation>) -> HashSet<u64> {
    let seq = event.seq;
    let Some(sources) = &event.source_event_seqs else {
        return HashSet::new();
    };
    let set: HashSet<u64> = sources.iter().copied().collect();
    if sources.is_empty() && event.kind() != kind::ASSISTANT_MESSAGE {
        out.push(Violation::new(
            Rule::Provenance,
            Versions::BOTH,
            seq,
            "sourceEventSeqs must not be empty except on assistant/message",
        ));
    }
    if set.len() != sources.len() {
        out.push(Violation::new(
            Rule::Provenance,
            Versions::BOTH,
            seq,
            "sourceEventSeqs must not contain duplicates",
        ));
    }
    if let Some(later) = sources.iter().find(|&&s| s >= seq) {
        out.push(Violation::new(
            Rule::Provenance,
            Versions::BOTH,
            seq,
            format!("sourceEventSeqs must reference earlier events: {later} >= {seq}"),
        ));
    }
    set
}

/// The hashes a `tool/result` is compared by when it is rewritten.
fn tool_rest(event: &Event) -> Option<ToolRest> {
    if !matches!(event.data, EventData::ToolResult { .. }) {
        return None;
    }
    let data = serde_json::to_value(event).ok()?.get("data")?.clone();
    let mut followed = data.clone();
    if let Some(m) = followed.get_mut("message").and_then(Value::as_object_mut) {
        m.insert("content".into(), Value::Null);
    }
    let mut release = data;
    if let Some(first) = release
        .get_mut("message")
        .and_then(|m| m.get_mut("content"))
        .and_then(Value::as_array_mut)
        .and_then(|c| c.first_mut())
        .and_then(Value::as_object_mut)
    {
        first.insert("content".into(), Value::Null);
    }
    if let Some(m) = release.get_mut("message").and_then(Value::as_object_mut)
        && let Some(Value::Array(content)) = m.get_mut("content")
    {
        content.truncate(1);
    }
    Some(ToolRest {
        followed: canonical_hash(&followed),
        release: canonical_hash(&release),
    })
}

/// A hash of a JSON value that ignores object key order (dsh compares structurally).
fn canonical_hash(v: &Value) -> u64 {
    fn feed(v: &Value, h: &mut DefaultHasher) {
        match v {
            Value::Null => 0u8.hash(h),
            Value::Bool(b) => (1u8, b).hash(h),
            Value::Number(n) => (2u8, n.to_string()).hash(h),
            Value::String(s) => (3u8, s).hash(h),
            Value::Array(a) => {
                (4u8, a.len()).hash(h);
                for item in a {
                    feed(item, h);
                }
            }
            Value::Object(m) => {
                (5u8, m.len()).hash(h);
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                for k in keys {
                    k.hash(h);
                    if let Some(item) = m.get(k) {
                        feed(item, h);
                    }
                }
            }
        }
    }
    let mut h = DefaultHasher::new();
    feed(v, &mut h);
    h.finish()
}
