//! The `dsh-session:` URI codec (docs/references.md: URIs and mentions): base64url (no padding) of the UTF-8 bytes of
//! the id's `JSON.stringify` literal. Decoding accepts only the canonical spelling.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::error::ReferenceError;
use super::json_text::js_string_literal;

/// The URI scheme, including its colon.
pub const SCHEME: &str = "dsh-session:";

/// Whether `b` is a base64url alphabet byte (`A-Z a-z 0-9 - _`).
pub fn is_base64url_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

/// The canonical URI of session `id`.
pub fn encode_uri(id: &str) -> String {
    let literal = js_string_literal(id);
    let mut out = String::with_capacity(SCHEME.len() + literal.len() * 4 / 3 + 4);
    out.push_str(SCHEME);
    URL_SAFE_NO_PAD.encode_string(literal.as_bytes(), &mut out);
    out
}

/// The session id named by `uri`; anything but the canonical spelling is `INVALID_REFERENCE`.
pub fn decode_uri(uri: &str) -> Result<String, ReferenceError> {
    let invalid = |why: &str| {
        ReferenceError::invalid_reference(format!("invalid session reference {uri:?}: {why}"))
    };
    let payload = uri
        .strip_prefix(SCHEME)
        .ok_or_else(|| invalid("it must start with `dsh-session:`"))?;
    if payload.is_empty() {
        return Err(invalid("the payload is empty"));
    }
    if !payload.bytes().all(is_base64url_byte) {
        return Err(invalid("the payload is not base64url"));
    }
    let bytes = URL_SAFE_NO_PAD
        .decode(payload)
        .map_err(|_| invalid("the payload is not valid unpadded base64url"))?;
    let literal = std::str::from_utf8(&bytes).map_err(|_| invalid("the payload is not UTF-8"))?;
    // serde_json rejects lone surrogates, which Rust strings cannot hold (docs/references.md: URIs and mentions).
    let id: String =
        serde_json::from_str(literal).map_err(|_| invalid("the payload is not a JSON string"))?;
    if encode_uri(&id) != uri {
        return Err(invalid("the URI is not in canonical form"));
    }
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;

    #[test]
    fn round_trips_and_canonical_form() {
        for id in ["alpha", "", "a\"b\\c\n", "漢字/😀", "\u{7f}\u{2028}<"] {
            let uri = encode_uri(id);
            assert!(uri.starts_with(SCHEME));
            assert_eq!(decode_uri(&uri).unwrap(), id);
        }
        assert_eq!(encode_uri("a"), "dsh-session:ImEi");
    }

    #[test]
    fn rejects_non_canonical_spellings() {
        for uri in [
            "",
            "dsh-session:",
            "DSH-SESSION:ImEi",
            "dsh-session:ImEi=",
            "dsh-session:ImEj",
            "dsh-session:ImEiA",
            "dsh-session:IiJ",
            "dsh-session:Ilx1ZDgwMCI",
            "dsh-session:NDI",
        ] {
            let err = decode_uri(uri).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidReference, "{uri:?}");
        }
    }
}
