//! The `/resume` session picker: the widget crate's [`Picker`] over every session, this
//! project's first (the `@` popup's groups) — the filter is its editor, the rows and their matching, paging, conversation hits and preview
//! are the `@` popup's own results list — listed off the UI thread through one request slot,
//! Enter to open (waiting for the newest filter's answer like the popup), Esc to close. A
//! session another window writes to is marked `(in another window)`: it opens read-only.

use std::collections::HashSet;

use ratatui::style::{Color, Modifier, Style};
use tokio_util::sync::CancellationToken;

use crate::tui::composer::candidates::{RowSources, list_ordered};
use crate::tui::composer::listed_page::ListedPage;
use crate::tui::composer::session_items::{
    DisplayZone, OLDER_ROWS_GRACE, OriginOf, composer_config, results_page,
};
use crate::tui::event::{AppEvent, AppEventSender};
use crate::tui::request_slot::{Policy, RequestSlot};
use crate::tui::search::conversation_hits::{ConversationHit, offered};
use dsh_reference::{ErrorCode, ListingScope, ReferenceError, SessionReferences};
use dsh_store::SessionStore;
use ratatui_mention::{
    KeyMap, MentionItem, MentionStyles, Picker, PickerOutcome, PickerView, PopupLabels,
    ResultsPage, Section,
};

/// The note on a row whose session another window writes to.
pub const BUSY_NOTE: &str = "(in another window)";

/// Rows of a picker narrower than 100 columns show a preview below them from this many rows.
const PREVIEW_BELOW_MIN_HEIGHT: u16 = 30;

/// A listing of the picker answered.
#[derive(Debug)]
pub enum PickerEvent {
    /// Rows for filter `query_id` (`query` as asked), of listing `ticket`; `refresh`: they
    /// replace the rows on show for it (a pin changed), the selection kept.
    Listed {
        ticket: u64,
        query_id: u64,
        query: String,
        refresh: bool,
        result: Result<ListedPage, ReferenceError>,
        /// The sessions of the page another window writes to.
        busy: HashSet<String>,
    },
}

/// The open `/resume` picker.
pub struct ResumePicker {
    pub picker: Picker,
    /// The session open in the app, marked `(open)`.
    current: String,
    /// Its cwd: the sessions there are listed first (the `@` popup's groups).
    project: Option<String>,
    zone: DisplayZone,
    slot: RequestSlot<u64>,
    /// What rows show beside a session (the `@` popup's, shared).
    pub sources: RowSources,
    /// The dsh store, asked which sessions of a page another window writes to.
    pub store: Option<SessionStore>,
    /// The sessions of the newest page another window writes to, marked.
    busy: HashSet<String>,
}

impl ResumePicker {
    /// A picker over every session, the open one being `current` in `project` (its
    /// sessions are listed first); returns it with its first query (the empty filter).
    pub fn open(
        (current, project): (String, Option<String>),
        zone: DisplayZone,
        keys: KeyMap,
    ) -> (ResumePicker, PickerOutcome) {
        // Enter waits as long as in the `@` popup; older rows show as long.
        let config = composer_config(0);
        let mut picker = Picker::new(keys)
            .with_preview(true)
            .with_timers(config.answer_wait(), OLDER_ROWS_GRACE);
        let first = picker.open();
        let resume = ResumePicker {
            picker,
            current,
            project,
            zone,
            slot: RequestSlot::new(Policy::Replace),
            sources: RowSources::default(),
            store: None,
            busy: HashSet::new(),
        };
        (resume, first)
    }

    /// Lists every session matching `query` for filter `query_id` (`limit`: more rows of
    /// the answered one; `refresh`: again, to replace the rows on show) off the UI thread;
    /// the previous listing is cancelled.
    pub fn list(
        &mut self,
        refs: SessionReferences,
        query_id: u64,
        query: String,
        limit: Option<usize>,
        refresh: bool,
        tx: &AppEventSender,
    ) {
        let Some(ticket) = self.slot.request(query_id) else {
            return;
        };
        let tx = tx.clone();
        let sources = self.sources.clone();
        let scope = ListingScope::Project(self.project.clone());
        let store = self.store.clone();
        tokio::spawn(async move {
            let result = list_ordered(&refs, &scope, &query, limit, &sources, &ticket.cancel).await;
            if let Err(e) = &result
                && e.code == ErrorCode::Cancelled
            {
                return;
            }
            let busy = match (&result, store) {
                (Ok(page), Some(store)) => {
                    let ids = page_ids(page);
                    tokio::task::spawn_blocking(move || busy_of(&store, ids))
                        .await
                        .unwrap_or_default()
                }
                _ => HashSet::new(),
            };
            tx.send(AppEvent::Picker(PickerEvent::Listed {
                ticket: ticket.id,
                query_id,
                query,
                refresh,
                result,
                busy,
            }));
        });
    }

    /// Shows a listing's rows (badges from `origin_of`); returns what an Enter that waited
    /// for them did.
    pub fn on_event(&mut self, event: PickerEvent, origin_of: &OriginOf<'_>) -> Vec<PickerOutcome> {
        let PickerEvent::Listed {
            ticket,
            query_id,
            query,
            refresh,
            result,
            busy,
        } = event;
        if self.slot.finish(ticket).0.is_none() {
            return Vec::new();
        }
        self.busy = busy;
        if refresh {
            if let Ok(page) = result {
                let page = self.rows_of(&page, &query, origin_of);
                self.picker.refresh_page(query_id, page);
            }
            return Vec::new();
        }
        self.show(query_id, &query, result, origin_of)
    }

    /// Shows the rows answering filter `query_id` (`query` as asked), marking the open
    /// session; an answer to any other filter is dropped.
    pub fn show(
        &mut self,
        query_id: u64,
        query: &str,
        result: Result<ListedPage, ReferenceError>,
        origin_of: &OriginOf<'_>,
    ) -> Vec<PickerOutcome> {
        match result {
            Ok(page) => {
                let page = self.rows_of(&page, query, origin_of);
                self.picker.set_page(query_id, page)
            }
            Err(e) => self
                .picker
                .set_failed(query_id, format!("{}: {}", e.code.as_str(), e.message)),
        }
    }

    /// `listed` as the picker's page, the open session marked.
    fn rows_of(&self, listed: &ListedPage, query: &str, origin_of: &OriginOf<'_>) -> ResultsPage {
        let page = results_page(listed, query, "", origin_of);
        ResultsPage {
            rows: self.mark_open(page.rows),
            after: page
                .after
                .into_iter()
                .map(|o| Section {
                    rows: self.mark_open(o.rows),
                    ..o
                })
                .collect(),
            ..page
        }
    }

    /// Shows conversation `hits` for filter `query_id` under `title`; returns what an Enter
    /// that waited for them did.
    pub fn set_hits(
        &mut self,
        query_id: u64,
        title: &str,
        hits: &[ConversationHit],
    ) -> Vec<PickerOutcome> {
        let section = offered(title, hits, "", self.zone, true);
        let section = Section {
            rows: self.mark_open(section.rows),
            ..section
        };
        self.picker.set_late_section(query_id, section)
    }

    /// The session open in the app.
    pub fn current(&self) -> &str {
        &self.current
    }

    /// The picker drawn the app's way.
    pub fn view() -> PickerView<'static> {
        PickerView::new(" Resume a session ")
            .placeholder("type to filter by title, id, cwd or what was said")
            .labels(&*LABELS)
            .styles(styles())
            .preview_below_min_height(PREVIEW_BELOW_MIN_HEIGHT)
    }

    /// Cancels the running listing (the picker closes).
    pub fn cancel(&mut self) {
        self.slot.cancel();
    }

    /// The running listing's cancel handle (tests watch it).
    pub fn listing(&self) -> Option<&CancellationToken> {
        self.slot.running_cancel()
    }

    /// `rows` with the open session, and those another window writes to, marked.
    fn mark_open(&self, rows: Vec<MentionItem>) -> Vec<MentionItem> {
        rows.into_iter()
            .map(|row| {
                if row.key() == self.current {
                    row.with_note("(open)")
                } else if self.busy.contains(row.key()) {
                    row.with_note(BUSY_NOTE)
                } else {
                    row
                }
            })
            .collect()
    }
}

/// The sessions a listed page shows.
fn page_ids(page: &ListedPage) -> Vec<String> {
    let page = &page.page;
    page.rows
        .iter()
        .chain(page.closest.iter().map(|c| &c.candidate))
        .map(|c| c.session_id.clone())
        .collect()
}

/// Which of `ids` another writer holds (a session that cannot be asked is not marked).
fn busy_of(store: &SessionStore, ids: Vec<String>) -> HashSet<String> {
    ids.into_iter()
        .filter(|id| store.writer_busy(id).unwrap_or(false))
        .collect()
}

/// The picker's texts.
static LABELS: std::sync::LazyLock<PopupLabels> = std::sync::LazyLock::new(|| {
    PopupLabels::default()
        .with_type_to_filter("loading sessions…")
        .with_searching("searching…")
        .with_failed("could not list sessions")
        .with_no_match("no matching sessions")
        .with_nothing_yet("no sessions yet")
        .with_still_searching("still searching — Enter again opens the selected one")
        .with_preview_pending("estimating the reference size…")
});

/// The picker's look: cyan section titles, magenta origin badges, failures in red.
fn styles() -> MentionStyles {
    MentionStyles::default()
        .with_section_title(Style::new().fg(Color::Cyan).add_modifier(Modifier::ITALIC))
        .with_kind(Style::new().fg(Color::Magenta))
        .with_failed(Style::new().fg(Color::Red))
}

#[cfg(test)]
mod snapshots;
