//! What referencing a session would cost right now (the popup's preview): the outcome of
//! `prepare`'s own reader and retention for one source, plus its newest retained turns.
//! Answers are cached per session, label and budget, keyed by the log's identity and length.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use super::error::ReferenceError;
use super::projection::TurnRole;
use super::redact::redact_label_if;
use super::source_read::read_source_redacting;
use dsh_store::SessionQuery;
use dsh_store::listing::Stamp;

/// Newest retained turns kept for a preview.
pub const PREVIEW_TURNS: usize = 6;
/// Bytes of one preview turn's text kept (the rest is cut at a char boundary with `…`).
pub const PREVIEW_TEXT_BYTES: usize = 1024;
/// Estimates remembered at once; the oldest entry goes first.
const CACHE_ENTRIES: usize = 128;

/// One of the newest turns of a retained source, shortened for display.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreviewTurn {
    pub role: TurnRole,
    /// The retained text (as the model would get it), at most [`PREVIEW_TEXT_BYTES`] plus `…`.
    pub text: String,
}

/// The cost of referencing one session now, as `prepare` would compute it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReferenceEstimate {
    /// Projected messages of the session (before retention).
    pub total_messages: usize,
    /// Messages the snapshot would keep.
    pub kept_messages: usize,
    /// UTF-8 bytes of the session's serialized source object.
    pub bytes: usize,
    /// `max_reference_bytes` the estimate was computed against.
    pub budget: usize,
    /// Whether messages would be dropped or cut.
    pub truncated: bool,
    /// Whether the session has been compacted.
    pub compacted: bool,
    /// The newest retained turns, oldest first.
    pub recent: Vec<PreviewTurn>,
    /// Secrets the snapshot would redact (docs/references.md: secret redaction).
    pub redacted_secrets: usize,
}

impl ReferenceEstimate {
    /// Approximate model tokens of the snapshot: a quarter of its bytes, rounded up (the
    /// same rule as the offline model's token counts).
    pub fn approx_tokens(&self) -> u64 {
        u64::try_from(self.bytes.div_ceil(4)).unwrap_or(u64::MAX)
    }

    /// `188 of 400 messages kept · 63.9 of 64 KiB` (sizes in 1024-byte units).
    pub fn summary(&self) -> String {
        let messages = if self.total_messages == 1 {
            "message"
        } else {
            "messages"
        };
        format!(
            "{} of {} {messages} kept · {} of {} KiB",
            self.kept_messages,
            self.total_messages,
            kib(self.bytes),
            kib(self.budget)
        )
    }
}

/// `bytes` in KiB with one decimal, `.0` dropped: 65 433 → `63.9`, 65 536 → `64`.
pub fn kib(bytes: usize) -> String {
    // Tenths of a KiB, rounded half up, in integers so no float rounding shows.
    let tenths = (u128::try_from(bytes).unwrap_or(u128::MAX) * 10 + 512) / 1024;
    let (whole, tenth) = (tenths / 10, tenths % 10);
    if tenth == 0 {
        whole.to_string()
    } else {
        format!("{whole}.{tenth}")
    }
}

/// Compute the estimate for `session_id` referenced as `label` within `budget` bytes
/// (blocking): the very reader and retention `prepare` runs.
pub fn estimate_reference(
    store: &dyn SessionQuery,
    session_id: &str,
    label: &str,
    budget: usize,
    redact: bool,
) -> Result<ReferenceEstimate, ReferenceError> {
    let (label, in_label) = redact_label_if(redact, label.to_owned());
    let retained = read_source_redacting(store, session_id.to_owned(), label, budget, redact)?;
    let redacted_secrets = retained.redactions.total() + in_label.total();
    let conversation = retained.data.conversation;
    let skip = conversation.len().saturating_sub(PREVIEW_TURNS);
    let recent = conversation
        .into_iter()
        .skip(skip)
        .map(|turn| PreviewTurn {
            role: turn.role,
            text: shorten(turn.text, PREVIEW_TEXT_BYTES),
        })
        .collect();
    Ok(ReferenceEstimate {
        total_messages: retained.stats.original_messages,
        kept_messages: retained.stats.retained_messages,
        bytes: retained.serialized_bytes,
        budget,
        truncated: retained.stats.truncated,
        compacted: retained.stats.compacted,
        recent,
        redacted_secrets,
    })
}

/// `text` cut to at most `max` bytes at a char boundary, with `…` when cut.
fn shorten(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push('…');
    text
}

/// What an estimate is cached under.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    session_id: String,
    label: String,
    budget: usize,
    redact: bool,
}

/// Bounded cache of estimates, each valid for the log stamp it was computed from.
#[derive(Debug, Default)]
pub struct EstimateCache {
    entries: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    by_key: HashMap<Key, (Stamp, Arc<ReferenceEstimate>)>,
    /// Insertion order, for eviction.
    order: VecDeque<Key>,
}

impl EstimateCache {
    /// The estimate for `session_id`, from the cache when its log is unchanged, else
    /// computed and remembered (blocking). A store that cannot stamp logs is never cached.
    pub fn get_or_compute(
        &self,
        store: &dyn SessionQuery,
        session_id: &str,
        label: &str,
        budget: usize,
        redact: bool,
    ) -> Result<Arc<ReferenceEstimate>, ReferenceError> {
        let stamp = store
            .log_stamp(session_id)
            .map_err(|e| ReferenceError::read_failed(session_id, e))?;
        let key = Key {
            session_id: session_id.to_owned(),
            label: label.to_owned(),
            budget,
            redact,
        };
        if let Some(stamp) = stamp
            && let Some((cached, estimate)) = self.lock().by_key.get(&key)
            && *cached == stamp
        {
            return Ok(Arc::clone(estimate));
        }
        // Computed outside the lock: a long log must not stall other lookups. A log that
        // grows meanwhile is stored under the older stamp and recomputed next time.
        let estimate = Arc::new(estimate_reference(
            store, session_id, label, budget, redact,
        )?);
        if let Some(stamp) = stamp {
            let mut entries = self.lock();
            if entries
                .by_key
                .insert(key.clone(), (stamp, Arc::clone(&estimate)))
                .is_none()
            {
                entries.order.push_back(key);
            }
            while entries.order.len() > CACHE_ENTRIES {
                if let Some(oldest) = entries.order.pop_front() {
                    entries.by_key.remove(&oldest);
                }
            }
        }
        Ok(estimate)
    }

    /// How many estimates are remembered.
    pub fn len(&self) -> usize {
        self.lock().by_key.len()
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        // The entries stay consistent at every step, so a panic elsewhere leaves them usable.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kib_uses_1024_byte_units_and_one_decimal() {
        let cases = [
            (0, "0"),
            (1024, "1"),
            (1536, "1.5"),
            (65_433, "63.9"),
            (65_536, "64"),
            (3_277, "3.2"),
            (51, "0"),
            (52, "0.1"),
        ];
        for (bytes, want) in cases {
            assert_eq!(kib(bytes), want, "{bytes}");
        }
    }

    #[test]
    fn summary_reads_kept_of_total() {
        let estimate = ReferenceEstimate {
            total_messages: 400,
            kept_messages: 188,
            bytes: 65_433,
            budget: 65_536,
            truncated: true,
            compacted: false,
            recent: Vec::new(),
            redacted_secrets: 0,
        };
        assert_eq!(
            estimate.summary(),
            "188 of 400 messages kept · 63.9 of 64 KiB"
        );
        assert_eq!(estimate.approx_tokens(), 16_359);
        let one = ReferenceEstimate {
            total_messages: 1,
            kept_messages: 1,
            bytes: 300,
            ..estimate
        };
        assert_eq!(one.summary(), "1 of 1 message kept · 0.3 of 64 KiB");
    }

    #[test]
    fn shorten_cuts_at_char_boundaries() {
        assert_eq!(shorten("abc".into(), 3), "abc");
        assert_eq!(shorten("abcd".into(), 3), "abc…");
        assert_eq!(shorten("漢字".into(), 4), "漢…");
        assert_eq!(shorten("漢字".into(), 2), "…");
    }
}
