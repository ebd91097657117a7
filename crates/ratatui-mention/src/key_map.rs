//! The one table of composer key bindings (key → action → help text): the bottom pane
//! classifies keys through it and `/help` renders it, so help cannot drift from behaviour.
//! Keys follow Codex CLI / Claude Code and a shell (readline): Ctrl+U kills to the line
//! start, Ctrl+Z undoes.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// What a bound key means to the bottom pane; context (popup open, cursor row, draft) decides
/// the exact effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Enter: insert the selected row while a popup row is selected, else submit.
    Submit,
    /// Insert a line break.
    Newline,
    /// Popup: previous row; composer: cursor up, older history at the first line.
    Up,
    /// Popup: next row; composer: cursor down, newer history at the last line.
    Down,
    /// Popup: previous row; composer: like Up.
    PopupPrev,
    /// Popup: next row; composer: like Down.
    PopupNext,
    /// Popup: insert the selected (else the first) row; composer: a tab.
    Complete,
    /// Close the popup, else hand Esc to the app (cancel preparation, else the turn).
    Escape,
    /// Ctrl+C: handed to the app (cancel turn, else clear the draft, else quit twice).
    Interrupt,
    /// Quit when the draft is empty, else delete the char after the cursor.
    QuitIfEmpty,
    /// Delete before the cursor; right after a mention, the whole mention.
    DeleteBackward,
    /// Delete after the cursor; right before a mention, the whole mention.
    DeleteForward,
    /// One character (cluster or mention) left.
    Left,
    /// One character (cluster or mention) right.
    Right,
    /// To the start of the previous word.
    WordLeft,
    /// To the end of the next word.
    WordRight,
    /// To the start of the line.
    LineStart,
    /// To the end of the line.
    LineEnd,
    /// Delete to the start of the line (joins lines at a line start).
    KillLineStart,
    /// Delete to the end of the line (joins lines at a line end).
    KillLineEnd,
    /// Delete the word before the cursor.
    DeleteWordBackward,
    /// Delete the word after the cursor.
    DeleteWordForward,
    /// Undo the last edit.
    Undo,
    /// Insert the text deleted last by a word or line delete.
    Yank,
}

impl Action {
    /// One line of help for `/help`.
    pub fn help(self) -> &'static str {
        match self {
            Action::Submit => "send (inserts the selected row while a popup row is selected)",
            Action::Newline => "insert a new line",
            Action::Up => "previous popup row; else up a line, older input at the first line",
            Action::Down => "next popup row; else down a line, newer input at the last line",
            Action::PopupPrev => "previous popup row; else like Up",
            Action::PopupNext => "next popup row; else like Down",
            Action::Complete => "insert the selected (else the first) popup row; else a tab",
            Action::Escape => "close the popup, else cancel preparing, else cancel the reply",
            Action::Interrupt => {
                "cancel the reply, else clear the draft (Up restores), else press twice to quit"
            }
            Action::QuitIfEmpty => "quit when the draft is empty, else delete forwards",
            Action::DeleteBackward => "delete backwards; a mention goes as a whole",
            Action::DeleteForward => "delete forwards; a mention goes as a whole",
            Action::Left => "move left (over a mention as a whole)",
            Action::Right => "move right (over a mention as a whole)",
            Action::WordLeft => "move to the previous word",
            Action::WordRight => "move to the next word",
            Action::LineStart => "move to the line start",
            Action::LineEnd => "move to the line end",
            Action::KillLineStart => "delete to the line start",
            Action::KillLineEnd => "delete to the line end",
            Action::DeleteWordBackward => "delete the previous word",
            Action::DeleteWordForward => "delete the next word",
            Action::Undo => "undo",
            Action::Yank => "paste the text deleted last (yank)",
        }
    }
}

/// One row of the key map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Binding {
    pub code: KeyCode,
    pub modifiers: KeyModifiers,
    pub action: Action,
    /// Another encoding of a key listed on its own row (not shown by `/help`).
    pub alias: bool,
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
        alias: false,
    }
}

const fn alias(code: KeyCode, modifiers: KeyModifiers, action: Action) -> Binding {
    Binding {
        code,
        modifiers,
        action,
        alias: true,
    }
}

const NONE: KeyModifiers = KeyModifiers::NONE;
const CTRL: KeyModifiers = KeyModifiers::CONTROL;
const SHIFT: KeyModifiers = KeyModifiers::SHIFT;
const ALT: KeyModifiers = KeyModifiers::ALT;

/// Every composer binding, in `/help` order. Unlisted printable keys are typed as text;
/// other unlisted keys do nothing in the composer.
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
    bind(KeyCode::Left, NONE, Action::Left),
    bind(KeyCode::Char('b'), CTRL, Action::Left),
    bind(KeyCode::Right, NONE, Action::Right),
    bind(KeyCode::Char('f'), CTRL, Action::Right),
    bind(KeyCode::Char('b'), ALT, Action::WordLeft),
    bind(KeyCode::Left, CTRL, Action::WordLeft),
    bind(KeyCode::Left, ALT, Action::WordLeft),
    bind(KeyCode::Char('f'), ALT, Action::WordRight),
    bind(KeyCode::Right, CTRL, Action::WordRight),
    bind(KeyCode::Right, ALT, Action::WordRight),
    bind(KeyCode::Home, NONE, Action::LineStart),
    bind(KeyCode::Char('a'), CTRL, Action::LineStart),
    bind(KeyCode::End, NONE, Action::LineEnd),
    bind(KeyCode::Char('e'), CTRL, Action::LineEnd),
    bind(KeyCode::Char('u'), CTRL, Action::KillLineStart),
    bind(KeyCode::Char('k'), CTRL, Action::KillLineEnd),
    bind(KeyCode::Char('w'), CTRL, Action::DeleteWordBackward),
    bind(KeyCode::Backspace, ALT, Action::DeleteWordBackward),
    bind(KeyCode::Char('d'), ALT, Action::DeleteWordForward),
    bind(KeyCode::Delete, CTRL, Action::DeleteWordForward),
    bind(KeyCode::Char('z'), CTRL, Action::Undo),
    bind(KeyCode::Char('_'), CTRL, Action::Undo),
    // A terminal sends Ctrl+_ as 0x1F, which crossterm reports as Ctrl+7.
    alias(KeyCode::Char('7'), CTRL, Action::Undo),
    bind(KeyCode::Char('y'), CTRL, Action::Yank),
];

/// The action bound to `key`, if any. Shift on a letter with Ctrl is ignored (some
/// terminals report Ctrl+Shift+P for Ctrl+P with caps lock), and so is Shift on `_`.
pub fn classify(key: &KeyEvent) -> Option<Action> {
    let code = match key.code {
        KeyCode::Char(c) if key.modifiers.intersects(CTRL | ALT) => {
            KeyCode::Char(c.to_ascii_lowercase())
        }
        code => code,
    };
    let modifiers = match code {
        KeyCode::Char(_) if key.modifiers.intersects(CTRL | ALT) => key.modifiers - SHIFT,
        _ => key.modifiers,
    };
    BINDINGS
        .iter()
        .find(|b| b.code == code && b.modifiers == modifiers)
        .map(|b| b.action)
}

/// The char an unbound key types, if it types one: no Ctrl or Alt, or both (`AltGr` arrives
/// as Ctrl+Alt on some platforms; `@` is AltGr+Q on German layouts).
pub fn typed_char(key: &KeyEvent) -> Option<char> {
    let KeyCode::Char(c) = key.code else {
        return None;
    };
    let ctrl_alt = CTRL | ALT;
    let plain = !key.modifiers.intersects(ctrl_alt) || key.modifiers.contains(ctrl_alt);
    (plain && !c.is_control()).then_some(c)
}

/// `(keys, help text)` rows for `/help`: one row per action, its keys joined with ` / `, in
/// table order; aliases are left out.
pub fn help_rows() -> Vec<(String, &'static str)> {
    let mut rows: Vec<(Action, String)> = Vec::new();
    for b in BINDINGS.iter().filter(|b| !b.alias) {
        match rows.iter_mut().find(|(action, _)| *action == b.action) {
            Some((_, keys)) => {
                keys.push_str(" / ");
                keys.push_str(&b.label());
            }
            None => rows.push((b.action, b.label())),
        }
    }
    rows.into_iter()
        .map(|(action, keys)| (keys, action.help()))
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
        KeyCode::Left => out.push_str("Left"),
        KeyCode::Right => out.push_str("Right"),
        KeyCode::Home => out.push_str("Home"),
        KeyCode::End => out.push_str("End"),
        KeyCode::Tab => out.push_str("Tab"),
        KeyCode::Esc => out.push_str("Esc"),
        KeyCode::Backspace => out.push_str("Backspace"),
        KeyCode::Delete => out.push_str("Delete"),
        other => out.push_str(&format!("{other:?}")),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn every_binding_classifies_to_its_action() {
        for binding in BINDINGS {
            let key = KeyEvent::new(binding.code, binding.modifiers);
            assert_eq!(classify(&key), Some(binding.action), "{}", binding.label());
            assert_eq!(typed_char(&key), None, "{} types nothing", binding.label());
        }
    }

    #[test]
    fn help_rows_group_keys_per_action() {
        let rows = help_rows();
        let keys: Vec<&str> = rows.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "Enter",
                "Shift+Enter / Ctrl+J / Alt+Enter",
                "Up",
                "Down",
                "Ctrl+P",
                "Ctrl+N",
                "Tab",
                "Esc",
                "Ctrl+C",
                "Ctrl+D",
                "Backspace / Ctrl+H",
                "Delete",
                "Left / Ctrl+B",
                "Right / Ctrl+F",
                "Alt+B / Ctrl+Left / Alt+Left",
                "Alt+F / Ctrl+Right / Alt+Right",
                "Home / Ctrl+A",
                "End / Ctrl+E",
                "Ctrl+U",
                "Ctrl+K",
                "Ctrl+W / Alt+Backspace",
                "Alt+D / Ctrl+Delete",
                "Ctrl+Z / Ctrl+_",
                "Ctrl+Y",
            ]
        );
        let actions = BINDINGS.iter().filter(|b| !b.alias).count();
        assert!(rows.len() < actions, "keys of one action share a row");
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
            (
                KeyEvent::new(KeyCode::Char('_'), CTRL | SHIFT),
                Some(Action::Undo),
            ),
            (KeyEvent::new(KeyCode::Char('7'), CTRL), Some(Action::Undo)),
            (
                KeyEvent::new(KeyCode::Char('B'), ALT | SHIFT),
                Some(Action::WordLeft),
            ),
            (KeyEvent::new(KeyCode::Enter, CTRL | SHIFT), None),
            (KeyEvent::new(KeyCode::Char('q'), CTRL), None),
        ];
        for (key, want) in cases {
            assert_eq!(classify(&key), want, "{key:?}");
        }
    }

    #[test]
    fn typed_chars() {
        let cases = [
            (KeyEvent::new(KeyCode::Char('a'), NONE), Some('a')),
            (KeyEvent::new(KeyCode::Char('A'), SHIFT), Some('A')),
            (KeyEvent::new(KeyCode::Char('@'), CTRL | ALT), Some('@')),
            (KeyEvent::new(KeyCode::Char('q'), CTRL), None),
            (KeyEvent::new(KeyCode::Char('x'), ALT), None),
            (KeyEvent::new(KeyCode::Char('漢'), NONE), Some('漢')),
            (KeyEvent::new(KeyCode::Enter, NONE), None),
        ];
        for (key, want) in cases {
            assert_eq!(typed_char(&key), want, "{key:?}");
        }
    }
}
