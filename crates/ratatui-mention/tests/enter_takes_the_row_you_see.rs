//! Enter takes the row you see (issue 32 items 1, 4 and 5), on a host that has no sessions
//! at all — topics and files: while the popup shows rows one is highlighted, in whatever
//! section, and Enter and Tab act on it; Enter sends the draft as typed only when no row is
//! on show; `@` and a space is no mention; a query of several words goes on anywhere in the
//! draft; a row the host blocks (a limit reached) inserts nothing and sends nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use pretty_assertions::assert_eq;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui_mention::{
    EnterAction, Mention, MentionConfig, MentionInput, MentionInputState, MentionItem, Outcome,
    ResultsList, ResultsPage, Section,
};

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn topic(key: &str, label: &str) -> MentionItem {
    MentionItem::new(key, label, &Mention::new(label, format!("topic:{key}")))
}

fn file(path: &str) -> MentionItem {
    MentionItem::plain(format!("file:{path}"), path, format!("@{path}"))
}

fn state() -> MentionInputState {
    MentionInputState::new(
        MentionConfig::default()
            .with_uri_scheme("topic:")
            .with_multi_word_queries(true),
    )
}

fn type_str(state: &mut MentionInputState, text: &str) -> Vec<Outcome> {
    text.chars()
        .map(|c| state.handle_key(key(KeyCode::Char(c))))
        .collect()
}

fn query_id(state: &MentionInputState) -> u64 {
    state.results().map(ResultsList::query_id).unwrap()
}

fn offered(title: &str, rows: Vec<MentionItem>) -> Section {
    Section {
        title: title.into(),
        rows,
    }
}

fn highlighted(state: &MentionInputState) -> Option<String> {
    state
        .results()
        .and_then(|r| r.selected())
        .map(|r| r.key().to_owned())
}

fn enter_action(state: &MentionInputState) -> Option<EnterAction> {
    state.results().map(ResultsList::enter_action)
}

/// Item 1: a section of closest matches alone, files before the matches, rows found
/// elsewhere alone: the first row on show is highlighted and Enter inserts it.
#[test]
fn enter_inserts_the_highlighted_row_in_every_section() {
    // Closest matches only (no exact match).
    let mut state = state();
    type_str(&mut state, "@kfk");
    let page = ResultsPage {
        after: vec![offered("closest", vec![topic("k1", "Kafka vs Redis")])],
        ..ResultsPage::default()
    };
    assert_eq!(state.set_page(query_id(&state), page), []);
    assert_eq!(highlighted(&state).as_deref(), Some("k1"));
    assert_eq!(enter_action(&state), Some(EnterAction::Take));
    assert!(matches!(
        state.handle_key(key(KeyCode::Enter)),
        Outcome::Inserted { .. }
    ));
    assert_eq!(state.draft(), "@[Kafka vs Redis](topic:k1) ");

    // Files before the matches: the first file.
    let mut state = self::state();
    type_str(&mut state, "@src/");
    let page = ResultsPage {
        rows: vec![topic("t1", "src/ cleanup")],
        total: 1,
        before: vec![offered(
            "files",
            vec![file("src/main.rs"), file("src/lib.rs")],
        )],
        ..ResultsPage::default()
    };
    assert_eq!(state.set_page(query_id(&state), page), []);
    assert_eq!(highlighted(&state).as_deref(), Some("file:src/main.rs"));
    assert!(matches!(
        state.handle_key(key(KeyCode::Tab)),
        Outcome::Inserted { .. }
    ));
    assert_eq!(state.draft(), "@src/main.rs ");

    // Only rows found elsewhere, announced and answered after an empty page.
    let mut state = self::state();
    let outcomes = type_str(&mut state, "@upgrade");
    let id = query_id(&state);
    assert!(matches!(outcomes.last(), Some(Outcome::Query { .. })));
    state.expect_late_section(id);
    assert_eq!(state.set_page(id, ResultsPage::default()), []);
    let Outcome::Waiting { id: waited, .. } = state.handle_key(key(KeyCode::Enter)) else {
        panic!("Enter waits for the rows still to come");
    };
    assert_eq!(waited, id);
    let acted = state.set_late_section(id, offered("elsewhere", vec![topic("a", "Alpha")]));
    assert!(
        matches!(acted.as_slice(), [Outcome::Inserted { key, .. }] if key == "a"),
        "{acted:?}"
    );
    assert_eq!(state.draft(), "@[Alpha](topic:a) ");
}

/// Item 1: with no row on show Enter sends the draft as typed and Tab does nothing.
#[test]
fn with_no_row_on_show_enter_sends_as_typed_and_tab_does_nothing() {
    let mut state = state();
    type_str(&mut state, "hi @zz");
    assert_eq!(state.set_page(query_id(&state), ResultsPage::default()), []);
    assert_eq!(highlighted(&state), None);
    assert_eq!(enter_action(&state), Some(EnterAction::AsTyped));
    assert_eq!(state.handle_key(key(KeyCode::Tab)), Outcome::Consumed);
    assert_eq!(
        state.handle_key(key(KeyCode::Enter)),
        Outcome::Submit("hi @zz".into())
    );
}

/// Item 1: the first part of an answer is shown at once, but Enter waits for all of it
/// (files ranked after the sessions may come first).
#[test]
fn enter_waits_for_the_whole_page_not_its_first_part() {
    let mut state = state();
    type_str(&mut state, "@READ");
    let id = query_id(&state);
    state.set_partial_page(id, ResultsPage::complete(vec![topic("t", "READ me")]));
    assert_eq!(highlighted(&state).as_deref(), Some("t"));
    let Outcome::Waiting { .. } = state.handle_key(key(KeyCode::Enter)) else {
        panic!("waits");
    };
    let page = ResultsPage {
        rows: vec![topic("t", "READ me")],
        total: 1,
        before: vec![offered("files", vec![file("README.md")])],
        ..ResultsPage::default()
    };
    let acted = state.set_page(id, page);
    assert!(
        matches!(acted.as_slice(), [Outcome::Inserted { key, .. }] if key == "file:README.md"),
        "{acted:?}"
    );
}

/// Item 1 (`[dir]` rows): a row that continues replaces the token without a space and the
/// popup stays open on it — also when its text holds a space inside a quote.
#[test]
fn a_row_that_continues_keeps_the_popup_open_on_it() {
    for (dir, token, query) in [
        ("src", "@src/", "src/"),
        ("my notes", "@\"my notes/", "\"my notes/"),
    ] {
        let mut state = state();
        type_str(&mut state, "see @my");
        let row = MentionItem::plain(format!("dir:{dir}"), dir, token).with_continue(true);
        let page = ResultsPage {
            after: vec![offered("files", vec![row])],
            ..ResultsPage::default()
        };
        assert_eq!(state.set_page(query_id(&state), page), []);
        for enter in [KeyCode::Tab, KeyCode::Enter] {
            let mut state = state.clone();
            let outcome = state.handle_key(key(enter));
            assert!(
                matches!(&outcome, Outcome::Query { text, .. } if text == query),
                "{enter:?} on {dir}: {outcome:?}"
            );
            assert_eq!(state.draft(), format!("see {token}"));
            assert!(state.popup_active());
            // And on from there: typing narrows the directory's entries.
            let typed = type_str(&mut state, "a");
            assert!(
                matches!(typed.last(), Some(Outcome::Query { text, .. }) if *text == format!("{query}a")),
                "{typed:?}"
            );
        }
    }
}

/// Item 4: `@` and a space is no mention: the popup closes and the words after it are
/// text, sent as typed.
#[test]
fn an_at_sign_and_a_space_is_no_mention() {
    let mut state = state();
    type_str(&mut state, "the cost is 5 @");
    assert!(state.popup_active());
    assert_eq!(
        state.set_page(
            query_id(&state),
            ResultsPage::complete(vec![topic("a", "atlas")])
        ),
        []
    );
    type_str(&mut state, " atlas");
    assert!(!state.popup_active(), "closed at the space");
    assert_eq!(
        state.handle_key(key(KeyCode::Enter)),
        Outcome::Submit("the cost is 5 @ atlas".into())
    );
}

/// Answers the newest query with `rows`; asserts no key waited.
fn answer(state: &mut MentionInputState, rows: Vec<MentionItem>) {
    let id = query_id(state);
    assert_eq!(state.set_results(id, rows), []);
}

/// Types `@alpha login` at the caret, answering each query with a row, and inserts it with
/// Enter; returns the draft.
fn type_two_words_and_enter(state: &mut MentionInputState) -> String {
    let row = || vec![topic("a", "Alpha login bug")];
    type_str(state, "@alpha");
    answer(state, row());
    type_str(state, " ");
    assert!(state.popup_active(), "the space continues the query");
    let asked = type_str(state, "login");
    assert!(
        matches!(asked.last(), Some(Outcome::Query { text, .. }) if text == "alpha login"),
        "{asked:?}"
    );
    answer(state, row());
    assert!(matches!(
        state.handle_key(key(KeyCode::Enter)),
        Outcome::Inserted { .. }
    ));
    state.draft()
}

/// Item 4: a query of two words typed in the middle of a draft, after a chip deleted
/// there, and after a history entry was recalled works as at the end.
#[test]
fn two_words_work_anywhere_in_the_draft() {
    // In the middle: the caret before ` later`.
    let mut state = state();
    type_str(&mut state, "see later");
    for _ in 0.." later".len() {
        state.handle_key(key(KeyCode::Left));
    }
    type_str(&mut state, " ");
    assert_eq!(
        type_two_words_and_enter(&mut state),
        "see @[Alpha login bug](topic:a)  later"
    );

    // Where a chip was deleted: the text after the caret starts with a space.
    let mut state = self::state();
    state.handle_paste("see @[Old](topic:o) later");
    for _ in 0.." later".len() {
        state.handle_key(key(KeyCode::Left));
    }
    state.handle_key(key(KeyCode::Backspace));
    assert_eq!(state.draft(), "see  later");
    assert_eq!(
        type_two_words_and_enter(&mut state),
        "see @[Alpha login bug](topic:a)  later"
    );

    // After Up recalled an entry.
    let mut state = self::state();
    state.push_history("about this:");
    state.handle_key(key(KeyCode::Up));
    assert_eq!(state.draft(), "about this:");
    type_str(&mut state, " ");
    assert_eq!(
        type_two_words_and_enter(&mut state),
        "about this: @[Alpha login bug](topic:a) "
    );
}

/// Item 4: in the middle of a draft the words after the caret stay text (they are no part
/// of the query), and two spaces end the query there as at the end.
#[test]
fn the_rest_of_the_draft_is_never_part_of_the_query() {
    let mut state = state();
    type_str(&mut state, "ask now");
    for _ in 0.." now".len() {
        state.handle_key(key(KeyCode::Left));
    }
    let asked = type_str(&mut state, " @alpha");
    assert!(
        matches!(asked.last(), Some(Outcome::Query { text, .. }) if text == "alpha"),
        "{asked:?}"
    );
    answer(&mut state, vec![topic("a", "Alpha")]);
    type_str(&mut state, "  ");
    assert!(!state.popup_active(), "two spaces end it");
    assert_eq!(state.draft(), "ask @alpha   now");
}

/// Item 5: a row the host blocks (a limit reached) says why, and Enter or Tab on it insert
/// nothing and send nothing.
#[test]
fn a_blocked_row_says_why_and_enter_inserts_and_sends_nothing() {
    let mut state = state();
    type_str(&mut state, "@al");
    let blocked = topic("a", "Alpha").with_blocked("limit: 3 topics per message");
    answer(&mut state, vec![blocked, topic("b", "Alps")]);
    assert_eq!(enter_action(&state), Some(EnterAction::Blocked));
    for k in [KeyCode::Enter, KeyCode::Tab] {
        assert_eq!(state.handle_key(key(k)), Outcome::Consumed, "{k:?}");
        assert_eq!(state.draft(), "@al");
        assert!(state.popup_active());
    }
    let mut terminal = Terminal::new(TestBackend::new(60, 8)).unwrap();
    terminal
        .draw(|frame| frame.render_stateful_widget(MentionInput::new(), frame.area(), &mut state))
        .unwrap();
    let screen = format!("{}", terminal.backend());
    assert!(
        screen.contains("› Alpha · limit: 3 topics per message"),
        "{screen}"
    );
    // Another row is taken as usual.
    state.handle_key(key(KeyCode::Down));
    assert!(matches!(
        state.handle_key(key(KeyCode::Enter)),
        Outcome::Inserted { .. }
    ));
    // A blocked row a waiting Enter lands on does nothing either.
    let mut state = self::state();
    type_str(&mut state, "@al");
    let Outcome::Waiting { id, .. } = state.handle_key(key(KeyCode::Enter)) else {
        panic!("waits");
    };
    let acted = state.set_results(id, vec![topic("a", "Alpha").with_blocked("full")]);
    assert_eq!(acted, [Outcome::Changed]);
    assert_eq!(state.draft(), "@al");
}

/// The textarea mode and a host's picker take the same decision.
#[test]
fn the_picker_opens_the_highlighted_row_in_any_section() {
    let mut picker = ratatui_mention::Picker::default();
    let first = picker.open();
    let ratatui_mention::PickerOutcome::Query { id, .. } = first else {
        panic!("{first:?}");
    };
    let page = ResultsPage {
        after: vec![offered("closest", vec![topic("k", "Kafka")])],
        ..ResultsPage::default()
    };
    assert_eq!(picker.set_page(id, page), []);
    assert_eq!(
        picker.handle_event(&Event::Key(key(KeyCode::Enter))),
        ratatui_mention::PickerOutcome::Picked("k".into())
    );
}
