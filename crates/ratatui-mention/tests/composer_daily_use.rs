//! The composer as a daily user meets it: unbound chords type nothing, Up history after a
//! recalled entry was cleared or left untouched, and large pastes collapsed into one
//! placeholder that is submitted, kept in history and restored in full and opens for
//! editing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use pretty_assertions::assert_eq;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::widgets::Block;
use ratatui_mention::{MentionConfig, MentionInput, MentionInputState, Outcome};

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

fn type_str(state: &mut MentionInputState, text: &str) {
    for c in text.chars() {
        state.handle_key(key(KeyCode::Char(c)));
    }
}

fn state() -> MentionInputState {
    MentionInputState::new(MentionConfig::default().with_uri_scheme("topic:"))
}

/// The composer drawn in a bordered block of `width`×`height`, as text.
fn screen(state: &mut MentionInputState, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|frame| {
            let input = MentionInput::new().block(Block::bordered());
            frame.render_stateful_widget(input, frame.area(), state);
        })
        .unwrap();
    let buffer = terminal.backend().buffer();
    let mut out = String::new();
    for y in 0..buffer.area.height {
        for x in 0..buffer.area.width {
            out.push_str(buffer[(x, y)].symbol());
        }
        out.push('\n');
    }
    out
}

/// A paste of `lines` numbered lines.
fn lines(n: usize) -> String {
    (1..=n)
        .map(|i| format!("log line {i}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Issue 27, minor 8: Alt+Ctrl+U/A/K typed `u a k`, and Esc then Ctrl+U read in one go
/// (the same bytes) typed `u`.
#[test]
fn unbound_chords_type_nothing() {
    let mut state = state();
    type_str(&mut state, "keep");
    for c in ['u', 'a', 'k', 'U'] {
        let chord = KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL | KeyModifiers::ALT);
        assert_eq!(state.handle_key(chord), Outcome::Ignored, "Alt+Ctrl+{c}");
    }
    assert_eq!(state.draft(), "keep");
    // AltGr arrives as Ctrl+Alt on some platforms: what it types still goes in.
    let altgr = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL | KeyModifiers::ALT);
    state.handle_key(altgr('{'));
    state.handle_key(altgr('ł'));
    assert_eq!(state.draft(), "keep{ł");
    // The picker's filter follows the same rule.
    let mut picker = ratatui_mention::Picker::default();
    let _ = picker.open();
    picker.handle_key(altgr('u'));
    picker.handle_key(altgr('€'));
    assert_eq!(picker.filter(), "€");
}

/// Issue 27, minor 3: after a restart, Up, Ctrl+U, Up did nothing (the cleared recall was
/// taken for an edit to keep).
#[test]
fn up_goes_on_after_a_recalled_entry_was_cleared() {
    let mut state = state();
    for sent in ["first", "second", "third"] {
        state.push_history(sent);
    }
    state.handle_key(key(KeyCode::Up));
    assert_eq!(state.draft(), "third");
    state.handle_key(ctrl('u'));
    assert_eq!(state.draft(), "");
    assert_eq!(state.handle_key(key(KeyCode::Up)), Outcome::Changed);
    assert_eq!(state.draft(), "second");
    // Backspace down to nothing does the same.
    for _ in 0.."second".len() {
        state.handle_key(key(KeyCode::Backspace));
    }
    state.handle_key(key(KeyCode::Up));
    assert_eq!(state.draft(), "first");
    // An edit is kept: Up does not throw it away.
    type_str(&mut state, "!");
    assert_eq!(state.handle_key(key(KeyCode::Up)), Outcome::Consumed);
    assert_eq!(state.draft(), "first!");
}

/// Issue 27, minor 12: a recalled 3 000-line entry was walked line by line by Up.
#[test]
fn up_steps_over_a_recalled_long_entry_in_one_press() {
    let mut state = state();
    let long = lines(3000);
    state.push_history("before");
    state.push_history(&long);
    state.push_history("after");
    let ups = |state: &mut MentionInputState, n| {
        for _ in 0..n {
            state.handle_key(key(KeyCode::Up));
        }
    };
    ups(&mut state, 2);
    assert_eq!(state.draft(), long);
    ups(&mut state, 1);
    assert_eq!(state.draft(), "before", "one Up past 3 000 lines");
    state.handle_key(key(KeyCode::Down));
    assert_eq!(state.draft(), long);
    state.handle_key(key(KeyCode::Down));
    assert_eq!(state.draft(), "after", "and one Down");
}

#[test]
fn a_large_paste_is_one_placeholder_sent_in_full() {
    let mut state = state();
    type_str(&mut state, "look: ");
    let paste = lines(3000);
    assert_eq!(state.handle_paste(&paste), Outcome::Changed);
    type_str(&mut state, " why?");
    let shown = screen(&mut state, 50, 3);
    assert_eq!(
        shown.lines().nth(1),
        Some("│look: [pasted 3 000 lines] why?                 │"),
        "{shown}"
    );
    assert!(!state.collapsed_at_caret(), "the caret is after ` why?`");
    let want = format!("look: {paste} why?");
    assert_eq!(
        state.handle_key(key(KeyCode::Enter)),
        Outcome::Submit(want.clone()),
        "sent in full"
    );
    // The caret steps over it whole, and Backspace deletes it whole.
    for _ in 0.." why?".len() {
        state.handle_key(key(KeyCode::Left));
    }
    assert!(state.collapsed_at_caret());
    state.handle_key(key(KeyCode::Left));
    assert_eq!(state.caret(), "look: ".chars().count(), "one step");
    state.handle_key(key(KeyCode::Right));
    state.handle_key(key(KeyCode::Backspace));
    assert_eq!(state.draft(), "look:  why?");
    state.handle_key(ctrl('z'));
    assert_eq!(state.draft(), want, "undo brings it back collapsed");
    assert!(screen(&mut state, 50, 3).contains("[pasted 3 000 lines]"));
    // A single long line counts its chars; a short paste goes in as it is.
    let mut state = self::state();
    state.handle_paste(&"x".repeat(12_000));
    assert!(screen(&mut state, 40, 3).contains("[pasted 12 000 chars]"));
    let mut state = self::state();
    state.handle_paste("two\nlines");
    assert!(screen(&mut state, 40, 4).contains("│lines"));
}

#[test]
fn a_collapsed_paste_opens_for_editing_and_undo_closes_it() {
    let mut state = state();
    let paste = lines(40);
    state.handle_paste(&paste);
    assert!(state.collapsed_at_caret());
    assert_eq!(state.handle_key(ctrl('g')), Outcome::Changed);
    assert!(!state.collapsed_at_caret());
    assert_eq!(state.draft(), paste);
    let open = screen(&mut state, 30, 10);
    assert!(open.contains("log line 40"), "{open}");
    assert!(!open.contains("[pasted"), "{open}");
    // Now it is text: Backspace takes one char.
    state.handle_key(key(KeyCode::Backspace));
    assert_eq!(state.draft(), lines(40).trim_end_matches('0'));
    state.handle_key(ctrl('z'));
    state.handle_key(ctrl('z'));
    assert!(state.collapsed_at_caret(), "collapsed again");
    assert_eq!(state.draft(), paste);
    // With nothing to open the key is the host's.
    let mut empty = self::state();
    assert_eq!(empty.handle_key(ctrl('g')), Outcome::Ignored);
}

#[test]
fn history_and_a_restored_draft_keep_the_paste_collapsed() {
    let mut state = state();
    let paste = lines(3000);
    type_str(&mut state, "see ");
    state.handle_paste(&paste);
    let Outcome::Submit(sent) = state.handle_key(key(KeyCode::Enter)) else {
        panic!("submits");
    };
    // The host gives a failed submit back: it comes back collapsed.
    state.restore_draft(&sent);
    assert!(state.collapsed_at_caret());
    assert!(screen(&mut state, 40, 3).contains("see [pasted 3 000 lines]"));
    // Sent: one call takes it, and Up brings it back collapsed.
    assert!(state.take_submit(&sent));
    state.handle_key(key(KeyCode::Up));
    assert_eq!(state.draft(), sent);
    assert!(screen(&mut state, 40, 3).contains("see [pasted 3 000 lines]"));
    // Ctrl+C's "clear to history" keeps it collapsed too.
    state.handle_key(ctrl('e'));
    assert!(state.clear_draft_to_history());
    state.handle_key(key(KeyCode::Up));
    assert!(state.collapsed_at_caret());
    // An entry whose pastes are not known (a history file) shows its middle collapsed.
    let mut state = self::state();
    state.push_history(&format!("intro\n{}\nquestion?", lines(2998)));
    state.handle_key(key(KeyCode::Up));
    let shown = screen(&mut state, 40, 5);
    assert!(shown.contains("│intro"), "{shown}");
    assert!(shown.contains("│[2 998 lines]"), "{shown}");
    assert!(shown.contains("│question?"), "{shown}");
}

#[test]
fn pastes_stay_open_when_the_host_says_so() {
    let mut state = MentionInputState::new(
        MentionConfig::default().with_paste_collapse(usize::MAX, usize::MAX),
    );
    state.handle_paste(&lines(3000));
    assert!(!state.collapsed_at_caret());
    assert!(screen(&mut state, 30, 4).contains("log line 3000"));
    // Events go the same way as keys.
    let mut state = self::state();
    state.handle_event(&Event::Paste(lines(20)));
    assert!(state.collapsed_at_caret());
}
