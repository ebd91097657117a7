//! App tests of input (issue 27, part A): Ctrl+C and the popup, small windows with the
//! popup and `/resume`, unbound chords, Up history after a restart, collapsed pastes, slow
//! answers, the mouse and its capture key.

use crate::tui::composer::listed_page::ListedPage;
use std::sync::{Arc, Mutex};

use crossterm::event::{
    Event as TermEvent, KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};
use pretty_assertions::assert_eq;

use super::App;
use super::tests::{
    ctrl, harness, key, logged_user_texts, next_candidates, notices, popup_query, pump_until,
    screen, seed, type_text,
};
use crate::tui::chrome::status_line::Phase;
use crate::tui::composer::candidates::{CandidatesEvent, CandidatesPhase};
use crate::tui::composer::session_items::DisplayZone;
use crate::tui::event::AppEvent;

/// Times in UTC, so screens do not depend on the machine's zone.
fn utc(app: &mut App) {
    app.composer.zone = DisplayZone::Fixed(chrono::FixedOffset::east_opt(0).unwrap());
}

fn shown(app: &mut App, width: u16, height: u16) -> String {
    format!("{}", screen(app, width, height).backend())
}

fn mouse(kind: MouseEventKind, column: u16, row: u16) -> TermEvent {
    TermEvent::Mouse(MouseEvent {
        kind,
        column,
        row,
        modifiers: KeyModifiers::NONE,
    })
}

fn click(column: u16, row: u16) -> TermEvent {
    mouse(MouseEventKind::Down(MouseButton::Left), column, row)
}

/// The row (0-based) of the first screen line holding `text`.
fn line_of(screen: &str, text: &str) -> u16 {
    let index = screen
        .lines()
        .position(|l| l.contains(text))
        .unwrap_or_else(|| panic!("{text:?} not on screen:\n{screen}"));
    // `TestBackend`'s display starts with no header line.
    u16::try_from(index).unwrap()
}

/// Waits until the `@` popup shows the answer to its newest query.
async fn popup_answered(app: &mut App) {
    pump_until(app, |app| {
        app.composer.input.results().is_some_and(|r| !r.in_flight())
    })
    .await;
}

/// Issue 27, minor 22: Ctrl+C with the `@` popup open cleared the whole draft.
#[tokio::test]
async fn ctrl_c_with_the_popup_open_closes_it_and_keeps_the_draft() {
    let mut h = harness(true).await;
    type_text(&mut h.app, "ask @alp");
    assert!(h.app.composer.input.popup_active());
    h.app.handle_terminal_event(ctrl('c'));
    assert!(!h.app.composer.input.popup_active());
    assert_eq!(h.app.draft(), "ask @alp", "the draft stays");
    assert!(!h.app.quit_armed());
    // The popup stays closed for that token; the next Ctrl+C clears as before.
    type_text(&mut h.app, "h");
    assert!(!h.app.composer.input.popup_active());
    h.app.handle_terminal_event(ctrl('c'));
    assert_eq!(h.app.draft(), "");
    // The command popup too.
    type_text(&mut h.app, "/he");
    assert!(h.app.composer.input.command_popup_active());
    h.app.handle_terminal_event(ctrl('c'));
    assert_eq!(h.app.draft(), "/he");
}

/// Issue 27, minor 6: at 80×12 the popup showed a frame and no rows under four blank
/// transcript rows.
#[tokio::test]
async fn at_80x12_the_popup_shows_its_rows() {
    let mut h = harness(true).await;
    for n in 0..4 {
        // Each written a moment after the one before: rows go by last activity, and the
        // writer stamps events with the clock's milliseconds.
        std::thread::sleep(std::time::Duration::from_millis(2));
        seed(
            &h.app.store,
            &format!("s-beta-{n}"),
            &format!("Beta plan {n}"),
        );
    }
    utc(&mut h.app);
    type_text(&mut h.app, "@");
    popup_answered(&mut h.app).await;
    let screen = shown(&mut h.app, 80, 12);
    assert!(screen.contains("› "), "a selected row:\n{screen}");
    let rows = screen.lines().filter(|l| l.contains("Beta plan")).count()
        + screen.lines().filter(|l| l.contains("Alpha login")).count();
    assert!(rows >= 2, "rows on show:\n{screen}");
    insta::assert_snapshot!("popup_80x12", screen);
    // Small but not too small: a popup of one line still shows the selected row.
    let screen = shown(&mut h.app, 60, 8);
    assert!(screen.contains("› "), "{screen}");
}

/// Issue 27, minor 7: `/resume`, then a resize to 60×10: the picker was not drawn but
/// still took keys, and a session was opened unseen.
#[tokio::test]
async fn resume_stays_drawn_in_a_low_window_and_acts_on_nothing_unseen() {
    let mut h = harness(true).await;
    utc(&mut h.app);
    shown(&mut h.app, 100, 30);
    type_text(&mut h.app, "/resume");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    pump_until(&mut h.app, |app| {
        app.picker
            .as_ref()
            .is_some_and(|p| !p.picker.results().in_flight())
    })
    .await;
    let screen = shown(&mut h.app, 60, 10);
    assert!(screen.contains("Resume a session"), "{screen}");
    assert!(screen.contains("Alpha login bug"), "{screen}");
    insta::assert_snapshot!("resume_60x10", screen);
    // Too small to show anything: Enter opens nothing; the picker is still there after.
    let screen = shown(&mut h.app, 25, 5);
    assert!(screen.contains("window too small"), "{screen}");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    assert_eq!(h.app.session_id(), "s-test");
    assert!(h.app.picker.is_some());
    assert!(shown(&mut h.app, 60, 10).contains("Resume a session"));
    h.app.handle_terminal_event(key(KeyCode::Enter));
    pump_until(&mut h.app, |app| app.session_id() == "s-alpha").await;
}

/// Issue 27, minor 8: unbound chords typed letters into the draft.
#[tokio::test]
async fn unbound_chords_type_nothing_in_the_app() {
    let mut h = harness(true).await;
    type_text(&mut h.app, "keep");
    for c in ['u', 'a', 'k'] {
        h.app.handle_terminal_event(TermEvent::Key(KeyEvent::new(
            KeyCode::Char(c),
            KeyModifiers::CONTROL | KeyModifiers::ALT,
        )));
    }
    assert_eq!(h.app.draft(), "keep");
}

/// Issue 27, minor 3, as reported: restart, Up, Ctrl+U, Up.
#[tokio::test]
async fn up_after_clearing_a_recalled_entry_goes_on_after_a_restart() {
    let dir = tempfile::TempDir::new().unwrap();
    let path = dir.path().join("input-history.jsonl");
    let lines = ["\"first\"", "\"second\""].join("\n");
    std::fs::write(&path, format!("{lines}\n")).unwrap();
    let mut h = harness(true).await;
    h.app.use_history_file(&path, 50);
    h.app.handle_terminal_event(key(KeyCode::Up));
    assert_eq!(h.app.draft(), "second");
    h.app.handle_terminal_event(ctrl('u'));
    h.app.handle_terminal_event(key(KeyCode::Up));
    assert_eq!(h.app.draft(), "first");
}

fn numbered(n: usize) -> String {
    (1..=n)
        .map(|i| format!("trace line {i}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Issue 27, minor 12 and large pastes collapsed: a 300-line paste is one placeholder
/// in the composer and in Up history, sent in full, opened for editing with Ctrl+G.
#[tokio::test]
async fn a_large_paste_is_collapsed_sent_in_full_and_recalled_collapsed() {
    let mut h = harness(true).await;
    h.app
        .handle_terminal_event(TermEvent::Paste("before".into()));
    h.app.handle_terminal_event(key(KeyCode::Enter));
    pump_until(&mut h.app, |app| {
        logged_user_texts(app).last().map(String::as_str) == Some("before")
    })
    .await;
    pump_until(&mut h.app, |app| app.phase() == Phase::Idle).await;
    // (3 000 lines in the widget's own tests; the offline model echoes what it is sent.)
    let paste = numbered(300);
    type_text(&mut h.app, "why? ");
    h.app.handle_terminal_event(TermEvent::Paste(paste.clone()));
    let screen = shown(&mut h.app, 80, 16);
    assert!(screen.contains("why? [pasted 300 lines]"), "{screen}");
    assert!(!screen.contains("trace line"), "{screen}");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    let sent = format!("why? {paste}");
    pump_until(&mut h.app, |app| {
        logged_user_texts(app).last() == Some(&sent) && app.phase() == Phase::Idle
    })
    .await;
    // Up brings it back collapsed; one more Up goes past it at once.
    h.app.handle_terminal_event(key(KeyCode::Up));
    assert_eq!(h.app.draft(), sent);
    assert!(shown(&mut h.app, 80, 16).contains("why? [pasted 300 lines]"));
    h.app.handle_terminal_event(key(KeyCode::Up));
    assert_eq!(h.app.draft(), "before");
    // Ctrl+G beside it opens it; elsewhere Ctrl+G is the transcript's as before.
    h.app.handle_terminal_event(key(KeyCode::Down));
    assert!(h.app.composer.input.collapsed_at_caret());
    h.app.handle_terminal_event(ctrl('g'));
    assert!(!h.app.composer.input.collapsed_at_caret());
    let screen = shown(&mut h.app, 80, 16);
    assert!(screen.contains("trace line 300"), "{screen}");
    let (options, said) = (h.app.chat.options(), notices(&h.app).len());
    h.app.handle_terminal_event(ctrl('g'));
    assert!(
        h.app.chat.options() != options || notices(&h.app).len() > said,
        "no paste at the caret: the transcript's Ctrl+G"
    );
}

/// Issue 27, minor 24: while the listing is slow (an index being built), `@snarfblat`
/// showed the unfiltered rows (`1/12007`) for over a second.
#[tokio::test(start_paused = true)]
async fn rows_of_the_query_before_go_when_the_answer_is_late() {
    let mut h = harness(true).await;
    type_text(&mut h.app, "@");
    popup_answered(&mut h.app).await;
    assert!(shown(&mut h.app, 80, 24).contains("Alpha login bug"));
    type_text(&mut h.app, "snarfblat");
    let newest = popup_query(&h.app);
    // The answer is held back: a quarter of a second later the old rows are gone.
    let asked = next_candidates(&mut h.app, newest).await;
    let mut input = Box::pin(futures_util::stream::pending());
    let started = tokio::time::Instant::now();
    let hidden = tokio::time::timeout(std::time::Duration::from_secs(5), async {
        while h
            .app
            .composer
            .input
            .results()
            .is_some_and(|r| !r.is_empty())
        {
            assert!(h.app.step(&mut input).await.unwrap());
        }
    });
    assert!(hidden.await.is_ok(), "the rows of `@` stayed on show");
    assert!(
        started.elapsed() <= super::input::OLDER_ROWS_GRACE,
        "in time"
    );
    let screen = shown(&mut h.app, 80, 24);
    assert!(!screen.contains("Alpha login bug"), "{screen}");
    assert!(screen.contains("searching…"), "{screen}");
    // The answer shows when it comes.
    h.app
        .handle_app_event(AppEvent::Candidates(CandidatesEvent {
            phase: CandidatesPhase::Answered(Ok(ListedPage::default())),
            ..asked
        }));
    assert!(shown(&mut h.app, 80, 24).contains("no matching sessions"));
}

/// Item 6 (the mouse): over the `@` popup the wheel moves the selection, a click selects a
/// row and a double click inserts it; elsewhere the wheel scrolls the transcript.
#[tokio::test]
async fn the_mouse_picks_in_the_popup() {
    let mut h = harness(true).await;
    for n in 0..3 {
        seed(
            &h.app.store,
            &format!("s-beta-{n}"),
            &format!("Beta plan {n}"),
        );
    }
    type_text(&mut h.app, "@beta");
    popup_answered(&mut h.app).await;
    let screen = shown(&mut h.app, 80, 24);
    // The rows in the order shown, and the line of each.
    let rows: Vec<(u16, String)> = (0..3)
        .map(|_| ())
        .enumerate()
        .filter_map(|(i, ())| {
            let label = screen
                .lines()
                .filter_map(|l| l.split("Beta plan ").nth(1))
                .nth(i)?
                .chars()
                .next()?;
            let label = format!("Beta plan {label}");
            Some((line_of(&screen, &label), label))
        })
        .collect();
    assert_eq!(rows.len(), 3, "{screen}");
    let selected = |app: &App| {
        app.composer
            .input
            .results()
            .and_then(|r| r.selected())
            .map(|r| r.label().to_owned())
    };
    let (y, label) = rows[1].clone();
    h.app.handle_terminal_event(click(10, y));
    assert_eq!(selected(&h.app), Some(label.clone()), "a click selects");
    h.app
        .handle_terminal_event(mouse(MouseEventKind::ScrollDown, 10, y));
    assert_eq!(selected(&h.app), Some(rows[2].1.clone()), "the wheel moves");
    h.app
        .handle_terminal_event(mouse(MouseEventKind::ScrollUp, 10, y));
    h.app.handle_terminal_event(click(10, y));
    h.app.handle_terminal_event(click(10, y));
    let id = format!("s-beta-{}", label.trim_start_matches("Beta plan "));
    assert_eq!(
        h.app.draft(),
        format!("{} ", dsh_reference::format_mention(&id, Some(&label))),
        "a double click inserts"
    );
    assert!(!h.app.composer.input.popup_active());
    // Away from the popup the wheel is the transcript's (it says nothing is scrolled).
    h.app
        .handle_terminal_event(mouse(MouseEventKind::ScrollUp, 10, 2));
    assert!(!h.app.composer.input.popup_active());
}

/// Item 6: Alt+M turns mouse capture off (the terminal selects text) and on, telling the
/// terminal and the user; the key is in `/help`.
#[tokio::test]
async fn alt_m_turns_mouse_capture_off_and_on() {
    let mut h = harness(true).await;
    let told: Arc<Mutex<Vec<bool>>> = Arc::default();
    let record = Arc::clone(&told);
    h.app.set_mouse_switch(Box::new(move |on| {
        record.lock().unwrap().push(on);
        Ok(())
    }));
    assert!(h.app.mouse_captured());
    let alt_m = TermEvent::Key(KeyEvent::new(KeyCode::Char('m'), KeyModifiers::ALT));
    h.app.handle_terminal_event(alt_m.clone());
    assert!(!h.app.mouse_captured());
    h.app.handle_terminal_event(alt_m.clone());
    assert!(h.app.mouse_captured());
    assert_eq!(*told.lock().unwrap(), [false, true]);
    assert_eq!(h.app.draft(), "", "types nothing");
    let said = notices(&h.app).join("\n");
    assert!(
        said.contains("mouse off: drag to select and copy text"),
        "{said}"
    );
    assert!(said.contains("Shift+drag selects text"), "{said}");
    // A terminal that refuses keeps the state and says why.
    h.app
        .set_mouse_switch(Box::new(|_| Err(std::io::Error::other("no tty"))));
    h.app.handle_terminal_event(alt_m);
    assert!(h.app.mouse_captured());
    assert!(
        notices(&h.app)
            .join("\n")
            .contains("mouse capture not changed: no tty")
    );
    // `/help` names the key (its table comes from the key map).
    type_text(&mut h.app, "/help");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    let help = format!("{:?}", h.app.chat.transcript().cells().last());
    assert!(help.contains("Alt+M"), "{help}");
}

/// Issue 27 item 3 / minor 26: `/resume` and the `@` popup listed by creation time, so a
/// session continued a minute ago was far down; rows told neither when a session was last
/// active nor how long it is. Minor 10: a multi-word query matched its words as one string.
#[tokio::test]
async fn lists_go_by_last_activity_with_details_and_match_words() {
    let mut h = harness(true).await;
    // Created after `s-alpha` (dsh's order puts it first), never continued since.
    let header = dsh_store::SessionHeader::new(
        "s-newer",
        1_800_000_000_000,
        Some(super::tests::CWD.to_owned()),
    );
    let mut writer = h.app.store.open_writer("s-newer", Some(header)).unwrap();
    writer
        .append(vec![dsh_store::NewEvent::appended(
            dsh_store::EventData::UserMessage(dsh_store::Message::user_text("hello")),
        )])
        .unwrap();
    drop(writer);
    // `s-alpha` is continued a moment later.
    std::thread::sleep(std::time::Duration::from_millis(2));
    let mut writer = h.app.store.open_writer("s-alpha", None).unwrap();
    writer
        .append(dsh_store::layout::in_turns(
            2,
            [dsh_store::NewEvent::appended(
                dsh_store::EventData::UserMessage(dsh_store::Message::user_text("still?")),
            )],
        ))
        .unwrap();
    drop(writer);
    utc(&mut h.app);
    type_text(&mut h.app, "/resume");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    pump_until(&mut h.app, |app| {
        app.picker
            .as_ref()
            .is_some_and(|p| !p.picker.results().in_flight())
    })
    .await;
    let screen = shown(&mut h.app, 100, 20);
    assert!(
        line_of(&screen, "Alpha login bug") < line_of(&screen, "s-newer"),
        "continued last, listed first:\n{screen}"
    );
    let detail = |id: &str| {
        screen
            .lines()
            .find(|l| l.contains(&format!("│    {id} · ")))
            .unwrap_or_default()
            .to_owned()
    };
    assert!(
        detail("s-alpha").contains(" · just now · 3 msgs│"),
        "{screen}"
    );
    assert!(
        detail("s-newer").contains(" · just now · 1 msg│"),
        "{screen}"
    );
    h.app.handle_terminal_event(key(KeyCode::Esc));
    // The `@` popup too, and its words match anywhere in the title, id or cwd.
    type_text(&mut h.app, "@");
    popup_answered(&mut h.app).await;
    let screen = shown(&mut h.app, 100, 20);
    assert!(
        line_of(&screen, "Alpha login bug") < line_of(&screen, "s-newer"),
        "{screen}"
    );
    type_text(&mut h.app, "bug alpha");
    popup_answered(&mut h.app).await;
    assert!(h.app.composer.input.popup_active(), "a space kept it open");
    let screen = shown(&mut h.app, 100, 20);
    assert!(screen.contains("Alpha login bug"), "{screen}");
    assert!(!screen.contains("s-newer"), "{screen}");
    assert!(screen.contains(" 1/1 "), "{screen}");
    type_text(&mut h.app, " atlas");
    popup_answered(&mut h.app).await;
    assert!(
        shown(&mut h.app, 100, 20).contains("Alpha login bug"),
        "cwd word"
    );
}

/// Issue 25: the `@label` a pick inserts travels in the user's own message; a session
/// titled with a pasted key inserted the key.
#[tokio::test]
async fn a_picked_label_has_its_secrets_redacted() {
    let mut h = harness(true).await;
    let secret = format!("sk-ant-api03-{}", "aB3x".repeat(10));
    seed(&h.app.store, "s-keyed", &format!("Deploy with {secret}"));
    type_text(&mut h.app, "@deploy");
    popup_answered(&mut h.app).await;
    h.app.handle_terminal_event(key(KeyCode::Tab));
    let draft = h.app.draft();
    let want =
        dsh_reference::format_mention("s-keyed", Some("Deploy with [redacted: anthropic-api-key]"));
    assert_eq!(draft, format!("{want} "));
    assert!(!draft.contains("aB3x"), "{draft}");
}

/// The keys of the rows in the `@` popup.
fn popup_keys(app: &App) -> Vec<String> {
    app.composer
        .input
        .results()
        .map(|r| r.rows().iter().map(|row| row.key().to_owned()).collect())
        .unwrap_or_default()
}

/// Issue 25 item 5: Alt+. pins the selected session (first in its group, `pinned` in its
/// row, kept in the usage book); a sent reference and a resume are noted as uses.
#[tokio::test]
async fn alt_dot_pins_and_uses_are_noted() {
    let mut h = harness(true).await;
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("usage.json");
    h.app.keep_usage_in(book.clone());
    std::thread::sleep(std::time::Duration::from_millis(2));
    seed(&h.app.store, "s-beta", "Beta plan");
    utc(&mut h.app);
    type_text(&mut h.app, "@");
    popup_answered(&mut h.app).await;
    assert_eq!(
        popup_keys(&h.app),
        ["s-beta", "s-alpha"],
        "by last activity"
    );
    h.app.handle_terminal_event(key(KeyCode::Down));
    let alt_dot = TermEvent::Key(KeyEvent::new(KeyCode::Char('.'), KeyModifiers::ALT));
    h.app.handle_terminal_event(alt_dot.clone());
    pump_until(&mut h.app, |app| {
        popup_keys(app).first().map(String::as_str) == Some("s-alpha")
    })
    .await;
    let screen = shown(&mut h.app, 100, 24);
    assert!(
        screen
            .lines()
            .any(|l| l.contains("s-alpha · ") && l.contains(" · pinned · ")),
        "{screen}"
    );
    assert_eq!(
        h.app
            .composer
            .input
            .results()
            .and_then(|r| r.selected())
            .map(|r| r.key().to_owned()),
        Some("s-alpha".to_owned()),
        "the pinned row stays selected"
    );
    assert_eq!(h.app.draft(), "@", "Alt+. typed nothing");
    // Written back off the UI thread (no event tells when).
    let mut written = false;
    for _ in 0..2000 {
        written = dsh_reference::frecency::UsageBook::load(&book).is_pinned("s-alpha");
        if written {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert!(written, "the pin is kept in the usage book");
    // Sending a reference to `s-beta` notes a use: it shows in its row.
    h.app.handle_terminal_event(key(KeyCode::Up));
    h.app.handle_terminal_event(key(KeyCode::Tab));
    type_text(&mut h.app, "compare");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    pump_until(&mut h.app, |app| {
        app.candidates
            .sources
            .usage
            .book()
            .score("s-beta", u64::MAX / 2)
            > 0
    })
    .await;
    // `/resume`: Alt+. unpins there too; the use shows.
    type_text(&mut h.app, "/resume");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    pump_until(&mut h.app, |app| {
        app.picker
            .as_ref()
            .is_some_and(|p| !p.picker.results().in_flight())
    })
    .await;
    let screen = shown(&mut h.app, 100, 24);
    assert!(
        screen
            .lines()
            .any(|l| l.contains("s-beta · ") && l.contains("used 1×")),
        "{screen}"
    );
    let picker_keys = |app: &App| -> Vec<String> {
        app.picker
            .as_ref()
            .map(|p| {
                p.picker
                    .results()
                    .rows()
                    .iter()
                    .map(|r| r.key().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(
        picker_keys(&h.app).first().map(String::as_str),
        Some("s-alpha")
    );
    let at_alpha = picker_keys(&h.app)
        .iter()
        .position(|k| k == "s-alpha")
        .unwrap();
    for _ in 0..at_alpha {
        h.app.handle_terminal_event(key(KeyCode::Down));
    }
    h.app.handle_terminal_event(alt_dot);
    pump_until(&mut h.app, |app| {
        !app.candidates.sources.usage.book().is_pinned("s-alpha")
            && picker_keys(app).first().map(String::as_str) != Some("s-alpha")
    })
    .await;
}

/// Issue 25 item 2: from a conversation hit in the `@` popup, Alt+E mentions only the
/// exchange that matched (a `dsh-excerpt:` mention of its message and the messages around
/// it), never the whole session.
#[tokio::test]
async fn alt_e_on_a_conversation_hit_inserts_an_excerpt_of_that_exchange() {
    let mut h = harness(true).await;
    let _index = super::tests::indexed(&mut h);
    type_text(&mut h.app, "@token");
    pump_until(&mut h.app, |app| {
        app.composer
            .input
            .results()
            .is_some_and(|p| p.late_section().is_some_and(|h| !h.rows.is_empty()))
    })
    .await;
    let alt_e = TermEvent::Key(KeyEvent::new(KeyCode::Char('e'), KeyModifiers::ALT));
    // The hit rows say what Alt+E does (issue 32 item 6).
    let screen = shown(&mut h.app, 100, 30);
    assert!(screen.contains("· Alt+E excerpt"), "{screen}");
    while h
        .app
        .composer
        .input
        .results()
        .and_then(|r| r.selected())
        .is_none_or(|r| r.key() != "s-alpha")
    {
        h.app.handle_terminal_event(key(KeyCode::Down));
    }
    h.app.handle_terminal_event(alt_e);
    let draft = h.app.draft();
    assert!(!h.app.composer.input.popup_active());
    let parsed = dsh_reference::parse_text(&draft).unwrap();
    assert!(
        parsed.references.is_empty(),
        "not the whole session: {draft}"
    );
    let [dsh_reference::Mentioned::Excerpt(excerpt)] = parsed.mentions.as_slice() else {
        panic!("one excerpt mention: {draft}");
    };
    assert_eq!(excerpt.range.session_id, "s-alpha");
    assert_eq!((excerpt.range.before, excerpt.range.after), (2, 2));
    assert_eq!(excerpt.label.as_deref(), Some("Alpha login bug"));
    // The matched message: the reply that said "token" (the second message of the log).
    let snippet_seq = h.app.hits.popup_shown.first().and_then(|hit| hit.seq);
    assert_eq!(Some(excerpt.range.seq), snippet_seq);
    assert!(draft.ends_with(") "), "{draft}");
}

/// Issue 25 item 1 (the popup part): the `@` popup offers the paths of the session's cwd
/// in a `files` section, matches highlighted; a directory keeps completion open on its
/// entries; a file inserts `@path`; its preview tells what would be attached.
#[tokio::test]
async fn the_popup_offers_files_and_directories_keep_it_open() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(repo.path().join("src/parse")).unwrap();
    std::fs::write(repo.path().join("src/parse/words.rs"), "fn words() {}\n").unwrap();
    std::fs::write(repo.path().join("README.md"), "# demo\n").unwrap();
    let cwd = repo.path().to_str().unwrap().to_owned();
    let mut h = super::tests::harness_in(true, &cwd).await;
    // A path: the files come first, their first row highlighted.
    let files_of = |app: &App| -> Vec<String> {
        app.composer
            .input
            .results()
            .and_then(|r| r.tab_target())
            .map(|row| vec![row.key().to_owned()])
            .unwrap_or_default()
    };
    type_text(&mut h.app, "@src/pa");
    pump_until(&mut h.app, |app| !files_of(app).is_empty()).await;
    assert_eq!(
        files_of(&h.app).first().map(String::as_str),
        Some("dir:src/parse")
    );
    let screen = shown(&mut h.app, 100, 24);
    assert!(screen.contains("[dir] src/parse"), "{screen}");
    // Tab on the directory: `@src/parse/`, the popup open on its entries.
    h.app.handle_terminal_event(key(KeyCode::Tab));
    assert_eq!(h.app.draft(), "@src/parse/");
    assert!(h.app.composer.input.popup_active());
    pump_until(&mut h.app, |app| {
        files_of(app).first().map(String::as_str) == Some("file:src/parse/words.rs")
    })
    .await;
    h.app.handle_terminal_event(key(KeyCode::Tab));
    assert_eq!(h.app.draft(), "@src/parse/words.rs ");
    assert!(!h.app.composer.input.popup_active());
}

/// Input that waits for a switch waits at most 2 s (a huge log still loading), and Ctrl+C
/// never waits for one.
#[tokio::test]
async fn input_held_for_a_switch_waits_at_most_two_seconds_and_ctrl_c_never() {
    let mut h = harness(true).await;
    type_text(&mut h.app, "/new");
    h.app.handle_terminal_event(key(KeyCode::Enter));
    // The open's answer is not handled: the switch stays under way.
    assert!(h.app.switcher.is_pending());
    type_text(&mut h.app, "hi");
    assert_eq!(h.app.draft(), "", "held while the switch runs");
    h.app.handle_terminal_event(ctrl('c'));
    assert!(h.app.quit_armed(), "Ctrl+C acted at once");
    h.app.release_held();
    assert_eq!(h.app.draft(), "", "still held");
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    h.app.release_held();
    assert_eq!(h.app.draft(), "hi", "applied once it waited 2 s");
    assert!(h.app.switcher.is_pending());
}
