//! `dsh-refs prepare --session TARGET [--json] TEXT` (docs/cli.md): parse the mentions in TEXT
//! and print the readable content plus the snapshot context the model would receive.
//! Nothing is written to any session.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::cli::json_escape::escape_json_controls;
use dsh_foreign::Origin;
use dsh_reference::file_context::decode_file_source;
use dsh_reference::file_mention::scan_file_mentions;
use dsh_reference::{Prepared, parse_message};
use dsh_store::{ContentBlock, Message};
use term_text::{visible_controls, visible_controls_line};

use super::output::write_stdout;
use super::reference_service::{Service, block_on, open_service, target_agent};
use super::{CliError, Context, PrepareArgs};
use crate::agent::LogFacts;
use crate::llm::provider::DEFAULT_CONTEXT_TOKENS;
use dsh_reference::budget_plan::PlanRoom;
use dsh_store::{SessionQuery, SurfaceVisitor};

/// Run the subcommand.
pub fn run(ctx: &Context, args: &PrepareArgs) -> Result<(), CliError> {
    ctx.require_store()?;
    let service = open_service(ctx)?;
    let parsed = parse_message(&args.text)?;
    let files = scan_file_mentions(&args.text, &parsed.spans);
    let agent = target_agent(&service, &args.session);
    let refs = service.refs.clone();
    let room = target_room(ctx, &service, &args.session, &parsed.text);
    let content = vec![ContentBlock::text(parsed.text)];
    let result = block_on(|cancel| async move {
        refs.prepare_planned(
            &agent,
            &content,
            &parsed.mentions,
            &files,
            Some(room),
            &cancel,
        )
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

/// What the model's window has left for `draft` in session `id` (docs/references.md: the
/// budget plan): the window from `[model] context_tokens` or the provider's default, the
/// session's next request estimated from its log as its agent would (a session that does
/// not exist yet has none).
fn target_room(ctx: &Context, service: &Service, id: &str, draft: &str) -> PlanRoom {
    /// Feeds every surface event to the facts, as the agent observes its log.
    struct Feed<'a>(&'a mut LogFacts);
    impl SurfaceVisitor for Feed<'_> {
        fn visit(&mut self, event: &dsh_store::Event, _removed: &[u64]) {
            self.0.observe(event);
        }
    }
    let tokens = ctx
        .config
        .model
        .context_tokens
        .unwrap_or(DEFAULT_CONTEXT_TOKENS);
    let mut facts = LogFacts::for_context_tokens(tokens);
    if service
        .sources
        .scan_surface(id, &mut Feed(&mut facts))
        .is_err()
    {
        facts = LogFacts::for_context_tokens(tokens);
    }
    facts.plan_room(tokens, draft)
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
/// [{"sessionId", "origin"}], "fileContext": null | {"id", "source", "content"}}`: each
/// context keeps its message's own shape; where each referenced session comes from is listed
/// beside it.
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
    out.insert("context".into(), message_json(prepared.context.as_ref())?);
    out.insert("references".into(), Value::Array(references));
    out.insert(
        "fileContext".into(),
        message_json(prepared.file_context.as_ref())?,
    );
    // The budget plan: ours, never inside the context's source.
    out.insert(
        "plan".into(),
        prepared
            .plan
            .as_ref()
            .map_or(Ok(Value::Array(Vec::new())), |p| {
                serde_json::to_value(&p.sources)
            })?,
    );
    Ok(Value::Object(out))
}

/// `null` or `{"id", "source", "content"}` of a context message.
fn message_json(message: Option<&Message>) -> Result<Value, CliError> {
    let Some(message) = message else {
        return Ok(Value::Null);
    };
    let mut m = Map::new();
    m.insert("id".into(), message.id.clone().into());
    m.insert(
        "source".into(),
        message.source.as_ref().map_or(Value::Null, |s| s.0.clone()),
    );
    m.insert("content".into(), serde_json::to_value(&message.content)?);
    Ok(Value::Object(m))
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
    if let Some(files) = &prepared.file_context {
        out.push_str("\nReferenced files:\n");
        for line in file_lines(files) {
            let _ = writeln!(out, "  {line}");
        }
    }
    match &prepared.context {
        None => out.push_str("\nNo referenced sessions.\n"),
        Some(context) => {
            out.push_str("\nReferenced sessions:\n");
            for line in reference_lines(context, origin_of) {
                let _ = writeln!(out, "  {line}");
            }
            if let Some(plan) = prepared.plan.as_ref().filter(|p| p.lowered()) {
                let _ = writeln!(
                    out,
                    "\nBudget plan (the sessions share {} bytes of what the model's window has \
                     left; max_reference_bytes = {}):",
                    plan.share_bytes, plan.max_reference_bytes
                );
                for s in &plan.sources {
                    let _ = writeln!(
                        out,
                        "  {} · {} bytes (least {}, holds {}) · {} messages kept, {} left out · \
                         ~{} tokens",
                        visible_controls_line(&s.label),
                        s.budget_bytes,
                        s.minimum_bytes,
                        s.holds_bytes,
                        s.retained_messages,
                        s.omitted_messages,
                        s.tokens
                    );
                }
            }
            let _ = write!(
                out,
                "\nContext message {} (sent right before the message):\n{}\n",
                visible_controls_line(&context.id),
                visible_controls(&context.joined_text())
            );
        }
    }
    if let Some(files) = &prepared.file_context {
        let _ = write!(
            out,
            "\nFile context message {} (sent after the sessions, right before the message):\n{}\n",
            visible_controls_line(&files.id),
            visible_controls(&files.joined_text())
        );
    }
    out
}

/// `path · N bytes[ · cut to M][ · K secrets redacted]` per attached file.
fn file_lines(context: &Message) -> Vec<String> {
    let entries = context
        .source
        .as_ref()
        .and_then(decode_file_source)
        .unwrap_or_default();
    entries
        .iter()
        .map(|f| {
            let mut line = format!("{} · {} bytes", visible_controls_line(&f.path), f.bytes);
            if f.omitted_bytes > 0 {
                let _ = write!(line, " · cut to {} bytes", f.sent_bytes);
            }
            if f.redacted_secrets > 0 {
                let _ = write!(line, " · {} secrets redacted", f.redacted_secrets);
            }
            line
        })
        .collect()
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
            if let Some(x) = e.get("excerpt") {
                let n = |k: &str| x.get(k).and_then(Value::as_u64).unwrap_or(0);
                let _ = write!(
                    line,
                    " · excerpt, messages {}–{} of {}",
                    n("first"),
                    n("last"),
                    n("of")
                );
            }
            if let Some(k) = e.get("redactedSecrets").and_then(Value::as_u64) {
                let _ = write!(line, " · {k} secrets redacted");
            }
            if e.get("truncated").and_then(Value::as_bool) == Some(true) {
                line.push_str(" · truncated");
            }
            if let Some(b) = e.get("budgetBytes").and_then(Value::as_u64) {
                let _ = write!(line, " · budget lowered to {b} bytes");
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
            file_context: None,
            plan: None,
        };
        assert_eq!(
            json_output(&none, &|_| Origin::Dsh).unwrap(),
            json!({"content": [{"type": "text", "text": "hi"}], "context": null, "references": [], "fileContext": null, "plan": []})
        );
        let ctx = context();
        let some = Prepared {
            content: vec![ContentBlock::text("hi")],
            context: Some(ctx.clone()),
            file_context: None,
            plan: None,
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
                file_context: None,
                plan: None,
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
