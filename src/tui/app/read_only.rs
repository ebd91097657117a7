//! A session shown read-only: another tool's, or a dsh session busy in another window (its
//! writer holds the log) — opened from `/resume`, `--resume` or `--continue`. Its
//! conversation is shown in place of the open session's (read off the UI thread from its
//! source), with its token totals; nothing can be sent to it (a typed key says so), and Tab
//! or Enter go back with a mention of it in the composer ("reference it with @"); Esc goes
//! back as it was.

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::App;
use super::event::{AppEvent, AppEventSender};
use crate::tui::request_slot::{Policy, RequestSlot};
use crate::tui::transcript::chat_view::ChatView;
use crate::tui::transcript::{NoticeKind, Transcript};
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
    /// Scroll to this message once read (an opened citation), else say why not.
    pub focus: Option<super::recall_tools::Focus>,
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
/// [`ReadOnlyEvent::Loaded`] for `ticket`. With `around` (the dsh store and a seq: an opened
/// citation), only the window of the log that ends a little after that seq is read, so the
/// cited message is there however long the session is.
fn read(
    sources: Arc<SessionSources>,
    around: Option<(dsh_store::SessionStore, u64)>,
    id: String,
    ticket: u64,
    tx: AppEventSender,
) {
    tokio::task::spawn_blocking(move || {
        let mut transcript = Transcript::default();
        transcript.set_sessions(Arc::clone(&sources));
        let windowed = around
            .filter(|(store, _)| store.exists(&id))
            .map(|(store, seq)| {
                store
                    .read_window(
                        &id,
                        dsh_store::WindowEnd::BeforeSeq(seq.saturating_add(CITED_AFTER)),
                        dsh_store::WindowLimits::default(),
                    )
                    .map(|window| window.events.iter().for_each(|e| transcript.apply(e)))
                    .map_err(|e| e.to_string())
            });
        let scanned = windowed.unwrap_or_else(|| {
            sources
                .scan_surface(&id, &mut Fold(&mut transcript))
                .map(|_| ())
                .map_err(|e| e.to_string())
        });
        let title = sources.read_title(&id).ok().flatten();
        let cwd = sources
            .list_sessions()
            .ok()
            .and_then(|all| all.iter().find(|h| h.id == id).and_then(|h| h.cwd.clone()));
        let result = scanned.map(|()| Read {
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

/// Log events read after a cited message, so the view shows what followed it too.
const CITED_AFTER: u64 = 40;

impl App {
    /// Shows session `id` read-only: another tool's, or a dsh session busy in another
    /// window (said in a notice above its conversation). For `--resume` and `--continue`
    /// at start.
    pub fn show_read_only(&mut self, id: &str) {
        let origin = self.sources.as_ref().map_or(Origin::Dsh, |s| s.origin(id));
        self.open_read_only(id, origin);
    }

    /// Opens session `id` read-only (another tool's, instead of refusing to resume it; a
    /// dsh one when another window holds it).
    pub(super) fn open_read_only(&mut self, id: &str, origin: Origin) {
        self.open_read_only_at(id, origin, None);
    }

    /// [`open_read_only`](Self::open_read_only), reading only the part of a dsh session's
    /// log around `at` (an opened citation's seq).
    pub(super) fn open_read_only_at(&mut self, id: &str, origin: Origin, at: Option<u64>) {
        let Some(sources) = self.sources.clone() else {
            return;
        };
        let mut chat = ChatView::new(self.chat.options());
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
            focus: None,
        };
        if let Some(ticket) = view.slot.request(id.to_owned()) {
            let around = at.map(|seq| (self.store.clone(), seq));
            read(sources, around, id.to_owned(), ticket.id, self.tx.clone());
        }
        self.read_only = Some(view);
    }

    /// A read of a read-only session answered.
    pub(super) fn on_read_only(&mut self, event: ReadOnlyEvent) {
        let ReadOnlyEvent::Loaded { ticket, id, result } = event;
        let Some(view) = self.read_only.as_mut().filter(|v| v.id == id) else {
            return;
        };
        if view.slot.finish(ticket).0.is_none() {
            return;
        }
        match result {
            Ok(read) => {
                view.title = read
                    .title
                    .or_else(|| read.transcript.title().map(str::to_owned));
                view.cwd = read.cwd;
                view.chat.adopt(*read.transcript);
                if let Some(focus) = view.focus.take() {
                    focus.apply(&mut view.chat);
                }
            }
            Err(message) => {
                view.chat.set_loading(false);
                view.chat.push_notice(
                    NoticeKind::Error,
                    format!("cannot read session {id}: {message}"),
                );
            }
        }
    }

    /// A key while a read-only session is shown: scrolling keys scroll it, Tab or Enter go
    /// back with a mention of it in the composer, Esc or Ctrl+C go back; others type
    /// nothing (nothing can be sent to it) and the hint line says so.
    pub(super) fn read_only_key(&mut self, key: KeyEvent) {
        let redact_labels = self.redact_labels();
        let Some(view) = self.read_only.as_mut() else {
            return;
        };
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::PageUp => view.chat.page_up(),
            KeyCode::PageDown => view.chat.page_down(),
            KeyCode::End if ctrl => view.chat.scroll_to_bottom(),
            KeyCode::Up => view.chat.scroll_by(1),
            KeyCode::Down => view.chat.scroll_by(-1),
            KeyCode::Tab | KeyCode::Enter => {
                let mention = view.mention(redact_labels);
                self.read_only = None;
                let outcome = self.composer.input.insert_mention(&mention);
                self.handle_outcome(outcome);
                self.look_up_chip_cwd();
            }
            KeyCode::Esc => self.read_only = None,
            KeyCode::Char('c') if ctrl => self.read_only = None,
            KeyCode::Char(_) | KeyCode::Backspace | KeyCode::Delete => view.typed = true,
            _ => {}
        }
    }
}
