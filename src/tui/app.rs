//! The app: owns the terminal, the event loop and routing. Terminal input, agent events and
//! background results all arrive here; handlers change state and mark the frame dirty, and
//! one frame is drawn after each burst. Nothing runs on a timer while idle (the spinner
//! ticks only while preparing or running).

use std::fmt::Write as _;
use std::io;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use crossterm::event::{Event as TermEvent, KeyEvent, KeyEventKind, MouseEventKind};
use futures_util::{Stream, StreamExt};
use ratatui::Terminal;
use ratatui::backend::Backend;
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::widgets::Widget;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::app_event::{AppEvent, AppEventSender};
use super::app_keys::{AppAction, classify_app_key, help_rows};
use super::chat_view::ChatView;
use super::commands::{COMMANDS, SlashCommand, parse_command};
use super::error::TuiError;
use super::header::Header;
use super::search_indexing::{IndexingEvent, SearchIndexing};
use super::session_items::{DisplayZone, composer_config, composer_state, session_item};
use super::session_picker::{PickerOutcome, PickerRow, SessionPicker};
use super::status_line::{Phase, StatusLine};
use super::submit_flow::{SubmitContext, SubmitFlow, Submitted};
use super::transcript::{NoticeKind, RenderOptions};
use crate::agent::{Agent, AgentEvent, AgentStatus};
use crate::llm::Provider;
use dsh_foreign::{Origin, SessionSources};
use dsh_reference::{AgentRef, ErrorCode, SessionReferences};
use dsh_search::{IndexOptions, Progress, SessionIndex};
use dsh_store::event::now_ms;
use dsh_store::{SessionHeader, SessionQuery, SessionStore, SessionWriter, StoreError};
use ratatui::widgets::StatefulWidget;
use ratatui_mention::wrap::truncate_to_width;
use ratatui_mention::{MentionInput, MentionInputState, Outcome};

/// How often the spinner turns while busy.
const TICK: Duration = Duration::from_millis(100);
/// How long opening a session waits for a lock held by an agent that is winding down.
const OPEN_BUSY_RETRIES: u32 = 20;
const OPEN_BUSY_PAUSE: Duration = Duration::from_millis(50);
/// Lines per mouse-wheel notch.
const WHEEL_LINES: isize = 3;

/// Knobs from the `[tui]` config section.
#[derive(Debug, Clone, Copy)]
pub struct AppOptions {
    pub history_size: usize,
    pub show_reasoning: bool,
}

/// The whole app state.
pub struct App {
    tx: AppEventSender,
    rx: UnboundedReceiver<AppEvent>,
    store: SessionStore,
    /// Every session source (the store and other tools' read-only logs), once set.
    sources: Option<Arc<SessionSources>>,
    refs: Option<SessionReferences>,
    provider: Arc<dyn Provider>,
    agent: Agent,
    /// Bumped on every session switch; agent events of older sessions are dropped.
    generation: u64,
    session_id: String,
    cwd: Option<String>,
    chat: ChatView,
    input: MentionInputState,
    /// Time zone of the creation times in the `@` popup.
    zone: DisplayZone,
    agent_status: AgentStatus,
    queued: usize,
    submit_flow: SubmitFlow,
    candidate_cancel: Option<CancellationToken>,
    picker: Option<SessionPicker>,
    spinner_frame: usize,
    next_tick: Option<Instant>,
    dirty: bool,
    should_quit: bool,
    frames_drawn: u64,
    /// The full-text index being kept up to date in the background, if enabled.
    search: Option<SearchIndexing>,
    /// Progress of a running index update, for the status line.
    indexing: Option<Progress>,
}

/// A fresh session id `s-<yyyymmdd-hhmmss>-<4 hex>` (local time).
pub fn new_session_id() -> String {
    format!(
        "s-{}-{:04x}",
        chrono::Local::now().format("%Y%m%d-%H%M%S"),
        fastrand::u16(..)
    )
}

impl App {
    /// Build the app on `writer`'s session. Must run inside a tokio runtime (the agent loop
    /// and the background tasks are spawned on it).
    pub fn new(
        store: SessionStore,
        refs: Option<SessionReferences>,
        provider: Arc<dyn Provider>,
        writer: SessionWriter,
        options: AppOptions,
    ) -> App {
        let (tx, rx) = AppEventSender::channel();
        let chat = ChatView::new(RenderOptions {
            expand_snapshots: false,
            expand_reasoning: options.show_reasoning,
        });
        let session_id = writer.header().id.clone();
        let cwd = writer.header().cwd.clone();
        let (agent, agent_rx) = Agent::spawn(writer, Arc::clone(&provider));
        let mut app = App {
            tx,
            rx,
            store,
            sources: None,
            refs,
            provider,
            agent,
            generation: 0,
            session_id,
            cwd,
            chat,
            input: composer_state(options.history_size),
            zone: DisplayZone::Local,
            agent_status: AgentStatus::Idle,
            queued: 0,
            submit_flow: SubmitFlow::default(),
            candidate_cancel: None,
            picker: None,
            spinner_frame: 0,
            next_tick: None,
            dirty: true,
            should_quit: false,
            frames_drawn: 0,
            search: None,
            indexing: None,
        };
        app.load_transcript();
        app.forward_agent_events(agent_rx);
        app
    }

    /// Start keeping the full-text index of the store up to date in the background (its
    /// progress shows in the status line).
    pub fn start_search_indexing(&mut self, options: IndexOptions) {
        self.search = Some(SearchIndexing::start(
            self.store.root().to_owned(),
            options,
            self.tx.clone(),
        ));
    }

    /// The full-text index, once open (for the `@` popup and the resume picker).
    pub fn search_index(&self) -> Option<Arc<SessionIndex>> {
        self.search.as_ref().and_then(SearchIndexing::index)
    }

    /// Progress of a running index update, as the status line shows it.
    pub fn indexing_progress(&self) -> Option<Progress> {
        self.indexing
    }

    /// List other tools' sessions too (with their origin badge) in `/resume`, which refuses
    /// to open them: they are read-only.
    pub fn set_sources(&mut self, sources: Arc<SessionSources>) {
        self.sources = Some(sources);
    }

    /// A sender on the app's event bus.
    pub fn sender(&self) -> AppEventSender {
        self.tx.clone()
    }

    /// The open session's id.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// How many frames have been drawn (for tests of redraw coalescing).
    pub fn frames_drawn(&self) -> u64 {
        self.frames_drawn
    }

    /// The agent of the open session.
    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    /// The composer's current text.
    pub fn draft(&self) -> String {
        self.input.draft()
    }

    /// Whether the app wants to exit.
    pub fn should_quit(&self) -> bool {
        self.should_quit
    }

    /// What the status line shows.
    pub fn phase(&self) -> Phase {
        if self.submit_flow.is_preparing_references() {
            return Phase::Preparing;
        }
        match self.agent_status {
            AgentStatus::Idle => Phase::Idle,
            AgentStatus::Running if self.chat.transcript().live_has_output() => Phase::Responding,
            AgentStatus::Running => Phase::Waiting,
        }
    }

    fn load_transcript(&mut self) {
        for event in self.agent.snapshot_events() {
            self.chat.apply(&event);
        }
    }

    fn forward_agent_events(&self, mut agent_rx: UnboundedReceiver<AgentEvent>) {
        let tx = self.tx.clone();
        let generation = self.generation;
        tokio::spawn(async move {
            while let Some(event) = agent_rx.recv().await {
                tx.send(AppEvent::Agent { generation, event });
            }
        });
    }

    fn agent_ref(&self) -> AgentRef {
        AgentRef {
            session_id: self.session_id.clone(),
            cwd: self.cwd.clone(),
        }
    }

    /// The submit flow and what it works on, borrowed side by side.
    fn submit_parts(&mut self) -> (&mut SubmitFlow, SubmitContext<'_>) {
        let agent_ref = self.agent_ref();
        (
            &mut self.submit_flow,
            SubmitContext {
                input: &mut self.input,
                chat: &mut self.chat,
                agent: &self.agent,
                refs: self.refs.as_ref(),
                agent_ref,
                tx: &self.tx,
            },
        )
    }

    // ----- event loop -------------------------------------------------------------------

    /// Run until the user quits or the input stream ends.
    pub async fn run<B, S>(
        &mut self,
        terminal: &mut Terminal<B>,
        mut input: S,
    ) -> Result<(), TuiError>
    where
        B: Backend,
        B::Error: std::fmt::Display,
        S: Stream<Item = io::Result<TermEvent>> + Unpin,
    {
        self.draw(terminal)?;
        while !self.should_quit {
            if !self.step(&mut input).await? {
                break;
            }
            if self.dirty {
                self.draw(terminal)?;
            }
        }
        Ok(())
    }

    /// Wait for the next input, app event or spinner tick, handle it and everything else
    /// already queued. Returns false when the input stream has ended.
    pub async fn step<S>(&mut self, input: &mut S) -> Result<bool, TuiError>
    where
        S: Stream<Item = io::Result<TermEvent>> + Unpin,
    {
        self.schedule_tick();
        let tick = self.next_tick;
        let sleep = async move {
            match tick {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            event = input.next() => match event {
                Some(Ok(event)) => self.handle_terminal_event(event),
                Some(Err(e)) => return Err(TuiError::Input(e)),
                None => return Ok(false),
            },
            Some(event) = self.rx.recv() => self.handle_app_event(event),
            () = sleep => self.on_tick(),
        }
        // Coalesce: handle everything that is already waiting before the next frame.
        while let Ok(event) = self.rx.try_recv() {
            self.handle_app_event(event);
        }
        // Polled with this task's own waker (not a no-op one): crossterm's EventStream wakes
        // the waker of its last poll, so a pending poll here must still wake this task.
        while let Poll::Ready(next) = futures_util::poll!(input.next()) {
            match next {
                Some(Ok(event)) => self.handle_terminal_event(event),
                Some(Err(e)) => return Err(TuiError::Input(e)),
                None => return Ok(false),
            }
        }
        self.schedule_tick();
        Ok(true)
    }

    fn schedule_tick(&mut self) {
        if self.phase().is_busy() {
            if self.next_tick.is_none() {
                self.next_tick = Some(Instant::now() + TICK);
            }
        } else {
            self.next_tick = None;
        }
    }

    fn on_tick(&mut self) {
        self.next_tick = None;
        if self.phase().is_busy() {
            self.spinner_frame = self.spinner_frame.wrapping_add(1);
            self.dirty = true;
        }
    }

    /// Draw one frame if anything changed.
    pub fn draw<B>(&mut self, terminal: &mut Terminal<B>) -> Result<(), TuiError>
    where
        B: Backend,
        B::Error: std::fmt::Display,
    {
        terminal
            .draw(|frame| {
                let area = frame.area();
                if let Some(cursor) = self.render(area, frame.buffer_mut()) {
                    frame.set_cursor_position(cursor);
                }
            })
            .map_err(|e| TuiError::Draw(e.to_string()))?;
        self.dirty = false;
        self.frames_drawn += 1;
        Ok(())
    }

    // ----- input ------------------------------------------------------------------------

    /// Handle one terminal event.
    pub fn handle_terminal_event(&mut self, event: TermEvent) {
        match event {
            TermEvent::Key(key) => {
                if key.kind == KeyEventKind::Release {
                    return;
                }
                self.handle_key(key);
            }
            TermEvent::Paste(text) => {
                if self.picker.is_none() {
                    let outcome = self.input.handle_paste(&text);
                    self.handle_outcome(outcome);
                }
                self.dirty = true;
            }
            TermEvent::Mouse(mouse) => match mouse.kind {
                MouseEventKind::ScrollUp => {
                    self.chat.scroll_by(WHEEL_LINES);
                    self.dirty = true;
                }
                MouseEventKind::ScrollDown => {
                    self.chat.scroll_by(-WHEEL_LINES);
                    self.dirty = true;
                }
                _ => {}
            },
            TermEvent::Resize(_, _) => self.dirty = true,
            TermEvent::FocusGained | TermEvent::FocusLost => {}
        }
    }

    fn handle_key(&mut self, key: KeyEvent) {
        self.dirty = true;
        if let Some(picker) = self.picker.as_mut() {
            match picker.handle_key(&key) {
                PickerOutcome::Continue => {}
                PickerOutcome::Close => self.picker = None,
                PickerOutcome::Open(id) => {
                    self.picker = None;
                    self.resume_session(&id);
                }
            }
            return;
        }
        // App keys first, except those the widget needs in context: Ctrl+D deletes on a
        // draft, and Esc closes an open popup.
        match classify_app_key(&key) {
            Some(AppAction::PageUp) => self.chat.page_up(),
            Some(AppAction::PageDown) => self.chat.page_down(),
            Some(AppAction::ScrollToBottom) => self.chat.scroll_to_bottom(),
            Some(AppAction::ToggleSnapshots) => self.chat.toggle_snapshots(),
            Some(AppAction::ToggleReasoning) => self.chat.toggle_reasoning(),
            Some(AppAction::Interrupt) => self.interrupt(),
            Some(AppAction::QuitIfEmpty) if self.input.is_empty() => self.should_quit = true,
            Some(AppAction::Escape) if !self.input.popup_active() => self.escape(),
            Some(AppAction::QuitIfEmpty | AppAction::Escape) | None => {
                let outcome = self.input.handle_key(key);
                self.handle_outcome(outcome);
            }
        }
    }

    fn handle_outcome(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Submit(text) => {
                let (flow, cx) = self.submit_parts();
                match flow.submit(text, cx) {
                    Submitted::Command(line) => self.run_command(&line),
                    Submitted::Started => self.schedule_tick(),
                    Submitted::Ignored | Submitted::Refused => {}
                }
            }
            Outcome::Query { id, text, .. } => self.query_candidates(id, text),
            // Redraws (marked below), insertions, and keys nobody binds (the app's own
            // were classified before the widget saw them).
            _ => {}
        }
        self.dirty = true;
    }

    /// Esc with the popup closed: cancel a running `prepare`, else the running turn.
    fn escape(&mut self) {
        if self.submit_flow.is_preparing() {
            self.cancel_prepare();
        } else if self.agent_status == AgentStatus::Running {
            self.agent.cancel();
        }
    }

    /// Ctrl+C: cancel what runs, else clear the draft (Up brings it back), else quit.
    fn interrupt(&mut self) {
        if self.submit_flow.is_preparing() {
            self.cancel_prepare();
        } else if self.agent_status == AgentStatus::Running {
            self.agent.cancel();
        } else if !self.input.clear_draft_to_history() {
            self.should_quit = true;
        }
    }

    /// Stops a running `prepare` and gives the text back.
    fn cancel_prepare(&mut self) {
        let (flow, mut cx) = self.submit_parts();
        flow.cancel(&mut cx);
    }

    // ----- candidates -------------------------------------------------------------------

    fn query_candidates(&mut self, query_id: u64, query: String) {
        if let Some(previous) = self.candidate_cancel.take() {
            previous.cancel();
        }
        let Some(refs) = self.refs.clone() else {
            // No reference service mounted: `@` offers nothing.
            self.input.set_results(query_id, Vec::new());
            return;
        };
        let cancel = CancellationToken::new();
        self.candidate_cancel = Some(cancel.clone());
        let agent = self.agent_ref();
        let tx = self.tx.clone();
        tokio::spawn(async move {
            let result = refs.list_candidates(&agent, &query, None, &cancel).await;
            if let Err(e) = &result
                && e.code == ErrorCode::Cancelled
            {
                return;
            }
            tx.send(AppEvent::Candidates { query_id, result });
        });
    }

    // ----- app events -------------------------------------------------------------------

    /// Handle one event from the bus.
    pub fn handle_app_event(&mut self, event: AppEvent) {
        match event {
            AppEvent::Redraw => {}
            AppEvent::Quit => self.should_quit = true,
            AppEvent::Agent { generation, event } => {
                if generation == self.generation {
                    self.on_agent_event(event);
                } else {
                    return;
                }
            }
            AppEvent::Candidates { query_id, result } => match result {
                Ok(rows) => {
                    let items = rows.iter().map(|c| session_item(c, self.zone)).collect();
                    self.input.set_results(query_id, items);
                }
                Err(e) => self
                    .input
                    .set_failed(query_id, format!("{}: {}", e.code.as_str(), e.message)),
            },
            AppEvent::Prepared { prepare_id, result } => {
                let (flow, mut cx) = self.submit_parts();
                flow.on_prepared(prepare_id, result, &mut cx);
            }
            AppEvent::SessionOpened { id, result } => self.on_session_opened(&id, result),
            AppEvent::SessionsListed(rows) => {
                if let Some(picker) = self.picker.as_mut() {
                    picker.set_rows(rows);
                }
            }
            AppEvent::SearchIndexing(event) => self.on_indexing(event),
        }
        self.dirty = true;
    }

    fn on_indexing(&mut self, event: IndexingEvent) {
        match event {
            IndexingEvent::Progress(p) => self.indexing = (p.done < p.total).then_some(p),
            IndexingEvent::Notice(notice) => self.chat.push_notice(NoticeKind::Info, notice),
            IndexingEvent::Finished(result) => {
                self.indexing = None;
                if let Err(e) = result {
                    self.chat
                        .push_notice(NoticeKind::Error, format!("search index not updated: {e}"));
                }
            }
        }
    }

    /// After a turn: bring the open session's entry in the full-text index up to date, off
    /// the UI thread (skipped while a full update runs or before the index is open).
    fn reindex_open_session(&self) {
        let Some(index) = self.search_index() else {
            return;
        };
        if self.indexing.is_some() {
            return;
        }
        let id = self.session_id.clone();
        tokio::task::spawn_blocking(move || {
            if let Err(e) = index.refresh_sessions(&[&id]) {
                tracing::debug!(session = %id, error = %e, "search index not updated");
            }
        });
    }

    fn on_agent_event(&mut self, event: AgentEvent) {
        match event {
            AgentEvent::Appended(event) => {
                if let Some(m) = event.message() {
                    self.submit_flow.on_logged(&m.id);
                }
                self.chat.apply(&event);
            }
            AgentEvent::Status(status) => {
                self.agent_status = status;
                if status == AgentStatus::Idle {
                    self.queued = 0;
                    // Idle for good (not between two queued turns): unlogged text comes back.
                    if self.agent.status() == AgentStatus::Idle && self.agent.queued_prompts() == 0
                    {
                        self.submit_flow
                            .give_back_unlogged(&mut self.input, &mut self.chat);
                    }
                    self.reindex_open_session();
                }
            }
            AgentEvent::Staged { count } => self.queued = count,
            AgentEvent::Discarded { message_ids } => self.submit_flow.on_discarded(&message_ids),
            AgentEvent::Warning { code, message } => self
                .chat
                .push_notice(NoticeKind::Info, format!("{code}: {message}")),
            AgentEvent::Error { code, message } => self
                .chat
                .push_notice(NoticeKind::Error, format!("{code}: {message}")),
        }
    }

    // ----- commands ---------------------------------------------------------------------

    fn run_command(&mut self, line: &str) {
        let command = match parse_command(line) {
            Ok(command) => command,
            Err(e) => {
                self.chat.push_notice(NoticeKind::Error, e.to_string());
                return;
            }
        };
        // The command line is consumed; it stays reachable with Up.
        self.input.push_history(line);
        self.input.clear_if_unchanged(line);
        match command {
            SlashCommand::Help => self.chat.push_notice(NoticeKind::Info, help_text()),
            SlashCommand::New => self.new_session(),
            SlashCommand::Resume(Some(id)) => self.resume_session(&id),
            SlashCommand::Resume(None) => self.open_picker(),
            SlashCommand::Title(title) => self.agent.set_title(&title),
            SlashCommand::Compact => self.agent.compact(),
            SlashCommand::Model => {
                let (provider, model) = self.agent.model();
                self.chat.push_notice(
                    NoticeKind::Info,
                    format!("model: {model} (provider {provider}); set [model] in the config file to change it"),
                );
            }
            SlashCommand::Quit => self.should_quit = true,
        }
    }

    fn open_picker(&mut self) {
        self.picker = Some(SessionPicker::loading(self.session_id.clone()));
        let store = self.store.clone();
        let sources = self.sources.clone();
        let tx = self.tx.clone();
        tokio::task::spawn_blocking(move || {
            let rows = list_picker_rows(&store, sources.as_deref());
            tx.send(AppEvent::SessionsListed(rows));
        });
    }

    fn new_session(&mut self) {
        let id = new_session_id();
        let header = SessionHeader::new(id.clone(), now_ms(), self.cwd.clone());
        self.open_session(id, Some(header));
    }

    fn resume_session(&mut self, id: &str) {
        if id == self.session_id {
            self.chat
                .push_notice(NoticeKind::Info, format!("session {id} is already open"));
            return;
        }
        if let Some(sources) = &self.sources {
            let origin = sources.origin(id);
            if origin != Origin::Dsh {
                self.chat.push_notice(
                    NoticeKind::Error,
                    format!(
                        "read-only session from {} — reference it with @",
                        origin.tool_name()
                    ),
                );
                return;
            }
        }
        self.open_session(id.to_owned(), None);
    }

    /// Open a session for writing off the UI thread (loading a long log takes a while, and
    /// a session just left stays locked until its agent loop has wound down).
    fn open_session(&mut self, id: String, create: Option<SessionHeader>) {
        let store = self.store.clone();
        let tx = self.tx.clone();
        tokio::task::spawn_blocking(move || {
            let mut retries = 0;
            let result = loop {
                match store.open_writer(&id, create.clone()) {
                    Err(StoreError::Busy { .. }) if retries < OPEN_BUSY_RETRIES => {
                        retries += 1;
                        std::thread::sleep(OPEN_BUSY_PAUSE);
                    }
                    other => break other,
                }
            };
            tx.send(AppEvent::SessionOpened { result, id });
        });
    }

    fn on_session_opened(&mut self, id: &str, result: Result<SessionWriter, StoreError>) {
        match result {
            Ok(writer) => self.switch_to(writer),
            Err(e) => self
                .chat
                .push_notice(NoticeKind::Error, format!("cannot open session {id}: {e}")),
        }
    }

    /// Leave the current session (its turn is cancelled) and open `writer`'s.
    fn switch_to(&mut self, writer: SessionWriter) {
        self.cancel_prepare();
        if let Some(cancel) = self.candidate_cancel.take() {
            cancel.cancel();
        }
        self.agent.cancel();
        self.generation += 1;
        self.submit_flow.forget_unlogged();
        self.session_id.clone_from(&writer.header().id);
        self.cwd.clone_from(&writer.header().cwd);
        let (agent, agent_rx) = Agent::spawn(writer, Arc::clone(&self.provider));
        self.agent = agent;
        self.agent_status = AgentStatus::Idle;
        self.queued = 0;
        self.chat = ChatView::new(self.chat.options());
        self.load_transcript();
        self.forward_agent_events(agent_rx);
    }

    /// Before exit: stop preparation and the running turn, and wait (bounded) until the
    /// agent has logged the turn's end.
    pub async fn shutdown(&mut self) {
        self.submit_flow.abort();
        if self.agent_status != AgentStatus::Running {
            return;
        }
        self.agent.cancel();
        let wait_idle = async {
            while self.agent_status == AgentStatus::Running {
                match self.rx.recv().await {
                    Some(event) => self.handle_app_event(event),
                    None => break,
                }
            }
        };
        // A stuck provider must not keep the terminal hostage.
        let _ = tokio::time::timeout(Duration::from_secs(3), wait_idle).await;
    }

    // ----- rendering --------------------------------------------------------------------

    /// Render the whole screen into `buf`; returns where the terminal cursor belongs.
    pub fn render(&mut self, area: Rect, buf: &mut Buffer) -> Option<Position> {
        if area.height < 4 || area.width < 10 {
            buf.set_string(area.x, area.y, "terminal too small", Style::new());
            return None;
        }
        let header_area = Rect::new(area.x, area.y, area.width, 1);
        let hint_area = Rect::new(area.x, area.bottom() - 1, area.width, 1);
        // The composer may grow, but the transcript keeps at least a few rows.
        let available = area.height.saturating_sub(3);
        let min_transcript = available.min(3);
        let pane_height = self
            .input
            .desired_height(area.width)
            .clamp(1, available.saturating_sub(min_transcript).max(1));
        let pane_area = Rect::new(area.x, hint_area.y - pane_height, area.width, pane_height);
        let status_area = Rect::new(area.x, pane_area.y - 1, area.width, 1);
        let transcript_area = Rect::new(
            area.x,
            area.y + 1,
            area.width,
            status_area.y.saturating_sub(area.y + 1),
        );

        let title = self.chat.transcript().title().map(str::to_owned);
        Header {
            session_id: &self.session_id,
            title: title.as_deref(),
            cwd: self.cwd.as_deref(),
        }
        .render(header_area, buf);
        self.chat.render(transcript_area, buf);
        let (_, model) = self.agent.model();
        StatusLine {
            phase: self.phase(),
            spinner_frame: self.spinner_frame,
            model: &model,
            tokens: self.chat.transcript().tokens(),
            queued: self.queued,
            indexing: self.indexing,
        }
        .render(status_area, buf);
        MentionInput.render(pane_area, buf, &mut self.input);
        let cursor = self.input.cursor_position();
        let hint = truncate_to_width(self.hint(), usize::from(area.width));
        buf.set_string(
            hint_area.x,
            hint_area.y,
            hint,
            Style::new().add_modifier(Modifier::DIM),
        );
        if let Some(picker) = &self.picker {
            picker.render(transcript_area, buf);
            return None;
        }
        cursor
    }

    fn hint(&self) -> &'static str {
        if self.picker.is_some() {
            " ↑↓ move · Enter open · Esc close"
        } else if self.input.popup_active() {
            " ↑↓ move · Tab/Enter insert · Esc close"
        } else if self.submit_flow.is_preparing() {
            " Esc cancel preparing (your text comes back)"
        } else if self.agent_status == AgentStatus::Running {
            " Esc interrupt · Enter steer the reply · PgUp/PgDn scroll"
        } else {
            " Enter send · Shift+Enter/Ctrl+J newline · @ reference a session · /help"
        }
    }
}

/// The `/help` text: commands, composer keys and app keys, from their tables.
fn help_text() -> String {
    let mut out = String::from("Commands\n");
    for (usage, help) in COMMANDS {
        let _ = writeln!(out, "  {usage:<14} {help}");
    }
    out.push_str("Keys\n");
    for (label, help) in help_rows(composer_config(0).key_map()) {
        let _ = writeln!(out, "  {label:<14} {help}");
    }
    out.trim_end().to_owned()
}

/// Every session for the picker, newest first, with its title and origin badge: the dsh
/// store's, and the foreign sources' when they are set.
fn list_picker_rows(
    store: &SessionStore,
    sources: Option<&SessionSources>,
) -> Result<Vec<PickerRow>, StoreError> {
    let query: &dyn SessionQuery = match sources {
        Some(s) => s,
        None => store,
    };
    let headers = query.list_sessions()?;
    Ok(headers
        .iter()
        .map(|h| PickerRow {
            session_id: h.id.clone(),
            title: query.read_title(&h.id).ok().flatten(),
            cwd: h.cwd.clone(),
            created_at: h.created_at,
            badge: sources.and_then(|s| s.origin(&h.id).badge()),
        })
        .collect())
}

#[cfg(test)]
#[path = "app_tests.rs"]
mod tests;
