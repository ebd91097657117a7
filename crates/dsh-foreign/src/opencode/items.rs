//! What of an OpenCode session is shown (docs/foreign-sources.md, OpenCode), the same for
//! the database and the older JSON files: a message is `{role: user|assistant, time,
//! summary?, finish?, error?, parentID?}` with parts `{type, text?, synthetic?, ignored?}`.
//!
//! - A request is the `text` parts of a `user` message that OpenCode did not add itself
//!   (`synthetic`) or leave out (`ignored`); a reply the `text` parts of an `assistant`
//!   message. Reasoning, tool calls and results, files, patches, snapshots, step marks and
//!   sub-task parts are left out.
//! - Compaction: a `user` message with a `compaction` part asks for one; the `assistant`
//!   message answering it with `summary: true`, finished and without error, is the summary.
//!   It replaces everything before it (but the messages from the part's `tail_start_id`
//!   on, which OpenCode keeps) and becomes a checkpoint. An unfinished summary is not shown.

use std::collections::HashMap;

use crate::surface_events::ItemKind;

/// A message's fields that matter here.
#[derive(Debug, Clone, Default)]
pub struct MessageInfo {
    pub id: String,
    pub role: String,
    /// `assistant`: a compaction summary.
    pub summary: bool,
    /// `assistant`: finished (a `finish` reason, or a completion time) without an error.
    pub complete: bool,
    pub parent_id: Option<String>,
    pub time: i64,
}

/// A part's fields that matter here.
#[derive(Debug, Clone, Default)]
pub struct PartInfo {
    pub kind: String,
    pub text: Option<String>,
    pub synthetic: bool,
    pub ignored: bool,
    /// `compaction`: the first message OpenCode keeps after the summary.
    pub tail_start_id: Option<String>,
}

/// What a message does to the surface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Nothing visible.
    Nothing,
    /// An item joins the surface.
    Show(ItemKind, String),
    /// A compaction summary: the surface before it goes (but the messages from the tail
    /// start on), then the checkpoint joins it.
    Compact {
        keep_from: Option<String>,
        text: String,
    },
}

/// Reads a session's messages in order and tells what each does.
#[derive(Debug, Default)]
pub struct Stepper {
    /// Compaction requests seen: user message id → the tail start it names.
    requests: HashMap<String, Option<String>>,
}

/// The text of an item of `kind` from its message's parts: the `text` parts shown (a
/// summary keeps the parts OpenCode marks as its own).
pub fn item_text(kind: ItemKind, parts: &[PartInfo]) -> String {
    let skip_synthetic = kind != ItemKind::Checkpoint;
    let kept: Vec<&str> = parts
        .iter()
        .filter(|p| p.kind == "text" && !p.ignored && !(skip_synthetic && p.synthetic))
        .filter_map(|p| p.text.as_deref())
        .filter(|t| !t.trim().is_empty())
        .collect();
    kept.join("\n")
}

impl Stepper {
    /// The step of `message` with its `parts` (in order).
    pub fn step(&mut self, message: &MessageInfo, parts: &[PartInfo]) -> Step {
        let texts = |skip_synthetic: bool| -> String {
            let kind = if skip_synthetic {
                ItemKind::User
            } else {
                ItemKind::Checkpoint
            };
            item_text(kind, parts)
        };
        match message.role.as_str() {
            "user" => {
                if let Some(p) = parts.iter().find(|p| p.kind == "compaction") {
                    self.requests
                        .insert(message.id.clone(), p.tail_start_id.clone());
                }
                let text = texts(true);
                if text.is_empty() {
                    Step::Nothing
                } else {
                    Step::Show(ItemKind::User, text)
                }
            }
            "assistant" if message.summary => {
                let request = message
                    .parent_id
                    .as_ref()
                    .and_then(|p| self.requests.get(p));
                let text = texts(false);
                match request {
                    Some(keep_from) if message.complete && !text.is_empty() => Step::Compact {
                        keep_from: keep_from.clone(),
                        text,
                    },
                    _ => Step::Nothing,
                }
            }
            "assistant" => {
                let text = texts(true);
                if text.is_empty() {
                    Step::Nothing
                } else {
                    Step::Show(ItemKind::Assistant, text)
                }
            }
            _ => Step::Nothing,
        }
    }
}

/// Whether `title` is the placeholder OpenCode gives a session before naming it
/// (`New session - <ISO time>`, `Child session - <ISO time>`).
pub fn is_placeholder_title(title: &str) -> bool {
    let t = title.trim();
    let Some(rest) = ["New session - ", "New Session - ", "Child session - "]
        .iter()
        .find_map(|p| t.strip_prefix(p))
    else {
        return t.is_empty();
    };
    // 2025-06-01T10:00:00.000Z
    let b = rest.as_bytes();
    b.len() == 24
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'.',
            23 => *c == b'Z',
            _ => c.is_ascii_digit(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(id: &str, role: &str) -> MessageInfo {
        MessageInfo {
            id: id.into(),
            role: role.into(),
            complete: true,
            ..MessageInfo::default()
        }
    }

    fn text(t: &str) -> PartInfo {
        PartInfo {
            kind: "text".into(),
            text: Some(t.into()),
            ..PartInfo::default()
        }
    }

    #[test]
    fn steps() {
        let mut s = Stepper::default();
        let synthetic = PartInfo {
            synthetic: true,
            ..text("Called the Read tool: FILE")
        };
        let tool = PartInfo {
            kind: "tool".into(),
            ..PartInfo::default()
        };
        let reasoning = PartInfo {
            kind: "reasoning".into(),
            text: Some("THINK".into()),
            ..PartInfo::default()
        };
        assert_eq!(
            s.step(&msg("m1", "user"), &[text("Add tests"), synthetic]),
            Step::Show(ItemKind::User, "Add tests".into())
        );
        assert_eq!(
            s.step(
                &msg("m2", "assistant"),
                &[reasoning, tool, text("\n"), text("Added.")]
            ),
            Step::Show(ItemKind::Assistant, "Added.".into())
        );
        let compaction = PartInfo {
            kind: "compaction".into(),
            tail_start_id: Some("m1".into()),
            ..PartInfo::default()
        };
        assert_eq!(s.step(&msg("m3", "user"), &[compaction]), Step::Nothing);
        let mut summary = msg("m4", "assistant");
        summary.summary = true;
        summary.parent_id = Some("m3".into());
        let mut unfinished = summary.clone();
        unfinished.complete = false;
        assert_eq!(s.step(&unfinished, &[text("partial")]), Step::Nothing);
        assert_eq!(
            s.step(&summary, &[text("Summary: tests added")]),
            Step::Compact {
                keep_from: Some("m1".into()),
                text: "Summary: tests added".into()
            }
        );
        let mut stray = summary.clone();
        stray.parent_id = Some("m1".into());
        assert_eq!(s.step(&stray, &[text("x")]), Step::Nothing);
        assert_eq!(s.step(&msg("m5", "system"), &[text("x")]), Step::Nothing);
    }

    #[test]
    fn placeholder_titles() {
        assert!(is_placeholder_title(
            "New session - 2025-06-01T10:00:00.000Z"
        ));
        assert!(is_placeholder_title(
            "Child session - 2025-06-01T10:00:00.000Z"
        ));
        assert!(is_placeholder_title(
            "New Session - 2025-06-01T10:00:00.000Z"
        ));
        assert!(is_placeholder_title(" "));
        assert!(!is_placeholder_title("New session - about caching"));
        assert!(!is_placeholder_title("Fix the cache"));
    }
}
