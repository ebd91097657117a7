//! The `dsh-excerpt:` URI (docs/references.md: excerpt references): one exchange of a session —
//! the message with seq `seq` and up to `before`/`after` messages around it — named in a
//! scheme of its own, so a plain `dsh-session:` mention stays byte-compatible with dsh
//! (which refuses any suffix there).
//!
//! The payload is the unpadded base64url of the UTF-8 bytes of the JSON array
//! `[id, seq, before, after]`, the id written as a JavaScript string literal (as in a session
//! URI) and the numbers as plain decimals. Only the canonical spelling decodes.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::Value;

use super::error::ReferenceError;
use super::json_text::js_string_literal;
use super::mention::mention_with_uri;
use super::uri::is_base64url_byte;

/// The scheme, including its colon.
pub const EXCERPT_SCHEME: &str = "dsh-excerpt:";

/// Most messages an excerpt may ask for on one side of its match.
pub const MAX_EXCERPT_SIDE: u32 = 50;

/// One exchange of a session: the message `seq` and up to `before`/`after` messages around
/// it in the session's projected conversation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ExcerptRange {
    pub session_id: String,
    pub seq: u64,
    pub before: u32,
    pub after: u32,
}

/// The canonical URI of `range`.
pub fn encode_excerpt_uri(range: &ExcerptRange) -> String {
    let json = format!(
        "[{},{},{},{}]",
        js_string_literal(&range.session_id),
        range.seq,
        range.before,
        range.after
    );
    let mut out = String::with_capacity(EXCERPT_SCHEME.len() + json.len() * 4 / 3 + 4);
    out.push_str(EXCERPT_SCHEME);
    URL_SAFE_NO_PAD.encode_string(json.as_bytes(), &mut out);
    out
}

/// The range named by `uri`; anything but the canonical spelling is `INVALID_REFERENCE`.
pub fn decode_excerpt_uri(uri: &str) -> Result<ExcerptRange, ReferenceError> {
    let invalid = |why: &str| {
        ReferenceError::invalid_reference(format!("invalid excerpt reference {uri:?}: {why}"))
    };
    let payload = uri
        .strip_prefix(EXCERPT_SCHEME)
        .ok_or_else(|| invalid("it must start with `dsh-excerpt:`"))?;
    if payload.is_empty() || !payload.bytes().all(is_base64url_byte) {
        return Err(invalid("the payload is not base64url"));
    }
    let bytes = URL_SAFE_NO_PAD
        .decode(payload)
        .map_err(|_| invalid("the payload is not valid unpadded base64url"))?;
    let parsed: Vec<Value> =
        serde_json::from_slice(&bytes).map_err(|_| invalid("the payload is not a JSON array"))?;
    let [Value::String(id), seq, before, after] = parsed.as_slice() else {
        return Err(invalid("the payload must be [id, seq, before, after]"));
    };
    let side = |v: &Value| {
        v.as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|&n| n <= MAX_EXCERPT_SIDE)
    };
    let (Some(seq), Some(before), Some(after)) = (seq.as_u64(), side(before), side(after)) else {
        return Err(invalid(
            "seq must be a whole number and each side at most 50 messages",
        ));
    };
    let range = ExcerptRange {
        session_id: id.clone(),
        seq,
        before,
        after,
    };
    if encode_excerpt_uri(&range) != uri {
        return Err(invalid("the URI is not in canonical form"));
    }
    Ok(range)
}

/// `@[label](dsh-excerpt:…)`, the label escaped as in a session mention.
pub fn format_excerpt_mention(range: &ExcerptRange, label: &str) -> String {
    mention_with_uri(label, &encode_excerpt_uri(range))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    fn range(id: &str, seq: u64, before: u32, after: u32) -> ExcerptRange {
        ExcerptRange {
            session_id: id.into(),
            seq,
            before,
            after,
        }
    }

    #[test]
    fn round_trips_in_canonical_form() {
        for r in [
            range("a", 0, 0, 0),
            range("漢字/😀\"\n", 42, 2, 2),
            range("s", u64::MAX, 50, 50),
        ] {
            let uri = encode_excerpt_uri(&r);
            assert!(uri.starts_with(EXCERPT_SCHEME));
            assert_eq!(decode_excerpt_uri(&uri).unwrap(), r);
        }
        assert_eq!(
            encode_excerpt_uri(&range("a", 7, 2, 2)),
            "dsh-excerpt:WyJhIiw3LDIsMl0"
        );
    }

    #[test]
    fn rejects_everything_else() {
        let b64 = |s: &str| format!("{EXCERPT_SCHEME}{}", URL_SAFE_NO_PAD.encode(s));
        for uri in [
            String::new(),
            "dsh-excerpt:".into(),
            "dsh-session:ImEi".into(),
            "dsh-excerpt:WyJhIiw3LDIsMl0=".into(),
            b64(r#"["a", 7, 2, 2]"#),
            b64(r#"["a",7,2]"#),
            b64(r#"["a",-1,2,2]"#),
            b64(r#"["a",7.5,2,2]"#),
            b64(r#"["a",7,51,2]"#),
            b64("[5,7,2,2]"),
            b64(r#"{"id":"a"}"#),
            b64(r#"["\u0061",7,2,2]"#),
        ] {
            let err = decode_excerpt_uri(&uri).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidReference, "{uri:?}");
        }
    }

    #[test]
    fn mentions_escape_the_label() {
        assert_eq!(
            format_excerpt_mention(&range("a", 7, 2, 2), "Build ] \\"),
            "@[Build \\] \\\\](dsh-excerpt:WyJhIiw3LDIsMl0)"
        );
    }
}
