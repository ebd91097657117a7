//! `dsh-refs sources [--json]` (docs/cli.md, docs/foreign-sources.md): every source of other
//! agents' sessions this build reads, with its `[sources]` setting, the directory read,
//! whether it was found, how many sessions it lists and the last error — so a wrong path is
//! seen rather than silently listing nothing.

use std::fmt::Write as _;

use serde_json::{Value, json};

use dsh_foreign::ForeignSource;
use dsh_store::SessionQuery;
use term_text::visible_controls_line;

use super::config::SourceSetting;
use super::foreign_sources::{configured_path_problem, foreign_sources, logs_dir, settings};
use super::output::write_stdout;
use super::{CliError, Context, SourcesArgs};

/// One source as reported.
struct Report {
    origin: String,
    tool: String,
    key: &'static str,
    setting: &'static str,
    path: Option<String>,
    found: bool,
    sessions: Option<usize>,
    error: Option<String>,
}

/// Run the subcommand.
pub fn run(ctx: &Context, args: &SourcesArgs) -> Result<(), CliError> {
    let limit = ctx.config.store.limits().max_line_bytes;
    let opened = foreign_sources(ctx, limit);
    let mut reports = Vec::new();
    for (origin, key, setting) in settings(ctx) {
        let setting_name = match setting {
            SourceSetting::Off => "off",
            SourceSetting::Default => "default",
            SourceSetting::Path(_) => "path",
        };
        let source = opened.iter().find(|s| *s.origin() == origin);
        let path = logs_dir(&origin, setting).map(|p| p.display().to_string());
        let (found, sessions, error) = match (ctx.foreign_sources, source) {
            (false, _) => (
                false,
                None,
                Some("off for this run (--no-foreign-sources)".into()),
            ),
            (true, None) => (false, None, None),
            (true, Some(source)) => listed(source, configured_path_problem(key, setting)),
        };
        reports.push(Report {
            origin: origin.as_str().to_owned(),
            tool: origin.tool_name().to_owned(),
            key,
            setting: setting_name,
            path,
            found,
            sessions,
            error,
        });
    }
    let out = if args.json {
        let rows: Vec<Value> = reports
            .iter()
            .map(|r| {
                json!({"origin": r.origin, "tool": r.tool, "key": r.key, "setting": r.setting,
                       "path": r.path, "found": r.found, "sessions": r.sessions,
                       "error": r.error})
            })
            .collect();
        format!("{}\n", Value::Array(rows))
    } else {
        human(&reports)
    };
    write_stdout(&out)
}

/// What listing `source` gives: whether its directory was found, its session count, and its
/// last error (the configured path's problem first).
fn listed(
    source: &ForeignSource,
    problem: Option<String>,
) -> (bool, Option<usize>, Option<String>) {
    let found = std::fs::metadata(source.root()).is_ok_and(|m| m.is_dir());
    let (sessions, listing_error) = match source.list_sessions() {
        Ok(list) => (Some(list.len()), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let warnings = source.listing_warnings();
    let error = problem
        .or(listing_error)
        .or_else(|| warnings.last().cloned());
    (found, sessions, error)
}

/// One line per source: tool, state, sessions, path; the error indented under it.
fn human(reports: &[Report]) -> String {
    let mut out = String::new();
    for r in reports {
        let state = match (r.setting, r.found) {
            ("off", _) => "off".to_owned(),
            (_, true) => match r.sessions {
                Some(1) => "1 session".to_owned(),
                Some(n) => format!("{n} sessions"),
                None => "not listed".to_owned(),
            },
            ("default", false) if r.path.is_none() => "not installed".to_owned(),
            (_, false) => "not found".to_owned(),
        };
        let path = r.path.as_deref().unwrap_or("-");
        let _ = writeln!(
            out,
            "{:<20} {:<16} {}  ([sources] {} = {})",
            r.tool,
            state,
            visible_controls_line(path),
            r.key,
            r.setting
        );
        if let Some(error) = &r.error {
            let _ = writeln!(out, "    {}", visible_controls_line(error));
        }
    }
    out
}
