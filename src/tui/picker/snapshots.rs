//! Snapshot and key-sequence tests of both pickers at scale: counts, paging and End,
//! fetching more, closest matches, the preview (wide, below, hidden) with its size estimate,
//! and the `/resume` picker filtered, empty and paged.
#![allow(
    clippy::cast_possible_wrap,
    clippy::similar_names,
    clippy::needless_pass_by_value
)] // test code: small known values; `pane`/`page` read well

use std::sync::Arc;

use chrono::FixedOffset;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use pretty_assertions::assert_eq;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::ResumePicker;
use crate::tui::composer::listed_page::{ListedPage, RowUsage};
use crate::tui::composer::session_items::{
    DisplayZone, all_dsh, composer_look, composer_state, popup_labels, results_page,
};
use crate::tui::preview::item_preview;
use crate::tui::search::conversation_hits::{ConversationHit, popup_rows};
use dsh_reference::estimate::PreviewTurn;
use dsh_reference::{
    Candidate, CandidatePage, ClosestMatch, ReferenceEstimate, SessionDetails, TurnRole,
};
use ratatui_mention::{
    ItemPreview, KeyMap, MentionInputState, Outcome, PickerOutcome, ResultsList,
};

/// 2026-11-20 09:30 UTC.
const CREATED: i64 = 1_795_167_000_000;

fn utc() -> DisplayZone {
    DisplayZone::Fixed(FixedOffset::east_opt(0).unwrap())
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn type_str(pane: &mut MentionInputState, text: &str) -> Outcome {
    let mut last = Outcome::Consumed;
    for c in text.chars() {
        last = pane.handle_key(key(KeyCode::Char(c)));
    }
    last
}

fn candidate(i: usize, label: &str) -> Candidate {
    Candidate {
        session_id: format!("s-{i:04}"),
        label: label.to_string(),
        cwd: (i % 3 != 1).then(|| format!("/home/ana/project-{}", i % 3)),
        created_at: CREATED - i as i64 * 3_600_000,
    }
}

/// Rows `from..to` of a listing of `total` sessions titled `Session N`.
fn numbered(from: usize, to: usize, total: usize) -> CandidatePage {
    CandidatePage {
        rows: (from..to)
            .map(|i| candidate(i, &format!("Session {i}")))
            .collect(),
        total,
        closest: Vec::new(),
    }
}

/// `page` as the listing answers it two hours after [`CREATED`]: session `s-000N` last
/// active N×10 minutes after its creation with N+2 messages (`s-0002` without activity, a
/// foreign `s-0005` uncounted), the sessions of project 0 recorded on branch `main`,
/// `s-0004` pinned and `s-0003` used twice.
fn with_details(page: CandidatePage) -> ListedPage {
    let details = page
        .rows
        .iter()
        .chain(page.closest.iter().map(|c| &c.candidate))
        .map(|c| {
            let n: i64 = c.session_id.trim_start_matches("s-").parse().unwrap_or(0);
            let details = SessionDetails {
                last_active_ms: (n != 2).then_some(c.created_at + n * 600_000),
                messages: (n != 5).then(|| u64::try_from(n).unwrap_or(0) + 2),
            };
            (c.session_id.clone(), details)
        })
        .collect();
    let branches = page
        .rows
        .iter()
        .chain(page.closest.iter().map(|c| &c.candidate))
        .filter(|c| c.cwd.as_deref() == Some("/home/ana/project-0"))
        .map(|c| (c.session_id.clone(), "main".to_owned()))
        .collect();
    ListedPage {
        page,
        details,
        branches,
        listed_at_ms: CREATED + 2 * 3_600_000,
        redact_labels: true,
        usage: RowUsage {
            pinned: ["s-0004".to_owned()].into(),
            uses: [("s-0003".to_owned(), 2)].into(),
        },
        ..ListedPage::default()
    }
}

/// Answers query `id` as the app does (what matched the popup's query, marks from the
/// current draft).
fn answer(pane: &mut MentionInputState, id: u64, page: CandidatePage) {
    let query = pane
        .results()
        .map(|r| r.query().to_owned())
        .unwrap_or_default();
    let page = results_page(&with_details(page), &query, &pane.draft(), &all_dsh);
    let _ = pane.set_page(id, page);
}

fn query_id(pane: &MentionInputState) -> u64 {
    pane.results()
        .map(ResultsList::query_id)
        .expect("popup open")
}

fn selected_id(pane: &MentionInputState) -> Option<String> {
    pane.results()
        .and_then(ResultsList::selected)
        .map(|r| r.key().to_string())
}

/// `(id, text, limit)` of a query or fetch outcome.
fn asked(outcome: &Outcome) -> Option<(u64, String, Option<usize>)> {
    match outcome {
        Outcome::Query { id, text, .. } => Some((*id, text.clone(), None)),
        Outcome::More {
            id, text, limit, ..
        } => Some((*id, text.clone(), Some(*limit))),
        _ => None,
    }
}

/// Draws the widget at the bottom of a `width`×`height` screen as the app looks it, the
/// preview placed as the app places it on such a screen (below from 30 screen rows).
fn screen(pane: &mut MentionInputState, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    let labels = popup_labels();
    terminal
        .draw(|frame| {
            let look = composer_look(&labels, true).preview_below_min_height(30);
            frame.render_stateful_widget(look, frame.area(), pane);
        })
        .unwrap();
    format!("{}", terminal.backend())
}

fn estimate(truncated: bool) -> Arc<ReferenceEstimate> {
    let recent = vec![
        PreviewTurn {
            role: TurnRole::User,
            text: "Should the event bus use Kafka or Redis streams?".into(),
        },
        PreviewTurn {
            role: TurnRole::Assistant,
            text: "Kafka: replay and retention matter more than latency here.\nRedis \u{1b}[31mstreams stay for the cache.".into(),
        },
    ];
    Arc::new(if truncated {
        ReferenceEstimate {
            total_messages: 400,
            kept_messages: 188,
            bytes: 65_433,
            budget: 65_536,
            truncated: true,
            compacted: false,
            recent,
            redacted_secrets: 0,
        }
    } else {
        ReferenceEstimate {
            total_messages: 12,
            kept_messages: 12,
            bytes: 3_277,
            budget: 65_536,
            truncated: false,
            compacted: false,
            recent,
            redacted_secrets: 0,
        }
    })
}

/// The preview the app builds from an estimate.
fn preview_of(key: &str, estimate: &Arc<ReferenceEstimate>) -> ItemPreview {
    item_preview(key, Some(Ok(estimate)))
}

/// A widget with `@` typed and a listing of 106 sessions answered with the first 50.
fn pane_with_106() -> MentionInputState {
    let mut pane = composer_state(10);
    type_str(&mut pane, "@");
    let id = query_id(&pane);
    answer(&mut pane, id, numbered(0, 50, 106));
    pane
}

#[test]
fn popup_counts_every_match_not_the_fetched_rows() {
    let mut pane = pane_with_106();
    pane.handle_key(key(KeyCode::Down));
    pane.handle_key(key(KeyCode::Down));
    let shown = screen(&mut pane, 70, 22);
    assert!(shown.contains(" 3/106 "), "{shown}");
    insta::assert_snapshot!(shown);
}

#[test]
fn paging_and_end_fetch_more_rows_of_the_same_query() {
    let mut pane = pane_with_106();
    screen(&mut pane, 70, 22); // a page is eight rows
    let first = query_id(&pane);
    let mut fetches = Vec::new();
    for _ in 0..6 {
        if let Some(q) = asked(&pane.handle_key(key(KeyCode::PageDown))) {
            fetches.push(q);
        }
    }
    assert_eq!(
        fetches,
        [(first + 1, String::new(), Some(100))],
        "once, near the end"
    );
    assert_eq!(selected_id(&pane).as_deref(), Some("s-0048"));
    // A stale answer to the first query changes nothing; the fetch keeps the selection.
    answer(&mut pane, first, numbered(0, 3, 3));
    assert_eq!(selected_id(&pane).as_deref(), Some("s-0048"));
    answer(&mut pane, first + 1, numbered(0, 100, 106));
    assert_eq!(selected_id(&pane).as_deref(), Some("s-0048"));
    // End asks for everything and lands on the oldest match once it arrives.
    let end = asked(&pane.handle_key(key(KeyCode::End)));
    assert_eq!(end, Some((first + 2, String::new(), Some(106))));
    answer(&mut pane, first + 2, numbered(0, 106, 106));
    assert_eq!(selected_id(&pane).as_deref(), Some("s-0105"));
    let shown = screen(&mut pane, 70, 22);
    assert!(shown.contains(" 106/106 "), "{shown}");
    insta::assert_snapshot!("popup_paged_to_the_end", shown);
    pane.handle_key(key(KeyCode::Home));
    assert_eq!(selected_id(&pane).as_deref(), Some("s-0000"));
    pane.handle_key(key(KeyCode::PageDown));
    pane.handle_key(key(KeyCode::PageUp));
    assert_eq!(selected_id(&pane).as_deref(), Some("s-0000"));
}

#[test]
fn end_during_a_fetch_replaces_it() {
    let mut pane = pane_with_106();
    screen(&mut pane, 70, 22);
    for _ in 0..5 {
        pane.handle_key(key(KeyCode::PageDown));
    }
    let (fetch, _, _) = asked(&pane.handle_key(key(KeyCode::PageDown))).unwrap();
    let (all, _, limit) = asked(&pane.handle_key(key(KeyCode::End))).unwrap();
    assert_eq!(limit, Some(106));
    answer(&mut pane, fetch, numbered(0, 100, 106));
    assert_eq!(
        selected_id(&pane).as_deref(),
        Some("s-0049"),
        "replaced fetch: stale"
    );
    answer(&mut pane, all, numbered(0, 106, 106));
    assert_eq!(selected_id(&pane).as_deref(), Some("s-0105"));
}

#[test]
fn a_new_query_drops_a_fetch_in_flight() {
    let mut pane = pane_with_106();
    screen(&mut pane, 70, 22);
    let (more, _, _) = asked(&pane.handle_key(key(KeyCode::End))).unwrap();
    let (newer, text, _) = asked(&type_str(&mut pane, "x")).unwrap();
    assert_eq!(text, "x");
    answer(&mut pane, more, numbered(0, 106, 106));
    assert_eq!(
        selected_id(&pane).as_deref(),
        Some("s-0049"),
        "fetch answer stale"
    );
    answer(&mut pane, newer, numbered(7, 8, 1));
    assert_eq!(selected_id(&pane).as_deref(), Some("s-0007"));
}

/// `@kfk`: nothing matches exactly, the closest matches are offered.
fn pane_with_closest() -> MentionInputState {
    let mut pane = composer_state(10);
    type_str(&mut pane, "ask @kfk");
    let closest = [
        (1, "Kafka vs Redis for the event bus", 120),
        (5, "Keep a fork of the kit", 40),
    ]
    .into_iter()
    .map(|(i, label, score)| ClosestMatch {
        candidate: candidate(i, label),
        score,
    })
    .collect();
    let id = query_id(&pane);
    answer(
        &mut pane,
        id,
        CandidatePage {
            rows: Vec::new(),
            total: 0,
            closest,
        },
    );
    pane
}

/// Issue 32 item 1: closest matches alone are rows on show like any: the first is
/// highlighted, Enter and Tab insert it.
#[test]
fn closest_matches_are_highlighted_and_enter_inserts_them() {
    let mut pane = pane_with_closest();
    assert_eq!(selected_id(&pane).as_deref(), Some("s-0001"));
    insta::assert_snapshot!(screen(&mut pane, 70, 12));
    pane.handle_key(key(KeyCode::Down));
    assert_eq!(selected_id(&pane).as_deref(), Some("s-0005"));
    insta::assert_snapshot!("closest_match_selected", screen(&mut pane, 70, 12));
    pane.handle_key(key(KeyCode::Tab));
    assert_eq!(
        pane.draft(),
        "ask @[Keep a fork of the kit](dsh-session:InMtMDAwNSI) "
    );
    let mut pane = pane_with_closest();
    assert!(matches!(
        pane.handle_key(key(KeyCode::Enter)),
        Outcome::Inserted { .. }
    ));
    assert!(pane.draft().starts_with("ask @[Kafka vs Redis"));
}

#[test]
fn mentioned_rows_are_marked() {
    let mut pane = composer_state(10);
    pane.handle_paste("@[Session 1](dsh-session:InMtMDAwMSI) and ");
    type_str(&mut pane, "@");
    let id = query_id(&pane);
    answer(&mut pane, id, numbered(0, 3, 3));
    let shown = screen(&mut pane, 60, 14);
    assert!(shown.contains("Session 1 ✓"), "{shown}");
    assert!(!shown.contains("Session 0 ✓"), "{shown}");
    insta::assert_snapshot!(shown);
}

/// A popup with the preview's estimate answered.
fn previewed(truncated: bool, width: u16, height: u16) -> (MentionInputState, Option<String>) {
    let mut pane = composer_state(10);
    // The screen it is drawn on decides where the preview goes.
    screen(&mut pane, width, height);
    type_str(&mut pane, "@kafka");
    let id = query_id(&pane);
    answer(
        &mut pane,
        id,
        CandidatePage {
            rows: vec![
                candidate(1, "Kafka vs Redis for the event bus"),
                candidate(2, "Kafka consumer lag"),
            ],
            total: 2,
            closest: Vec::new(),
        },
    );
    let asked = pane.want_preview();
    if let Some(key) = &asked {
        pane.set_preview(preview_of(key, &estimate(truncated)));
    }
    (pane, asked)
}

#[test]
fn preview_wide_on_the_right_with_the_estimate() {
    let (mut pane, asked) = previewed(true, 120, 20);
    assert_eq!(asked.as_deref(), Some("s-0001"));
    assert_eq!(pane.want_preview(), None, "asked once");
    let shown = screen(&mut pane, 120, 20);
    assert!(
        shown.contains("188 of 400 messages kept · 63.9 of 64 KiB"),
        "{shown}"
    );
    assert!(shown.contains("truncated"), "{shown}");
    insta::assert_snapshot!("preview_wide_truncated", shown);
}

#[test]
fn preview_not_truncated() {
    let (mut pane, _) = previewed(false, 120, 20);
    let shown = screen(&mut pane, 120, 20);
    assert!(
        shown.contains("12 of 12 messages kept · 3.2 of 64 KiB"),
        "{shown}"
    );
    assert!(shown.contains("not truncated"), "{shown}");
    insta::assert_snapshot!("preview_wide_not_truncated", shown);
}

#[test]
fn preview_below_when_narrow_and_tall() {
    let (mut pane, asked) = previewed(true, 80, 32);
    assert!(asked.is_some());
    insta::assert_snapshot!("preview_narrow_below", screen(&mut pane, 80, 32));
}

#[test]
fn preview_hidden_when_small_or_toggled_off() {
    let (mut pane, asked) = previewed(true, 60, 15);
    assert_eq!(asked, None, "nothing computed for a hidden preview");
    let shown = screen(&mut pane, 60, 15);
    assert!(!shown.contains("preview"), "{shown}");
    insta::assert_snapshot!("preview_hidden_60x15", shown);
    let (mut pane, _) = previewed(true, 120, 20);
    pane.handle_key(KeyEvent::new(KeyCode::Char('p'), KeyModifiers::ALT));
    assert!(!screen(&mut pane, 120, 20).contains(" preview "));
}

#[test]
fn preview_follows_the_selection_and_drops_stale_ones() {
    let (mut pane, first) = previewed(true, 120, 20);
    pane.handle_key(key(KeyCode::Down));
    let second = pane.want_preview().unwrap();
    assert_eq!(second, "s-0002");
    pane.set_preview(preview_of(&first.unwrap(), &estimate(false)));
    let shown = screen(&mut pane, 120, 20);
    assert!(shown.contains("estimating the reference size"), "{shown}");
    pane.set_preview(preview_of(&second, &estimate(false)));
    assert!(screen(&mut pane, 120, 20).contains("12 of 12 messages kept"));
}

// ----- /resume --------------------------------------------------------------------------

fn picker_screen(picker: &mut ResumePicker, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|frame| {
            frame.render_stateful_widget(ResumePicker::view(), frame.area(), &mut picker.picker);
        })
        .unwrap();
    format!("{}", terminal.backend())
}

fn picker_key(picker: &mut ResumePicker, code: KeyCode) -> PickerOutcome {
    picker.picker.handle_key(key(code))
}

/// A picker over every session with `current` open, its first query asked.
fn resume(current: &str) -> ResumePicker {
    let (picker, first) = ResumePicker::open((current.into(), None), utc(), KeyMap::default());
    assert!(
        matches!(first, PickerOutcome::Query { id: 1, .. }),
        "{first:?}"
    );
    picker
}

/// Answers filter `id` (`query` as typed) as the app does.
fn listed(
    picker: &mut ResumePicker,
    id: u64,
    query: &str,
    page: CandidatePage,
) -> Vec<PickerOutcome> {
    picker.show(id, query, Ok(with_details(page)), &all_dsh)
}

#[test]
fn resume_types_to_filter_and_pages() {
    let mut picker = resume("s-0003");
    assert!(picker_screen(&mut picker, 70, 16).contains("loading sessions…"));
    listed(&mut picker, 1, "", numbered(0, 50, 2001));
    let shown = picker_screen(&mut picker, 70, 16);
    assert!(shown.contains(" 1/2001 "), "{shown}");
    assert!(shown.contains("Session 3 (open)"), "{shown}");
    insta::assert_snapshot!("resume_first_page", shown);
    let outcomes: Vec<PickerOutcome> = "kaf"
        .chars()
        .map(|c| picker_key(&mut picker, KeyCode::Char(c)))
        .collect();
    assert_eq!(
        outcomes.last(),
        Some(&PickerOutcome::Query {
            id: 4,
            text: "kaf".into(),
        })
    );
    listed(&mut picker, 3, "ka", numbered(0, 1, 1));
    assert!(picker.picker.results().in_flight(), "stale: not the answer");
    listed(
        &mut picker,
        4,
        "kaf",
        CandidatePage {
            rows: vec![candidate(9, "Kafka vs Redis for the event bus")],
            total: 1,
            closest: Vec::new(),
        },
    );
    insta::assert_snapshot!("resume_filtered", picker_screen(&mut picker, 70, 16));
    assert_eq!(
        picker_key(&mut picker, KeyCode::Enter),
        PickerOutcome::Picked("s-0009".into())
    );
    // Backspace widens the filter again; End fetches every match.
    let back = picker_key(&mut picker, KeyCode::Backspace);
    assert_eq!(
        back,
        PickerOutcome::Query {
            id: 5,
            text: "ka".into(),
        }
    );
    listed(&mut picker, 5, "ka", numbered(0, 50, 300));
    let end = picker_key(&mut picker, KeyCode::End);
    assert_eq!(
        end,
        PickerOutcome::More {
            id: 6,
            text: "ka".into(),
            limit: 300
        }
    );
    listed(&mut picker, 6, "ka", numbered(0, 300, 300));
    let shown = picker_screen(&mut picker, 70, 16);
    assert!(shown.contains(" 300/300 "), "{shown}");
    insta::assert_snapshot!("resume_paged_to_the_end", shown);
    assert_eq!(picker_key(&mut picker, KeyCode::Esc), PickerOutcome::Closed);
}

#[test]
fn resume_empty_states() {
    let mut picker = resume("s-0000");
    listed(&mut picker, 1, "", CandidatePage::default());
    assert!(picker_screen(&mut picker, 60, 8).contains("no sessions yet"));
    picker_key(&mut picker, KeyCode::Char('z'));
    listed(&mut picker, 2, "z", CandidatePage::default());
    let shown = picker_screen(&mut picker, 60, 8);
    assert!(shown.contains("no matching sessions"), "{shown}");
    insta::assert_snapshot!("resume_no_match", shown);
    assert_eq!(
        picker_key(&mut picker, KeyCode::Enter),
        PickerOutcome::Consumed,
        "nothing to open"
    );
}

#[test]
fn resume_preview_on_a_wide_screen() {
    let mut picker = resume("s-0000");
    listed(&mut picker, 1, "", numbered(0, 5, 5));
    picker_screen(&mut picker, 120, 20);
    let key = picker.picker.want_preview().unwrap();
    picker
        .picker
        .set_preview(preview_of(&key, &estimate(false)));
    assert_eq!(picker.picker.want_preview(), None);
    picker_screen(&mut picker, 60, 10);
    picker.picker.handle_key(crossterm::event::KeyEvent::new(
        KeyCode::Down,
        KeyModifiers::NONE,
    ));
    assert_eq!(
        picker.picker.want_preview(),
        None,
        "hidden: nothing to compute"
    );
    picker.picker.handle_key(crossterm::event::KeyEvent::new(
        KeyCode::Up,
        KeyModifiers::NONE,
    ));
    insta::assert_snapshot!("resume_preview_wide", picker_screen(&mut picker, 120, 20));
}

// ----- in conversations -----------------------------------------------------------------

/// A conversation hit on `word` inside `text`.
fn conversation_hit(i: usize, label: &str, text: &str, word: &str) -> ConversationHit {
    let start = text.find(word).unwrap();
    ConversationHit {
        candidate: candidate(i, label),
        snippet: Some(ratatui_mention::ItemSnippet {
            lead: "assistant: ".into(),
            text: text.into(),
            highlights: std::iter::once(start..start + word.len()).collect(),
        }),
        origin: dsh_foreign::Origin::Dsh,
        seq: Some(1),
    }
}

#[test]
fn resume_lists_conversation_hits_with_snippets_and_opens_them() {
    let mut picker = resume("s-0000");
    listed(&mut picker, 1, "", numbered(0, 5, 5));
    for c in "zebra".chars() {
        picker_key(&mut picker, KeyCode::Char(c));
    }
    let id = picker.picker.results().query_id();
    // An older filter's hits arrive late: dropped.
    assert_eq!(
        picker.set_hits(
            id - 1,
            "in conversations",
            &[conversation_hit(7, "Old", "zebr", "zebr")]
        ),
        []
    );
    assert!(
        picker
            .picker
            .results()
            .late_section()
            .is_none_or(|h| h.rows.is_empty()),
        "an older filter's hits are dropped"
    );
    assert_eq!(
        picker.set_hits(
            id,
            "in conversations",
            &[conversation_hit(
                4,
                "Planning offsite",
                "the \u{1b}[31mzebra crossing by the office is closed",
                "zebra"
            )]
        ),
        []
    );
    listed(&mut picker, id, "zebra", CandidatePage::default());
    let shown = picker_screen(&mut picker, 70, 12);
    assert!(
        shown.contains("assistant: the \\x1B[31mzebra crossing"),
        "{shown}"
    );
    insta::assert_snapshot!("resume_conversation_hits", shown);
    // The only row is highlighted: Enter opens it (issue 32 item 1).
    assert_eq!(
        picker_key(&mut picker, KeyCode::Enter),
        PickerOutcome::Picked("s-0004".into())
    );
}

#[test]
fn resume_conversation_section_while_the_index_builds() {
    let mut picker = resume("s-0000");
    listed(&mut picker, 1, "", numbered(0, 5, 5));
    picker_key(&mut picker, KeyCode::Char('q'));
    let id = picker.picker.results().query_id();
    listed(&mut picker, id, "q", CandidatePage::default());
    let _ = picker.set_hits(id, "in conversations · index building 3 400 / 10 000", &[]);
    insta::assert_snapshot!("resume_index_building", picker_screen(&mut picker, 70, 8));
    picker
        .picker
        .set_late_title("in conversations · index building 9 000 / 10 000");
    assert!(picker_screen(&mut picker, 70, 8).contains("9 000 / 10 000"));
}

#[test]
fn popup_conversation_hits_through_the_app_rows() {
    let mut pane = composer_state(10);
    type_str(&mut pane, "@zebra");
    let id = query_id(&pane);
    answer(&mut pane, id, CandidatePage::default());
    let hits = [conversation_hit(
        4,
        "Planning offsite",
        "the zebra crossing by the office is closed",
        "zebra",
    )];
    let _ = pane.set_late_section(
        id,
        ratatui_mention::Section {
            title: "in conversations".into(),
            rows: popup_rows(&hits, &pane.draft(), utc(), true),
        },
    );
    insta::assert_snapshot!("popup_conversation_hits_app", screen(&mut pane, 70, 10));
    // Tab inserts the highlighted row's canonical mention.
    pane.handle_key(key(KeyCode::Tab));
    assert_eq!(
        pane.draft(),
        format!(
            "{} ",
            dsh_reference::format_mention("s-0004", Some("Planning offsite"))
        )
    );
}

/// Issue 27, minor 14: sessions of one title were told apart by nothing — their ids were
/// cut to the same `s-20261127-202319-…`. Ids are cut in the middle now: their ends show.
#[test]
fn rows_of_one_title_show_where_their_ids_differ() {
    let mut pane = composer_state(10);
    type_str(&mut pane, "@");
    let same = |id: &str| Candidate {
        session_id: id.to_owned(),
        label: "Fix the flaky upload test".to_owned(),
        cwd: Some("/home/ana/src/uploader-service".to_owned()),
        created_at: CREATED,
    };
    let page = CandidatePage {
        rows: vec![
            same("s-20261127-202319-ab12"),
            same("s-20261127-202319-cd34"),
        ],
        total: 2,
        closest: Vec::new(),
    };
    let id = query_id(&pane);
    answer(&mut pane, id, page);
    // The list beside the preview at 110 columns is 55 wide.
    let shown = screen(&mut pane, 110, 14);
    assert!(shown.contains("ab12 · "), "{shown}");
    assert!(shown.contains("cd34 · "), "{shown}");
    let shown = screen(&mut pane, 50, 14);
    assert!(
        shown.contains("ab12 · ") && shown.contains("cd34 · "),
        "{shown}"
    );
}
