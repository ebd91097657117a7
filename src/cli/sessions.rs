//! `dsh-refs sessions [--json]` (docs/cli.md): every session, newest first, with its title.
//!
//! Human output is a table whose every field goes through `visible_controls_line`, so no
//! session text can move the cursor or restyle the terminal. The default store missing lists
//! nothing ("no sessions yet"); an explicitly named one missing is an error.

use std::fmt::Write as _;

use serde_json::{Value, json};
use unicode_width::UnicodeWidthStr;

use crate::cli::json_escape::escape_json_controls;
use dsh_foreign::{ForeignSource, Origin};
use dsh_reference::{ReferenceConfig, display_title};
use dsh_store::{QueryError, SessionHeader, SessionQuery, SessionStore};
use term_text::truncate_to_width;
use term_text::visible_controls_line;

use super::foreign_sources::open_sources;
use super::output::{local_time, write_stdout};
use super::{CliError, Context, SessionsArgs};

/// Widest title column in the human table (display cells).
const MAX_TITLE_CELLS: usize = 48;

/// One listed session.
struct Row {
    header: SessionHeader,
    title: Option<String>,
    origin: Origin,
}

/// Run the subcommand.
pub fn run(ctx: &Context, args: &SessionsArgs) -> Result<(), CliError> {
    ctx.require_store()?;
    let store =
        SessionStore::with_persisted_index(&ctx.store_root).with_limits(ctx.config.store.limits());
    let sources = open_sources(ctx, &store);
    let headers = sources.list_sessions().map_err(CliError::List)?;
    // Everything the listing left out, the same way a corrupt session is reported.
    let foreign = sources
        .foreign()
        .iter()
        .flat_map(ForeignSource::listing_warnings);
    for warning in store.listing_warnings().into_iter().chain(foreign) {
        eprintln!("dsh-refs: warning: {}", visible_controls_line(&warning));
    }
    let mut rows = Vec::with_capacity(headers.len());
    for header in headers.iter() {
        // A damaged log is listed with the title it had before the damage, and the damage
        // is reported.
        let title = match sources.read_summary(&header.id) {
            Ok(summary) => {
                if let Some(damage) = &summary.damage {
                    eprintln!("dsh-refs: warning: {}", visible_controls_line(damage));
                }
                summary.title.as_deref().map(str::to_owned)
            }
            // Already reported by the listing's warnings.
            Err(QueryError::Duplicate { .. }) => None,
            Err(e @ (QueryError::Corrupt { .. } | QueryError::Io { .. })) => {
                eprintln!(
                    "dsh-refs: warning: {}",
                    visible_controls_line(&e.to_string())
                );
                None
            }
            // Removed between listing and reading: skip it.
            Err(QueryError::NotFound { .. } | QueryError::InvalidId { .. }) => continue,
        };
        rows.push(Row {
            header: header.clone(),
            title,
            origin: sources.origin(&header.id),
        });
    }
    let out = if args.json {
        let text = serde_json::to_string_pretty(&json_rows(&rows))?;
        let mut text = escape_json_controls(&text).into_owned();
        text.push('\n');
        text
    } else {
        // A title is shown with its secrets redacted (`[references] redact_secrets`); the
        // JSON keeps the stored title.
        let redact = ctx
            .config
            .references
            .redact_secrets
            .unwrap_or(ReferenceConfig::default().redact_secrets);
        human_table(&rows, redact)
    };
    write_stdout(&out)
}

/// The docs/cli.md JSON: `[{sessionId, title, cwd, createdAt, origin, branch?}]`; `branch`
/// only when the session recorded the branch it was on (never the checkout's current one).
fn json_rows(rows: &[Row]) -> Value {
    Value::Array(
        rows.iter()
            .map(|r| {
                let mut row = json!({
                    "sessionId": r.header.id,
                    "title": r.title,
                    "cwd": r.header.cwd,
                    "createdAt": r.header.created_at,
                    "origin": r.origin.as_str(),
                });
                if let (Some(branch), Some(map)) = (&r.header.branch, row.as_object_mut()) {
                    map.insert("branch".into(), Value::String(branch.clone()));
                }
                row
            })
            .collect(),
    )
}

fn pad(text: &str, cells: usize) -> String {
    let mut out = text.to_owned();
    out.extend(std::iter::repeat_n(' ', cells.saturating_sub(text.width())));
    out
}

/// The human table: TITLE (secrets redacted when `redact`), ID, CWD, CREATED.
fn human_table(rows: &[Row], redact: bool) -> String {
    if rows.is_empty() {
        return "no sessions yet\n".to_owned();
    }
    let cells: Vec<[String; 4]> = rows
        .iter()
        .map(|r| {
            let mut title = r.title.as_deref().map_or_else(
                || "(untitled)".to_owned(),
                |t| visible_controls_line(&display_title(t, redact)).into_owned(),
            );
            if let Some(badge) = r.origin.badge() {
                title = format!("[{badge}] {title}");
            }
            [
                truncate_to_width(&title, MAX_TITLE_CELLS),
                visible_controls_line(&r.header.id).into_owned(),
                r.header.cwd.as_deref().map_or_else(
                    || "(no cwd)".to_owned(),
                    |c| visible_controls_line(c).into_owned(),
                ),
                local_time(r.header.created_at),
            ]
        })
        .collect();
    let heads = ["TITLE", "ID", "CWD", "CREATED"];
    let mut widths = heads.map(UnicodeWidthStr::width);
    for row in &cells {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.width());
        }
    }
    let mut out = String::new();
    let mut line = |fields: [&str; 4]| {
        let [a, b, c, d] = fields;
        let [wa, wb, wc, _] = widths;
        let _ = write!(out, "{}  {}  {}  {}", pad(a, wa), pad(b, wb), pad(c, wc), d);
        out.push('\n');
    };
    line(heads);
    for [a, b, c, d] in &cells {
        line([a, b, c, d]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn row(id: &str, title: Option<&str>, cwd: Option<&str>) -> Row {
        Row {
            header: SessionHeader::new(id, 0, cwd.map(str::to_owned)),
            title: title.map(str::to_owned),
            origin: Origin::Dsh,
        }
    }

    #[test]
    fn json_shape_has_nulls_for_absent_fields() {
        let rows = [row("a", Some("T"), Some("/w")), row("b", None, None)];
        assert_eq!(
            serde_json::to_string(&json_rows(&rows)).unwrap(),
            r#"[{"sessionId":"a","title":"T","cwd":"/w","createdAt":0,"origin":"dsh"},{"sessionId":"b","title":null,"cwd":null,"createdAt":0,"origin":"dsh"}]"#
        );
    }

    #[test]
    fn json_rows_carry_a_branch_only_when_one_was_recorded() {
        let mut recorded = row("a", None, Some("/w"));
        recorded.header = recorded.header.with_branch(Some("feature/x".into()));
        let rows = [recorded, row("b", None, Some("/w"))];
        let v = json_rows(&rows);
        assert_eq!(v[0]["branch"], "feature/x");
        assert_eq!(v[1].get("branch"), None);
    }

    #[test]
    fn table_shows_controls_visibly_and_aligns() {
        let rows = [
            row("s\u{1b}[2J", Some("evil\u{7}\ntitle"), Some("/tmp/\u{9b}x")),
            row("漢字", None, None),
        ];
        let table = human_table(&rows, true);
        assert!(!table.chars().any(|c| c != '\n' && c.is_control()));
        assert!(table.contains("evil\\x07\\x0Atitle"), "{table}");
        assert!(table.contains("s\\x1B[2J"));
        assert!(table.contains("/tmp/\\x9Bx"));
        assert!(table.contains("(untitled)") && table.contains("(no cwd)"));
        // The badge is the row's origin, whatever the id looks like.
        let codex = Row {
            origin: Origin::Codex,
            ..row("r1", Some("Kafka"), None)
        };
        let foreign = human_table(&[codex, row("codex:mine", Some("Mine"), None)], true);
        assert!(foreign.contains("[codex] Kafka"), "{foreign}");
        assert!(!foreign.contains("[codex] Mine"), "{foreign}");
        let widths: Vec<usize> = table
            .lines()
            .map(|l| {
                let at = l
                    .find("CREATED")
                    .or_else(|| l.find(&local_time(0)))
                    .unwrap();
                l[..at].width()
            })
            .collect();
        assert!(widths.windows(2).all(|w| w[0] == w[1]), "{table}");
    }
}
