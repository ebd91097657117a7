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
use dsh_store::{Event, SessionQuery, SessionStore, SurfaceVisitor};
use ratatui_mention::Mention;
use term_text::visible_controls_line;

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
    pub focus: Option<Focus>,
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

/// Where an opened citation points, kept until its session is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Focus {
    pub seq: u64,
    pub label: String,
    /// What a search of the citing turn returned for it (shown when the session no longer
    /// shows the message: a compaction replaced it).
    pub recalled: Option<String>,
}

impl Focus {
    /// Scroll `chat` (the cited session, read) to the message; else say why not.
    pub fn apply(self, chat: &mut ChatView) {
        if chat.focus_seq(self.seq) {
            return;
        }
        let label = visible_controls_line(&self.label).into_owned();
        let text = match self.recalled {
            Some(text) => format!(
                "message #{} of {label} is no longer shown in its session (a compaction \
                 replaced it); the search returned: {}",
                self.seq,
                visible_controls_line(&text)
            ),
            None => format!(
                "{label} has no message #{}: the citation points nowhere",
                self.seq
            ),
        };
        chat.push_notice(NoticeKind::Error, text);
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
    around: Option<(SessionStore, u64)>,
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

/// Log events read after a cited message, so the view shows what followed it too.
const CITED_AFTER: u64 = 40;

impl ReadOnlyView {
    /// Shows session `id` of `sources` read-only (another tool's, or a dsh one `busy` in
    /// another window when `origin` is dsh's), its conversation read off the UI thread —
    /// with `around` (the dsh store and an opened citation's seq) only the part of its log
    /// around that seq.
    pub fn open(
        id: &str,
        origin: Origin,
        sources: Arc<SessionSources>,
        around: Option<(SessionStore, u64)>,
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
            focus: None,
        };
        if let Some(ticket) = view.slot.request(id.to_owned()) {
            read(sources, around, id.to_owned(), ticket.id, tx.clone());
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
                if let Some(focus) = self.focus.take() {
                    focus.apply(&mut self.chat);
                }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::transcript::HistoryCell;
    use dsh_store::{Event, EventData, Message, SurfaceOp};

    fn notices(chat: &ChatView) -> Vec<String> {
        chat.transcript()
            .cells()
            .iter()
            .filter_map(|c| match c {
                HistoryCell::Notice { text, .. } => Some(text.clone()),
                _ => None,
            })
            .collect()
    }

    fn focus(seq: u64, recalled: Option<&str>) -> Focus {
        Focus {
            seq,
            label: "Kafka\u{1b}[2J plan".into(),
            recalled: recalled.map(str::to_owned),
        }
    }

    #[test]
    fn a_cited_message_is_focused_else_shown_from_the_search_or_said_missing() {
        let mut chat = ChatView::default();
        chat.transcript_mut().apply(&Event {
            seq: 7,
            time: 0,
            surface_op: Some(SurfaceOp::Append),
            data: EventData::UserMessage(Message::user_text("we chose kafka")),
            source_event_seqs: None,
        });
        focus(7, None).apply(&mut chat);
        assert!(notices(&chat).is_empty());
        // Replaced by a compaction: what the search returned, controls made visible.
        focus(3, Some("we chose\u{7} redis first")).apply(&mut chat);
        // A seq the session never had.
        focus(99, None).apply(&mut chat);
        let said = notices(&chat);
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(
            said[0].contains("message #3 of Kafka")
                && said[0].contains("a compaction replaced it")
                && said[0].contains("redis first"),
            "{said:?}"
        );
        assert!(said[1].contains("has no message #99"), "{said:?}");
        assert!(
            said.iter()
                .all(|s| !s.contains('\u{1b}') && !s.contains('\u{7}'))
        );
    }
}
