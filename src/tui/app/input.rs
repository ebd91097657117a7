//! Terminal input and what the widgets made of it: app keys first (one table, `keys.rs`),
//! then the `/resume` picker when it is open, else the composer; their outcomes start
//! listings, searches, previews and submissions. Keys and pastes wait their turn while a
//! switch is under way (`held_input.rs`). The mouse: over the `/resume` picker or the `@`
//! popup it moves, selects and picks rows (the widgets' own handling); anywhere else it is
//! the transcript's.

use std::time::Duration;

use crossterm::event::{
    Event as TermEvent, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent, MouseEventKind,
};
use tokio::time::Instant;

use super::App;
use super::held_input::{HeldInput, Waits};
use super::keys::{AppAction, classify_app_key};
use crate::agent::AgentStatus;
use crate::tui::composer::candidates::ListingContext;
use crate::tui::composer::draft_limits::DraftLimits;
use crate::tui::composer::file_section::{DIR_KEY, FILE_KEY, file_preview};
use crate::tui::composer::session_items::results_page;
use crate::tui::composer::submit_flow::{SubmitContext, Submitted};
use crate::tui::event::AppEvent;
use crate::tui::preview::PreviewRequest;
use crate::tui::search::conversation_hits::{
    HitsQuery, HitsTarget, NO_EXCERPT, offered, with_popup_keys,
};
use crate::tui::search::indexing::SearchIndexing;
use crate::tui::session::read_only::ReadOnlyKey;
use crate::tui::transcript::NoticeKind;
use ratatui_mention::{Outcome, PickerOutcome};

#[cfg(test)]
pub(super) use crate::tui::composer::session_items::OLDER_ROWS_GRACE;
/// Lines per mouse-wheel notch.
const WHEEL_LINES: isize = 3;

/// How long "Ctrl+C again to quit" waits for the second press.
pub(super) const QUIT_CONFIRM: Duration = Duration::from_secs(2);

impl App {
    /// Handle one terminal event (keys and pastes wait their turn while a switch is under
    /// way, see [`held_input`](super::held_input)).
    pub fn handle_terminal_event(&mut self, event: TermEvent) {
        if let Some(event) = self.hold(event) {
            self.handle_input(event);
        }
    }

    /// What makes input wait: the picker's Enter waits for an answer, or a switch runs.
    fn waits(&self) -> Waits {
        Waits {
            switch: self.switcher.is_pending(),
            picker: self.picker.as_ref().is_some_and(|p| p.picker.is_waiting()),
        }
    }

    /// `event` back when it is to be handled now; else it is held.
    fn hold(&mut self, event: TermEvent) -> Option<TermEvent> {
        if !HeldInput::can_wait(&event) {
            return Some(event);
        }
        self.release_held();
        let waits = self.waits();
        self.held.hold(event, waits)
    }

    /// Applies the held inputs in order while nothing makes them wait (all of them once
    /// they have waited long enough).
    pub(super) fn release_held(&mut self) {
        let overdue = self.held.overdue();
        while let Some(event) = self.held.release(overdue, self.waits()) {
            self.handle_input(event);
        }
    }

    /// Handle one terminal event now.
    pub(super) fn handle_input(&mut self, event: TermEvent) {
        match event {
            TermEvent::Key(key) => {
                if key.kind == KeyEventKind::Release {
                    return;
                }
                self.handle_key(key);
                self.look_up_chip_cwd();
            }
            // The rows a click would hit are not on screen in a window too small.
            TermEvent::Mouse(_) if self.frames.too_small => {}
            // Nothing can be written while a read-only session is shown: the hint says so.
            TermEvent::Paste(_) if let Some(view) = self.read_only.as_mut() => {
                view.typed = true;
                self.frames.dirty = true;
            }
            TermEvent::Paste(text) => {
                if let Some(picker) = self.picker.as_mut() {
                    let outcome = picker.picker.handle_paste(&text);
                    self.act_on_picker(vec![outcome]);
                } else {
                    let outcome = self.composer.input.handle_paste(&text);
                    self.handle_outcome(outcome);
                }
                self.look_up_chip_cwd();
                self.frames.dirty = true;
            }
            TermEvent::Mouse(mouse) => self.handle_mouse(mouse),
            // The next frame is laid out from its area; previews follow after it.
            TermEvent::Resize(_, _) => self.frames.dirty = true,
            TermEvent::FocusGained | TermEvent::FocusLost => {}
        }
    }

    fn handle_key(&mut self, key: KeyEvent) {
        // Esc and a key pressed quickly reach a terminal without the kitty protocol as one
        // Alt chord: with a popup open, one the app does not bind is both keys.
        if let Some(after) = self.esc_then(&key) {
            self.handle_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
            self.handle_key(after);
            return;
        }
        self.frames.dirty = true;
        let ctrl_c =
            key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL);
        // A window too small to show the app takes no Enter or Tab: nothing is sent, picked
        // or inserted unseen (typing goes on; it shows once the window is bigger).
        if self.frames.too_small && matches!(key.code, KeyCode::Enter | KeyCode::Tab) {
            return;
        }
        if classify_app_key(&key) == Some(AppAction::ToggleMouse) {
            self.toggle_mouse();
            return;
        }
        if self.read_only.is_some() {
            self.read_only_key(key);
            return;
        }
        if classify_app_key(&key) == Some(AppAction::TogglePin)
            && (self.picker.is_some() || self.composer.input.popup_active())
        {
            self.toggle_pin();
            return;
        }
        if classify_app_key(&key) == Some(AppAction::InsertExcerpt)
            && self.picker.is_none()
            && self.composer.input.popup_active()
        {
            self.insert_excerpt();
            return;
        }
        if let Some(picker) = self.picker.as_mut() {
            let outcome = match picker.picker.handle_key(key) {
                // Ctrl+C closes the picker too (the widget leaves it to the host).
                PickerOutcome::Ignored if ctrl_c => PickerOutcome::Closed,
                outcome => outcome,
            };
            self.act_on_picker(vec![outcome]);
            self.request_preview();
            return;
        }
        // App keys first, except those the widget needs in context: Ctrl+D deletes on a
        // draft, Esc closes an open popup, and PgUp/PgDn page through it.
        let popup = self.composer.input.popup_active();
        let collapsed = self.composer.input.collapsed_at_caret();
        match classify_app_key(&key) {
            // Ctrl+C with a popup open closes it (the draft stays), like Esc.
            Some(AppAction::Interrupt) if popup => {
                let esc = KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE);
                let outcome = self.composer.input.handle_key(esc);
                self.handle_outcome(outcome);
            }
            Some(AppAction::PageUp) if !popup => self.chat.page_up(),
            Some(AppAction::PageDown) if !popup => self.chat.page_down(),
            Some(AppAction::ScrollToBottom) => self.chat.scroll_to_bottom(),
            Some(AppAction::ToggleSnapshots) => self.chat.toggle_snapshots(),
            Some(AppAction::ToggleReasoning) => self.chat.toggle_reasoning(),
            Some(AppAction::ToggleExpand) if !collapsed => self.chat.toggle_expand(),
            Some(AppAction::ReinsertReference) => self.reinsert_reference(),
            Some(AppAction::OpenCitation) => self.open_citation(),
            Some(AppAction::Interrupt) => self.interrupt(),
            Some(AppAction::QuitIfEmpty) if self.composer.input.is_empty() => {
                self.frames.should_quit = true;
            }
            Some(AppAction::Escape) if !popup => self.escape(),
            Some(AppAction::ToggleMouse) => self.toggle_mouse(),
            // Ctrl+G beside a collapsed paste opens it (the widget's key).
            Some(
                AppAction::QuitIfEmpty
                | AppAction::Escape
                | AppAction::PageUp
                | AppAction::PageDown
                | AppAction::ToggleExpand
                | AppAction::TogglePin
                | AppAction::InsertExcerpt,
            )
            | None => {
                // Up beginning a walk: what other windows sent meanwhile comes first.
                if key.code == KeyCode::Up && self.composer.input.is_empty() && !popup {
                    self.composer.refresh_history(&mut self.chat);
                }
                let outcome = self.composer.input.handle_key(key);
                self.handle_outcome(outcome);
            }
        }
        self.request_preview();
    }

    /// The key after an Esc, when `key` is an Alt chord nobody binds that came while the
    /// `@` popup (or `/resume`) is open: terminals without the kitty keyboard protocol send
    /// Esc followed quickly by a key as the bytes of that chord (docs/composer.md).
    fn esc_then(&self, key: &KeyEvent) -> Option<KeyEvent> {
        let open = self.picker.is_some() || self.composer.input.popup_active();
        if !open || self.read_only.is_some() || !key.modifiers.contains(KeyModifiers::ALT) {
            return None;
        }
        // AltGr arrives as Ctrl+Alt on some platforms: its characters are typed.
        let alt_gr = key.modifiers.contains(KeyModifiers::CONTROL)
            && matches!(key.code, KeyCode::Char(c) if !c.is_ascii_alphanumeric());
        let bound = alt_gr
            || classify_app_key(key).is_some()
            || self
                .composer
                .input
                .config()
                .key_map()
                .classify(key)
                .is_some();
        if bound {
            return None;
        }
        let mut after = *key;
        after.modifiers.remove(KeyModifiers::ALT);
        Some(after)
    }

    /// A key while a read-only session is shown: the view's, and going back from it.
    fn read_only_key(&mut self, key: KeyEvent) {
        let redact_labels = self.redact_labels();
        let Some(view) = self.read_only.as_mut() else {
            return;
        };
        match view.handle_key(key, redact_labels) {
            ReadOnlyKey::Stay => {}
            ReadOnlyKey::Mention(mention) => {
                self.read_only = None;
                let outcome = self.composer.input.insert_mention(&mention);
                self.handle_outcome(outcome);
                self.look_up_chip_cwd();
            }
            ReadOnlyKey::Close => self.read_only = None,
        }
    }

    /// Mouse capture off (the terminal selects text again) or back on; a notice says so.
    fn toggle_mouse(&mut self) {
        let on = match self.frames.mouse.toggle() {
            Ok(on) => on,
            Err(e) => {
                self.chat
                    .push_notice(NoticeKind::Error, format!("mouse capture not changed: {e}"));
                return;
            }
        };
        let text = if on {
            "mouse on: the wheel scrolls, a click selects a row, a double-click picks it; Shift+drag selects text (Alt+M: off)"
        } else {
            "mouse off: drag to select and copy text (Alt+M: on)"
        };
        self.chat.push_notice(NoticeKind::Info, text.to_owned());
    }

    /// One mouse event: the picker's when it is open, else the `@` popup's when it is
    /// over it, else the transcript's.
    fn handle_mouse(&mut self, mouse: MouseEvent) {
        let now = tokio::time::Instant::now().into_std();
        if let Some(picker) = self.picker.as_mut() {
            // The picker covers the transcript: the mouse is its own or nobody's.
            let outcome = picker.picker.handle_mouse(&mouse, now);
            self.act_on_picker(vec![outcome]);
            self.request_preview();
            return;
        }
        let outcome = if self.read_only.is_some() {
            ratatui_mention::Outcome::Ignored
        } else {
            self.composer.input.handle_mouse(&mouse, now)
        };
        if outcome.is_consumed() {
            self.handle_outcome(outcome);
            self.request_preview();
            self.look_up_chip_cwd();
            return;
        }
        self.transcript_mouse(mouse);
    }

    /// A mouse event the pickers did not take: the wheel scrolls the transcript on show
    /// (a read-only session's while one is shown).
    fn transcript_mouse(&mut self, mouse: MouseEvent) {
        let chat = match self.read_only.as_mut() {
            Some(view) => &mut view.chat,
            None => &mut self.chat,
        };
        match mouse.kind {
            MouseEventKind::ScrollUp => {
                chat.scroll_by(WHEEL_LINES);
                self.frames.dirty = true;
            }
            MouseEventKind::ScrollDown => {
                chat.scroll_by(-WHEEL_LINES);
                self.frames.dirty = true;
            }
            _ => {}
        }
    }

    /// Acts on what the composer did.
    pub(super) fn handle_outcome(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Submit(text) => {
                let (flow, cx) = self.submit_parts();
                match flow.submit(text, cx) {
                    Submitted::Command(line) => self.run_command(&line),
                    Submitted::Started => self.schedule_tick(),
                    Submitted::Ignored | Submitted::Refused => {}
                }
            }
            Outcome::Query { id, text, .. } => {
                self.search_conversations(HitsTarget::Popup, id, &text);
                self.query_candidates(id, &text, None);
            }
            Outcome::More {
                id, text, limit, ..
            } => self.query_candidates(id, &text, Some(limit)),
            // Redraws (marked below), insertions, and keys nobody binds (the app's own
            // were classified before the widget saw them).
            _ => {}
        }
        self.frames.dirty = true;
    }

    /// Acts on what an answer (or the end of a wait) did: an Enter or Tab that waited for
    /// it, then the inputs held meanwhile.
    pub(super) fn act_on(&mut self, outcomes: Vec<Outcome>) {
        if outcomes.is_empty() {
            return;
        }
        for outcome in outcomes {
            self.handle_outcome(outcome);
        }
        self.look_up_chip_cwd();
    }

    /// Acts on what the `/resume` picker did.
    pub(super) fn act_on_picker(&mut self, outcomes: Vec<PickerOutcome>) {
        for outcome in outcomes {
            match outcome {
                PickerOutcome::Query { id, text, .. } => {
                    self.search_conversations(HitsTarget::Picker, id, &text);
                    self.list_for_picker(id, text, None);
                }
                PickerOutcome::More {
                    id, text, limit, ..
                } => {
                    self.list_for_picker(id, text, Some(limit));
                }
                PickerOutcome::Picked(id) => {
                    self.close_picker();
                    self.resume_session(&id);
                }
                PickerOutcome::Closed => self.close_picker(),
                _ => {}
            }
        }
        self.frames.dirty = true;
    }

    /// Esc with the popup closed: cancel a running `prepare`, else the running turn.
    fn escape(&mut self) {
        if self.submit_flow.is_preparing() {
            self.cancel_prepare();
        } else if self.session.status == AgentStatus::Running {
            self.session.agent.cancel();
        }
    }

    /// Ctrl+C: cancel what runs, else clear the draft (Up brings it back), else quit —
    /// on an empty draft only when pressed twice within [`QUIT_CONFIRM`].
    fn interrupt(&mut self) {
        if self.submit_flow.is_preparing() {
            self.cancel_prepare();
        } else if self.session.status == AgentStatus::Running {
            self.session.agent.cancel();
        } else if self.composer.input.clear_draft_to_history() {
            self.submit_flow.forget_unknown_command();
        } else if self
            .ticks
            .quit_armed_until
            .is_some_and(|until| Instant::now() < until)
        {
            self.frames.should_quit = true;
        } else {
            self.ticks.quit_armed_until = Some(Instant::now() + QUIT_CONFIRM);
        }
    }

    /// Stops a running `prepare` and gives the text back.
    pub(super) fn cancel_prepare(&mut self) {
        let (flow, mut cx) = self.submit_parts();
        flow.cancel(&mut cx);
    }

    /// The submit flow and what it works on, borrowed side by side.
    pub(super) fn submit_parts(
        &mut self,
    ) -> (
        &mut crate::tui::composer::submit_flow::SubmitFlow,
        SubmitContext<'_>,
    ) {
        let agent_ref = self.session.agent_ref();
        (
            &mut self.submit_flow,
            SubmitContext {
                input: &mut self.composer.input,
                chat: &mut self.chat,
                agent: &self.session.agent,
                refs: self.refs.as_ref(),
                agent_ref,
                tx: &self.tx,
                usage: &self.candidates.sources.usage,
            },
        )
    }

    /// Alt+.: pins or unpins the session selected in `/resume` or the `@` popup, and lists
    /// its query again so the order and the row show it (docs/tui-app.md: pins).
    fn toggle_pin(&mut self) {
        let now = u64::try_from(crate::tui::composer::listed_page::now_ms()).unwrap_or(0);
        if let Some(picker) = self.picker.as_mut() {
            let results = picker.picker.results();
            let Some(id) = results.selected().map(|r| r.key().to_owned()) else {
                return;
            };
            let (query_id, query) = (results.query_id(), results.query().to_owned());
            self.candidates.sources.usage.toggle_pin(&id, now);
            let refs = self.listing_service();
            if let Some(picker) = self.picker.as_mut() {
                picker.list(refs, query_id, query, None, true, &self.tx);
            }
            return;
        }
        let Some(results) = self.composer.input.results() else {
            return;
        };
        let Some(id) = results.selected().map(|r| r.key().to_owned()) else {
            return;
        };
        let (query_id, query) = (results.query_id(), results.query().to_owned());
        self.candidates.sources.usage.toggle_pin(&id, now);
        let cx = ListingContext {
            refs: self.refs.as_ref(),
            store: &self.store,
            agent: self.session.agent_ref(),
            tx: &self.tx,
        };
        self.candidates.refresh(&cx, query_id, query);
    }

    /// Alt+E: the selected row of the `@` popup is a conversation hit (of any tool's
    /// session): its token becomes an excerpt mention of the exchange that matched (the
    /// matched message and `[references] excerpt_context` messages each side,
    /// docs/references.md: excerpt references). On a hit that has none, with the draft at
    /// its limit, or on another row, a notice says why nothing was inserted.
    fn insert_excerpt(&mut self) {
        let Some(refs) = self.refs.clone() else {
            return;
        };
        let Some(selected) = self
            .composer
            .input
            .results()
            .and_then(|r| r.selected())
            .map(|r| r.key().to_owned())
        else {
            return;
        };
        let hit = self
            .search_hits_shown()
            .iter()
            .find(|h| h.candidate.session_id == selected)
            .map(|h| {
                (
                    h.candidate.session_id.clone(),
                    h.seq,
                    h.candidate.label.clone(),
                )
            });
        let draft = self.composer.input.draft();
        let why_not = match &hit {
            None => Some("Alt+E inserts an excerpt from an \"in conversations\" row".to_owned()),
            Some((_, None, _)) => Some(NO_EXCERPT.to_owned()),
            Some(_) => self.draft_limits(&draft).excerpt_blocked(),
        };
        if let Some(why) = why_not {
            self.chat
                .push_notice(NoticeKind::Info, format!("no excerpt inserted: {why}"));
            return;
        }
        let Some((id, Some(seq), title)) = hit else {
            return;
        };
        let label = dsh_reference::mention_label(&title, refs.config().redact_secrets);
        let text = refs.excerpt_mention(&id, seq, &label);
        let outcome = self.composer.input.replace_token(&text);
        self.handle_outcome(outcome);
    }

    /// What `draft` references already, against the limits of one message (the sessions
    /// only: the files are counted off the UI thread with the listing).
    pub(super) fn draft_limits(&self, draft: &str) -> DraftLimits {
        match self.refs.as_ref() {
            Some(refs) => {
                let config = refs.config();
                DraftLimits::of_sessions(draft, config.max_references, config.max_files)
            }
            None => DraftLimits::default(),
        }
    }

    /// The conversation hits on show in the `@` popup.
    fn search_hits_shown(&self) -> &[crate::tui::search::conversation_hits::ConversationHit] {
        &self.hits.popup_shown
    }

    /// Lists candidates for the `@` popup's query `query_id`.
    fn query_candidates(&mut self, query_id: u64, query: &str, limit: Option<usize>) {
        // The popup is in use: index what other processes wrote meanwhile (coalesced).
        if let Some(search) = &self.search.indexing {
            search.recheck();
        }
        let cx = ListingContext {
            refs: self.refs.as_ref(),
            store: &self.store,
            agent: self.session.agent_ref(),
            tx: &self.tx,
        };
        let draft = (self.composer.input.draft(), self.composer.input.caret());
        // No reference service mounted: `@` offers nothing, at once.
        if let Some(empty) = self
            .candidates
            .query(&cx, query_id, query.to_owned(), limit, draft)
        {
            let page = results_page(&empty, query, "", &|_| dsh_foreign::Origin::Dsh);
            let outcomes = self.composer.input.set_page(query_id, page);
            self.act_on(outcomes);
        }
    }

    /// Lists every session for `/resume`'s filter `query_id`.
    fn list_for_picker(&mut self, query_id: u64, query: String, limit: Option<usize>) {
        let refs = self.listing_service();
        if let Some(picker) = self.picker.as_mut() {
            picker.list(refs, query_id, query, limit, false, &self.tx);
        }
    }

    /// Searches conversations for `query` of `target`'s query `query_id` (see
    /// [`ConversationHits::search`](crate::tui::search::conversation_hits::ConversationHits::search)).
    pub(super) fn search_conversations(&mut self, target: HitsTarget, query_id: u64, query: &str) {
        let index = self.search.indexing.as_ref().map(SearchIndexing::index);
        let exclude = (target == HitsTarget::Popup).then(|| self.session.id.clone());
        let q = HitsQuery {
            target,
            query_id,
            query: query.to_owned(),
            exclude,
        };
        if let Some(now) = self.hits.search(index, q, &self.tx) {
            self.show_hits(target, query_id, &now.title, &[]);
        } else if self.hits.running_ticket(target).is_some() {
            // An Enter pressed while the listing shows no row waits for these hits too.
            match target {
                HitsTarget::Popup => self.composer.input.expect_late_section(query_id),
                HitsTarget::Picker => {
                    if let Some(picker) = self.picker.as_mut() {
                        picker.picker.expect_late_section(query_id);
                    }
                }
            }
        }
    }

    /// Whether the mentions the pickers insert have secrets in their labels redacted
    /// (`[references] redact_secrets`, on without a reference service).
    pub(super) fn redact_labels(&self) -> bool {
        self.refs
            .as_ref()
            .is_none_or(|refs| refs.config().redact_secrets)
    }

    /// Shows `hits` (under `title`) in `target`'s section for query `query_id`.
    pub(super) fn show_hits(
        &mut self,
        target: HitsTarget,
        query_id: u64,
        title: &str,
        hits: &[crate::tui::search::conversation_hits::ConversationHit],
    ) {
        match target {
            HitsTarget::Popup => {
                self.hits.popup_shown = hits.to_vec();
                let draft = self.composer.input.draft();
                let section = offered(
                    title,
                    hits,
                    &draft,
                    self.composer.zone,
                    self.redact_labels(),
                );
                let section = with_popup_keys(section, hits, &self.draft_limits(&draft));
                let outcomes = self.composer.input.set_late_section(query_id, section);
                self.act_on(outcomes);
            }
            HitsTarget::Picker => {
                let Some(picker) = self.picker.as_mut() else {
                    return;
                };
                let outcomes = picker.set_hits(query_id, title, hits);
                self.act_on_picker(outcomes);
            }
        }
    }

    /// The preview of a file section row `key`: what a mention of the file would attach
    /// (`estimate_file`, off the UI thread), or for a directory what Tab does.
    fn preview_file(&self, key: &str) {
        let (Some(refs), Some(cwd)) = (self.refs.clone(), self.session.cwd.clone()) else {
            return;
        };
        if let Some(dir) = key.strip_prefix(DIR_KEY) {
            let preview = ratatui_mention::ItemPreview {
                key: key.to_owned(),
                lines: vec![ratatui::text::Line::from(format!(
                    "directory {dir}/ · Tab or Enter lists its entries"
                ))],
                body: Vec::new(),
            };
            self.tx.send(AppEvent::FilePreview(preview));
            return;
        }
        let Some(path) = key.strip_prefix(FILE_KEY) else {
            return;
        };
        let (key, path, tx) = (key.to_owned(), path.to_owned(), self.tx.clone());
        tokio::spawn(async move {
            let cancel = tokio_util::sync::CancellationToken::new();
            let estimate = refs.estimate_file(&cwd, &path, &cancel).await;
            tx.send(AppEvent::FilePreview(file_preview(&key, &path, estimate)));
        });
    }

    /// Starts the estimate a visible preview needs (see [`Previews`](crate::tui::preview::Previews)).
    pub(super) fn request_preview(&mut self) {
        let wanted = match self.picker.as_mut() {
            Some(picker) => {
                let key = picker.picker.want_preview();
                key.and_then(|key| {
                    let row = picker.picker.results().selected()?;
                    (row.key() == key).then(|| PreviewRequest::for_row(&key, row.label()))
                })
            }
            None => self.composer.input.want_preview().and_then(|key| {
                if key.starts_with(FILE_KEY) || key.starts_with(DIR_KEY) {
                    self.preview_file(&key);
                    return None;
                }
                let row = self.composer.input.results()?.selected()?;
                let draft = self.composer.input.draft();
                // The plan the session would get among the draft's references.
                let room = self.session.agent.plan_room(&draft);
                (row.key() == key).then(|| {
                    PreviewRequest::for_row(&key, row.label()).with_plan(
                        self.session.agent_ref(),
                        &draft,
                        room,
                    )
                })
            }),
        };
        if let Some(request) = wanted {
            let refs = self.listing_service();
            self.previews.request(request, &refs, &self.tx);
        }
    }

    /// Looks up, off the UI thread, the cwd of the session the chip at the caret names when
    /// no listing has shown it yet (a recalled or pasted mention); the hint then shows it.
    pub(super) fn look_up_chip_cwd(&mut self) {
        let Some(mention) = self.composer.input.mention_at_caret() else {
            return;
        };
        let sessions = self.session_query();
        self.composer.chips.look_up(&mention, sessions, &self.tx);
    }
}
