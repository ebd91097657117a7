//! What the offline model does with `search_references` (docs/llm-providers.md: offline
//! provider), deterministically: when the user's last message holds a line
//! `recall: <query>` and the tool is offered, it calls the tool with `ref` 1 and that
//! query; once results came back, it answers quoting the best match of each and citing it
//! as `[ref K #SEQ]`.

use std::fmt::Write as _;

use super::offline::excerpt;
use super::provider::ChatRequest;
use dsh_reference::citation::citation;
use dsh_reference::recall_result::{TOOL_NAME, decode_recall, first_match};
use dsh_store::tool_round::{ToolCallBlock, ToolResultBlock};
use dsh_store::{Message, Role};

/// A call the offline model makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OfflineCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// Quoted matches per result, at most.
const QUOTES: usize = 3;
/// Characters of context shown before a match in a quote.
const BEFORE_CHARS: usize = 20;

/// The query of a `recall: <query>` line of `text`, if it has one.
pub fn recall_query(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let line = line.trim();
        let head = line.get(..7)?;
        if !head.eq_ignore_ascii_case("recall:") {
            return None;
        }
        let query = line.get(7..)?.trim();
        (!query.is_empty()).then(|| query.to_owned())
    })
}

/// The index of the last message the user typed.
fn last_user(messages: &[Message]) -> Option<usize> {
    messages
        .iter()
        .rposition(|m| m.role == Role::User && m.is_direct_user())
}

/// The call to make in reply to `request`, if any: a `recall:` line in the user's last
/// message, the tool offered, and no result for it yet.
pub fn recall_call(request: &ChatRequest) -> Option<OfflineCall> {
    if !request.tools.iter().any(|t| t.name == TOOL_NAME) {
        return None;
    }
    let at = last_user(&request.messages)?;
    let query = recall_query(&request.messages.get(at)?.joined_text())?;
    let answered = request
        .messages
        .get(at + 1..)
        .unwrap_or_default()
        .iter()
        .any(|m| ToolResultBlock::of(m).is_some());
    if answered {
        return None;
    }
    let earlier_calls = request
        .messages
        .iter()
        .flat_map(|m| m.content.iter().filter_map(ToolCallBlock::of))
        .count();
    let arguments = serde_json::json!({"ref": 1, "query": query}).to_string();
    Some(OfflineCall {
        id: format!("recall-{}", earlier_calls + 1),
        name: TOOL_NAME.to_owned(),
        arguments,
    })
}

/// Lines answering the results of this turn's searches: per result, the best matches
/// quoted and cited, or what went wrong. Empty when the turn made no search.
pub fn recall_lines(messages: &[Message]) -> String {
    let Some(at) = last_user(messages) else {
        return String::new();
    };
    let mut out = String::new();
    for result in messages
        .get(at + 1..)
        .unwrap_or_default()
        .iter()
        .filter_map(ToolResultBlock::of)
    {
        out.push('\n');
        if result.is_error {
            let _ = write!(out, "The search failed: {}", excerpt(&result.text));
            continue;
        }
        let Some(view) = decode_recall(&result.text) else {
            let _ = write!(out, "The search answered: {}", excerpt(&result.text));
            continue;
        };
        let words: Vec<String> = view
            .query
            .split(|c: char| c.is_whitespace() || c == '"')
            .filter(|w| !w.is_empty())
            .map(str::to_owned)
            .collect();
        if view.exchanges.is_empty() {
            let _ = write!(
                out,
                "Nothing in {} matched \"{}\".",
                excerpt(&view.label),
                excerpt(&view.query)
            );
            continue;
        }
        let _ = write!(
            out,
            "Recalled from {} (reference {}), {} match{}:",
            excerpt(&view.label),
            view.reference,
            view.matched,
            if view.matched == 1 { "" } else { "es" }
        );
        for exchange in view.exchanges.iter().take(QUOTES) {
            let Some(m) = exchange.messages.iter().find(|m| m.seq == exchange.matched) else {
                continue;
            };
            let _ = write!(
                out,
                "\n- {} said: \"{}\" {}",
                m.role,
                quote(&m.text, &words),
                citation(view.reference, m.seq)
            );
        }
    }
    out
}

/// A short clean quote of `text` from a little before its first match.
fn quote(text: &str, words: &[String]) -> String {
    let at = first_match(text, words).unwrap_or(0);
    let before = text.get(..at).unwrap_or_default();
    let mut start = before
        .char_indices()
        .rev()
        .nth(BEFORE_CHARS.saturating_sub(1))
        .map_or(0, |(i, _)| i);
    // From the start of a word.
    let mid_word = before
        .get(..start)
        .and_then(|b| b.chars().next_back())
        .is_some_and(|c| !c.is_whitespace());
    if mid_word
        && let Some(space) = before
            .get(start..)
            .and_then(|b| b.find(char::is_whitespace))
    {
        start += space;
    }
    let shown = excerpt(text.get(start..).unwrap_or_default());
    if start > 0 {
        format!("…{shown}")
    } else {
        shown
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolSpec;
    use dsh_reference::recall_result::{RecallExchange, RecallMessage, RecallView, recall_text};
    use dsh_store::tool_round::{tool_call_block, tool_result_message};
    use dsh_store::{ContentBlock, Source};
    use pretty_assertions::assert_eq;

    fn offered(messages: Vec<Message>) -> ChatRequest {
        ChatRequest::new(messages).with_tools(vec![ToolSpec {
            name: TOOL_NAME.into(),
            description: String::new(),
            parameters: serde_json::json!({}),
        }])
    }

    #[test]
    fn recall_lines_are_found_in_the_users_message() {
        let cases = [
            ("recall: kafka retention", Some("kafka retention")),
            (
                "what did we say?\n  RECALL:  zeppelin  \nthanks",
                Some("zeppelin"),
            ),
            ("recall:", None),
            ("please recall: this", None),
            ("no line", None),
        ];
        for (text, want) in cases {
            assert_eq!(recall_query(text).as_deref(), want, "{text:?}");
        }
    }

    #[test]
    fn the_offline_model_calls_once_then_quotes_and_cites() {
        let user = Message::user_text("recall: zeppelin");
        let call = recall_call(&offered(vec![user.clone()])).unwrap();
        assert_eq!(
            (call.id.as_str(), call.arguments.as_str()),
            ("recall-1", r#"{"ref":1,"query":"zeppelin"}"#)
        );
        // Not offered: no call.
        assert_eq!(recall_call(&ChatRequest::new(vec![user.clone()])), None);
        let asking = Message::new(
            Role::Assistant,
            vec![tool_call_block(&call.id, &call.name, &call.arguments)],
            Source::model("offline", "offline-echo"),
        );
        let long = format!("{} we chose the zeppelin protocol", "x ".repeat(100));
        let view = RecallView {
            reference: 1,
            session_id: "s".into(),
            label: "Uplink".into(),
            query: "zeppelin".into(),
            matched: 1,
            omitted: 0,
            exchanges: vec![RecallExchange {
                matched: 3,
                messages: vec![RecallMessage {
                    seq: 3,
                    role: "user".into(),
                    text: long,
                }],
            }],
        };
        let result = tool_result_message(&call.id, &recall_text(view, true).text, false);
        let messages = vec![user, asking, result];
        assert_eq!(recall_call(&offered(messages.clone())), None);
        assert_eq!(
            recall_lines(&messages),
            "\nRecalled from Uplink (reference 1), 1 match:\n- user said: \"…x x x we chose the zeppelin protocol\" [ref 1 #3]"
        );
        let failed = vec![
            Message::user_text("recall: x"),
            tool_result_message("recall-1", "RECALL_LIMIT: too many", true),
        ];
        assert_eq!(
            recall_lines(&failed),
            "\nThe search failed: RECALL_LIMIT: too many"
        );
        assert_eq!(
            recall_lines(&[Message::new(
                Role::User,
                vec![ContentBlock::text("hi")],
                Source::user()
            )]),
            ""
        );
    }
}
