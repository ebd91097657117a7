//! dsh's mention grammar as the widget's syntax: the composer writes a pick with
//! `dsh_reference::mention_with_uri`, finds its chips with `dsh_reference::explicit_mentions`
//! (the scan `parse_text` reads a submitted message with) and ends a token at JavaScript
//! whitespace, as dsh's TUI does. The grammar itself lives once, in `dsh-reference`
//! (docs/references.md: URIs and mentions); this is only the adapter.

use dsh_reference::js_chars::is_js_whitespace;
use dsh_reference::{explicit_mentions, mention_with_uri};
use ratatui_mention::{Mention, MentionSpan, MentionSyntax};

/// `@[label](dsh-session:…)` and `@[label](dsh-excerpt:…)` mentions.
#[derive(Debug, Clone, Copy, Default)]
pub struct DshSyntax;

impl MentionSyntax for DshSyntax {
    /// `@[label](uri)`, the label escaped as dsh reads it; the URI is already canonical.
    fn write(&self, mention: &Mention) -> String {
        mention_with_uri(&mention.label, &mention.uri)
    }

    fn find(&self, text: &str) -> Vec<MentionSpan> {
        explicit_mentions(text)
            .into_iter()
            .map(|m| MentionSpan {
                range: m.range,
                mention: Mention::new(m.label, m.uri),
            })
            .collect()
    }

    fn is_token_space(&self, c: char) -> bool {
        is_js_whitespace(c)
    }
}

/// The text a pick of `item` from the `@` popup inserts (without the space after it).
#[cfg(test)]
pub fn inserted(item: &ratatui_mention::MentionItem) -> String {
    match item.insert() {
        ratatui_mention::Insert::Mention(mention) => DshSyntax.write(mention),
        ratatui_mention::Insert::Text(text) => text.clone(),
        other => panic!("an insert the app never makes: {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::composer::session_items::composer_config;
    use dsh_reference::encode_uri;
    use pretty_assertions::assert_eq;
    use ratatui_mention::MentionInputState;

    /// Every `format_mention` conformance vector is what the composer writes for it, and one
    /// chip there: the caret beside it opens no popup and names the mention.
    #[test]
    fn the_composer_writes_and_finds_the_conformance_mentions() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/crates/dsh-reference/tests/conformance/mention.json"
        );
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let cases = doc["format"].as_array().unwrap();
        assert!(cases.len() > 10);
        let config = composer_config(0);
        for case in cases {
            let text = case["mention"].as_str().unwrap();
            let id = case["sessionId"].as_str().unwrap();
            let label = case.get("label").and_then(|l| l.as_str()).unwrap_or(id);
            let mention = Mention::new(label, encode_uri(id));
            assert_eq!(config.write_mention(&mention), text);
            let found = config.find_mentions(&format!("see {text} now"));
            assert_eq!(found.len(), 1, "{text:?}");
            assert_eq!(found[0].range, 4..4 + text.len(), "{text:?}");
            assert_eq!(found[0].mention, mention, "{text:?}");
            let mut state = MentionInputState::new(composer_config(0));
            let _ = state.set_draft(&format!("see {text} now"));
            let _ = state.set_caret(4);
            assert!(!state.popup_active(), "{text:?}");
            assert_eq!(state.mention_at_caret(), Some(mention), "{text:?}");
        }
    }

    #[test]
    fn only_session_and_excerpt_mentions_are_chips_and_tokens_end_at_js_whitespace() {
        let config = composer_config(0);
        let text = "@[a](user:ada) @[b](dsh-excerpt:WyJiIiw3LDIsMl0) dsh-session:ImEi";
        let found: Vec<&str> = config
            .find_mentions(text)
            .iter()
            .map(|m| &text[m.range.clone()])
            .collect();
        assert_eq!(
            found,
            ["@[b](dsh-excerpt:WyJiIiw3LDIsMl0)"],
            "bare URIs are text"
        );
        // U+FEFF ends a token (JavaScript's `\s`), U+0085 does not.
        let mut state = MentionInputState::new(composer_config(0));
        let _ = state.set_draft("a\u{feff}@q");
        assert_eq!(
            state.results().map(|r| r.query().to_owned()),
            Some("q".into())
        );
        let _ = state.set_draft("a\u{85}@q");
        assert!(!state.popup_active());
    }
}
