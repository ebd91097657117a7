//! The app: owns the terminal, the event loop and routing. Terminal input, agent events and
//! background results all arrive here; handlers change state and mark the frame dirty, and
//! one frame is drawn after each burst. Nothing runs on a timer while idle (the spinner
//! ticks only while preparing or running).

use std::collections::{HashMap, HashSet};
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

use super::app_event::{AppEvent, AppEventSender, LoadedTranscript};
use super::app_keys::{AppAction, classify_app_key, help_rows};
use super::chat_view::ChatView;
use super::commands::{COMMANDS, SlashCommand, parse_command};
use super::conversation_hits::{
    self, CONVERSATIONS_TITLE, HitsAnswer, HitsQuery, HitsTarget, popup_rows, section_title,
};
use super::error::TuiError;
use super::header::Header;
use super::history_file::HistoryFile;
use super::remembered_page::{self, RememberedPage, RememberedPages};
use super::search_indexing::{IndexingEvent, SearchIndexing};
use super::session_items::{DisplayZone, composer_config, composer_state, results_page};
use super::session_picker::{PickerOutcome, SessionPicker};
use super::session_preview::{PreviewRequest, estimate_lines};
use super::status_line::{Phase, StatusLine};
use super::submit_flow::{SubmitContext, SubmitFlow, Submitted};
use super::transcript::{NoticeKind, RenderOptions, Transcript};
use crate::agent::{Agent, AgentEvent, AgentStatus, LogFacts};
use crate::llm::Provider;
use dsh_foreign::{Origin, SessionSources};
use dsh_reference::{
    AgentRef, Candidate, ErrorCode, ListingScope, ReferenceConfig, SessionReferences, parse_text,
};
use dsh_search::{Cancel, IndexOptions, Progress, SessionIndex};
use dsh_store::event::now_ms;
use dsh_store::{SessionHeader, SessionStore, SessionWriter, StoreError};
use ratatui::widgets::StatefulWidget;
use ratatui_mention::untrusted::visible_controls_line;
use ratatui_mention::wrap::truncate_to_width;
use ratatui_mention::{ItemPreview, MentionInput, MentionInputState, OfferedRows, Outcome};

/// How often the spinner turns while busy.
const TICK: Duration = Duration::from_millis(100);
/// How long opening a session waits for a lock held by an agent that is winding down.
const OPEN_BUSY_RETRIES: u32 = 20;
const OPEN_BUSY_PAUSE: Duration = Duration::from_millis(50);
/// Lines per mouse-wheel notch.
const WHEEL_LINES: isize = 3;
/// Most session cwds remembered for mention hints (the map starts over when full).
const MAX_KNOWN_CWDS: usize = 4096;
/// How long "Ctrl+C again to quit" waits for the second press.
const QUIT_CONFIRM: Duration = Duration::from_secs(2);
/// Below this many columns or rows the app shows only "window too small".
pub const MIN_WIDTH: u16 = 30;
pub const MIN_HEIGHT: u16 = 7;

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
    picker_cancel: Option<CancellationToken>,
    /// Ids of `/resume` listings (their answers are matched against the newest).
    picker_query_id: u64,
    /// The estimate being computed for a preview (one at a time), and the newest one
    /// wanted meanwhile.
    preview_in_flight: Option<PreviewRequest>,
    preview_next: Option<PreviewRequest>,
    /// Size of the transcript area in the last frame (where `/resume` is drawn).
    screen: (u16, u16),
    /// Sent inputs on disk (Up across restarts); `None` when there is no data dir.
    history_file: Option<HistoryFile>,
    /// Working directories of sessions seen in listings, for the hint of a mention.
    known_cwds: HashMap<String, Option<String>>,
    /// Sessions whose cwd was looked up for a chip's hint (each at most once).
    cwd_lookups: HashSet<String>,
    /// Until when a second Ctrl+C on an empty draft quits.
    quit_armed_until: Option<Instant>,
    /// An Enter/Tab in the `@` popup waits for the answer to this query until then.
    answer_wait: Option<(u64, Instant)>,
    spinner_frame: usize,
    /// When the running turn started (the status line's elapsed timer).
    turn_started: Option<Instant>,
    next_tick: Option<Instant>,
    dirty: bool,
    should_quit: bool,
    frames_drawn: u64,
    /// The full-text index being kept up to date in the background, if enabled.
    search: Option<SearchIndexing>,
    /// Progress of a running index update, for the status line.
    indexing: Option<Progress>,
    /// The running conversation search of the `@` popup and of `/resume` (a newer query
    /// cancels the older one).
    popup_hits_cancel: Option<Cancel>,
    picker_hits_cancel: Option<Cancel>,
    /// A picker asked for conversation hits before the index was open: search once it is.
    hits_await_index: bool,
    /// Most entries of Up history (`[tui] history_size`).
    history_size: usize,
    /// The open session's log is being read into the transcript off the UI thread.
    transcript_load: Option<TranscriptLoad>,
    /// The `@` popup's first page remembered between runs.
    first_page: FirstPage,
    /// `Appended` events up to this seq are already in the loaded transcript.
    loaded_through: Option<u64>,
}

/// The `@` popup's empty-query first page as last answered (loaded at start, kept up to
/// date), where it is kept, whether a listing has answered in this run, and the id of the
/// newest empty query (its answer is remembered).
#[derive(Debug, Default)]
struct FirstPage {
    remembered: Arc<std::sync::Mutex<Option<RememberedPages>>>,
    path: Option<std::path::PathBuf>,
    listing_answered: bool,
    empty_query_id: Option<u64>,
}

/// A transcript read in flight: inputs sent meanwhile (they go after the session's own
/// messages in Up history).
#[derive(Debug, Clone, Copy)]
struct TranscriptLoad {
    sent_since: usize,
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
        Self::opened(store, refs, provider, (writer, None), options)
    }

    /// [`new`](Self::new) on a writer opened with
    /// [`open_writer_observing`](SessionStore::open_writer_observing) and the agent's `facts`
    /// gathered in that pass, so the log is not read a second time before the first frame.
    pub fn with_facts(
        store: SessionStore,
        refs: Option<SessionReferences>,
        provider: Arc<dyn Provider>,
        (writer, facts): (SessionWriter, LogFacts),
        options: AppOptions,
    ) -> App {
        Self::opened(store, refs, provider, (writer, Some(facts)), options)
    }

    fn opened(
        store: SessionStore,
        refs: Option<SessionReferences>,
        provider: Arc<dyn Provider>,
        (writer, facts): (SessionWriter, Option<LogFacts>),
        options: AppOptions,
    ) -> App {
        let (tx, rx) = AppEventSender::channel();
        let chat = ChatView::new(RenderOptions {
            expand_reasoning: options.show_reasoning,
            ..RenderOptions::default()
        });
        let session_id = writer.header().id.clone();
        let cwd = writer.header().cwd.clone();
        let (agent, agent_rx) = match facts {
            Some(facts) => Agent::spawn_with_facts(writer, facts, Arc::clone(&provider)),
            None => Agent::spawn(writer, Arc::clone(&provider)),
        };
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
            picker_cancel: None,
            picker_query_id: 0,
            preview_in_flight: None,
            preview_next: None,
            screen: (0, 0),
            history_file: None,
            known_cwds: HashMap::new(),
            cwd_lookups: HashSet::new(),
            quit_armed_until: None,
            answer_wait: None,
            spinner_frame: 0,
            turn_started: None,
            next_tick: None,
            dirty: true,
            should_quit: false,
            frames_drawn: 0,
            search: None,
            indexing: None,
            popup_hits_cancel: None,
            picker_hits_cancel: None,
            hits_await_index: false,
            history_size: options.history_size,
            transcript_load: None,
            loaded_through: None,
            first_page: FirstPage::default(),
        };
        app.load_transcript();
        app.forward_agent_events(agent_rx);
        app
    }

    /// Remembers the `@` popup's empty-query first page in `path` (the store's cache
    /// directory) between runs, and answers a `@` typed before the listing is in from it.
    pub fn remember_first_page_in(&mut self, path: std::path::PathBuf) {
        self.first_page.path = Some(path);
    }

    /// Keeps sent inputs in the history file at `path` from now on, and puts the entries
    /// already there into Up history (older than this session's own messages).
    pub fn use_history_file(&mut self, path: &std::path::Path, max_entries: usize) {
        match HistoryFile::load(path, max_entries) {
            Ok(file) => {
                let session_entries = self.input.history_entries();
                self.input.clear_history();
                for entry in file
                    .entries()
                    .chain(session_entries.iter().map(String::as_str))
                {
                    self.input.push_history(entry);
                }
                self.history_file = Some(file);
            }
            Err(e) => self.chat.push_notice(
                NoticeKind::Error,
                format!(
                    "{}: {e} (input history is kept for this run only)",
                    e.code()
                ),
            ),
        }
    }

    /// Records a sent input: Up history now, and the history file for later runs.
    fn remember_sent(&mut self, text: &str) {
        self.input.push_history(text);
        if let Some(load) = self.transcript_load.as_mut() {
            load.sent_since += 1;
        }
        let Some(file) = self.history_file.as_mut() else {
            return;
        };
        if let Err(e) = file.record(text) {
            // Reported once; the rest of this run keeps history in memory only.
            self.history_file = None;
            self.chat.push_notice(
                NoticeKind::Error,
                format!(
                    "{}: {e} (input history is kept for this run only)",
                    e.code()
                ),
            );
        }
    }

    fn remember_cwds(&mut self, rows: &[Candidate]) {
        if self.known_cwds.len() + rows.len() > MAX_KNOWN_CWDS {
            self.known_cwds.clear();
        }
        for row in rows.iter().take(MAX_KNOWN_CWDS) {
            self.known_cwds
                .insert(row.session_id.clone(), row.cwd.clone());
        }
    }

    /// List the sessions and read their titles in the background, so the first `@` popup
    /// or `/resume` answers from memory; the first frame never waits for it.
    pub fn warm_listing(&self) {
        let Some(refs) = self.refs.clone() else {
            return;
        };
        // A `@` typed before the warm-up starts may get the store's early listing, and
        // before that the first page remembered from the last run.
        self.store.allow_early_listing();
        if let Some(path) = &self.first_page.path {
            let (path, slot) = (path.clone(), Arc::clone(&self.first_page.remembered));
            tokio::task::spawn_blocking(move || {
                let page = remembered_page::load(&path);
                let mut slot = slot
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if slot.is_none() {
                    *slot = page;
                }
            });
        }
        tokio::spawn(async move {
            if let Err(e) = refs.warm_listing(&CancellationToken::new()).await {
                tracing::debug!(error = %e.message, "listing not warmed");
            }
        });
    }

    /// Start keeping the full-text index of the store up to date in the background (its
    /// progress shows in the status line); the foreign sources set by
    /// [`set_sources`](Self::set_sources) before are indexed too.
    pub fn start_search_indexing(&mut self, options: IndexOptions) {
        let foreign = self
            .sources
            .as_ref()
            .map(|s| s.foreign().to_vec())
            .unwrap_or_default();
        self.search = Some(SearchIndexing::start(
            self.store.root().to_owned(),
            options,
            foreign,
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
        self.chat.set_sessions(Arc::clone(&sources));
        self.sources = Some(sources);
    }

    /// Where session `id` comes from, as the sources listed it (dsh without foreign sources).
    fn origin(&self, id: &str) -> Origin {
        self.sources
            .as_ref()
            .map_or(Origin::Dsh, |sources| sources.origin(id))
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

    /// Read the session's log into a transcript on a blocking thread (a long session would
    /// hold up the UI), with its own typed messages for Up history; the answer arrives as
    /// [`AppEvent::TranscriptLoaded`]. Meanwhile the transcript says it is reading.
    fn load_transcript(&mut self) {
        let agent = self.agent.clone();
        let tx = self.tx.clone();
        let generation = self.generation;
        let history_size = self.history_size;
        self.transcript_load = Some(TranscriptLoad { sent_since: 0 });
        self.loaded_through = None;
        self.chat.set_loading(true);
        let read = move || {
            let mut transcript = Transcript::default();
            let mut typed = std::collections::VecDeque::new();
            let mut through_seq = None;
            agent.with_log_held(|read_log| {
                let read = read_log(&mut |event| {
                    through_seq = Some(event.seq);
                    transcript.apply(&event);
                    if let dsh_store::EventData::UserMessage(message) = &event.data
                        && message.is_direct_user()
                        && history_size > 0
                    {
                        if typed.len() == history_size {
                            typed.pop_front();
                        }
                        typed.push_back(message.joined_text());
                    }
                });
                // Sent while the log is still held: any later append's event comes after.
                let loaded = LoadedTranscript {
                    transcript,
                    typed: typed.into(),
                    through_seq,
                    error: read.err().map(|e| (e.code(), e.to_string())),
                };
                tx.send(AppEvent::TranscriptLoaded {
                    generation,
                    loaded: Box::new(loaded),
                });
            });
        };
        // Outside a runtime (never in the app) the read runs here.
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => drop(handle.spawn_blocking(read)),
            Err(_) => read(),
        }
    }

    /// Show a transcript read off the UI thread: its cells (the notices shown meanwhile
    /// follow), and the session's typed messages in Up history after the older entries
    /// and before what was sent since.
    fn on_transcript_loaded(&mut self, loaded: LoadedTranscript) {
        let Some(load) = self.transcript_load.take() else {
            return;
        };
        let LoadedTranscript {
            mut transcript,
            typed,
            through_seq,
            error,
        } = loaded;
        if let Some(sources) = &self.sources {
            transcript.set_sessions(Arc::clone(sources));
        }
        self.chat.adopt(transcript);
        self.loaded_through = through_seq;
        let entries = self.input.history_entries();
        let split = entries.len().saturating_sub(load.sent_since);
        let (older, since) = entries.split_at(split);
        self.input.clear_history();
        for entry in older
            .iter()
            .map(String::as_str)
            .chain(typed.iter().map(String::as_str))
            .chain(since.iter().map(String::as_str))
        {
            self.input.push_history(entry);
        }
        if let Some((code, message)) = error {
            self.chat.push_error(code, message);
        }
    }

    /// Whether the open session's transcript is still being read from its log.
    pub fn transcript_loading(&self) -> bool {
        self.transcript_load.is_some()
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
        // The spinner tick, the end of "Ctrl+C again to quit" or of an Enter's wait for
        // the popup's answer, whichever comes first.
        let tick = [
            self.next_tick,
            self.quit_armed_until,
            self.answer_wait.map(|(_, at)| at),
        ]
        .into_iter()
        .flatten()
        .min();
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
        if self
            .quit_armed_until
            .is_some_and(|until| Instant::now() >= until)
        {
            self.quit_armed_until = None;
            self.dirty = true;
        }
        if let Some((id, _)) = self
            .answer_wait
            .take_if(|(_, until)| Instant::now() >= *until)
        {
            // No answer in time: the waiting Enter sends nothing (the popup says so).
            let outcomes = self.input.stop_waiting(id);
            self.act_on(outcomes);
        }
        if self.next_tick.is_some_and(|at| Instant::now() < at) {
            return;
        }
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
                self.look_up_chip_cwd();
            }
            TermEvent::Paste(text) => {
                if self.picker.is_none() {
                    let outcome = self.input.handle_paste(&text);
                    self.handle_outcome(outcome);
                }
                self.look_up_chip_cwd();
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
            TermEvent::Resize(width, height) => {
                self.input.set_screen(width, height);
                // The transcript area is about the screen less header, status and composer.
                self.screen = (width, height.saturating_sub(6));
                self.request_preview();
                self.dirty = true;
            }
            TermEvent::FocusGained | TermEvent::FocusLost => {}
        }
    }

    fn handle_key(&mut self, key: KeyEvent) {
        self.dirty = true;
        if let Some(picker) = self.picker.as_mut() {
            match picker.handle_key(&key, &mut self.picker_query_id) {
                PickerOutcome::Continue => {}
                PickerOutcome::Query {
                    query_id,
                    query,
                    limit,
                } => {
                    if limit.is_none() {
                        self.search_conversations(HitsTarget::Picker, query_id, &query);
                    }
                    self.list_for_picker(query_id, query, limit);
                }
                PickerOutcome::Close => self.close_picker(),
                PickerOutcome::Open(id) => {
                    self.close_picker();
                    self.resume_session(&id);
                }
            }
            self.request_preview();
            return;
        }
        // App keys first, except those the widget needs in context: Ctrl+D deletes on a
        // draft, Esc closes an open popup, and PgUp/PgDn page through it.
        let popup = self.input.popup_active();
        match classify_app_key(&key) {
            Some(AppAction::PageUp) if !popup => self.chat.page_up(),
            Some(AppAction::PageDown) if !popup => self.chat.page_down(),
            Some(AppAction::ScrollToBottom) => self.chat.scroll_to_bottom(),
            Some(AppAction::ToggleSnapshots) => self.chat.toggle_snapshots(),
            Some(AppAction::ToggleReasoning) => self.chat.toggle_reasoning(),
            Some(AppAction::ToggleExpand) => self.chat.toggle_expand(),
            Some(AppAction::Interrupt) => self.interrupt(),
            Some(AppAction::QuitIfEmpty) if self.input.is_empty() => self.should_quit = true,
            Some(AppAction::Escape) if !self.input.popup_active() => self.escape(),
            Some(
                AppAction::QuitIfEmpty
                | AppAction::Escape
                | AppAction::PageUp
                | AppAction::PageDown,
            )
            | None => {
                let outcome = self.input.handle_key(key);
                self.handle_outcome(outcome);
            }
        }
        self.request_preview();
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
            Outcome::Query { id, text, .. } => {
                self.search_conversations(HitsTarget::Popup, id, &text);
                self.query_candidates(id, text, None);
            }
            Outcome::More {
                id, text, limit, ..
            } => self.query_candidates(id, text, Some(limit)),
            Outcome::Waiting { id, .. } => {
                let wait = self.input.config().answer_wait();
                self.answer_wait = Some((id, Instant::now() + wait));
            }
            // Redraws (marked below), insertions, and keys nobody binds (the app's own
            // were classified before the widget saw them).
            _ => {}
        }
        self.dirty = true;
    }

    /// Acts on what an answer (or the end of a wait) did: an Enter or Tab that waited for it,
    /// then the inputs held meanwhile.
    fn act_on(&mut self, outcomes: Vec<Outcome>) {
        if outcomes.is_empty() {
            return;
        }
        // The wait is over (a held Enter may start a new one below).
        self.answer_wait = None;
        for outcome in outcomes {
            self.handle_outcome(outcome);
        }
        self.look_up_chip_cwd();
    }

    /// Esc with the popup closed: cancel a running `prepare`, else the running turn.
    fn escape(&mut self) {
        if self.submit_flow.is_preparing() {
            self.cancel_prepare();
        } else if self.agent_status == AgentStatus::Running {
            self.agent.cancel();
        }
    }

    /// Ctrl+C: cancel what runs, else clear the draft (Up brings it back), else quit —
    /// on an empty draft only when pressed twice within [`QUIT_CONFIRM`].
    fn interrupt(&mut self) {
        if self.submit_flow.is_preparing() {
            self.cancel_prepare();
        } else if self.agent_status == AgentStatus::Running {
            self.agent.cancel();
        } else if self.input.clear_draft_to_history() {
            self.submit_flow.forget_unknown_command();
        } else if self
            .quit_armed_until
            .is_some_and(|until| Instant::now() < until)
        {
            self.should_quit = true;
        } else {
            self.quit_armed_until = Some(Instant::now() + QUIT_CONFIRM);
        }
    }

    /// Whether "Ctrl+C again to quit" is on show.
    pub fn quit_armed(&self) -> bool {
        self.quit_armed_until.is_some()
    }

    /// Stops a running `prepare` and gives the text back.
    fn cancel_prepare(&mut self) {
        let (flow, mut cx) = self.submit_parts();
        flow.cancel(&mut cx);
    }

    // ----- candidates -------------------------------------------------------------------

    fn query_candidates(&mut self, query_id: u64, query: String, limit: Option<usize>) {
        // The popup is in use: index what other processes wrote meanwhile (coalesced).
        if let Some(search) = &self.search {
            search.recheck();
        }
        if let Some(previous) = self.candidate_cancel.take() {
            previous.cancel();
        }
        let Some(refs) = self.refs.clone() else {
            // No reference service mounted: `@` offers nothing.
            let outcomes = self.input.set_results(query_id, Vec::new());
            self.act_on(outcomes);
            return;
        };
        let cancel = CancellationToken::new();
        self.candidate_cancel = Some(cancel.clone());
        let agent = self.agent_ref();
        let empty = query.is_empty() && limit.is_none();
        self.first_page.empty_query_id = empty.then_some(query_id);
        // Before any checked listing answered, the empty query is answered at once from the
        // page remembered from the last run (its rows verified to still have a log), then
        // again when the listing is in.
        let head_start = (empty && !self.first_page.listing_answered)
            .then(|| {
                let pages = self
                    .first_page
                    .remembered
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                pages
                    .as_ref()
                    .and_then(|p| p.best_for(agent.cwd.as_deref()))
                    .cloned()
            })
            .flatten();
        let scope = ListingScope::Agent(agent.clone());
        let (tx, store) = (self.tx.clone(), self.store.clone());
        tokio::spawn(async move {
            let mut answered = false;
            if let Some(page) = head_start {
                let own = agent.session_id.clone();
                let verified =
                    tokio::task::spawn_blocking(move || page.verified(&store, &own)).await;
                if let Ok(page) = verified
                    && !page.rows.is_empty()
                    && !cancel.is_cancelled()
                {
                    tx.send(AppEvent::CandidatesRemembered { query_id, page });
                    answered = true;
                }
            }
            let result = refs.list_page(&scope, &query, limit, &cancel).await;
            if let Err(e) = &result
                && e.code == ErrorCode::Cancelled
            {
                return;
            }
            if answered {
                tx.send(AppEvent::CandidatesChecked { query_id, result });
            } else {
                tx.send(AppEvent::Candidates { query_id, result });
            }
        });
    }

    /// Remember the empty query's answer for the next run's first `@` (when it changed).
    fn remember_first_page(&mut self, query_id: u64, page: &dsh_reference::CandidatePage) {
        if self.first_page.empty_query_id != Some(query_id) {
            return;
        }
        let first = !std::mem::replace(&mut self.first_page.listing_answered, true);
        let Some(path) = self.first_page.path.clone() else {
            return;
        };
        let slot = Arc::clone(&self.first_page.remembered);
        let upsert = move |page: RememberedPage| {
            let mut pages = slot
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let pages = pages.get_or_insert_with(RememberedPages::default);
            pages.upsert(page).then(|| pages.clone())
        };
        if let Some(pages) = upsert(RememberedPage::of(page, self.cwd.as_deref())) {
            let path = path.clone();
            tokio::task::spawn_blocking(move || remembered_page::save(&path, &pages));
        }
        // Once a run, also the page for a directory not seen yet: the order an agent
        // without a directory gets.
        let (Some(refs), true, Some(_)) = (self.refs.clone(), first, self.cwd.as_ref()) else {
            return;
        };
        let generic = ListingScope::Agent(AgentRef {
            session_id: self.session_id.clone(),
            cwd: None,
        });
        tokio::spawn(async move {
            let listed = refs
                .list_page(&generic, "", None, &CancellationToken::new())
                .await;
            if let Ok(page) = listed
                && let Some(pages) = upsert(RememberedPage::of(&page, None))
            {
                let _ =
                    tokio::task::spawn_blocking(move || remembered_page::save(&path, &pages)).await;
            }
        });
    }

    // ----- conversation hits ------------------------------------------------------------

    /// Searches conversations for `query` of `target`'s query `query_id`, off the UI thread;
    /// the target's previous search is cancelled. Without a full-text index there is no
    /// section; an empty query removes it; an index not open yet says so.
    fn search_conversations(&mut self, target: HitsTarget, query_id: u64, query: &str) {
        let slot = match target {
            HitsTarget::Popup => &mut self.popup_hits_cancel,
            HitsTarget::Picker => &mut self.picker_hits_cancel,
        };
        if let Some(previous) = slot.take() {
            previous.cancel();
        }
        let Some(search) = self.search.as_ref() else {
            return;
        };
        // Untrimmed: a trailing space ends the last word (no prefix match).
        let index = search.index();
        let (Some(index), false) = (index.as_ref(), query.trim().is_empty()) else {
            let title = if query.trim().is_empty() {
                String::new()
            } else {
                self.hits_await_index = true;
                section_title(false, None)
            };
            self.show_hits(target, query_id, &title, Vec::new());
            return;
        };
        let exclude = (target == HitsTarget::Popup).then(|| self.session_id.clone());
        let cancel = conversation_hits::spawn_search(
            Arc::clone(index),
            HitsQuery {
                target,
                query_id,
                query: query.to_owned(),
                exclude,
            },
            self.tx.clone(),
        );
        match target {
            HitsTarget::Popup => self.popup_hits_cancel = Some(cancel),
            HitsTarget::Picker => self.picker_hits_cancel = Some(cancel),
        }
    }

    /// Shows `hits` (under `title`) in `target`'s section for query `query_id`.
    fn show_hits(
        &mut self,
        target: HitsTarget,
        query_id: u64,
        title: &str,
        hits: Vec<conversation_hits::ConversationHit>,
    ) {
        match target {
            HitsTarget::Popup => {
                let rows = popup_rows(&hits, &self.input.draft(), self.zone);
                self.input.set_hits(
                    query_id,
                    OfferedRows {
                        title: title.to_owned(),
                        rows,
                    },
                );
            }
            HitsTarget::Picker => {
                if let Some(picker) = self.picker.as_mut() {
                    picker.set_hits(query_id, title, hits);
                }
            }
        }
    }

    fn on_conversation_hits(&mut self, target: HitsTarget, query_id: u64, answer: HitsAnswer) {
        let building = section_title(true, self.indexing);
        match answer {
            // Nothing found: the section shows only while the index is still building.
            HitsAnswer::Found { hits, .. } if hits.is_empty() && self.indexing.is_none() => {
                self.show_hits(target, query_id, "", Vec::new());
            }
            HitsAnswer::Found { hits, more } => {
                let title = conversation_hits::hits_title(&building, more);
                self.show_hits(target, query_id, &title, hits);
            }
            HitsAnswer::Unsearchable => self.show_hits(target, query_id, "", Vec::new()),
            HitsAnswer::Failed(message) => {
                let title = format!(
                    "{CONVERSATIONS_TITLE} · search failed: {}",
                    visible_controls_line(&message)
                );
                self.show_hits(target, query_id, &title, Vec::new());
            }
        }
        self.request_preview();
    }

    /// The index moved on: section titles follow its progress, and once it is complete the
    /// open pickers search again (their hits came from a partial index).
    fn refresh_hits_sections(&mut self, finished: bool) {
        let title = section_title(true, self.indexing);
        self.input.set_hits_title(&title);
        if let Some(picker) = self.picker.as_mut() {
            picker.set_hits_title(&title);
        }
        let index_opened = std::mem::take(&mut self.hits_await_index);
        if !finished && !index_opened {
            return;
        }
        // Every open picker, also one whose search found nothing: it may have run before
        // the first sessions were committed.
        if let ratatui_mention::ActivePopup::Mention(popup) = self.input.active_popup() {
            let (id, query) = (popup.query_id(), popup.token().query.clone());
            self.search_conversations(HitsTarget::Popup, id, &query);
        }
        if let Some(picker) = self.picker.as_ref() {
            let (id, query) = (picker.query_id(), picker.query().to_owned());
            self.search_conversations(HitsTarget::Picker, id, &query);
        }
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
            AppEvent::CandidatesRemembered { query_id, page } => {
                let page = results_page(&page, &self.input.draft(), self.zone, &|id: &str| {
                    self.origin(id)
                });
                let outcomes = self.input.set_page(query_id, page);
                self.act_on(outcomes);
            }
            AppEvent::CandidatesChecked { query_id, result } => match result {
                Ok(page) => {
                    self.remember_cwds(&page.rows);
                    self.remember_first_page(query_id, &page);
                    let page = results_page(&page, &self.input.draft(), self.zone, &|id: &str| {
                        self.origin(id)
                    });
                    self.input.refresh_page(query_id, page);
                }
                Err(e) => self.chat.push_notice(
                    NoticeKind::Error,
                    format!(
                        "could not list sessions: {}: {}",
                        e.code.as_str(),
                        e.message
                    ),
                ),
            },
            AppEvent::Candidates { query_id, result } => {
                let outcomes = match result {
                    Ok(page) => {
                        self.remember_cwds(&page.rows);
                        self.remember_first_page(query_id, &page);
                        let page =
                            results_page(&page, &self.input.draft(), self.zone, &|id: &str| {
                                self.origin(id)
                            });
                        self.input.set_page(query_id, page)
                    }
                    Err(e) => self
                        .input
                        .set_failed(query_id, format!("{}: {}", e.code.as_str(), e.message)),
                };
                self.act_on(outcomes);
                self.request_preview();
            }
            AppEvent::Estimated { request, result } => {
                self.preview_in_flight = None;
                let answer = result.map_err(|e| e.message);
                let (lines, body) = estimate_lines(Some(answer.as_ref()));
                self.input.set_preview(ItemPreview {
                    key: request.session_id.clone(),
                    lines,
                    body,
                });
                if let Some(picker) = self.picker.as_mut() {
                    picker.set_preview(&request, answer);
                }
                if let Some(next) = self.preview_next.take() {
                    self.start_estimate(next);
                }
            }
            AppEvent::Prepared { prepare_id, result } => {
                let (flow, mut cx) = self.submit_parts();
                if let Some(sent) = flow.on_prepared(prepare_id, result, &mut cx) {
                    self.remember_sent(&sent);
                }
            }
            AppEvent::SessionOpened { id, result } => self.on_session_opened(&id, result),
            AppEvent::TranscriptLoaded { generation, loaded } => {
                if generation == self.generation {
                    self.on_transcript_loaded(*loaded);
                }
            }
            AppEvent::ChipCwd { session_id, cwd } => {
                self.known_cwds.insert(session_id, cwd);
            }
            AppEvent::SessionsListed { query_id, result } => {
                let sources = self.sources.clone();
                if let Some(picker) = self.picker.as_mut() {
                    picker.set_page(
                        query_id,
                        result.map_err(|e| format!("{}: {}", e.code.as_str(), e.message)),
                    );
                    if let Some(sources) = sources {
                        picker.set_origins(&|id: &str| sources.origin(id));
                    }
                }
                self.request_preview();
            }
            AppEvent::SearchIndexing(event) => self.on_indexing(event),
            AppEvent::ConversationHits {
                target,
                query_id,
                answer,
            } => self.on_conversation_hits(target, query_id, answer),
        }
        self.dirty = true;
    }

    fn on_indexing(&mut self, event: IndexingEvent) {
        match event {
            IndexingEvent::Progress(p) => {
                self.indexing = (p.done < p.total).then_some(p);
                self.refresh_hits_sections(false);
            }
            IndexingEvent::Notice(notice) => self.chat.push_notice(NoticeKind::Info, notice),
            IndexingEvent::Finished(result) => {
                self.indexing = None;
                self.refresh_hits_sections(true);
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
                // While the log is read for the transcript, and for what that read already
                // saw, the loaded transcript has the event.
                let loaded = self.loaded_through.is_some_and(|seq| event.seq <= seq);
                if self.transcript_load.is_none() && !loaded {
                    self.chat.apply(&event);
                }
            }
            AgentEvent::Status(status) => {
                self.agent_status = status;
                match status {
                    AgentStatus::Idle => {
                        self.queued = 0;
                        self.turn_started = None;
                        // Idle for good (not between two queued turns): unlogged text comes back.
                        if self.agent.status() == AgentStatus::Idle
                            && self.agent.queued_prompts() == 0
                        {
                            self.submit_flow
                                .give_back_unlogged(&mut self.input, &mut self.chat);
                        }
                        self.reindex_open_session();
                    }
                    AgentStatus::Running => {
                        self.turn_started.get_or_insert_with(Instant::now);
                    }
                }
            }
            AgentEvent::Staged { count } => self.queued = count,
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

    // ----- commands ---------------------------------------------------------------------

    fn run_command(&mut self, line: &str) {
        let command = match parse_command(line) {
            Ok(command) => command,
            Err(e) => {
                self.chat.push_notice(NoticeKind::Error, e.to_string());
                return;
            }
        };
        // The command line is consumed; it stays reachable with Up (and after a restart).
        self.remember_sent(line);
        self.input.clear_if_unchanged(line);
        match command {
            SlashCommand::Help => self.chat.push_notice(NoticeKind::Info, help_text()),
            SlashCommand::New => self.new_session(),
            SlashCommand::Resume(Some(id)) => self.resume_session(&id),
            SlashCommand::Resume(None) => self.open_picker(),
            SlashCommand::Title(title) => {
                self.agent.set_title(&title);
                // An empty title is refused by the agent, which reports the error itself.
                if let Some(shown) = crate::agent::title::clean_title(&title) {
                    self.chat
                        .push_notice(NoticeKind::Info, format!("title set: {shown}"));
                }
            }
            SlashCommand::Compact => self.agent.compact(),
            SlashCommand::Model(None) => {
                let (provider, model) = self.agent.model();
                let others: Vec<String> = self
                    .agent
                    .known_models()
                    .into_iter()
                    .filter(|m| *m != model)
                    .collect();
                let known = if others.is_empty() {
                    String::new()
                } else {
                    format!("; also known: {}", others.join(", "))
                };
                self.chat.push_notice(
                    NoticeKind::Info,
                    format!("model: {model} (provider {provider}){known}; /model NAME switches for the next turn"),
                );
            }
            SlashCommand::Model(Some(name)) => match self.agent.switch_model(&name) {
                Ok(()) => self.chat.push_notice(
                    NoticeKind::Info,
                    format!("model: {name} from the next turn on"),
                ),
                Err(e) => self.chat.push_error(e.code(), e.to_string()),
            },
            SlashCommand::Quit => self.should_quit = true,
        }
    }

    fn open_picker(&mut self) {
        self.picker_query_id += 1;
        let query_id = self.picker_query_id;
        self.picker = Some(SessionPicker::loading(
            self.session_id.clone(),
            query_id,
            self.zone,
        ));
        self.list_for_picker(query_id, String::new(), None);
    }

    fn close_picker(&mut self) {
        self.picker = None;
        if let Some(cancel) = self.picker_cancel.take() {
            cancel.cancel();
        }
        if let Some(cancel) = self.picker_hits_cancel.take() {
            cancel.cancel();
        }
    }

    /// The reference service, or one over the store with default limits when none is
    /// mounted (`/resume` and previews work either way).
    fn listing_service(&self) -> SessionReferences {
        self.refs.clone().unwrap_or_else(|| {
            let query: Arc<dyn dsh_store::SessionQuery> = match &self.sources {
                Some(sources) => Arc::clone(sources) as Arc<dyn dsh_store::SessionQuery>,
                None => Arc::new(self.store.clone()),
            };
            SessionReferences::new(query, ReferenceConfig::default())
        })
    }

    /// Lists every session for `/resume` off the UI thread; the previous listing is cancelled.
    fn list_for_picker(&mut self, query_id: u64, query: String, limit: Option<usize>) {
        if let Some(previous) = self.picker_cancel.take() {
            previous.cancel();
        }
        let cancel = CancellationToken::new();
        self.picker_cancel = Some(cancel.clone());
        let refs = self.listing_service();
        let tx = self.tx.clone();
        tokio::spawn(async move {
            let result = refs
                .list_page(&ListingScope::All, &query, limit, &cancel)
                .await;
            if let Err(e) = &result
                && e.code == ErrorCode::Cancelled
            {
                return;
            }
            tx.send(AppEvent::SessionsListed { query_id, result });
        });
    }

    /// Starts the estimate a visible preview needs, one at a time: while one is computed,
    /// only the newest wanted one waits (moving fast never queues up reads).
    fn request_preview(&mut self) {
        let (width, height) = self.screen;
        let wanted = match self.picker.as_mut() {
            Some(picker) => picker.want_preview(width, height),
            None => self
                .input
                .want_preview()
                .and_then(|key| self.preview_request(&key)),
        };
        let Some(request) = wanted else {
            return;
        };
        if self.preview_in_flight.is_some() {
            self.preview_next = Some(request);
        } else {
            self.start_estimate(request);
        }
    }

    /// The estimate request for the popup's selected session `key` (the label a mention of
    /// it carries).
    fn preview_request(&self, key: &str) -> Option<PreviewRequest> {
        let ratatui_mention::ActivePopup::Mention(popup) = self.input.active_popup() else {
            return None;
        };
        let item = popup.selected().filter(|item| item.key() == key)?;
        Some(PreviewRequest {
            session_id: key.to_owned(),
            label: ratatui_mention::untrusted::visible_controls_line(item.label()).into_owned(),
        })
    }

    fn start_estimate(&mut self, request: PreviewRequest) {
        self.preview_in_flight = Some(request.clone());
        let refs = self.listing_service();
        let tx = self.tx.clone();
        tokio::spawn(async move {
            let result = refs
                .estimate(
                    &request.session_id,
                    &request.label,
                    &CancellationToken::new(),
                )
                .await;
            tx.send(AppEvent::Estimated { request, result });
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
        if let Some(refusal) = self
            .sources
            .as_ref()
            .and_then(|s| s.origin(id).read_only_refusal())
        {
            self.chat.push_notice(NoticeKind::Error, refusal);
            return;
        }
        self.open_session(id.to_owned(), None);
    }

    /// Open a session for writing off the UI thread (loading a long log takes a while, and
    /// a session just left stays locked until its agent loop has wound down).
    fn open_session(&mut self, id: String, create: Option<SessionHeader>) {
        let store = self.store.clone();
        let tx = self.tx.clone();
        let provider = Arc::clone(&self.provider);
        tokio::task::spawn_blocking(move || {
            let mut retries = 0;
            let result = loop {
                // What the agent keeps of the log is gathered here, in the same pass, so
                // the UI thread never reads the log for it.
                let mut facts = LogFacts::for_provider(provider.as_ref());
                match store.open_writer_observing(&id, create.clone(), &mut |e| facts.observe(e)) {
                    Err(StoreError::Busy { .. }) if retries < OPEN_BUSY_RETRIES => {
                        retries += 1;
                        std::thread::sleep(OPEN_BUSY_PAUSE);
                    }
                    other => break other.map(|writer| (writer, Box::new(facts))),
                }
            };
            tx.send(AppEvent::SessionOpened { result, id });
        });
    }

    fn on_session_opened(
        &mut self,
        id: &str,
        result: Result<(SessionWriter, Box<LogFacts>), StoreError>,
    ) {
        match result {
            Ok((writer, facts)) => self.switch_to(writer, *facts),
            Err(e) => self
                .chat
                .push_notice(NoticeKind::Error, format!("cannot open session {id}: {e}")),
        }
    }

    /// Leave the current session (its turn is cancelled) and open `writer`'s.
    fn switch_to(&mut self, writer: SessionWriter, facts: LogFacts) {
        self.cancel_prepare();
        if let Some(cancel) = self.candidate_cancel.take() {
            cancel.cancel();
        }
        self.agent.cancel();
        self.generation += 1;
        self.submit_flow.forget_unlogged();
        self.session_id.clone_from(&writer.header().id);
        self.cwd.clone_from(&writer.header().cwd);
        let (agent, agent_rx) = Agent::spawn_with_facts(writer, facts, Arc::clone(&self.provider));
        self.agent = agent;
        self.agent_status = AgentStatus::Idle;
        self.queued = 0;
        self.chat = ChatView::new(self.chat.options());
        if let Some(sources) = &self.sources {
            self.chat.set_sessions(Arc::clone(sources));
        }
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
        if area.height < MIN_HEIGHT || area.width < MIN_WIDTH {
            render_too_small(area, buf);
            return None;
        }
        self.input.set_screen(area.width, area.height);
        let header_area = Rect::new(area.x, area.y, area.width, 1);
        let hint_area = Rect::new(area.x, area.bottom() - 1, area.width, 1);
        // Bottom up: hint, composer, status line, popup, one blank row, transcript. The
        // status line stays right above the composer (the widget leaves its row between popup
        // and composer); a popup takes its rows from the transcript. The composer keeps its
        // border and one text row, plus the status row; the transcript keeps a few rows.
        let available = area.height.saturating_sub(3);
        let min_pane = 4;
        let min_transcript = available.saturating_sub(min_pane).min(3);
        let pane_height = self.input.desired_height(area.width).clamp(
            min_pane,
            available.saturating_sub(min_transcript).max(min_pane),
        );
        let pane_area = Rect::new(area.x, hint_area.y - pane_height, area.width, pane_height);
        let composer_height = self
            .input
            .desired_height(area.width)
            .saturating_sub(self.input.popup_height() + 1)
            .clamp(1, pane_height - 1);
        let status_area = Rect::new(area.x, hint_area.y - composer_height - 1, area.width, 1);
        // One blank row keeps a full transcript off what is below it (when there is room).
        let transcript_rows = pane_area.y.saturating_sub(area.y + 1);
        let gap = u16::from(transcript_rows > 3);
        let transcript_area = Rect::new(area.x, area.y + 1, area.width, transcript_rows - gap);

        self.screen = (transcript_area.width, transcript_area.height);
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
            elapsed: self.turn_started.map(|t| t.elapsed()),
            indexing: self.indexing,
        }
        .render(status_area, buf);
        MentionInput.render(pane_area, buf, &mut self.input);
        let cursor = self.input.cursor_position();
        let hint = self.hint();
        let hint = truncate_to_width(&hint, usize::from(area.width));
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

    fn hint(&self) -> String {
        let fixed = if self.picker.is_some() {
            " type to filter · ↑↓ PgUp/PgDn Home/End move · Enter open · Alt+P preview · Esc close"
        } else if self.quit_armed() {
            " Ctrl+C again to quit"
        } else if self.input.edit_refused() {
            " not typed: an unclosed @[ would join the mention after it (paste @[…] whole)"
        } else if self.input.command_popup_active() {
            " ↑↓ move · Tab complete · Enter run · Esc close"
        } else if self.input.popup_active() {
            " ↑↓ PgUp/PgDn Home/End move · Tab/Enter insert · Alt+P preview · Esc close"
        } else if self.submit_flow.is_preparing() {
            " Esc cancel preparing (your text comes back)"
        } else if let Some(chip) = self.chip_hint() {
            return chip;
        } else if self.agent_status == AgentStatus::Running {
            " Esc interrupt · Enter steer the reply · PgUp/PgDn scroll"
        } else {
            " Enter send · Shift+Enter/Ctrl+J newline · @ reference a session · /help"
        };
        fixed.to_owned()
    }

    /// What the mention at the caret refers to: ` @label · id · cwd` (the cwd when a
    /// listing showed it), untrusted text made visible.
    /// Looks up, off the UI thread, the cwd of the session the chip at the caret names when
    /// no listing has shown it yet (a recalled or pasted mention); the hint then shows it.
    fn look_up_chip_cwd(&mut self) {
        let Some(mention) = self.input.mention_at_caret() else {
            return;
        };
        let Some(id) = parse_text(&mention)
            .ok()
            .and_then(|p| p.references.into_iter().next())
            .map(|r| r.session_id)
        else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if self.known_cwds.contains_key(&id) || !self.cwd_lookups.insert(id.clone()) {
            return;
        }
        let query: Arc<dyn dsh_store::SessionQuery> = match &self.sources {
            Some(sources) => Arc::clone(sources) as Arc<dyn dsh_store::SessionQuery>,
            None => Arc::new(self.store.clone()),
        };
        let tx = self.tx.clone();
        runtime.spawn_blocking(move || {
            let cwd = query
                .list_sessions()
                .ok()
                .and_then(|list| list.iter().find(|h| h.id == id).map(|h| h.cwd.clone()));
            if let Some(cwd) = cwd {
                tx.send(AppEvent::ChipCwd {
                    session_id: id,
                    cwd,
                });
            }
        });
    }

    fn chip_hint(&self) -> Option<String> {
        let mention = self.input.mention_at_caret()?;
        let parsed = parse_text(&mention).ok()?;
        let reference = parsed.references.first()?;
        let label = reference.label.as_deref().unwrap_or(&reference.session_id);
        let mut hint = format!(
            " @{} · {}",
            visible_controls_line(label),
            visible_controls_line(&reference.session_id)
        );
        if let Some(Some(cwd)) = self.known_cwds.get(&reference.session_id) {
            hint.push_str(" · ");
            hint.push_str(&visible_controls_line(cwd));
        }
        Some(hint)
    }
}

/// The one line shown when the window is below [`MIN_WIDTH`] x [`MIN_HEIGHT`].
fn render_too_small(area: Rect, buf: &mut Buffer) {
    let text = "window too small";
    let width = u16::try_from(text.len())
        .unwrap_or(u16::MAX)
        .min(area.width);
    let x = area.x + (area.width - width) / 2;
    let y = area.y + area.height / 2;
    buf.set_stringn(x, y, text, usize::from(width), Style::new());
}

/// The `/help` text: commands, composer keys and app keys, from their tables.
fn help_text() -> String {
    let mut out = String::from("Commands\n");
    for spec in COMMANDS {
        let _ = writeln!(out, "  {:<14} {}", spec.usage(), spec.help);
    }
    out.push_str("Keys\n");
    for (keys, help) in key_rows() {
        let _ = writeln!(out, "  {keys:<14} {help}");
    }
    out.trim_end().to_owned()
}

/// Every key `/help` lists ([`help_rows`] over the app's key map).
/// The README's key table is this list too (a test compares them).
pub fn key_rows() -> Vec<(String, &'static str)> {
    help_rows(composer_config(0).key_map())
}

#[cfg(test)]
#[path = "app_tests.rs"]
mod tests;
