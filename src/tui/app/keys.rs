//! App-level key bindings (transcript scrolling and expansion, interrupt, quit, cancel), one
//! table read by the key handler and by `/help`. Composer keys live in the widget's key map;
//! [`composer_help`] words them for this app.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui_mention::{Action, KeyMap};

/// What an app-level key does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppAction {
    PageUp,
    PageDown,
    ScrollToBottom,
    ToggleSnapshots,
    ToggleReasoning,
    ToggleExpand,
    /// Mention the newest reference card's session again, with its newer messages.
    ReinsertReference,
    /// Ctrl+C: close the popup, else cancel what runs, else clear the draft, else quit
    /// (pressed twice).
    Interrupt,
    /// Ctrl+D on an empty draft (on a draft the widget deletes forward).
    QuitIfEmpty,
    /// Esc with no popup open (with one, the widget closes it).
    Escape,
    /// Turn mouse capture off (the terminal selects text) and on again.
    ToggleMouse,
    /// Alt+.: pin or unpin the session selected in the `@` popup or `/resume`.
    TogglePin,
    /// Alt+E: on a conversation hit in the `@` popup, mention only the exchange that
    /// matched.
    InsertExcerpt,
    /// Alt+C: open the newest citation of a reply (again: the one before) in the cited
    /// session, read-only, at the message.
    OpenCitation,
}

impl AppAction {
    /// One line of help for `/help`.
    pub fn help(self) -> &'static str {
        match self {
            AppAction::PageUp => {
                "a page up in @ popup and /resume, else scroll the transcript up (mouse wheel too)"
            }
            AppAction::PageDown => {
                "a page down in @ popup and /resume (fetches more), else scroll the transcript"
            }
            AppAction::ScrollToBottom => "jump to the newest output",
            AppAction::ToggleSnapshots => {
                "reference cards: show the conversations, then the exact bytes, then hide"
            }
            AppAction::ToggleReasoning => "show or hide model reasoning",
            AppAction::ToggleExpand => {
                "open the collapsed paste at the caret, else expand or collapse tool results and long messages"
            }
            AppAction::ReinsertReference => {
                "mention the newest referenced session again (a stale one first), fresh"
            }
            AppAction::Interrupt => {
                "close @ popup, else cancel the reply, else clear the draft (Up restores), else quit (twice)"
            }
            AppAction::QuitIfEmpty => "quit when the draft is empty, else delete forwards",
            AppAction::Escape => {
                "close @ popup (Esc+key read as one Alt chord: both), else cancel preparing or the reply"
            }
            AppAction::ToggleMouse => {
                "mouse capture off (the terminal selects text) and on; while on, Shift+drag selects"
            }
            AppAction::TogglePin => {
                "pin or unpin the selected session in @ popup and /resume (pinned first in its group)"
            }
            AppAction::InsertExcerpt => {
                "on an \"in conversations\" row of @ popup (any tool's): insert an excerpt (the exchange that matched)"
            }
            AppAction::OpenCitation => {
                "open the newest ⟦cited⟧ message of a reply in its session (again: the one before)"
            }
        }
    }
}

/// `(key, label, modifiers, action)` rows, in `/help` order.
pub const APP_BINDINGS: &[(KeyCode, KeyModifiers, &str, AppAction)] = &[
    (KeyCode::Esc, KeyModifiers::NONE, "Esc", AppAction::Escape),
    (
        KeyCode::Char('c'),
        KeyModifiers::CONTROL,
        "Ctrl+C",
        AppAction::Interrupt,
    ),
    (
        KeyCode::Char('d'),
        KeyModifiers::CONTROL,
        "Ctrl+D",
        AppAction::QuitIfEmpty,
    ),
    (
        KeyCode::PageUp,
        KeyModifiers::NONE,
        "PgUp",
        AppAction::PageUp,
    ),
    (
        KeyCode::PageDown,
        KeyModifiers::NONE,
        "PgDn",
        AppAction::PageDown,
    ),
    (
        KeyCode::End,
        KeyModifiers::CONTROL,
        "Ctrl+End",
        AppAction::ScrollToBottom,
    ),
    (
        KeyCode::Char('o'),
        KeyModifiers::CONTROL,
        "Ctrl+O",
        AppAction::ToggleSnapshots,
    ),
    (
        KeyCode::Char('t'),
        KeyModifiers::CONTROL,
        "Ctrl+T",
        AppAction::ToggleReasoning,
    ),
    (
        KeyCode::Char('g'),
        KeyModifiers::CONTROL,
        "Ctrl+G",
        AppAction::ToggleExpand,
    ),
    (
        KeyCode::Char('m'),
        KeyModifiers::ALT,
        "Alt+M",
        AppAction::ToggleMouse,
    ),
    (
        KeyCode::Char('.'),
        KeyModifiers::ALT,
        "Alt+.",
        AppAction::TogglePin,
    ),
    (
        KeyCode::Char('e'),
        KeyModifiers::ALT,
        "Alt+E",
        AppAction::InsertExcerpt,
    ),
    (
        KeyCode::Char('r'),
        KeyModifiers::CONTROL,
        "Ctrl+R",
        AppAction::ReinsertReference,
    ),
    (
        KeyCode::Char('c'),
        KeyModifiers::ALT,
        "Alt+C",
        AppAction::OpenCitation,
    ),
];

/// The app action bound to `key`, if any.
pub fn classify_app_key(key: &KeyEvent) -> Option<AppAction> {
    let code = match key.code {
        KeyCode::Char(c) => KeyCode::Char(c.to_ascii_lowercase()),
        other => other,
    };
    let modifiers = key.modifiers - KeyModifiers::SHIFT;
    APP_BINDINGS
        .iter()
        .find(|(c, m, _, _)| *c == code && *m == modifiers)
        .map(|(_, _, _, action)| *action)
}

/// The composer's `/help` line for a widget action, in this app's words.
pub fn composer_help(action: Action) -> &'static str {
    match action {
        Action::Submit => {
            "send the message (while @ shows rows: insert the highlighted one; no row: send as typed)"
        }
        Action::Newline => "insert a new line",
        Action::Up => "previous session in @ popup; else up a line, older input at the first",
        Action::Down => "next session in @ popup; else down a line, newer input at the last",
        Action::PopupPrev => "previous session in @ popup; else like Up",
        Action::PopupNext => "next session in @ popup; else like Down",
        Action::Complete => "insert the highlighted row of @ popup; else a tab",
        Action::PopupFirst => "first session in @ popup and /resume; line start in the composer",
        Action::PopupLast => {
            "last session (active longest ago) in @ popup and /resume; line end in the composer"
        }
        Action::TogglePreview => "show or hide the preview in @ popup and /resume",
        Action::Escape => "close @ popup",
        Action::DeleteBackward => "delete backwards; a mention goes as a whole",
        Action::DeleteForward => "delete forwards; a mention goes as a whole",
        _ => action.help(),
    }
}

/// Every key for `/help`: the widget's keys one row per action (its keys joined with
/// ` / `, in table order), except that a key the app also binds gets its own row there with
/// the app's help, which tells both meanings; then the app's other keys.
pub fn help_rows(widget: &KeyMap) -> Vec<(String, &'static str)> {
    let app_row = |code: KeyCode, modifiers: KeyModifiers| {
        APP_BINDINGS
            .iter()
            .position(|(c, m, _, _)| *c == code && *m == modifiers)
    };
    // (the widget action a row groups, keys, help)
    let mut rows: Vec<(Option<Action>, String, &'static str)> = Vec::new();
    let mut shown = Vec::new();
    for binding in widget.bindings().iter().filter(|b| !b.alias) {
        if let Some(index) = app_row(binding.code, binding.modifiers) {
            shown.push(index);
            let (_, _, label, action) = APP_BINDINGS[index];
            rows.push((None, label.to_string(), action.help()));
            continue;
        }
        match rows.iter_mut().find(|(a, _, _)| *a == Some(binding.action)) {
            Some((_, keys, _)) => {
                keys.push_str(" / ");
                keys.push_str(&binding.label());
            }
            None => rows.push((
                Some(binding.action),
                binding.label(),
                composer_help(binding.action),
            )),
        }
    }
    for (index, (_, _, label, action)) in APP_BINDINGS.iter().enumerate() {
        if !shown.contains(&index) {
            rows.push((None, (*label).to_string(), action.help()));
        }
    }
    rows.into_iter()
        .map(|(_, keys, help)| (keys, help))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_lists_every_key_once_with_both_meanings() {
        let rows = help_rows(&KeyMap::default());
        let keys: Vec<&str> = rows.iter().flat_map(|(l, _)| l.split(" / ")).collect();
        let mut unique = keys.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), keys.len(), "{keys:?}");
        let listed = KeyMap::default()
            .bindings()
            .iter()
            .filter(|b| !b.alias)
            .count();
        assert_eq!(keys.len(), listed + APP_BINDINGS.len() - 5, "{keys:?}");
        let help = |key: &str| rows.iter().find(|(l, _)| l == key).map(|(_, h)| *h);
        assert_eq!(help("Esc"), Some(AppAction::Escape.help()));
        assert_eq!(
            help("Ctrl+D"),
            Some("quit when the draft is empty, else delete forwards")
        );
        assert_eq!(
            help("Delete"),
            Some("delete forwards; a mention goes as a whole")
        );
        assert_eq!(help("Ctrl+Z / Ctrl+_"), Some("undo"));
        assert_eq!(
            help("Tab"),
            Some("insert the highlighted row of @ popup; else a tab")
        );
        assert_eq!(help("PgUp"), Some(AppAction::PageUp.help()));
    }

    #[test]
    fn every_documented_binding_classifies_to_its_action() {
        for (code, modifiers, label, action) in APP_BINDINGS {
            let key = KeyEvent::new(*code, *modifiers);
            assert_eq!(classify_app_key(&key), Some(*action), "{label}");
        }
        assert_eq!(
            classify_app_key(&KeyEvent::new(KeyCode::Char('o'), KeyModifiers::NONE)),
            None
        );
    }
}
