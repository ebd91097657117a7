//! App tests of the transcript, the previews, switching sessions and the commands
//! (issue 27, part B), on the harness of the app tests.

use super::*;
use pretty_assertions::assert_eq;

/// Issue 27 minor 4: a tab in the user's own message (and in the model's reply quoting it)
/// is expanded in the transcript, not shown as `\x09`.
#[tokio::test]
async fn tabs_in_a_sent_message_and_its_reply_are_expanded() {
    let mut h = harness(true).await;
    send_and_expect(&mut h, "ab\tcd\tx", "ab\tcd\tx").await;
    let shown = format!("{}", screen(&mut h.app, 80, 24).backend());
    assert!(shown.contains("› ab  cd  x"), "{shown}");
    assert!(!shown.contains("\\x09"), "{shown}");
}

/// Writes a remembered first page listing `ids` (labelled `remembered <id>`) at `path` and
/// waits until the app has loaded it, as on a launch after the first.
async fn with_remembered_page(h: &mut Harness, path: &std::path::Path, ids: &[&str]) {
    use crate::tui::composer::remembered_page::{self, RememberedPage};
    let page = dsh_reference::CandidatePage {
        rows: ids
            .iter()
            .map(|id| dsh_reference::Candidate {
                session_id: (*id).into(),
                label: format!("remembered {id}"),
                cwd: Some(CWD.into()),
                created_at: 1_700_000_000_000,
            })
            .collect(),
        total: ids.len(),
        closest: Vec::new(),
    };
    let mut pages = remembered_page::RememberedPages::default();
    pages.upsert(RememberedPage::of(
        &crate::tui::composer::listed_page::ListedPage::without_details(page, 0),
        Some(CWD),
    ));
    remembered_page::save(path, &pages);
    h.app.remember_first_page_in(path.to_owned());
    h.app.warm_listing();
    for _ in 0..4000 {
        let loaded = h
            .app
            .candidates
            .first_page
            .remembered
            .lock()
            .unwrap()
            .is_some();
        if loaded {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("the remembered page was not loaded");
}

/// Handles bus events as the event loop does (a frame after each) until `done` holds on
/// what a `width`×`height` screen shows.
async fn pump_frames_until(
    app: &mut App,
    (width, height): (u16, u16),
    done: impl Fn(&str) -> bool,
) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    let waited = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            app.draw(&mut terminal).unwrap();
            let shown = format!("{}", terminal.backend());
            if done(&shown) {
                return shown;
            }
            let Some(event) = app.rx.recv().await else {
                return shown;
            };
            app.handle_app_event(event);
            while let Ok(event) = app.rx.try_recv() {
                app.handle_app_event(event);
            }
        }
    })
    .await;
    let Ok(shown) = waited else {
        app.draw(&mut terminal).unwrap();
        panic!("not reached; the screen:\n{}", terminal.backend());
    };
    shown
}

/// Issue 27 major 2: on a launch after the first, the `@` popup's first row comes from the
/// remembered page and then the checked listing; its preview still gets its cost (it said
/// "estimating the reference size…" until the selection moved). Both orders of the
/// estimate and the checked listing (on a large store the listing comes last).
#[tokio::test]
async fn the_first_rows_preview_prices_when_the_first_page_was_remembered() {
    for estimate_first in [true, false] {
        let mut h = harness(true).await;
        let cache = tempfile::TempDir::new().unwrap();
        with_remembered_page(&mut h, &cache.path().join("first-page.json"), &["s-alpha"]).await;
        let mut terminal = Terminal::new(TestBackend::new(120, 30)).unwrap();
        h.app.draw(&mut terminal).unwrap();
        type_text(&mut h.app, "@");
        h.app.draw(&mut terminal).unwrap();
        // Hold back whichever of the two answers must come second.
        let mut held = Vec::new();
        let (mut estimated, mut checked) = (false, false);
        while !(estimated && checked) {
            let event = tokio::time::timeout(Duration::from_secs(20), h.app.rx.recv())
                .await
                .expect("answers in time")
                .expect("bus open");
            let is_estimate = matches!(event, AppEvent::Preview(_));
            let is_checked = matches!(
                &event,
                AppEvent::Candidates(CandidatesEvent {
                    phase: CandidatesPhase::Checked(_) | CandidatesPhase::Answered(_),
                    ..
                })
            );
            if (is_checked && estimate_first && !estimated)
                || (is_estimate && !estimate_first && !checked)
            {
                held.push(event);
                continue;
            }
            estimated |= is_estimate;
            checked |= is_checked;
            h.app.handle_app_event(event);
            h.app.draw(&mut terminal).unwrap();
            for event in held.drain(..) {
                estimated |= matches!(event, AppEvent::Preview(_));
                checked |= matches!(event, AppEvent::Candidates(_));
                h.app.handle_app_event(event);
                h.app.draw(&mut terminal).unwrap();
            }
        }
        let shown = pump_frames_until(&mut h.app, (120, 30), |shown| {
            shown.contains("2 of 2 messages kept")
        })
        .await;
        assert!(shown.contains("Alpha login bug"), "{shown}");
    }
}

/// Issue 27 minor 17: `/help`'s second column starts at one column in every row of both
/// sections, and a help too long for the line wraps under that column, never under the
/// keys; narrow, each help goes under its keys.
#[tokio::test]
async fn help_columns_are_aligned_and_wrap_under_themselves() {
    let mut h = harness(true).await;
    type_text(&mut h.app, "/help");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    for width in [120u16, 80, 60] {
        let mut terminal = Terminal::new(TestBackend::new(width, 200)).unwrap();
        h.app.draw(&mut terminal).unwrap();
        let rows: Vec<String> = format!("{}", terminal.backend())
            .lines()
            .map(|l| l.trim_matches('"').to_owned())
            .collect();
        let column_of = |needle: &str| {
            rows.iter()
                .find_map(|r| r.find(needle).map(|at| r[..at].chars().count()))
                .unwrap_or_else(|| panic!("{needle:?} not shown at {width}:\n{}", rows.join("\n")))
        };
        let help_column = column_of("show commands and key bindings");
        for spec in COMMANDS {
            let start: Vec<&str> = spec.help.split(' ').take(2).collect();
            assert_eq!(
                column_of(&start.join(" ")),
                help_column,
                "{} at {width}",
                spec.name
            );
        }
        assert_eq!(
            column_of("delete to the line start"),
            help_column,
            "width {width}"
        );
        // Below the first title every row is a title, a key row (keys at column 4) or a
        // help (or its continuation) at the help column.
        let first = rows.iter().position(|r| r.contains("Commands")).unwrap();
        for row in rows
            .iter()
            .skip(first + 1)
            .take_while(|r| !r.trim().is_empty())
        {
            if row.trim() == "Keys" {
                continue;
            }
            let indent = row.chars().take_while(|c| *c == ' ').count();
            assert!(
                indent == help_column || indent == 4,
                "a row neither a key row nor under the help column at {width}: {row:?}\n{}",
                rows.join("\n")
            );
        }
    }
}

/// Issue 27 minor 9: `/model NAME` on the offline provider says it changes nothing, and
/// nothing shows the name; `/model` says there is no other model.
#[tokio::test]
async fn slash_model_on_the_offline_provider_says_it_changes_nothing() {
    let mut h = harness(true).await;
    type_text(&mut h.app, "/model deepseek-reasoner");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    let said = notices(&h.app).join("\n");
    assert!(
        said.contains("/model deepseek-reasoner changes nothing"),
        "{said}"
    );
    assert!(!said.contains("from the next turn on"), "{said}");
    assert_eq!(h.app.agent().model().1, "offline-echo");
    let shown = format!("{}", screen(&mut h.app, 120, 30).backend());
    let status = shown.lines().rev().find(|l| l.contains("offline-echo"));
    assert!(status.is_some(), "{shown}");
    type_text(&mut h.app, "/model");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    let said = notices(&h.app).join("\n");
    assert!(said.contains("it has no other"), "{said}");
    assert!(!said.contains("switches for the next turn"), "{said}");
}

/// Issue 27 minor 20: `/new` after `/resume` opens in the directory the app started in,
/// not in the resumed session's.
#[tokio::test]
async fn slash_new_after_resume_opens_in_the_starting_directory() {
    let mut h = harness(true).await;
    let header = SessionHeader::new("s-elsewhere", 1_700_000_000_000, Some("/srv/other".into()));
    let mut writer = h
        .app
        .store
        .open_writer("s-elsewhere", Some(header))
        .unwrap();
    writer
        .append(dsh_store::layout::in_turns(
            1,
            [NewEvent::appended(EventData::UserMessage(
                Message::user_text("over there"),
            ))],
        ))
        .unwrap();
    drop(writer);
    type_text(&mut h.app, "/resume s-elsewhere");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    pump_until(&mut h.app, |app| {
        app.session_id() == "s-elsewhere" && !app.transcript_loading() || !notices(app).is_empty()
    })
    .await;
    assert_eq!(notices(&h.app), Vec::<String>::new());
    assert_eq!(h.app.session.cwd.as_deref(), Some("/srv/other"));
    type_text(&mut h.app, "/new");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    pump_until(&mut h.app, |app| app.session_id().starts_with("s-2")).await;
    assert_eq!(h.app.session.cwd.as_deref(), Some(CWD));
    // Started on a resumed session, the app is told the process's directory.
    h.app.set_home_cwd(Some("/home/me/here".into()));
    type_text(&mut h.app, "/resume s-elsewhere");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    pump_until(&mut h.app, |app| app.session_id() == "s-elsewhere").await;
    type_text(&mut h.app, "/new");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    pump_until(&mut h.app, |app| app.session_id().starts_with("s-2")).await;
    assert_eq!(h.app.session.cwd.as_deref(), Some("/home/me/here"));
}

/// Issue 27 minor 25: a refusal (or any command's answer) lands in view while the
/// transcript is scrolled up, not below the fold. (The example, `/resume` of a
/// Claude Code session, now opens it read-only; the refusal here is `/resume` of the
/// session already open.)
#[tokio::test]
async fn a_refusal_is_visible_from_a_scrolled_transcript() {
    let mut h = harness(false).await;
    for i in 0..40 {
        h.app.chat.push_notice(
            crate::tui::transcript::NoticeKind::Info,
            format!("line {i}"),
        );
    }
    screen(&mut h.app, 80, 14);
    h.app.handle_terminal_event(key(KeyCode::PageUp));
    h.app.handle_terminal_event(key(KeyCode::PageUp));
    let shown = format!("{}", screen(&mut h.app, 80, 14).backend());
    assert!(!shown.contains("line 39"), "scrolled up: {shown}");
    let open = h.app.session.id.clone();
    type_text(&mut h.app, &format!("/resume {open}"));
    h.app.handle_terminal_event(key(KeyCode::Enter));
    let shown = format!("{}", screen(&mut h.app, 80, 14).backend());
    assert!(shown.contains("is already open"), "{shown}");
}

/// The events of `(question, answer)` exchanges, to lay out in turns.
fn exchanges(pairs: impl IntoIterator<Item = (String, String)>) -> Vec<NewEvent> {
    let mut events = Vec::new();
    for (q, a) in pairs {
        events.push(NewEvent::appended(EventData::UserMessage(
            Message::user_text(q),
        )));
        events.push(NewEvent::appended(EventData::AssistantMessage {
            turn: 1,
            step: 1,
            message: Message::new(
                Role::Assistant,
                vec![ContentBlock::text(a)],
                Source::model("offline", "offline-echo"),
            ),
            usage: None,
            extra: serde_json::Map::new(),
        }));
    }
    events
}

/// Writes session `id` (in the harness's cwd) with `turns` exchanges `q0000`/`a0000`, ….
fn seed_long(store: &SessionStore, id: &str, turns: usize) {
    let header = SessionHeader::new(id, 1_700_000_000_000, Some(CWD.to_owned()));
    let mut writer = store.open_writer(id, Some(header)).unwrap();
    let events = exchanges((0..turns).map(|i| (format!("q{i:04}"), format!("a{i:04}"))));
    writer
        .append(dsh_store::layout::in_turns(1, events))
        .unwrap();
}

/// Draws and handles bus events until `done` holds on the app (bounded).
async fn frames_until(
    app: &mut App,
    terminal: &mut Terminal<TestBackend>,
    done: impl Fn(&App) -> bool,
) {
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            app.draw(terminal).unwrap();
            if done(app) {
                return;
            }
            let Some(event) = app.rx.recv().await else {
                return;
            };
            app.handle_app_event(event);
        }
    })
    .await
    .expect("condition not reached");
}

/// Issue 27 item 5 / minor 11: a session longer than the transcript keeps is scrolled back
/// to its very first message, window by window as `PgUp` reaches the top, the transcript
/// never holding more than its bounds; "earlier entries" shows only while a window is
/// read; back at the bottom the newest messages are there again.
#[tokio::test]
async fn a_long_session_scrolls_back_to_its_start_within_bounds() {
    let mut h = harness(true).await;
    seed_long(&h.app.store, "s-long", 3_000);
    type_text(&mut h.app, "/resume s-long");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    pump_until(&mut h.app, |app| {
        app.session_id() == "s-long" && !app.transcript_loading()
    })
    .await;
    let mut terminal = Terminal::new(TestBackend::new(60, 24)).unwrap();
    h.app.draw(&mut terminal).unwrap();
    let shown = format!("{}", terminal.backend());
    assert!(shown.contains("a2999"), "{shown}");
    assert!(
        h.app.chat.transcript().older_than().is_some(),
        "older events not kept"
    );
    let bound = h.app.chat.transcript().cells().len();
    assert!(bound <= 2_000, "{bound}");
    let mut windows = 0;
    for _ in 0..20_000 {
        h.app.handle_terminal_event(key(KeyCode::PageUp));
        h.app.draw(&mut terminal).unwrap();
        let shown = format!("{}", terminal.backend());
        assert!(
            h.app.chat.transcript().cells().len() <= 2_000,
            "bounded: {}",
            h.app.chat.transcript().cells().len()
        );
        if shown.contains("q0000") {
            break;
        }
        if shown.contains("reading earlier entries") {
            windows += 1;
            // The window arrives off the UI thread; the pages that went past the top go on
            // into it: older exchanges, right above those shown.
            let numbers = |shown: &str| -> Vec<u32> {
                shown
                    .lines()
                    .filter_map(|l| {
                        let t = l.trim_matches('"').trim_start_matches(['›', '•', ' ']);
                        t.get(1..5)
                            .filter(|_| t.starts_with(['q', 'a']))?
                            .parse()
                            .ok()
                    })
                    .collect()
            };
            let before = numbers(&shown);
            frames_until(&mut h.app, &mut terminal, |app| {
                !app.chat.is_reading_older()
            })
            .await;
            h.app.draw(&mut terminal).unwrap();
            let after = format!("{}", terminal.backend());
            let (was, now) = (numbers(&shown), numbers(&after));
            let (Some(top_before), Some(top_now), Some(bottom_now)) =
                (before.iter().min(), now.iter().min(), now.iter().max())
            else {
                panic!("no exchanges shown:\n{shown}\n{after}");
            };
            // The read starts after the frame that reached the top, so the PgUp of the
            // next round counts too: about two pages (of 17 lines; an exchange is 4) further.
            assert!(
                top_now < top_before && top_before - top_now <= 12 && bottom_now >= top_now,
                "{was:?} -> {now:?}:\n{shown}\n{after}"
            );
        }
    }
    let shown = format!("{}", terminal.backend());
    assert!(shown.contains("q0000"), "the first message: {shown}");
    assert!(windows >= 2, "read in windows: {windows}");
    assert!(!shown.contains("earlier entries"), "{shown}");
    assert_eq!(h.app.chat.transcript().older_than(), None);
    // Down again: the middle of the session is read forward window by window (not
    // skipped), the cells still bounded, to the newest exchange.
    let mut seen_middle = false;
    for _ in 0..20_000 {
        h.app.handle_terminal_event(key(KeyCode::PageDown));
        h.app.draw(&mut terminal).unwrap();
        while let Ok(event) = h.app.rx.try_recv() {
            h.app.handle_app_event(event);
            h.app.draw(&mut terminal).unwrap();
        }
        if h.app.transcript.is_reading() {
            frames_until(&mut h.app, &mut terminal, |app| {
                !app.transcript.is_reading()
            })
            .await;
        }
        assert!(h.app.chat.transcript().cells().len() <= 2_000);
        let shown = format!("{}", terminal.backend());
        seen_middle |= shown.contains("q1500");
        if shown.contains("a2999") && !h.app.chat.is_scrolled() {
            break;
        }
    }
    let shown = format!("{}", terminal.backend());
    assert!(shown.contains("a2999"), "{shown}");
    assert!(seen_middle, "the middle was skipped on the way down");
}

/// Issue 27 minor 16 (item 3's last sentence), in the app: selecting a session found in
/// conversations previews it at the message that matched, not at its newest.
#[tokio::test]
async fn a_hit_in_conversations_is_previewed_at_the_matching_message() {
    let mut h = harness(true).await;
    let header = SessionHeader::new("s-deploy", 1_700_000_000_000, Some(CWD.to_owned()));
    let mut writer = h.app.store.open_writer("s-deploy", Some(header)).unwrap();
    let mut events = exchanges(
        [
            (
                "Use the quokkaflip script to deploy?",
                "Yes, it switches traffic.",
            ),
            ("And the parser leak?", "Fixed in 1.2."),
            ("Anything else?", "Nothing for now."),
        ]
        .map(|(q, a)| (q.to_owned(), a.to_owned())),
    );
    // Titled: an untitled session would be listed (and found) by its first words.
    events.push(super::user_title("Release tooling"));
    writer
        .append(dsh_store::layout::in_turns(1, events))
        .unwrap();
    drop(writer);
    let _index = indexed(&mut h);
    let mut terminal = Terminal::new(TestBackend::new(120, 30)).unwrap();
    h.app.draw(&mut terminal).unwrap();
    type_text(&mut h.app, "@quokkaflip");
    frames_until(&mut h.app, &mut terminal, |app| {
        app.composer
            .input
            .results()
            .is_some_and(|p| p.late_section().is_some_and(|h| !h.rows.is_empty()) && !p.in_flight())
    })
    .await;
    // Nothing matches by title, id or cwd: the hit is selected by moving onto it.
    h.app.handle_terminal_event(key(KeyCode::Down));
    frames_until(&mut h.app, &mut terminal, |app| !app.previews.is_busy()).await;
    frames_until(&mut h.app, &mut terminal, |_| true).await;
    let shown = format!("{}", terminal.backend());
    assert!(
        shown.contains("the matching message · 5 newer messages"),
        "{shown}"
    );
    assert!(!shown.contains("Nothing for now."), "{shown}");
}

/// The text of the first reference card's rows on a `width`-wide screen.
fn card_text(app: &mut App, width: u16) -> String {
    let shown = format!("{}", screen(app, width, 40).backend());
    shown
        .lines()
        .skip_while(|l| !l.contains("Referenced sessions"))
        .take(4)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Issue 25 item 4 (card part): once the referenced session has grown since its
/// snapshot, the card says by how many messages, checked cheaply after each turn; Ctrl+R
/// puts a fresh mention of it into the composer; with no card Ctrl+R says so.
#[tokio::test]
async fn a_stale_card_says_so_and_ctrl_r_mentions_it_afresh() {
    let mut h = harness(true).await;
    h.app.handle_terminal_event(ctrl('r'));
    assert!(
        notices(&h.app).join("\n").contains("no referenced session"),
        "{:?}",
        notices(&h.app)
    );
    send_and_expect(&mut h, &alpha_mention(), "@Alpha login bug what broke?").await;
    pump_until(&mut h.app, |app| !app.transcript.is_checking_newer()).await;
    let card = card_text(&mut h.app, 120);
    assert!(
        card.contains("Alpha login bug (s-alpha) · 2 messages"),
        "{card}"
    );
    assert!(!card.contains("newer"), "fresh: {card}");
    // s-alpha moves on: one more exchange.
    let mut writer = h.app.store.open_writer("s-alpha", None).unwrap();
    let next = writer.rules().next_turn();
    writer
        .append(dsh_store::layout::in_turns(
            next,
            [NewEvent::appended(EventData::UserMessage(
                Message::user_text("And the refresh token?"),
            ))],
        ))
        .unwrap();
    drop(writer);
    send_and_expect(&mut h, "thanks", "thanks").await;
    pump_until(&mut h.app, |app| !app.transcript.is_checking_newer()).await;
    let card = card_text(&mut h.app, 120);
    assert!(card.contains("source has 1 newer message"), "{card}");
    assert!(card.contains("Ctrl+R mentions it again"), "{card}");
    h.app.handle_terminal_event(ctrl('r'));
    assert_eq!(
        h.app.draft(),
        format!("{} ", format_mention("s-alpha", Some("Alpha login bug")))
    );
}

/// Keys in a burst: `PgUp` pressed many times in one read goes as far back as it asks,
/// window after window (it stopped at the top of the first window read).
#[tokio::test]
async fn a_burst_of_page_ups_goes_back_as_far_as_it_asks() {
    let mut h = harness(true).await;
    seed_long(&h.app.store, "s-long", 3_000);
    type_text(&mut h.app, "/resume s-long");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    pump_until(&mut h.app, |app| {
        app.session_id() == "s-long" && !app.transcript_loading()
    })
    .await;
    let mut terminal = Terminal::new(TestBackend::new(60, 24)).unwrap();
    h.app.draw(&mut terminal).unwrap();
    // 3 000 exchanges are ~12 000 lines; 22 lines a page: 1 000 pages pass the start.
    for _ in 0..1_000 {
        h.app.handle_terminal_event(key(KeyCode::PageUp));
    }
    frames_until(&mut h.app, &mut terminal, |app| {
        app.chat.transcript().older_than().is_none() && !app.chat.is_reading_older()
    })
    .await;
    h.app.draw(&mut terminal).unwrap();
    let shown = format!("{}", terminal.backend());
    assert!(shown.contains("q0000"), "{shown}");
    assert!(h.app.chat.transcript().cells().len() <= 2_000);
}
