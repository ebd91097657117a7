//! App-level tests: snapshots of whole screens over `TestBackend`, key-sequence tests of
//! the submit paths, and paused-time tests of redraw coalescing and prepare cancellation.

use std::sync::Arc;
use std::time::Duration;

use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use futures_util::StreamExt;
use pretty_assertions::assert_eq;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

use super::*;
use crate::agent::AgentEvent;
use crate::llm::OfflineProvider;
use crate::tui::transcript::HistoryCell;
use dsh_reference::{ReferenceConfig, format_mention};
use dsh_store::event::{TitleData, TitleSource};
use dsh_store::{ContentBlock, Event, EventData, Message, NewEvent, Role, Source, SurfaceOp};

const CWD: &str = "/home/demo/projects/atlas";

struct Harness {
    _dir: tempfile::TempDir,
    app: App,
}

fn seed(store: &SessionStore, id: &str, title: &str) {
    let header = SessionHeader::new(id, 1_700_000_000_000, Some(CWD.to_owned()));
    let mut writer = store.open_writer(id, Some(header)).unwrap();
    let reply = Message::new(
        Role::Assistant,
        vec![ContentBlock::text("The token expired.")],
        Source::model("offline", "offline-echo"),
    );
    writer
        .append(vec![
            NewEvent::appended(EventData::UserMessage(Message::user_text(
                "Why does login fail?",
            ))),
            NewEvent::appended(EventData::AssistantMessage {
                turn: 1,
                step: 0,
                message: reply,
                usage: None,
                extra: serde_json::Map::new(),
            }),
            NewEvent::plain(EventData::SessionTitle(TitleData {
                title: title.to_owned(),
                message_seqs: vec![0],
                source: TitleSource {
                    kind: "manual".into(),
                    extra: serde_json::Map::new(),
                },
                extra: serde_json::Map::new(),
            })),
        ])
        .unwrap();
}

fn harness(with_refs: bool) -> Harness {
    let dir = tempfile::TempDir::new().unwrap();
    let store = SessionStore::new(dir.path());
    seed(&store, "s-alpha", "Alpha login bug");
    let refs = with_refs.then(|| {
        let query: Arc<dyn SessionQuery> = Arc::new(store.clone());
        SessionReferences::new(query, ReferenceConfig::default())
    });
    let header = SessionHeader::new("s-test", 1_700_000_000_500, Some(CWD.to_owned()));
    let writer = store.open_writer("s-test", Some(header)).unwrap();
    let provider: Arc<dyn Provider> = Arc::new(OfflineProvider::new());
    let options = AppOptions {
        history_size: 50,
        show_reasoning: false,
    };
    let app = App::new(store, refs, provider, writer, options);
    Harness { _dir: dir, app }
}

fn key(code: KeyCode) -> TermEvent {
    TermEvent::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn ctrl(c: char) -> TermEvent {
    TermEvent::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL))
}

fn type_text(app: &mut App, text: &str) {
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

fn screen(app: &mut App, width: u16, height: u16) -> Terminal<TestBackend> {
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

fn deliver(app: &mut App, event: AgentEvent) {
    let generation = app.generation;
    app.handle_app_event(AppEvent::Agent { generation, event });
}

fn notices(app: &App) -> Vec<String> {
    app.chat
        .transcript()
        .cells()
        .iter()
        .filter_map(|c| match c {
            HistoryCell::Notice { text, .. } => Some(text.clone()),
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

#[tokio::test]
async fn empty_app() {
    let mut h = harness(true);
    let terminal = screen(&mut h.app, 80, 20);
    insta::assert_snapshot!(terminal.backend());
    assert_eq!(h.app.phase(), Phase::Idle);
}

#[tokio::test]
async fn layout_at_60x15() {
    let mut h = harness(true);
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
    let mut h = harness(true);
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
    let mut h = harness(true);
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
    let mut h = harness(true);
    deliver(&mut h.app, AgentEvent::Appended(context_event(0)));
    let collapsed = screen(&mut h.app, 80, 20);
    insta::assert_snapshot!("reference_card_collapsed", collapsed.backend());
    h.app.handle_terminal_event(ctrl('o'));
    let expanded = screen(&mut h.app, 80, 20);
    insta::assert_snapshot!("reference_card_expanded", expanded.backend());
    h.app.handle_terminal_event(ctrl('o'));
    let again = screen(&mut h.app, 80, 20);
    assert_eq!(again.backend().buffer(), collapsed.backend().buffer());
}

#[tokio::test]
async fn queued_badge() {
    let mut h = harness(true);
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
    let mut h = harness(false);
    let text = alpha_mention();
    h.app.handle_terminal_event(TermEvent::Paste(text.clone()));
    h.app.handle_terminal_event(key(KeyCode::Enter));
    assert_eq!(h.app.draft(), text);
    assert_eq!(h.app.phase(), Phase::Idle);
    assert!(notices(&h.app)[0].contains("no session store is mounted"));
}

#[tokio::test]
async fn ctrl_c_clears_the_draft_then_quits() {
    let mut h = harness(true);
    type_text(&mut h.app, "abc");
    h.app.handle_terminal_event(ctrl('c'));
    assert_eq!(h.app.draft(), "");
    assert!(!h.app.should_quit());
    h.app.handle_terminal_event(key(KeyCode::Up));
    assert_eq!(h.app.draft(), "abc");
    h.app.handle_terminal_event(ctrl('c'));
    h.app.handle_terminal_event(ctrl('c'));
    assert!(h.app.should_quit());
}

#[tokio::test(start_paused = true)]
async fn app_keys_are_routed_around_the_widget() {
    let mut h = harness(true);
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
    assert!(h.app.input.popup_active());
    h.app.handle_terminal_event(key(KeyCode::Esc));
    assert!(!h.app.input.popup_active());
    assert_eq!(h.app.phase(), Phase::Preparing, "Esc went to the popup");
    // Enter while preparing submits nothing more; the next Esc is the app's.
    h.app.handle_terminal_event(key(KeyCode::Enter));
    assert_eq!(h.app.phase(), Phase::Preparing);
    h.app.handle_terminal_event(key(KeyCode::Esc));
    assert_eq!(h.app.phase(), Phase::Idle);
    // Ctrl+C reaches the app even with the popup open.
    h.app.handle_terminal_event(ctrl('c'));
    type_text(&mut h.app, "@al");
    assert!(h.app.input.popup_active());
    h.app.handle_terminal_event(ctrl('c'));
    assert_eq!(h.app.draft(), "", "cleared into history");
    h.app.handle_terminal_event(ctrl('d'));
    assert!(h.app.should_quit());
}

#[tokio::test]
async fn a_command_may_follow_leading_whitespace() {
    let mut h = harness(true);
    type_text(&mut h.app, "  /bogus");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    assert_eq!(
        notices(&h.app),
        vec!["unknown command /bogus (try /help)".to_owned()]
    );
    assert_eq!(logged_kinds(&h.app), Vec::<String>::new(), "nothing sent");
}

#[tokio::test]
async fn submitting_a_mention_logs_the_snapshot_right_before_the_message() {
    let mut h = harness(true);
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
            if app.agent_status == AgentStatus::Idle
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
    assert_eq!(app.agent_status, AgentStatus::Idle);
    let notices = notices(&app);
    assert!(
        notices
            .iter()
            .any(|n| n.starts_with("AGENT_LOG_WRITE_FAILED: ")),
        "{notices:?}"
    );
    assert!(
        notices.iter().any(|n| n.contains("back in the composer")),
        "{notices:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn esc_cancels_preparation_and_gives_the_text_back() {
    let mut h = harness(true);
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
    let mut h = harness(true);
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
    let mut h = harness(true);
    deliver(&mut h.app, AgentEvent::Status(AgentStatus::Running));
    let mut input = Box::pin(futures_util::stream::pending());
    let before = h.app.spinner_frame;
    for _ in 0..3 {
        assert!(h.app.step(&mut input).await.unwrap());
    }
    assert_eq!(h.app.spinner_frame, before + 3);
    deliver(&mut h.app, AgentEvent::Status(AgentStatus::Idle));
    let idle = tokio::time::timeout(Duration::from_secs(60), h.app.step(&mut input)).await;
    assert!(idle.is_err(), "the idle app woke up by itself");
}

/// Handle bus events until `done` holds (bounded).
async fn pump_until(app: &mut App, done: impl Fn(&App) -> bool) {
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
    let mut h = harness(true);
    type_text(&mut h.app, "/resume nope");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    pump_until(&mut h.app, |app| !notices(app).is_empty()).await;
    let notices_now = notices(&h.app);
    assert!(
        notices_now[0].starts_with("cannot open session nope: "),
        "{notices_now:?}"
    );
    assert_eq!(h.app.session_id(), "s-test");

    type_text(&mut h.app, "/resume s-alpha");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    pump_until(&mut h.app, |app| app.session_id() == "s-alpha").await;
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
    assert_eq!(h.app.cwd.as_deref(), Some(CWD));
}

#[tokio::test]
async fn slash_title_and_unknown_commands() {
    let mut h = harness(true);
    type_text(&mut h.app, "/bogus");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    assert_eq!(
        notices(&h.app),
        vec!["unknown command /bogus (try /help)".to_owned()]
    );
    assert_eq!(h.app.draft(), "/bogus");
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
    let mut h = harness(true);
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
    let mut h = harness(true);
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
    let mut h = harness(true);
    type_text(&mut h.app, "hello there");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    pump_until(&mut h.app, |app| {
        app.agent_status == AgentStatus::Idle && logged_kinds(app).iter().any(|k| k == "turn/end")
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
            && logged_kinds(app).iter().any(|k| k == "compact/end")
    })
    .await;
    let terminal = screen(&mut h.app, 80, 30);
    assert!(format!("{}", terminal.backend()).contains("— conversation compacted —"));
}

#[tokio::test]
async fn foreign_sessions_are_listed_in_resume_but_refused() {
    let mut h = harness(true);
    let fixtures =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/dsh-foreign/tests/fixtures");
    let claude = dsh_foreign::ForeignSource::new(dsh_foreign::SourceConfig {
        origin: Origin::ClaudeCode,
        root: fixtures.join("claude/projects"),
        max_line_bytes: dsh_foreign::jsonl::DEFAULT_MAX_LINE_BYTES,
        clean_title: crate::agent::title::fallback_title,
        index_file: None,
    });
    let dsh: Arc<dyn SessionQuery> = Arc::new(h.app.store.clone());
    let sources = Arc::new(SessionSources::new(dsh, vec![claude]));
    h.app.set_sources(Arc::clone(&sources));
    let rows = list_picker_rows(&h.app.store, Some(&sources)).unwrap();
    let foreign = rows
        .iter()
        .find(|r| r.session_id == "claude-code:5f1c2d3e-0000-4000-8000-000000000001")
        .unwrap();
    assert_eq!(foreign.badge, Some("claude"));
    assert_eq!(
        foreign.title.as_deref(),
        Some("Fix checkout crash on empty cart")
    );
    assert!(
        rows.iter()
            .any(|r| r.session_id == "s-alpha" && r.badge.is_none())
    );

    type_text(
        &mut h.app,
        "/resume claude-code:5f1c2d3e-0000-4000-8000-000000000001",
    );
    h.app.handle_terminal_event(key(KeyCode::Enter));
    assert_eq!(
        notices(&h.app),
        ["read-only session from Claude Code — reference it with @"]
    );
    assert_eq!(h.app.session_id(), "s-test");
}

#[tokio::test]
async fn background_indexing_shows_progress_then_the_index_is_searchable() {
    let mut h = harness(true);
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
