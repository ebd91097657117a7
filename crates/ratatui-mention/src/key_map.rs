//! The one table of composer key bindings (key → action → help text): the bottom pane
//! classifies keys through it and `/help` renders it, so help cannot drift from behaviour.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::fmt::Write as _;

/// What a bound key means to the bottom pane; context (popup open, cursor row, draft) decides
/// the exact effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Enter: insert the selected session while the popup is open, else submit.
    Submit,
    /// Insert a line break.
    Newline,
    /// Popup: previous row; composer: cursor up, older history at the first line.
    Up,
    /// Popup: next row; composer: cursor down, newer history at the last line.
    Down,
    /// Popup: previous row; composer: cursor up.
    PopupPrev,
    /// Popup: next row; composer: cursor down.
    PopupNext,
    /// Popup: insert the selected session.
    Complete,
    /// Close the popup, else hand Esc to the app (cancel preparation, else the turn).
    Escape,
    /// Ctrl+C: handed to the app (cancel turn, else clear the draft, else quit).
    Interrupt,
    /// Quit when the draft is empty, else delete the char after the cursor.
    QuitIfEmpty,
    /// Delete before the cursor; right after a mention, the whole mention.
    DeleteBackward,
    /// Delete after the cursor; right before a mention, the whole mention.
    DeleteForward,
}

impl Action {
    /// One line of help for `/help`.
    pub fn help(self) -> &'static str {
        match self {
            Action::Submit => "send the message (inserts the selected session while @ is open)",
            Action::Newline => "insert a new line",
            Action::Up => "previous session in @ popup; older input at the first line",
            Action::Down => "next session in @ popup; newer input at the last line",
            Action::PopupPrev => "previous session in @ popup",
            Action::PopupNext => "next session in @ popup",
            Action::Complete => "insert the selected session",
            Action::Escape => "close @ popup, else cancel preparing, else cancel the reply",
            Action::Interrupt => "cancel the reply, else clear the draft (Up restores), else quit",
            Action::QuitIfEmpty => "quit when the draft is empty",
            Action::DeleteBackward => "delete backwards; a mention goes as a whole",
            Action::DeleteForward => "delete forwards; a mention goes as a whole",
        }
    }
}

/// One row of the key map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Binding {
    pub code: KeyCode,
    pub modifiers: KeyModifiers,
    pub action: Action,
}

impl Binding {
    /// The key as `/help` shows it, e.g. `Shift+Enter`.
    pub fn label(&self) -> String {
        key_label(self.code, self.modifiers)
    }
}

const fn bind(code: KeyCode, modifiers: KeyModifiers, action: Action) -> Binding {
    Binding {
        code,
        modifiers,
        action,
    }
}

const NONE: KeyModifiers = KeyModifiers::NONE;
const CTRL: KeyModifiers = KeyModifiers::CONTROL;
const SHIFT: KeyModifiers = KeyModifiers::SHIFT;
const ALT: KeyModifiers = KeyModifiers::ALT;

/// Every composer binding, in `/help` order. Keys not listed go to the text editor.
pub const BINDINGS: &[Binding] = &[
    bind(KeyCode::Enter, NONE, Action::Submit),
    bind(KeyCode::Enter, SHIFT, Action::Newline),
    bind(KeyCode::Char('j'), CTRL, Action::Newline),
    bind(KeyCode::Enter, ALT, Action::Newline),
    bind(KeyCode::Up, NONE, Action::Up),
    bind(KeyCode::Down, NONE, Action::Down),
    bind(KeyCode::Char('p'), CTRL, Action::PopupPrev),
    bind(KeyCode::Char('n'), CTRL, Action::PopupNext),
    bind(KeyCode::Tab, NONE, Action::Complete),
    bind(KeyCode::Esc, NONE, Action::Escape),
    bind(KeyCode::Char('c'), CTRL, Action::Interrupt),
    bind(KeyCode::Char('d'), CTRL, Action::QuitIfEmpty),
    bind(KeyCode::Backspace, NONE, Action::DeleteBackward),
    bind(KeyCode::Char('h'), CTRL, Action::DeleteBackward),
    bind(KeyCode::Delete, NONE, Action::DeleteForward),
];

/// The action bound to `key`, if any. Shift on a letter with Ctrl is ignored (some
/// terminals report Ctrl+Shift+P for Ctrl+P with caps lock).
pub fn classify(key: &KeyEvent) -> Option<Action> {
    let code = match key.code {
        KeyCode::Char(c) if key.modifiers.contains(CTRL) => KeyCode::Char(c.to_ascii_lowercase()),
        code => code,
    };
    let modifiers = match code {
        KeyCode::Char(_) if key.modifiers.contains(CTRL) => key.modifiers - SHIFT,
        _ => key.modifiers,
    };
    BINDINGS
        .iter()
        .find(|b| b.code == code && b.modifiers == modifiers)
        .map(|b| b.action)
}

/// `(key label, help text)` rows for `/help`, in table order.
pub fn help_rows() -> Vec<(String, &'static str)> {
    BINDINGS
        .iter()
        .map(|b| (b.label(), b.action.help()))
        .collect()
}

fn key_label(code: KeyCode, modifiers: KeyModifiers) -> String {
    let mut out = String::new();
    for (flag, name) in [(CTRL, "Ctrl+"), (ALT, "Alt+"), (SHIFT, "Shift+")] {
        if modifiers.contains(flag) {
            out.push_str(name);
        }
    }
    match code {
        KeyCode::Char(c) => out.extend(c.to_uppercase()),
        KeyCode::Enter => out.push_str("Enter"),
        KeyCode::Up => out.push_str("Up"),
        KeyCode::Down => out.push_str("Down"),
        KeyCode::Tab => out.push_str("Tab"),
        KeyCode::Esc => out.push_str("Esc"),
        KeyCode::Backspace => out.push_str("Backspace"),
        KeyCode::Delete => out.push_str("Delete"),
        other => {
            let _ = write!(out, "{other:?}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn every_documented_row_classifies_to_its_action() {
        for (binding, (label, help)) in BINDINGS.iter().zip(help_rows()) {
            let key = KeyEvent::new(binding.code, binding.modifiers);
            assert_eq!(classify(&key), Some(binding.action), "{label}");
            assert_eq!(help, binding.action.help());
        }
    }

    #[test]
    fn labels_read_like_keys() {
        let labels: Vec<String> = help_rows().into_iter().map(|(l, _)| l).collect();
        assert_eq!(
            labels,
            [
                "Enter",
                "Shift+Enter",
                "Ctrl+J",
                "Alt+Enter",
                "Up",
                "Down",
                "Ctrl+P",
                "Ctrl+N",
                "Tab",
                "Esc",
                "Ctrl+C",
                "Ctrl+D",
                "Backspace",
                "Ctrl+H",
                "Delete"
            ]
        );
    }

    #[test]
    fn unbound_keys_and_variants() {
        let cases = [
            (KeyEvent::new(KeyCode::Char('a'), NONE), None),
            (KeyEvent::new(KeyCode::Char('P'), SHIFT), None),
            (
                KeyEvent::new(KeyCode::Char('P'), CTRL | SHIFT),
                Some(Action::PopupPrev),
            ),
            (KeyEvent::new(KeyCode::Enter, CTRL | SHIFT), None),
            (KeyEvent::new(KeyCode::Left, NONE), None),
        ];
        for (key, want) in cases {
            assert_eq!(classify(&key), want, "{key:?}");
        }
    }
}
