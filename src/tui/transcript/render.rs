//! Rendering transcript cells to wrapped, styled lines: one function per cell kind, all
//! untrusted text made visible first ([`text_lines`]), long bodies collapsed with a
//! `… +N lines` marker until the expand key is pressed.

use std::fmt::Write as _;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::markdown::render_markdown_hanging;
use super::tabs::visible_expanding_tabs;
use super::{HelpSection, HistoryCell, NoticeKind, RenderOptions, SnapshotView};
use crate::tui::text_width::display_width;
use dsh_foreign::Origin;
use dsh_reference::file_context::FileEntry;
use dsh_reference::{ReferenceEntry, SnapshotSource};
use term_text::{visible_controls, visible_controls_line};
use term_text::{wrap_line_hanging, wrap_lines};

/// Lines of a tool result shown before it collapses.
pub const TOOL_LINES: usize = 3;
/// Lines of a typed or plugin message shown before it collapses.
pub const MESSAGE_LINES: usize = 12;
/// The key that expands collapsed cells, as the marker names it.
pub const EXPAND_KEY: &str = "Ctrl+G";
/// The key that mentions a card's session again (fresh content), as a stale card names it.
pub const REINSERT_KEY: &str = "Ctrl+R";

fn dim() -> Style {
    Style::new().add_modifier(Modifier::DIM)
}

/// Render one cell as wrapped lines for `width` columns.
pub fn render_cell(cell: &HistoryCell, width: u16, options: RenderOptions) -> Vec<Line<'static>> {
    let body_width = width.saturating_sub(2).max(1);
    match cell {
        HistoryCell::User { text, steering } => user_lines(text, *steering, body_width, options),
        HistoryCell::ReferenceCard {
            references,
            origins,
            sources,
            snapshot,
            newer,
        } => card_lines(
            (references, origins, newer),
            sources,
            snapshot,
            body_width,
            options,
        ),
        HistoryCell::FileCard { files, text } => file_card_lines(files, text, body_width, options),
        HistoryCell::Assistant {
            text,
            reasoning,
            streaming,
        } => assistant_lines(text, reasoning, *streaming, body_width, options),
        HistoryCell::Checkpoint { summary } => {
            let mut lines = vec![Line::styled("— conversation compacted —", dim())];
            lines.extend(prefixed(
                "  ",
                dim(),
                wrap_lines(&text_lines(summary, dim()), body_width),
            ));
            lines
        }
        HistoryCell::Tool { text } => {
            let body = collapse(text_lines(text, dim()), TOOL_LINES, options.expand_long);
            prefixed("⚙ ", dim(), wrap_lines(&body, body_width))
        }
        HistoryCell::Recall(row) => super::recall_row::lines(row, width, options),
        HistoryCell::Plugin { plugin, text } => {
            let mut body = vec![Line::styled(
                format!("[{}]", visible_controls_line(plugin)),
                dim(),
            )];
            body.extend(collapse(
                text_lines(text, dim()),
                MESSAGE_LINES,
                options.expand_long,
            ));
            prefixed("  ", dim(), wrap_lines(&body, body_width))
        }
        HistoryCell::Notice { kind, text } => {
            let (marker, style) = match kind {
                NoticeKind::Info => ("ℹ ", Style::new().fg(Color::Yellow)),
                NoticeKind::Error => ("✗ ", Style::new().fg(Color::Red)),
            };
            prefixed(
                marker,
                style,
                wrap_lines(&text_lines(text, style), body_width),
            )
        }
        HistoryCell::Help { sections } => help_lines(sections, body_width),
        HistoryCell::Error { code, message } => {
            let red = Style::new().fg(Color::Red);
            let mut lines = vec![Line::from(vec![
                Span::styled("✗ ", red.add_modifier(Modifier::BOLD)),
                Span::styled(visible_controls_line(code).into_owned(), red),
            ])];
            // One line: newlines and tabs become spaces, other controls stay visible.
            let flat: String = message
                .chars()
                .map(|c| {
                    if c == '\n' || c == '\t' || c == '\r' {
                        ' '
                    } else {
                        c
                    }
                })
                .collect();
            let detail = Line::styled(visible_controls_line(&flat).into_owned(), dim());
            lines.extend(gutter("  ", dim(), wrap_lines(&[detail], body_width)));
            lines
        }
    }
}

/// Indent of a help row under its section title.
const HELP_INDENT: usize = 2;
/// Columns between the keys and the help.
const HELP_GAP: usize = 2;
/// Fewest columns the help column keeps; narrower, each help goes under its keys.
const HELP_MIN_WIDTH: usize = 20;

/// A help table: `ℹ` and each section's title, then its rows with the help column aligned
/// for the whole table and wrapped under itself. Keys wider than two fifths of the width
/// take a line of their own, the help following at the column.
fn help_lines(sections: &[HelpSection], body_width: u16) -> Vec<Line<'static>> {
    let width = usize::from(body_width);
    let title_style = Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD);
    let key_style = Style::new().fg(Color::Cyan);
    let widest = sections
        .iter()
        .flat_map(|s| {
            s.rows
                .iter()
                .map(|(keys, _)| display_width(&visible_controls_line(keys)))
        })
        .max()
        .unwrap_or(0);
    let keys_width = widest.min(width * 2 / 5);
    let mut column = HELP_INDENT + keys_width + HELP_GAP;
    if width.saturating_sub(column) < HELP_MIN_WIDTH {
        // Too narrow for two columns: the help under its keys, indented once more.
        column = HELP_INDENT * 2;
    }
    let help_width = u16::try_from(width.saturating_sub(column).max(1)).unwrap_or(u16::MAX);
    let mut body = Vec::new();
    for section in sections {
        body.push(Line::styled(
            visible_controls_line(&section.title).into_owned(),
            title_style,
        ));
        for (keys, help) in &section.rows {
            let keys = visible_controls_line(keys).into_owned();
            let keys_shown = display_width(&keys);
            let wrapped = wrap_lines(
                &[Line::raw(visible_controls_line(help).into_owned())],
                help_width,
            );
            let own_line = HELP_INDENT + keys_shown + 1 > column;
            if own_line {
                body.extend(wrap_lines(
                    &[Line::from(vec![
                        Span::raw(" ".repeat(HELP_INDENT)),
                        Span::styled(keys.clone(), key_style),
                    ])],
                    body_width,
                ));
            }
            for (i, mut line) in wrapped.into_iter().enumerate() {
                let lead = if i == 0 && !own_line {
                    vec![
                        Span::raw(" ".repeat(HELP_INDENT)),
                        Span::styled(keys.clone(), key_style),
                        Span::raw(" ".repeat(column - HELP_INDENT - keys_shown)),
                    ]
                } else {
                    vec![Span::raw(" ".repeat(column))]
                };
                line.spans.splice(0..0, lead);
                body.push(line);
            }
        }
    }
    prefixed("ℹ ", Style::new().fg(Color::Yellow), body)
}

/// Whether `cell` has lines hidden when collapsed.
pub fn is_collapsible(cell: &HistoryCell) -> bool {
    let over = |text: &str, keep: usize| text.split('\n').count() > keep;
    match cell {
        HistoryCell::Tool { text } => over(text, TOOL_LINES),
        HistoryCell::Recall(_) => true,
        HistoryCell::User { text, .. } | HistoryCell::Plugin { text, .. } => {
            over(text, MESSAGE_LINES)
        }
        HistoryCell::ReferenceCard { .. }
        | HistoryCell::FileCard { .. }
        | HistoryCell::Assistant { .. }
        | HistoryCell::Checkpoint { .. }
        | HistoryCell::Notice { .. }
        | HistoryCell::Help { .. }
        | HistoryCell::Error { .. } => false,
    }
}

/// Untrusted `text` as one styled line per text line, controls made visible.
fn text_lines(text: &str, style: Style) -> Vec<Line<'static>> {
    visible_controls(text)
        .split('\n')
        .map(|l| Line::styled(l.to_owned(), style))
        .collect()
}

/// The user's own message or the model's reply as one styled line per text line: controls
/// made visible, tabs expanded unless `options` keep them visible (see [`super::tabs`]).
fn own_text_lines(text: &str, style: Style, options: RenderOptions) -> Vec<Line<'static>> {
    if options.tabs_visible {
        return text_lines(text, style);
    }
    visible_expanding_tabs(text)
        .split('\n')
        .map(|l| Line::styled(l.to_owned(), style))
        .collect()
}

/// The first `keep` lines and a `… +N lines` marker, unless `expanded` or short enough.
fn collapse(mut lines: Vec<Line<'static>>, keep: usize, expanded: bool) -> Vec<Line<'static>> {
    if expanded || lines.len() <= keep {
        return lines;
    }
    let hidden = lines.len() - keep;
    lines.truncate(keep);
    let s = if hidden == 1 { "" } else { "s" };
    lines.push(Line::styled(
        format!("… +{hidden} line{s} ({EXPAND_KEY} to expand)"),
        dim(),
    ));
    lines
}

fn user_lines(
    text: &str,
    steering: bool,
    body_width: u16,
    options: RenderOptions,
) -> Vec<Line<'static>> {
    let marker = if steering { "» " } else { "› " };
    let style = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
    let body = collapse(
        own_text_lines(text, Style::new(), options),
        MESSAGE_LINES,
        options.expand_long,
    );
    let mut lines = prefixed(marker, style, wrap_lines(&body, body_width));
    if steering {
        lines.push(Line::styled("  (steered into the running turn)", dim()));
    }
    lines
}

/// `188 of 400 messages`, or `1 message` when nothing was left out.
fn message_counts(entry: &ReferenceEntry) -> String {
    let noun = |n: u64| if n == 1 { "message" } else { "messages" };
    if entry.retained_messages == entry.original_messages {
        format!(
            "{} {}",
            entry.original_messages,
            noun(entry.original_messages)
        )
    } else {
        format!(
            "{} of {} {}",
            entry.retained_messages,
            entry.original_messages,
            noun(entry.original_messages)
        )
    }
}

/// `512 B`, `63.9 KiB`, `1.2 MiB` (one decimal, rounded to nearest).
pub fn format_bytes(bytes: usize) -> String {
    const KIB: usize = 1024;
    let (unit, name) = match bytes {
        0..KIB => return format!("{bytes} B"),
        KIB..0x10_0000 => (KIB, "KiB"),
        _ => (KIB * KIB, "MiB"),
    };
    let tenths = (bytes.saturating_mul(10) + unit / 2) / unit;
    format!("{}.{} {name}", tenths / 10, tenths % 10)
}

/// One card row: `Label (id) · 188 of 400 messages · 63.9 KiB · truncated`.
/// One reference's row: label, id, what it holds (`3 of 12 messages`, or for an excerpt
/// `excerpt, messages 4–8 of 12`), size, cut, origin, secrets redacted, and how many
/// messages its source has gained since (`newer`).
fn card_row(
    entry: &ReferenceEntry,
    origin: &Origin,
    source: Option<&SnapshotSource>,
    newer: Option<usize>,
) -> String {
    let held = match entry.excerpt() {
        Some(span) => format!(
            "excerpt, messages {}–{} of {}",
            span.first, span.last, span.of
        ),
        None => message_counts(entry),
    };
    let mut row = format!(
        "{} ({}) · {held}",
        visible_controls_line(&entry.label),
        visible_controls_line(&entry.session_id),
    );
    if let Some(source) = source.filter(|s| s.serialized_bytes > 0) {
        let _ = write!(row, " · {}", format_bytes(source.serialized_bytes));
    }
    if entry.truncated {
        row.push_str(" · truncated");
    }
    row.push_str(&super::plan_note::plan_note(entry, source));
    if origin.is_foreign() {
        let _ = write!(row, " · from {}", visible_controls_line(origin.tool_name()));
    }
    push_redacted(&mut row, entry.redacted_secrets());
    match newer {
        Some(1) => row.push_str(" · source has 1 newer message"),
        Some(n) if n > 1 => {
            let _ = write!(row, " · source has {n} newer messages");
        }
        _ => {}
    }
    row
}

fn card_lines(
    (references, origins, newer): (&[ReferenceEntry], &[Origin], &[Option<usize>]),
    sources: &[SnapshotSource],
    snapshot: &str,
    body_width: u16,
    options: RenderOptions,
) -> Vec<Line<'static>> {
    let card_style = dim().fg(Color::Magenta);
    let mut lines = vec![Line::styled("Referenced sessions", card_style)];
    for (i, entry) in references.iter().enumerate() {
        let source = sources.get(i).filter(|s| s.session_id == entry.session_id);
        let origin = origins.get(i).unwrap_or(&Origin::Dsh);
        let newer = newer.get(i).copied().flatten();
        lines.push(Line::styled(
            card_row(entry, origin, source, newer),
            card_style,
        ));
    }
    let mut lines = prefixed("⧉ ", card_style, wrap_lines(&lines, body_width));
    if newer.iter().any(|n| n.is_some_and(|n| n > 0)) {
        lines.push(Line::styled(
            format!("  {REINSERT_KEY} mentions it again with its newer messages"),
            dim(),
        ));
    }
    match options.snapshots {
        SnapshotView::Hidden => lines.push(Line::styled(
            "  Ctrl+O shows the referenced conversations",
            dim(),
        )),
        SnapshotView::Readable => {
            lines.extend(gutter(
                "│ ",
                dim(),
                readable_sources(sources, body_width, options.expand_long),
            ));
            lines.push(Line::styled(
                "  Ctrl+O again shows the exact bytes the model received",
                dim(),
            ));
        }
        SnapshotView::Exact => {
            lines.extend(gutter(
                "│ ",
                dim(),
                wrap_lines(&text_lines(snapshot, dim()), body_width),
            ));
            lines.push(Line::styled("  Ctrl+O hides the snapshot", dim()));
        }
    }
    lines
}

/// ` · N secrets redacted` on a card row, when any were.
fn push_redacted(row: &mut String, n: u64) {
    match n {
        0 => {}
        1 => row.push_str(" · 1 secret redacted"),
        n => {
            let _ = write!(row, " · {n} secrets redacted");
        }
    }
}

/// One attached file's row: `src/main.rs · 11.6 KiB`, or for a file cut to its budget
/// `big.log · 32.0 KiB of 2.1 MiB sent (head and tail)`, and the secrets redacted.
fn file_row(file: &FileEntry) -> String {
    let size = |bytes: u64| format_bytes(usize::try_from(bytes).unwrap_or(usize::MAX));
    let mut row = visible_controls_line(&file.path).into_owned();
    if file.omitted_bytes > 0 {
        let _ = write!(
            row,
            " · {} of {} sent (head and tail)",
            size(file.sent_bytes),
            size(file.bytes)
        );
    } else {
        let _ = write!(row, " · {}", size(file.bytes));
    }
    push_redacted(&mut row, file.redacted_secrets);
    row
}

/// The card of a file-reference context: a row per file; Ctrl+O shows the exact text the
/// model received (the same in the readable and the exact view: it is the files' text).
fn file_card_lines(
    files: &[FileEntry],
    text: &str,
    body_width: u16,
    options: RenderOptions,
) -> Vec<Line<'static>> {
    let card_style = dim().fg(Color::Magenta);
    let mut lines = vec![Line::styled("Referenced files", card_style)];
    lines.extend(files.iter().map(|f| Line::styled(file_row(f), card_style)));
    let mut lines = prefixed("⧉ ", card_style, wrap_lines(&lines, body_width));
    match options.snapshots {
        SnapshotView::Hidden => lines.push(Line::styled(
            "  Ctrl+O shows the text the model received",
            dim(),
        )),
        SnapshotView::Readable | SnapshotView::Exact => {
            lines.extend(gutter(
                "│ ",
                dim(),
                wrap_lines(&text_lines(text, dim()), body_width),
            ));
            lines.push(Line::styled("  Ctrl+O again goes on / hides it", dim()));
        }
    }
    lines
}

/// Each source as a heading and its role-labelled messages, wrapped to `width`.
fn readable_sources(
    sources: &[SnapshotSource],
    width: u16,
    expand_long: bool,
) -> Vec<Line<'static>> {
    let width = width.saturating_sub(2).max(1);
    if sources.is_empty() {
        return vec![Line::styled(
            "(the snapshot holds no readable sources)",
            dim(),
        )];
    }
    let mut lines = Vec::new();
    for source in sources {
        let mut heading = format!(
            "── {} ({})",
            visible_controls_line(&source.label),
            visible_controls_line(&source.session_id)
        );
        if let Some(cwd) = &source.cwd {
            let _ = write!(heading, " · {}", visible_controls_line(cwd));
        }
        lines.extend(wrap_lines(
            &[Line::styled(
                heading,
                Style::new().add_modifier(Modifier::BOLD),
            )],
            width,
        ));
        if source.conversation.is_empty() {
            lines.push(Line::styled("(no messages)", dim()));
        }
        for turn in &source.conversation {
            let role = visible_controls_line(&turn.role).into_owned();
            let mut body = collapse(
                text_lines(&turn.text, Style::new()),
                MESSAGE_LINES,
                expand_long,
            );
            if let Some(first) = body.first_mut() {
                first.spans.insert(
                    0,
                    Span::styled(format!("{role}: "), Style::new().fg(Color::Cyan)),
                );
            }
            lines.extend(wrap_lines(&body, width));
        }
    }
    lines
}

fn assistant_lines(
    text: &str,
    reasoning: &str,
    streaming: bool,
    body_width: u16,
    options: RenderOptions,
) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    if !reasoning.is_empty() {
        let italic = dim().add_modifier(Modifier::ITALIC);
        if options.expand_reasoning {
            lines.extend(prefixed(
                "✻ ",
                italic,
                wrap_lines(&own_text_lines(reasoning, italic, options), body_width),
            ));
        } else {
            let count = reasoning.lines().count().max(1);
            let s = if count == 1 { "" } else { "s" };
            lines.push(Line::styled(
                format!("✻ thought for {count} line{s} (Ctrl+T to show)"),
                italic,
            ));
        }
    }
    let shown = if options.tabs_visible {
        visible_controls(text)
    } else {
        visible_expanding_tabs(text)
    };
    // Citations are styled before wrapping, so a link cut across two rows stays one.
    let mut body: Vec<Line<'static>> = render_markdown_hanging(&shown, Style::new())
        .into_iter()
        .map(|(line, hang)| (super::recall_row::style_citation_line(line), hang))
        .flat_map(|(line, hang)| wrap_line_hanging(&line, body_width, hang))
        .collect();
    if streaming && !text.is_empty() {
        match body.last_mut() {
            Some(last) => last.push_span(Span::styled("▌", dim())),
            None => body.push(Line::styled("▌", dim())),
        }
    }
    lines.extend(prefixed("• ", Style::new(), body));
    lines
}

/// Put `marker` (two cells wide) before every line.
fn gutter(marker: &str, style: Style, lines: Vec<Line<'static>>) -> Vec<Line<'static>> {
    lines
        .into_iter()
        .map(|mut line| {
            line.spans.insert(0, Span::styled(marker.to_owned(), style));
            line
        })
        .collect()
}

/// Put `marker` (two cells wide) before the first line and two spaces before the others.
fn prefixed(marker: &str, style: Style, lines: Vec<Line<'static>>) -> Vec<Line<'static>> {
    lines
        .into_iter()
        .enumerate()
        .map(|(i, mut line)| {
            let lead = if i == 0 {
                marker.to_owned()
            } else {
                "  ".to_owned()
            };
            line.spans.insert(0, Span::styled(lead, style));
            line
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// Issue 25 items 2–4 (card part): an excerpt's row says which messages it holds, a
    /// row says how many secrets were redacted and how many messages its source gained.
    #[test]
    fn card_rows_name_excerpts_redactions_and_staleness() {
        let entry = |extra: serde_json::Value| -> ReferenceEntry {
            let mut value = serde_json::json!({
                "sessionId": "s-1", "label": "Kafka", "capturedThroughSeq": 40,
                "compacted": false, "originalMessages": 12, "retainedMessages": 12,
                "omittedMessages": 0, "omittedBytes": 0, "truncated": false, "inputIndex": 0
            });
            if let (Some(v), Some(extra)) = (value.as_object_mut(), extra.as_object()) {
                v.extend(extra.clone());
            }
            serde_json::from_value(value).unwrap()
        };
        let cases = [
            (
                entry(serde_json::json!({})),
                None,
                "Kafka (s-1) · 12 messages",
            ),
            (
                entry(
                    serde_json::json!({"excerpt": {"seq": 9, "before": 2, "after": 2,
                    "matchSeq": 9, "firstSeq": 5, "lastSeq": 13, "first": 4, "last": 8, "of": 12},
                    "redactedSecrets": 2}),
                ),
                Some(3),
                "Kafka (s-1) · excerpt, messages 4–8 of 12 · 2 secrets redacted · source has 3 newer messages",
            ),
            (
                entry(serde_json::json!({"redactedSecrets": 1})),
                Some(0),
                "Kafka (s-1) · 12 messages · 1 secret redacted",
            ),
            (
                entry(serde_json::json!({})),
                Some(1),
                "Kafka (s-1) · 12 messages · source has 1 newer message",
            ),
        ];
        for (entry, newer, want) in cases {
            assert_eq!(card_row(&entry, &Origin::Dsh, None, newer), want);
        }
    }

    fn rows(cell: &HistoryCell, options: RenderOptions) -> Vec<String> {
        render_cell(cell, 40, options)
            .iter()
            .map(|l| l.to_string().trim_end().to_owned())
            .collect()
    }

    /// Issue 27 minor 4: tabs in the user's own text and the model's replies are expanded to
    /// the next multiple of 4 columns; other sessions' text keeps them visible as `\x09`.
    #[test]
    fn own_messages_and_replies_expand_tabs_other_text_shows_them() {
        let own = RenderOptions::default();
        let user = HistoryCell::User {
            text: "a\tb\n\tc".into(),
            steering: false,
        };
        assert_eq!(rows(&user, own), ["› a   b", "      c"]);
        let steering = HistoryCell::User {
            text: "ab\tc".into(),
            steering: true,
        };
        assert_eq!(rows(&steering, own)[0], "» ab  c");
        let reply = HistoryCell::Assistant {
            text: "name\tsize\n```\nfn f() {\n\treturn;\n}\n```".into(),
            reasoning: "why\tnot".into(),
            streaming: false,
        };
        let expanded = RenderOptions {
            expand_reasoning: true,
            ..own
        };
        assert_eq!(
            rows(&reply, expanded),
            [
                "✻ why not",
                "• name    size",
                "    fn f() {",
                "        return;",
                "    }"
            ]
        );
        // A foreign log shown read-only: tabs stay visible in its messages too.
        let foreign = RenderOptions {
            tabs_visible: true,
            ..own
        };
        assert_eq!(rows(&user, foreign), ["› a\\x09b", "  \\x09c"]);
        assert_eq!(rows(&reply, foreign)[1], "• name\\x09size");
        // Tool output and the conversations of referenced sessions keep them visible.
        let tool = HistoryCell::Tool {
            text: "tool result: a\tb".into(),
        };
        assert_eq!(rows(&tool, own), ["⚙ tool result: a\\x09b"]);
        let card = HistoryCell::ReferenceCard {
            references: Vec::new(),
            origins: Vec::new(),
            sources: vec![SnapshotSource {
                session_id: "s-1".into(),
                label: "L".into(),
                cwd: None,
                conversation: vec![dsh_reference::SnapshotTurn {
                    role: "user".into(),
                    text: "x\ty".into(),
                }],
                serialized_bytes: 0,
            }],
            snapshot: "exact\tbytes".into(),
            newer: Vec::new(),
        };
        let readable = RenderOptions {
            snapshots: SnapshotView::Readable,
            ..own
        };
        assert!(
            rows(&card, readable)
                .iter()
                .any(|r| r.ends_with("user: x\\x09y")),
            "{:?}",
            rows(&card, readable)
        );
        let exact = RenderOptions {
            snapshots: SnapshotView::Exact,
            ..own
        };
        assert!(
            rows(&card, exact)
                .iter()
                .any(|r| r.ends_with("exact\\x09bytes")),
            "{:?}",
            rows(&card, exact)
        );
    }

    #[test]
    fn sizes_read_like_the_prepare_output() {
        let cases = [
            (0, "0 B"),
            (1023, "1023 B"),
            (1024, "1.0 KiB"),
            (65_434, "63.9 KiB"),
            (1_258_291, "1.2 MiB"),
        ];
        for (bytes, want) in cases {
            assert_eq!(format_bytes(bytes), want);
        }
    }
}
