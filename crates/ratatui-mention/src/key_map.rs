//! The widget's key bindings (key → action → help text), configuration with a default: the
//! state classifies keys through it and a host's help screen can render it, so help cannot
//! drift from behaviour. Keys not in the map are plain edits or, when the widget has no use
//! for them, [`crate::Outcome::Ignored`] for the host.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::fmt::Write as _;

/// What a bound key means to the widget; context (popup open, caret row, draft) decides the
/// exact effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Action {
    /// Insert the selected item while the popup is open, else submit a non-blank draft.
    Submit,
    /// Insert a line break.
    Newline,
    /// Popup: previous row; composer: caret up, older history on the first row.
    Up,
    /// Popup: next row; composer: caret down, newer history on the last row.
    Down,
    /// Popup: previous row; composer: caret up.
    PopupPrev,
    /// Popup: next row; composer: caret down.
    PopupNext,
    /// Popup: insert the selected item.
    Complete,
    /// Close the popup (ignored, so the host may use it, while none is open).
    Escape,
    /// Delete before the caret; right after a finished mention, the whole mention.
    DeleteBackward,
    /// Delete after the caret; right before a finished mention, the whole mention.
    DeleteForward,
}

impl Action {
    /// The default line of help for this action.
    pub fn help(self) -> &'static str {
        match self {
            Action::Submit => "submit (inserts the selected item while the popup is open)",
            Action::Newline => "insert a new line",
            Action::Up => "previous item in the popup; older input on the first row",
            Action::Down => "next item in the popup; newer input on the last row",
            Action::PopupPrev => "previous item in the popup",
            Action::PopupNext => "next item in the popup",
            Action::Complete => "insert the selected item",
            Action::Escape => "close the popup",
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
    /// A binding of `code` + `modifiers` to `action`.
    pub const fn new(code: KeyCode, modifiers: KeyModifiers, action: Action) -> Self {
        Self {
            code,
            modifiers,
            action,
        }
    }

    /// The key as a help screen shows it, e.g. `Shift+Enter`.
    pub fn label(&self) -> String {
        key_label(self.code, self.modifiers)
    }
}

const NONE: KeyModifiers = KeyModifiers::NONE;
const CTRL: KeyModifiers = KeyModifiers::CONTROL;
const SHIFT: KeyModifiers = KeyModifiers::SHIFT;
const ALT: KeyModifiers = KeyModifiers::ALT;

/// The default bindings, in help order.
pub const DEFAULT_BINDINGS: &[Binding] = &[
    Binding::new(KeyCode::Enter, NONE, Action::Submit),
    Binding::new(KeyCode::Enter, SHIFT, Action::Newline),
    Binding::new(KeyCode::Char('j'), CTRL, Action::Newline),
    Binding::new(KeyCode::Enter, ALT, Action::Newline),
    Binding::new(KeyCode::Up, NONE, Action::Up),
    Binding::new(KeyCode::Down, NONE, Action::Down),
    Binding::new(KeyCode::Char('p'), CTRL, Action::PopupPrev),
    Binding::new(KeyCode::Char('n'), CTRL, Action::PopupNext),
    Binding::new(KeyCode::Tab, NONE, Action::Complete),
    Binding::new(KeyCode::Esc, NONE, Action::Escape),
    Binding::new(KeyCode::Backspace, NONE, Action::DeleteBackward),
    Binding::new(KeyCode::Char('h'), CTRL, Action::DeleteBackward),
    Binding::new(KeyCode::Delete, NONE, Action::DeleteForward),
    Binding::new(KeyCode::Char('d'), CTRL, Action::DeleteForward),
];

/// The widget's bindings; [`KeyMap::default`] holds [`DEFAULT_BINDINGS`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyMap {
    bindings: Vec<Binding>,
}

impl Default for KeyMap {
    fn default() -> Self {
        Self::new(DEFAULT_BINDINGS.to_vec())
    }
}

impl KeyMap {
    /// A key map of exactly `bindings` (the first binding of a key wins).
    pub fn new(bindings: Vec<Binding>) -> Self {
        Self { bindings }
    }

    /// This map without any binding of `code` + `modifiers` (a host keeping the key).
    #[must_use]
    pub fn without(mut self, code: KeyCode, modifiers: KeyModifiers) -> Self {
        self.bindings
            .retain(|b| !(b.code == code && b.modifiers == modifiers));
        self
    }

    /// This map with `binding` added in front (so it wins over an older one of its key).
    #[must_use]
    pub fn with(mut self, binding: Binding) -> Self {
        self.bindings.insert(0, binding);
        self
    }

    /// Every binding, in help order.
    pub fn bindings(&self) -> &[Binding] {
        &self.bindings
    }

    /// The action bound to `key`, if any. Shift on a letter with Ctrl is ignored (some
    /// terminals report Ctrl+Shift+P for Ctrl+P with caps lock).
    pub fn classify(&self, key: &KeyEvent) -> Option<Action> {
        let code = match key.code {
            KeyCode::Char(c) if key.modifiers.contains(CTRL) => {
                KeyCode::Char(c.to_ascii_lowercase())
            }
            code => code,
        };
        let modifiers = match code {
            KeyCode::Char(_) if key.modifiers.contains(CTRL) => key.modifiers - SHIFT,
            _ => key.modifiers,
        };
        self.bindings
            .iter()
            .find(|b| b.code == code && b.modifiers == modifiers)
            .map(|b| b.action)
    }

    /// `(key label, default help text)` rows, in table order.
    pub fn help_rows(&self) -> Vec<(String, &'static str)> {
        self.bindings
            .iter()
            .map(|b| (b.label(), b.action.help()))
            .collect()
    }
}

/// `code` + `modifiers` as a help screen shows them, e.g. `Ctrl+J`.
pub fn key_label(code: KeyCode, modifiers: KeyModifiers) -> String {
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
        let map = KeyMap::default();
        for (binding, (label, help)) in map.bindings().iter().zip(map.help_rows()) {
            let key = KeyEvent::new(binding.code, binding.modifiers);
            assert_eq!(map.classify(&key), Some(binding.action), "{label}");
            assert_eq!(help, binding.action.help());
        }
    }

    #[test]
    fn labels_read_like_keys() {
        let labels: Vec<String> = KeyMap::default()
            .help_rows()
            .into_iter()
            .map(|(l, _)| l)
            .collect();
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
                "Backspace",
                "Ctrl+H",
                "Delete",
                "Ctrl+D",
            ]
        );
    }

    #[test]
    fn unbound_keys_and_variants() {
        let map = KeyMap::default();
        let cases = [
            (KeyEvent::new(KeyCode::Char('a'), NONE), None),
            (KeyEvent::new(KeyCode::Char('P'), SHIFT), None),
            (
                KeyEvent::new(KeyCode::Char('P'), CTRL | SHIFT),
                Some(Action::PopupPrev),
            ),
            (KeyEvent::new(KeyCode::Enter, CTRL | SHIFT), None),
            (KeyEvent::new(KeyCode::Left, NONE), None),
            (KeyEvent::new(KeyCode::Char('c'), CTRL), None),
        ];
        for (key, want) in cases {
            assert_eq!(map.classify(&key), want, "{key:?}");
        }
    }

    #[test]
    fn hosts_rebind_and_unbind() {
        let map = KeyMap::default()
            .without(KeyCode::Tab, NONE)
            .with(Binding::new(KeyCode::Char(' '), CTRL, Action::Complete))
            .with(Binding::new(KeyCode::Enter, NONE, Action::Newline));
        let key = |code, modifiers| map.classify(&KeyEvent::new(code, modifiers));
        assert_eq!(key(KeyCode::Tab, NONE), None);
        assert_eq!(key(KeyCode::Char(' '), CTRL), Some(Action::Complete));
        assert_eq!(
            key(KeyCode::Enter, NONE),
            Some(Action::Newline),
            "newest wins"
        );
    }
}
