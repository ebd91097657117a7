//! The app: owns the terminal, the event loop and routing. Terminal input, agent events and
//! background answers all arrive here and go to the part they concern — the composer, the
//! `@` popup's listing, the conversation searches, the previews, the `/resume` picker, the
//! open session and its transcript — each with its own request slot and event sub-enum.
//! One frame is drawn after each burst; nothing runs on a timer while idle (the spinner
//! ticks only while preparing or running).

mod event_loop;
mod held_input;
mod input;
pub mod keys;
mod layout;
mod mouse;
mod render;
mod routing;

use std::sync::Arc;

use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::agent::{Agent, LogFacts};
use crate::llm::Provider;
use crate::tui::chrome::status_line::Phase;
use crate::tui::composer::Composer;
use crate::tui::composer::candidates::Candidates;
use crate::tui::composer::remembered_page;
use crate::tui::composer::submit_flow::SubmitFlow;
use crate::tui::event::{AppEvent, AppEventSender};
use crate::tui::picker::ResumePicker;
use crate::tui::preview::Previews;
use crate::tui::search::conversation_hits::ConversationHits;
use crate::tui::search::indexing::{Search, SearchIndexing};
use crate::tui::session::read_only::ReadOnlyView;
use crate::tui::session::transcript_load::TranscriptLoader;
use crate::tui::session::{OpenSession, SessionSwitcher};
use crate::tui::transcript::RenderOptions;
use crate::tui::transcript::chat_view::ChatView;
use dsh_foreign::SessionSources;
use dsh_reference::{ReferenceConfig, SessionReferences};
use dsh_search::{IndexOptions, Progress, SessionIndex};
use dsh_store::{SessionQuery, SessionStore, SessionWriter};

pub use layout::{MIN_HEIGHT, MIN_WIDTH};
pub use mouse::MouseSwitch;
pub use render::key_rows;

/// Knobs from the `[tui]` config section.
#[derive(Debug, Clone, Copy)]
pub struct AppOptions {
    pub history_size: usize,
    pub show_reasoning: bool,
}

/// The terminal's side: whether a frame is due, how many were drawn, whether the last one
/// was too small to show the app, whether the mouse is captured, whether to leave.
#[derive(Default)]
struct Frames {
    dirty: bool,
    drawn: u64,
    too_small: bool,
    mouse: mouse::MouseCapture,
    should_quit: bool,
}

/// The timers of an idle-free loop: the spinner while busy, and the end of "Ctrl+C again
/// to quit".
#[derive(Debug, Default)]
struct Ticks {
    spinner_frame: usize,
    next_tick: Option<Instant>,
    quit_armed_until: Option<Instant>,
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
    session: OpenSession,
    switcher: SessionSwitcher,
    transcript: TranscriptLoader,
    chat: ChatView,
    composer: Composer,
    candidates: Candidates,
    hits: ConversationHits,
    previews: Previews,
    picker: Option<ResumePicker>,
    /// Another tool's session opened from `/resume`, shown read-only.
    read_only: Option<ReadOnlyView>,
    submit_flow: SubmitFlow,
    search: Search,
    ticks: Ticks,
    frames: Frames,
    /// Keys and pastes that came while the picker's Enter waited or a switch was under
    /// way, for what shows once it is done.
    held: held_input::HeldInput,
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
        opened: (SessionWriter, Option<LogFacts>),
        options: AppOptions,
    ) -> App {
        let (tx, rx) = AppEventSender::channel();
        let chat = ChatView::new(RenderOptions {
            expand_reasoning: options.show_reasoning,
            ..RenderOptions::default()
        });
        let session = OpenSession::start(opened, &provider, 0, &tx);
        let mut switcher = SessionSwitcher::default();
        switcher.home_cwd.clone_from(&session.cwd);
        let mut app = App {
            tx,
            rx,
            store,
            sources: None,
            refs,
            provider,
            session,
            switcher,
            transcript: TranscriptLoader::default(),
            chat,
            composer: Composer::new(options.history_size),
            candidates: Candidates::default(),
            hits: ConversationHits::default(),
            previews: Previews::default(),
            picker: None,
            read_only: None,
            submit_flow: SubmitFlow::default(),
            search: Search::default(),
            ticks: Ticks::default(),
            frames: Frames {
                dirty: true,
                ..Frames::default()
            },
            held: held_input::HeldInput::default(),
        };
        app.load_transcript();
        app
    }

    /// Where `/new` opens its session (default: the first session's cwd); set to the
    /// process's directory when the app starts on a resumed session.
    pub fn set_home_cwd(&mut self, cwd: Option<String>) {
        self.switcher.home_cwd = cwd;
    }

    /// Remembers the `@` popup's empty-query first page in `path` (the store's cache
    /// directory) between runs, and answers a `@` typed before the listing is in from it.
    pub fn remember_first_page_in(&mut self, path: std::path::PathBuf) {
        self.candidates.first_page.path = Some(path);
    }

    /// Keeps pins and uses in the usage book at `path` (read by
    /// [`warm_listing`](Self::warm_listing)); without it they last this run only.
    pub fn keep_usage_in(&mut self, path: std::path::PathBuf) {
        self.candidates.sources.usage = crate::tui::composer::usage::Usage::at(Some(path));
    }

    /// Shows `text` as a notice in the transcript (something about this run the user should
    /// know: logging off, the offline model standing in).
    pub fn show_notice(&mut self, text: String) {
        self.chat
            .push_notice(crate::tui::transcript::NoticeKind::Info, text);
    }

    /// Keeps sent inputs in the history file at `path` from now on, and puts the entries
    /// already there into Up history (older than this session's own messages).
    pub fn use_history_file(&mut self, path: &std::path::Path, max_entries: usize) {
        self.composer
            .use_history_file(path, max_entries, &mut self.chat);
    }

    /// Records a sent input typed at `typed_at_ms`: Up history now, and the history file
    /// for other windows and later runs.
    fn remember_sent(&mut self, text: &str, typed_at_ms: u64) {
        self.composer
            .remember_sent(text, typed_at_ms, &mut self.chat);
    }

    /// List the sessions and read their summaries (title, last activity, message count) in
    /// the background, so the first `@` popup or `/resume` answers from memory; the first frame never waits for it.
    pub fn warm_listing(&self) {
        let Some(refs) = self.refs.clone() else {
            return;
        };
        // A `@` typed before the warm-up starts may get the store's early listing, and
        // before that the first page remembered from the last run.
        self.store.allow_early_listing();
        let usage = self.candidates.sources.usage.clone();
        tokio::task::spawn_blocking(move || usage.load());
        if let Some(path) = &self.candidates.first_page.path {
            let (path, slot) = (
                path.clone(),
                Arc::clone(&self.candidates.first_page.remembered),
            );
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
            // Summaries, not only titles: the pickers list by last activity.
            if let Err(e) = refs.warm_ordered_listing(&CancellationToken::new()).await {
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
        self.search.indexing = Some(SearchIndexing::start(
            self.store.clone(),
            options,
            foreign,
            self.tx.clone(),
        ));
        self.offer_recall();
    }

    /// The full-text index, once open (for the `@` popup and the resume picker).
    pub fn search_index(&self) -> Option<Arc<SessionIndex>> {
        self.search
            .indexing
            .as_ref()
            .and_then(SearchIndexing::index)
    }

    /// Progress of a running index update, as the status line shows it.
    pub fn indexing_progress(&self) -> Option<Progress> {
        self.search.progress
    }

    /// List other tools' sessions too (with their origin badge) in `/resume`, which refuses
    /// to open them: they are read-only. `warnings` (a configured source path that lists
    /// nothing) are shown once, as one notice.
    pub fn set_sources(&mut self, sources: Arc<SessionSources>, warnings: &[String]) {
        self.chat.set_sessions(Arc::clone(&sources));
        self.sources = Some(sources);
        if !warnings.is_empty() {
            self.chat.push_notice(
                crate::tui::transcript::NoticeKind::Error,
                warnings.join("\n"),
            );
        }
        self.offer_recall();
    }

    /// Offer `search_references` to the open session's agent (again after the sources or
    /// the index changed, and for every session opened).
    fn offer_recall(&self) {
        let Some(sources) = &self.sources else {
            return;
        };
        let redact = self
            .refs
            .as_ref()
            .is_none_or(|refs| refs.config().redact_secrets);
        let query: Arc<dyn SessionQuery> = Arc::clone(sources) as Arc<dyn SessionQuery>;
        let mut tool =
            crate::agent::tools::recall::RecallTool::new(query, self.store.clone(), redact);
        if let Some(indexing) = &self.search.indexing {
            tool = tool.with_index(Arc::new(indexing.index_source()));
        }
        self.session.agent.set_tools(Arc::new(tool));
    }

    /// Where each session comes from (its badge), as the sources list it; owning, so the
    /// rows of an answer can be built while the app is borrowed.
    fn origin_of(&self) -> impl Fn(&str) -> dsh_foreign::Origin + use<> {
        let sources = self.sources.clone();
        move |id| {
            sources
                .as_ref()
                .map_or(dsh_foreign::Origin::Dsh, |s| s.origin(id))
        }
    }

    /// Every session, for lookups: the sources, or the store alone.
    fn session_query(&self) -> Arc<dyn SessionQuery> {
        match &self.sources {
            Some(sources) => Arc::clone(sources) as Arc<dyn SessionQuery>,
            None => Arc::new(self.store.clone()),
        }
    }

    /// The reference service, or one over the sessions with default limits when none is
    /// mounted (`/resume` and previews work either way).
    fn listing_service(&self) -> SessionReferences {
        self.refs.clone().unwrap_or_else(|| {
            SessionReferences::new(self.session_query(), ReferenceConfig::default())
        })
    }

    /// Tells the terminal to start or stop reporting the mouse with `switch` when
    /// [`AppAction::ToggleMouse`](keys::AppAction::ToggleMouse) is pressed (capture is on
    /// at start).
    pub fn set_mouse_switch(&mut self, switch: MouseSwitch) {
        self.frames.mouse.set_switch(switch);
    }

    /// Whether the app has the terminal report the mouse.
    pub fn mouse_captured(&self) -> bool {
        self.frames.mouse.is_on()
    }

    /// Shows session `id` read-only: another tool's, or a dsh session busy in another
    /// window (said in a notice above its conversation). For `--resume` and `--continue`
    /// at start.
    pub fn show_read_only(&mut self, id: &str) {
        let origin = self
            .sources
            .as_ref()
            .map_or(dsh_foreign::Origin::Dsh, |s| s.origin(id));
        self.open_read_only(id, origin);
    }

    /// Shows `text` as a notice in the transcript (said at start, e.g. by `--continue`).
    pub fn notice(&mut self, text: &str) {
        self.chat
            .push_notice(crate::tui::transcript::NoticeKind::Info, text.to_owned());
    }

    /// A sender on the app's event bus.
    pub fn sender(&self) -> AppEventSender {
        self.tx.clone()
    }

    /// The open session's id.
    pub fn session_id(&self) -> &str {
        &self.session.id
    }

    /// How many frames have been drawn (for tests of redraw coalescing).
    pub fn frames_drawn(&self) -> u64 {
        self.frames.drawn
    }

    /// The agent of the open session.
    pub fn agent(&self) -> &Agent {
        &self.session.agent
    }

    /// The composer's current text.
    pub fn draft(&self) -> String {
        self.composer.input.draft()
    }

    /// Whether the app wants to exit.
    pub fn should_quit(&self) -> bool {
        self.frames.should_quit
    }

    /// Whether "Ctrl+C again to quit" is on show.
    pub fn quit_armed(&self) -> bool {
        self.ticks.quit_armed_until.is_some()
    }

    /// Whether the open session's transcript is still being read from its log.
    pub fn transcript_loading(&self) -> bool {
        self.transcript.is_loading()
    }

    /// What the status line shows.
    pub fn phase(&self) -> Phase {
        if self.submit_flow.is_preparing_references() {
            return Phase::Preparing;
        }
        match self.session.status {
            crate::agent::AgentStatus::Idle => Phase::Idle,
            crate::agent::AgentStatus::Running if self.chat.transcript().live_has_output() => {
                Phase::Responding
            }
            crate::agent::AgentStatus::Running => Phase::Waiting,
        }
    }
}

#[cfg(test)]
mod input_tests;
#[cfg(test)]
mod tests;
