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
    /// Ctrl+C: cancel what runs, else clear the draft, else quit.
    Interrupt,
    /// Ctrl+D on an empty draft (on a draft the widget deletes forward).
    QuitIfEmpty,
    /// Esc with no popup open (with one, the widget closes it).
    Escape,
}

impl AppAction {
    /// One line of help for `/help`.
    pub fn help(self) -> &'static str {
        match self {
            AppAction::PageUp => "scroll the transcript up a page (mouse wheel too)",
            AppAction::PageDown => "scroll the transcript down a page",
            AppAction::ScrollToBottom => "jump to the newest output",
            AppAction::ToggleSnapshots => "show or hide the exact snapshot under reference cards",
            AppAction::ToggleReasoning => "show or hide model reasoning",
            AppAction::Interrupt => {
                "cancel the reply, else clear the draft (Up restores), else quit"
            }
            AppAction::QuitIfEmpty => "quit when the draft is empty, else delete forwards",
            AppAction::Escape => "close @ popup, else cancel preparing, else cancel the reply",
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
        Action::Submit => "send the message (inserts the selected session while @ is open)",
        Action::Newline => "insert a new line",
        Action::Up => "previous session in @ popup; older input at the first line",
        Action::Down => "next session in @ popup; newer input at the last line",
        Action::PopupPrev => "previous session in @ popup",
        Action::PopupNext => "next session in @ popup",
        Action::Complete => "insert the selected session",
        Action::Escape => "close @ popup",
        Action::DeleteBackward => "delete backwards; a mention goes as a whole",
        Action::DeleteForward => "delete forwards; a mention goes as a whole",
        _ => action.help(),
    }
}

/// Every key for `/help`, one row per key: the widget's in its table order (a key the app
/// also binds shows the app's row there, which tells both meanings), then the app's others.
pub fn help_rows(widget: &KeyMap) -> Vec<(String, &'static str)> {
    let app_row = |code: KeyCode, modifiers: KeyModifiers| {
        APP_BINDINGS
            .iter()
            .position(|(c, m, _, _)| *c == code && *m == modifiers)
    };
    let mut rows = Vec::new();
    let mut shown = Vec::new();
    for binding in widget.bindings() {
        match app_row(binding.code, binding.modifiers) {
            Some(index) => {
                shown.push(index);
                let (_, _, label, action) = APP_BINDINGS[index];
                rows.push((label.to_string(), action.help()));
            }
            None => rows.push((binding.label(), composer_help(binding.action))),
        }
    }
    for (index, (_, _, label, action)) in APP_BINDINGS.iter().enumerate() {
        if !shown.contains(&index) {
            rows.push(((*label).to_string(), action.help()));
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_lists_every_key_once_with_both_meanings() {
        let rows = help_rows(&KeyMap::default());
        let labels: Vec<&str> = rows.iter().map(|(l, _)| l.as_str()).collect();
        let mut unique = labels.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), labels.len(), "{labels:?}");
        assert_eq!(
            labels.len(),
            KeyMap::default().bindings().len() + APP_BINDINGS.len() - 2
        );
        let help = |key: &str| rows.iter().find(|(l, _)| l == key).map(|(_, h)| *h);
        assert_eq!(
            help("Esc"),
            Some("close @ popup, else cancel preparing, else cancel the reply")
        );
        assert_eq!(
            help("Ctrl+D"),
            Some("quit when the draft is empty, else delete forwards")
        );
        assert_eq!(help("Tab"), Some("insert the selected session"));
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
