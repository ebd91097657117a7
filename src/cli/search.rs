//! `dsh-refs search QUERY [--limit N] [--json]` (docs/search.md): sessions ranked by what was
//! said in them, from the full-text index (brought up to date first, with a progress bar on
//! a terminal and nothing on a pipe).

use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use crate::cli::json_escape::escape_json_controls;
use dsh_reference::{
    ExcerptRange, ReferenceConfig, display_title, format_excerpt_mention, format_mention,
    mention_label,
};
use dsh_search::{Cancel, IndexOptions, SearchError, SearchHit, SessionIndex, Snippet};
use serde_json::{Map, Value, json};
use term_text::visible_controls_line;

use super::error::CliError;
use super::output::{local_time, write_stdout};
use super::{Context, SearchArgs};
use crate::tui::chrome::status_line::grouped_count;

/// Least time between two redraws of the progress bar.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// Run the subcommand.
pub fn run(ctx: &Context, args: &SearchArgs) -> Result<(), CliError> {
    if !ctx.config.search.enabled {
        return Err(CliError::Usage(
            "search is disabled in the config ([search] enabled = false)".into(),
        ));
    }
    let mut analyzer = dsh_search::text_analysis::analyzer();
    match dsh_search::query_syntax::parse(&mut analyzer, &args.query) {
        Ok(q) if q.is_empty() => {
            return Err(invalid_query("nothing to search for"));
        }
        Ok(_) => {}
        Err(e) => return Err(CliError::Search(e)),
    }
    // A named store that does not exist is refused like the other read commands; the
    // default one missing (and no other tool's sessions) means nothing to find — either
    // way no index (no cache folder) is made for it.
    ctx.require_store()?;
    let foreign =
        super::foreign_sources::foreign_sources(ctx, ctx.config.store.limits().max_line_bytes);
    if !ctx.store_root.is_dir() && foreign.is_empty() {
        return write_stdout(&answer(&[], args.json, None, (0, true))?);
    }
    let options = IndexOptions {
        index_dir: ctx.config.search.index_dir.clone(),
    };
    // Hits are answered only as the store lists them (the listing `sessions` gives).
    let store = dsh_store::SessionStore::with_persisted_index(&ctx.store_root)
        .with_limits(ctx.config.store.limits());
    let index = SessionIndex::open(&ctx.store_root, &options)?
        .with_foreign_sources(foreign)
        .with_store(store);
    if let Some(notice) = index.status().notice {
        eprintln!("dsh-refs: {}", visible_controls_line(&notice));
    }
    let outcome = update(&index)?;
    // Another process is updating: what it has committed may not cover the store yet.
    let building = if outcome.busy {
        let coverage = index.coverage()?;
        if coverage.done < coverage.total {
            eprintln!(
                "dsh-refs: another process is building the search index ({} of {} sessions \
                 so far); these results may be incomplete",
                grouped_count(coverage.done),
                grouped_count(coverage.total)
            );
            Some(coverage)
        } else {
            eprintln!(
                "dsh-refs: another process is updating the search index; searching what it \
                 has so far"
            );
            None
        }
    } else {
        None
    };
    let limit = usize::try_from(args.limit).unwrap_or(usize::MAX);
    let hits = match index.search(&args.query, limit) {
        Ok(hits) => hits,
        Err(e) => return Err(CliError::Search(e)),
    };
    let side = ctx
        .config
        .references
        .excerpt_context
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(2);
    // The label a mention carries travels in the user's own message, and a shown label is
    // on screen: secrets redacted in both (the JSON `label` keeps the title).
    let redact = ctx
        .config
        .references
        .redact_secrets
        .unwrap_or(ReferenceConfig::default().redact_secrets);
    write_stdout(&answer(&hits, args.json, building, (side, redact))?)
}

/// What `search` prints: the hits as JSON (excerpt mentions of `side` messages around the
/// match) or for a person; with no hit while another process is still building the index,
/// that it is (how far it is), not "no matching sessions".
fn answer(
    hits: &[SearchHit],
    json: bool,
    building: Option<dsh_search::Progress>,
    (side, redact): (u32, bool),
) -> Result<String, CliError> {
    if json {
        let text = serde_json::to_string_pretty(&json_hits(hits, side, redact))?;
        return Ok(format!("{}\n", escape_json_controls(&text)));
    }
    Ok(match building {
        Some(p) if hits.is_empty() => format!(
            "the index is being built ({} of {} sessions)\n",
            grouped_count(p.done),
            grouped_count(p.total)
        ),
        _ => human_hits(hits, std::io::stdout().is_terminal(), redact),
    })
}

/// Bring the index up to date, drawing a progress bar on stderr when it is a terminal.
fn update(index: &SessionIndex) -> Result<dsh_search::RefreshOutcome, CliError> {
    let terminal = std::io::stderr().is_terminal();
    let mut last_draw: Option<Instant> = None;
    let mut drawn = false;
    let started = Instant::now();
    let outcome = index.refresh(&Cancel::new(), &mut |p| {
        // Only a build that takes a while is worth a bar.
        if !terminal || started.elapsed() < Duration::from_millis(200) {
            return;
        }
        if last_draw.is_some_and(|t| t.elapsed() < PROGRESS_EVERY) && p.done < p.total {
            return;
        }
        last_draw = Some(Instant::now());
        drawn = true;
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r{}", progress_bar(p.done, p.total, 30));
        let _ = err.flush();
    })?;
    if drawn {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K");
        let _ = err.flush();
    }
    Ok(outcome)
}

/// `indexing 3 400 / 10 000 sessions [#####.....]`.
pub fn progress_bar(done: usize, total: usize, width: usize) -> String {
    let filled = (done * width)
        .checked_div(total)
        .unwrap_or(width)
        .min(width);
    format!(
        "indexing {} / {} sessions [{}{}]",
        grouped_count(done),
        grouped_count(total),
        "#".repeat(filled),
        ".".repeat(width - filled)
    )
}

/// An invalid query: a usage error (exit 2) with the search layer's code.
fn invalid_query(reason: &str) -> CliError {
    CliError::Search(SearchError::InvalidQuery {
        reason: reason.to_owned(),
    })
}

/// `[{sessionId, origin, label, cwd?, createdAt, mention, score, snippets: [{role, number,
/// seq, text, excerptMention}]}]` (`role`: `user`, `assistant` or `summary`; `number`: the
/// message's place in the conversation, from 1; `seq`: its event's; `excerptMention`
/// references that exchange only: the snippet's message and `side` messages each side;
/// docs/references.md: excerpt references).
fn json_hits(hits: &[SearchHit], side: u32, redact: bool) -> Value {
    let label = |h: &SearchHit| mention_label(&h.label, redact);
    Value::Array(
        hits.iter()
            .map(|h| {
                let mut m = Map::new();
                m.insert("sessionId".into(), h.session_id.clone().into());
                m.insert("origin".into(), h.origin.as_str().into());
                m.insert("label".into(), h.label.clone().into());
                if let Some(cwd) = &h.cwd {
                    m.insert("cwd".into(), cwd.clone().into());
                }
                m.insert("createdAt".into(), h.created_at.into());
                m.insert(
                    "mention".into(),
                    format_mention(&h.session_id, Some(&label(h))).into(),
                );
                m.insert("score".into(), f64::from(h.score).into());
                let snippets = h
                    .snippets
                    .iter()
                    .map(|s| {
                        let range = ExcerptRange {
                            session_id: h.session_id.clone(),
                            seq: s.seq,
                            before: side,
                            after: side,
                        };
                        json!({"role": s.role.as_str(), "number": s.number, "seq": s.seq,
                               "text": s.text,
                               "excerptMention": format_excerpt_mention(&range, &label(h))})
                    })
                    .collect();
                m.insert("snippets".into(), Value::Array(snippets));
                Value::Object(m)
            })
            .collect(),
    )
}

/// One block per hit: label (after the origin badge of another tool's session; secrets
/// redacted when `redact`), then id · cwd · created, then the best snippet with the matches
/// in bold on a terminal.
fn human_hits(hits: &[SearchHit], colour: bool, redact: bool) -> String {
    if hits.is_empty() {
        return "no matching sessions\n".to_owned();
    }
    let mut out = String::new();
    for h in hits {
        let cwd = h.cwd.as_deref().unwrap_or("(no cwd)");
        // A badge of an origin this version does not know is another tool's text: made safe.
        let badge = h
            .origin
            .badge()
            .map(|b| format!("[{}] ", visible_line(b)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{badge}{}\n  {} · {} · {}",
            visible_line(&display_title(&h.label, redact)),
            visible_line(&h.session_id),
            visible_line(cwd),
            local_time(h.created_at),
        );
        if let Some(s) = h.snippets.first() {
            let _ = writeln!(
                out,
                "  {} #{}: {}",
                s.role.as_str(),
                s.number,
                highlighted(s, colour)
            );
        }
    }
    out
}

/// The snippet with its matches marked (bold on a terminal, plain otherwise), every piece
/// made safe to print.
fn highlighted(s: &Snippet, colour: bool) -> String {
    let mut out = String::with_capacity(s.text.len() + 16);
    let mut at = 0;
    for r in &s.highlights {
        let (Some(before), Some(hit)) = (s.text.get(at..r.start), s.text.get(r.clone())) else {
            continue;
        };
        out.push_str(&visible_line(before));
        if colour {
            out.push_str("\x1b[1;4m");
        }
        out.push_str(&visible_line(hit));
        if colour {
            out.push_str("\x1b[0m");
        }
        at = r.end;
    }
    out.push_str(&visible_line(s.text.get(at..).unwrap_or("")));
    out
}

/// One line of untrusted text for the terminal: controls as `\xNN`, bidi and other
/// invisible formatting characters as `\u{XXXX}`.
fn visible_line(text: &str) -> std::borrow::Cow<'_, str> {
    visible_controls_line(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_search::SnippetRole;

    #[test]
    fn counts_and_bar() {
        assert_eq!(
            progress_bar(3400, 10_000, 10),
            "indexing 3 400 / 10 000 sessions [###.......]"
        );
        assert_eq!(progress_bar(0, 0, 4), "indexing 0 / 0 sessions [####]");
    }

    #[test]
    fn hostile_snippets_are_shown_with_controls_visible() {
        let s = Snippet {
            role: SnippetRole::User,
            number: 2,
            seq: 3,
            time: 0,
            text: "\u{1b}[2J<b>\u{202e}evil\u{7}".into(),
            highlights: std::iter::once(10..14).collect(),
        };
        assert_eq!(highlighted(&s, false), "\\x1B[2J<b>\\u{202E}evil\\x07");
        assert_eq!(
            highlighted(&s, true),
            "\\x1B[2J<b>\\u{202E}\u{1b}[1;4mevil\u{1b}[0m\\x07"
        );
    }
}
