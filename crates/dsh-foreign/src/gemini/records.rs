//! The shapes of Gemini CLI's chat records and what of them is shown
//! (docs/foreign-sources.md, Gemini CLI).
//!
//! A message is `{id, timestamp, type, content, displayContent?, toolCalls?, thoughts?,
//! tokens?, model?}` with `type` one of `user`, `gemini`, `info`, `error`, `warning`, and
//! `content` a part list in the Gemini API's shape (a string, one part, or parts; a part is
//! `{text, thought?}`, `{functionCall}`, `{functionResponse}`, `{inlineData}`, …). A saved
//! chat holds the API history itself: `{role: user|model, parts}`.

use serde::Deserialize;

use crate::surface_events::ItemKind;

/// `content` / `displayContent` / `parts`: a string, one part, or a list of parts.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum PartList {
    Text(String),
    Parts(Vec<Part>),
    One(Part),
}

/// One part; only text parts are read (a function call or response, inline data and the
/// like have no `text`).
#[derive(Debug, Deserialize)]
pub struct Part {
    pub text: Option<String>,
    /// A thought summary, never shown.
    pub thought: Option<bool>,
}

/// One chat message record.
#[derive(Debug, Deserialize)]
pub struct MessageRecord {
    pub id: Option<String>,
    pub timestamp: Option<String>,
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub content: Option<PartList>,
    #[serde(rename = "displayContent")]
    pub display_content: Option<PartList>,
}

/// One turn of a saved chat (`/chat save <tag>`).
#[derive(Debug, Deserialize)]
pub struct HistoryTurn {
    pub role: Option<String>,
    pub parts: Option<PartList>,
}

/// Where Gemini CLI's `@path` expansion starts in a request's parts.
const REFERENCED_FILES: &str = "--- Content from referenced files ---";

/// User texts that are the CLI's own (the session context it sends first), tool results
/// or commands (Gemini CLI does not send `/` and `?` input to the model and leaves it out on
/// resume). Older versions recorded every request sent to the model as a `user` message,
/// tool results too, as the text `partListUnionToString` makes of its parts: a function
/// response reads `[Function Response: <tool>]` followed by the tool's text output
/// (`read_many_files`: the files' contents).
fn is_not_a_request(text: &str) -> bool {
    let t = text.trim_start();
    t.is_empty()
        || t.starts_with('/')
        || t.starts_with('?')
        || t.starts_with("[Function Response: ")
        || t.starts_with("<session_context>")
        || t.starts_with("<hook_context>")
        || t.starts_with("This is the Gemini CLI. We are setting up the context for our chat.")
}

/// The model's fixed acknowledgements of injected context.
fn is_acknowledgement(text: &str) -> bool {
    matches!(
        text.trim(),
        "Got it. Thanks for the context!" | "Got it. Thanks for the additional context!"
    )
}

/// A compression summary: the first user turn of a compressed history.
fn is_state_snapshot(text: &str) -> bool {
    text.contains("<state_snapshot>")
}

impl PartList {
    /// The text parts that are not thoughts, joined with `\n`; for a request, only up to
    /// where the `@path` file contents begin.
    fn text(&self, request: bool) -> String {
        let parts: Vec<&str> = match self {
            PartList::Text(t) => vec![t.as_str()],
            PartList::One(p) => p.visible().into_iter().collect(),
            PartList::Parts(ps) => {
                let mut out = Vec::new();
                for p in ps {
                    let Some(t) = p.visible() else { continue };
                    if request && t.trim_start().starts_with(REFERENCED_FILES) {
                        break;
                    }
                    out.push(t);
                }
                out
            }
        };
        parts.join("\n")
    }
}

impl Part {
    fn visible(&self) -> Option<&str> {
        if self.thought == Some(true) {
            return None;
        }
        self.text.as_deref()
    }
}

/// The visible item of a request or reply text.
fn item(user: bool, text: String) -> Option<(ItemKind, String)> {
    if text.trim().is_empty() {
        return None;
    }
    if user {
        if is_state_snapshot(&text) {
            return Some((ItemKind::Checkpoint, text));
        }
        return (!is_not_a_request(&text)).then_some((ItemKind::User, text));
    }
    (!is_acknowledgement(&text)).then_some((ItemKind::Assistant, text))
}

impl MessageRecord {
    /// The visible item of this message: what the person typed (as shown to them, when the
    /// CLI recorded that apart), a compression summary, or the model's reply text. Tool
    /// calls and responses, thoughts, info/error/warning notes are left out.
    pub fn item(&self) -> Option<(ItemKind, String)> {
        match self.kind.as_deref() {
            Some("user") => {
                let shown = self.display_content.as_ref().or(self.content.as_ref())?;
                item(true, shown.text(true))
            }
            Some("gemini") => item(false, self.content.as_ref()?.text(false)),
            _ => None,
        }
    }
}

impl HistoryTurn {
    /// The visible item of one turn of a saved chat.
    pub fn item(&self) -> Option<(ItemKind, String)> {
        let user = match self.role.as_deref() {
            Some("user") => true,
            Some("model") => false,
            _ => return None,
        };
        item(user, self.parts.as_ref()?.text(user))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(json: &str) -> Option<(ItemKind, String)> {
        serde_json::from_str::<MessageRecord>(json).unwrap().item()
    }

    #[test]
    fn message_table() {
        let cases: &[(&str, Option<(ItemKind, &str)>)] = &[
            (
                r#"{"id":"1","type":"user","content":[{"text":"Fix the flaky test"}]}"#,
                Some((ItemKind::User, "Fix the flaky test")),
            ),
            (
                r#"{"id":"1","type":"user","content":"plain string"}"#,
                Some((ItemKind::User, "plain string")),
            ),
            (
                r#"{"id":"1","type":"user","content":[{"text":"Explain @src/a.rs"},{"text":"\n--- Content from referenced files ---"},{"text":"FILE-CONTENT fn a() {}"}]}"#,
                Some((ItemKind::User, "Explain @src/a.rs")),
            ),
            (
                r#"{"id":"1","type":"user","content":[{"text":"expanded"}],"displayContent":[{"text":"what I typed"}]}"#,
                Some((ItemKind::User, "what I typed")),
            ),
            (r#"{"id":"1","type":"user","content":"/help"}"#, None),
            (
                r#"{"id":"1","type":"user","content":"[Function Response: read_many_files]--- /w/a.md ---\n\nFILE"}"#,
                None,
            ),
            (
                r#"{"id":"1","type":"user","content":[{"functionResponse":{"name":"ls","response":{"output":"x"}}}]}"#,
                None,
            ),
            (
                r#"{"id":"1","type":"user","content":[{"text":"<session_context>\nThis is the Gemini CLI."}]}"#,
                None,
            ),
            (
                r#"{"id":"1","type":"user","content":[{"text":"<state_snapshot>\n<overall_goal>ship</overall_goal>\n</state_snapshot>"}]}"#,
                Some((
                    ItemKind::Checkpoint,
                    "<state_snapshot>\n<overall_goal>ship</overall_goal>\n</state_snapshot>",
                )),
            ),
            (
                r#"{"id":"2","type":"gemini","content":[{"text":"thinking","thought":true},{"text":"Done."}],"toolCalls":[{"id":"t","name":"x","args":{},"result":[{"text":"TOOL"}]}]}"#,
                Some((ItemKind::Assistant, "Done.")),
            ),
            (
                r#"{"id":"2","type":"gemini","content":"","toolCalls":[]}"#,
                None,
            ),
            (r#"{"id":"2","type":"gemini","content":"\n\n"}"#, None),
            (
                r#"{"id":"2","type":"gemini","content":[{"text":"Got it. Thanks for the additional context!"}]}"#,
                None,
            ),
            (
                r#"{"id":"3","type":"info","content":"Switched model"}"#,
                None,
            ),
            (r#"{"id":"3","type":"error","content":"quota"}"#, None),
        ];
        for (json, want) in cases {
            let got = message(json);
            assert_eq!(got.as_ref().map(|(k, t)| (*k, t.as_str())), *want, "{json}");
        }
    }

    #[test]
    fn saved_chat_turns() {
        let turn = |json: &str| serde_json::from_str::<HistoryTurn>(json).unwrap().item();
        assert_eq!(
            turn(r#"{"role":"user","parts":[{"text":"hello"}]}"#),
            Some((ItemKind::User, "hello".into()))
        );
        assert_eq!(
            turn(r#"{"role":"model","parts":[{"text":"Got it. Thanks for the context!"}]}"#),
            None
        );
        assert_eq!(
            turn(r#"{"role":"model","parts":[{"functionCall":{"name":"x","args":{}}}]}"#),
            None
        );
        assert_eq!(turn(r#"{"role":"tool","parts":[{"text":"x"}]}"#), None);
    }
}
