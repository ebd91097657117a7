//! `dsh-refs candidates --session TARGET [--query Q] [--limit N] [--json]` (docs/cli.md): the
//! sessions TARGET may reference, as the `@` popup would offer them.

use std::fmt::Write as _;
use std::process::ExitCode;

use serde_json::{Map, Value};

use crate::cli::json_escape::escape_json_controls;
use dsh_reference::{Candidate, format_mention};
use ratatui_mention::untrusted::visible_controls_line;

use super::reference_service::{
    block_on, local_time, open_service, report_error, target_agent, write_stdout,
};
use super::{CandidatesArgs, Context};

/// Run the subcommand.
pub fn run(ctx: &Context, args: &CandidatesArgs) -> Result<ExitCode, String> {
    let (store, refs) = match open_service(ctx) {
        Ok(pair) => pair,
        Err(e) => return report_error(&e, args.json),
    };
    let agent = target_agent(&store, &args.session);
    let result = block_on(|cancel| async move {
        refs.list_candidates(&agent, &args.query, args.limit, &cancel)
            .await
    })?;
    let candidates = match result {
        Ok(c) => c,
        Err(e) => return report_error(&e, args.json),
    };
    let out = if args.json {
        let text =
            serde_json::to_string_pretty(&json_rows(&candidates)).map_err(|e| e.to_string())?;
        format!("{}\n", escape_json_controls(&text))
    } else {
        human_rows(&candidates)
    };
    write_stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// `[{sessionId, label, cwd?, createdAt, mention}]`.
fn json_rows(candidates: &[Candidate]) -> Value {
    Value::Array(
        candidates
            .iter()
            .map(|c| {
                let mut m = Map::new();
                m.insert("sessionId".into(), c.session_id.clone().into());
                m.insert("label".into(), c.label.clone().into());
                if let Some(cwd) = &c.cwd {
                    m.insert("cwd".into(), cwd.clone().into());
                }
                m.insert("createdAt".into(), c.created_at.into());
                m.insert(
                    "mention".into(),
                    format_mention(&c.session_id, Some(&c.label)).into(),
                );
                Value::Object(m)
            })
            .collect(),
    )
}

/// One block per candidate: label, then id · cwd · created, then the mention to paste.
fn human_rows(candidates: &[Candidate]) -> String {
    if candidates.is_empty() {
        return "no matching sessions\n".to_owned();
    }
    let mut out = String::new();
    for c in candidates {
        let cwd = c.cwd.as_deref().unwrap_or("(no cwd)");
        let _ = write!(
            out,
            "Session · {}\n  {} · {} · {}\n  {}\n",
            visible_controls_line(&c.label),
            visible_controls_line(&c.session_id),
            visible_controls_line(cwd),
            local_time(c.created_at),
            visible_controls_line(&format_mention(&c.session_id, Some(&c.label))),
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
        let rows = json_rows(&[cand("a", "A]", Some("/w")), cand("b", "b", None)]);
        assert_eq!(
            serde_json::to_string(&rows).unwrap(),
            r#"[{"sessionId":"a","label":"A]","cwd":"/w","createdAt":5,"mention":"@[A\\]](dsh-session:ImEi)"},{"sessionId":"b","label":"b","createdAt":5,"mention":"@[b](dsh-session:ImIi)"}]"#
        );
    }

    #[test]
    fn human_output_shows_controls_visibly() {
        let text = human_rows(&[cand("x\u{1b}[2J", "evil\u{7}\nlabel", None)]);
        assert!(!text.contains('\u{1b}') && !text.contains('\u{7}'));
        assert!(text.contains("evil\\x07\\x0Alabel"));
        assert!(text.contains("(no cwd)"));
        assert_eq!(human_rows(&[]), "no matching sessions\n");
    }
}
