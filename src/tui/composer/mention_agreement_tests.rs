//! The widget crate's mention syntax checked against the reference layer's: the mentions
//! `dsh_reference::format_mention` writes are the ones `ratatui_mention::Mention` writes,
//! each a single finished mention (a chip) to the composer as the app configures it, and
//! both crates agree on JavaScript's whitespace and line terminators.

use dsh_reference::{encode_uri, js_chars};
use pretty_assertions::assert_eq;
use ratatui_mention::{Mention, MentionInputState, find_mentions};

use super::session_items::composer_config;

#[test]
fn the_app_composer_takes_session_mentions_only() {
    let config = composer_config(0);
    assert!(config.accepts_uri(&encode_uri("s-1")));
    assert!(encode_uri("s-1").starts_with(dsh_reference::uri::SCHEME));
    assert!(!config.accepts_uri("user:ada"));
}

#[test]
fn every_canonical_mention_is_written_alike_and_is_one_chip() {
    // `format_mention` conformance vectors.
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/crates/dsh-reference/tests/conformance/mention.json"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let cases = doc["format"].as_array().unwrap();
    assert!(cases.len() > 10);
    for case in cases {
        let text = case["mention"].as_str().unwrap();
        let id = case["sessionId"].as_str().unwrap();
        let label = case.get("label").and_then(|l| l.as_str());
        assert_eq!(dsh_reference::format_mention(id, label), text);
        let mention = Mention::new(label.unwrap_or(id), encode_uri(id));
        assert_eq!(
            mention.to_string(),
            text,
            "the widget writes it byte for byte"
        );
        assert_eq!(Mention::parse(text), Ok(mention.clone()), "{text:?}");
        let spans = find_mentions(text);
        assert_eq!(spans.len(), 1, "{text:?}");
        assert_eq!(spans[0].range, 0..text.len(), "{text:?}");
        // In the composer: one chip, and the caret inside it opens no popup.
        let mut state = MentionInputState::new(composer_config(0));
        let _ = state.set_draft(&format!("see {text} now"));
        let _ = state.set_caret(5);
        assert!(!state.popup_active(), "{text:?}");
        assert_eq!(state.mention_at_caret(), Some(mention), "{text:?}");
    }
}

#[test]
fn whitespace_and_line_terminators_agree_with_the_reference_layer() {
    for c in (0..=0x10_FFFF).filter_map(char::from_u32) {
        // A URI ends at JavaScript whitespace (or `)`): then `x)` is no longer part of it.
        let found = find_mentions(&format!("@[a](u:{c}x)"));
        let ends_uri = found.first().map(|s| s.mention.uri.clone()) != Some(format!("u:{c}x"));
        assert_eq!(ends_uri, js_chars::is_js_whitespace(c) || c == ')', "{c:?}");
        // A `\` escapes any char of a label but a line terminator.
        let unescapable = Mention::parse(&format!("@[a\\{c}](u:1)")).is_err();
        assert_eq!(unescapable, js_chars::is_line_terminator(c), "{c:?}");
    }
}
