//! `dsh-refs check [--session ID] [--json]` (docs/cli.md): read every session log of the
//! store (or one) against dsh's rules, both the followed commit's and the newest
//! release's, and report per session every rule a version would refuse it for. Read-only:
//! nothing is written, nothing is repaired.
//!
//! Exit status: 0 every log follows every rule, 1 a log breaks one (or cannot be read), 2
//! usage, 3 the store (or the named session) cannot be read.

use std::fmt::Write as _;
use std::io::IsTerminal;

use serde_json::{Value, json};

use crate::cli::json_escape::escape_json_controls;
use dsh_store::log_check::{LogReport, NotLoadedLines};
use dsh_store::not_loaded;
use dsh_store::{DshVersion, QueryError, SessionQuery, SessionStore};
use term_text::visible_controls_line;

use super::output::write_stdout;
use super::{CheckArgs, CliError, Context};

/// What one session's check gave.
enum Outcome {
    Checked(Box<LogReport>),
    /// The log could not be read at all (corrupt, unreadable).
    Unreadable(QueryError),
}

struct Row {
    id: String,
    path: Option<String>,
    outcome: Outcome,
}

impl Row {
    fn has_problems(&self) -> bool {
        match &self.outcome {
            Outcome::Checked(r) => !r.findings.is_empty(),
            Outcome::Unreadable(_) => true,
        }
    }

    /// Lines too long to load: reported, not a problem (dsh reads them; this project
    /// shows placeholders).
    fn not_loaded(&self) -> Option<&NotLoadedLines> {
        match &self.outcome {
            Outcome::Checked(r) if r.not_loaded.lines > 0 => Some(&r.not_loaded),
            _ => None,
        }
    }

    fn reported(&self) -> bool {
        self.has_problems() || self.not_loaded().is_some()
    }
}

/// Run the subcommand.
pub fn run(ctx: &Context, args: &CheckArgs) -> Result<(), CliError> {
    if ctx.store_explicit && !ctx.store_root.is_dir() {
        return Err(CliError::StoreUnreadable(format!(
            "no store at {}",
            ctx.store_root.display()
        )));
    }
    let store = SessionStore::new(&ctx.store_root).with_limits(ctx.config.store.limits());
    let ids: Vec<String> = if let Some(id) = &args.session {
        match store.locate(id) {
            Ok(Some(_)) => vec![id.clone()],
            // Claude Code and Codex sessions are not dsh logs (a dsh session of that name
            // is checked above).
            Ok(None) if dsh_foreign::Origin::split_id(id).is_some() => {
                return Err(CliError::Usage(format!(
                    "{id:?} is another tool's session, not a dsh log: there is nothing to check"
                )));
            }
            Ok(None) => {
                return Err(CliError::StoreUnreadable(format!(
                    "no session {id:?} in the store"
                )));
            }
            Err(e) => return Err(CliError::StoreUnreadable(e.to_string())),
        }
    } else {
        let headers = store
            .list_sessions()
            .map_err(|e| CliError::StoreUnreadable(e.to_string()))?;
        for warning in store.listing_warnings() {
            eprintln!("dsh-refs: warning: {}", visible_controls_line(&warning));
        }
        headers.iter().map(|h| h.id.clone()).collect()
    };
    let progress = ids.len() >= PROGRESS_FROM && std::io::stderr().is_terminal();
    let mut rows = Vec::with_capacity(ids.len());
    for (n, id) in ids.iter().enumerate() {
        if progress && n % PROGRESS_EVERY == 0 {
            eprint!("\rchecking {n} of {} sessions…", ids.len());
        }
        let path = store
            .locate(id)
            .ok()
            .flatten()
            .map(|l| l.path.display().to_string());
        let outcome = match store.check_session(id) {
            Ok(report) => Outcome::Checked(Box::new(report)),
            // Removed between listing and checking.
            Err(QueryError::NotFound { .. }) if args.session.is_none() => continue,
            Err(e) => Outcome::Unreadable(e),
        };
        rows.push(Row {
            id: id.clone(),
            path,
            outcome,
        });
    }
    if progress {
        eprint!("\r\x1b[2K");
    }
    let bad = rows.iter().filter(|r| r.has_problems()).count();
    let out = if args.json {
        let text = serde_json::to_string_pretty(&json_report(&rows))?;
        let mut text = escape_json_controls(&text).into_owned();
        text.push('\n');
        text
    } else {
        human_report(&rows)
    };
    write_stdout(&out)?;
    if bad > 0 {
        return Err(CliError::Quiet { status: 1 });
    }
    Ok(())
}

/// Sessions from which progress is shown on a terminal, and how often.
const PROGRESS_FROM: usize = 500;
const PROGRESS_EVERY: usize = 100;

/// What breaking `rule` costs in each of `versions`, e.g. "dsh 6816e8a3d5 and 0.1.0-rc.8
/// refuse to read the log".
fn consequence(rule: dsh_store::Rule, versions: dsh_store::Versions) -> String {
    let mut parts: Vec<(String, &str)> = Vec::new();
    for v in versions.iter() {
        let effect = rule.effect(v).describe();
        match parts.iter_mut().find(|(_, e)| *e == effect) {
            Some((names, _)) => {
                names.push_str(" and ");
                names.push_str(v.name());
            }
            None => parts.push((v.name().to_owned(), effect)),
        }
    }
    parts
        .iter()
        .map(|(names, effect)| format!("dsh {names}: {effect}"))
        .collect::<Vec<_>>()
        .join("; ")
}

fn human_report(rows: &[Row]) -> String {
    let mut out = String::new();
    let mut with_problems = 0;
    let mut with_long_lines = 0;
    for row in rows.iter().filter(|r| r.reported()) {
        with_problems += usize::from(row.has_problems());
        let _ = writeln!(
            out,
            "{}  {}",
            visible_controls_line(&row.id),
            visible_controls_line(row.path.as_deref().unwrap_or("(no log)"))
        );
        match &row.outcome {
            Outcome::Unreadable(e) => {
                let _ = writeln!(
                    out,
                    "  unreadable: {}",
                    visible_controls_line(&e.to_string())
                );
            }
            Outcome::Checked(report) => {
                if let Some(note) = report.written_by.explanation() {
                    let _ = writeln!(out, "  {note}");
                }
                if let Some(lines) = row.not_loaded() {
                    with_long_lines += 1;
                    let first = |dense: bool| {
                        lines
                            .first
                            .iter()
                            .find(|l| l.dense == dense)
                            .map_or(String::new(), |l| {
                                format!(
                                    "; first: line {}, seq {}, {} of {}",
                                    l.line,
                                    l.seq,
                                    visible_controls_line(&l.kind),
                                    not_loaded::size(l.bytes)
                                )
                            })
                    };
                    let plural = |n: u64| if n == 1 { "" } else { "s" };
                    let long = lines.lines - lines.dense;
                    if long > 0 {
                        let _ = writeln!(
                            out,
                            "  {long} line{} longer than store.max_line_bytes, read as \
                             placeholders (dsh reads them; a larger [store] max_line_bytes loads \
                             them){}",
                            plural(long),
                            first(false),
                        );
                    }
                    if lines.dense > 0 {
                        let _ = writeln!(
                            out,
                            "  {} line{} of so many small values that decoding them would cost \
                             more than {}× their bytes, read as placeholders (dsh reads them){}",
                            lines.dense,
                            plural(lines.dense),
                            dsh_store::line_cost::DECODE_FACTOR,
                            first(true),
                        );
                    }
                }
                for (rule, count) in report.findings.rules() {
                    let first = count.first.first();
                    let _ = writeln!(
                        out,
                        "  {} ({}) — {}: {} event{}, first at seq {}: {}",
                        rule.code(),
                        rule.summary(),
                        consequence(rule, count.versions),
                        count.events,
                        if count.events == 1 { "" } else { "s" },
                        first.map_or(0, |v| v.seq),
                        visible_controls_line(first.map_or("", |v| v.detail.as_str())),
                    );
                }
            }
        }
    }
    let _ = writeln!(
        out,
        "checked {} session{}: {}",
        rows.len(),
        if rows.len() == 1 { "" } else { "s" },
        match with_problems {
            0 => "every log follows dsh's rules (6816e8a3d5 and 0.1.0-rc.8)".to_owned(),
            n => format!("{n} break dsh's rules"),
        }
    );
    if with_long_lines > 0 {
        let _ = writeln!(
            out,
            "{with_long_lines} {} lines too long or too dense to load (shown as placeholders)",
            if with_long_lines == 1 {
                "session holds"
            } else {
                "sessions hold"
            }
        );
    }
    out
}

fn json_report(rows: &[Row]) -> Value {
    let sessions: Vec<Value> = rows
        .iter()
        .filter(|r| r.reported())
        .map(|row| {
            let mut entry = json!({"sessionId": row.id, "path": row.path});
            if let Some(lines) = row.not_loaded() {
                entry["notLoaded"] = json!({
                    "lines": lines.lines,
                    "dense": lines.dense,
                    "first": lines.first.iter().map(|l| json!({"line": l.line, "seq": l.seq, "type": l.kind, "bytes": l.bytes, "dense": l.dense})).collect::<Vec<_>>(),
                });
            }
            match &row.outcome {
                Outcome::Unreadable(e) => {
                    entry["error"] = json!({"code": "SESSION_LOG_UNREADABLE", "message": e.to_string()});
                }
                Outcome::Checked(report) => {
                    entry["writtenBy"] = json!(report.written_by.code());
                    entry["note"] = json!(report.written_by.explanation());
                    entry["events"] = json!(report.events);
                    let problems: Vec<Value> = report
                        .findings
                        .rules()
                        .map(|(rule, count)| {
                            let effects: serde_json::Map<String, Value> = count
                                .versions
                                .iter()
                                .map(|v: DshVersion| {
                                    (v.name().to_owned(), json!(rule.effect(v).describe()))
                                })
                                .collect();
                            json!({
                                "rule": rule.code(),
                                "summary": rule.summary(),
                                "versions": count.versions.iter().map(DshVersion::name).collect::<Vec<_>>(),
                                "effects": effects,
                                "events": count.events,
                                "first": count.first.iter().map(|v| json!({"seq": v.seq, "detail": v.detail})).collect::<Vec<_>>(),
                            })
                        })
                        .collect();
                    entry["problems"] = json!(problems);
                }
            }
            entry
        })
        .collect();
    json!({
        "checked": rows.len(),
        "withProblems": rows.iter().filter(|r| r.has_problems()).count(),
        "sessions": sessions,
    })
}
