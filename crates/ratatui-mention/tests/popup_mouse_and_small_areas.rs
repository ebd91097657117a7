//! The popup and the picker with a mouse, in areas too low for the popup's frame, and
//! while a slow answer is awaited: the wheel moves the selection, a click selects, a double
//! click inserts or picks; a popup with room for less than its frame is one line with the
//! selected row (issue 27, minor 6: a frame and no rows); rows of an older query stop
//! showing when the host's timer says the answer is late (minor 24).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use pretty_assertions::assert_eq;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui_mention::{
    Mention, MentionInput, MentionInputState, MentionItem, Outcome, Picker, PickerOutcome,
    PickerView, ResultsPage,
};

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn row(key: &str) -> MentionItem {
    MentionItem::new(key, key, &Mention::new(key, format!("topic:{key}")))
}

fn rows(n: usize) -> Vec<MentionItem> {
    (1..=n).map(|i| row(&format!("row {i}"))).collect()
}

fn mouse(kind: MouseEventKind, column: u16, row: u16) -> MouseEvent {
    MouseEvent {
        kind,
        column,
        row,
        modifiers: KeyModifiers::NONE,
    }
}

fn click(column: u16, row: u16) -> MouseEvent {
    mouse(MouseEventKind::Down(MouseButton::Left), column, row)
}

/// A state with `@` typed and `n` rows answered.
fn popup(n: usize) -> MentionInputState {
    let mut state = MentionInputState::default();
    let Outcome::Query { id, .. } = state.handle_key(key(KeyCode::Char('@'))) else {
        panic!("asks")
    };
    let _ = state.set_results(id, rows(n));
    state
}

fn draw(state: &mut MentionInputState, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|frame| frame.render_stateful_widget(MentionInput::new(), frame.area(), state))
        .unwrap();
    text_of(&terminal)
}

fn text_of(terminal: &Terminal<TestBackend>) -> String {
    let buffer = terminal.backend().buffer();
    (0..buffer.area.height)
        .map(|y| {
            let line: String = (0..buffer.area.width)
                .map(|x| buffer[(x, y)].symbol())
                .collect();
            line.trim_end().to_owned()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn selected(state: &MentionInputState) -> Option<String> {
    state
        .results()
        .and_then(|r| r.selected())
        .map(|r| r.key().to_owned())
}

#[test]
fn a_popup_lower_than_its_frame_shows_the_selected_row_on_one_line() {
    let mut state = popup(12);
    // Two rows above a one-row composer: the frame would have no row inside.
    let shown = draw(&mut state, 40, 3);
    assert_eq!(
        shown, "\n› row 1                            1/12\n@",
        "{shown}"
    );
    state.handle_key(key(KeyCode::Down));
    assert!(draw(&mut state, 40, 3).contains("› row 2"));
    // With room for its frame it is framed as before.
    let shown = draw(&mut state, 40, 6);
    assert!(shown.starts_with('╭'), "{shown}");
    assert!(shown.contains("› row 2"), "{shown}");
}

#[test]
fn the_wheel_moves_a_click_selects_and_a_double_click_inserts() {
    let mut state = popup(5);
    let shown = draw(&mut state, 30, 8);
    let line_of = |label: &str| {
        u16::try_from(shown.lines().position(|l| l.contains(label)).unwrap()).unwrap()
    };
    let (y1, y3) = (line_of("row 1"), line_of("row 3"));
    let now = Instant::now();
    let wheel_down = mouse(MouseEventKind::ScrollDown, 5, y1);
    assert_eq!(state.handle_mouse(&wheel_down, now), Outcome::Changed);
    assert_eq!(selected(&state).as_deref(), Some("row 2"));
    let wheel_up = mouse(MouseEventKind::ScrollUp, 5, y1);
    state.handle_mouse(&wheel_up, now);
    state.handle_mouse(&wheel_up, now);
    assert_eq!(
        selected(&state).as_deref(),
        Some("row 1"),
        "stops at the top"
    );
    assert_eq!(state.handle_mouse(&click(5, y3), now), Outcome::Changed);
    assert_eq!(selected(&state).as_deref(), Some("row 3"));
    // A second click much later is a click again; one soon after inserts the row.
    let later = now + Duration::from_secs(2);
    assert_eq!(state.handle_mouse(&click(5, y3), later), Outcome::Changed);
    let inserted = state.handle_mouse(&click(5, y3), later + Duration::from_millis(200));
    assert!(matches!(inserted, Outcome::Inserted { .. }), "{inserted:?}");
    assert_eq!(state.draft(), "@[row 3](topic:row%203) ");
    // Outside the popup (or with none open) the mouse is the host's.
    assert_eq!(state.handle_mouse(&click(5, 0), later), Outcome::Ignored);
}

#[test]
fn the_picker_takes_the_mouse_too() {
    let mut picker = Picker::default();
    let PickerOutcome::Query { id, .. } = picker.open() else {
        panic!("asks")
    };
    let _ = picker.set_page(id, ResultsPage::complete(rows(4)));
    let mut terminal = Terminal::new(TestBackend::new(30, 8)).unwrap();
    terminal
        .draw(|frame| {
            frame.render_stateful_widget(PickerView::new(" open "), frame.area(), &mut picker);
        })
        .unwrap();
    assert!(picker.is_drawn());
    let shown = text_of(&terminal);
    let y = u16::try_from(shown.lines().position(|l| l.contains("row 4")).unwrap()).unwrap();
    let now = Instant::now();
    assert_eq!(
        picker.handle_mouse(&click(4, y), now),
        PickerOutcome::Changed
    );
    assert_eq!(
        picker.handle_mouse(&click(4, y), now),
        PickerOutcome::Picked("row 4".into())
    );
    // Too small to draw: not drawn, and the host knows it.
    let mut terminal = Terminal::new(TestBackend::new(30, 3)).unwrap();
    terminal
        .draw(|frame| {
            frame.render_stateful_widget(PickerView::new(" open "), frame.area(), &mut picker);
        })
        .unwrap();
    assert!(!picker.is_drawn());
    assert_eq!(
        picker.handle_mouse(&click(4, 1), now),
        PickerOutcome::Ignored
    );
}

#[test]
fn rows_of_an_older_query_stop_showing_when_the_answer_is_late() {
    let mut state = popup(30);
    let Outcome::Query { id, .. } = state.handle_key(key(KeyCode::Char('s'))) else {
        panic!("asks")
    };
    // Until the slow-answer time runs out, the rows on show stay (no flicker on fast answers).
    let start = std::time::Instant::now();
    assert_eq!(state.tick(start), []);
    let due = start + std::time::Duration::from_millis(250);
    assert_eq!(state.next_tick(), Some(due));
    assert_eq!(
        state.tick(
            due.checked_sub(std::time::Duration::from_millis(1))
                .expect("after the epoch")
        ),
        []
    );
    assert!(draw(&mut state, 40, 8).contains("row 1"));
    assert_eq!(state.tick(due), [Outcome::Changed]);
    let shown = draw(&mut state, 40, 8);
    assert!(!shown.contains("row 1"), "{shown}");
    assert!(shown.contains("searching…"), "{shown}");
    assert_eq!(state.next_tick(), None, "nothing more to do");
    // The answer shows as usual; once answered, nothing is hidden any more.
    let _ = state.set_results(id, vec![row("snarf")]);
    assert_eq!(state.tick(due + std::time::Duration::from_secs(9)), []);
    assert!(draw(&mut state, 40, 8).contains("› snarf"));
}
