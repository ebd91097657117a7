//! App-level tests: snapshots of whole screens over `TestBackend`, key-sequence tests of
//! the submit paths, and paused-time tests of redraw coalescing and prepare cancellation.

use crate::tui::composer::listed_page::ListedPage;
use std::sync::Arc;
use std::time::Duration;

use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use futures_util::StreamExt;
use pretty_assertions::assert_eq;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

use super::input::QUIT_CONFIRM;
use super::*;
use crate::agent::AgentEvent;
use crate::agent::AgentStatus;
use crate::llm::OfflineProvider;
use crate::llm::Provider;
use crate::tui::chrome::status_line::Phase;
use crate::tui::commands::COMMANDS;
use crate::tui::composer::candidates::{CandidatesEvent, CandidatesPhase};
use crate::tui::search::conversation_hits::ConversationHit;
use crate::tui::search::conversation_hits::{HitsAnswer, HitsEvent, HitsTarget};
use crate::tui::search::indexing::IndexingEvent;
use crate::tui::transcript::HistoryCell;
use dsh_foreign::{Origin, SessionSources};
use dsh_reference::{AgentRef, SessionReferences};
use dsh_reference::{ReferenceConfig, format_mention};
use dsh_search::{IndexOptions, Progress};
use dsh_store::SessionQuery;
use dsh_store::event::{TitleData, TitleSource};
use dsh_store::{ContentBlock, Event, EventData, Message, NewEvent, Role, Source, SurfaceOp};
use dsh_store::{SessionHeader, SessionStore};
use std::fmt::Write as _;
use tokio::time::Instant;

pub(super) const CWD: &str = "/home/demo/projects/atlas";

pub(super) struct Harness {
    _dir: tempfile::TempDir,
    pub(super) app: App,
}

pub(super) fn seed(store: &SessionStore, id: &str, title: &str) {
    let header = SessionHeader::new(id, 1_700_000_000_000, Some(CWD.to_owned()));
    let mut writer = store.open_writer(id, Some(header)).unwrap();
    let reply = Message::new(
        Role::Assistant,
        vec![ContentBlock::text("The token expired.")],
        Source::model("offline", "offline-echo"),
    );
    writer
        .append(dsh_store::layout::in_turns(
            1,
            [
                NewEvent::appended(EventData::UserMessage(Message::user_text(
                    "Why does login fail?",
                ))),
                NewEvent::appended(EventData::AssistantMessage {
                    turn: 1,
                    step: 1,
                    message: reply,
                    usage: None,
                    extra: serde_json::Map::new(),
                }),
                user_title(title),
            ],
        ))
        .unwrap();
}

/// A `session/title` event setting `title` as a person would (`/title`).
pub(super) fn user_title(title: &str) -> NewEvent {
    NewEvent::plain(EventData::SessionTitle(TitleData {
        title: title.to_owned(),
        message_seqs: vec![],
        source: TitleSource {
            kind: "user".into(),
            extra: serde_json::Map::new(),
        },
        extra: serde_json::Map::new(),
    }))
}

pub(super) async fn harness(with_refs: bool) -> Harness {
    harness_in(with_refs, CWD).await
}

/// Like [`harness`], the open session's cwd being `cwd`.
pub(super) async fn harness_in(with_refs: bool, cwd: &str) -> Harness {
    let dir = tempfile::TempDir::new().unwrap();
    let store = SessionStore::new(dir.path());
    seed(&store, "s-alpha", "Alpha login bug");
    let refs = with_refs.then(|| {
        let query: Arc<dyn SessionQuery> = Arc::new(store.clone());
        SessionReferences::new(query, ReferenceConfig::default())
    });
    let header = SessionHeader::new("s-test", 1_700_000_000_500, Some(cwd.to_owned()));
    let writer = store.open_writer("s-test", Some(header)).unwrap();
    let provider: Arc<dyn Provider> = Arc::new(OfflineProvider::new());
    let options = AppOptions {
        history_size: 50,
        show_reasoning: false,
    };
    let mut app = App::new(store, refs, provider, writer, options);
    settle_transcript(&mut app).await;
    Harness { _dir: dir, app }
}

/// Let the transcript read off the UI thread arrive (an app starts with it in flight).
async fn settle_transcript(app: &mut App) {
    pump_until(app, |app| !app.transcript_loading()).await;
}

pub(super) fn key(code: KeyCode) -> TermEvent {
    TermEvent::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

pub(super) fn ctrl(c: char) -> TermEvent {
    TermEvent::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL))
}

pub(super) fn type_text(app: &mut App, text: &str) {
    for c in text.chars() {
        app.handle_terminal_event(key(KeyCode::Char(c)));
    }
}

fn alpha_mention() -> String {
    format!(
        "{} what broke?",
        format_mention("s-alpha", Some("Alpha login bug"))
    )
}

pub(super) fn screen(app: &mut App, width: u16, height: u16) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    app.draw(&mut terminal).unwrap();
    terminal
}

fn context_event(seq: u64) -> Event {
    let context = Message::new(
        Role::User,
        vec![ContentBlock::text(
            "## Referenced sessions\n\nRead-only snapshot.\n\n<referenced-sessions>\n[{\"sessionId\":\"s-alpha\",\"label\":\"Alpha login bug\"}]\n</referenced-sessions>",
        )],
        Source::session_reference(json!([{
            "sessionId": "s-alpha", "label": "Alpha login bug", "capturedThroughSeq": 2,
            "compacted": false, "originalMessages": 2, "retainedMessages": 2,
            "omittedMessages": 0, "omittedBytes": 0, "truncated": false, "inputIndex": 0
        }])),
    );
    Event {
        seq,
        time: 0,
        data: EventData::UserMessage(context),
        surface_op: Some(SurfaceOp::Append),
        source_event_seqs: None,
    }
}

pub(super) fn deliver(app: &mut App, event: AgentEvent) {
    let generation = app.session.generation;
    app.handle_app_event(AppEvent::Agent { generation, event });
}

pub(super) fn notices(app: &App) -> Vec<String> {
    app.chat
        .transcript()
        .cells()
        .iter()
        .filter_map(|c| match c {
            HistoryCell::Notice { text, .. } => Some(text.clone()),
            HistoryCell::Error { code, message } => Some(format!("{code}: {message}")),
            _ => None,
        })
        .collect()
}

fn logged_kinds(app: &App) -> Vec<String> {
    app.agent()
        .snapshot_events()
        .iter()
        .map(|e| e.kind().to_owned())
        .collect()
}

/// A `@` typed before the listing is in gets the first page remembered from the last run
/// at once — only rows whose session still has a log — and the checked answer replaces it;
/// the new answer is remembered for the next run.
#[tokio::test]
async fn the_first_at_shows_the_remembered_page_then_the_checked_one() {
    use crate::tui::composer::remembered_page::{self, RememberedPage};
    let mut h = harness(true).await;
    let cache = tempfile::TempDir::new().unwrap();
    let path = cache.path().join("first-page.json");
    let stale = dsh_reference::CandidatePage {
        rows: ["s-alpha", "s-gone"]
            .iter()
            .map(|id| dsh_reference::Candidate {
                session_id: (*id).into(),
                label: format!("remembered {id}"),
                cwd: Some(CWD.into()),
                created_at: 1_700_000_000_000,
            })
            .collect(),
        total: 2,
        closest: Vec::new(),
    };
    let mut stale_pages = remembered_page::RememberedPages::default();
    stale_pages.upsert(RememberedPage::of(
        &ListedPage::without_details(stale, 0),
        Some(CWD),
    ));
    remembered_page::save(&path, &stale_pages);
    h.app.remember_first_page_in(path.clone());
    h.app.warm_listing();
    // The page is read on a blocking thread; nothing is sent when it is in.
    for _ in 0..2000 {
        if h.app
            .candidates
            .first_page
            .remembered
            .lock()
            .unwrap()
            .as_ref()
            .is_some_and(|p| p.best_for(Some(CWD)).is_some())
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    type_text(&mut h.app, "@");
    let mut seen = Vec::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(20), h.app.rx.recv())
            .await
            .expect("answers in time")
            .expect("bus open");
        let kind = match &event {
            AppEvent::Candidates(CandidatesEvent {
                phase: CandidatesPhase::Remembered(_),
                ..
            }) => Some("remembered"),
            AppEvent::Candidates(CandidatesEvent {
                phase: CandidatesPhase::Checked(_),
                ..
            }) => Some("checked"),
            AppEvent::Candidates(CandidatesEvent {
                phase: CandidatesPhase::Answered(_),
                ..
            }) => Some("plain"),
            _ => None,
        };
        h.app.handle_app_event(event);
        let Some(kind) = kind else { continue };
        let shown = format!("{}", screen(&mut h.app, 100, 20).backend());
        seen.push(kind);
        if kind == "remembered" {
            assert!(shown.contains("remembered s-alpha"), "{shown}");
            assert!(
                !shown.contains("s-gone"),
                "a session without a log: {shown}"
            );
        } else {
            assert!(shown.contains("Alpha login bug"), "{shown}");
            assert!(!shown.contains("remembered"), "{shown}");
            break;
        }
    }
    assert_eq!(seen, ["remembered", "checked"]);
    // The checked page is remembered for the next run, and the page for a directory not
    // seen yet (an agent without one) too.
    let kept = |pages: &remembered_page::RememberedPages| {
        pages.best_for(Some(CWD)) != stale_pages.best_for(Some(CWD)) && pages.has_generic()
    };
    // Up to 60 s: the generic page comes from a second listing in the background, slow
    // when the suite runs beside other builds on two cores (it once took over 10 s).
    for _ in 0..12_000 {
        if remembered_page::load(&path).is_some_and(|p| kept(&p)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let pages = remembered_page::load(&path).unwrap();
    assert!(kept(&pages), "{pages:?}");
    assert!(pages.best_for(Some("/a/dir/never/seen")).is_some());
    // Later `@`s in this run are answered by the listing alone.
    h.app.handle_terminal_event(key(KeyCode::Esc));
    type_text(&mut h.app, " @");
    let event = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if let Some(AppEvent::Candidates(e)) = h.app.rx.recv().await {
                return e;
            }
        }
    })
    .await
    .unwrap();
    assert!(
        matches!(event.phase, CandidatesPhase::Answered(_)),
        "{event:?}"
    );
}

/// Until the first listing answers (seconds on a large store without an index), the `@`
/// popup says it is loading rather than only inviting to type.
#[tokio::test]
async fn the_popup_says_it_is_loading_until_the_first_listing_answers() {
    let mut h = harness(true).await;
    type_text(&mut h.app, "@");
    let shown = format!("{}", screen(&mut h.app, 100, 20).backend());
    assert!(
        shown.contains("loading sessions… type to filter"),
        "{shown}"
    );
    pump_until(&mut h.app, |app| {
        app.composer.input.results().is_some_and(|p| !p.is_empty())
    })
    .await;
    let shown = format!("{}", screen(&mut h.app, 100, 20).backend());
    assert!(!shown.contains("loading sessions"), "{shown}");
    assert!(shown.contains("Alpha login bug"), "{shown}");
}

#[tokio::test]
async fn empty_app() {
    let mut h = harness(true).await;
    let terminal = screen(&mut h.app, 80, 20);
    insta::assert_snapshot!(terminal.backend());
    assert_eq!(h.app.phase(), Phase::Idle);
}

#[tokio::test]
async fn layout_at_60x15() {
    let mut h = harness(true).await;
    deliver(&mut h.app, AgentEvent::Appended(context_event(0)));
    type_text(
        &mut h.app,
        "a draft that is long enough to wrap onto a second line here",
    );
    let terminal = screen(&mut h.app, 60, 15);
    insta::assert_snapshot!(terminal.backend());
    // The real cursor sits on the caret, inside the composer, at the end of the text.
    let mut terminal = terminal;
    let cursor = terminal.get_cursor_position().unwrap();
    assert!(cursor.y >= 10 && cursor.y < 14, "cursor {cursor:?}");
}

#[tokio::test]
async fn preparing_state() {
    let mut h = harness(true).await;
    let text = alpha_mention();
    h.app.handle_terminal_event(TermEvent::Paste(text.clone()));
    h.app.handle_terminal_event(key(KeyCode::Enter));
    assert_eq!(h.app.phase(), Phase::Preparing);
    // A second Enter does nothing while preparing.
    h.app.handle_terminal_event(key(KeyCode::Enter));
    assert_eq!(h.app.draft(), text);
    let terminal = screen(&mut h.app, 80, 20);
    insta::assert_snapshot!(terminal.backend());
}

#[tokio::test]
async fn error_notice_keeps_the_text() {
    let mut h = harness(true).await;
    let text = "see @[x](dsh-session:abc) please";
    h.app
        .handle_terminal_event(TermEvent::Paste(text.to_owned()));
    h.app.handle_terminal_event(key(KeyCode::Enter));
    assert_eq!(h.app.draft(), text);
    assert_eq!(h.app.phase(), Phase::Idle);
    let notices = notices(&h.app);
    assert!(
        notices[0].starts_with("SESSION_REFERENCE_INVALID_REFERENCE: "),
        "{notices:?}"
    );
    let terminal = screen(&mut h.app, 80, 20);
    insta::assert_snapshot!(terminal.backend());
}

#[tokio::test]
async fn reference_card_collapsed_and_expanded() {
    let mut h = harness(true).await;
    deliver(&mut h.app, AgentEvent::Appended(context_event(0)));
    let collapsed = screen(&mut h.app, 80, 20);
    insta::assert_snapshot!("reference_card_collapsed", collapsed.backend());
    h.app.handle_terminal_event(ctrl('o'));
    let readable = screen(&mut h.app, 80, 20);
    insta::assert_snapshot!("reference_card_expanded", readable.backend());
    h.app.handle_terminal_event(ctrl('o'));
    let exact = screen(&mut h.app, 80, 20);
    insta::assert_snapshot!("reference_card_exact_bytes", exact.backend());
    h.app.handle_terminal_event(ctrl('o'));
    let again = screen(&mut h.app, 80, 20);
    assert_eq!(again.backend().buffer(), collapsed.backend().buffer());
}

#[tokio::test]
async fn ctrl_o_without_cards_says_so() {
    let mut h = harness(true).await;
    h.app.handle_terminal_event(ctrl('o'));
    let notices = notices(&h.app);
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(notices[0].contains("no referenced sessions"), "{notices:?}");
}

#[tokio::test]
async fn queued_badge() {
    let mut h = harness(true).await;
    deliver(&mut h.app, AgentEvent::Status(AgentStatus::Running));
    deliver(&mut h.app, AgentEvent::Staged { count: 2 });
    let terminal = screen(&mut h.app, 80, 20);
    insta::assert_snapshot!(terminal.backend());
    deliver(&mut h.app, AgentEvent::Staged { count: 0 });
    deliver(&mut h.app, AgentEvent::Status(AgentStatus::Idle));
    let terminal = screen(&mut h.app, 80, 20);
    assert!(!format!("{}", terminal.backend()).contains("queued"));
}

#[tokio::test]
async fn mention_without_reference_service_is_refused_and_kept() {
    let mut h = harness(false).await;
    let text = alpha_mention();
    h.app.handle_terminal_event(TermEvent::Paste(text.clone()));
    h.app.handle_terminal_event(key(KeyCode::Enter));
    assert_eq!(h.app.draft(), text);
    assert_eq!(h.app.phase(), Phase::Idle);
    assert!(notices(&h.app)[0].contains("no session store is mounted"));
}

#[tokio::test(start_paused = true)]
async fn ctrl_c_clears_the_draft_then_quits_only_when_pressed_twice() {
    let mut h = harness(true).await;
    type_text(&mut h.app, "abc");
    h.app.handle_terminal_event(ctrl('c'));
    assert_eq!(h.app.draft(), "");
    assert!(!h.app.should_quit());
    h.app.handle_terminal_event(key(KeyCode::Up));
    assert_eq!(h.app.draft(), "abc", "Up brings the cleared draft back");
    h.app.handle_terminal_event(ctrl('c'));
    assert!(
        !h.app.quit_armed(),
        "clearing a draft does not arm quitting"
    );
    h.app.handle_terminal_event(ctrl('c'));
    assert!(
        !h.app.should_quit(),
        "one press on an empty draft only warns"
    );
    let terminal = screen(&mut h.app, 80, 10);
    assert!(format!("{}", terminal.backend()).contains("Ctrl+C again to quit"));
    // The warning goes away by itself after two seconds, and a later press warns again.
    let mut input = Box::pin(futures_util::stream::pending());
    let started = Instant::now();
    assert!(h.app.step(&mut input).await.unwrap());
    assert_eq!(started.elapsed(), QUIT_CONFIRM);
    assert!(!h.app.quit_armed());
    let terminal = screen(&mut h.app, 80, 10);
    assert!(!format!("{}", terminal.backend()).contains("Ctrl+C again to quit"));
    h.app.handle_terminal_event(ctrl('c'));
    assert!(!h.app.should_quit());
    tokio::time::advance(QUIT_CONFIRM / 2).await;
    h.app.handle_terminal_event(ctrl('c'));
    assert!(
        h.app.should_quit(),
        "a second press within two seconds quits"
    );
}

#[tokio::test]
async fn ctrl_d_on_an_empty_draft_quits_at_once() {
    let mut h = harness(true).await;
    type_text(&mut h.app, "x");
    h.app.handle_terminal_event(ctrl('d'));
    assert!(!h.app.should_quit(), "Ctrl+D deletes on a draft");
    h.app.handle_terminal_event(key(KeyCode::Backspace));
    h.app.handle_terminal_event(ctrl('d'));
    assert!(h.app.should_quit());
}

#[tokio::test(start_paused = true)]
async fn app_keys_are_routed_around_the_widget() {
    let mut h = harness(true).await;
    // Ctrl+D: a delete on a draft (the widget's), quit only on an empty one (the app's).
    type_text(&mut h.app, "ab");
    h.app.handle_terminal_event(key(KeyCode::Left));
    h.app.handle_terminal_event(ctrl('d'));
    assert_eq!(h.app.draft(), "a");
    assert!(!h.app.should_quit());
    // Esc with the popup open closes it and leaves a preparation alone.
    h.app.handle_terminal_event(ctrl('c'));
    h.app
        .handle_terminal_event(TermEvent::Paste(alpha_mention()));
    h.app.handle_terminal_event(key(KeyCode::Enter));
    assert_eq!(h.app.phase(), Phase::Preparing);
    type_text(&mut h.app, " @al");
    assert!(h.app.composer.input.popup_active());
    h.app.handle_terminal_event(key(KeyCode::Esc));
    assert!(!h.app.composer.input.popup_active());
    assert_eq!(h.app.phase(), Phase::Preparing, "Esc went to the popup");
    // Enter while preparing submits nothing more; the next Esc is the app's.
    h.app.handle_terminal_event(key(KeyCode::Enter));
    assert_eq!(h.app.phase(), Phase::Preparing);
    h.app.handle_terminal_event(key(KeyCode::Esc));
    assert_eq!(h.app.phase(), Phase::Idle);
    // Ctrl+C with the popup open closes it (issue 27, minor 22); then it clears the draft.
    h.app.handle_terminal_event(ctrl('c'));
    type_text(&mut h.app, "@al");
    assert!(h.app.composer.input.popup_active());
    h.app.handle_terminal_event(ctrl('c'));
    assert!(!h.app.composer.input.popup_active());
    assert_eq!(h.app.draft(), "@al", "the popup closed, the draft stays");
    h.app.handle_terminal_event(ctrl('c'));
    assert_eq!(h.app.draft(), "", "cleared into history");
    h.app.handle_terminal_event(ctrl('d'));
    assert!(h.app.should_quit());
}

#[tokio::test]
async fn leading_whitespace_makes_a_slash_line_text() {
    let mut h = harness(true).await;
    send_and_expect(&mut h, "  /bogus", "  /bogus").await;
    assert_eq!(
        notices(&h.app),
        Vec::<String>::new(),
        "no command, no warning"
    );
}

#[tokio::test]
async fn submitting_a_mention_logs_the_snapshot_right_before_the_message() {
    let mut h = harness(true).await;
    let text = alpha_mention();
    h.app.handle_terminal_event(TermEvent::Paste(text.clone()));
    h.app.handle_terminal_event(key(KeyCode::Enter));
    let app = &mut h.app;
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let Some(event) = app.rx.recv().await else {
                break;
            };
            app.handle_app_event(event);
            if app.session.status == AgentStatus::Idle
                && logged_kinds(app).iter().any(|k| k == "turn/end")
            {
                break;
            }
        }
    })
    .await
    .expect("the turn did not finish");
    assert_eq!(app.draft(), "");
    let events = app.agent().snapshot_events();
    let context = events
        .iter()
        .position(|e| {
            e.message().is_some_and(|m| {
                m.source
                    .as_ref()
                    .is_some_and(dsh_store::Source::is_session_reference)
            })
        })
        .expect("no context logged");
    let direct = events[context + 1].message().unwrap();
    assert_eq!(events[context + 1].kind(), "user/message");
    assert_eq!(direct.joined_text(), "@Alpha login bug what broke?");
    // The composer history has the canonical text.
    app.handle_terminal_event(key(KeyCode::Up));
    assert_eq!(app.draft(), text);
}

#[tokio::test]
async fn a_turn_whose_log_write_fails_ends_with_a_notice_and_keeps_the_draft() {
    let dir = tempfile::TempDir::new().unwrap();
    let store = SessionStore::new(dir.path());
    // The session's project directory cannot be created: a regular file holds its name.
    std::fs::create_dir_all(dir.path()).unwrap();
    std::fs::write(dir.path().join("--blocked--"), "x").unwrap();
    let header = SessionHeader::new("s-test", 1_700_000_000_500, Some("/blocked".to_owned()));
    let writer = store.open_writer("s-test", Some(header)).unwrap();
    let provider: Arc<dyn Provider> = Arc::new(OfflineProvider::new());
    let options = AppOptions {
        history_size: 50,
        show_reasoning: false,
    };
    let mut app = App::new(store, None, provider, writer, options);
    settle_transcript(&mut app).await;
    type_text(&mut app, "keep me");
    app.handle_terminal_event(key(KeyCode::Enter));
    let app_ref = &mut app;
    tokio::time::timeout(Duration::from_secs(30), async {
        while !notices(app_ref)
            .iter()
            .any(|n| n.contains("back in the composer"))
        {
            let Some(event) = app_ref.rx.recv().await else {
                break;
            };
            app_ref.handle_app_event(event);
        }
    })
    .await
    .expect("hang guard: the failed turn never gave the draft back");
    assert_eq!(app.draft(), "keep me");
    assert_eq!(app.session.status, AgentStatus::Idle);
    let errors: Vec<&str> = app
        .chat
        .transcript()
        .cells()
        .iter()
        .filter_map(|c| match c {
            HistoryCell::Error { code, .. } => Some(code.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        errors,
        ["AGENT_LOG_WRITE_FAILED"],
        "shown once, with its code"
    );
    let notices = notices(&app);
    assert!(
        notices.iter().any(|n| n.contains("back in the composer")),
        "{notices:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn esc_cancels_preparation_and_gives_the_text_back() {
    let mut h = harness(true).await;
    let text = alpha_mention();
    h.app.handle_terminal_event(TermEvent::Paste(text.clone()));
    h.app.handle_terminal_event(key(KeyCode::Enter));
    assert_eq!(h.app.phase(), Phase::Preparing);
    h.app.handle_terminal_event(key(KeyCode::Esc));
    assert_eq!(h.app.phase(), Phase::Idle);
    assert_eq!(h.app.draft(), text);
    assert!(notices(&h.app)[0].starts_with("SESSION_REFERENCE_CANCELLED: "));
    // Whatever the cancelled task reports later is dropped: nothing is dispatched.
    tokio::time::sleep(Duration::from_secs(1)).await;
    while let Ok(event) = h.app.rx.try_recv() {
        h.app.handle_app_event(event);
    }
    assert_eq!(h.app.draft(), text);
    assert_eq!(logged_kinds(&h.app), Vec::<String>::new());
    // And the composer accepts a new submission.
    h.app.handle_terminal_event(key(KeyCode::Enter));
    assert_eq!(h.app.phase(), Phase::Preparing);
}

#[tokio::test(start_paused = true)]
async fn bursts_of_redraw_requests_draw_one_frame_and_idle_draws_nothing() {
    let mut h = harness(true).await;
    let mut terminal = Terminal::new(TestBackend::new(80, 20)).unwrap();
    let sender = h.app.sender();
    for _ in 0..100 {
        sender.request_redraw();
    }
    // The only input: Ctrl+D on the empty draft, five idle seconds later.
    let input = futures_util::stream::once(async {
        tokio::time::sleep(Duration::from_secs(5)).await;
        Ok(ctrl('d'))
    })
    .chain(futures_util::stream::pending());
    let started = tokio::time::Instant::now();
    h.app.run(&mut terminal, Box::pin(input)).await.unwrap();
    // First frame, one for the whole burst, one for the quit key; no ticks while idle.
    assert_eq!(h.app.frames_drawn(), 3);
    assert_eq!(started.elapsed(), Duration::from_secs(5));
}

#[tokio::test(start_paused = true)]
async fn the_spinner_ticks_only_while_busy() {
    let mut h = harness(true).await;
    deliver(&mut h.app, AgentEvent::Status(AgentStatus::Running));
    let mut input = Box::pin(futures_util::stream::pending());
    let before = h.app.ticks.spinner_frame;
    for _ in 0..3 {
        assert!(h.app.step(&mut input).await.unwrap());
    }
    assert_eq!(h.app.ticks.spinner_frame, before + 3);
    deliver(&mut h.app, AgentEvent::Status(AgentStatus::Idle));
    let idle = tokio::time::timeout(Duration::from_secs(60), h.app.step(&mut input)).await;
    assert!(idle.is_err(), "the idle app woke up by itself");
}

/// Handle bus events until `done` holds (bounded).
pub(super) async fn pump_until(app: &mut App, done: impl Fn(&App) -> bool) {
    tokio::time::timeout(Duration::from_secs(20), async {
        while !done(app) {
            let Some(event) = app.rx.recv().await else {
                break;
            };
            app.handle_app_event(event);
        }
    })
    .await
    .expect("condition not reached");
}

#[tokio::test]
async fn slash_resume_switches_sessions_and_reports_unknown_ones() {
    let mut h = harness(true).await;
    // Issue 32 item 8: a name no session has opens the picker filtered by it.
    type_text(&mut h.app, "/resume nope");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    pump_until(&mut h.app, |app| {
        app.picker
            .as_ref()
            .is_some_and(|p| p.picker.filter() == "nope")
    })
    .await;
    h.app.handle_terminal_event(key(KeyCode::Esc));
    assert!(h.app.picker.is_none());
    assert_eq!(h.app.session_id(), "s-test");

    type_text(&mut h.app, "/resume s-alpha");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    pump_until(&mut h.app, |app| {
        app.session_id() == "s-alpha" && !app.transcript_loading()
    })
    .await;
    assert_eq!(h.app.draft(), "");
    assert_eq!(
        h.app.chat.transcript().cells(),
        &[
            HistoryCell::User {
                text: "Why does login fail?".into(),
                steering: false
            },
            HistoryCell::Assistant {
                text: "The token expired.".into(),
                reasoning: String::new(),
                streaming: false
            },
        ]
    );
    let terminal = screen(&mut h.app, 80, 8);
    assert!(format!("{}", terminal.backend()).contains("Alpha login bug"));

    // /new starts an empty session in the same directory.
    type_text(&mut h.app, "/new");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    pump_until(&mut h.app, |app| app.session_id().starts_with("s-2")).await;
    assert_eq!(h.app.chat.transcript().cells(), &[]);
    assert_eq!(h.app.session.cwd.as_deref(), Some(CWD));
}

#[tokio::test]
async fn slash_title_and_unknown_commands() {
    let mut h = harness(true).await;
    type_text(&mut h.app, "/bogus");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    assert_eq!(
        notices(&h.app),
        vec!["unknown command /bogus · Enter again sends it as text".to_owned()]
    );
    assert_eq!(h.app.draft(), "/bogus");
    h.app.handle_terminal_event(ctrl('c'));
    type_text(&mut h.app, "/title");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    assert_eq!(
        h.app.draft(),
        "/title ",
        "the popup completes, the argument is missing"
    );
    h.app.handle_terminal_event(key(KeyCode::Enter));
    assert_eq!(
        notices(&h.app).last().map(String::as_str),
        Some("/title needs a title, e.g. /title Fix the login bug")
    );
    h.app.handle_terminal_event(ctrl('c'));
    type_text(&mut h.app, "/title Login bug notes");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    assert_eq!(h.app.draft(), "");
    pump_until(&mut h.app, |app| {
        app.chat.transcript().title() == Some("Login bug notes")
    })
    .await;
    let terminal = screen(&mut h.app, 80, 8);
    assert!(format!("{}", terminal.backend()).contains(" dsh-refs  Login bug notes · "));
}

#[tokio::test]
async fn a_mention_of_a_missing_session_is_a_clear_error_and_keeps_the_text() {
    let mut h = harness(true).await;
    let text = format!("{} still there?", format_mention("s-gone", Some("Gone")));
    h.app.handle_terminal_event(TermEvent::Paste(text.clone()));
    h.app.handle_terminal_event(key(KeyCode::Enter));
    pump_until(&mut h.app, |app| !notices(app).is_empty()).await;
    let notices_now = notices(&h.app);
    assert!(
        notices_now[0].starts_with("SESSION_REFERENCE_READ_FAILED: ")
            && notices_now[0].contains("s-gone"),
        "{notices_now:?}"
    );
    assert_eq!(h.app.draft(), text);
    assert_eq!(h.app.phase(), Phase::Idle);
    assert_eq!(logged_kinds(&h.app), Vec::<String>::new());
}

fn chunk_event(seq: u64, kind: &str, text: &str) -> Event {
    Event {
        seq,
        time: 0,
        data: EventData::AssistantChunk {
            turn: 1,
            step: 0,
            chunk: json!({"type": kind, "text": text}),
            extra: serde_json::Map::new(),
        },
        surface_op: None,
        source_event_seqs: None,
    }
}

#[tokio::test]
async fn streaming_reply_with_markdown_and_collapsible_reasoning() {
    let mut h = harness(true).await;
    deliver(&mut h.app, AgentEvent::Status(AgentStatus::Running));
    assert_eq!(h.app.phase(), Phase::Waiting);
    deliver(
        &mut h.app,
        AgentEvent::Appended(chunk_event(
            0,
            "reasoning",
            "Look at the log.\nThen answer.",
        )),
    );
    assert_eq!(h.app.phase(), Phase::Responding);
    for (i, part) in [
        "Two causes:\n\n- the token ",
        "expired\n- the clock drifted\n\n```sh\nntpdate -q pool",
        ".ntp.org\n```\nand **check** `exp`",
    ]
    .iter()
    .enumerate()
    {
        deliver(
            &mut h.app,
            AgentEvent::Appended(chunk_event(1 + i as u64, "text", part)),
        );
    }
    let terminal = screen(&mut h.app, 50, 20);
    insta::assert_snapshot!("streaming_reply", terminal.backend());
    h.app.handle_terminal_event(ctrl('t'));
    let terminal = screen(&mut h.app, 50, 20);
    insta::assert_snapshot!("streaming_reply_reasoning_shown", terminal.backend());
}

#[tokio::test]
async fn slash_compact_replaces_the_conversation_with_a_checkpoint() {
    let mut h = harness(true).await;
    type_text(&mut h.app, "hello there");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    pump_until(&mut h.app, |app| {
        app.session.status == AgentStatus::Idle && logged_kinds(app).iter().any(|k| k == "turn/end")
    })
    .await;
    type_text(&mut h.app, "/compact");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    pump_until(&mut h.app, |app| {
        app.chat
            .transcript()
            .cells()
            .iter()
            .any(|c| matches!(c, HistoryCell::Checkpoint { .. }))
            && logged_kinds(app).iter().any(|k| k == "compaction/end")
    })
    .await;
    let terminal = screen(&mut h.app, 80, 30);
    assert!(format!("{}", terminal.backend()).contains("— conversation compacted —"));
}

pub(super) fn logged_user_texts(app: &App) -> Vec<String> {
    app.agent()
        .snapshot_events()
        .iter()
        .filter_map(|e| match &e.data {
            EventData::UserMessage(m) if m.is_direct_user() => Some(m.joined_text()),
            _ => None,
        })
        .collect()
}

/// Pastes `draft`, presses Enter and waits until the agent logged `want` as the newest
/// user message.
async fn send_and_expect(h: &mut Harness, draft: &str, want: &str) {
    h.app
        .handle_terminal_event(TermEvent::Paste(draft.to_owned()));
    h.app.handle_terminal_event(key(KeyCode::Enter));
    pump_until(&mut h.app, |app| {
        logged_user_texts(app).last().map(String::as_str) == Some(want)
    })
    .await;
    pump_until(&mut h.app, |app| app.phase() == Phase::Idle).await;
    assert_eq!(h.app.draft(), "", "sent: the composer is empty");
}

#[tokio::test]
async fn text_that_starts_with_a_slash_is_sent_as_typed() {
    let mut h = harness(true).await;
    send_and_expect(&mut h, "/etc/hosts is broken", "/etc/hosts is broken").await;
    send_and_expect(&mut h, " /help", " /help").await;
    send_and_expect(&mut h, "//help me", "/help me").await;
    send_and_expect(&mut h, "/var/log/x:\tfailed", "/var/log/x:\tfailed").await;
    // Up brings back the draft as typed, not the text that was sent.
    h.app.handle_terminal_event(key(KeyCode::Up));
    h.app.handle_terminal_event(key(KeyCode::Up));
    assert_eq!(h.app.draft(), "//help me");
    assert!(notices(&h.app).is_empty(), "{:?}", notices(&h.app));
}

#[tokio::test]
async fn an_unknown_command_is_sent_on_the_second_enter() {
    let mut h = harness(true).await;
    type_text(&mut h.app, "/hepl");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    assert_eq!(
        notices(&h.app),
        ["unknown command /hepl · Enter again sends it as text"]
    );
    assert_eq!(h.app.draft(), "/hepl", "the draft is kept");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    pump_until(&mut h.app, |app| logged_user_texts(app) == ["/hepl"]).await;
    // An edit in between asks again.
    type_text(&mut h.app, "/nope");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    type_text(&mut h.app, "x");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    assert_eq!(notices(&h.app).len(), 3, "{:?}", notices(&h.app));
    assert_eq!(h.app.draft(), "/nopex");
}

#[tokio::test]
async fn known_commands_are_case_insensitive_and_a_paste_follows_the_same_rule() {
    let mut h = harness(true).await;
    type_text(&mut h.app, "/HELP");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    assert!(
        matches!(
            h.app.chat.transcript().cells().last(),
            Some(HistoryCell::Help { sections }) if sections[0].title == "Commands"
        ),
        "{:?}",
        h.app.chat.transcript().cells()
    );
    assert_eq!(h.app.draft(), "");
    h.app
        .handle_terminal_event(TermEvent::Paste("/quit\n".into()));
    assert!(!h.app.should_quit(), "a paste never runs a command");
    assert_eq!(h.app.draft(), "/quit\n");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    assert!(
        h.app.should_quit(),
        "Enter after the paste: /quit is a command"
    );
}

#[tokio::test]
async fn help_lists_every_command_and_every_key_of_the_key_map() {
    let mut h = harness(true).await;
    type_text(&mut h.app, "/help");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    let sections = h
        .app
        .chat
        .transcript()
        .cells()
        .iter()
        .find_map(|c| match c {
            HistoryCell::Help { sections } => Some(sections.clone()),
            _ => None,
        })
        .expect("a help table");
    let rows: Vec<(String, String)> = sections.into_iter().flat_map(|s| s.rows).collect();
    for spec in COMMANDS {
        assert!(
            rows.contains(&(spec.usage(), spec.help.to_owned())),
            "{}",
            spec.usage()
        );
    }
    for (keys, text) in key_rows() {
        assert!(rows.contains(&(keys.clone(), text.to_owned())), "{keys}");
    }
}

#[tokio::test]
async fn a_session_opened_in_the_app_continues_its_surface_and_title() {
    // The agent's view of the log (surface, title, turns) is gathered off the UI thread
    // while the writer opens; a reply must still see the resumed conversation.
    let mut h = harness(true).await;
    type_text(&mut h.app, "/resume s-alpha");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    pump_until(&mut h.app, |app| {
        app.session_id() == "s-alpha" && !app.transcript_loading()
    })
    .await;
    type_text(&mut h.app, "and now?");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    // The seeded conversation is one turn; wait for the second.
    pump_until(&mut h.app, |app| {
        app.session.status == AgentStatus::Idle
            && logged_kinds(app)
                .iter()
                .filter(|k| *k == "turn/end")
                .count()
                == 2
    })
    .await;
    let reply = h
        .app
        .chat
        .transcript()
        .cells()
        .iter()
        .rev()
        .find_map(|c| match c {
            HistoryCell::Assistant { text, .. } => Some(text.clone()),
            _ => None,
        })
        .unwrap();
    assert!(reply.contains("Conversation so far: 3 messages"), "{reply}");
    let titles = logged_kinds(&h.app)
        .iter()
        .filter(|k| k.as_str() == "session/title")
        .count();
    assert_eq!(titles, 1, "the resumed session keeps its one title");
}

/// The transcript of an opened session is read off the UI thread: until it arrives the
/// pane says so; a message sent meanwhile is shown once, after the loaded conversation,
/// and comes first in Up history, then `/resume`, then the session's own older messages.
#[tokio::test]
async fn a_message_sent_while_the_transcript_loads_is_shown_once_after_it() {
    let mut h = harness(true).await;
    type_text(&mut h.app, "/resume s-alpha");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    // Stops right after the switch: the transcript's answer is not handled yet.
    pump_until(&mut h.app, |app| app.session_id() == "s-alpha").await;
    assert!(h.app.transcript_loading());
    let shown = format!("{}", screen(&mut h.app, 80, 20).backend());
    assert!(shown.contains("reading the conversation"), "{shown}");
    type_text(&mut h.app, "and now?");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    pump_until(&mut h.app, |app| {
        !app.transcript_loading()
            && app.session.status == AgentStatus::Idle
            && logged_kinds(app)
                .iter()
                .filter(|k| *k == "turn/end")
                .count()
                == 2
    })
    .await;
    let users: Vec<String> = h
        .app
        .chat
        .transcript()
        .cells()
        .iter()
        .filter_map(|c| match c {
            HistoryCell::User { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(users, vec!["Why does login fail?", "and now?"]);
    let shown = format!("{}", screen(&mut h.app, 80, 20).backend());
    assert!(!shown.contains("reading the conversation"), "{shown}");
    for want in ["and now?", "/resume s-alpha", "Why does login fail?"] {
        h.app.handle_terminal_event(key(KeyCode::Up));
        assert_eq!(h.app.draft(), want);
    }
}

#[tokio::test]
async fn a_resumed_sessions_own_messages_are_in_up_history() {
    let mut h = harness(true).await;
    type_text(&mut h.app, "/resume s-alpha");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    pump_until(&mut h.app, |app| {
        app.session_id() == "s-alpha" && !app.transcript_loading()
    })
    .await;
    h.app.handle_terminal_event(key(KeyCode::Up));
    assert_eq!(h.app.draft(), "/resume s-alpha", "typed last");
    h.app.handle_terminal_event(key(KeyCode::Up));
    assert_eq!(
        h.app.draft(),
        "Why does login fail?",
        "older: the session's own message, logged before"
    );
}

/// The input history file of the windows in `dir`.
fn history_path(dir: &tempfile::TempDir) -> std::path::PathBuf {
    dir.path().join("data").join("input-history.jsonl")
}

/// Two app windows sharing one input history file (in the directory returned).
async fn two_windows() -> (tempfile::TempDir, Harness, Harness) {
    let dir = tempfile::TempDir::new().unwrap();
    let mut one = harness(true).await;
    let mut two = harness(true).await;
    one.app.use_history_file(&history_path(&dir), 50);
    two.app.use_history_file(&history_path(&dir), 50);
    (dir, one, two)
}

/// Types `line` (a `/resume`) and waits until session `id` is open and its transcript read.
async fn resume(h: &mut Harness, line: &str, id: &str) {
    type_text(&mut h.app, line);
    h.app.handle_terminal_event(key(KeyCode::Enter));
    pump_until(&mut h.app, |app| {
        app.session_id() == id && !app.transcript_loading()
    })
    .await;
}

/// Issue 32 item 10: after `/resume`, Up recalls every window's inputs and the resumed
/// session's own messages newest typed first (the history file's merged order), a message
/// sent to it from this window once; resuming it again adds nothing twice.
#[tokio::test]
async fn up_after_resume_walks_both_windows_and_the_session_by_time() {
    let (_dir, mut one, mut two) = two_windows().await;
    resume(&mut one, "/resume s-alpha", "s-alpha").await;
    send_and_expect(&mut one, "to alpha", "to alpha").await;
    type_text(&mut one.app, "/new");
    one.app.handle_terminal_event(key(KeyCode::Enter));
    pump_until(&mut one.app, |app| {
        app.session_id() != "s-alpha" && !app.transcript_loading()
    })
    .await;
    send_and_expect(&mut two, "from two", "from two").await;
    resume(&mut one, "/resume s-alpha", "s-alpha").await;
    let walk = |app: &mut App, n: usize| {
        (0..n)
            .map(|_| {
                app.handle_terminal_event(key(KeyCode::Up));
                app.draft()
            })
            .collect::<Vec<_>>()
    };
    let newest_first = [
        "/resume s-alpha",
        "from two",
        "/new",
        "to alpha",
        "/resume s-alpha",
        "Why does login fail?",
        "Why does login fail?",
    ];
    assert_eq!(
        walk(&mut one.app, 7),
        newest_first,
        "then stays at the oldest"
    );
    one.app.handle_terminal_event(ctrl('u'));
    // Window two sends meanwhile; Up in window one begins with it.
    send_and_expect(&mut two, "later from two", "later from two").await;
    assert_eq!(
        walk(&mut one.app, 3),
        ["later from two", "/resume s-alpha", "from two"]
    );
}

#[tokio::test]
async fn sent_inputs_survive_a_restart_and_unsent_drafts_do_not() {
    let dir = tempfile::TempDir::new().unwrap();
    let path = dir.path().join("data").join("input-history.jsonl");
    let mut h = harness(true).await;
    h.app.use_history_file(&path, 50);
    send_and_expect(&mut h, "first\twith a tab", "first\twith a tab").await;
    type_text(&mut h.app, "never sent");
    h.app.handle_terminal_event(ctrl('c'));
    type_text(&mut h.app, "/model");
    h.app.handle_terminal_event(key(KeyCode::Enter));

    let mut again = harness(true).await;
    again.app.use_history_file(&path, 50);
    again.app.handle_terminal_event(key(KeyCode::Up));
    assert_eq!(again.app.draft(), "/model");
    again.app.handle_terminal_event(key(KeyCode::Up));
    assert_eq!(again.app.draft(), "first\twith a tab");
    again.app.handle_terminal_event(key(KeyCode::Up));
    assert_eq!(
        again.app.draft(),
        "first\twith a tab",
        "nothing older: the unsent draft is not kept"
    );
    let file = std::fs::read_to_string(&path).unwrap();
    assert!(!file.contains("never sent"), "{file}");
}

/// Issue 34 item 9: two windows open at once, sending in turn, share one history file:
/// neither window's messages vanish, each window's Up walks both (newest first), and a new
/// window reads them in the order they were typed.
#[tokio::test]
async fn two_windows_sending_in_turn_share_their_input_history() {
    let (dir, mut one, mut two) = two_windows().await;
    send_and_expect(&mut one, "one: first", "one: first").await;
    send_and_expect(&mut two, "two: first", "two: first").await;
    send_and_expect(&mut one, "one: second", "one: second").await;
    send_and_expect(&mut two, "two: second", "two: second").await;
    // Window one never sent after two's last message; Up still begins with it.
    let walk = |app: &mut App| {
        (0..4)
            .map(|_| {
                app.handle_terminal_event(key(KeyCode::Up));
                app.draft()
            })
            .collect::<Vec<_>>()
    };
    let newest_first = ["two: second", "one: second", "two: first", "one: first"];
    assert_eq!(walk(&mut one.app), newest_first);
    assert_eq!(walk(&mut two.app), newest_first);
    let mut three = harness(true).await;
    three.app.use_history_file(&history_path(&dir), 50);
    assert_eq!(walk(&mut three.app), newest_first);
}

#[tokio::test]
async fn an_unreadable_history_file_is_a_notice_not_a_failure() {
    let dir = tempfile::TempDir::new().unwrap();
    let mut h = harness(true).await;
    h.app.use_history_file(dir.path(), 50);
    assert!(
        notices(&h.app)[0].starts_with("HISTORY_NOT_A_FILE: "),
        "{:?}",
        notices(&h.app)
    );
    send_and_expect(&mut h, "still works", "still works").await;
}

#[tokio::test]
async fn small_windows() {
    let mut h = harness(true).await;
    let at = |app: &mut App, w: u16, hgt: u16| format!("{}", screen(app, w, hgt).backend());
    insta::assert_snapshot!("too_small_29x10", at(&mut h.app, 29, 10));
    insta::assert_snapshot!("too_small_40x6", at(&mut h.app, 40, 6));
    // The smallest full layout still has a visible text row for the draft.
    type_text(&mut h.app, "typing stays visible");
    insta::assert_snapshot!("smallest_30x7", at(&mut h.app, 30, 7));
    // Enlarged again, the normal layout is back.
    let big = at(&mut h.app, 60, 12);
    assert!(big.contains("typing stays visible") && !big.contains("window too small"));
}

#[tokio::test]
async fn the_slash_popup_lists_the_help_table_and_enter_runs_the_pick() {
    let mut h = harness(true).await;
    type_text(&mut h.app, "/");
    // Tall enough for every row: the status line keeps its own row above the composer.
    let shown = format!("{}", screen(&mut h.app, 80, 30).backend());
    for spec in COMMANDS {
        assert!(
            shown.contains(&spec.usage()),
            "{} missing:\n{shown}",
            spec.usage()
        );
    }
    assert!(shown.contains("Tab complete · Enter run"), "{shown}");
    type_text(&mut h.app, "mo");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    assert_eq!(h.app.draft(), "", "the command ran");
    assert!(
        notices(&h.app)[0].starts_with("model: "),
        "{:?}",
        notices(&h.app)
    );
    // With an argument, Tab completes and waits for it.
    type_text(&mut h.app, "/ti");
    h.app.handle_terminal_event(key(KeyCode::Tab));
    assert_eq!(h.app.draft(), "/title ");
}

#[test]
fn the_readme_key_table_is_the_key_map() {
    let readme = include_str!("../../../README.md");
    let mut table = String::from("| keys | action |\n|---|---|\n");
    for (keys, help) in key_rows() {
        let _ = writeln!(table, "| {keys} | {help} |");
    }
    assert!(
        readme.contains(&table),
        "README.md's key table differs from the key map; it should read:\n{table}"
    );
}

#[tokio::test]
async fn the_status_line_stays_above_the_composer_when_the_popup_opens() {
    let mut h = harness(true).await;
    for seq in 0..12 {
        deliver(&mut h.app, AgentEvent::Appended(context_event(seq)));
    }
    let closed = screen(&mut h.app, 80, 20);
    type_text(&mut h.app, "@");
    let query_id = h
        .app
        .composer
        .input
        .results()
        .expect("the popup opened")
        .query_id();
    let rows: Vec<dsh_reference::Candidate> = (0..3)
        .map(|i| dsh_reference::Candidate {
            session_id: format!("s-{i}"),
            label: format!("Session {i}"),
            cwd: Some(CWD.to_owned()),
            created_at: 1_700_000_000_000,
        })
        .collect();
    let asked = next_candidates(&mut h.app, query_id).await;
    h.app
        .handle_app_event(AppEvent::Candidates(CandidatesEvent {
            phase: CandidatesPhase::Answered(Ok(ListedPage::without_details(
                dsh_reference::CandidatePage {
                    total: rows.len(),
                    rows,
                    closest: Vec::new(),
                },
                // Three hours after their creation.
                1_700_000_000_000 + 3 * 3_600_000,
            ))),
            ..asked
        }));
    let open = screen(&mut h.app, 80, 20);
    let row_of = |t: &Terminal<TestBackend>, needle: &str| {
        let buf = t.backend().buffer();
        (0..buf.area.height).find(|&y| {
            let line: String = (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol().to_owned())
                .collect();
            line.contains(needle)
        })
    };
    // Same row with and without the popup: directly above the composer's top border.
    assert_eq!(row_of(&closed, "● idle"), row_of(&open, "● idle"));
    assert_eq!(row_of(&open, "● idle").map(|y| y + 2), row_of(&open, "│@"));
    // The popup sits above the status line, the transcript gives up its rows.
    assert!(row_of(&open, "Session 0") < row_of(&open, "● idle"));
    insta::assert_snapshot!("popup_open_status_above_composer", open.backend());
}

/// Issue 27, item 4: another tool's session opens read-only from `/resume` (it was refused):
/// its conversation is shown, nothing can be written to it, Tab goes back with a mention of
/// it in the composer.
#[tokio::test]
async fn foreign_sessions_are_listed_in_resume_and_open_read_only() {
    // No reference service mounted: /resume lists through the app's sources.
    let mut h = harness(false).await;
    let fixtures =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/dsh-foreign/tests/fixtures");
    let claude = dsh_foreign::ForeignSource::new(dsh_foreign::SourceConfig {
        origin: Origin::ClaudeCode,
        root: fixtures.join("claude/projects"),
        max_line_bytes: dsh_foreign::jsonl::DEFAULT_MAX_LINE_BYTES,
        clean_title: crate::agent::title::one_line_title,
        index_file: None,
        copy_limits: dsh_foreign::CopyLimits::default(),
    });
    let dsh: Arc<dyn SessionQuery> = Arc::new(h.app.store.clone());
    let sources = Arc::new(SessionSources::new(dsh, vec![claude]));
    h.app.set_sources(Arc::clone(&sources), &[]);
    screen(&mut h.app, 120, 30);
    type_text(&mut h.app, "/resume");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    type_text(&mut h.app, "checkout");
    pump_until(&mut h.app, |app| {
        app.picker.as_ref().is_some_and(|p| {
            let results = p.picker.results();
            results.query() == "checkout" && !results.rows().is_empty()
        })
    })
    .await;
    let shown = format!("{}", screen(&mut h.app, 120, 30).backend());
    assert!(
        shown.contains("[claude] Fix checkout crash on empty cart"),
        "{shown}"
    );
    h.app.handle_terminal_event(key(KeyCode::Esc));
    assert!(h.app.picker.is_none());

    type_text(
        &mut h.app,
        "/resume claude-code:5f1c2d3e-0000-4000-8000-000000000001",
    );
    h.app.handle_terminal_event(key(KeyCode::Enter));
    pump_until(&mut h.app, |app| {
        app.read_only.as_ref().is_some_and(|v| !v.chat.is_loading())
    })
    .await;
    let shown = format!("{}", screen(&mut h.app, 120, 30).backend());
    assert!(
        shown.contains("[claude] Fix checkout crash on empty cart · read-only"),
        "{shown}"
    );
    assert!(
        shown.contains("read-only · Tab/Enter reference it with @"),
        "{shown}"
    );
    insta::assert_snapshot!("foreign_session_read_only", shown);
    // Nothing can be written to it; the open session stays the app's own.
    type_text(&mut h.app, "hello");
    h.app
        .handle_terminal_event(TermEvent::Paste("pasted".into()));
    assert_eq!(h.app.draft(), "");
    assert_eq!(h.app.session_id(), "s-test");
    // Tab: back, with a mention of it in the composer.
    h.app.handle_terminal_event(key(KeyCode::Tab));
    assert!(h.app.read_only.is_none());
    assert_eq!(
        h.app.draft(),
        format!(
            "{} ",
            format_mention(
                "claude-code:5f1c2d3e-0000-4000-8000-000000000001",
                Some("Fix checkout crash on empty cart")
            )
        )
    );
    // Picked in the picker, too; Esc goes back with the draft as it was.
    h.app.handle_terminal_event(ctrl('c'));
    type_text(&mut h.app, "/resume");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    assert_eq!(h.app.draft(), "", "the command line was consumed");
    type_text(&mut h.app, "checkout");
    pump_until(&mut h.app, |app| {
        app.picker.as_ref().is_some_and(|p| {
            let results = p.picker.results();
            results.query() == "checkout" && !results.in_flight() && !results.rows().is_empty()
        })
    })
    .await;
    h.app.handle_terminal_event(key(KeyCode::Enter));
    assert!(h.app.read_only.is_some());
    h.app.handle_terminal_event(key(KeyCode::Esc));
    assert!(h.app.read_only.is_none());
    assert_eq!(h.app.session_id(), "s-test");
}

#[tokio::test]
async fn resume_picker_filters_previews_and_opens() {
    let mut h = harness(true).await;
    screen(&mut h.app, 120, 30);
    type_text(&mut h.app, "/resume");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    pump_until(&mut h.app, |app| {
        app.picker
            .as_ref()
            .is_some_and(|p| p.picker.results().rows().len() == 1)
    })
    .await;
    let shown = format!("{}", screen(&mut h.app, 120, 30).backend());
    assert!(shown.contains("╭ Resume a session"), "rounded: {shown}");
    assert!(shown.contains(" 1/1 "), "{shown}");
    type_text(&mut h.app, "zzz");
    pump_until(&mut h.app, |app| {
        app.picker
            .as_ref()
            .is_some_and(|p| p.picker.results().is_empty() && !p.picker.results().in_flight())
    })
    .await;
    for _ in 0..3 {
        h.app.handle_terminal_event(key(KeyCode::Backspace));
    }
    type_text(&mut h.app, "alp");
    pump_until(&mut h.app, |app| {
        app.picker.as_ref().is_some_and(|p| {
            let results = p.picker.results();
            results.rows().len() == 1 && results.query() == "alp" && !results.in_flight()
        })
    })
    .await;
    // The preview's estimate arrives off the UI thread.
    h.app.request_preview();
    pump_until(&mut h.app, |app| !app.previews.is_busy()).await;
    let shown = format!("{}", screen(&mut h.app, 120, 30).backend());
    assert!(shown.contains("2 of 2 messages kept"), "{shown}");
    assert!(shown.contains("not truncated"), "{shown}");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    pump_until(&mut h.app, |app| {
        app.session_id() == "s-alpha" && !app.transcript_loading()
    })
    .await;
    assert!(h.app.picker.is_none());
}

#[tokio::test]
async fn at_popup_previews_the_selected_session_through_the_app() {
    let mut h = harness(true).await;
    screen(&mut h.app, 120, 30);
    type_text(&mut h.app, "@alpha");
    pump_until(&mut h.app, |app| app.previews.is_busy()).await;
    pump_until(&mut h.app, |app| !app.previews.is_busy()).await;
    let shown = format!("{}", screen(&mut h.app, 120, 30).backend());
    assert!(shown.contains(" 1/1 "), "{shown}");
    assert!(shown.contains("2 of 2 messages kept"), "{shown}");
    // PgUp/PgDn go to the popup, not the transcript, while it is open.
    h.app.handle_terminal_event(key(KeyCode::PageDown));
    assert!(h.app.composer.input.popup_active());
}

#[tokio::test(start_paused = true)]
async fn a_slow_answer_to_an_older_query_never_replaces_the_newer_rows() {
    let mut h = harness(true).await;
    screen(&mut h.app, 80, 24);
    type_text(&mut h.app, "@al");
    let newest = h
        .app
        .composer
        .input
        .results()
        .expect("popup open")
        .query_id();
    let page = |id: &str, label: &str| {
        let page = dsh_reference::CandidatePage {
            rows: vec![dsh_reference::Candidate {
                session_id: id.into(),
                label: label.into(),
                cwd: None,
                created_at: 0,
            }],
            total: 1,
            closest: Vec::new(),
        };
        ListedPage::without_details(page, 0)
    };
    // The newest query is answered first; the older one's answer arrives late.
    let asked = next_candidates(&mut h.app, newest).await;
    let (ticket, query) = (asked.ticket, asked.query.clone());
    h.app
        .handle_app_event(AppEvent::Candidates(CandidatesEvent {
            phase: CandidatesPhase::Answered(Ok(page("s-new", "Newest answer"))),
            ..asked
        }));
    tokio::time::advance(Duration::from_secs(5)).await;
    h.app
        .handle_app_event(AppEvent::Candidates(CandidatesEvent {
            ticket: ticket - 1,
            query_id: newest - 1,
            query,
            phase: CandidatesPhase::Answered(Ok(page("s-old", "Stale answer"))),
        }));
    let shown = format!("{}", screen(&mut h.app, 80, 24).backend());
    assert!(shown.contains("Newest answer"), "{shown}");
    assert!(!shown.contains("Stale answer"), "{shown}");
    // A stale estimate (for a session no longer selected) is dropped too.
    h.app.handle_app_event(AppEvent::Preview(
        crate::tui::preview::PreviewEvent::Estimated {
            ticket: 999,
            request: crate::tui::preview::PreviewRequest {
                session_id: "s-old".into(),
                label: "Stale answer".into(),
                plan: None,
            },
            result: Err(dsh_reference::ReferenceError::cancelled()),
            plan: None,
        },
    ));
    assert!(!format!("{}", screen(&mut h.app, 120, 30).backend()).contains("cannot reference"));
}

#[tokio::test]
async fn background_indexing_shows_progress_then_the_index_is_searchable() {
    let mut h = harness(true).await;
    let index_dir = tempfile::TempDir::new().unwrap();
    h.app.start_search_indexing(IndexOptions {
        index_dir: Some(index_dir.path().to_owned()),
    });
    let mut saw_progress = false;
    loop {
        let event = tokio::time::timeout(Duration::from_secs(20), h.app.rx.recv())
            .await
            .expect("indexing reports")
            .expect("bus open");
        let finished = matches!(
            event,
            AppEvent::SearchIndexing(IndexingEvent::Finished(Ok(_)))
        );
        h.app.handle_app_event(event);
        if let Some(p) = h.app.indexing_progress() {
            saw_progress = true;
            let terminal = screen(&mut h.app, 100, 20);
            let text = format!("{}", terminal.backend());
            assert!(
                text.contains(&format!("indexing {} / {} sessions", p.done, p.total)),
                "{text}"
            );
        }
        if finished {
            break;
        }
    }
    assert!(saw_progress, "progress was shown while indexing");
    assert_eq!(h.app.indexing_progress(), None);
    let terminal = screen(&mut h.app, 100, 20);
    assert!(!format!("{}", terminal.backend()).contains("indexing"));
    let index = h.app.search_index().expect("index open");
    let hits = index.search("alpha", 5).unwrap();
    assert_eq!(hits[0].session_id, "s-alpha");
}

/// Another process appends to a log while the app runs: opening the `@` popup has the
/// indexing thread check the store, and the app's search finds the new word without a
/// restart.
#[tokio::test]
async fn the_app_indexes_what_another_process_wrote() {
    async fn finished(h: &mut Harness) {
        loop {
            let event = tokio::time::timeout(Duration::from_secs(20), h.app.rx.recv())
                .await
                .expect("indexing reports")
                .expect("bus open");
            let done = matches!(
                event,
                AppEvent::SearchIndexing(IndexingEvent::Finished(Ok(_)))
            );
            h.app.handle_app_event(event);
            if done {
                return;
            }
        }
    }
    let mut h = harness(true).await;
    let index_dir = tempfile::TempDir::new().unwrap();
    h.app.start_search_indexing(IndexOptions {
        index_dir: Some(index_dir.path().to_owned()),
    });
    finished(&mut h).await;
    let index = h.app.search_index().expect("index open");
    assert!(index.search("zebrafish", 5).unwrap().is_empty());
    // "Another process": a second store handle appends to s-alpha.
    let other = SessionStore::new(h.app.store.root());
    let mut writer = other.open_writer("s-alpha", None).unwrap();
    writer
        .append(vec![NewEvent::appended(EventData::UserMessage(
            Message::user_text("what about the zebrafish migration?"),
        ))])
        .unwrap();
    drop(writer);
    type_text(&mut h.app, "@al");
    finished(&mut h).await;
    let hits = index.search("zebrafish", 5).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].session_id, "s-alpha");
}

#[tokio::test]
async fn an_unclosed_bracket_before_a_mention_is_refused_with_a_hint() {
    let mut h = harness(true).await;
    let mention = dsh_reference::format_mention("s-alpha", Some("Alpha login bug"));
    h.app
        .handle_terminal_event(TermEvent::Paste(format!("{mention} why?")));
    h.app.handle_terminal_event(key(KeyCode::Home));
    type_text(&mut h.app, "@[");
    // The `[` would have made one longer mention: the draft keeps the chip as it was.
    assert_eq!(h.app.draft(), format!("@{mention} why?"));
    let shown = format!("{}", screen(&mut h.app, 100, 20).backend());
    assert!(
        shown.contains("unclosed @[ would join the mention"),
        "{shown}"
    );
    h.app.handle_terminal_event(key(KeyCode::Right));
    let shown = format!("{}", screen(&mut h.app, 100, 20).backend());
    assert!(
        !shown.contains("unclosed @["),
        "a move clears the hint: {shown}"
    );
}

#[tokio::test]
async fn a_pasted_mention_of_an_unlisted_session_shows_its_cwd_in_the_hint() {
    let mut h = harness(true).await;
    let mention = dsh_reference::format_mention("s-alpha", Some("Alpha login bug"));
    h.app.handle_terminal_event(TermEvent::Paste(mention));
    pump_until(&mut h.app, |app| app.composer.chips.knows("s-alpha")).await;
    let shown = format!("{}", screen(&mut h.app, 120, 20).backend());
    assert!(
        shown.contains(&format!(" @Alpha login bug · s-alpha · {CWD}")),
        "{shown}"
    );
}

/// Starts background indexing into a temp dir and waits (blocking, bounded) until the
/// index is open and complete.
pub(super) fn indexed(h: &mut Harness) -> tempfile::TempDir {
    let index_dir = tempfile::TempDir::new().unwrap();
    h.app.start_search_indexing(IndexOptions {
        index_dir: Some(index_dir.path().to_owned()),
    });
    for _ in 0..2000 {
        if let Some(index) = h.app.search_index()
            && !index.status().updating
            && index.search("login", 1).is_ok_and(|hits| !hits.is_empty())
        {
            return index_dir;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("index not built");
}

fn hit_row(id: &str, label: &str, text: &str) -> ConversationHit {
    ConversationHit {
        candidate: dsh_reference::Candidate {
            session_id: id.into(),
            label: label.into(),
            cwd: None,
            created_at: 0,
        },
        snippet: Some(ratatui_mention::ItemSnippet {
            lead: "user: ".into(),
            text: text.into(),
            highlights: Vec::new(),
        }),
        origin: dsh_foreign::Origin::Dsh,
        seq: Some(1),
    }
}

fn hits_event(target: HitsTarget, ticket: u64, query_id: u64, label: &str) -> AppEvent {
    AppEvent::Hits(HitsEvent::Found {
        target,
        ticket,
        query_id,
        answer: HitsAnswer::Found {
            hits: vec![hit_row(&format!("s-{label}"), label, "said it")],
            more: false,
        },
    })
}

/// The ticket of `target`'s running search.
fn hits_ticket(app: &App, target: HitsTarget) -> u64 {
    app.hits.running_ticket(target).expect("a search runs")
}

/// The popup's newest query id.
pub(super) fn popup_query(app: &App) -> u64 {
    app.composer.input.results().expect("popup open").query_id()
}

/// The `/resume` picker's newest filter id.
pub(super) fn picker_query(app: &App) -> u64 {
    app.picker
        .as_ref()
        .expect("picker open")
        .picker
        .results()
        .query_id()
}

/// Whether the `/resume` picker lists session `id` in any section.
fn picker_lists(app: &App, id: &str) -> bool {
    app.picker.as_ref().is_some_and(|p| {
        let results = p.picker.results();
        results.rows().iter().any(|r| r.key() == id)
            || results
                .late_section()
                .is_some_and(|h| h.rows.iter().any(|r| r.key() == id))
    })
}

/// The next answer of the `@` popup's listing for `query_id` (answers of other queries are
/// handled).
pub(super) async fn next_candidates(app: &mut App, query_id: u64) -> CandidatesEvent {
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match app.rx.recv().await.expect("bus open") {
                AppEvent::Candidates(e) if e.query_id == query_id => return e,
                other => app.handle_app_event(other),
            }
        }
    })
    .await
    .expect("the listing answers")
}

/// More sessions hold the words than the section shows: its title says only the best are
/// shown and that a longer query narrows them; with few, it does not.
#[tokio::test]
async fn the_conversation_section_says_when_more_sessions_match_than_it_shows() {
    let mut h = harness(true).await;
    for n in 0..25 {
        seed(
            &h.app.store,
            &format!("s-many-{n:02}"),
            &format!("Thread {n}"),
        );
    }
    let _index = indexed(&mut h);
    type_text(&mut h.app, "@login");
    pump_until(&mut h.app, |app| {
        app.composer
            .input
            .results()
            .is_some_and(|p| p.late_section().is_some_and(|h| !h.rows.is_empty()))
    })
    .await;
    let title = h
        .app
        .composer
        .input
        .results()
        .and_then(|p| p.late_section().map(|h| h.title.clone()));
    assert_eq!(
        title.as_deref(),
        Some("in conversations · best 20, type more to narrow")
    );
}

#[tokio::test(start_paused = true)]
async fn conversation_hits_of_a_superseded_query_are_cancelled_and_dropped_in_both_pickers() {
    let mut h = harness(true).await;
    let _index = indexed(&mut h);
    screen(&mut h.app, 80, 24);
    // The `@` popup.
    type_text(&mut h.app, "@lo");
    let first = h
        .app
        .hits
        .running(HitsTarget::Popup)
        .cloned()
        .expect("a search runs");
    let (older, older_ticket) = (popup_query(&h.app), hits_ticket(&h.app, HitsTarget::Popup));
    type_text(&mut h.app, "g");
    let (newest, ticket) = (popup_query(&h.app), hits_ticket(&h.app, HitsTarget::Popup));
    assert!(first.is_cancelled(), "the superseded search is cancelled");
    assert!(
        !h.app
            .hits
            .running(HitsTarget::Popup)
            .unwrap()
            .is_cancelled()
    );
    h.app
        .handle_app_event(hits_event(HitsTarget::Popup, ticket, newest, "Newest hit"));
    tokio::time::advance(Duration::from_secs(5)).await;
    h.app.handle_app_event(hits_event(
        HitsTarget::Popup,
        older_ticket,
        older,
        "Stale hit",
    ));
    let shown = format!("{}", screen(&mut h.app, 80, 24).backend());
    assert!(shown.contains("Newest hit"), "{shown}");
    assert!(!shown.contains("Stale hit"), "{shown}");
    // A longer query keeps the hits on show until its own answer comes.
    type_text(&mut h.app, "i");
    let shown = format!("{}", screen(&mut h.app, 80, 24).backend());
    assert!(
        shown.contains("Newest hit"),
        "kept while the longer query runs: {shown}"
    );
    // Esc closes the popup; `/resume` follows the same rules.
    h.app.handle_terminal_event(key(KeyCode::Esc));
    h.app.handle_terminal_event(ctrl('u'));
    type_text(&mut h.app, "/resume");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    assert!(h.app.picker.is_some());
    type_text(&mut h.app, "lo");
    let first = h
        .app
        .hits
        .running(HitsTarget::Picker)
        .cloned()
        .expect("a search runs");
    let (older, older_ticket) = (
        picker_query(&h.app),
        hits_ticket(&h.app, HitsTarget::Picker),
    );
    type_text(&mut h.app, "g");
    let (newest, ticket) = (
        picker_query(&h.app),
        hits_ticket(&h.app, HitsTarget::Picker),
    );
    assert!(first.is_cancelled(), "the superseded search is cancelled");
    h.app.handle_app_event(hits_event(
        HitsTarget::Picker,
        ticket,
        newest,
        "Newest resume hit",
    ));
    tokio::time::advance(Duration::from_secs(5)).await;
    h.app.handle_app_event(hits_event(
        HitsTarget::Picker,
        older_ticket,
        older,
        "Stale resume hit",
    ));
    let shown = format!("{}", screen(&mut h.app, 80, 24).backend());
    assert!(shown.contains("Newest resume hit"), "{shown}");
    assert!(!shown.contains("Stale resume hit"), "{shown}");
    // Closing the picker cancels its search.
    type_text(&mut h.app, "x");
    let running = h.app.hits.running(HitsTarget::Picker).cloned().unwrap();
    h.app.handle_terminal_event(key(KeyCode::Esc));
    assert!(running.is_cancelled());
}

#[tokio::test]
async fn a_session_found_only_by_its_conversation_is_offered_and_inserted() {
    let mut h = harness(true).await;
    let _index = indexed(&mut h);
    screen(&mut h.app, 100, 30);
    // "expired" is only in s-alpha's conversation, not in its id, cwd or title.
    type_text(&mut h.app, "@expired");
    // The hits and the listing's answer (no exact match) are both in: Tab acts at once.
    pump_until(&mut h.app, |app| {
        app.composer
            .input
            .results()
            .is_some_and(|p| p.late_section().is_some_and(|h| !h.rows.is_empty()) && !p.in_flight())
    })
    .await;
    let shown = format!("{}", screen(&mut h.app, 100, 30).backend());
    assert!(shown.contains("in conversations"), "{shown}");
    assert!(shown.contains("assistant: The token expired."), "{shown}");
    // Nothing matches exactly: nothing is selected, Tab takes the first offered row.
    h.app.handle_terminal_event(key(KeyCode::Tab));
    assert_eq!(
        h.app.draft(),
        format!("{} ", format_mention("s-alpha", Some("Alpha login bug")))
    );
    // The same word in `/resume`.
    h.app.handle_terminal_event(ctrl('u'));
    type_text(&mut h.app, "/resume");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    type_text(&mut h.app, "expired");
    pump_until(&mut h.app, |app| picker_lists(app, "s-alpha")).await;
    h.app.handle_terminal_event(key(KeyCode::Down));
    h.app.handle_terminal_event(key(KeyCode::Enter));
    pump_until(&mut h.app, |app| {
        app.session_id() == "s-alpha" && !app.transcript_loading()
    })
    .await;
}

/// The preview's numbers, as drawn, are what `prepare` then builds for the same mention —
/// for a session that fits the budget and for one that is truncated.
#[tokio::test]
async fn the_previews_size_estimate_is_what_prepare_builds() {
    for (budget, truncated) in [(65_536_i64, false), (3_000, true)] {
        let dir = tempfile::TempDir::new().unwrap();
        let store = SessionStore::new(dir.path());
        let header = SessionHeader::new("s-long", 1_700_000_000_000, Some(CWD.to_owned()));
        let mut writer = store.open_writer("s-long", Some(header)).unwrap();
        let mut events: Vec<NewEvent> = (0..80)
            .map(|i| {
                let text = format!("step {i}: {}", "<tag> \"quoted\" 漢字 ".repeat(i % 9 + 1));
                if i % 2 == 0 {
                    NewEvent::appended(EventData::UserMessage(Message::user_text(&text)))
                } else {
                    NewEvent::appended(EventData::AssistantMessage {
                        turn: 1,
                        step: 0,
                        message: Message::new(
                            Role::Assistant,
                            vec![ContentBlock::text(&text)],
                            Source::model("offline", "offline-echo"),
                        ),
                        usage: None,
                        extra: serde_json::Map::new(),
                    })
                }
            })
            .collect();
        events.push(user_title("Long design thread"));
        writer
            .append(dsh_store::layout::in_turns(1, events))
            .unwrap();
        drop(writer);
        let query: Arc<dyn SessionQuery> = Arc::new(store.clone());
        let refs = SessionReferences::new(query, ReferenceConfig::new(3, 50, budget).unwrap());
        let header = SessionHeader::new("s-test", 1_700_000_000_500, Some(CWD.to_owned()));
        let writer = store.open_writer("s-test", Some(header)).unwrap();
        let provider: Arc<dyn Provider> = Arc::new(OfflineProvider::new());
        let options = AppOptions {
            history_size: 50,
            show_reasoning: false,
        };
        let mut app = App::new(store, Some(refs.clone()), provider, writer, options);
        screen(&mut app, 140, 40);
        type_text(&mut app, "@long");
        pump_until(&mut app, |app| app.previews.is_busy()).await;
        pump_until(&mut app, |app| !app.previews.is_busy()).await;
        let shown = format!("{}", screen(&mut app, 140, 40).backend());

        let agent = AgentRef {
            session_id: "s-test".into(),
            cwd: Some(CWD.into()),
        };
        let reference = dsh_reference::Reference {
            session_id: "s-long".into(),
            label: Some("Long design thread".into()),
        };
        let prepared = refs
            .prepare(
                &agent,
                &[ContentBlock::text("see")],
                &[reference],
                &CancellationToken::new(),
            )
            .await
            .unwrap();
        let context = prepared.context.unwrap();
        let prompt = context.joined_text();
        let bytes = dsh_reference::prompt::serialized_sources(&prompt)
            .unwrap()
            .len()
            - 2;
        let entry = serde_json::to_value(&context.source).unwrap()["references"][0].clone();
        let want = format!(
            "{} of {} messages kept · {} of {} KiB",
            entry["retainedMessages"],
            entry["originalMessages"],
            dsh_reference::estimate::kib(bytes),
            dsh_reference::estimate::kib(usize::try_from(budget).unwrap())
        );
        assert!(
            shown.contains(&want),
            "budget {budget}: want {want:?} in\n{shown}"
        );
        assert_eq!(entry["truncated"], json!(truncated), "budget {budget}");
        let verdict = if truncated {
            "· truncated"
        } else {
            "· not truncated"
        };
        assert!(shown.contains(verdict), "budget {budget}: {shown}");
    }
}

#[tokio::test(start_paused = true)]
async fn the_conversation_section_shows_index_progress_and_searches_again_when_done() {
    let mut h = harness(true).await;
    let _index = indexed(&mut h);
    screen(&mut h.app, 80, 24);
    let progress =
        |done, total| AppEvent::SearchIndexing(IndexingEvent::Progress(Progress { done, total }));
    h.app.handle_app_event(progress(3_400, 10_000));
    type_text(&mut h.app, "@qqq");
    let id = popup_query(&h.app);
    let first = hits_ticket(&h.app, HitsTarget::Popup);
    h.app.handle_app_event(found_nothing(first, id));
    let shown = format!("{}", screen(&mut h.app, 80, 24).backend());
    assert!(
        shown.contains("in conversations · index building 3 400 / 10 000"),
        "{shown}"
    );
    h.app.handle_app_event(progress(9_000, 10_000));
    let shown = format!("{}", screen(&mut h.app, 80, 24).backend());
    assert!(shown.contains("index building 9 000 / 10 000"), "{shown}");
    assert!(h.app.hits.running(HitsTarget::Popup).is_none(), "answered");
    h.app
        .handle_app_event(AppEvent::SearchIndexing(IndexingEvent::Finished(Err(
            "stopped".into(),
        ))));
    let again = hits_ticket(&h.app, HitsTarget::Popup);
    assert!(again > first, "searched again once the index is done");
    assert!(
        !h.app
            .hits
            .running(HitsTarget::Popup)
            .unwrap()
            .is_cancelled()
    );
    // Nothing found in the complete index: the section goes.
    h.app.handle_app_event(found_nothing(again, id));
    let shown = format!("{}", screen(&mut h.app, 80, 24).backend());
    assert!(!shown.contains("in conversations"), "{shown}");
}

/// A popup search `ticket` for query `query_id` that found nothing.
fn found_nothing(ticket: u64, query_id: u64) -> AppEvent {
    AppEvent::Hits(HitsEvent::Found {
        target: HitsTarget::Popup,
        ticket,
        query_id,
        answer: HitsAnswer::Found {
            hits: Vec::new(),
            more: false,
        },
    })
}

/// A search that ran before the index had committed anything found nothing and removed
/// the section; the index finishing must still search again (the e2e run caught this).
#[tokio::test(start_paused = true)]
async fn a_search_that_found_nothing_before_the_index_was_built_runs_again() {
    let mut h = harness(true).await;
    let _index = indexed(&mut h);
    screen(&mut h.app, 80, 24);
    type_text(&mut h.app, "@expired");
    let id = popup_query(&h.app);
    let first = hits_ticket(&h.app, HitsTarget::Popup);
    h.app.handle_app_event(found_nothing(first, id));
    h.app
        .handle_app_event(AppEvent::SearchIndexing(IndexingEvent::Finished(Err(
            "stopped".into(),
        ))));
    let again = h.app.hits.running_ticket(HitsTarget::Popup);
    assert!(again.is_some_and(|t| t > first), "searched again");
}

/// Issue 26 item 11: `@alph` and Enter in one read (a fast typist, a macro) — the answer
/// to `alph` is not in yet when Enter arrives, so Enter waits for it and then inserts its
/// first row; it never sends `@alph` as text nor inserts a row of an older answer.
#[tokio::test]
async fn enter_in_the_same_read_as_the_query_waits_for_its_answer() {
    let mut h = harness(true).await;
    type_text(&mut h.app, "@alph");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    assert_eq!(h.app.draft(), "@alph", "nothing inserted or sent yet");
    assert!(h.app.composer.input.is_waiting());
    pump_until(&mut h.app, |app| !app.composer.input.is_waiting()).await;
    let mention = format_mention("s-alpha", Some("Alpha login bug"));
    assert_eq!(h.app.draft(), format!("{mention} "));
    assert_eq!(
        h.app.phase(),
        Phase::Idle,
        "Enter inserted, it did not send"
    );
    // A paste and Enter in one read, then more text before the answer: it follows the
    // mention, and the Enter after it sends the whole message.
    h.app.handle_terminal_event(ctrl('c'));
    h.app
        .handle_terminal_event(TermEvent::Paste("@alph".into()));
    h.app.handle_terminal_event(key(KeyCode::Tab));
    type_text(&mut h.app, "what broke?");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    assert_eq!(h.app.draft(), "@alph");
    pump_until(&mut h.app, |app| {
        logged_user_texts(app).last().map(String::as_str) == Some("@Alpha login bug what broke?")
    })
    .await;
}

/// When the answer does not come within the wait, nothing is sent, the popup says Enter
/// again sends as text, and it does.
#[tokio::test(start_paused = true)]
async fn enter_stops_waiting_after_a_second_and_enter_again_sends_as_text() {
    let mut h = harness(true).await;
    type_text(&mut h.app, "@alph");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    assert!(h.app.composer.input.is_waiting(), "Enter waits");
    let waiting_for = h
        .app
        .composer
        .input
        .results()
        .expect("popup open")
        .query_id();
    // The source never answers: its answers are swallowed here.
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match h.app.rx.recv().await.expect("bus open") {
                AppEvent::Candidates(e) if e.query_id == waiting_for => break,
                AppEvent::Candidates(_) => {}
                other => h.app.handle_app_event(other),
            }
        }
    })
    .await
    .expect("the answer was produced");
    let started = Instant::now();
    let mut input = Box::pin(futures_util::stream::pending());
    // (Other timers may end a step first: the older rows hidden after a quarter second.)
    while h.app.composer.input.is_waiting() {
        assert!(h.app.step(&mut input).await.unwrap());
        assert!(started.elapsed() <= Duration::from_secs(1));
    }
    assert_eq!(h.app.draft(), "@alph", "nothing sent");
    assert_eq!(h.app.phase(), Phase::Idle);
    let shown = format!("{}", screen(&mut h.app, 100, 20).backend());
    assert!(
        shown.contains("still searching — Enter again sends as text"),
        "{shown}"
    );
    h.app.handle_terminal_event(key(KeyCode::Enter));
    pump_until(&mut h.app, |app| {
        logged_user_texts(app).last().map(String::as_str) == Some("@alph")
    })
    .await;
}

mod recall;
mod transcript_and_sessions;
