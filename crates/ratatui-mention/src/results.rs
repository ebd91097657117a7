//! One results list for every picker: the rows a source answers for a query, with the query
//! lifecycle written once — each query has an id, answers to any other id are dropped, the
//! rows on show stay until the newest query is answered (no flicker), more rows of the
//! answered query are fetched as the selection nears the end (`More`), rows offered besides
//! (files, closest matches, rows a slower search found) come in their own sections, one row is always
//! highlighted while any is on show, its preview is asked for once, and what Enter/Tab do
//! is decided once ([`EnterAction`]) — those that come before the newest answer wait for it.
//! The `@` popup and a host's own picker ([`crate::Picker`]) are both built on it.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crossterm::event::{KeyEvent, MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};

use crate::item::MentionItem;
use crate::key_map::Action;
pub use crate::result_row::ResultRow;
use crate::sections::{
    Fetch, RowRef, Section as ListSection, SectionKind, SectionedList, offered_section,
};

/// A query a results list asked its source to answer, named by a per-list increasing id.
pub type QueryId = u64;

/// Rows the host offers besides the matches, under a title (e.g. "closest matches",
/// "files"): a section before or after them in a [`ResultsPage`], or one found later
/// ([`ResultsList::set_late_section`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section<T = MentionItem> {
    /// The section's title line.
    pub title: String,
    /// Its rows, in order.
    pub rows: Vec<T>,
}

/// A source's answer to a query: the first matches, how many match in all, and sections of
/// other rows offered before or after them. The first row on show is highlighted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultsPage<T = MentionItem> {
    /// The first matches, best first.
    pub rows: Vec<T>,
    /// Every match, not only `rows` (`>= rows.len()`).
    pub total: usize,
    /// Sections of other rows, after the matches.
    pub after: Vec<Section<T>>,
    /// Sections of other rows shown before the matches (e.g. files for a query shaped like
    /// a path): their first row is the one highlighted.
    pub before: Vec<Section<T>>,
}

impl<T> Default for ResultsPage<T> {
    fn default() -> Self {
        ResultsPage {
            rows: Vec::new(),
            total: 0,
            after: Vec::new(),
            before: Vec::new(),
        }
    }
}

impl<T> ResultsPage<T> {
    /// A page holding exactly `rows`.
    pub fn complete(rows: Vec<T>) -> Self {
        ResultsPage {
            total: rows.len(),
            rows,
            ..Self::default()
        }
    }
}

/// What Enter (and Tab) does in a results list as it stands: the one decision the `@`
/// popup, the textarea mode and the picker share, and what a host's hint line can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EnterAction {
    /// Takes the highlighted row (inserts it; a picker picks it).
    Take,
    /// The highlighted row cannot be taken now ([`ResultRow::blocked`] says why): nothing
    /// happens, nothing is sent.
    Blocked,
    /// The rows on show do not answer what was typed yet: the key waits for the answer,
    /// then acts on it.
    Wait,
    /// No row on show: Enter sends the draft as typed (a picker does nothing), Tab does
    /// nothing.
    AsTyped,
}

/// A request for more rows of the answered query: answer `query` again with up to `limit`
/// rows, for `id`, through [`ResultsList::set_page`] (the selection stays).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoreRequest {
    /// The id to answer with.
    pub id: QueryId,
    /// The query, as asked before.
    pub query: String,
    /// How many rows to return now (the first ones included).
    pub limit: usize,
}

/// Where the answers stand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Listing {
    /// No answer yet since the list was opened.
    Waiting,
    Answered,
    Failed(String),
}

/// An Enter or Tab waiting for the newest query's answer, as the list shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WaitMark {
    /// Waiting: the list says it is searching.
    Waiting,
    /// The wait ran out: the list says Enter again sends the draft as text.
    GaveUp,
}

/// Which key waits: Enter acts on the highlighted row (none: the draft as typed), Tab on the
/// highlighted row (none: nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WaitingKey {
    Enter,
    Tab,
}

/// An input held while Enter/Tab waits.
#[derive(Debug, Clone)]
pub(crate) enum Held {
    Key(KeyEvent),
    Paste(String),
}

/// Enter or Tab pressed while query `query` was unanswered, and what came after it.
#[derive(Debug, Clone)]
pub(crate) struct Wait {
    pub(crate) query: QueryId,
    pub(crate) key: WaitingKey,
    pub(crate) held: VecDeque<Held>,
}

/// A move of the selection, and the request for more rows it made, if any.
#[derive(Debug)]
pub(crate) struct Moved(pub(crate) Option<MoreRequest>);

/// What a key does to an open results list (see [`ResultsList::popup_key`]).
#[derive(Debug)]
pub(crate) enum PopupKey {
    /// Not a key of the list: the editor's.
    Pass,
    /// The selection moved (asking for more rows, maybe).
    Moved(Option<MoreRequest>),
    /// Enter or Tab waits for the answer to this query.
    Wait(QueryId),
    /// Enter or Tab takes the highlighted row.
    Take,
    /// Enter or Tab on a row that cannot be taken, or Tab with no row: nothing.
    Nothing,
    /// Enter with no row on show: the draft as typed.
    AsTyped,
    /// The preview key.
    TogglePreview,
    /// Esc.
    Escape,
}

/// What a mouse event did to a drawn list.
#[derive(Debug)]
pub(crate) enum Pointer {
    /// Not over the list: the host's.
    Outside,
    /// Over the list, nothing changed.
    Consumed,
    /// The wheel or a click moved the selection.
    Moved(Option<MoreRequest>),
    /// A double click on a row (now selected): act on it as Enter does.
    Activate,
}

/// Two clicks on one row within this time are a double click.
const DOUBLE_CLICK: Duration = Duration::from_millis(500);

/// Where the last frame drew the list and each of its rows (for the mouse).
#[derive(Debug, Clone, Default)]
pub(crate) struct Drawn {
    pub(crate) area: Rect,
    pub(crate) rows: Vec<(Rect, RowRef)>,
}

/// What owns a results list whose Enter/Tab may wait: it acts on the waiting key once the
/// answer is in, and takes the inputs held meanwhile as if they arrived now.
pub(crate) trait WaitHost {
    /// What an input did.
    type Out;
    /// The results list the key waits on.
    fn results(&mut self) -> &mut ResultsList<MentionItem>;
    /// What the waiting key does now that its answer is in.
    fn act(&mut self, key: WaitingKey) -> Self::Out;
    /// A held key, applied now.
    fn key(&mut self, key: KeyEvent) -> Self::Out;
    /// A held paste, applied now.
    fn paste(&mut self, text: &str) -> Self::Out;
    /// "Redraw".
    fn changed() -> Self::Out;
}

/// Query `id` was answered: the key waiting for it acts, then the held inputs are applied.
pub(crate) fn resume<H: WaitHost>(host: &mut H, id: QueryId) -> Vec<H::Out> {
    let Some(wait) = host.results().take_answered_wait(id) else {
        return Vec::new();
    };
    let mut outcomes = vec![host.act(wait.key)];
    replay(host, wait.held, &mut outcomes);
    outcomes
}

/// The wait for `id` ran out: nothing is acted on, the held inputs are applied.
pub(crate) fn give_up<H: WaitHost>(host: &mut H, id: QueryId) -> Vec<H::Out> {
    let Some(wait) = host.results().give_up_wait(id) else {
        return Vec::new();
    };
    let mut outcomes = vec![H::changed()];
    replay(host, wait.held, &mut outcomes);
    outcomes
}

/// Applies held inputs in order; once one waits again, the rest are held for that wait.
fn replay<H: WaitHost>(host: &mut H, held: VecDeque<Held>, outcomes: &mut Vec<H::Out>) {
    for input in held {
        outcomes.push(match input {
            Held::Key(key) => host.key(key),
            Held::Paste(text) => host.paste(&text),
        });
    }
}

/// How long a list's timers run ([`tick`]): an Enter or Tab waiting for the newest answer
/// gives up after `answer_wait`; rows of an older query stop showing after `slow_answer`
/// while the newest is unanswered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Timers {
    pub(crate) answer_wait: Duration,
    pub(crate) slow_answer: Duration,
}

impl Default for Timers {
    fn default() -> Self {
        Timers {
            answer_wait: Duration::from_secs(1),
            slow_answer: Duration::from_millis(250),
        }
    }
}

/// Runs `host`'s timers at `now`: a wait for an answer that ran out gives up (the held
/// inputs are applied), rows of an older query on show too long are hidden. A timer starts
/// at the first tick that sees what arms it.
pub(crate) fn tick<H: WaitHost>(host: &mut H, now: Instant) -> Vec<H::Out> {
    let mut out = match host.results().wait_due(now) {
        Some(id) => give_up(host, id),
        None => Vec::new(),
    };
    if host.results().slow_due(now) {
        out.push(H::changed());
    }
    out
}

/// Most inputs held while Enter/Tab waits; later ones are dropped (a burst this long is
/// no typist's: a paste without bracketed paste mode, a runaway macro).
const MAX_HELD: usize = 4096;

/// The results of a query source, kept across frames: query lifecycle, sections,
/// selection, paging and the preview request. Draw one of [`MentionItem`]s with
/// [`crate::Picker`] or the `@` popup.
#[derive(Debug, Clone)]
pub struct ResultsList<T = MentionItem> {
    query: String,
    query_id: QueryId,
    last_id: QueryId,
    in_flight: bool,
    /// A request for more rows of the answered query, if one is out.
    more_id: Option<QueryId>,
    listing: Listing,
    list: SectionedList<T>,
    /// Rows found elsewhere for the newest query that answered them, as the last section.
    late: Option<Section<T>>,
    /// The query the late section on show answers.
    late_for: Option<QueryId>,
    /// How many sections the page takes (the late section comes after them).
    page_sections: usize,
    /// The row whose preview was asked for.
    preview_asked: Option<String>,
    wait: Option<Wait>,
    /// The query whose answer an Enter stopped waiting for: Enter again acts on the rows on
    /// show.
    gave_up: Option<QueryId>,
    /// The query whose late section the source said will come ([`ResultsList::expect_late_section`]).
    late_expected: Option<QueryId>,
    /// The query whose page on show is partial ([`ResultsList::set_partial_page`]).
    partial: Option<QueryId>,
    /// Where the last frame drew the list.
    drawn: Drawn,
    /// The row last clicked, and when (a second click soon after is a double click).
    last_click: Option<(RowRef, Instant)>,
    timers: Timers,
    /// The wait of Enter/Tab as a tick first saw it: its query, and then.
    wait_since: Option<(QueryId, Instant)>,
    /// The newest query while rows of an older one are on show, as a tick first saw it.
    slow_since: Option<(QueryId, Instant)>,
}

fn lines_of<T: ResultRow>(row: &T) -> usize {
    usize::from(row.lines().max(1))
}

impl<T: ResultRow> Default for ResultsList<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: ResultRow> ResultsList<T> {
    /// An empty list with no query asked yet.
    pub fn new() -> Self {
        ResultsList {
            query: String::new(),
            query_id: 0,
            last_id: 0,
            in_flight: false,
            more_id: None,
            listing: Listing::Waiting,
            list: SectionedList::new(lines_of::<T>),
            late: None,
            late_for: None,
            page_sections: 0,
            preview_asked: None,
            wait: None,
            gave_up: None,
            late_expected: None,
            partial: None,
            drawn: Drawn::default(),
            last_click: None,
            timers: Timers::default(),
            wait_since: None,
            slow_since: None,
        }
    }

    /// Asks `query` (its answer is wanted for the returned id); the rows on show stay until
    /// it is answered, and any earlier query's answer is dropped from now on.
    pub fn ask(&mut self, query: impl Into<String>) -> QueryId {
        self.last_id += 1;
        self.query = query.into();
        self.query_id = self.last_id;
        self.in_flight = true;
        self.more_id = None;
        self.last_id
    }

    /// Forgets rows, the late section and the query (as for a list opened anew); ids keep increasing, so
    /// answers to the old queries stay stale.
    pub fn clear(&mut self) {
        let (last_id, timers) = (self.last_id, self.timers);
        *self = Self::new();
        self.last_id = last_id;
        self.timers = timers;
    }

    /// The newest query asked.
    pub fn query(&self) -> &str {
        &self.query
    }

    /// The id of the newest query asked; answers to any other id are stale.
    pub fn query_id(&self) -> QueryId {
        self.query_id
    }

    /// Whether the newest query is still unanswered (the rows on show, if any, answer an
    /// older one).
    pub fn in_flight(&self) -> bool {
        self.in_flight
    }

    /// Takes the page answering `id` — the newest query, or more rows of it (the selection
    /// then stays); returns false, changing nothing, for a stale id. After a partial page
    /// of `id`, a row the user moved to stays selected when the page still has it.
    pub fn set_page(&mut self, id: QueryId, page: ResultsPage<T>) -> bool {
        if self.more_id == Some(id) {
            self.more_id = None;
            let index = self.list.exact_index().unwrap_or(0);
            self.list.extend_section(
                index,
                ListSection {
                    kind: SectionKind::Exact,
                    title: None,
                    total: page.total.max(page.rows.len()),
                    rows: page.rows,
                },
            );
            return true;
        }
        if id != self.query_id || !self.in_flight {
            return false;
        }
        let chosen = (self.partial == Some(id) && self.list.is_chosen())
            .then(|| self.list.selected_row().map(|r| r.key().to_owned()))
            .flatten();
        self.in_flight = false;
        self.partial = None;
        self.listing = Listing::Answered;
        self.show_page(page);
        if let Some(key) = chosen {
            self.list.select_where(|r| r.key() == key);
        }
        true
    }

    /// Shows `page` for `id` as a first part of its answer (e.g. the rows found at once,
    /// before slower sections): it stays on show, but the query counts as unanswered until
    /// [`set_page`](Self::set_page) takes the whole page, so an Enter or Tab waits for that.
    /// False, changing nothing, for a stale or answered id.
    pub fn set_partial_page(&mut self, id: QueryId, page: ResultsPage<T>) -> bool {
        if id != self.query_id || !self.in_flight {
            return false;
        }
        self.partial = Some(id);
        self.listing = Listing::Answered;
        self.show_page(page);
        true
    }

    /// Says that rows found elsewhere for query `id` will come ([`set_late_section`](Self::set_late_section)):
    /// while the page shows no row, an Enter or Tab waits for them too.
    pub fn expect_late_section(&mut self, id: QueryId) {
        if id == self.query_id && self.late_for != Some(id) {
            self.late_expected = Some(id);
        }
    }

    /// Replaces the answer already on show for `id` with a fresher page (rows first answered
    /// from a remembered page, then from the checked source); the selected row stays when
    /// the new page has it. False, changing nothing, for another query, before its first
    /// answer, or while more rows of it are fetched.
    pub fn refresh_page(&mut self, id: QueryId, page: ResultsPage<T>) -> bool {
        if id != self.query_id || self.in_flight || self.more_id.is_some() {
            return false;
        }
        let selected = self.list.selected_row().map(|r| r.key().to_owned());
        self.show_page(page);
        if let Some(key) = selected {
            self.list.select_where(|r| r.key() == key);
        }
        true
    }

    /// Takes the failure of `id` (shown in place of rows; a failed request for more rows
    /// leaves the rows on show); false for a stale id.
    pub fn set_failed(&mut self, id: QueryId, message: impl Into<String>) -> bool {
        if self.more_id == Some(id) {
            self.more_id = None;
            return true;
        }
        if id != self.query_id || !self.in_flight {
            return false;
        }
        self.in_flight = false;
        self.partial = None;
        self.listing = Listing::Failed(message.into());
        self.list.set_sections(Vec::new());
        self.page_sections = 0;
        if self.late.is_some() {
            self.place_late();
        }
        true
    }

    /// Takes a section found after the page for `id` (by a slower search of the host's),
    /// shown as the last section under `late.title` (its first row highlighted when no
    /// other row is on show); rows the matches list already are left out. A title with no
    /// rows still shows (e.g. "index building"); no title and no rows removes the section.
    /// False for an older query's answer.
    pub fn set_late_section(&mut self, id: QueryId, late: Section<T>) -> bool {
        if id != self.query_id {
            return false;
        }
        self.late = (!late.title.is_empty() || !late.rows.is_empty()).then_some(late);
        self.late_for = Some(id);
        self.place_late();
        true
    }

    /// Changes only the title of the late section on show (e.g. a progress count).
    pub fn set_late_title(&mut self, title: &str) {
        let Some(late) = self.late.as_mut() else {
            return;
        };
        title.clone_into(&mut late.title);
        self.list
            .set_title(self.page_sections, Some(title.to_owned()));
    }

    /// The late section on show, as the source gave it.
    pub fn late_section(&self) -> Option<&Section<T>> {
        self.late.as_ref()
    }

    /// The matching rows on show (the newest answer's, or an older one's while a query
    /// runs).
    pub fn rows(&self) -> &[T] {
        self.list
            .exact_index()
            .and_then(|i| self.list.sections().get(i))
            .map_or(&[], |s| s.rows.as_slice())
    }

    /// Whether no row of any section is on show.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// How many rows match in all (not only those fetched).
    pub fn total(&self) -> usize {
        self.list
            .exact_index()
            .and_then(|i| self.list.sections().get(i))
            .map_or(0, |s| s.total)
    }

    /// The highlighted row: the first row on show when an answer arrives (in whichever
    /// section), then where the user moves; none only while no row is on show.
    pub fn selected(&self) -> Option<&T> {
        self.list.selected_row()
    }

    /// What Tab takes: the highlighted row, as Enter does.
    pub fn tab_target(&self) -> Option<&T> {
        self.list.selected_row()
    }

    /// What Enter does now (Tab alike, except that with no row it does nothing).
    pub fn enter_action(&self) -> EnterAction {
        if !self.answers_query() && !self.gave_up_on_query() {
            return EnterAction::Wait;
        }
        match self.list.selected_row() {
            Some(row) if row.blocked().is_some() => EnterAction::Blocked,
            Some(_) => EnterAction::Take,
            None => EnterAction::AsTyped,
        }
    }

    /// Previous row (wrapping).
    pub fn move_up(&mut self) -> Option<MoreRequest> {
        let fetch = self.list.move_up();
        self.more(fetch)
    }

    /// Next row (wrapping unless more matches can be fetched).
    pub fn move_down(&mut self) -> Option<MoreRequest> {
        let fetch = self.list.move_down();
        self.more(fetch)
    }

    /// A page up.
    pub fn page_up(&mut self) -> Option<MoreRequest> {
        let fetch = self.list.page_up();
        self.more(fetch)
    }

    /// A page down, fetching more matches near the end.
    pub fn page_down(&mut self) -> Option<MoreRequest> {
        let fetch = self.list.page_down();
        self.more(fetch)
    }

    /// The first row.
    pub fn home(&mut self) -> Option<MoreRequest> {
        let fetch = self.list.home();
        self.more(fetch)
    }

    /// The last match, fetching all of them.
    pub fn end(&mut self) -> Option<MoreRequest> {
        let fetch = self.list.end();
        self.more(fetch)
    }

    /// The key of the selected row when its preview has not been asked for yet (then it
    /// counts as asked).
    pub fn want_preview(&mut self) -> Option<String> {
        let key = self.list.selected_row()?.key().to_owned();
        if self.preview_asked.as_deref() == Some(key.as_str()) {
            return None;
        }
        self.preview_asked = Some(key.clone());
        Some(key)
    }

    /// Stops showing the rows of an older query while query `id` is still unanswered (they
    /// look like an answer and are not one); the list says it is searching until the
    /// answer comes. False when `id` is answered or not the newest.
    pub(crate) fn hide_older_rows(&mut self, id: QueryId) -> bool {
        if id != self.query_id
            || !self.in_flight
            || self.partial == Some(id)
            || self.list.is_empty()
        {
            return false;
        }
        self.list.set_sections(Vec::new());
        self.page_sections = 0;
        if self.late_for != Some(id) {
            self.late = None;
        }
        if self.late.is_some() {
            self.place_late();
        }
        true
    }

    /// Forgets which preview was asked for (e.g. the preview was hidden).
    pub fn forget_preview(&mut self) {
        self.preview_asked = None;
    }

    /// The row whose preview was asked for last.
    pub fn preview_asked(&self) -> Option<&str> {
        self.preview_asked.as_deref()
    }

    // ----- crate internals: sections, messages, the wait of Enter/Tab ----------------------

    /// What `action` does to the open list: a move, Enter or Tab (acting at once, or
    /// waiting for the newest answer — the wait is begun here), the preview key or Esc.
    pub(crate) fn popup_key(&mut self, action: Option<Action>) -> PopupKey {
        if let Some(Moved(more)) = self.navigate(action) {
            return PopupKey::Moved(more);
        }
        let key = match action {
            Some(Action::Submit) => WaitingKey::Enter,
            Some(Action::Complete) => WaitingKey::Tab,
            Some(Action::TogglePreview) => return PopupKey::TogglePreview,
            Some(Action::Escape) => return PopupKey::Escape,
            _ => return PopupKey::Pass,
        };
        self.key_now(key)
    }

    /// What Enter or Tab does now; a wait is begun.
    pub(crate) fn key_now(&mut self, key: WaitingKey) -> PopupKey {
        match self.enter_action() {
            EnterAction::Wait => PopupKey::Wait(self.begin_wait(key)),
            EnterAction::Take => PopupKey::Take,
            EnterAction::AsTyped if key == WaitingKey::Enter => PopupKey::AsTyped,
            EnterAction::Blocked | EnterAction::AsTyped => PopupKey::Nothing,
        }
    }

    /// Moves the selection for a popup key: `None` when `action` is no move.
    pub(crate) fn navigate(&mut self, action: Option<Action>) -> Option<Moved> {
        Some(Moved(match action? {
            Action::Up | Action::PopupPrev => self.move_up(),
            Action::Down | Action::PopupNext => self.move_down(),
            Action::PopupPageUp => self.page_up(),
            Action::PopupPageDown => self.page_down(),
            Action::PopupFirst => self.home(),
            Action::PopupLast => self.end(),
            _ => return None,
        }))
    }

    /// Remembers where the frame drew the list (`area`, border included) and its rows.
    pub(crate) fn set_drawn(&mut self, drawn: Drawn) {
        self.drawn = drawn;
    }

    /// What a mouse event at `now` does: over the list, the wheel moves the selection a row
    /// (stopping at the ends), a click selects the row under it and a second click on it
    /// soon after activates it.
    pub(crate) fn pointer(&mut self, mouse: MouseEvent, now: Instant) -> Pointer {
        let at = Position::new(mouse.column, mouse.row);
        if !self.drawn.area.contains(at) {
            return Pointer::Outside;
        }
        match mouse.kind {
            MouseEventKind::ScrollUp => Pointer::Moved(self.step(-1)),
            MouseEventKind::ScrollDown => Pointer::Moved(self.step(1)),
            MouseEventKind::Down(MouseButton::Left) => {
                let Some(row) = self
                    .drawn
                    .rows
                    .iter()
                    .find(|(rect, _)| rect.contains(at))
                    .map(|(_, row)| *row)
                else {
                    return Pointer::Consumed;
                };
                let double = self.last_click.is_some_and(|(last, when)| {
                    last == row && now.duration_since(when) <= DOUBLE_CLICK
                });
                if double {
                    self.last_click = None;
                    self.list.select(row);
                    return Pointer::Activate;
                }
                self.last_click = Some((row, now));
                let fetch = self.list.select(row);
                Pointer::Moved(self.more(fetch))
            }
            _ => Pointer::Consumed,
        }
    }

    fn step(&mut self, delta: isize) -> Option<MoreRequest> {
        let fetch = self.list.step(delta);
        self.more(fetch)
    }

    pub(crate) fn sections(&self) -> &[ListSection<T>] {
        self.list.sections()
    }

    pub(crate) fn sectioned(&self) -> &SectionedList<T> {
        &self.list
    }

    pub(crate) fn listing(&self) -> &Listing {
        &self.listing
    }

    /// Whether Enter or Tab may act at once: the rows on show answer the newest query (its
    /// whole page is in, and the late section expected for it is too unless the page shows a
    /// row it would come after), or the user moved onto a late row found for the newest query.
    pub(crate) fn answers_query(&self) -> bool {
        let late_fresh = self.late.is_some() && self.late_for == Some(self.query_id);
        let on_fresh_late = late_fresh
            && self.list.is_chosen()
            && self
                .list
                .selected()
                .is_some_and(|sel| sel.section == self.page_sections && sel.section > 0);
        if on_fresh_late {
            return true;
        }
        if self.in_flight {
            return false;
        }
        let late_pending =
            self.late_expected == Some(self.query_id) && self.late_for != Some(self.query_id);
        // A late section on show then is an older query's: only the page's rows count.
        let page_rows = self
            .list
            .sections()
            .iter()
            .take(self.page_sections)
            .any(|s| !s.rows.is_empty());
        !late_pending || page_rows
    }

    /// Sets how long the timers run.
    pub(crate) fn set_timers(&mut self, timers: Timers) {
        self.timers = timers;
    }

    /// When [`tick`] has something to do next, for the timers a tick already saw.
    pub(crate) fn next_tick(&self) -> Option<Instant> {
        let wait = self
            .wait_since
            .filter(|(id, _)| self.wait.as_ref().is_some_and(|w| w.query == *id))
            .map(|(_, at)| at + self.timers.answer_wait);
        let slow = self
            .slow_since
            .filter(|(id, _)| *id == self.query_id && self.in_flight)
            .map(|(_, at)| at + self.timers.slow_answer);
        wait.into_iter().chain(slow).min()
    }

    /// The query whose wait ran out by `now`, if one did.
    fn wait_due(&mut self, now: Instant) -> Option<QueryId> {
        let Some(id) = self.wait.as_ref().map(|w| w.query) else {
            self.wait_since = None;
            return None;
        };
        ran_out(&mut self.wait_since, id, now, self.timers.answer_wait).then_some(id)
    }

    /// Whether rows of an older query were on show too long by `now` (then they are hidden).
    fn slow_due(&mut self, now: Instant) -> bool {
        let id = self.query_id;
        let older_on_show = self.in_flight && self.partial != Some(id) && !self.list.is_empty();
        if !older_on_show {
            self.slow_since = None;
            return false;
        }
        ran_out(&mut self.slow_since, id, now, self.timers.slow_answer) && self.hide_older_rows(id)
    }

    /// Enter or Tab came before the newest query's answer: it waits for it.
    pub(crate) fn begin_wait(&mut self, key: WaitingKey) -> QueryId {
        self.wait = Some(Wait {
            query: self.query_id,
            key,
            held: VecDeque::new(),
        });
        self.query_id
    }

    /// Whether an Enter or Tab is waiting.
    pub(crate) fn is_waiting(&self) -> bool {
        self.wait.is_some()
    }

    /// Holds `input` until the wait ends (dropped beyond [`MAX_HELD`]); false when nothing
    /// waits.
    pub(crate) fn hold(&mut self, input: Held) -> bool {
        let Some(wait) = self.wait.as_mut() else {
            return false;
        };
        if wait.held.len() < MAX_HELD {
            wait.held.push_back(input);
        }
        true
    }

    /// The wait answered by `id` (call after an answer was taken).
    pub(crate) fn take_answered_wait(&mut self, id: QueryId) -> Option<Wait> {
        let answered = self.answers_query();
        self.wait.take_if(|w| w.query == id && answered)
    }

    /// Ends the wait for `id` unanswered: Enter again then acts as typed.
    pub(crate) fn give_up_wait(&mut self, id: QueryId) -> Option<Wait> {
        let wait = self.wait.take_if(|w| w.query == id)?;
        self.gave_up = Some(id);
        Some(wait)
    }

    /// Ends any wait without acting on it (the draft was replaced).
    pub(crate) fn drop_wait(&mut self) {
        self.wait = None;
    }

    /// Whether a wait for the newest (still unanswered) query ran out.
    pub(crate) fn gave_up_on_query(&self) -> bool {
        self.gave_up == Some(self.query_id) && !self.answers_query()
    }

    /// What the list says about a waiting Enter/Tab.
    pub(crate) fn wait_mark(&self) -> Option<WaitMark> {
        if self.wait.is_some() {
            Some(WaitMark::Waiting)
        } else if self.gave_up_on_query() {
            Some(WaitMark::GaveUp)
        } else {
            None
        }
    }

    fn more(&mut self, fetch: Fetch) -> Option<MoreRequest> {
        match fetch {
            Fetch::Rows(limit) if !self.in_flight => {
                self.last_id += 1;
                self.more_id = Some(self.last_id);
                Some(MoreRequest {
                    id: self.last_id,
                    query: self.query.clone(),
                    limit,
                })
            }
            Fetch::Rows(_) | Fetch::None => None,
        }
    }

    /// Shows `page`'s sections (those before the matches, the matches, those after), then
    /// the late section.
    fn show_page(&mut self, page: ResultsPage<T>) {
        let offered = |rows: Section<T>| {
            (!rows.rows.is_empty())
                .then(|| ListSection::complete(SectionKind::Offered, Some(rows.title), rows.rows))
        };
        let mut sections: Vec<ListSection<T>> =
            page.before.into_iter().filter_map(offered).collect();
        let exact = sections.len();
        sections.push(ListSection {
            kind: SectionKind::Exact,
            title: None,
            total: page.total.max(page.rows.len()),
            rows: page.rows,
        });
        sections.extend(page.after.into_iter().filter_map(offered));
        self.page_sections = sections.len();
        if let Some(late) = self.late.as_ref() {
            let listed = sections.get(exact).map_or(&[][..], |s| s.rows.as_slice());
            if let Some(section) = offered_section(&late.title, &late.rows, listed, T::key) {
                sections.push(section);
            }
        }
        self.list.set_sections(sections);
    }

    /// Puts the late section after the page's sections.
    fn place_late(&mut self) {
        let (title, rows) = self
            .late
            .as_ref()
            .map_or(("", &[][..]), |h| (h.title.as_str(), h.rows.as_slice()));
        self.list
            .place_offered(&mut self.page_sections, title, rows, T::key);
    }
}

/// Whether the timer in `slot` for query `id`, started at the first tick that saw `id`,
/// has run for `limit` by `now` (then it stops).
fn ran_out(
    slot: &mut Option<(QueryId, Instant)>,
    id: QueryId,
    now: Instant,
    limit: Duration,
) -> bool {
    let since = match *slot {
        Some((query, at)) if query == id => at,
        _ => slot.insert((id, now)).1,
    };
    if now.saturating_duration_since(since) < limit {
        return false;
    }
    *slot = None;
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[derive(Debug, Clone, PartialEq)]
    struct Row(&'static str);

    impl ResultRow for Row {
        fn key(&self) -> &str {
            self.0
        }
        fn lines(&self) -> u16 {
            1
        }
    }

    fn page(keys: &[&'static str], total: usize) -> ResultsPage<Row> {
        ResultsPage {
            rows: keys.iter().map(|k| Row(k)).collect(),
            total,
            ..ResultsPage::default()
        }
    }

    fn selected(list: &ResultsList<Row>) -> Option<&'static str> {
        list.selected().map(|r| r.0)
    }

    #[test]
    fn stale_and_repeated_answers_are_dropped_and_rows_stay_while_asking() {
        let mut list = ResultsList::new();
        let first = list.ask("a");
        assert!(!list.set_page(first + 1, page(&["x"], 1)), "not asked");
        assert!(list.set_page(first, page(&["a"], 1)));
        assert!(!list.set_page(first, page(&["b"], 1)), "answered already");
        let second = list.ask("ab");
        assert!(list.in_flight());
        assert_eq!(selected(&list), Some("a"), "kept while in flight");
        assert!(!list.set_page(first, page(&["old"], 1)), "stale now");
        assert!(list.set_failed(second, "down"));
        assert_eq!(selected(&list), None);
        assert!(!list.in_flight());
        // Cleared lists keep counting: an answer to a query of before is still stale.
        list.clear();
        let third = list.ask("");
        assert!(third > second);
        assert!(!list.set_page(second, page(&["late"], 1)));
    }

    #[test]
    fn more_rows_extend_the_answer_and_keep_the_selection() {
        let mut list = ResultsList::new();
        let id = list.ask("q");
        assert!(list.set_page(id, page(&["a", "b", "c"], 10)));
        let near = list.move_down().expect("within a page of the end");
        assert_eq!((near.query.as_str(), near.limit), ("q", 6), "twice as many");
        let more = list.end().expect("End fetches all");
        assert_eq!(more.limit, 10);
        assert!(more.id > near.id);
        assert!(
            !list.set_page(near.id, page(&["a"], 10)),
            "superseded by End's"
        );
        let rows: Vec<&'static str> = vec!["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"];
        assert!(list.set_page(more.id, page(&rows, 10)));
        assert_eq!(selected(&list), Some("j"), "End lands on the last");
        assert_eq!(list.total(), 10);
        // A new query while more rows are fetched makes their answer stale.
        let mut list = ResultsList::new();
        let id = list.ask("q");
        list.set_page(id, page(&["a"], 5));
        let more = list.end().expect("more");
        list.ask("qq");
        assert!(!list.set_page(more.id, page(&["a", "b"], 5)));
        assert!(list.move_down().is_none(), "no More while a query runs");
    }

    #[test]
    fn a_refreshed_page_replaces_the_answer_and_keeps_the_selected_row() {
        let mut list = ResultsList::new();
        let id = list.ask("");
        assert!(!list.refresh_page(id, page(&["x"], 1)), "not answered yet");
        assert!(list.set_page(id, page(&["a", "b", "c"], 3)));
        list.move_down();
        assert!(!list.refresh_page(id + 7, page(&["x"], 1)), "another query");
        assert!(list.refresh_page(id, page(&["new", "a", "b", "c"], 40)));
        assert_eq!(selected(&list), Some("b"), "still b");
        assert_eq!(list.total(), 40);
        assert!(list.refresh_page(id, page(&["p", "q"], 2)));
        assert_eq!(selected(&list), Some("p"), "b is gone: the first row");
    }

    #[test]
    fn hits_follow_the_matches_without_the_rows_listed() {
        let mut list = ResultsList::new();
        let id = list.ask("k");
        let hits = |keys: &[&'static str]| Section {
            title: "elsewhere".into(),
            rows: keys.iter().map(|k| Row(k)).collect(),
        };
        assert!(list.set_late_section(id, hits(&["a", "h"])));
        assert_eq!(selected(&list), Some("a"), "hits alone: their first row");
        assert_eq!(
            list.enter_action(),
            EnterAction::Wait,
            "the matches, above them, are still to come"
        );
        assert!(list.set_page(id, page(&["a"], 1)));
        assert_eq!(selected(&list), Some("a"), "the first match");
        assert_eq!(list.enter_action(), EnterAction::Take);
        let keys: Vec<Vec<&str>> = list
            .sections()
            .iter()
            .map(|s| s.rows.iter().map(|r| r.0).collect())
            .collect();
        assert_eq!(keys, [vec!["a"], vec!["h"]], "a is listed already");
        list.set_late_title("elsewhere · 3 of 9");
        assert_eq!(
            list.sections()[1].title.as_deref(),
            Some("elsewhere · 3 of 9")
        );
        let newer = list.ask("kk");
        assert!(
            !list.set_late_section(id, hits(&["z"])),
            "an older query's hits"
        );
        assert!(list.set_late_section(
            newer,
            Section {
                title: String::new(),
                rows: Vec::new()
            }
        ));
        assert!(
            list.late_section().is_none(),
            "no title, no rows: no section"
        );
    }

    /// Issue 32 item 1: Enter takes the row on show, in any section, and waits only for
    /// what could still come above it.
    #[test]
    fn enter_takes_the_highlighted_row_once_nothing_can_come_above_it() {
        let mut list: ResultsList<Row> = ResultsList::new();
        let id = list.ask("q");
        list.expect_late_section(id);
        assert_eq!(list.enter_action(), EnterAction::Wait, "nothing answered");
        assert!(list.set_partial_page(id, page(&[], 0)));
        assert_eq!(
            list.enter_action(),
            EnterAction::Wait,
            "only part of the page"
        );
        assert!(!list.hide_older_rows(id), "a partial page is no older rows");
        assert!(list.set_page(id, page(&[], 0)));
        assert_eq!(
            list.enter_action(),
            EnterAction::Wait,
            "no row on show and hits to come"
        );
        let hits = Section {
            title: "elsewhere".into(),
            rows: vec![Row("h")],
        };
        assert!(list.set_late_section(id, hits));
        assert_eq!(list.enter_action(), EnterAction::Take);
        assert_eq!(selected(&list), Some("h"));
        // A page with rows needs no hits: they would come after them.
        let id = list.ask("qq");
        list.expect_late_section(id);
        assert!(list.set_page(id, page(&["a"], 1)));
        assert_eq!(list.enter_action(), EnterAction::Take);
        // The hits of an older query are no answer to a newer one.
        let id = list.ask("qqq");
        list.expect_late_section(id);
        assert!(list.set_page(id, page(&[], 0)));
        assert_eq!(selected(&list), Some("h"), "still on show");
        assert_eq!(list.enter_action(), EnterAction::Wait);
        let none = Section {
            title: String::new(),
            rows: Vec::new(),
        };
        assert!(list.set_late_section(id, none));
        // Nothing at all: Enter sends the draft as typed.
        assert_eq!(selected(&list), None);
        assert_eq!(list.enter_action(), EnterAction::AsTyped);
        // A row moved to on a partial page stays selected when the whole page comes.
        let id = list.ask("r");
        assert!(list.set_partial_page(id, page(&["a", "b"], 2)));
        list.move_down();
        assert!(list.set_page(id, page(&["x", "a", "b"], 3)));
        assert_eq!(selected(&list), Some("b"));
    }

    #[test]
    fn the_preview_is_asked_once_per_selected_row() {
        let mut list = ResultsList::new();
        let id = list.ask("");
        assert_eq!(list.want_preview(), None, "nothing selected");
        list.set_page(id, page(&["a", "b"], 2));
        assert_eq!(list.want_preview().as_deref(), Some("a"));
        assert_eq!(list.want_preview(), None, "asked already");
        list.move_down();
        assert_eq!(list.want_preview().as_deref(), Some("b"));
        list.forget_preview();
        assert_eq!(list.want_preview().as_deref(), Some("b"));
    }
}
