//! Writing the canonical mention the popup inserts (SPEC §3.3 `format_mention`).
//! Temporary: the reference layer owns this; switch to `crate::reference::format_mention`
//! once that branch is merged, and delete this file.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// `@[label](dsh-session:…)` for session `id`: `\` and `]` in the label are escaped, the URI
/// is base64url (no padding) of the id's JSON string literal.
pub fn format_mention(id: &str, label: Option<&str>) -> String {
    let label = label.unwrap_or(id);
    let mut out = String::with_capacity(label.len() + id.len() * 2 + 20);
    out.push_str("@[");
    for c in label.chars() {
        if c == '\\' || c == ']' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push_str("](dsh-session:");
    // serde_json spells string literals as JSON.stringify does (short escapes, lowercase
    // `\u00xx`, nothing else escaped); a plain string cannot fail to serialize.
    let literal = serde_json::to_string(id).unwrap_or_default();
    out.push_str(&URL_SAFE_NO_PAD.encode(literal.as_bytes()));
    out.push(')');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::mention_token::mention_spans;
    use pretty_assertions::assert_eq;

    #[test]
    fn conformance_vectors() {
        // Worktrees and the main checkout sit next to `shared/`.
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../shared/conformance/mention.json"
        );
        check(&std::fs::read_to_string(path).unwrap());
    }

    fn check(raw: &str) {
        let doc: serde_json::Value = serde_json::from_str(raw).unwrap();
        let cases = doc["format"].as_array().unwrap();
        assert!(cases.len() > 10);
        for case in cases {
            let id = case["sessionId"].as_str().unwrap();
            let label = case.get("label").and_then(|l| l.as_str());
            let want = case["mention"].as_str().unwrap();
            let got = format_mention(id, label);
            assert_eq!(got, want, "{id:?} {label:?}");
            // The composer's scanner must see every canonical mention as exactly one span.
            assert_eq!(mention_spans(&got), vec![0..got.len()], "{got:?}");
        }
    }
}
