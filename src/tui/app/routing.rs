//! Bus events to the part they concern, and what the app does on its own account: slash
//! commands, opening and leaving the `/resume` picker, switching sessions, agent events.

use std::sync::Arc;

use super::App;
use super::render::help_sections;
use crate::agent::submit::{Submission, SubmitError};
use crate::agent::{AgentEvent, AgentStatus, LogFacts};
use crate::tui::commands::{SlashCommand, parse_command};
use crate::tui::composer::candidates::{AnswerContext, CandidatesEvent};
use crate::tui::event::AppEvent;
use crate::tui::picker::{PickerEvent, ResumePicker};
use crate::tui::preview::PreviewEvent;
use crate::tui::search::conversation_hits::{HitsEvent, HitsTarget, section_title};
use crate::tui::search::indexing::{IndexingDone, IndexingEvent};
use crate::tui::session::read_only::{Focus, ReadOnlyEvent, ReadOnlyView};
use crate::tui::session::resolve::ResumeTarget;
use crate::tui::session::transcript_load::{LoadedTranscript, TranscriptDone, TranscriptEvent};
use crate::tui::session::{OpenSession, SessionEvent};
use crate::tui::transcript::NoticeKind;
use crate::tui::transcript::chat_view::ChatView;
use dsh_store::event::now_ms;
use dsh_store::{SessionHeader, SessionWriter, StoreError};
use term_text::visible_controls_line;

impl App {
    /// Handle one event from the bus; then the input held for what it finished.
    pub fn handle_app_event(&mut self, event: AppEvent) {
        self.route_app_event(event);
        self.release_held();
    }

    /// Each event to the part it concerns: one call per kind of event (what the app then
    /// does with a part's answer is in the `on_…` method named for it).
    fn route_app_event(&mut self, event: AppEvent) {
        match event {
            AppEvent::Redraw => {}
            AppEvent::Quit => self.frames.should_quit = true,
            AppEvent::Agent { generation, event } => self.on_agent_event(generation, event),
            AppEvent::Candidates(event) => self.on_candidates(event),
            AppEvent::Picker(event) => self.on_picker(event),
            AppEvent::Hits(event) => self.on_hits(event),
            AppEvent::Preview(event) => self.on_preview(event),
            AppEvent::FilePreview(preview) => self.composer.input.set_preview(preview),
            AppEvent::Prepared { prepare_id, result } => self.on_prepared(prepare_id, result),
            AppEvent::Session(event) => self.on_session(event),
            AppEvent::Transcript(event) => self.on_transcript(event),
            AppEvent::Chip(event) => self.composer.chips.on_event(event),
            AppEvent::SearchIndexing(event) => self.on_indexing(event),
            AppEvent::ReadOnly(event) => self.on_read_only(event),
        }
        self.frames.dirty = true;
    }

    /// The `@` popup's listing answered: the rows go in, then what waited for them.
    fn on_candidates(&mut self, event: CandidatesEvent) {
        let origin_of = self.origin_of();
        let cx = AnswerContext {
            input: &mut self.composer.input,
            chips: &mut self.composer.chips,
            chat: &mut self.chat,
            origin_of: &origin_of,
            refs: self.refs.as_ref(),
            agent: self.session.agent_ref(),
        };
        let outcomes = self.candidates.on_event(event, cx);
        self.act_on(outcomes);
        self.request_preview();
    }

    /// The `/resume` picker's listing answered (a closed picker's answer is dropped).
    fn on_picker(&mut self, event: PickerEvent) {
        let origin_of = self.origin_of();
        let outcomes = match self.picker.as_mut() {
            Some(picker) => picker.on_event(event, &origin_of),
            None => Vec::new(),
        };
        self.act_on_picker(outcomes);
        self.request_preview();
    }

    /// A conversation search answered: its section goes into its picker.
    fn on_hits(&mut self, event: HitsEvent) {
        if let Some(found) = self.hits.on_event(event, self.search.progress) {
            self.show_hits(found.target, found.query_id, &found.title, &found.hits);
            self.request_preview();
        }
    }

    /// A size estimate answered: the preview shows in the open picker and the `@` popup.
    fn on_preview(&mut self, event: PreviewEvent) {
        let refs = self.listing_service();
        // The selected row of the open picker (else the `@` popup): one found in
        // conversations carries the line that matched.
        let selected = match self.picker.as_ref() {
            Some(picker) => picker.picker.results().selected(),
            None => self.composer.input.results().and_then(|r| r.selected()),
        };
        let matched = selected.and_then(|row| Some((row.key(), row.snippet()?)));
        let preview = self.previews.on_event(event, &refs, &self.tx, matched);
        if let Some(picker) = self.picker.as_mut() {
            picker.picker.set_preview(preview.clone());
        }
        self.composer.input.set_preview(preview);
    }

    /// `prepare_submission` finished: the submit flow sends (and the input is kept in Up
    /// history) or gives the text back.
    fn on_prepared(&mut self, prepare_id: u64, result: Result<Submission, SubmitError>) {
        let (flow, mut cx) = self.submit_parts();
        if let Some((sent, typed_at_ms)) = flow.on_prepared(prepare_id, result, &mut cx) {
            self.remember_sent(&sent, typed_at_ms);
        }
    }

    /// The newest switch answered: a session opened, or `/resume X` resolved.
    fn on_session(&mut self, event: SessionEvent) {
        match self.switcher.on_event(event) {
            Some(SessionEvent::Opened { id, result, .. }) => self.on_session_opened(&id, *result),
            Some(SessionEvent::Resolved { wanted, result, .. }) => {
                self.on_resolved(&wanted, result);
            }
            None => {}
        }
    }

    /// A read of the open session's log answered.
    fn on_transcript(&mut self, event: TranscriptEvent) {
        match self.transcript.on_event(event, &mut self.chat) {
            TranscriptDone::Loaded { loaded } => {
                self.on_transcript_loaded(*loaded);
            }
            TranscriptDone::WindowShown => self.check_staleness(),
            TranscriptDone::Nothing => {}
        }
    }

    /// A read of the session shown read-only answered (dropped once it is closed).
    fn on_read_only(&mut self, event: ReadOnlyEvent) {
        if let Some(view) = self.read_only.as_mut() {
            view.on_event(event);
        }
    }

    /// The background indexing reported: the pickers' sections follow it.
    fn on_indexing(&mut self, event: IndexingEvent) {
        match self.search.on_event(event) {
            IndexingDone::Progressed => self.refresh_hits_sections(false),
            IndexingDone::Notice(notice) => self.chat.push_notice(NoticeKind::Info, notice),
            IndexingDone::Finished { error } => {
                self.refresh_hits_sections(true);
                if let Some(e) = error {
                    self.chat
                        .push_notice(NoticeKind::Error, format!("search index not updated: {e}"));
                }
            }
        }
    }

    /// The index moved on: section titles follow its progress, and once it is complete the
    /// open pickers search again (their hits came from a partial index).
    fn refresh_hits_sections(&mut self, finished: bool) {
        let title = section_title(true, self.search.progress);
        self.composer.input.set_late_title(&title);
        if let Some(picker) = self.picker.as_mut() {
            picker.picker.set_late_title(&title);
        }
        let index_opened = self.hits.take_awaiting_index();
        if !finished && !index_opened {
            return;
        }
        // Every open picker, also one whose search found nothing: it may have run before
        // the first sessions were committed.
        if let Some(results) = self.composer.input.results() {
            let (id, query) = (results.query_id(), results.query().to_owned());
            self.search_conversations(HitsTarget::Popup, id, &query);
        }
        if let Some(results) = self.picker.as_ref().map(|p| p.picker.results()) {
            let (id, query) = (results.query_id(), results.query().to_owned());
            self.search_conversations(HitsTarget::Picker, id, &query);
        }
    }

    /// After a turn: bring the open session's entry in the full-text index up to date, off
    /// the UI thread (skipped while a full update runs or before the index is open).
    fn reindex_open_session(&self) {
        let Some(index) = self.search_index() else {
            return;
        };
        if self.search.progress.is_some() {
            return;
        }
        let id = self.session.id.clone();
        tokio::task::spawn_blocking(move || {
            if let Err(e) = index.refresh_sessions(&[&id]) {
                tracing::debug!(session = %id, error = %e, "search index not updated");
            }
        });
    }

    /// An event of the agent of session generation `generation` (an older session's is
    /// dropped).
    fn on_agent_event(&mut self, generation: u64, event: AgentEvent) {
        if !self.session.is_current(generation) {
            return;
        }
        match event {
            AgentEvent::Appended(event) => {
                if let Some(m) = event.message() {
                    self.submit_flow.on_logged(&m.id);
                }
                // While the log is read for the transcript, and for what that read already
                // saw, the loaded transcript has the event.
                if !self.transcript.has_event(event.seq) {
                    self.chat.apply(&event);
                }
            }
            AgentEvent::Status(status) => {
                self.session.set_status(status);
                if status == AgentStatus::Idle {
                    self.on_idle();
                }
            }
            AgentEvent::Staged { count } => self.session.queued = count,
            AgentEvent::Discarded { message_ids } => self.submit_flow.on_discarded(&message_ids),
            AgentEvent::Warning { code, message } => self
                .chat
                .push_notice(NoticeKind::Info, format!("{code}: {message}")),
            AgentEvent::Error { code, message } => {
                tracing::warn!(code, message = %message, "agent error");
                self.chat.push_error(code, message);
            }
        }
    }

    /// The turn ended: unlogged text comes back once idle for good, the open session is
    /// indexed again and the cards are checked for staleness.
    fn on_idle(&mut self) {
        // Idle for good (not between two queued turns): unlogged text comes back.
        let agent = &self.session.agent;
        if agent.status() == AgentStatus::Idle && agent.queued_prompts() == 0 {
            self.submit_flow
                .give_back_unlogged(&mut self.composer.input, &mut self.chat);
        }
        self.reindex_open_session();
        // A turn may have added a card, or sources may have moved on.
        self.check_staleness();
    }

    // ----- commands ---------------------------------------------------------------------

    pub(super) fn run_command(&mut self, line: &str) {
        // What a command says lands at the bottom: the view follows it there, also when
        // the transcript was scrolled up.
        self.chat.scroll_to_bottom();
        let command = match parse_command(line) {
            Ok(command) => command,
            Err(e) => {
                self.chat.push_notice(NoticeKind::Error, e.to_string());
                return;
            }
        };
        // The command line is consumed; it stays reachable with Up (and after a restart).
        let now = u64::try_from(crate::tui::composer::listed_page::now_ms()).unwrap_or(0);
        self.remember_sent(line, now);
        let agent = &self.session.agent;
        match command {
            SlashCommand::Help => self.chat.push_help(help_sections()),
            SlashCommand::New => self.new_session(),
            // The open session (maybe not written yet, so not listed) is already open.
            SlashCommand::Resume(Some(wanted)) if wanted == self.session.id => {
                self.resume_session(&wanted);
            }
            SlashCommand::Resume(Some(wanted)) => {
                let sessions = self.session_query();
                self.switcher.resolve(wanted, sessions, &self.tx);
            }
            SlashCommand::Resume(None) => self.open_picker(""),
            SlashCommand::Title(title) => {
                agent.set_title(&title);
                // An empty title is refused by the agent, which reports the error itself.
                if let Some(shown) = crate::agent::title::clean_title(&title) {
                    self.chat
                        .push_notice(NoticeKind::Info, format!("title set: {shown}"));
                }
            }
            SlashCommand::Compact => agent.compact(),
            SlashCommand::Model(None) => {
                let (provider, model) = agent.model();
                let others: Vec<String> = agent
                    .known_models()
                    .into_iter()
                    .filter(|m| *m != model)
                    .collect();
                let known = if others.is_empty() {
                    String::new()
                } else {
                    format!("; also known: {}", others.join(", "))
                };
                let how = if self.provider.with_model(&model).is_some() {
                    "; /model NAME switches for the next turn"
                } else {
                    "; it has no other (the config's [model] section chooses the provider)"
                };
                self.chat.push_notice(
                    NoticeKind::Info,
                    format!("model: {model} (provider {provider}){known}{how}"),
                );
            }
            SlashCommand::Model(Some(name)) => match agent.switch_model(&name) {
                Ok(()) => self.chat.push_notice(
                    NoticeKind::Info,
                    format!("model: {name} from the next turn on"),
                ),
                Err(crate::agent::AgentError::ModelFixed { provider }) => {
                    let (_, model) = agent.model();
                    self.chat.push_notice(
                        NoticeKind::Info,
                        format!(
                            "/model {name} changes nothing: the {provider} provider has one model, \
                             {model}, and keeps it (the config's [model] section chooses the provider)"
                        ),
                    );
                }
                Err(e) => self.chat.push_error(e.code(), e.to_string()),
            },
            SlashCommand::Quit => self.frames.should_quit = true,
        }
    }

    /// Opens the `/resume` picker, its filter holding `filter` (`--resume X` and
    /// `/resume X` when X names no single session).
    pub fn open_picker(&mut self, filter: &str) {
        let keys = self.composer.input.config().key_map().clone();
        let open = (self.session.id.clone(), self.session.cwd.clone());
        let (mut picker, first) = ResumePicker::open(open, self.composer.zone, keys);
        picker.sources = self.candidates.sources.clone();
        picker.store = Some(self.store.clone());
        let first = if filter.is_empty() {
            first
        } else {
            picker.picker.handle_paste(filter)
        };
        self.picker = Some(picker);
        self.act_on_picker(vec![first]);
    }

    /// `/resume wanted` resolved: open the one session it names, else the picker filtered
    /// by it.
    fn on_resolved(&mut self, wanted: &str, result: Result<ResumeTarget, dsh_store::QueryError>) {
        match result {
            Ok(ResumeTarget::Open(id)) => self.resume_session(&id),
            Ok(ResumeTarget::Pick(filter)) => self.open_picker(&filter),
            Err(e) => self.chat.push_notice(
                NoticeKind::Error,
                format!("cannot look for session {wanted}: {e}"),
            ),
        }
    }

    pub(super) fn close_picker(&mut self) {
        if let Some(mut picker) = self.picker.take() {
            picker.cancel();
        }
        self.hits.cancel(HitsTarget::Picker);
    }

    fn new_session(&mut self) {
        let id = super::new_session_id();
        // In the process's directory, not in that of a session resumed since.
        let header = SessionHeader::new(id.clone(), now_ms(), self.switcher.home_cwd.clone());
        self.switcher
            .open(id, Some(header), &self.store, &self.provider, &self.tx);
    }

    pub(super) fn resume_session(&mut self, id: &str) {
        // A refusal or "already open" must be seen, also from a scrolled transcript.
        self.chat.scroll_to_bottom();
        if id == self.session.id {
            self.chat
                .push_notice(NoticeKind::Info, format!("session {id} is already open"));
            return;
        }
        // Another tool's session opens read-only: to look at it and reference it with @.
        if let Some(origin) = self
            .sources
            .as_ref()
            .map(|s| s.origin(id))
            .filter(dsh_foreign::Origin::is_foreign)
        {
            self.open_read_only(id, origin);
            return;
        }
        self.read_only = None;
        let now = u64::try_from(crate::tui::composer::listed_page::now_ms()).unwrap_or(0);
        let usage = &self.candidates.sources.usage;
        usage.record(
            &[id.to_owned()],
            dsh_reference::frecency::UseKind::Resumed,
            now,
        );
        self.switcher
            .open(id.to_owned(), None, &self.store, &self.provider, &self.tx);
    }

    /// Opens session `id` read-only (another tool's, instead of refusing to resume it; a
    /// dsh one when another window holds it).
    pub(super) fn open_read_only(&mut self, id: &str, origin: dsh_foreign::Origin) {
        self.open_read_only_at(id, origin, None);
    }

    /// [`open_read_only`](Self::open_read_only), reading only the part of a dsh session's
    /// log around `at` (an opened citation's seq).
    fn open_read_only_at(&mut self, id: &str, origin: dsh_foreign::Origin, at: Option<u64>) {
        let Some(sources) = self.sources.clone() else {
            return;
        };
        let around = at.map(|seq| (self.store.clone(), seq));
        let options = self.chat.options();
        let view = ReadOnlyView::open(id, origin, sources, around, options, &self.tx);
        self.read_only = Some(view);
    }

    /// Alt+C: open the newest citation of the transcript's replies (pressed again, the one
    /// before) in the read-only view of the cited session, scrolled to the message.
    pub(super) fn open_citation(&mut self) {
        let Some(target) = self.chat.transcript_mut().next_citation() else {
            self.chat.push_notice(
                NoticeKind::Info,
                "Alt+C: no reply cites a referenced message yet ([ref K #SEQ] citations come \
                 from searching referenced sessions)",
            );
            return;
        };
        let Some(id) = target.session_id.clone() else {
            self.chat.push_notice(
                NoticeKind::Error,
                format!(
                    "the citation ⟦{} #{}⟧ names a reference its message did not have",
                    visible_controls_line(&target.label),
                    target.seq
                ),
            );
            return;
        };
        let origin = self
            .sources
            .as_ref()
            .map_or(dsh_foreign::Origin::Dsh, |s| s.origin(&id));
        self.open_read_only_at(&id, origin, Some(target.seq));
        if let Some(view) = self.read_only.as_mut() {
            view.focus = Some(Focus {
                seq: target.seq,
                label: target.label,
                recalled: target.recalled.map(|r| r.text),
            });
        }
    }

    fn on_session_opened(
        &mut self,
        id: &str,
        result: Result<(SessionWriter, Box<LogFacts>), StoreError>,
    ) {
        match result {
            Ok((writer, facts)) => self.switch_to(writer, *facts),
            // Another window writes to it: look at it read-only (and mention it).
            Err(StoreError::Busy { .. }) => self.open_read_only(id, dsh_foreign::Origin::Dsh),
            Err(e) => self
                .chat
                .push_notice(NoticeKind::Error, format!("cannot open session {id}: {e}")),
        }
    }

    /// Leave the current session (its turn is cancelled) and open `writer`'s.
    fn switch_to(&mut self, writer: SessionWriter, facts: LogFacts) {
        self.cancel_prepare();
        self.candidates.cancel();
        self.session.agent.cancel();
        self.submit_flow.forget_unlogged();
        self.switcher.left(&self.session.id);
        let generation = self.session.generation + 1;
        self.session =
            OpenSession::start((writer, Some(facts)), &self.provider, generation, &self.tx);
        self.offer_recall();
        self.chat = ChatView::new(self.chat.options());
        if let Some(sources) = &self.sources {
            self.chat.set_sessions(Arc::clone(sources));
        }
        self.load_transcript();
    }

    /// After a frame: the view reached the first line and the log has older events (read
    /// the window before it), or came back to the bottom of a transcript whose newest cells
    /// were dropped for older ones (read the session again).
    pub(super) fn follow_scrollback(&mut self) {
        if let Some(before) = self.chat.wants_older() {
            self.transcript.read_older(
                &self.store,
                &self.session.id,
                before,
                self.sources.clone(),
                &self.tx,
            );
        } else if let Some(from) = self.chat.wants_newer() {
            self.transcript.read_newer(
                &self.store,
                &self.session.id,
                from,
                self.sources.clone(),
                &self.tx,
            );
        } else if self.chat.wants_latest() {
            self.load_transcript();
            self.transcript.mark_again();
        }
    }

    /// Reads the session's log into the transcript off the UI thread; meanwhile the
    /// transcript says it is reading.
    pub(super) fn load_transcript(&mut self) {
        self.chat.set_loading(true);
        let history_size = self.composer.history_size();
        self.transcript
            .start(&self.session.agent, history_size, &self.tx);
    }

    /// Show a transcript read off the UI thread: its cells (the notices shown meanwhile
    /// follow), and the session's typed messages in Up history, merged by time.
    fn on_transcript_loaded(&mut self, loaded: LoadedTranscript) {
        let LoadedTranscript {
            mut transcript,
            typed,
            through_seq: _,
            error,
        } = loaded;
        if let Some(sources) = &self.sources {
            transcript.set_sessions(Arc::clone(sources));
        }
        self.chat.adopt(transcript);
        if !self.transcript.take_again() {
            self.composer.adopt_session_history(&typed);
        }
        if let Some((code, message)) = error {
            self.chat.push_error(code, message);
        }
        self.check_staleness();
    }

    /// Asks, off the UI thread, how many messages the sources of the transcript's reference
    /// cards gained since their snapshots (cards say "source has N newer messages").
    pub(super) fn check_staleness(&mut self) {
        let Some(refs) = self.refs.clone() else {
            return;
        };
        let asks = self.chat.transcript().staleness_asks();
        self.transcript.check_newer(refs, asks, &self.tx);
    }

    /// The re-insert key: a fresh mention of the newest reference whose source has newer
    /// messages (else of the newest reference) goes into the composer at the caret — an
    /// excerpt as the same exchange, a session whole; sent, it snapshots the source anew.
    pub(super) fn reinsert_reference(&mut self) {
        let Some(entry) = self.chat.transcript().reinsert_target().cloned() else {
            self.chat.push_notice(
                NoticeKind::Info,
                "Ctrl+R: no referenced session in this conversation yet (mention one with @)",
            );
            return;
        };
        let mention = match entry.excerpt() {
            Some(span) => {
                self.listing_service()
                    .excerpt_mention(&entry.session_id, span.seq, &entry.label)
            }
            None => dsh_reference::format_mention(&entry.session_id, Some(&entry.label)),
        };
        let outcome = self.composer.input.insert_text(&format!("{mention} "));
        self.handle_outcome(outcome);
    }
}
