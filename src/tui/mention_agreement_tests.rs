//! The widget crate's mention syntax checked against the reference layer's: the canonical
//! mentions `dsh_reference::format_mention` writes are single finished mentions to the
//! composer as the app configures it, and both crates agree on JavaScript's whitespace.

use dsh_reference::js_chars;
use pretty_assertions::assert_eq;
use ratatui_mention::mention_token::{DEFAULT_URI_SCHEME, mention_spans, mention_token_at};

use super::session_items::composer_config;

#[test]
fn the_app_composer_uses_the_session_uri_scheme() {
    assert_eq!(composer_config(0).uri_scheme(), dsh_reference::uri::SCHEME);
    assert_eq!(DEFAULT_URI_SCHEME, dsh_reference::uri::SCHEME);
}

#[test]
fn every_canonical_mention_is_one_span() {
    // `format_mention` conformance vectors: the composer must see each as one mention.
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/crates/dsh-reference/tests/conformance/mention.json"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let cases = doc["format"].as_array().unwrap();
    assert!(cases.len() > 10);
    for case in cases {
        let mention = case["mention"].as_str().unwrap();
        let id = case["sessionId"].as_str().unwrap();
        let label = case.get("label").and_then(|l| l.as_str());
        assert_eq!(dsh_reference::format_mention(id, label), mention);
        assert_eq!(
            mention_spans(mention, DEFAULT_URI_SCHEME),
            vec![0..mention.len()],
            "{mention:?}"
        );
        let padded = format!("see {mention} now");
        assert_eq!(
            mention_token_at(&padded, 5, DEFAULT_URI_SCHEME),
            None,
            "{padded:?}"
        );
    }
}

#[test]
fn whitespace_and_line_terminators_agree_with_the_reference_layer() {
    for c in (0..=0x10_FFFF).filter_map(char::from_u32) {
        assert_eq!(
            ratatui_mention::js_chars::is_js_whitespace(c),
            js_chars::is_js_whitespace(c),
            "{c:?}"
        );
        assert_eq!(
            ratatui_mention::js_chars::is_line_terminator(c),
            js_chars::is_line_terminator(c),
            "{c:?}"
        );
    }
}
