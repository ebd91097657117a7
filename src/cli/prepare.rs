//! `dsh-refs prepare --session TARGET [--json] TEXT` (docs/cli.md): parse the mentions in TEXT
//! and print the readable content plus the snapshot context the model would receive.
//! Nothing is written to any session.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::cli::json_escape::escape_json_controls;
use dsh_foreign::Origin;
use dsh_reference::{Prepared, parse_message};
use dsh_store::{ContentBlock, Message};
use ratatui_mention::{visible_controls, visible_controls_line};

use super::output::write_stdout;
use super::reference_service::{block_on, open_service, target_agent};
use super::{CliError, Context, PrepareArgs};

/// Run the subcommand.
pub fn run(ctx: &Context, args: &PrepareArgs) -> Result<(), CliError> {
    ctx.require_store()?;
    let service = open_service(ctx)?;
    let parsed = parse_message(&args.text)?;
    let agent = target_agent(&service, &args.session);
    let refs = service.refs.clone();
    let content = vec![ContentBlock::text(parsed.text)];
    let result = block_on(|cancel| async move {
        refs.prepare(&agent, &content, &parsed.references, &cancel)
            .await
    })?;
    let prepared = result?;
    let origin_of = |id: &str| service.sources.origin(id);
    let out = if args.json {
        let text = serde_json::to_string_pretty(&json_output(&prepared, &origin_of)?)?;
        format!("{}\n", escape_json_controls(&text))
    } else {
        human_output(&prepared, &origin_of)
    };
    write_stdout(&out)
}

/// Where a referenced session comes from (the sources' answer).
type OriginOf<'a> = dyn Fn(&str) -> Origin + 'a;

/// The provenance entries of the context message (one per referenced session).
fn provenance(context: &Message) -> &[Value] {
    context
        .source
        .as_ref()
        .and_then(|s| s.0.get("references"))
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
}

/// `{"content": [blocks], "context": null | {"id", "source", "content"}, "references":
/// [{"sessionId", "origin"}]}`: the context keeps the snapshot's own shape; where each
/// referenced session comes from is listed beside it.
fn json_output(prepared: &Prepared, origin_of: &OriginOf<'_>) -> Result<Value, CliError> {
    let mut out = Map::new();
    out.insert("content".into(), serde_json::to_value(&prepared.content)?);
    let references: Vec<Value> = prepared
        .context
        .as_ref()
        .map(provenance)
        .unwrap_or_default()
        .iter()
        .filter_map(|e| e.get("sessionId").and_then(Value::as_str))
        .map(|id| serde_json::json!({"sessionId": id, "origin": origin_of(id).as_str()}))
        .collect();
    let context = match &prepared.context {
        None => Value::Null,
        Some(message) => {
            let mut m = Map::new();
            m.insert("id".into(), message.id.clone().into());
            m.insert(
                "source".into(),
                message.source.as_ref().map_or(Value::Null, |s| s.0.clone()),
            );
            m.insert("content".into(), serde_json::to_value(&message.content)?);
            Value::Object(m)
        }
    };
    out.insert("context".into(), context);
    out.insert("references".into(), Value::Array(references));
    Ok(Value::Object(out))
}

/// The readable message, one summary line per referenced session, then the exact context
/// text (controls made visible).
fn human_output(prepared: &Prepared, origin_of: &OriginOf<'_>) -> String {
    let message: Vec<&str> = prepared
        .content
        .iter()
        .filter_map(ContentBlock::as_text)
        .collect();
    let mut out = format!("Message:\n{}\n", visible_controls(&message.join("\n")));
    match &prepared.context {
        None => out.push_str("\nNo referenced sessions.\n"),
        Some(context) => {
            out.push_str("\nReferenced sessions:\n");
            for line in reference_lines(context, origin_of) {
                let _ = writeln!(out, "  {line}");
            }
            let _ = write!(
                out,
                "\nContext message {} (sent right before the message):\n{}\n",
                visible_controls_line(&context.id),
                visible_controls(&context.joined_text())
            );
        }
    }
    out
}

/// `Label (id) · N of M messages[ · truncated][ · from Claude Code]` per provenance entry.
fn reference_lines(context: &Message, origin_of: &OriginOf<'_>) -> Vec<String> {
    provenance(context)
        .iter()
        .map(|e| {
            let text = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or_default();
            let retained = e
                .get("retainedMessages")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            let original = e
                .get("originalMessages")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            let mut line = format!(
                "{} ({}) · {retained} of {original} messages",
                visible_controls_line(text("label")),
                visible_controls_line(text("sessionId")),
            );
            if e.get("truncated").and_then(Value::as_bool) == Some(true) {
                line.push_str(" · truncated");
            }
            let origin = origin_of(text("sessionId"));
            if origin.is_foreign() {
                let _ = write!(
                    line,
                    " · from {}",
                    visible_controls_line(origin.tool_name())
                );
            }
            line
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_store::{Role, Source};
    use serde_json::json;

    fn context() -> Message {
        Message::new(
            Role::User,
            vec![ContentBlock::text("## Referenced sessions\n\u{1b}[2J")],
            Source::session_reference(json!([{
                "sessionId": "a", "label": "Build\u{7}", "capturedThroughSeq": 3, "compacted": false,
                "originalMessages": 4, "retainedMessages": 2, "omittedMessages": 2,
                "omittedBytes": 10, "truncated": true, "inputIndex": 0
            }])),
        )
    }

    #[test]
    fn json_shape_matches_the_spec() {
        let none = Prepared {
            content: vec![ContentBlock::text("hi")],
            context: None,
        };
        assert_eq!(
            json_output(&none, &|_| Origin::Dsh).unwrap(),
            json!({"content": [{"type": "text", "text": "hi"}], "context": null, "references": []})
        );
        let ctx = context();
        let some = Prepared {
            content: vec![ContentBlock::text("hi")],
            context: Some(ctx.clone()),
        };
        let v = json_output(&some, &|_| Origin::ClaudeCode).unwrap();
        assert_eq!(
            v["references"],
            json!([{"sessionId": "a", "origin": "claude-code"}])
        );
        assert_eq!(v["context"]["id"], json!(ctx.id));
        assert_eq!(v["context"]["source"]["kind"], "session-reference");
        assert_eq!(
            v["context"]["content"],
            json!([{"type": "text", "text": "## Referenced sessions\n\u{1b}[2J"}])
        );
        let keys: Vec<&String> = v["context"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["id", "source", "content"]);
    }

    #[test]
    fn human_output_summarizes_and_shows_controls_visibly() {
        let text = human_output(
            &Prepared {
                content: vec![ContentBlock::text("see @Build")],
                context: Some(context()),
            },
            &|_| Origin::Dsh,
        );
        assert!(
            text.contains("Build\\x07 (a) · 2 of 4 messages · truncated"),
            "{text}"
        );
        assert!(text.contains("\\x1B[2J"));
        assert!(!text.contains('\u{1b}') && !text.contains('\u{7}'));
    }
}
