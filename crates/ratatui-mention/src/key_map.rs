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
    /// Popup: previous row; composer: like Up.
    PopupPrev,
    /// Popup: next row; composer: like Down.
    PopupNext,
    /// Popup: insert the selected item (or the first one offered); composer: a tab.
    Complete,
    /// Popup: a page up.
    PopupPageUp,
    /// Popup: a page down, fetching more matches near the end.
    PopupPageDown,
    /// Popup: the first row; composer: caret to the line start.
    PopupFirst,
    /// Popup: the last match; composer: caret to the line end.
    PopupLast,
    /// Show or hide the popup's preview.
    TogglePreview,
    /// Close the popup (ignored, so the host may use it, while none is open).
    Escape,
    /// Delete before the caret; right after a finished mention, the whole mention.
    DeleteBackward,
    /// Delete after the caret; right before a finished mention, the whole mention.
    DeleteForward,
    /// One grapheme cluster (or a whole mention) left.
    Left,
    /// One grapheme cluster (or a whole mention) right.
    Right,
    /// To the start of the previous word (a mention is a word).
    WordLeft,
    /// To the end of the next word.
    WordRight,
    /// To the start of the line.
    LineStart,
    /// To the end of the line.
    LineEnd,
    /// Delete to the start of the line (at a line start, join with the line above).
    KillLineStart,
    /// Delete to the end of the line (at a line end, join with the line below).
    KillLineEnd,
    /// Delete the word before the caret.
    DeleteWordBackward,
    /// Delete the word after the caret.
    DeleteWordForward,
    /// Undo the last edit.
    Undo,
    /// Insert the text the last word or line delete removed.
    Yank,
    /// Open the collapsed paste beside the caret for editing (ignored, so the host may use
    /// the key, when there is none).
    ExpandPaste,
}

impl Action {
    /// The default line of help for this action.
    pub fn help(self) -> &'static str {
        match self {
            Action::Submit => "submit (inserts the selected item while one is selected)",
            Action::Newline => "insert a new line",
            Action::Up => "previous item in the popup; else up a row, older input on the first",
            Action::Down => "next item in the popup; else down a row, newer input on the last",
            Action::PopupPrev => "previous item in the popup; else like Up",
            Action::PopupNext => "next item in the popup; else like Down",
            Action::Complete => "insert the selected item (or the first one offered); else a tab",
            Action::PopupPageUp => "a page up in the popup",
            Action::PopupPageDown => "a page down in the popup (fetches more matches)",
            Action::PopupFirst => "first item in the popup; line start in the composer",
            Action::PopupLast => "last item in the popup; line end in the composer",
            Action::TogglePreview => "show or hide the popup's preview",
            Action::Escape => "close the popup",
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
            Action::ExpandPaste => "open the collapsed paste beside the caret for editing",
        }
    }
}

/// One row of the key map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Binding {
    /// The key.
    pub code: KeyCode,
    /// Its modifiers, exactly.
    pub modifiers: KeyModifiers,
    /// What it does.
    pub action: Action,
    /// Another encoding of a key listed on its own row (left out of help).
    pub alias: bool,
}

impl Binding {
    /// A binding of `code` + `modifiers` to `action`.
    pub const fn new(code: KeyCode, modifiers: KeyModifiers, action: Action) -> Self {
        Self {
            code,
            modifiers,
            action,
            alias: false,
        }
    }

    /// Like [`Binding::new`], for a second encoding of a key already listed (help skips it).
    pub const fn alias(code: KeyCode, modifiers: KeyModifiers, action: Action) -> Self {
        Self {
            code,
            modifiers,
            action,
            alias: true,
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

/// The default bindings, in help order: after Codex CLI / Claude Code and a shell
/// (readline): Ctrl+U deletes to the line start, Ctrl+Z undoes.
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
    Binding::new(KeyCode::PageUp, NONE, Action::PopupPageUp),
    Binding::new(KeyCode::PageDown, NONE, Action::PopupPageDown),
    Binding::new(KeyCode::Home, NONE, Action::PopupFirst),
    Binding::new(KeyCode::End, NONE, Action::PopupLast),
    Binding::new(KeyCode::Char('p'), ALT, Action::TogglePreview),
    Binding::new(KeyCode::Esc, NONE, Action::Escape),
    Binding::new(KeyCode::Backspace, NONE, Action::DeleteBackward),
    Binding::new(KeyCode::Char('h'), CTRL, Action::DeleteBackward),
    Binding::new(KeyCode::Delete, NONE, Action::DeleteForward),
    Binding::new(KeyCode::Char('d'), CTRL, Action::DeleteForward),
    Binding::new(KeyCode::Left, NONE, Action::Left),
    Binding::new(KeyCode::Char('b'), CTRL, Action::Left),
    Binding::new(KeyCode::Right, NONE, Action::Right),
    Binding::new(KeyCode::Char('f'), CTRL, Action::Right),
    Binding::new(KeyCode::Char('b'), ALT, Action::WordLeft),
    Binding::new(KeyCode::Left, CTRL, Action::WordLeft),
    Binding::new(KeyCode::Left, ALT, Action::WordLeft),
    Binding::new(KeyCode::Char('f'), ALT, Action::WordRight),
    Binding::new(KeyCode::Right, CTRL, Action::WordRight),
    Binding::new(KeyCode::Right, ALT, Action::WordRight),
    Binding::new(KeyCode::Char('a'), CTRL, Action::LineStart),
    Binding::new(KeyCode::Char('e'), CTRL, Action::LineEnd),
    Binding::new(KeyCode::Char('u'), CTRL, Action::KillLineStart),
    Binding::new(KeyCode::Char('k'), CTRL, Action::KillLineEnd),
    Binding::new(KeyCode::Char('w'), CTRL, Action::DeleteWordBackward),
    Binding::new(KeyCode::Backspace, ALT, Action::DeleteWordBackward),
    Binding::new(KeyCode::Char('d'), ALT, Action::DeleteWordForward),
    Binding::new(KeyCode::Delete, CTRL, Action::DeleteWordForward),
    Binding::new(KeyCode::Char('z'), CTRL, Action::Undo),
    Binding::new(KeyCode::Char('_'), CTRL, Action::Undo),
    // A terminal sends Ctrl+_ as 0x1F, which crossterm reports as Ctrl+7.
    Binding::alias(KeyCode::Char('7'), CTRL, Action::Undo),
    Binding::new(KeyCode::Char('y'), CTRL, Action::Yank),
    Binding::new(KeyCode::Char('g'), CTRL, Action::ExpandPaste),
];

/// The widget's bindings; [`KeyMap::default`] holds the default ones (see the crate README).
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

    /// The action bound to `key`, if any. Shift on a char with Ctrl or Alt is ignored
    /// (some terminals report Ctrl+Shift+P for Ctrl+P with caps lock, or Ctrl+Shift+_).
    pub fn classify(&self, key: &KeyEvent) -> Option<Action> {
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
        self.bindings
            .iter()
            .find(|b| b.code == code && b.modifiers == modifiers)
            .map(|b| b.action)
    }

    /// `(keys, default help text)` rows: one per action, its keys joined with ` / `, in
    /// table order; aliases are left out.
    pub fn help_rows(&self) -> Vec<(String, &'static str)> {
        self.grouped()
            .into_iter()
            .map(|(action, keys)| (keys, action.help()))
            .collect()
    }

    /// `(action, keys)` per action, its keys joined with ` / `, in table order.
    pub fn grouped(&self) -> Vec<(Action, String)> {
        let mut rows: Vec<(Action, String)> = Vec::new();
        for b in self.bindings.iter().filter(|b| !b.alias) {
            match rows.iter_mut().find(|(action, _)| *action == b.action) {
                Some((_, keys)) => {
                    keys.push_str(" / ");
                    keys.push_str(&b.label());
                }
                None => rows.push((b.action, b.label())),
            }
        }
        rows
    }
}

/// The char an unbound key types, if it types one: no Ctrl or Alt, or both on a char that
/// is no ASCII letter or digit (`AltGr` arrives as Ctrl+Alt on some platforms: `@` is
/// AltGr+Q on German layouts, `ą` AltGr+A on Polish ones). Ctrl+Alt on an ASCII letter or
/// digit is a chord, never a char: Alt+Ctrl+U, and Esc read together with the Ctrl+U after
/// it (a terminal sends both as the same bytes), type nothing.
pub fn typed_char(key: &KeyEvent) -> Option<char> {
    let KeyCode::Char(c) = key.code else {
        return None;
    };
    let ctrl_alt = CTRL | ALT;
    let plain = !key.modifiers.intersects(ctrl_alt)
        || (key.modifiers.contains(ctrl_alt) && !c.is_ascii_alphanumeric());
    (plain && !c.is_control()).then_some(c)
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
        KeyCode::Left => out.push_str("Left"),
        KeyCode::Right => out.push_str("Right"),
        KeyCode::Home => out.push_str("Home"),
        KeyCode::End => out.push_str("End"),
        KeyCode::Tab => out.push_str("Tab"),
        KeyCode::Esc => out.push_str("Esc"),
        KeyCode::Backspace => out.push_str("Backspace"),
        KeyCode::Delete => out.push_str("Delete"),
        KeyCode::PageUp => out.push_str("PgUp"),
        KeyCode::PageDown => out.push_str("PgDn"),
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
    fn every_binding_classifies_to_its_action_and_types_nothing() {
        let map = KeyMap::default();
        for binding in map.bindings() {
            let key = KeyEvent::new(binding.code, binding.modifiers);
            assert_eq!(
                map.classify(&key),
                Some(binding.action),
                "{}",
                binding.label()
            );
            assert_eq!(typed_char(&key), None, "{} types nothing", binding.label());
        }
    }

    #[test]
    fn help_rows_group_keys_per_action() {
        let map = KeyMap::default();
        let rows = map.help_rows();
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
                "PgUp",
                "PgDn",
                "Home",
                "End",
                "Alt+P",
                "Esc",
                "Backspace / Ctrl+H",
                "Delete / Ctrl+D",
                "Left / Ctrl+B",
                "Right / Ctrl+F",
                "Alt+B / Ctrl+Left / Alt+Left",
                "Alt+F / Ctrl+Right / Alt+Right",
                "Ctrl+A",
                "Ctrl+E",
                "Ctrl+U",
                "Ctrl+K",
                "Ctrl+W / Alt+Backspace",
                "Alt+D / Ctrl+Delete",
                "Ctrl+Z / Ctrl+_",
                "Ctrl+Y",
                "Ctrl+G",
            ]
        );
        for ((action, _), (_, help)) in map.grouped().iter().zip(&rows) {
            assert_eq!(*help, action.help());
        }
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
            (KeyEvent::new(KeyCode::Char('c'), CTRL), None),
            (KeyEvent::new(KeyCode::Char('q'), CTRL), None),
        ];
        for (key, want) in cases {
            assert_eq!(map.classify(&key), want, "{key:?}");
        }
    }

    #[test]
    fn typed_chars() {
        let cases = [
            (KeyEvent::new(KeyCode::Char('a'), NONE), Some('a')),
            (KeyEvent::new(KeyCode::Char('A'), SHIFT), Some('A')),
            (KeyEvent::new(KeyCode::Char('@'), CTRL | ALT), Some('@')),
            (KeyEvent::new(KeyCode::Char('ą'), CTRL | ALT), Some('ą')),
            (KeyEvent::new(KeyCode::Char('{'), CTRL | ALT), Some('{')),
            // Chords, not AltGr: Alt+Ctrl+U, or Esc and Ctrl+U read in one go.
            (KeyEvent::new(KeyCode::Char('u'), CTRL | ALT), None),
            (KeyEvent::new(KeyCode::Char('A'), CTRL | ALT | SHIFT), None),
            (KeyEvent::new(KeyCode::Char('7'), CTRL | ALT), None),
            (KeyEvent::new(KeyCode::Char('q'), CTRL), None),
            (KeyEvent::new(KeyCode::Char('x'), ALT), None),
            (KeyEvent::new(KeyCode::Char('漢'), NONE), Some('漢')),
            (KeyEvent::new(KeyCode::Enter, NONE), None),
        ];
        for (key, want) in cases {
            assert_eq!(typed_char(&key), want, "{key:?}");
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
