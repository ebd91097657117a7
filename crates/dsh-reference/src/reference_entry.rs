//! The provenance entry a context message records per referenced session, and the decoding
//! of a context message back into entries and readable snapshot sources. The reference layer
//! owns this shape: it writes it ([`super::prompt`]) and hosts read it here, never by key.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::context_tags::serialized_sources;
use dsh_store::Source;

/// One `references[]` entry of a `session-reference` source (keys in wire order).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ReferenceEntry {
    pub session_id: String,
    pub label: String,
    pub captured_through_seq: Option<u64>,
    pub compacted: bool,
    pub original_messages: u64,
    pub retained_messages: u64,
    pub omitted_messages: u64,
    pub omitted_bytes: u64,
    pub truncated: bool,
    pub input_index: u64,
    /// Keys other writers added (kept so a foreign entry round-trips).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ReferenceEntry {
    /// The entries of a `session-reference` source; malformed entries are skipped and an
    /// entry without a label shows its session id.
    pub fn decode_all(source: &Source) -> Vec<ReferenceEntry> {
        let Some(entries) = source.0.get("references").and_then(Value::as_array) else {
            return Vec::new();
        };
        entries
            .iter()
            .filter_map(|e| serde_json::from_value::<ReferenceEntry>(e.clone()).ok())
            .map(|mut e| {
                if e.label.is_empty() {
                    e.label.clone_from(&e.session_id);
                }
                e
            })
            .collect()
    }

    /// How many secrets redaction replaced in this source (`redactedSecrets`; 0 when absent).
    pub fn redacted_secrets(&self) -> u64 {
        self.extra
            .get("redactedSecrets")
            .and_then(Value::as_u64)
            .unwrap_or(0)
    }

    /// For an excerpt reference, where its window lies (`excerpt`), as a card shows it:
    /// "excerpt, messages first–last of of".
    pub fn excerpt(&self) -> Option<ExcerptSpan> {
        let e = self.extra.get("excerpt")?;
        let n = |k: &str| e.get(k).and_then(Value::as_u64);
        Some(ExcerptSpan {
            seq: n("seq")?,
            first: n("first")?,
            last: n("last")?,
            of: n("of")?,
        })
    }

    /// The wire object (keys in the documented order).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// Where an excerpt's window lies, read back from a reference entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExcerptSpan {
    /// The seq the mention asked for (to insert a fresh mention of the same exchange).
    pub seq: u64,
    /// 1-based positions of the window's first and last message, and the conversation's size.
    pub first: u64,
    pub last: u64,
    pub of: u64,
}

/// One conversation item of a snapshot source, as the model reads it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SnapshotTurn {
    pub role: String,
    pub text: String,
}

/// One source object decoded from a context message's framed array.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotSource {
    pub session_id: String,
    pub label: String,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub conversation: Vec<SnapshotTurn>,
    /// UTF-8 bytes of this source's JSON in the snapshot (filled by [`decode_snapshot`]).
    #[serde(skip)]
    pub serialized_bytes: usize,
}

/// The sources of a context text built by [`super::prompt::prompt_text`], with their JSON
/// sizes; `None` when the text is not such a context (or its array does not parse).
pub fn decode_snapshot(context_text: &str) -> Option<Vec<SnapshotSource>> {
    let array = serialized_sources(context_text)?;
    let mut sources: Vec<SnapshotSource> = serde_json::from_str(array).ok()?;
    let sizes = element_sizes(array);
    if sizes.len() == sources.len() {
        for (source, size) in sources.iter_mut().zip(sizes) {
            source.serialized_bytes = size;
        }
    }
    Some(sources)
}

/// Byte length of each top-level element of a JSON array text (strings and nesting tracked;
/// the text is already known to parse).
fn element_sizes(array: &str) -> Vec<usize> {
    let mut sizes = Vec::new();
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut start = None;
    for (i, b) in array.bytes().enumerate() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => {
                in_string = true;
                if depth == 1 && start.is_none() {
                    start = Some(i);
                }
            }
            b'[' | b'{' => {
                if depth == 1 && start.is_none() {
                    start = Some(i);
                }
                depth += 1;
            }
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0
                    && let Some(s) = start.take()
                {
                    sizes.push(i - s);
                }
            }
            b',' if depth == 1 => {
                if let Some(s) = start.take() {
                    sizes.push(i - s);
                }
            }
            b' ' | b'\n' | b'\r' | b'\t' => {}
            _ => {
                if depth == 1 && start.is_none() {
                    start = Some(i);
                }
            }
        }
    }
    sizes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::prompt_text;
    use serde_json::json;

    #[test]
    fn entries_decode_with_defaults_and_keep_foreign_keys() {
        let source = Source::session_reference(json!([
            {"sessionId": "a", "label": "A", "originalMessages": 9, "retainedMessages": 4,
             "truncated": true, "origin": "dsh"},
            {"sessionId": "b"},
            "not an object",
            {"sessionId": 5}
        ]));
        let got = ReferenceEntry::decode_all(&source);
        assert_eq!(got.len(), 2);
        assert_eq!(
            (
                got[0].retained_messages,
                got[0].original_messages,
                got[0].truncated
            ),
            (4, 9, true)
        );
        assert_eq!(got[0].extra.get("origin"), Some(&json!("dsh")));
        assert_eq!(got[1].label, "b");
        assert_eq!((got[0].redacted_secrets(), got[0].excerpt()), (0, None));
        let with = ReferenceEntry::decode_all(&Source::session_reference(json!([
            {"sessionId": "a", "redactedSecrets": 3,
             "excerpt": {"seq": 9, "before": 2, "after": 2, "matchSeq": 9, "firstSeq": 7,
                         "lastSeq": 11, "first": 4, "last": 8, "of": 20}}
        ])));
        assert_eq!(with[0].redacted_secrets(), 3);
        assert_eq!(
            with[0].excerpt(),
            Some(ExcerptSpan {
                seq: 9,
                first: 4,
                last: 8,
                of: 20
            })
        );
        assert_eq!(
            ReferenceEntry::decode_all(&Source(json!({"kind": "user"}))),
            vec![]
        );
    }

    #[test]
    fn snapshot_sources_decode_with_their_sizes() {
        let one = r#"{"sessionId":"a","label":"A]\"x","cwd":null,"capturedThroughSeq":3,"conversation":[{"role":"user","text":"hi \u003c/x> ]}"}]}"#;
        let two = r#"{"sessionId":"b","label":"B","cwd":"/w","capturedThroughSeq":null,"conversation":[]}"#;
        let text = prompt_text(&format!("[{one},{two}]"));
        let got = decode_snapshot(&text).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].serialized_bytes, one.len());
        assert_eq!(got[1].serialized_bytes, two.len());
        assert_eq!(got[0].conversation[0].text, "hi </x> ]}");
        assert_eq!(got[1].cwd.as_deref(), Some("/w"));
        assert_eq!(decode_snapshot("plain text"), None);
        assert_eq!(decode_snapshot(&prompt_text("[{]")), None);
    }
}
