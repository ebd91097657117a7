//! A popup list in sections (e.g. files, exact matches, closest matches, hits elsewhere)
//! with counts, paging and the shared selection rule: while any row is on show one is
//! selected — the first row of the first section that has one, until the user moves — so
//! what Enter takes is always the highlighted row. The matches (the one [`SectionKind::Exact`]
//! section) may hold fewer rows than they count: moving near their end asks the host for
//! more ([`Fetch`]). Rows are host data; the host draws them from the [`Placed`] layout.

use std::cell::Cell;

/// What a section holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SectionKind {
    /// Matches of the query, counted and paged (one such section per list).
    Exact,
    /// Rows offered besides them (files, closest matches, hits elsewhere): complete.
    Offered,
}

/// One section: a title line (none for the first, unlabelled section), rows and how many
/// rows exist in all (`total >= rows.len()`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section<T> {
    pub kind: SectionKind,
    pub title: Option<String>,
    pub rows: Vec<T>,
    pub total: usize,
}

impl<T> Section<T> {
    /// A section whose rows are all there is.
    pub fn complete(kind: SectionKind, title: Option<String>, rows: Vec<T>) -> Self {
        let total = rows.len();
        Section {
            kind,
            title,
            rows,
            total,
        }
    }
}

/// The selected row: section index and row index inside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowRef {
    pub section: usize,
    pub row: usize,
}

/// How many rows of the first section the host should fetch now, if more are wanted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fetch {
    /// Nothing to fetch.
    None,
    /// Fetch this many rows (a bigger limit for the same query).
    Rows(usize),
}

/// Something drawn at a line of the list's area.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placed {
    /// A section's title line.
    Title { section: usize, y: u16 },
    /// A row taking its lines from `y` (the last may be cut by the area).
    Row { at: RowRef, y: u16, selected: bool },
}

/// The list's state. Paging uses the page size of the last layout.
#[derive(Debug, Clone)]
pub struct SectionedList<T> {
    sections: Vec<Section<T>>,
    selected: Option<RowRef>,
    /// The user moved the selection (a key, the wheel, a click) since the rows arrived:
    /// it is theirs, not the default first row.
    chosen: bool,
    /// First visible line of the flat layout.
    top: usize,
    /// Lines a row takes (one for a label alone, two with a detail line).
    lines_of: fn(&T) -> usize,
    /// Rows of the first section asked for and not yet delivered.
    requested: usize,
    /// End was pressed while the first section was incomplete: select its last row once
    /// the rows arrive.
    pending_end: bool,
    page_rows: Cell<usize>,
    /// Lines the last layout had (scrolling keeps the selection inside them).
    view_lines: Cell<usize>,
}

/// Page size before anything was drawn, in rows and in lines.
const DEFAULT_PAGE_ROWS: usize = 8;
const DEFAULT_VIEW_LINES: usize = 16;

/// The section of `offered` rows (titled `title`, untitled when it is empty) without the rows
/// whose `key` the `listed` rows hold; `None` when every offered row is listed already.
pub fn offered_section<T: Clone>(
    title: &str,
    offered: &[T],
    listed: &[T],
    key: impl Fn(&T) -> &str,
) -> Option<Section<T>> {
    let listed: std::collections::HashSet<&str> = listed.iter().map(&key).collect();
    let rows: Vec<T> = offered
        .iter()
        .filter(|r| !listed.contains(key(r)))
        .cloned()
        .collect();
    if rows.is_empty() && !offered.is_empty() {
        // Every offered row is listed already: nothing to add.
        return None;
    }
    let title = (!title.is_empty()).then(|| title.to_owned());
    Some(Section::complete(SectionKind::Offered, title, rows))
}

impl<T: Clone> SectionedList<T> {
    /// Puts [`offered_section`] of `offered` (without the rows the first section lists) after
    /// the first `*page_sections` sections; with no page on show an empty first section goes
    /// in, so the matches stay first. Nothing to add leaves an empty untitled section there.
    pub fn place_offered(
        &mut self,
        page_sections: &mut usize,
        title: &str,
        offered: &[T],
        key: impl Fn(&T) -> &str,
    ) {
        if *page_sections == 0 {
            self.set_sections(vec![Section::complete(
                SectionKind::Exact,
                None,
                Vec::new(),
            )]);
            *page_sections = 1;
        }
        let listed = self.sections.first().map_or(&[][..], |s| s.rows.as_slice());
        let section = offered_section(title, offered, listed, key)
            .unwrap_or_else(|| Section::complete(SectionKind::Offered, None, Vec::new()));
        self.replace_section(*page_sections, section);
    }
}

impl<T> SectionedList<T> {
    /// An empty list whose rows take `lines_of(row)` lines (at least one).
    pub fn new(lines_of: fn(&T) -> usize) -> Self {
        SectionedList {
            sections: Vec::new(),
            selected: None,
            chosen: false,
            top: 0,
            lines_of,
            requested: 0,
            pending_end: false,
            page_rows: Cell::new(DEFAULT_PAGE_ROWS),
            view_lines: Cell::new(DEFAULT_VIEW_LINES),
        }
    }

    /// Replaces every section with the answer to a new query: the first row on show is
    /// selected and the list scrolls back to the top.
    pub fn set_sections(&mut self, sections: Vec<Section<T>>) {
        self.sections = sections;
        self.top = 0;
        self.requested = 0;
        self.pending_end = false;
        self.select_default();
    }

    /// Replaces section `index` with more rows of the same query (see [`Fetch`]); the
    /// selection stays where it was (or goes to the last row after End).
    pub fn extend_section(&mut self, index: usize, section: Section<T>) {
        let Some(slot) = self.sections.get_mut(index) else {
            return;
        };
        *slot = section;
        self.requested = 0;
        if self.pending_end {
            self.pending_end = false;
            self.selected = self.last_of(index);
        } else if self
            .selected
            .is_none_or(|sel| self.len_of(sel.section) <= sel.row)
        {
            self.select_default();
        }
        self.scroll_to_selection();
    }

    /// Replaces section `index` (e.g. conversation hits that arrive on their own), keeping
    /// the selection when it is elsewhere; with nothing selected before, the first row on
    /// show is now.
    pub fn replace_section(&mut self, index: usize, section: Section<T>) {
        if let Some(slot) = self.sections.get_mut(index) {
            *slot = section;
        } else if index == self.sections.len() {
            self.sections.push(section);
        }
        if self.selected.is_none_or(|s| s.section == index) {
            self.select_default();
        }
        self.scroll_to_selection();
    }

    /// Selects the first row `pick` accepts (scrolled into view), keeping whether the user
    /// chose the selection; false, and the selection unchanged, when none does.
    pub fn select_where(&mut self, pick: impl Fn(&T) -> bool) -> bool {
        for (section, s) in self.sections.iter().enumerate() {
            if let Some(row) = s.rows.iter().position(&pick) {
                self.selected = Some(RowRef { section, row });
                self.scroll_to_selection();
                return true;
            }
        }
        false
    }

    /// Whether the user moved the selection since the rows arrived (else it is the default
    /// first row).
    pub fn is_chosen(&self) -> bool {
        self.chosen && self.selected.is_some()
    }

    /// Index of the matches (the [`SectionKind::Exact`] section), if on show.
    pub fn exact_index(&self) -> Option<usize> {
        self.sections
            .iter()
            .position(|s| s.kind == SectionKind::Exact)
    }

    /// Changes the title of section `index` (rows and selection stay).
    pub fn set_title(&mut self, index: usize, title: Option<String>) {
        if let Some(slot) = self.sections.get_mut(index) {
            slot.title = title;
        }
    }

    /// The sections on show.
    pub fn sections(&self) -> &[Section<T>] {
        &self.sections
    }

    /// The selected row, if any.
    pub fn selected(&self) -> Option<RowRef> {
        self.selected
    }

    /// The selected row's data.
    pub fn selected_row(&self) -> Option<&T> {
        let sel = self.selected?;
        self.sections.get(sel.section)?.rows.get(sel.row)
    }

    /// Whether no section has a row.
    pub fn is_empty(&self) -> bool {
        self.sections.iter().all(|s| s.rows.is_empty())
    }

    /// Rows on show in all sections.
    pub fn row_count(&self) -> usize {
        self.sections.iter().map(|s| s.rows.len()).sum()
    }

    /// Next row, wrapping to the first; from nothing, the first row.
    pub fn move_down(&mut self) -> Fetch {
        let flat = self.flat_selected();
        let n = self.row_count();
        if n == 0 {
            return Fetch::None;
        }
        let next = match flat {
            Some(i) if i + 1 < n => i + 1,
            // The last row: wrap, unless the matches end here and have more to fetch.
            Some(i) if self.more_to_fetch() && self.is_last_fetched(i) => i,
            // Nothing selected yet, or wrapping: the first row.
            None | Some(_) => 0,
        };
        self.select_flat(next);
        self.fetch_if_near_end()
    }

    /// Previous row, wrapping to the last; from nothing, the last row.
    pub fn move_up(&mut self) -> Fetch {
        let n = self.row_count();
        if n == 0 {
            return Fetch::None;
        }
        let next = match self.flat_selected() {
            None | Some(0) => n - 1,
            Some(i) => i - 1,
        };
        self.select_flat(next);
        self.fetch_if_near_end()
    }

    /// A page down (no wrap).
    pub fn page_down(&mut self) -> Fetch {
        let n = self.row_count();
        if n == 0 {
            return Fetch::None;
        }
        let page = self.page_rows.get().max(1);
        let next = self.flat_selected().map_or(0, |i| (i + page).min(n - 1));
        self.select_flat(next);
        self.fetch_if_near_end()
    }

    /// A page up (no wrap).
    pub fn page_up(&mut self) -> Fetch {
        if self.row_count() == 0 {
            return Fetch::None;
        }
        let page = self.page_rows.get().max(1);
        let next = self.flat_selected().map_or(0, |i| i.saturating_sub(page));
        self.select_flat(next);
        Fetch::None
    }

    /// `delta` rows on (back when negative), stopping at either end (the mouse wheel):
    /// from nothing, the first row.
    pub fn step(&mut self, delta: isize) -> Fetch {
        let n = self.row_count();
        if n == 0 {
            return Fetch::None;
        }
        let next = match self.flat_selected() {
            Some(i) => i.saturating_add_signed(delta).min(n - 1),
            None => 0,
        };
        self.select_flat(next);
        self.fetch_if_near_end()
    }

    /// Selects row `at` (a click), when it exists.
    pub fn select(&mut self, at: RowRef) -> Fetch {
        if self
            .sections
            .get(at.section)
            .is_none_or(|s| s.rows.len() <= at.row)
        {
            return Fetch::None;
        }
        self.selected = Some(at);
        self.chosen = true;
        self.scroll_to_selection();
        self.fetch_if_near_end()
    }

    /// The first row.
    pub fn home(&mut self) -> Fetch {
        if self.row_count() > 0 {
            self.select_flat(0);
        }
        Fetch::None
    }

    /// The very last row: of the matches when they have more to fetch (all of them are
    /// asked for and the last selected on arrival), else of the last section.
    pub fn end(&mut self) -> Fetch {
        if self.row_count() == 0 {
            return Fetch::None;
        }
        if let Some(exact) = self.exact_index().filter(|_| self.more_to_fetch()) {
            let total = self.sections.get(exact).map_or(0, |s| s.total);
            let last_fetched = (self.offset_of(exact) + self.len_of(exact)).saturating_sub(1);
            self.select_flat(last_fetched);
            self.pending_end = true;
            if total > self.requested {
                self.requested = total;
                return Fetch::Rows(total);
            }
            return Fetch::None;
        }
        let n = self.row_count();
        self.select_flat(n - 1);
        Fetch::None
    }

    /// Lays the list out in `height` lines, scrolled so the selection is visible; also
    /// records the page size for paging keys (the rows that fit whole).
    pub fn layout(&self, height: u16) -> Vec<Placed> {
        let height = usize::from(height);
        self.view_lines.set(height.max(1));
        let lines = self.lines();
        let top = self.visible_top(&lines, height);
        let mut out = Vec::new();
        let mut y = 0;
        let mut whole_rows = 0;
        for item in lines.iter().skip(top) {
            if y >= height {
                break;
            }
            let Ok(at_y) = u16::try_from(y) else { break };
            out.push(match *item {
                Line::Title(section) => Placed::Title { section, y: at_y },
                Line::Row(at) => Placed::Row {
                    at,
                    y: at_y,
                    selected: self.selected == Some(at),
                },
            });
            y += self.line_height(item);
            if matches!(item, Line::Row(_)) && y <= height {
                whole_rows += 1;
            }
        }
        if whole_rows > 0 || height > 0 {
            self.page_rows.set(whole_rows.max(1));
        }
        out
    }

    /// Lines the whole list takes.
    pub fn height(&self) -> usize {
        self.lines().iter().map(|l| self.line_height(l)).sum()
    }

    // ----- internals --------------------------------------------------------------------

    fn row_lines(&self, at: RowRef) -> usize {
        self.sections
            .get(at.section)
            .and_then(|s| s.rows.get(at.row))
            .map_or(1, |row| (self.lines_of)(row).max(1))
    }

    fn len_of(&self, section: usize) -> usize {
        self.sections.get(section).map_or(0, |s| s.rows.len())
    }

    /// The first row on show, not chosen by the user.
    fn select_default(&mut self) {
        self.chosen = false;
        self.selected = self
            .sections
            .iter()
            .position(|s| !s.rows.is_empty())
            .map(|section| RowRef { section, row: 0 });
    }

    /// The last row of section `index`, else the first row on show.
    fn last_of(&self, index: usize) -> Option<RowRef> {
        match self.len_of(index) {
            0 => self
                .sections
                .iter()
                .position(|s| !s.rows.is_empty())
                .map(|section| RowRef { section, row: 0 }),
            n => Some(RowRef {
                section: index,
                row: n - 1,
            }),
        }
    }

    fn more_to_fetch(&self) -> bool {
        self.exact_index()
            .and_then(|i| self.sections.get(i))
            .is_some_and(|s| s.rows.len() < s.total)
    }

    /// Whether flat row `flat` is the last match fetched.
    fn is_last_fetched(&self, flat: usize) -> bool {
        self.exact_index()
            .is_some_and(|i| flat + 1 == self.offset_of(i) + self.len_of(i))
    }

    /// Rows on show before section `index`.
    fn offset_of(&self, index: usize) -> usize {
        self.sections.iter().take(index).map(|s| s.rows.len()).sum()
    }

    /// Asks for more matches when the selection is within a page of the last one fetched
    /// (doubling, up to the total).
    fn fetch_if_near_end(&mut self) -> Fetch {
        let Some(exact) = self.exact_index() else {
            return Fetch::None;
        };
        let Some(first) = self.sections.get(exact) else {
            return Fetch::None;
        };
        let Some(sel) = self.selected.filter(|s| s.section == exact) else {
            return Fetch::None;
        };
        let fetched = first.rows.len();
        if fetched >= first.total || sel.row + self.page_rows.get() < fetched {
            return Fetch::None;
        }
        let want = (fetched.max(1) * 2).min(first.total);
        if want <= self.requested {
            return Fetch::None;
        }
        self.requested = want;
        Fetch::Rows(want)
    }

    fn flat_selected(&self) -> Option<usize> {
        let sel = self.selected?;
        let before: usize = self
            .sections
            .iter()
            .take(sel.section)
            .map(|s| s.rows.len())
            .sum();
        Some(before + sel.row)
    }

    fn flat_to_ref(&self, mut flat: usize) -> Option<RowRef> {
        for (section, s) in self.sections.iter().enumerate() {
            if flat < s.rows.len() {
                return Some(RowRef { section, row: flat });
            }
            flat -= s.rows.len();
        }
        None
    }

    /// Selects flat row `flat` for a move of the user's.
    fn select_flat(&mut self, flat: usize) {
        self.selected = self.flat_to_ref(flat);
        self.chosen = true;
        self.scroll_to_selection();
    }

    fn scroll_to_selection(&mut self) {
        let lines = self.lines();
        self.top = self.visible_top(&lines, self.view_lines.get());
    }

    fn line_height(&self, line: &Line) -> usize {
        match line {
            Line::Title(_) => 1,
            Line::Row(at) => self.row_lines(*at),
        }
    }

    fn lines(&self) -> Vec<Line> {
        let mut lines = Vec::new();
        for (section, s) in self.sections.iter().enumerate() {
            if s.rows.is_empty() && s.title.is_none() {
                continue;
            }
            if s.title.is_some() {
                lines.push(Line::Title(section));
            }
            lines.extend((0..s.rows.len()).map(|row| Line::Row(RowRef { section, row })));
        }
        lines
    }

    /// First visible line index so the selected row (and its section title when it is the
    /// section's first row) fits in `height` lines, moving the stored top least.
    fn visible_top(&self, lines: &[Line], height: usize) -> usize {
        // Line index -> screen line offset, since rows are taller than titles.
        let offsets: Vec<usize> = lines
            .iter()
            .scan(0, |acc, l| {
                let at = *acc;
                *acc += self.line_height(l);
                Some(at)
            })
            .collect();
        let top = self.top.min(lines.len().saturating_sub(1));
        let Some(sel) = self.selected else {
            return top;
        };
        let Some(index) = lines.iter().position(|l| *l == Line::Row(sel)) else {
            return top;
        };
        let start = if sel.row == 0 && index > 0 && matches!(lines[index - 1], Line::Title(_)) {
            index - 1
        } else {
            index
        };
        let offset = |i: usize| offsets.get(i).copied().unwrap_or(0);
        let end_offset = offset(index) + self.row_lines(sel);
        if start < top {
            return start;
        }
        if end_offset > offset(top) + height {
            // The first line from which the selected row's end still fits.
            return (0..=index)
                .find(|&t| end_offset <= offset(t) + height)
                .unwrap_or(index);
        }
        top
    }
}

/// One entry of the flat layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Line {
    Title(usize),
    Row(RowRef),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key<'a>(s: &'a &'static str) -> &'a str {
        s
    }

    #[test]
    fn offered_rows_leave_out_the_listed_ones() {
        type Want = Option<(Option<&'static str>, Vec<&'static str>)>;
        let table: [(&str, &[&str], &[&str], Want); 4] = [
            ("hits", &["a", "b"], &["b"], Some((Some("hits"), vec!["a"]))),
            ("hits", &["b"], &["b"], None),
            ("building", &[], &["b"], Some((Some("building"), vec![]))),
            ("", &["a"], &[], Some((None, vec!["a"]))),
        ];
        for (title, offered, listed, want) in table {
            let got = offered_section(title, offered, listed, key).map(|s| (s.title, s.rows));
            let want = want.map(|(t, r)| (t.map(str::to_owned), r));
            assert_eq!(got, want, "{title:?} {offered:?} {listed:?}");
        }
    }

    fn exact(n: usize, total: usize) -> Section<usize> {
        Section {
            kind: SectionKind::Exact,
            title: None,
            rows: (0..n).collect(),
            total,
        }
    }

    fn offered(title: &str, n: usize) -> Section<usize> {
        Section::complete(
            SectionKind::Offered,
            Some(title.into()),
            (100..100 + n).collect(),
        )
    }

    fn sel(list: &SectionedList<usize>) -> Option<(usize, usize)> {
        list.selected().map(|r| (r.section, r.row))
    }

    /// Issue 32 item 1: while rows show, one is highlighted — in every section.
    #[test]
    fn the_first_row_on_show_is_selected_in_any_section() {
        let mut list = SectionedList::new(|_| 2);
        list.set_sections(vec![exact(3, 3), offered("elsewhere", 2)]);
        assert_eq!(sel(&list), Some((0, 0)));
        assert!(!list.is_chosen(), "the default, not the user's");
        list.set_sections(vec![exact(0, 0), offered("closest", 2)]);
        assert_eq!(
            sel(&list),
            Some((1, 0)),
            "only offered rows: the first of them"
        );
        list.move_down();
        assert_eq!(sel(&list), Some((1, 1)));
        assert!(list.is_chosen());
        list.set_sections(vec![offered("files", 2), exact(2, 2)]);
        assert_eq!(sel(&list), Some((0, 0)), "a section before the matches");
        assert_eq!(list.exact_index(), Some(1));
        list.set_sections(vec![exact(0, 0)]);
        assert_eq!(sel(&list), None, "no row, nothing selected");
        list.replace_section(1, offered("elsewhere", 1));
        assert_eq!(sel(&list), Some((1, 0)), "rows arriving later are selected");
        assert!(!list.is_chosen());
    }

    #[test]
    fn moves_cross_sections_and_wrap() {
        let mut list = SectionedList::new(|_| 2);
        list.set_sections(vec![exact(2, 2), offered("elsewhere", 2)]);
        let mut seen = Vec::new();
        for _ in 0..5 {
            list.move_down();
            seen.push(sel(&list).unwrap());
        }
        assert_eq!(seen, [(0, 1), (1, 0), (1, 1), (0, 0), (0, 1)]);
        list.move_up();
        list.move_up();
        assert_eq!(sel(&list), Some((1, 1)), "wrapped back to the last");
    }

    #[test]
    fn paging_home_and_end_with_fetching_more() {
        let mut list = SectionedList::new(|_| 2);
        list.set_sections(vec![exact(50, 106)]);
        list.layout(16); // 8 rows a page
        assert_eq!(list.page_down(), Fetch::None);
        assert_eq!(sel(&list), Some((0, 8)));
        assert_eq!(list.page_down(), Fetch::None);
        assert_eq!(list.page_down(), Fetch::None);
        assert_eq!(list.page_down(), Fetch::None);
        assert_eq!(list.page_down(), Fetch::None, "row 40: still a page away");
        assert_eq!(
            list.page_down(),
            Fetch::Rows(100),
            "row 48: within a page of the end"
        );
        assert_eq!(list.page_down(), Fetch::None, "already asked");
        assert_eq!(sel(&list), Some((0, 49)), "clamped at the last fetched");
        list.extend_section(0, exact(100, 106));
        assert_eq!(sel(&list), Some((0, 49)), "selection kept");
        assert_eq!(list.page_down(), Fetch::None);
        assert_eq!(sel(&list), Some((0, 57)));
        assert_eq!(list.page_up(), Fetch::None);
        assert_eq!(sel(&list), Some((0, 49)));
        assert_eq!(list.home(), Fetch::None);
        assert_eq!(sel(&list), Some((0, 0)));
        list.extend_section(0, exact(100, 106));
        assert_eq!(list.end(), Fetch::Rows(106), "End fetches everything");
        assert_eq!(sel(&list), Some((0, 99)));
        list.extend_section(0, exact(106, 106));
        assert_eq!(
            sel(&list),
            Some((0, 105)),
            "End lands on the oldest once it arrives"
        );
        assert_eq!(list.move_down(), Fetch::None);
        assert_eq!(sel(&list), Some((0, 0)), "complete: wraps");
    }

    #[test]
    fn down_at_the_last_fetched_row_waits_for_more() {
        let mut list = SectionedList::new(|_| 1);
        list.set_sections(vec![exact(3, 10)]);
        list.layout(2);
        assert_eq!(list.move_down(), Fetch::Rows(6));
        assert_eq!(list.move_down(), Fetch::None);
        assert_eq!(sel(&list), Some((0, 2)));
        assert_eq!(list.move_down(), Fetch::None, "no wrap while more exist");
        assert_eq!(sel(&list), Some((0, 2)));
    }

    #[test]
    fn a_section_replaced_on_its_own_keeps_the_selection_elsewhere() {
        let mut list = SectionedList::new(|_| 2);
        list.set_sections(vec![exact(3, 3)]);
        list.move_down();
        list.replace_section(1, offered("elsewhere", 2));
        assert_eq!(sel(&list), Some((0, 1)), "selection untouched");
        list.move_down();
        list.move_down();
        assert_eq!(sel(&list), Some((1, 0)));
        list.replace_section(1, offered("elsewhere", 0));
        assert_eq!(
            sel(&list),
            Some((0, 0)),
            "its section went: back to the first exact row"
        );
    }

    #[test]
    fn matches_after_a_section_page_and_end_like_first_ones() {
        let mut list = SectionedList::new(|_| 1);
        list.set_sections(vec![offered("files", 2), exact(3, 10)]);
        list.layout(3);
        assert_eq!(sel(&list), Some((0, 0)));
        list.move_down();
        assert_eq!(list.move_down(), Fetch::None);
        assert_eq!(
            list.move_down(),
            Fetch::Rows(6),
            "near the last match fetched"
        );
        assert_eq!(sel(&list), Some((1, 1)));
        assert_eq!(list.end(), Fetch::Rows(10));
        assert_eq!(sel(&list), Some((1, 2)), "the last match fetched");
        list.extend_section(1, exact(10, 10));
        assert_eq!(sel(&list), Some((1, 9)), "End lands on the last match");
    }

    #[test]
    fn layout_keeps_the_selection_and_its_title_visible() {
        let mut list = SectionedList::new(|_| 2);
        list.set_sections(vec![exact(3, 3), offered("closest", 3)]);
        let ys = |p: &[Placed]| -> Vec<String> {
            p.iter()
                .map(|p| match p {
                    Placed::Title { section, y } => format!("T{section}@{y}"),
                    Placed::Row { at, y, selected } => {
                        format!(
                            "{}{}.{}@{y}",
                            if *selected { "*" } else { "" },
                            at.section,
                            at.row
                        )
                    }
                })
                .collect()
        };
        assert_eq!(ys(&list.layout(6)), ["*0.0@0", "0.1@2", "0.2@4"]);
        list.move_down();
        list.move_down();
        list.move_down();
        assert_eq!(
            ys(&list.layout(6)),
            ["0.2@0", "T1@2", "*1.0@3", "1.1@5"],
            "the title comes into view with its first row"
        );
        assert_eq!(list.height(), 3 * 2 + 1 + 3 * 2);
    }
}
