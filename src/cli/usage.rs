//! The usage book's file (docs/references.md: frecency and pins): `usage.json` in the app's
//! data dir, never in a store. `send` notes the sessions a message referenced; `candidates
//! --rank frecency` orders by it.

use std::path::PathBuf;

use dsh_reference::frecency::{UsageBook, UseKind};
use dsh_store::Message;
use dsh_store::event::now_ms;
use serde_json::Value;

/// Where the usage book lives, if the platform has a data dir.
pub fn usage_path() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "dsh-refs").map(|d| d.data_dir().join("usage.json"))
}

/// The sessions a snapshot context references, in order.
pub fn referenced_ids(context: &Message) -> Vec<String> {
    context
        .source
        .as_ref()
        .and_then(|s| s.0.get("references"))
        .and_then(Value::as_array)
        .map(|entries| {
            entries
                .iter()
                .filter_map(|e| e.get("sessionId").and_then(Value::as_str))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Note one use of each of `ids` in the usage book (best effort: the book is advisory, so a
/// failure to write it is only logged).
pub fn record_uses(ids: &[String], kind: UseKind) {
    let Some(path) = usage_path() else {
        return;
    };
    if ids.is_empty() {
        return;
    }
    let mut book = UsageBook::load(&path);
    let now = u64::try_from(now_ms()).unwrap_or(0);
    for id in ids {
        book.record(id, kind, now);
    }
    if let Err(e) = book.save(&path) {
        tracing::warn!("cannot write the usage book {}: {e}", path.display());
    }
}
