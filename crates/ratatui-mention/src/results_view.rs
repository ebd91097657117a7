//! Drawing a [`ResultsList`] of [`MentionItem`]s, for the `@` popup and [`crate::Picker`]
//! alike: the bordered frame with the position on its bottom border, section titles, rows
//! (a label line with what matched highlighted, and a detail or snippet line when the row
//! has one), the empty states, and the preview of the selected row beside or below.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Widget};
use unicode_width::UnicodeWidthStr;

use crate::config::{MentionStyles, PopupLabels};
use crate::fuzzy::Fuzzy;
use crate::item::{ItemPreview, Keep, MentionItem};
use crate::preview::{self, Placement, PreviewPane};
use crate::results::{Listing, ResultRow, ResultsList, WaitMark};
use crate::sections::{Placed, RowRef, SectionKind};
use crate::snippet::snippet_line;
use term_text::visible_controls_line;
use term_text::{truncate_middle_to_width, truncate_start_to_width, truncate_to_width};

/// Rows a framed list needs: its border and one row; lower, it is drawn on one line.
pub(crate) const FRAMED_MIN_HEIGHT: u16 = 3;

/// How results are drawn this frame.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Look<'a> {
    pub(crate) styles: &'a MentionStyles,
    pub(crate) labels: &'a PopupLabels,
}

/// The frame of a results list in `area`: a bordered block titled `title` with the position
/// (`3/106`) on its bottom border, and the selected row's preview where `placement` puts it
/// (only while a row is selected). Returns the list's area (border included) and its
/// inside.
pub(crate) fn render_frame(
    list: &ResultsList<MentionItem>,
    title: &str,
    placement: Placement,
    preview: Option<&ItemPreview>,
    area: Rect,
    buf: &mut Buffer,
    look: Look<'_>,
) -> (Rect, Rect) {
    let styles = look.styles;
    let placement = if list.selected().is_some() {
        placement
    } else {
        Placement::Hidden
    };
    let (list_area, preview_area) = preview::split(area, placement);
    let mut block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(styles.popup_border)
        .title(Span::styled(
            visible_controls_line(title).into_owned(),
            styles.popup_title,
        ));
    if let Some(position) = position(list, look.labels) {
        block = block.title_bottom(
            Line::styled(format!(" {position} "), styles.popup_border).right_aligned(),
        );
    }
    let inner = block.inner(list_area);
    Clear.render(list_area, buf);
    block.render(list_area, buf);
    if let (Some(preview_area), Some(row)) = (preview_area, list.selected()) {
        render_preview(row, preview, preview_area, buf, look);
    }
    (list_area, inner)
}

/// The list squeezed into one line, for an area too low for its frame: the selected row
/// (or the line saying why there is none) and the position, e.g. `› Fix the build  1/12`.
/// Returns where the selected row was drawn.
pub(crate) fn render_compact(
    list: &ResultsList<MentionItem>,
    area: Rect,
    buf: &mut Buffer,
    look: Look<'_>,
) -> Vec<(Rect, RowRef)> {
    Clear.render(area, buf);
    if area.width == 0 || area.height == 0 {
        return Vec::new();
    }
    let line = Rect {
        y: area.bottom() - 1,
        height: 1,
        ..area
    };
    let position = position(list, look.labels).map(|p| format!(" {p} "));
    let position_width = position.as_deref().map_or(0, UnicodeWidthStr::width);
    let room = line
        .width
        .saturating_sub(u16::try_from(position_width).unwrap_or(u16::MAX));
    let mut drawn = Vec::new();
    if let (Some(row), Some(at)) = (list.selected(), list.sectioned().selected()) {
        let label = label_line(row, &[], true, room, look.styles);
        buf.set_line(line.x, line.y, &label, room);
        drawn.push((
            Rect {
                width: room,
                ..line
            },
            at,
        ));
    } else {
        let (message, failed) = empty_message(list, look.labels)
            .unwrap_or_else(|| (look.labels.no_exact_match.clone(), false));
        let style = if failed {
            look.styles.failed
        } else {
            look.styles.message
        };
        let text = format!("  {}", visible_controls_line(&message));
        buf.set_line(line.x, line.y, &Line::styled(text, style), room);
    }
    if let Some(position) = position {
        buf.set_line(
            line.x + room,
            line.y,
            &Line::styled(position, look.styles.popup_border),
            line.width - room,
        );
    }
    drawn
}

/// The rows of `list` (or the line saying why there are none) in `area`; returns where
/// each row was drawn.
pub(crate) fn render_rows(
    list: &ResultsList<MentionItem>,
    area: Rect,
    buf: &mut Buffer,
    look: Look<'_>,
) -> Vec<(Rect, RowRef)> {
    let mut drawn = Vec::new();
    if area.width == 0 || area.height == 0 {
        return drawn;
    }
    let styles = look.styles;
    if let Some((message, failed)) = empty_message(list, look.labels) {
        let style = if failed {
            styles.failed
        } else {
            styles.message
        };
        let line = Line::styled(format!("  {}", visible_controls_line(&message)), style);
        buf.set_line(area.x, area.y, &line, area.width);
        // Titles of sections with no rows yet (e.g. "index building") follow.
        let titles = list.sections().iter().filter_map(|s| s.title.as_deref());
        for (y, title) in (1..area.height).zip(titles) {
            let line = Line::styled(
                format!("  {}", visible_controls_line(title)),
                styles.section_title,
            );
            buf.set_line(area.x, area.y + y, &line, area.width);
        }
        return drawn;
    }
    let mut matcher = Fuzzy::new();
    let query = list.query();
    for placed in list.sectioned().layout(area.height) {
        match placed {
            Placed::Title { section, y } => {
                let title = list
                    .sections()
                    .get(section)
                    .and_then(|s| s.title.as_deref())
                    .unwrap_or_default();
                let line = Line::styled(
                    format!("  {}", visible_controls_line(title)),
                    styles.section_title,
                );
                buf.set_line(area.x, area.y + y, &line, area.width);
            }
            Placed::Row { at, y, selected } => {
                let Some(section) = list.sections().get(at.section) else {
                    continue;
                };
                let Some(row) = section.rows.get(at.row) else {
                    continue;
                };
                let lines = row.lines().max(1);
                let rect = Rect {
                    y: area.y + y,
                    height: lines.min(area.height - y),
                    ..area
                };
                drawn.push((rect, at));
                let hits = label_hits(row, query, section.kind, &mut matcher);
                let label = label_line(row, &hits, selected, area.width, styles);
                buf.set_line(area.x, area.y + y, &label, area.width);
                if y + 1 >= area.height {
                    continue;
                }
                let second = match row.snippet() {
                    Some(snippet) => Some(snippet_line(
                        snippet,
                        area.width,
                        styles.detail,
                        styles.detail.patch(styles.matched),
                    )),
                    None if !row.detail().is_empty() => {
                        Some(detail_line(row, area.width, styles.detail))
                    }
                    None => None,
                };
                if let Some(second) = second {
                    buf.set_line(area.x, area.y + y + 1, &second, area.width);
                }
            }
        }
    }
    drawn
}

/// The line shown instead of rows, if there are none to show, and whether it reports a
/// failure.
pub(crate) fn empty_message(
    list: &ResultsList<MentionItem>,
    labels: &PopupLabels,
) -> Option<(String, bool)> {
    if !list.is_empty() {
        return None;
    }
    if let Some(wait) = list.wait_mark() {
        return Some((wait_label(wait, labels), false));
    }
    let message = match (list.listing(), list.in_flight()) {
        (Listing::Waiting, true) if list.query().is_empty() => labels.type_to_filter.clone(),
        (_, true) => labels.searching.clone(),
        (Listing::Failed(message), false) => {
            return Some((
                format!("{}: {}", labels.failed, visible_controls_line(message)),
                true,
            ));
        }
        (Listing::Answered | Listing::Waiting, false) if list.query().is_empty() => {
            labels.nothing_yet.clone()
        }
        (Listing::Answered | Listing::Waiting, false) => labels.no_match.clone(),
    };
    Some((message, false))
}

/// Lines the body of `list` wants: at most `max_rows` rows and the section titles (at most
/// one title line beyond `max_rows` rows), or one message and the titles after it.
pub(crate) fn body_height(list: &ResultsList<MentionItem>, max_rows: usize) -> usize {
    let sectioned = list.sectioned();
    if sectioned.is_empty() {
        return 1 + sectioned.height();
    }
    let rows: Vec<usize> = list
        .sections()
        .iter()
        .flat_map(|s| s.rows.iter().map(|r| usize::from(r.lines())))
        .collect();
    let shown = rows.len().min(max_rows);
    let per_row = rows.iter().copied().max().unwrap_or(1);
    let lines: usize = rows.iter().take(shown).sum();
    let titles = sectioned.height() - rows.iter().sum::<usize>();
    (lines + titles).min(lines + (max_rows - shown) * per_row + 1)
}

/// The bottom-border text: `3/106` on a match, `2/20 <title>` on an offered row, `no exact
/// match` when only offered rows are on show, what a waiting Enter is doing.
pub(crate) fn position(list: &ResultsList<MentionItem>, labels: &PopupLabels) -> Option<String> {
    if let Some(wait) = list.wait_mark().filter(|_| !list.is_empty()) {
        return Some(wait_label(wait, labels));
    }
    let sectioned = list.sectioned();
    let total = list.total();
    match sectioned.selected() {
        Some(sel) => {
            let section = list.sections().get(sel.section)?;
            Some(match &section.title {
                Some(title) if sel.section > 0 => format!(
                    "{}/{} {}",
                    sel.row + 1,
                    section.total,
                    visible_controls_line(title)
                ),
                _ => format!("{}/{}", sel.row + 1, section.total),
            })
        }
        None if total == 0 && !list.is_empty() => Some(labels.no_exact_match.clone()),
        None if total > 0 => Some(format!("–/{total}")),
        None => None,
    }
}

/// What the list says while an Enter/Tab waits, or once the wait ran out.
fn wait_label(wait: WaitMark, labels: &PopupLabels) -> String {
    match wait {
        WaitMark::Waiting => labels.searching.clone(),
        WaitMark::GaveUp => labels.still_searching.clone(),
    }
}

/// The preview of `row`: its label and detail line, then the host's `preview` of it (or
/// that it is pending).
fn render_preview(
    row: &MentionItem,
    preview: Option<&ItemPreview>,
    area: Rect,
    buf: &mut Buffer,
    look: Look<'_>,
) {
    let styles = look.styles;
    let mut lines = vec![Line::styled(
        visible_controls_line(row.label()).into_owned(),
        styles.popup_title,
    )];
    if !row.detail().is_empty() {
        lines.push(detail_line(
            row,
            area.width.saturating_sub(2),
            styles.detail,
        ));
    }
    let mut body = Vec::new();
    match preview.filter(|p| p.key == row.key()) {
        Some(preview) => {
            lines.extend(preview.lines.iter().cloned());
            body.clone_from(&preview.body);
        }
        None => lines.push(Line::styled(
            look.labels.preview_pending.clone(),
            styles.message,
        )),
    }
    PreviewPane {
        title: &look.labels.preview_title,
        header: lines,
        body,
        border: styles.popup_border,
        title_style: styles.popup_title,
    }
    .render(area, buf);
}

/// Char indices of `row`'s label to highlight: what the source said it matched, else the
/// widget's own fuzzy match of `query` (each word on its own for offered rows, which need
/// not hold the query as typed).
fn label_hits(
    row: &MentionItem,
    query: &str,
    kind: SectionKind,
    matcher: &mut Fuzzy,
) -> Vec<usize> {
    let label = visible_controls_line(row.label());
    if let Some(ranges) = row.match_ranges() {
        // Byte ranges of the raw label, as char indices of the label on screen (a control
        // shows as several chars; its escape is highlighted whole).
        let mut hits = Vec::new();
        let mut shown = 0;
        for (at, c) in row.label().char_indices() {
            let width = if term_text::needs_escape(c) || c == '\n' {
                visible_controls_line(c.encode_utf8(&mut [0; 4]))
                    .chars()
                    .count()
            } else {
                1
            };
            if ranges.iter().any(|r| r.start <= at && at < r.end) {
                hits.extend(shown..shown + width);
            }
            shown += width;
        }
        return hits;
    }
    let mut hits: Vec<usize> = if query.is_empty() {
        Vec::new()
    } else if kind == SectionKind::Exact {
        matcher.indices(&label, query).unwrap_or_default()
    } else {
        query
            .split(|c: char| c.is_whitespace() || matches!(c, '-' | '_' | '/' | '.'))
            .filter(|w| !w.is_empty())
            .filter_map(|w| matcher.indices(&label, w))
            .flatten()
            .collect()
    };
    hits.sort_unstable();
    hits.dedup();
    hits
}

/// `› <kind> <label> ✓ <note> · <why it cannot be picked>` with the chars at `hits`
/// highlighted.
fn label_line(
    row: &MentionItem,
    hits: &[usize],
    selected: bool,
    width: u16,
    styles: &MentionStyles,
) -> Line<'static> {
    let label = visible_controls_line(row.label()).into_owned();
    let base = if selected {
        styles.label.patch(styles.selected)
    } else {
        styles.label
    };
    let hit = base.patch(styles.matched);
    let marker = if selected {
        Span::styled(MARKER, styles.marker)
    } else {
        Span::raw(" ".repeat(MARKER.width()))
    };
    let mut spans = vec![marker];
    let mut prefix_width = MARKER.width();
    if !row.kind().is_empty() {
        let kind = format!("{} ", visible_controls_line(row.kind()));
        prefix_width += kind.width();
        spans.push(Span::styled(kind, base.patch(styles.kind)));
    }
    let mut suffix = String::new();
    if row.is_marked() {
        suffix.push_str(MARK);
    }
    if !row.note().is_empty() {
        suffix.push(' ');
        suffix.push_str(&visible_controls_line(row.note()));
    }
    if let Some(reason) = row.blocked() {
        suffix.push_str(" · ");
        suffix.push_str(&visible_controls_line(reason));
    }
    // When both do not fit, the label keeps at least half the line: a long note or reason
    // is cut first.
    let available = usize::from(width).saturating_sub(prefix_width);
    let keep = (available / 2).max(available.saturating_sub(label.width()));
    if suffix.width() > keep {
        suffix = truncate_to_width(&suffix, keep);
    }
    let room = usize::from(width).saturating_sub(prefix_width + suffix.width());
    let label = truncate_to_width(&label, room);
    let mut run = String::new();
    let mut run_hit = false;
    for (index, c) in label.chars().enumerate() {
        let is_hit = hits.binary_search(&index).is_ok() && c != '…';
        if is_hit != run_hit && !run.is_empty() {
            spans.push(Span::styled(
                std::mem::take(&mut run),
                if run_hit { hit } else { base },
            ));
        }
        run_hit = is_hit;
        run.push(c);
    }
    if !run.is_empty() {
        spans.push(Span::styled(run, if run_hit { hit } else { base }));
    }
    if !suffix.is_empty() {
        spans.push(Span::styled(suffix, styles.detail));
    }
    Line::from(spans)
}

/// Shown after the label of an item the host marked (e.g. already mentioned).
const MARK: &str = " ✓";

/// The dim detail line, parts joined with ` · `; when too wide, the parts that may be cut
/// share the room left by the whole ones, each cut from the side its [`Keep`] gives up.
pub(crate) fn detail_line(row: &MentionItem, width: u16, style: Style) -> Line<'static> {
    let parts: Vec<(String, Keep)> = row
        .detail()
        .iter()
        .map(|p| (visible_controls_line(&p.text).into_owned(), p.keep))
        .collect();
    let room = usize::from(width).saturating_sub(DETAIL_INDENT.len());
    let fixed: usize = parts
        .iter()
        .filter(|(_, keep)| *keep == Keep::Whole)
        .map(|(text, _)| text.width())
        .sum::<usize>()
        + parts.len().saturating_sub(1) * SEPARATOR.width();
    let rest = room.saturating_sub(fixed);
    let flexible: Vec<usize> = parts
        .iter()
        .filter(|(_, keep)| *keep != Keep::Whole)
        .map(|(text, _)| text.width())
        .collect();
    let mut shares = share(rest, &flexible).into_iter();
    let mut text = String::from(DETAIL_INDENT);
    for (i, (part, keep)) in parts.iter().enumerate() {
        if i > 0 {
            text.push_str(SEPARATOR);
        }
        match keep {
            Keep::Whole => text.push_str(part),
            Keep::Start => {
                let cells = shares.next().unwrap_or(0).max(MIN_PART_CELLS);
                text.push_str(&truncate_to_width(part, cells));
            }
            Keep::End => {
                let cells = shares.next().unwrap_or(0).max(MIN_PART_CELLS);
                text.push_str(&truncate_start_to_width(part, cells));
            }
            Keep::Middle => {
                let cells = shares.next().unwrap_or(0).max(MIN_PART_CELLS);
                text.push_str(&truncate_middle_to_width(part, cells));
            }
        }
    }
    Line::styled(text, style)
}

/// The selected row's marker (an unselected row has as many spaces).
const MARKER: &str = "› ";
const DETAIL_INDENT: &str = "    ";
const SEPARATOR: &str = " · ";
/// Fewest cells a cut detail part is cut down to.
const MIN_PART_CELLS: usize = 8;

/// Splits `room` cells between parts that want `wants` cells: the narrowest parts that fit
/// in an equal share keep their width, the others split what is left equally (the later
/// ones get the odd cells).
fn share(room: usize, wants: &[usize]) -> Vec<usize> {
    let mut out = vec![0; wants.len()];
    let mut order: Vec<usize> = (0..wants.len()).collect();
    order.sort_by_key(|&i| wants[i]);
    let mut left = room;
    for (k, &i) in order.iter().enumerate() {
        let fair = left / (wants.len() - k);
        if wants[i] <= fair {
            out[i] = wants[i];
            left -= wants[i];
            continue;
        }
        let mut rest: Vec<usize> = order[k..].to_vec();
        rest.sort_unstable();
        let (each, odd) = (left / rest.len(), left % rest.len());
        for (j, &index) in rest.iter().enumerate() {
            out[index] = each + usize::from(j >= rest.len() - odd);
        }
        break;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::item::DetailPart;
    use crate::mention::Mention;
    use pretty_assertions::assert_eq;

    #[test]
    fn truncation_table() {
        let cases = [
            ("short", 10, "short", "short"),
            ("exactly10!", 10, "exactly10!", "exactly10!"),
            ("/home/ana/src/billing", 10, "/home/ana…", "…c/billing"),
            ("会话记录整理", 7, "会话记…", "…录整理"),
            ("abc", 0, "", ""),
        ];
        // Ids of sessions with the same title differ at their end (issue 27, minor 14).
        let middle = [
            ("s-20261127-202319-ab12", 30, "s-20261127-202319-ab12"),
            ("s-20261127-202319-ab12", 12, "s-202…9-ab12"),
            ("s-20261127-202319-ab12", 8, "s-2…ab12"),
            ("会话记录整理", 7, "会…整理"),
            ("abc", 1, "…"),
            ("abc", 0, ""),
        ];
        for (text, cells, want) in middle {
            let got = truncate_middle_to_width(text, cells);
            assert_eq!(got, want, "middle {text:?} {cells}");
            assert!(got.width() <= cells);
        }
        for (text, cells, end, start) in cases {
            assert_eq!(truncate_to_width(text, cells), end, "end {text:?} {cells}");
            assert_eq!(
                truncate_start_to_width(text, cells),
                start,
                "start {text:?} {cells}"
            );
            assert!(truncate_to_width(text, cells).width() <= cells);
            assert!(truncate_start_to_width(text, cells).width() <= cells);
        }
    }

    #[test]
    fn room_is_shared_between_parts() {
        let cases: &[(usize, &[usize], &[usize])] = &[
            (40, &[10, 10], &[10, 10]),
            (40, &[5, 50], &[5, 35]),
            (40, &[50, 5], &[35, 5]),
            (40, &[30, 30], &[20, 20]),
            (41, &[30, 30], &[20, 21]),
            (40, &[15, 30], &[15, 25]),
            (40, &[25, 10], &[25, 10]),
            (0, &[3, 3], &[0, 0]),
            (30, &[4, 40, 40], &[4, 13, 13]),
            (31, &[40, 4, 40], &[13, 4, 14]),
            (10, &[], &[]),
            (10, &[30], &[10]),
        ];
        for (room, wants, want) in cases {
            assert_eq!(share(*room, wants), *want, "{room} {wants:?}");
        }
    }

    fn item(label: &str) -> MentionItem {
        MentionItem::new(label, label, &Mention::new(label, "u:1"))
    }

    #[test]
    fn detail_parts_keep_their_ends() {
        let row = item("x").with_detail(vec![
            DetailPart::new("2026-11-20T09-30-00-very-long-id", Keep::Start),
            DetailPart::new("/home/ana/src/billing-service", Keep::End),
            DetailPart::new("2026-11-20 09:30", Keep::Whole),
        ]);
        let line = detail_line(&row, 60, Style::new()).to_string();
        assert_eq!(
            line,
            "    2026-11-20T09-30… · …/billing-service · 2026-11-20 09:30"
        );
        assert_eq!(line.width(), 60);
    }

    #[test]
    fn a_long_reason_is_cut_before_the_label_loses_half_the_line() {
        let styles = MentionStyles::default();
        let row = item("Release notes of the atlas project")
            .with_blocked("limit: 3 sessions per message");
        let line = label_line(&row, &[], true, 40, &styles).to_string();
        assert_eq!(line.width(), 40, "{line}");
        assert!(line.starts_with("› Release notes of"), "{line}");
        assert!(line.contains(" · limit"), "{line}");
        let short = item("Alpha").with_blocked("limit: 3 sessions per message");
        let line = label_line(&short, &[], true, 40, &styles).to_string();
        assert_eq!(
            line, "› Alpha · limit: 3 sessions per message",
            "room for both"
        );
    }

    #[test]
    fn highlights_come_from_the_source_when_it_says() {
        let mut matcher = Fuzzy::new();
        let fix = item("Fix overflow");
        // The widget's own guess for `fo`: the F of Fix and the o of overflow.
        assert_eq!(
            label_hits(&fix, "fo", SectionKind::Exact, &mut matcher),
            [0, 4]
        );
        // The source matched the substring `fo` nowhere in the label: nothing is marked.
        let said = fix.clone().with_match_ranges(Vec::new());
        assert_eq!(
            label_hits(&said, "fo", SectionKind::Exact, &mut matcher),
            Vec::<usize>::new()
        );
        // Byte ranges, also after a control shown as `\x07` and in CJK.
        let bell = item("a\u{7}bc").with_match_ranges(vec![1..2, 3..4]);
        assert_eq!(
            label_hits(&bell, "", SectionKind::Exact, &mut matcher),
            [1, 2, 3, 4, 6]
        );
        let cjk = item("会话记录").with_match_ranges(vec![3..9, 100..200]);
        assert_eq!(
            label_hits(&cjk, "x", SectionKind::Exact, &mut matcher),
            [1, 2]
        );
    }
}
