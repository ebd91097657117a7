//! A session shown read-only: another tool's, or a dsh session busy in another window (its
//! writer holds the log) — opened from `/resume`, `--resume` or `--continue`. Its
//! conversation is shown in place of the open session's (read off the UI thread from its
//! source), with its token totals; nothing can be sent to it (a typed key says so), and Tab
//! or Enter go back with a mention of it in the composer ("reference it with @"); Esc goes
//! back as it was. The view owns its state, answers its own reads and says what a key does;
//! the app shows it and acts on what it says.

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::tui::event::{AppEvent, AppEventSender};
use crate::tui::request_slot::{Policy, RequestSlot};
use crate::tui::transcript::chat_view::ChatView;
use crate::tui::transcript::{NoticeKind, RenderOptions, Transcript};
use dsh_foreign::{Origin, SessionSources};
use dsh_reference::{encode_uri, mention_label};
use dsh_store::{Event, SessionQuery, SurfaceVisitor};
use ratatui_mention::Mention;

/// A foreign session's conversation was read.
#[derive(Debug)]
pub enum ReadOnlyEvent {
    /// Session `id` of read `ticket`: its transcript and title, or why it could not be read.
    Loaded {
        ticket: u64,
        id: String,
        result: Result<Read, String>,
    },
}

/// What was read of a read-only session.
#[derive(Debug)]
pub struct Read {
    pub transcript: Box<Transcript>,
    pub title: Option<String>,
    pub cwd: Option<String>,
}

/// What a typed key in a read-only view says, and the composer's placeholder there.
pub const READ_ONLY_TYPED: &str = "read-only: Tab/Enter mention it, Esc back";

/// A session shown read-only.
pub struct ReadOnlyView {
    pub id: String,
    pub origin: Origin,
    /// A dsh session open in another window (else another tool's session).
    pub busy: bool,
    /// A key that would type was pressed: the hint line says why nothing happened.
    pub typed: bool,
    /// Its title once read (else the id names it).
    pub title: Option<String>,
    /// Where it ran, once read.
    pub cwd: Option<String>,
    pub chat: ChatView,
    slot: RequestSlot<String>,
}

impl ReadOnlyView {
    /// What the header shows for it: `[claude] Title · read-only`.
    pub fn heading(&self) -> String {
        let badge = self
            .origin
            .badge()
            .map_or_else(String::new, |b| format!("[{b}] "));
        let name = self.title.as_deref().unwrap_or(&self.id);
        if self.busy {
            format!("{badge}{name} · read-only, open in another window")
        } else {
            format!("{badge}{name} · read-only")
        }
    }

    /// The mention that references it (secrets in its label redacted when `redact_labels`).
    pub fn mention(&self, redact_labels: bool) -> Mention {
        let label = mention_label(self.title.as_deref().unwrap_or(&self.id), redact_labels);
        Mention::new(label, encode_uri(&self.id))
    }
}

/// Folds a session's surface into a transcript.
struct Fold<'a>(&'a mut Transcript);

impl SurfaceVisitor for Fold<'_> {
    fn visit(&mut self, event: &Event, _removed: &[u64]) {
        self.0.apply(event);
    }
}

/// Reads session `id` from `sources` off the UI thread; the answer comes as
/// [`ReadOnlyEvent::Loaded`] for `ticket`.
fn read(sources: Arc<SessionSources>, id: String, ticket: u64, tx: AppEventSender) {
    tokio::task::spawn_blocking(move || {
        let mut transcript = Transcript::default();
        transcript.set_sessions(Arc::clone(&sources));
        let scanned = sources
            .scan_surface(&id, &mut Fold(&mut transcript))
            .map_err(|e| e.to_string());
        let title = sources.read_title(&id).ok().flatten();
        let cwd = sources
            .list_sessions()
            .ok()
            .and_then(|all| all.iter().find(|h| h.id == id).and_then(|h| h.cwd.clone()));
        let result = scanned.map(|_| Read {
            transcript: Box::new(transcript),
            title,
            cwd,
        });
        tx.send(AppEvent::ReadOnly(ReadOnlyEvent::Loaded {
            ticket,
            id,
            result,
        }));
    });
}

/// What a key did to a read-only view, for the app to act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadOnlyKey {
    /// The view stays (scrolled, or saying that nothing can be typed).
    Stay,
    /// Go back with this mention of it in the composer.
    Mention(Mention),
    /// Go back as it was.
    Close,
}

impl ReadOnlyView {
    /// Shows session `id` of `sources` read-only (another tool's, or a dsh one `busy` in
    /// another window when `origin` is dsh's), its conversation read off the UI thread.
    pub fn open(
        id: &str,
        origin: Origin,
        sources: Arc<SessionSources>,
        options: RenderOptions,
        tx: &AppEventSender,
    ) -> ReadOnlyView {
        let mut chat = ChatView::new(options);
        chat.set_sessions(Arc::clone(&sources));
        chat.set_loading(true);
        let busy = !origin.is_foreign();
        if busy {
            chat.push_notice(
                NoticeKind::Info,
                format!(
                    "session {id} is open in another window (its writer holds the log): shown \
                     read-only here, as it was when opened — Tab/Enter mention it, Esc back"
                ),
            );
        }
        let mut view = ReadOnlyView {
            id: id.to_owned(),
            origin,
            busy,
            typed: false,
            title: None,
            cwd: None,
            chat,
            slot: RequestSlot::new(Policy::Replace),
        };
        if let Some(ticket) = view.slot.request(id.to_owned()) {
            read(sources, id.to_owned(), ticket.id, tx.clone());
        }
        view
    }

    /// A read answered (one of another view, or a stale one, changes nothing).
    pub fn on_event(&mut self, event: ReadOnlyEvent) {
        let ReadOnlyEvent::Loaded { ticket, id, result } = event;
        if id != self.id || self.slot.finish(ticket).0.is_none() {
            return;
        }
        match result {
            Ok(read) => {
                self.title = read
                    .title
                    .or_else(|| read.transcript.title().map(str::to_owned));
                self.cwd = read.cwd;
                self.chat.adopt(*read.transcript);
            }
            Err(message) => {
                self.chat.set_loading(false);
                self.chat.push_notice(
                    NoticeKind::Error,
                    format!("cannot read session {id}: {message}"),
                );
            }
        }
    }

    /// A key: scrolling keys scroll it, Tab or Enter go back with a mention of it (secrets
    /// in its label redacted when `redact_labels`), Esc or Ctrl+C go back; others type
    /// nothing (nothing can be sent to it) and the hint line says so.
    pub fn handle_key(&mut self, key: KeyEvent, redact_labels: bool) -> ReadOnlyKey {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::PageUp => self.chat.page_up(),
            KeyCode::PageDown => self.chat.page_down(),
            KeyCode::End if ctrl => self.chat.scroll_to_bottom(),
            KeyCode::Up => self.chat.scroll_by(1),
            KeyCode::Down => self.chat.scroll_by(-1),
            KeyCode::Tab | KeyCode::Enter => {
                return ReadOnlyKey::Mention(self.mention(redact_labels));
            }
            KeyCode::Esc => return ReadOnlyKey::Close,
            KeyCode::Char('c') if ctrl => return ReadOnlyKey::Close,
            KeyCode::Char(_) | KeyCode::Backspace | KeyCode::Delete => self.typed = true,
            _ => {}
        }
        ReadOnlyKey::Stay
    }
}
