//! Queries of several words (`MentionConfig::with_multi_word_queries`): a space at the end
//! of the token keeps the popup open while the words so far still match something (or
//! their answer is still to come); two spaces, Esc, or a space after an answer with no
//! match close it. Issue 27, minor 10: `@Investgate memry leak` could not be typed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use pretty_assertions::assert_eq;
use ratatui_mention::{
    Mention, MentionConfig, MentionInputState, MentionItem, Outcome, ResultsList,
};

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn row(key: &str, label: &str) -> MentionItem {
    MentionItem::new(key, label, &Mention::new(label, format!("topic:{key}")))
}

fn state() -> MentionInputState {
    MentionInputState::new(
        MentionConfig::default()
            .with_uri_scheme("topic:")
            .with_multi_word_queries(true),
    )
}

/// Types `text`; returns the queries asked, as `(id, text)`.
fn type_str(state: &mut MentionInputState, text: &str) -> Vec<(u64, String)> {
    text.chars()
        .filter_map(|c| match state.handle_key(key(KeyCode::Char(c))) {
            Outcome::Query { id, text, .. } => Some((id, text)),
            _ => None,
        })
        .collect()
}

/// Answers the newest query with `rows`.
fn answer(state: &mut MentionInputState, rows: Vec<MentionItem>) {
    let id = state.results().map(ResultsList::query_id).unwrap();
    let acted = state.set_results(id, rows);
    assert_eq!(acted, [], "no key waited");
}

#[test]
fn a_space_keeps_the_popup_open_while_the_words_match() {
    let mut state = state();
    type_str(&mut state, "see @Investgate");
    answer(&mut state, vec![row("s1", "Investgate memry leak")]);
    assert_eq!(
        type_str(&mut state, " "),
        [],
        "the same words: no new query"
    );
    assert!(state.popup_active());
    let asked = type_str(&mut state, "memry");
    assert_eq!(
        asked.last().map(|(_, q)| q.as_str()),
        Some("Investgate memry"),
        "the words with one space between them"
    );
    answer(&mut state, vec![row("s1", "Investgate memry leak")]);
    type_str(&mut state, " leak");
    answer(&mut state, vec![row("s1", "Investgate memry leak")]);
    assert!(matches!(
        state.handle_key(key(KeyCode::Enter)),
        Outcome::Inserted { .. }
    ));
    assert_eq!(
        state.draft(),
        "see @[Investgate memry leak](topic:s1) ",
        "the whole multi-word token was replaced"
    );
}

#[test]
fn two_spaces_or_no_match_or_esc_close_it() {
    let mut state = state();
    type_str(&mut state, "@alice");
    answer(&mut state, vec![row("a", "alice")]);
    type_str(&mut state, "  ");
    assert!(!state.popup_active(), "two spaces");
    assert_eq!(state.draft(), "@alice  ");
    type_str(&mut state, "hello");
    assert!(!state.popup_active(), "the words after are text");

    let mut state = self::state();
    type_str(&mut state, "@alice what");
    answer(&mut state, Vec::new());
    type_str(&mut state, " ");
    assert!(!state.popup_active(), "nothing matched `alice what`");
    assert_eq!(
        state.handle_key(key(KeyCode::Enter)),
        Outcome::Submit("@alice what ".into())
    );

    let mut state = self::state();
    type_str(&mut state, "@alice");
    answer(&mut state, vec![row("a", "alice")]);
    type_str(&mut state, " b");
    assert!(state.popup_active());
    state.handle_key(key(KeyCode::Esc));
    type_str(&mut state, "ob");
    assert!(!state.popup_active(), "closed for that token");
}

#[test]
fn a_space_before_the_answer_keeps_it_open() {
    let mut state = state();
    // `@Helm is broken` typed in one burst: no answer came in between.
    let asked = type_str(&mut state, "@Helm is broken");
    assert_eq!(
        asked.last().map(|(_, q)| q.as_str()),
        Some("Helm is broken")
    );
    assert!(state.popup_active());
    // Enter waits for that answer; none matches: the draft goes as typed.
    let Outcome::Waiting { id, .. } = state.handle_key(key(KeyCode::Enter)) else {
        panic!("waits");
    };
    assert_eq!(
        state.set_results(id, Vec::new()),
        [Outcome::Submit("@Helm is broken".into())]
    );
}

#[test]
fn off_by_default_a_space_ends_the_token() {
    let mut state = MentionInputState::new(MentionConfig::default());
    type_str(&mut state, "@alice");
    answer(&mut state, vec![row("a", "alice")]);
    type_str(&mut state, " ");
    assert!(!state.popup_active());
}

/// Issue 25: `@"my notes.md"` — a space inside a quote still open keeps the popup open
/// even when nothing matched the words so far (a file section answers offered rows only).
#[test]
fn a_space_inside_an_open_quote_keeps_the_popup_open() {
    let mut state = state();
    type_str(&mut state, "@\"my");
    answer(&mut state, Vec::new());
    type_str(&mut state, " ");
    assert!(state.popup_active(), "inside the quote");
    let asked = type_str(&mut state, "no");
    assert_eq!(asked.last().map(|(_, q)| q.as_str()), Some("\"my no"));
    // Once the quote is closed a space ends the token as usual (no match).
    answer(&mut state, Vec::new());
    type_str(&mut state, "tes\"");
    answer(&mut state, Vec::new());
    type_str(&mut state, " ");
    assert!(!state.popup_active());
}
