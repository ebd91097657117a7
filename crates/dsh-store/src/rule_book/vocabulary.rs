//! Event types and the older record shapes each version reads.
//!
//! 0.1.0-rc.8 converts a few older records before it validates a log (its persistence
//! coordinator): a `steering/message` `{turn, message}` becomes that `user/message`, a
//! `turn/start` with a `trigger` loses it, a `turn/end` with an older reason gets today's.
//! Each conversion accepts exactly the older shape and refuses anything else; it also runs
//! over current records (so a `turn/end` must be `{turn, reason}` and nothing more). After
//! the conversion, a type outside its known set is refused unless marked `ignorable`.
//! 6816e8a3d5 reads any type, but refuses an `aborted` turn end carrying more than its kind.

use serde_json::{Map, Value};

use super::envelope::{Envelope, MAX_SAFE_INTEGER};
use super::{Rule, Versions, Violation};
use crate::event::{Event, EventData, TurnEndReason, kind};
use crate::kinds::TurnEndKind;

/// The event types 0.1.0-rc.8 knows (its generated `KNOWN_SESSION_EVENT_TYPES`;
/// 0.1.1-rc.1 and rc.2 hold the same list), sorted. Any other type must be marked
/// `ignorable`.
pub const RELEASE_KNOWN_EVENT_TYPES: [&str; 48] = [
    "agent-preset/selected",
    "agent/inbox/spliced",
    "approval/asked",
    "approval/decided",
    "approval/policy",
    "assistant/chunk",
    "assistant/message",
    "command/done",
    "command/run",
    "compaction/end",
    "compaction/prune",
    "compaction/start",
    "compaction/summary",
    "feedback/record",
    "goal/change",
    "hook/invoked",
    "hook/result",
    "llm/retry",
    "llm/retry-started",
    "permission/preset",
    "plan/mode",
    "request/context",
    "request/header",
    "sandbox/mode",
    "schedule/change",
    "session/end-seed",
    "session/title",
    "session/title-llm-request",
    "step/end",
    "step/start",
    "subagent/descriptor",
    "team/member",
    "team/message/delivered",
    "team/message/queued",
    "team/task",
    "todo/write",
    "tool-workflow/agent-end",
    "tool-workflow/agent-start",
    "tool-workflow/run-end",
    "tool-workflow/run-start",
    "tool/call",
    "tool/code-dispatch",
    "tool/code-dispatch-start",
    "tool/result",
    "turn/end",
    "turn/start",
    "user/message",
    "web/deepseek-search-llm-request",
];

/// The type 0.1.0-rc.8 reads an event as, after its conversion of older records.
pub(super) fn release_type(event: &Event) -> &str {
    match event.kind() {
        kind::STEERING_MESSAGE => kind::USER_MESSAGE,
        other => other,
    }
}

fn is_safe_positive(n: u64) -> bool {
    n >= 1 && i64::try_from(n).is_ok_and(|n| n <= MAX_SAFE_INTEGER)
}

/// Known types, formats no version reads any more, and the older shapes 0.1.0-rc.8
/// converts.
pub(super) fn check(event: &Event, envelope: &Envelope, out: &mut Vec<Violation>) {
    let seq = event.seq;
    let ty = release_type(event);
    if RELEASE_KNOWN_EVENT_TYPES.binary_search(&ty).is_err() && !envelope.is_ignorable() {
        out.push(Violation::new(
            Rule::KnownEventType,
            Versions::RELEASE,
            seq,
            format!(
                "event type \"{}\" is unknown and not marked ignorable",
                event.kind()
            ),
        ));
    }
    match &event.data {
        EventData::Other { kind: k, data } => match k.as_str() {
            "request/header-delta" => out.push(Violation::new(
                Rule::LegacyShape,
                Versions::BOTH,
                seq,
                "request/header-delta is no longer read",
            )),
            "mode/set" => out.push(Violation::new(
                Rule::LegacyShape,
                Versions::RELEASE,
                seq,
                "mode/set is no longer read",
            )),
            "request/header" if data.get("reason").and_then(Value::as_str) == Some("fallback") => {
                out.push(Violation::new(
                    Rule::LegacyShape,
                    Versions::BOTH,
                    seq,
                    "request/header with reason \"fallback\" is no longer read",
                ));
            }
            _ => {}
        },
        // A trigger marks the older turn start; rc.8 drops it after checking its shape.
        EventData::TurnStart {
            turn,
            trigger,
            extra,
        } if !trigger.is_null() => {
            let kind_ok = trigger
                .get("kind")
                .and_then(Value::as_str)
                .is_some_and(|k| !k.is_empty());
            if !is_safe_positive(*turn) || !extra.is_empty() || !kind_ok {
                out.push(Violation::new(
                    Rule::LegacyShape,
                    Versions::RELEASE,
                    seq,
                    format!(
                        "turn/start with a trigger must be exactly {{turn >= 1, trigger: \
                         {{kind, ...}}}}{}",
                        extra_note(extra)
                    ),
                ));
            }
        }
        EventData::TurnEnd {
            turn,
            reason,
            extra,
        } => turn_end(seq, *turn, reason, extra, out),
        EventData::SteeringMessage { extra, .. } if !extra.is_empty() => {
            out.push(Violation::new(
                Rule::LegacyShape,
                Versions::RELEASE,
                seq,
                format!(
                    "steering/message must be exactly {{turn, message}}{}",
                    extra_note(extra)
                ),
            ));
        }
        _ => {}
    }
}

fn extra_note(extra: &Map<String, Value>) -> String {
    if extra.is_empty() {
        String::new()
    } else {
        let keys: Vec<&str> = extra.keys().map(String::as_str).collect();
        format!(" (extra keys: {})", keys.join(", "))
    }
}

/// rc.8 converts every `turn/end` it reads: `{turn, reason}` and nothing else; reasons of
/// the kinds it knows in exactly their old or new shape. 6816e8a3d5 refuses an `aborted`
/// reason that carries more than its kind.
fn turn_end(
    seq: u64,
    turn: u64,
    reason: &TurnEndReason,
    extra: &Map<String, Value>,
    out: &mut Vec<Violation>,
) {
    let mut refuse = |why: String| {
        out.push(Violation::new(
            Rule::LegacyShape,
            Versions::RELEASE,
            seq,
            why,
        ));
    };
    if !extra.is_empty() || !is_safe_positive(turn) {
        refuse(format!(
            "turn/end must be exactly {{turn >= 1, reason}}{}",
            extra_note(extra)
        ));
        return;
    }
    let r = &reason.extra;
    let only_kind = r.is_empty();
    match &reason.kind {
        TurnEndKind::Completed
        | TurnEndKind::Blocked
        | TurnEndKind::MaxTokens
        | TurnEndKind::Interrupted => {
            if !only_kind {
                refuse(format!(
                    "a \"{}\" turn end carries nothing but its kind{}",
                    reason.kind,
                    extra_note(r)
                ));
            }
        }
        TurnEndKind::Aborted => {
            if !r.contains_key("reason") && !only_kind {
                refuse(format!(
                    "an \"aborted\" turn end is {{kind}} or {{kind, reason}}{}",
                    extra_note(r)
                ));
            }
        }
        TurnEndKind::Error => {
            if !r.contains_key("error") && !legacy_error_ok(r) {
                refuse(
                    "an \"error\" turn end is {kind, error: {code, message}} (or the older \
                     {kind, step, message, code?} / {kind, step, failure})"
                        .to_owned(),
                );
            }
        }
        TurnEndKind::Other(k) if k == "disposed" => {
            if !only_kind {
                refuse("a \"disposed\" turn end carries nothing but its kind".to_owned());
            }
        }
        TurnEndKind::Forked | TurnEndKind::Other(_) => {}
    }
    if matches!(reason.kind, TurnEndKind::Aborted) && !only_kind {
        out.push(Violation::new(
            Rule::LegacyShape,
            Versions::FOLLOWED,
            seq,
            format!(
                "an \"aborted\" turn end must carry nothing but its kind{}",
                extra_note(r)
            ),
        ));
    }
}

/// The older error reasons rc.8 still converts: `{kind, step, failure: {message, code, ...}}`
/// or `{kind, step, message, code?}`.
fn legacy_error_ok(r: &Map<String, Value>) -> bool {
    let step_ok = r.get("step").and_then(Value::as_u64).is_some();
    if !step_ok {
        return false;
    }
    let only = |allowed: &[&str]| r.keys().all(|k| allowed.contains(&k.as_str()));
    if let Some(Value::Object(failure)) = r.get("failure") {
        let failure_keys_ok = failure.keys().all(|k| {
            [
                "message",
                "code",
                "status",
                "providerRetryAfterMs",
                "requestId",
            ]
            .contains(&k.as_str())
        });
        return only(&["step", "failure"])
            && failure_keys_ok
            && failure.get("message").is_some_and(Value::is_string)
            && failure.get("code").is_some_and(Value::is_string)
            && failure.get("status").is_none_or(Value::is_number)
            && failure
                .get("providerRetryAfterMs")
                .is_none_or(Value::is_number)
            && failure.get("requestId").is_none_or(Value::is_string);
    }
    only(&["step", "message", "code"])
        && r.get("message").is_some_and(Value::is_string)
        && r.get("code").is_none_or(Value::is_string)
}
