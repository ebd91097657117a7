//! The app's side of the `@` widget: sessions as popup items (label, `id · cwd · created`
//! detail, the canonical mention to insert) and the widget configured with the app's
//! placeholder and labels (docs/composer.md, the @ popup).

use chrono::{FixedOffset, Local, TimeZone};
use dsh_reference::{Candidate, format_mention};
use ratatui_mention::untrusted::visible_controls_line;
use ratatui_mention::{
    DetailPart, Keep, MentionConfig, MentionInputState, MentionItem, PopupLabels,
};

/// Time zone for creation times: the user's local zone, or a fixed offset (tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DisplayZone {
    Local,
    Fixed(FixedOffset),
}

/// The widget as the app shows it, remembering up to `history_size` submissions.
pub fn composer_config(history_size: usize) -> MentionConfig {
    MentionConfig::default()
        .with_history_size(history_size)
        .with_uri_scheme(dsh_reference::uri::SCHEME)
        .with_placeholder("Ask anything · @ references a session")
        .with_labels(PopupLabels {
            title: " @ sessions ".to_string(),
            type_to_filter: "type to filter sessions".to_string(),
            searching: "searching…".to_string(),
            failed: "could not list sessions".to_string(),
            no_match: "no matching sessions".to_string(),
        })
}

/// A fresh widget state configured for the app.
pub fn composer_state(history_size: usize) -> MentionInputState {
    MentionInputState::new(composer_config(history_size))
}

/// `candidate` as a popup row: `Session · <label>` over `<id> · <cwd> · <created>`; a pick
/// inserts its canonical mention. Another tool's (read-only) session, named by its id's
/// namespace, shows its badge: `Session [claude] · <label>`.
pub fn session_item(candidate: &Candidate, zone: DisplayZone) -> MentionItem {
    // The label is an untrusted title: its control characters go into the draft as
    // visible `\xNN`, never as raw bytes hidden inside the user's own message.
    let label = visible_controls_line(&candidate.label);
    let mention = format_mention(&candidate.session_id, Some(&label));
    let kind = match dsh_foreign::Origin::of_id(&candidate.session_id).badge() {
        Some(badge) => format!("Session [{badge}]"),
        None => "Session".to_owned(),
    };
    MentionItem::new(&candidate.session_id, &candidate.label, mention)
        .with_kind(kind)
        .with_detail(vec![
            DetailPart::new(&candidate.session_id, Keep::Start),
            DetailPart::new(candidate.cwd.as_deref().unwrap_or("(no cwd)"), Keep::End),
            DetailPart::new(format_created(candidate.created_at, zone), Keep::Whole),
        ])
}

/// `created_at` (ms since the epoch) as `%Y-%m-%d %H:%M` in `zone`.
pub fn format_created(created_at: i64, zone: DisplayZone) -> String {
    const FORMAT: &str = "%Y-%m-%d %H:%M";
    let formatted = match zone {
        DisplayZone::Local => Local
            .timestamp_millis_opt(created_at)
            .single()
            .map(|t| t.format(FORMAT).to_string()),
        DisplayZone::Fixed(offset) => offset
            .timestamp_millis_opt(created_at)
            .single()
            .map(|t| t.format(FORMAT).to_string()),
    };
    formatted.unwrap_or_else(|| "unknown time".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use pretty_assertions::assert_eq;
    use ratatui_mention::{ActivePopup, Outcome};

    fn candidate(id: &str, label: &str, cwd: Option<&str>) -> Candidate {
        Candidate {
            session_id: id.to_string(),
            label: label.to_string(),
            cwd: cwd.map(str::to_string),
            created_at: 0,
        }
    }

    #[test]
    fn times_use_the_given_zone() {
        let plus_two = DisplayZone::Fixed(FixedOffset::east_opt(2 * 3600).unwrap());
        assert_eq!(format_created(0, plus_two), "1970-01-01 02:00");
        assert_eq!(format_created(i64::MAX, plus_two), "unknown time");
    }

    #[test]
    fn a_session_becomes_a_row_inserting_its_mention() {
        let utc = DisplayZone::Fixed(FixedOffset::east_opt(0).unwrap());
        let item = session_item(&candidate("s1", "a]b", None), utc);
        let want = MentionItem::new("s1", "a]b", "@[a\\]b](dsh-session:InMxIg)")
            .with_kind("Session")
            .with_detail(vec![
                DetailPart::new("s1", Keep::Start),
                DetailPart::new("(no cwd)", Keep::End),
                DetailPart::new("1970-01-01 00:00", Keep::Whole),
            ]);
        assert_eq!(item, want);
    }

    #[test]
    fn foreign_sessions_carry_their_badge() {
        let utc = DisplayZone::Fixed(FixedOffset::east_opt(0).unwrap());
        let kinds: Vec<String> = [
            candidate("claude-code:u1", "Fix", None),
            candidate("codex:r1", "Kafka", None),
            candidate("s-1", "Plain", None),
        ]
        .iter()
        .map(|c| session_item(c, utc).kind().to_owned())
        .collect();
        assert_eq!(kinds, ["Session [claude]", "Session [codex]", "Session"]);
    }

    #[test]
    fn inserted_label_shows_control_characters_visibly() {
        let utc = DisplayZone::Fixed(FixedOffset::east_opt(0).unwrap());
        let mut state = composer_state(10);
        for c in "@x".chars() {
            state.handle_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        }
        let id = match state.active_popup() {
            ActivePopup::Mention(p) => p.query_id(),
            _ => unreachable!(),
        };
        let row = candidate("s1", "\u{1b}[31mred\u{7}", Some("/work"));
        state.set_results(id, vec![session_item(&row, utc)]);
        let outcome = state.handle_key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE));
        assert!(matches!(outcome, Outcome::Inserted { .. }), "{outcome:?}");
        assert_eq!(state.draft(), r"@[\\x1B[31mred\\x07](dsh-session:InMxIg) ");
        assert!(
            !state
                .draft()
                .chars()
                .any(ratatui_mention::untrusted::is_control)
        );
    }
}
