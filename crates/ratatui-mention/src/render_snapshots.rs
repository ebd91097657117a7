//! Snapshot tests of the widget over ratatui's `TestBackend`: every user-visible state of the
//! composer and the `@` popup, configured as the dsh-refs app does, reviewed as `.snap` files.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use pretty_assertions::assert_eq;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::Style;
use ratatui::style::{Color, Modifier};
use ratatui::widgets::{Block, BorderType, StatefulWidget};

use crate::{
    DetailPart, Keep, Mention, MentionConfig, MentionInput, MentionInputState, MentionItem,
    MentionStyles, Outcome, PopupLabels, ResultsList,
};

/// The dsh-refs app's configuration (the snapshots predate the widget crate).
fn app_config() -> MentionConfig {
    MentionConfig::default()
        .with_history_size(10)
        .with_uri_scheme("user:")
}

/// The app's labels.
fn app_labels() -> PopupLabels {
    PopupLabels {
        title: " @ sessions ".into(),
        command_title: " / commands ".into(),
        type_to_filter: "type to filter sessions".into(),
        searching: "searching…".into(),
        failed: "could not list sessions".into(),
        no_match: "no matching sessions".into(),
        nothing_yet: "no matching sessions".into(),
        ..PopupLabels::default()
    }
}

/// The widget as the app draws it: a rounded dim border, its placeholder and labels (the
/// preview is left to its own tests).
fn input() -> MentionInput<'static> {
    MentionInput::new()
        .block(
            Block::bordered()
                .border_type(BorderType::Rounded)
                .border_style(Style::new().fg(Color::DarkGray)),
        )
        .placeholder("Ask anything · @ references a session")
        .labels(app_labels())
        .preview_below_min_height(u16::MAX)
}

fn pane() -> MentionInputState {
    MentionInputState::new(app_config())
}

fn mention_style() -> ratatui::style::Style {
    MentionStyles::default().mention
}

/// A row as the app builds it for a session: `id · cwd · created`.
fn session(id: &str, label: &str, cwd: Option<&str>, created: &str) -> MentionItem {
    MentionItem::new(
        id,
        label,
        &Mention::new(label, format!("user:{}", uri_body(id))),
    )
    .with_kind("Session ·")
    .with_detail(vec![
        DetailPart::new(id, Keep::Start),
        DetailPart::new(cwd.unwrap_or("(no cwd)"), Keep::End),
        DetailPart::new(created, Keep::Whole),
    ])
}

/// The URI body dsh-refs writes for `id`: base64url (no padding) of the JSON string.
fn uri_body(id: &str) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let json = format!("\"{id}\"");
    let mut out = String::new();
    for chunk in json.as_bytes().chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
        }
    }
    out
}

fn type_str(pane: &mut MentionInputState, text: &str) -> Outcome {
    let mut last = Outcome::Ignored;
    for c in text.chars() {
        last = pane.handle_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
    }
    last
}

fn query_id(pane: &MentionInputState) -> u64 {
    pane.results()
        .map(ResultsList::query_id)
        .expect("popup open")
}

/// Rows `s-00`, `s-01`, … created an hour apart from 2026-11-20 09:30; every third has no cwd.
fn rows(labels: &[&str]) -> Vec<MentionItem> {
    labels
        .iter()
        .enumerate()
        .map(|(i, label)| {
            let cwd = (i % 3 != 1).then(|| format!("/home/ana/project-{}", i % 3));
            let created = format!("2026-11-20 {:02}:30", 9 + i);
            session(&format!("s-{i:02}"), label, cwd.as_deref(), &created)
        })
        .collect()
}

/// Draws the pane at the bottom of a `width`×`height` screen, as the app lays it out.
fn draw(
    pane: &mut MentionInputState,
    width: u16,
    height: u16,
) -> (Terminal<TestBackend>, Option<Position>) {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    let mut caret = None;
    terminal
        .draw(|frame| {
            frame.render_stateful_widget(input(), frame.area(), pane);
            caret = pane.cursor_position();
            if let Some(p) = caret {
                frame.set_cursor_position(p);
            }
        })
        .unwrap();
    (terminal, caret)
}

fn screen(pane: &mut MentionInputState, width: u16, height: u16) -> String {
    let (terminal, caret) = draw(pane, width, height);
    format!("{}caret: {caret:?}\n", terminal.backend())
}

fn buffer(pane: &mut MentionInputState, width: u16, height: u16) -> Buffer {
    draw(pane, width, height).0.backend().buffer().clone()
}

/// The screen text with a line of `^` under the cells `is_marked` picks (one mark per cell
/// of each drawn symbol, so wide chars keep the columns aligned).
fn marked(buf: &Buffer, is_marked: impl Fn(&ratatui::buffer::Cell) -> bool) -> String {
    let mut out = String::new();
    for y in 0..buf.area.height {
        let mut line = String::new();
        let mut marks = String::new();
        let mut skip = 0;
        for x in 0..buf.area.width {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            let cell = &buf[(x, y)];
            let width = unicode_width::UnicodeWidthStr::width(cell.symbol()).max(1);
            skip = width - 1;
            line.push_str(cell.symbol());
            let mark = if is_marked(cell) { '^' } else { ' ' };
            marks.extend(std::iter::repeat_n(mark, width));
        }
        out.push_str(line.trim_end());
        out.push('\n');
        if !marks.trim().is_empty() {
            out.push_str(marks.trim_end());
            out.push('\n');
        }
    }
    out
}

fn is_match_highlight(cell: &ratatui::buffer::Cell) -> bool {
    cell.fg == Color::Yellow && cell.modifier.contains(Modifier::UNDERLINED)
}

#[test]
fn empty_composer() {
    insta::assert_snapshot!(screen(&mut pane(), 60, 4));
}

#[test]
fn popup_no_query() {
    let mut pane = pane();
    type_str(&mut pane, "see @");
    insta::assert_snapshot!(screen(&mut pane, 60, 8));
}

#[test]
fn popup_searching() {
    let mut pane = pane();
    type_str(&mut pane, "@fo");
    insta::assert_snapshot!(screen(&mut pane, 60, 8));
}

#[test]
fn popup_results_with_matches_highlighted() {
    let mut pane = pane();
    type_str(&mut pane, "@fo");
    let id = query_id(&pane);
    let _ = pane.set_results(
        id,
        rows(&["Fix overflow", "Food planning", "Notes \u{1b}[31m"]),
    );
    insta::assert_snapshot!(screen(&mut pane, 80, 12));
    insta::assert_snapshot!(
        "popup_results_highlights",
        marked(&buffer(&mut pane, 80, 12), is_match_highlight)
    );
}

#[test]
fn popup_no_match() {
    let mut pane = pane();
    type_str(&mut pane, "@zzz");
    let _ = pane.set_results(query_id(&pane), Vec::new());
    insta::assert_snapshot!(screen(&mut pane, 60, 8));
}

#[test]
fn texts_styles_and_keys_come_from_the_configuration() {
    use crate::{Action, Binding, KeyMap, MentionStyles};
    let styles = MentionStyles {
        matched: ratatui::style::Style::new().fg(Color::Magenta),
        ..MentionStyles::default()
    };
    let config = MentionConfig::default().with_key_map(
        KeyMap::default()
            .without(KeyCode::Tab, KeyModifiers::NONE)
            .with(Binding::new(
                KeyCode::Right,
                KeyModifiers::ALT,
                Action::Complete,
            )),
    );
    let look = MentionInput::new()
        .block(Block::bordered())
        .placeholder("Say something")
        .styles(styles)
        .labels(PopupLabels {
            title: " @ people ".into(),
            no_match: "nobody".into(),
            ..PopupLabels::default()
        });
    let shot = |pane: &mut MentionInputState| {
        let mut buf = Buffer::empty(Rect::new(0, 0, 40, 8));
        look.clone().render(buf.area, &mut buf, pane);
        buf
    };
    let text = |buf: &Buffer| -> String {
        buf.content()
            .iter()
            .map(ratatui::buffer::Cell::symbol)
            .collect()
    };
    let mut pane = MentionInputState::new(config);
    assert!(text(&shot(&mut pane)).contains("Say something"));
    type_str(&mut pane, "@zz");
    let _ = pane.set_results(query_id(&pane), Vec::new());
    let shown = text(&shot(&mut pane));
    assert!(
        shown.contains(" @ people ") && shown.contains("nobody"),
        "{shown}"
    );
    type_str(&mut pane, " @a");
    let _ = pane.set_results(
        query_id(&pane),
        vec![MentionItem::new("a", "Ada", &Mention::new("Ada", "user:a"))],
    );
    let buf = shot(&mut pane);
    assert!(
        buf.content()
            .iter()
            .any(|cell| cell.fg == Color::Magenta && cell.symbol() == "A"),
        "the configured match style"
    );
    let tab = KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE);
    assert_eq!(
        pane.handle_key(tab),
        Outcome::Ignored,
        "Tab is unbound now: the host's"
    );
    assert_eq!(pane.draft(), "@zz @a", "nothing inserted");
    // The configured key completes instead.
    let alt_right = KeyEvent::new(KeyCode::Right, KeyModifiers::ALT);
    assert!(matches!(
        pane.handle_key(alt_right),
        Outcome::Inserted { .. }
    ));
    assert_eq!(pane.draft(), "@zz @[Ada](user:a) ");
}

#[test]
fn popup_error() {
    let mut pane = pane();
    type_str(&mut pane, "@");
    let _ = pane.set_failed(query_id(&pane), "store busy\n\u{7}");
    insta::assert_snapshot!(screen(&mut pane, 60, 8));
}

#[test]
fn popup_scrolled_to_keep_selection_visible() {
    let mut pane = pane();
    type_str(&mut pane, "@");
    let labels: Vec<String> = (0..12).map(|i| format!("Session number {i}")).collect();
    let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
    let _ = pane.set_results(query_id(&pane), rows(&labels));
    // Up from the first row wraps to the last one, which must scroll into view.
    pane.handle_key(KeyEvent::new(KeyCode::Up, KeyModifiers::NONE));
    let layout = input().layout(&pane, Rect::new(0, 0, 70, 24));
    assert_eq!(
        layout.popup.height, 18,
        "eight rows of two lines plus the border"
    );
    insta::assert_snapshot!(screen(&mut pane, 70, 24));
}

#[test]
fn popup_narrow_60_columns() {
    let mut pane = pane();
    type_str(&mut pane, "please compare with @plan");
    let _ = pane.set_results(
        query_id(&pane),
        vec![session(
            "2026-11-20T09-30-00-very-long-session-identifier",
            "Planning the very long migration of the billing service",
            Some("/home/ana/src/github.com/example/billing-service"),
            "2026-11-20 09:30",
        )],
    );
    insta::assert_snapshot!(screen(&mut pane, 60, 15));
}

#[test]
fn popup_cjk_labels() {
    let mut pane = pane();
    type_str(&mut pane, "对比 @会话");
    let _ = pane.set_results(
        query_id(&pane),
        rows(&["会话记录整理", "中文会话：数据库迁移", "日本語のセッション"]),
    );
    insta::assert_snapshot!(screen(&mut pane, 60, 12));
    insta::assert_snapshot!(
        "popup_cjk_labels_highlights",
        marked(&buffer(&mut pane, 60, 12), is_match_highlight)
    );
}

#[test]
fn popup_shrinks_to_a_small_area() {
    let mut pane = pane();
    type_str(&mut pane, "@");
    let _ = pane.set_results(query_id(&pane), rows(&["One", "Two", "Three", "Four"]));
    for _ in 0..2 {
        pane.handle_key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE));
    }
    // The app gives the pane only 8 rows at 60x15: composer 3, popup 5 (two candidates).
    let mut terminal = Terminal::new(TestBackend::new(60, 8)).unwrap();
    terminal
        .draw(|frame| {
            let area = frame.area();
            frame.render_stateful_widget(input(), area, &mut pane);
        })
        .unwrap();
    insta::assert_snapshot!(terminal.backend().to_string());
}

#[test]
fn mention_highlighted_in_composer() {
    let mut pane = pane();
    type_str(&mut pane, "compare @bil");
    let _ = pane.set_results(query_id(&pane), rows(&["Billing 账单"]));
    pane.handle_key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE));
    type_str(&mut pane, "with this");
    let buf = buffer(&mut pane, 40, 6);
    insta::assert_snapshot!(marked(&buf, |cell| cell.fg == mention_style().fg.unwrap()));
}

#[test]
fn caret_follows_wide_chars_and_wrapping() {
    let mut pane = pane();
    type_str(&mut pane, "漢字😀a");
    let (_, caret) = draw(&mut pane, 40, 3);
    // Border column 0, then 2+2+2+1 cells.
    assert_eq!(caret, Some(Position::new(8, 1)));
    // At 12 columns (10 inside the border) the text wraps; the caret ends on row two.
    type_str(&mut pane, " 会话记录");
    assert_eq!(input().desired_height(&pane, 12, 40), 4);
    let (terminal, caret) = draw(&mut pane, 12, 4);
    insta::assert_snapshot!(format!("{}caret: {caret:?}\n", terminal.backend()));
    // Word wrap: row one holds `漢字😀a `, row two `会话记录`: caret after 8 cells.
    assert_eq!(caret, Some(Position::new(9, 2)));
}

#[test]
fn up_walks_wrapped_rows_before_history() {
    let mut pane = pane();
    pane.push_history("older entry");
    pane.handle_paste(&"x".repeat(50));
    // 20 columns inside the border: the one logical line shows as three rows.
    let (_, caret) = draw(&mut pane, 22, 5);
    assert_eq!(caret, Some(Position::new(11, 3)));
    let up = || KeyEvent::new(KeyCode::Up, KeyModifiers::NONE);
    assert_eq!(pane.handle_key(up()), Outcome::Changed);
    assert_eq!(draw(&mut pane, 22, 5).1, Some(Position::new(11, 2)));
    pane.handle_key(up());
    assert_eq!(draw(&mut pane, 22, 5).1, Some(Position::new(11, 1)));
    assert_eq!(
        pane.draft(),
        "x".repeat(50),
        "still the draft on the first row"
    );
    pane.handle_key(up());
    assert_eq!(pane.draft(), "older entry");
    pane.handle_key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE));
    assert_eq!(
        pane.draft(),
        "x".repeat(50),
        "Down past the newest gives the draft back"
    );
}

/// One step of a random editing session.
#[derive(Debug, Clone)]
enum Step {
    Key(KeyCode, KeyModifiers),
    Paste(String),
    Answer(usize),
    Restore(String),
}

fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    let chars = prop::sample::select(vec![
        'a', '@', ' ', '[', ']', '(', ')', '\\', '漢', '😀', '\u{3000}', 'İ',
    ]);
    let keys = prop::sample::select(vec![
        (KeyCode::Backspace, KeyModifiers::NONE),
        (KeyCode::Delete, KeyModifiers::NONE),
        (KeyCode::Left, KeyModifiers::NONE),
        (KeyCode::Right, KeyModifiers::NONE),
        (KeyCode::Up, KeyModifiers::NONE),
        (KeyCode::Down, KeyModifiers::NONE),
        (KeyCode::Home, KeyModifiers::NONE),
        (KeyCode::End, KeyModifiers::NONE),
        (KeyCode::Enter, KeyModifiers::NONE),
        (KeyCode::Enter, KeyModifiers::SHIFT),
        (KeyCode::Tab, KeyModifiers::NONE),
        (KeyCode::Esc, KeyModifiers::NONE),
        (KeyCode::Char('u'), KeyModifiers::CONTROL),
        (KeyCode::Char('r'), KeyModifiers::CONTROL),
        (KeyCode::Char('w'), KeyModifiers::CONTROL),
        (KeyCode::Char('d'), KeyModifiers::CONTROL),
        (KeyCode::Char('y'), KeyModifiers::CONTROL),
    ]);
    prop_oneof![
        4 => chars.prop_map(|c| Step::Key(KeyCode::Char(c), KeyModifiers::NONE)),
        4 => keys.prop_map(|(k, m)| Step::Key(k, m)),
        1 => "[@a \\[\\]()\r\n\t\u{1b}漢]{0,12}".prop_map(Step::Paste),
        1 => (0usize..12).prop_map(Step::Answer),
        1 => Just(Step::Paste("@[A b](user:IkEi)".to_string())),
        1 => "[@a \n漢]{0,8}".prop_map(Step::Restore),
    ]
}

proptest::proptest! {
    /// Random keys, pastes and answers never panic, and the caret is always inside the
    /// composer's area whatever size the app gives the pane.
    #[test]
    fn random_sessions_never_panic(
        steps in proptest::collection::vec(step(), 1..40),
        width in 1u16..50,
        height in 1u16..16,
    ) {
        let mut pane = pane();
        for step in steps {
            match step {
                Step::Key(code, modifiers) => {
                    pane.handle_key(KeyEvent::new(code, modifiers));
                }
                Step::Paste(text) => {
                    pane.handle_paste(&text);
                }
                Step::Answer(n) => {
                    if let Some(id) = pane.results().map(ResultsList::query_id) {
                        let labels: Vec<String> = (0..n).map(|i| format!("S]{i}\\")).collect();
                        let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
                        let _ = pane.set_results(id, rows(&labels));
                    }
                }
                Step::Restore(text) => pane.restore_draft(&text),
            }
            let area = Rect::new(0, 0, width, height);
            let mut buf = Buffer::empty(area);
            input().render(area, &mut buf, &mut pane);
            if let Some(caret) = pane.cursor_position() {
                proptest::prop_assert!(area.contains(caret), "{caret:?} outside {area:?}");
            }
        }
    }
}

#[test]
fn a_configured_gap_is_left_between_popup_and_composer() {
    let mut pane = MentionInputState::new(app_config().with_gap_above_composer(1));
    let closed = input().layout(&pane, Rect::new(0, 0, 60, 40));
    assert_eq!(closed.height(), 3 + 1, "composer and gap");
    type_str(&mut pane, "@");
    let _ = pane.set_results(query_id(&pane), rows(&["One", "Two"]));
    let open = input().layout(&pane, Rect::new(0, 0, 60, 40));
    assert_eq!(
        open.height(),
        closed.height() + open.popup.height,
        "the gap is counted once, popup or not"
    );
    let height = open.height();
    let mut terminal = Terminal::new(TestBackend::new(60, height)).unwrap();
    terminal
        .draw(|frame| {
            let area = frame.area();
            // What the host draws into the gap must survive the widget's render.
            frame
                .buffer_mut()
                .set_string(0, height - 4, "HOST ROW", ratatui::style::Style::new());
            frame.render_stateful_widget(input(), area, &mut pane);
        })
        .unwrap();
    let text = terminal.backend().to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[usize::from(height) - 4].contains("HOST ROW"),
        "{text}"
    );
    assert!(
        lines[usize::from(height) - 5].contains('╰'),
        "popup ends above the gap: {text}"
    );
    assert!(
        lines[usize::from(height) - 3].contains('╭'),
        "composer starts below it: {text}"
    );
}

/// A pane showing `text` (pasted, so mentions in it become chips).
fn pane_with(text: &str) -> MentionInputState {
    let mut pane = pane();
    pane.handle_paste(text);
    pane
}

fn shown(pane: &mut MentionInputState, width: u16, height: u16) -> String {
    let (terminal, caret) = draw(pane, width, height);
    format!("{}caret: {caret:?}\n", terminal.backend())
}

#[test]
fn chips_ascii_cjk_narrow_and_too_wide() {
    let ascii = "compare @[Speed up the Vite build](user:InMtMSI) with this";
    insta::assert_snapshot!("chip_ascii", shown(&mut pane_with(ascii), 40, 4));
    let cjk = "看 @[账单会话 😀](user:InMtMiI) 好";
    insta::assert_snapshot!("chip_cjk", shown(&mut pane_with(cjk), 24, 3));
    // Narrow: the chip moves to its own row rather than being split.
    insta::assert_snapshot!("chip_narrow_wrap", shown(&mut pane_with(ascii), 28, 6));
    // Wider than the line: cut with `…`, still one unit.
    insta::assert_snapshot!("chip_wider_than_line", shown(&mut pane_with(ascii), 16, 7));
}

#[test]
fn caret_after_emoji_sequences_sits_right_after_the_glyph() {
    // Skin tone, ZWJ family, VS16 heart: two cells each.
    let mut pane = pane();
    for g in ["👍🏽", "👨\u{200d}👩\u{200d}👧", "❤\u{fe0f}"] {
        pane.handle_paste(g);
    }
    let (terminal, caret) = draw(&mut pane, 20, 3);
    insta::assert_snapshot!(format!("{}caret: {caret:?}\n", terminal.backend()));
    assert_eq!(caret, Some(Position::new(1 + 6, 1)));
}

#[test]
fn tabs_are_kept_and_drawn_as_spaces() {
    let mut pane = pane_with("a\tb\tc");
    assert_eq!(pane.draft(), "a\tb\tc");
    insta::assert_snapshot!(shown(&mut pane, 20, 3));
}

#[test]
fn a_label_with_control_characters_shows_them_visibly() {
    // A recalled draft is not normalised like a paste: its controls reach the chip.
    let mut pane = pane();
    pane.restore_draft("@[bell\u{7} \u{1b}[31mred](user:InMtMSI) x");
    let out = shown(&mut pane, 40, 3);
    insta::assert_snapshot!(out);
}

#[test]
fn command_popup() {
    let commands = vec![
        crate::CommandEntry::new("help", "/help", "show commands and key bindings", false),
        crate::CommandEntry::new("resume", "/resume [ID]", "open another session", true),
        crate::CommandEntry::new("quit", "/quit", "leave", false),
    ];
    let mut pane = MentionInputState::new(app_config().with_commands(commands));
    for c in "/".chars() {
        pane.handle_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
    }
    insta::assert_snapshot!("command_popup_all", shown(&mut pane, 44, 11));
    pane.handle_key(KeyEvent::new(KeyCode::Char('r'), KeyModifiers::NONE));
    insta::assert_snapshot!("command_popup_filtered", shown(&mut pane, 44, 11));
}

/// A conversation hit as the app builds it: the session row with one matching line.
fn hit(id: &str, label: &str, lead: &str, text: &str, word: &str) -> MentionItem {
    let start = text.find(word).unwrap();
    session(id, label, Some("/home/ana/project-0"), "2026-11-20 09:30").with_snippet(
        crate::ItemSnippet {
            lead: format!("{lead}: "),
            text: text.into(),
            highlights: std::iter::once(start..start + word.len()).collect(),
        },
    )
}

fn hits(title: &str, rows: Vec<MentionItem>) -> crate::Section {
    crate::Section {
        title: title.into(),
        rows,
    }
}

#[test]
fn popup_conversation_hits_with_snippets() {
    let mut pane = pane();
    type_str(&mut pane, "@kafka");
    let id = query_id(&pane);
    let _ = pane.set_page(
        id,
        crate::ResultsPage {
            rows: rows(&["Kafka vs Redis"]),
            total: 1,
            ..crate::ResultsPage::default()
        },
    );
    let _ = pane.set_late_section(
        id,
        hits(
            "in conversations",
            vec![
                // Already listed as a match: left out of the section.
                hit("s-00", "Kafka vs Redis", "user", "kafka", "kafka"),
                hit(
                    "s-07",
                    "Event bus notes",
                    "assistant",
                    "so we picked kafka\u{1b}[2J for the event bus, not NATS",
                    "kafka",
                ),
                hit(
                    "s-08",
                    "Retro",
                    "user",
                    "remember the kafka outage?",
                    "kafka",
                ),
            ],
        ),
    );
    insta::assert_snapshot!(screen(&mut pane, 80, 14));
    insta::assert_snapshot!(
        "popup_conversation_hits_highlights",
        marked(&buffer(&mut pane, 80, 14), is_match_highlight)
    );
}

#[test]
fn popup_conversation_section_while_the_index_builds() {
    let mut pane = pane();
    type_str(&mut pane, "@outage");
    let id = query_id(&pane);
    let _ = pane.set_page(id, crate::ResultsPage::default());
    let _ = pane.set_late_section(
        id,
        hits(
            "in conversations · index building 3 400 / 10 000",
            Vec::new(),
        ),
    );
    insta::assert_snapshot!("popup_index_building_no_rows", screen(&mut pane, 70, 8));
    let _ = pane.set_late_section(
        id,
        hits(
            "in conversations · index building 3 400 / 10 000",
            vec![hit(
                "s-08",
                "Retro",
                "user",
                "remember the outage?",
                "outage",
            )],
        ),
    );
    pane.set_late_title("in conversations · index building 6 000 / 10 000");
    insta::assert_snapshot!("popup_index_building_with_rows", screen(&mut pane, 70, 10));
}

#[test]
fn conversation_hits_are_highlighted_when_alone_and_stale_ones_dropped() {
    let mut pane = pane();
    type_str(&mut pane, "@ou");
    let old = query_id(&pane);
    type_str(&mut pane, "t");
    let new = query_id(&pane);
    assert!(new > old);
    let popup = |pane: &MentionInputState| pane.results().expect("popup open").clone();
    // The newer query's hits arrive before its listing; the older hits come late.
    let _ = pane.set_late_section(
        new,
        hits(
            "in conversations",
            vec![hit("s-08", "Retro", "user", "out", "out")],
        ),
    );
    let _ = pane.set_late_section(
        old,
        hits(
            "in conversations",
            vec![hit("s-09", "Stale", "user", "ou", "ou")],
        ),
    );
    let keys = |p: &ResultsList| -> Vec<String> {
        p.sections()
            .iter()
            .flat_map(|s| s.rows.iter().map(|r| r.key().to_owned()))
            .collect()
    };
    assert_eq!(keys(&popup(&pane)), ["s-08"]);
    let _ = pane.set_page(new, crate::ResultsPage::default());
    assert_eq!(
        keys(&popup(&pane)),
        ["s-08"],
        "kept when the listing answers"
    );
    assert_eq!(
        popup(&pane).selected().map(MentionItem::key),
        Some("s-08"),
        "the only row on show is the highlighted one"
    );
    pane.set_late_title("in conversations · index building 1 / 2");
    assert_eq!(
        popup(&pane).selected().map(MentionItem::key),
        Some("s-08"),
        "a title change keeps the selection"
    );
    // Enter and Tab both insert it.
    let mut tab = pane.clone();
    assert!(matches!(
        tab.handle_key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE)),
        Outcome::Inserted { .. }
    ));
    assert!(tab.draft().starts_with("@[Retro](user:"), "{}", tab.draft());
    pane.handle_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    assert!(
        pane.draft().starts_with("@[Retro](user:"),
        "{}",
        pane.draft()
    );
}

#[test]
fn hits_that_are_all_listed_already_add_no_section() {
    let mut pane = pane();
    type_str(&mut pane, "@kafka");
    let id = query_id(&pane);
    let _ = pane.set_page(id, crate::ResultsPage::complete(rows(&["Kafka vs Redis"])));
    let _ = pane.set_late_section(
        id,
        hits(
            "in conversations",
            vec![hit("s-00", "Kafka vs Redis", "user", "kafka", "kafka")],
        ),
    );
    let shown = screen(&mut pane, 70, 10);
    assert!(!shown.contains("in conversations"), "{shown}");
}
