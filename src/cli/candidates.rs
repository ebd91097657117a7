//! `dsh-refs candidates --session TARGET [--query Q] [--limit N] [--json]` (docs/cli.md): the
//! sessions TARGET may reference, as dsh's candidate listing gives them.

use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::cli::json_escape::escape_json_controls;
use dsh_foreign::Origin;
use dsh_reference::{Candidate, display_title, format_mention, mention_label};
use term_text::visible_controls_line;

use super::output::{local_time, write_stdout};
use super::reference_service::{block_on, open_service, target_agent};
use super::usage::usage_path;
use super::{CandidatesArgs, CliError, Context, Rank};
use dsh_reference::frecency::UsageBook;
use dsh_store::event::now_ms;

/// Run the subcommand.
pub fn run(ctx: &Context, args: &CandidatesArgs) -> Result<(), CliError> {
    ctx.require_store()?;
    let service = open_service(ctx)?;
    let agent = target_agent(&service, &args.session);
    let agent_cwd = agent.cwd.clone();
    let refs = service.refs.clone();
    // The label a mention carries travels in the user's own message: secrets redacted.
    let redact = refs.config().redact_secrets;
    let frecency = args.rank == Rank::Frecency;
    // The parser admits only positive limits; the service still refuses others.
    let limit = match (args.limit, frecency) {
        (n, true) => {
            let n = n.map_or(refs.config().candidate_limit, |n| {
                usize::try_from(n).unwrap_or(usize::MAX)
            });
            Some(n)
        }
        (_, false) => None,
    };
    // Frecency reorders the whole listing, then keeps the first rows.
    let asked = if frecency { Some(i64::MAX) } else { args.limit };
    let result = block_on(|cancel| async move {
        refs.list_candidates(&agent, &args.query, asked, &cancel)
            .await
    })?;
    let mut candidates = result?;
    let ranking = if let Some(limit) = limit {
        let book = usage_path()
            .map(|p| UsageBook::load(&p))
            .unwrap_or_default();
        let now = u64::try_from(now_ms()).unwrap_or(0);
        book.order(&mut candidates, agent_cwd.as_deref(), now);
        candidates.truncate(limit);
        let marks: Vec<(bool, u32)> = candidates
            .iter()
            .map(|c| {
                (
                    book.is_pinned(&c.session_id),
                    book.score(&c.session_id, now),
                )
            })
            .collect();
        Some(marks)
    } else {
        None
    };
    let origins: Vec<Origin> = candidates
        .iter()
        .map(|c| service.sources.origin(&c.session_id))
        .collect();
    let out = if args.json {
        let mut rows = json_rows(&candidates, &origins, redact);
        if let (Some(marks), Value::Array(rows)) = (&ranking, &mut rows) {
            add_ranking(rows, marks);
        }
        let text = serde_json::to_string_pretty(&rows)?;
        format!("{}\n", escape_json_controls(&text))
    } else {
        human_rows(&candidates, &origins, redact)
    };
    write_stdout(&out)
}

/// `pinned` and `frecency` on each row of a frecency listing.
fn add_ranking(rows: &mut [Value], marks: &[(bool, u32)]) {
    for (row, (pinned, score)) in rows.iter_mut().zip(marks) {
        if let Value::Object(m) = row {
            m.insert("pinned".into(), (*pinned).into());
            m.insert("frecency".into(), (*score).into());
        }
    }
}

/// `[{sessionId, label, cwd?, createdAt, mention, origin}]`.
fn json_rows(candidates: &[Candidate], origins: &[Origin], redact: bool) -> Value {
    Value::Array(
        candidates
            .iter()
            .zip(origins)
            .map(|(c, origin)| {
                let mut m = Map::new();
                m.insert("sessionId".into(), c.session_id.clone().into());
                m.insert("label".into(), c.label.clone().into());
                if let Some(cwd) = &c.cwd {
                    m.insert("cwd".into(), cwd.clone().into());
                }
                m.insert("createdAt".into(), c.created_at.into());
                m.insert(
                    "mention".into(),
                    format_mention(&c.session_id, Some(&mention_label(&c.label, redact))).into(),
                );
                m.insert("origin".into(), origin.as_str().into());
                Value::Object(m)
            })
            .collect(),
    )
}

/// One block per candidate: label (with the origin badge of a foreign session; secrets
/// redacted when `redact`), then id · cwd · created, then the mention to paste.
fn human_rows(candidates: &[Candidate], origins: &[Origin], redact: bool) -> String {
    if candidates.is_empty() {
        return "no matching sessions\n".to_owned();
    }
    let mut out = String::new();
    for (c, origin) in candidates.iter().zip(origins) {
        let cwd = c.cwd.as_deref().unwrap_or("(no cwd)");
        let badge = origin
            .badge()
            .map_or_else(String::new, |b| format!(" [{b}]"));
        let _ = write!(
            out,
            "Session{badge} · {}\n  {} · {} · {}\n  {}\n",
            visible_controls_line(&display_title(&c.label, redact)),
            visible_controls_line(&c.session_id),
            visible_controls_line(cwd),
            local_time(c.created_at),
            visible_controls_line(&format_mention(
                &c.session_id,
                Some(&mention_label(&c.label, redact))
            )),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(id: &str, label: &str, cwd: Option<&str>) -> Candidate {
        Candidate {
            session_id: id.into(),
            label: label.into(),
            cwd: cwd.map(str::to_owned),
            created_at: 5,
        }
    }

    #[test]
    fn json_omits_absent_cwd_and_carries_the_mention() {
        let rows = json_rows(
            &[cand("a", "A]", Some("/w")), cand("codex:b", "b", None)],
            &[Origin::Dsh, Origin::Codex],
            true,
        );
        assert_eq!(
            serde_json::to_string(&rows).unwrap(),
            r#"[{"sessionId":"a","label":"A]","cwd":"/w","createdAt":5,"mention":"@[A\\]](dsh-session:ImEi)","origin":"dsh"},{"sessionId":"codex:b","label":"b","createdAt":5,"mention":"@[b](dsh-session:ImNvZGV4OmIi)","origin":"codex"}]"#
        );
    }

    /// Issue 25 item 3: the mention's label travels in the user's own message, so a key in
    /// a title is redacted there (the `label` field keeps the title as listed).
    #[test]
    fn a_secret_in_a_title_is_redacted_in_the_mention_unless_turned_off() {
        let key = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD";
        let rows = [cand("s", &format!("use {key} here"), None)];
        let mention = |redact: bool| {
            json_rows(&rows, &[Origin::Dsh], redact)[0]["mention"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        assert!(!mention(true).contains(key), "{}", mention(true));
        assert!(mention(true).contains("[redacted"), "{}", mention(true));
        assert!(mention(false).contains(key));
        assert!(!human_rows(&rows, &[Origin::Dsh], true).contains(&format!("@[use {key}")));
    }

    #[test]
    fn human_output_shows_controls_visibly() {
        let text = human_rows(
            &[cand("x\u{1b}[2J", "evil\u{7}\nlabel", None)],
            &[Origin::Dsh],
            true,
        );
        assert!(!text.contains('\u{1b}') && !text.contains('\u{7}'));
        assert!(text.contains("evil\\x07\\x0Alabel"));
        assert!(text.contains("(no cwd)"));
        assert!(text.starts_with("Session · "));
        assert_eq!(human_rows(&[], &[], true), "no matching sessions\n");
        let foreign = human_rows(
            &[cand("claude-code:u", "Fix", None)],
            &[Origin::ClaudeCode],
            true,
        );
        assert!(foreign.starts_with("Session [claude] · Fix"), "{foreign}");
    }
}
