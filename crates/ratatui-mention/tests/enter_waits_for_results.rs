//! Enter never outruns the results: Enter or Tab pressed while the newest query is
//! unanswered waits for that answer and then acts on it (keys and pastes that came after
//! it are applied afterwards, in order); when the answer wait runs out first (`tick`),
//! nothing is sent and the popup says Enter again sends the draft as text. Only rows that
//! answer exactly the current query are acted on at once.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

use std::time::{Duration, Instant};

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use pretty_assertions::assert_eq;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::widgets::{Block, BorderType};
use ratatui_mention::{
    Mention, MentionConfig, MentionInput, MentionInputState, MentionItem, Outcome,
};

fn key(code: KeyCode) -> Event {
    Event::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

/// Every event of `text` typed key by key, as one terminal read delivers a burst.
fn typed(text: &str) -> Vec<Event> {
    text.chars().map(|c| key(KeyCode::Char(c))).collect()
}

fn row(key: &str, label: &str) -> MentionItem {
    MentionItem::new(key, label, &Mention::new(label, format!("topic:{key}")))
}

/// The answer wait is 1 s; rows of an older query stay on show for good (slow answers
/// have their own test).
fn state() -> MentionInputState {
    let config = MentionConfig::default()
        .with_uri_scheme("topic:")
        .with_slow_answer(Duration::from_secs(3600));
    MentionInputState::new(config)
}

/// Ticks now and once the answer wait ran out: what the second tick did.
fn wait_runs_out(state: &mut MentionInputState) -> Vec<Outcome> {
    let start = Instant::now();
    assert_eq!(state.tick(start), [], "the wait starts");
    assert_eq!(state.tick(start + Duration::from_millis(999)), []);
    state.tick(start + Duration::from_secs(1))
}

/// Feeds `events` in one go (no answer can arrive in between), returning every outcome.
fn burst(state: &mut MentionInputState, events: &[Event]) -> Vec<Outcome> {
    events.iter().map(|e| state.handle_event(e)).collect()
}

/// The id and text of a query outcome.
fn query_of(outcome: &Outcome) -> Option<(u64, String)> {
    match outcome {
        Outcome::Query { id, text, .. } => Some((*id, text.clone())),
        _ => None,
    }
}

fn inserted_key(outcome: &Outcome) -> Option<&str> {
    match outcome {
        Outcome::Inserted { key, .. } => Some(key),
        _ => None,
    }
}

fn waiting_id(outcome: &Outcome) -> Option<u64> {
    match outcome {
        Outcome::Waiting { id, .. } => Some(*id),
        _ => None,
    }
}

fn screen(state: &mut MentionInputState, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|frame| {
            let block = Block::bordered().border_type(BorderType::Rounded);
            let input = MentionInput::new().block(block);
            frame.render_stateful_widget(input, frame.area(), state);
        })
        .unwrap();
    format!("{}", terminal.backend())
}

/// The report: the unfiltered list was on show when `Helm` and Enter arrived in one
/// read; Enter sent `@Helm` as plain text, or inserted the unfiltered first row.
#[test]
fn a_burst_of_keys_then_enter_inserts_the_row_answering_what_was_typed() {
    let mut state = state();
    let opened = state.handle_event(&key(KeyCode::Char('@')));
    assert_eq!(query_of(&opened), Some((1, String::new())));
    let unfiltered = vec![row("apple", "Apple pie"), row("helm", "Helm chart upgrade")];
    assert_eq!(state.set_results(1, unfiltered), []);
    let mut events = typed("Helm");
    events.push(key(KeyCode::Enter));
    let outcomes = burst(&mut state, &events);
    let queries: Vec<_> = outcomes.iter().filter_map(query_of).collect();
    assert_eq!(
        queries,
        [
            (2, "H".to_owned()),
            (3, "He".to_owned()),
            (4, "Hel".to_owned()),
            (5, "Helm".to_owned())
        ]
    );
    assert_eq!(
        outcomes.last().and_then(waiting_id),
        Some(5),
        "{outcomes:?}"
    );
    assert!(state.is_waiting());
    assert_eq!(state.draft(), "@Helm", "nothing inserted, nothing sent yet");
    // Older answers change nothing and resolve nothing.
    assert_eq!(state.set_results(3, vec![row("apple", "Apple pie")]), []);
    assert!(state.is_waiting());
    let acted = state.set_results(5, vec![row("helm", "Helm chart upgrade")]);
    assert_eq!(acted.len(), 1, "{acted:?}");
    assert_eq!(inserted_key(&acted[0]), Some("helm"));
    assert_eq!(state.draft(), "@[Helm chart upgrade](topic:helm) ");
    assert!(!state.is_waiting());
}

#[test]
fn a_paste_and_enter_in_one_read_wait_for_the_pastes_answer() {
    let mut state = state();
    state.handle_event(&key(KeyCode::Char('@')));
    let _ = state.set_results(1, vec![row("apple", "Apple pie")]);
    let outcomes = burst(
        &mut state,
        &[Event::Paste("Helm".into()), key(KeyCode::Enter)],
    );
    assert_eq!(query_of(&outcomes[0]), Some((2, "Helm".to_owned())));
    assert_eq!(waiting_id(&outcomes[1]), Some(2));
    let acted = state.set_results(2, vec![row("helm", "Helm chart upgrade")]);
    assert_eq!(inserted_key(&acted[0]), Some("helm"));
    assert_eq!(state.draft(), "@[Helm chart upgrade](topic:helm) ");
}

/// A macro: Tab, then more text and Enter, all before the answer. The text lands after the
/// mention, and the Enter submits the whole message, in the order typed.
#[test]
fn inputs_after_a_waiting_tab_are_applied_after_it_in_order() {
    let mut state = state();
    let mut events = typed("@Helm");
    events.push(key(KeyCode::Tab));
    events.extend(typed("is "));
    events.push(Event::Paste("broken".into()));
    events.push(key(KeyCode::Enter));
    let outcomes = burst(&mut state, &events);
    let held = outcomes.iter().skip(6).all(|o| *o == Outcome::Consumed);
    assert_eq!(waiting_id(&outcomes[5]), Some(5));
    assert!(held, "held while waiting: {outcomes:?}");
    assert_eq!(state.draft(), "@Helm");
    let acted = state.set_results(5, vec![row("helm", "Helm")]);
    assert_eq!(inserted_key(&acted[0]), Some("helm"));
    assert_eq!(
        acted.last(),
        Some(&Outcome::Submit("@[Helm](topic:helm) is broken".into())),
        "{acted:?}"
    );
    assert_eq!(acted.len(), 1 + 3 + 1 + 1);
}

#[test]
fn when_the_wait_runs_out_nothing_is_sent_and_enter_again_sends_as_text() {
    let mut state = state();
    let mut events = typed("@zz");
    events.push(key(KeyCode::Enter));
    let outcomes = burst(&mut state, &events);
    assert_eq!(outcomes.last().and_then(waiting_id), Some(3));
    insta::assert_snapshot!("waiting_with_no_rows", screen(&mut state, 50, 6));
    assert_eq!(wait_runs_out(&mut state), [Outcome::Changed]);
    assert!(!state.is_waiting());
    assert_eq!(state.draft(), "@zz", "nothing sent");
    let shown = screen(&mut state, 50, 6);
    assert!(
        shown.contains("still searching — Enter again sends as text"),
        "{shown}"
    );
    assert_eq!(
        state.handle_event(&key(KeyCode::Enter)),
        Outcome::Submit("@zz".into())
    );
    assert_eq!(wait_runs_out(&mut state), [], "ended already");
}

#[test]
fn after_the_wait_ran_out_a_late_answer_is_acted_on_at_once() {
    let mut state = state();
    let mut events = typed("@He");
    events.push(key(KeyCode::Tab));
    events.extend(typed("lm"));
    burst(&mut state, &events);
    // The held `lm` is applied when the wait ends: a new query, which a new Tab waits for.
    let after = wait_runs_out(&mut state);
    assert_eq!(after.len(), 3, "{after:?}");
    assert_eq!(query_of(&after[2]), Some((5, "Helm".to_owned())));
    assert_eq!(state.draft(), "@Helm");
    let _ = state.set_results(5, vec![row("helm", "Helm")]);
    let tab = state.handle_event(&key(KeyCode::Tab));
    assert_eq!(
        inserted_key(&tab),
        Some("helm"),
        "the rows answer @Helm: at once"
    );
}

#[test]
fn rows_of_an_older_query_on_show_make_enter_wait_too() {
    let mut state = state();
    burst(&mut state, &typed("@He"));
    let _ = state.set_results(3, vec![row("hello", "Hello"), row("helm", "Helm")]);
    insta::assert_snapshot!("rows_answer_the_query", screen(&mut state, 50, 8));
    // `l` asks again; the rows for `He` stay on show but do not answer `Hel`.
    burst(&mut state, &typed("l"));
    let wait = state.handle_event(&key(KeyCode::Enter));
    assert_eq!(waiting_id(&wait), Some(4));
    insta::assert_snapshot!("waiting_with_older_rows_on_show", screen(&mut state, 50, 8));
    assert_eq!(wait_runs_out(&mut state), [Outcome::Changed]);
    insta::assert_snapshot!("gave_up_with_older_rows_on_show", screen(&mut state, 60, 8));
    // The answer comes after all: Enter inserts its first row at once.
    let _ = state.set_results(4, vec![row("helm", "Helm")]);
    let enter = state.handle_event(&key(KeyCode::Enter));
    assert_eq!(inserted_key(&enter), Some("helm"));
}

#[test]
fn a_failed_answer_lets_a_waiting_enter_send_the_draft() {
    let mut state = state();
    let mut events = typed("@x");
    events.push(key(KeyCode::Enter));
    burst(&mut state, &events);
    assert_eq!(
        state.set_failed(2, "store busy"),
        [Outcome::Submit("@x".into())]
    );
}

#[test]
fn a_draft_restored_meanwhile_ends_the_wait() {
    let mut state = state();
    let mut events = typed("@x");
    events.push(key(KeyCode::Enter));
    burst(&mut state, &events);
    state.restore_draft("something else");
    assert!(!state.is_waiting());
    assert_eq!(state.set_results(2, vec![row("x", "X")]), []);
    assert_eq!(state.draft(), "something else");
}

#[test]
fn held_inputs_are_bounded() {
    let mut state = state();
    let mut events = typed("@x");
    events.push(key(KeyCode::Enter));
    burst(&mut state, &events);
    for _ in 0..5000 {
        assert_eq!(
            state.handle_event(&key(KeyCode::Char('y'))),
            Outcome::Consumed
        );
    }
    let acted = state.set_results(2, Vec::new());
    // The Enter (nothing to insert: the draft is submitted), then the held keys, capped.
    assert_eq!(acted.first(), Some(&Outcome::Submit("@x".into())));
    assert_eq!(acted.len(), 1 + 4096);
    assert_eq!(state.draft(), format!("@x{}", "y".repeat(4096)));
}

/// A hit found for the newest query answers it: moving onto one and pressing Enter acts at
/// once, even while the listing of that query is still out; a hit of an older query does
/// not.
#[test]
fn a_fresh_hit_selected_is_acted_on_at_once() {
    use ratatui_mention::Section;
    let hits = |key: &str| Section {
        title: "elsewhere".into(),
        rows: vec![row(key, key)],
    };
    let mut state = state();
    burst(&mut state, &typed("@ze"));
    assert_eq!(state.set_late_section(3, hits("zed")), []);
    // Highlighted because it is the only row, not chosen: the matches may come above it.
    let enter = state.clone().handle_event(&key(KeyCode::Enter));
    assert_eq!(waiting_id(&enter), Some(3), "{enter:?}");
    assert_eq!(state.handle_event(&key(KeyCode::Down)), Outcome::Changed);
    let enter = state.handle_event(&key(KeyCode::Enter));
    assert_eq!(inserted_key(&enter), Some("zed"), "{enter:?}");
    // The hit shown answers `@zo`; `@zoo` is typed: it is an older query's hit now.
    let mut state = self::state();
    burst(&mut state, &typed("@zo"));
    assert_eq!(state.set_late_section(3, hits("zorro")), []);
    burst(&mut state, &typed("o"));
    state.handle_event(&key(KeyCode::Down));
    let enter = state.handle_event(&key(KeyCode::Enter));
    assert_eq!(waiting_id(&enter), Some(4), "{enter:?}");
}
