//! Snapshot and key-sequence tests of both pickers at scale: counts, paging and End,
//! fetching more, closest matches, the preview (wide, below, hidden) with its size estimate,
//! and the `/resume` picker filtered, empty and paged.

use std::sync::Arc;

use chrono::FixedOffset;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use pretty_assertions::assert_eq;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;

use super::bottom_pane::{ActivePopup, BottomPane, InputResult};
use super::session_picker::{PickerOutcome, SessionPicker};
use super::session_preview::PreviewRequest;
use super::session_rows::DisplayZone;
use dsh_reference::estimate::PreviewTurn;
use dsh_reference::{Candidate, CandidatePage, ClosestMatch, ReferenceEstimate, TurnRole};

/// 2026-11-20 09:30 UTC.
const CREATED: i64 = 1_795_167_000_000;

fn utc() -> DisplayZone {
    DisplayZone::Fixed(FixedOffset::east_opt(0).unwrap())
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn type_str(pane: &mut BottomPane, text: &str) -> InputResult {
    let mut last = InputResult::None;
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

fn query_id(pane: &BottomPane) -> u64 {
    match pane.active_popup() {
        ActivePopup::Mention(popup) => popup.query_id(),
        ActivePopup::None => panic!("popup closed"),
    }
}

fn selected_id(pane: &BottomPane) -> Option<String> {
    match pane.active_popup() {
        ActivePopup::Mention(p) => p.selected().map(|r| r.session_id.clone()),
        ActivePopup::None => None,
    }
}

/// Draws the pane at the bottom of a `width`×`height` screen, as the app lays it out.
fn screen(pane: &mut BottomPane, width: u16, height: u16) -> String {
    pane.set_screen(width, height);
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|frame| {
            let area = frame.area();
            let h = pane.desired_height(area.width).min(area.height);
            let pane_area = Rect {
                y: area.bottom() - h,
                height: h,
                ..area
            };
            pane.render(pane_area, frame.buffer_mut());
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
        }
    })
}

/// A pane with `@` typed and a listing of 106 sessions answered with the first 50.
fn pane_with_106() -> BottomPane {
    let mut pane = BottomPane::with_zone(10, utc());
    type_str(&mut pane, "@");
    pane.set_candidates(query_id(&pane), Ok(numbered(0, 50, 106)));
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
    let mut asked = Vec::new();
    for _ in 0..6 {
        if let InputResult::QueryCandidates {
            query_id,
            query,
            limit,
        } = pane.handle_key(key(KeyCode::PageDown))
        {
            asked.push((query_id, query, limit));
        }
    }
    assert_eq!(
        asked,
        [(first + 1, String::new(), Some(100))],
        "once, near the end"
    );
    assert_eq!(selected_id(&pane).as_deref(), Some("s-0048"));
    // A stale answer to the first query changes nothing; the fetch keeps the selection.
    pane.set_candidates(first, Ok(numbered(0, 3, 3)));
    assert_eq!(selected_id(&pane).as_deref(), Some("s-0048"));
    pane.set_candidates(first + 1, Ok(numbered(0, 100, 106)));
    assert_eq!(selected_id(&pane).as_deref(), Some("s-0048"));
    // End asks for everything and lands on the oldest match once it arrives.
    let end = pane.handle_key(key(KeyCode::End));
    assert_eq!(
        end,
        InputResult::QueryCandidates {
            query_id: first + 2,
            query: String::new(),
            limit: Some(106),
        }
    );
    pane.set_candidates(first + 2, Ok(numbered(0, 106, 106)));
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
    let fetch = pane.handle_key(key(KeyCode::PageDown));
    let InputResult::QueryCandidates {
        query_id: first, ..
    } = fetch
    else {
        panic!("{fetch:?}");
    };
    let end = pane.handle_key(key(KeyCode::End));
    let InputResult::QueryCandidates {
        query_id: all,
        limit,
        ..
    } = end
    else {
        panic!("{end:?}");
    };
    assert_eq!(limit, Some(106));
    pane.set_candidates(first, Ok(numbered(0, 100, 106)));
    assert_eq!(
        selected_id(&pane).as_deref(),
        Some("s-0049"),
        "replaced fetch: stale"
    );
    pane.set_candidates(all, Ok(numbered(0, 106, 106)));
    assert_eq!(selected_id(&pane).as_deref(), Some("s-0105"));
}

#[test]
fn a_new_query_drops_a_fetch_in_flight() {
    let mut pane = pane_with_106();
    screen(&mut pane, 70, 22);
    let end = pane.handle_key(key(KeyCode::End));
    let InputResult::QueryCandidates { query_id: more, .. } = end else {
        panic!("{end:?}");
    };
    let typed = type_str(&mut pane, "x");
    let InputResult::QueryCandidates {
        query_id: newer, ..
    } = typed
    else {
        panic!("{typed:?}");
    };
    pane.set_candidates(more, Ok(numbered(0, 106, 106)));
    assert_eq!(
        selected_id(&pane).as_deref(),
        Some("s-0049"),
        "fetch answer stale"
    );
    pane.set_candidates(newer, Ok(numbered(7, 8, 1)));
    assert_eq!(selected_id(&pane).as_deref(), Some("s-0007"));
}

/// `@kfk`: nothing matches exactly, the closest matches are offered.
fn pane_with_closest() -> BottomPane {
    let mut pane = BottomPane::with_zone(10, utc());
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
    pane.set_candidates(
        query_id(&pane),
        Ok(CandidatePage {
            rows: Vec::new(),
            total: 0,
            closest,
        }),
    );
    pane
}

#[test]
fn closest_matches_are_offered_but_not_selected() {
    let mut pane = pane_with_closest();
    assert_eq!(selected_id(&pane), None);
    insta::assert_snapshot!(screen(&mut pane, 70, 12));
    // Enter sends the draft as typed; Down moves onto the offered rows.
    pane.handle_key(key(KeyCode::Down));
    assert_eq!(selected_id(&pane).as_deref(), Some("s-0001"));
    insta::assert_snapshot!("closest_match_selected", screen(&mut pane, 70, 12));
    pane.handle_key(key(KeyCode::Tab));
    assert_eq!(
        pane.draft(),
        "ask @[Kafka vs Redis for the event bus](dsh-session:InMtMDAwMSI) "
    );
}

#[test]
fn tab_inserts_the_first_closest_match_when_nothing_is_selected() {
    let mut pane = pane_with_closest();
    assert_eq!(pane.handle_key(key(KeyCode::Tab)), InputResult::Redraw);
    assert!(pane.draft().starts_with("ask @[Kafka vs Redis"));
    let mut pane = pane_with_closest();
    assert_eq!(
        pane.handle_key(key(KeyCode::Enter)),
        InputResult::Submit("ask @kfk".into())
    );
}

#[test]
fn mentioned_rows_are_marked() {
    let mut pane = BottomPane::with_zone(10, utc());
    pane.handle_paste("@[Session 1](dsh-session:InMtMDAwMSI) and ");
    type_str(&mut pane, "@");
    pane.set_candidates(query_id(&pane), Ok(numbered(0, 3, 3)));
    let shown = screen(&mut pane, 60, 14);
    assert!(shown.contains("Session 1 ✓"), "{shown}");
    assert!(!shown.contains("Session 0 ✓"), "{shown}");
    insta::assert_snapshot!(shown);
}

/// A popup with the preview's estimate answered.
fn previewed(truncated: bool, width: u16, height: u16) -> (BottomPane, Option<PreviewRequest>) {
    let mut pane = BottomPane::with_zone(10, utc());
    pane.set_screen(width, height);
    type_str(&mut pane, "@kafka");
    pane.set_candidates(
        query_id(&pane),
        Ok(CandidatePage {
            rows: vec![
                candidate(1, "Kafka vs Redis for the event bus"),
                candidate(2, "Kafka consumer lag"),
            ],
            total: 2,
            closest: Vec::new(),
        }),
    );
    let request = pane.want_preview();
    if let Some(request) = &request {
        pane.set_preview(request, Ok(estimate(truncated)));
    }
    (pane, request)
}

#[test]
fn preview_wide_on_the_right_with_the_estimate() {
    let (mut pane, request) = previewed(true, 120, 20);
    assert_eq!(
        request,
        Some(PreviewRequest {
            session_id: "s-0001".into(),
            label: "Kafka vs Redis for the event bus".into(),
        })
    );
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
    let (mut pane, request) = previewed(true, 80, 32);
    assert!(request.is_some());
    insta::assert_snapshot!("preview_narrow_below", screen(&mut pane, 80, 32));
}

#[test]
fn preview_hidden_when_small_or_toggled_off() {
    let (mut pane, request) = previewed(true, 60, 15);
    assert_eq!(request, None, "nothing computed for a hidden preview");
    let shown = screen(&mut pane, 60, 15);
    assert!(!shown.contains("preview"), "{shown}");
    insta::assert_snapshot!("preview_hidden_60x15", shown);
    let (mut pane, _) = previewed(true, 120, 20);
    pane.handle_key(KeyEvent::new(KeyCode::Char('p'), KeyModifiers::ALT));
    assert!(!screen(&mut pane, 120, 20).contains(" preview "));
}

#[test]
fn preview_follows_the_selection_and_drops_stale_estimates() {
    let (mut pane, first) = previewed(true, 120, 20);
    pane.handle_key(key(KeyCode::Down));
    let second = pane.want_preview().unwrap();
    assert_eq!(second.session_id, "s-0002");
    pane.set_preview(&first.unwrap(), Ok(estimate(false)));
    let shown = screen(&mut pane, 120, 20);
    assert!(shown.contains("estimating the reference size"), "{shown}");
    pane.set_preview(&second, Ok(estimate(false)));
    assert!(screen(&mut pane, 120, 20).contains("12 of 12 messages kept"));
}

// ----- /resume --------------------------------------------------------------------------

fn picker_screen(picker: &SessionPicker, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|frame| picker.render(frame.area(), frame.buffer_mut()))
        .unwrap();
    format!("{}", terminal.backend())
}

fn picker_key(picker: &mut SessionPicker, next: &mut u64, code: KeyCode) -> PickerOutcome {
    picker.handle_key(&key(code), next)
}

#[test]
fn resume_types_to_filter_and_pages() {
    let mut next = 1;
    let mut picker = SessionPicker::loading("s-0003", 1, utc());
    assert!(picker_screen(&picker, 70, 16).contains("loading sessions…"));
    picker.set_page(1, Ok(numbered(0, 50, 2001)));
    let shown = picker_screen(&picker, 70, 16);
    assert!(shown.contains(" 1/2001 "), "{shown}");
    assert!(shown.contains("Session 3 (open)"), "{shown}");
    insta::assert_snapshot!("resume_first_page", shown);
    let outcomes: Vec<PickerOutcome> = "kaf"
        .chars()
        .map(|c| picker_key(&mut picker, &mut next, KeyCode::Char(c)))
        .collect();
    assert_eq!(
        outcomes.last(),
        Some(&PickerOutcome::Query {
            query_id: 4,
            query: "kaf".into(),
            limit: None
        })
    );
    assert!(!picker.set_page(3, Ok(numbered(0, 1, 1))), "stale");
    picker.set_page(
        4,
        Ok(CandidatePage {
            rows: vec![candidate(9, "Kafka vs Redis for the event bus")],
            total: 1,
            closest: Vec::new(),
        }),
    );
    insta::assert_snapshot!("resume_filtered", picker_screen(&picker, 70, 16));
    assert_eq!(
        picker_key(&mut picker, &mut next, KeyCode::Enter),
        PickerOutcome::Open("s-0009".into())
    );
    // Backspace widens the filter again; End fetches every match.
    let back = picker_key(&mut picker, &mut next, KeyCode::Backspace);
    assert_eq!(
        back,
        PickerOutcome::Query {
            query_id: 5,
            query: "ka".into(),
            limit: None
        }
    );
    picker.set_page(5, Ok(numbered(0, 50, 300)));
    let end = picker_key(&mut picker, &mut next, KeyCode::End);
    assert_eq!(
        end,
        PickerOutcome::Query {
            query_id: 6,
            query: "ka".into(),
            limit: Some(300)
        }
    );
    picker.set_page(6, Ok(numbered(0, 300, 300)));
    let shown = picker_screen(&picker, 70, 16);
    assert!(shown.contains(" 300/300 "), "{shown}");
    insta::assert_snapshot!("resume_paged_to_the_end", shown);
    assert_eq!(
        picker_key(&mut picker, &mut next, KeyCode::Esc),
        PickerOutcome::Close
    );
}

#[test]
fn resume_empty_states() {
    let mut next = 1;
    let mut picker = SessionPicker::loading("s-0000", 1, utc());
    picker.set_page(1, Ok(CandidatePage::default()));
    assert!(picker_screen(&picker, 60, 8).contains("no sessions yet"));
    picker_key(&mut picker, &mut next, KeyCode::Char('z'));
    picker.set_page(2, Ok(CandidatePage::default()));
    let shown = picker_screen(&picker, 60, 8);
    assert!(shown.contains("no matching sessions"), "{shown}");
    insta::assert_snapshot!("resume_no_match", shown);
    assert_eq!(
        picker_key(&mut picker, &mut next, KeyCode::Enter),
        PickerOutcome::Continue,
        "nothing to open"
    );
}

#[test]
fn resume_preview_on_a_wide_screen() {
    let mut picker = SessionPicker::loading("s-0000", 1, utc());
    picker.set_page(1, Ok(numbered(0, 5, 5)));
    let request = picker.want_preview(120, 20).unwrap();
    picker.set_preview(&request, Ok(estimate(false)));
    assert_eq!(picker.want_preview(120, 20), None);
    assert_eq!(
        picker.want_preview(60, 10),
        None,
        "hidden: nothing to compute"
    );
    insta::assert_snapshot!("resume_preview_wide", picker_screen(&picker, 120, 20));
}
