//! The chip view drawn from a real `TextArea` into a buffer.

use super::*;
use crate::{MentionConfig, TextAreaMentions};

use ratatui::style::Color;
use ratatui::widgets::Block;

use pretty_assertions::assert_eq;
use ratatui_textarea::CursorMove;

/// Issues written `@[title](issue:N)`, tags `#[name](tag:name)`.
fn mentions() -> TextAreaMentions {
    TextAreaMentions::new(
        MentionConfig::default()
            .with_triggers(['@', '#'])
            .with_uri_scheme("issue:")
            .with_uri_scheme("tag:"),
    )
}

/// Draws `textarea` in a `width`×`height` area: the rows' symbols and the buffer.
fn draw(m: &TextAreaMentions, t: &TextArea<'_>, width: u16, height: u16) -> (Vec<String>, Buffer) {
    let area = Rect::new(0, 0, width, height);
    let mut buf = Buffer::empty(area);
    m.widget(t).render(area, &mut buf);
    let rows = (0..height)
        .map(|y| (0..width).map(|x| buf[(x, y)].symbol()).collect::<String>())
        .collect();
    (rows, buf)
}

fn reversed(buf: &Buffer, x: u16, y: u16) -> bool {
    buf[(x, y)].modifier.contains(Modifier::REVERSED)
}

#[test]
fn mentions_are_drawn_as_the_chips_of_their_triggers() {
    let m = mentions();
    let t = TextArea::from(["fix @[login bug](issue:12) in #[ui](tag:ui)!"]);
    let (rows, buf) = draw(&m, &t, 30, 1);
    assert_eq!(rows, ["fix @login bug in #ui!        "]);
    // Chips in the mention style, the rest plain.
    let chip = MentionStyles::default().mention;
    assert_eq!(buf[(4, 0)].fg, chip.fg.unwrap_or(Color::Reset));
    assert_eq!(buf[(18, 0)].fg, chip.fg.unwrap_or(Color::Reset));
    assert_eq!(buf[(0, 0)].fg, Color::Reset);
    // The caret (the textarea's cursor at the start) is the first cell.
    assert!(reversed(&buf, 0, 0));
    assert_eq!(m.cursor_position(), Some(Position::new(0, 0)));
}

#[test]
fn the_caret_cell_is_right_before_or_right_after_a_chip() {
    let m = mentions();
    let mut t = TextArea::from(["a #[ui](tag:ui) b"]);
    // Before the chip: its first cell.
    t.move_cursor(CursorMove::Jump(0, 2));
    let (_, buf) = draw(&m, &t, 10, 1);
    assert_eq!(m.cursor_position(), Some(Position::new(2, 0)));
    assert!(reversed(&buf, 2, 0) && !reversed(&buf, 3, 0));
    // After it: the cell after `#ui`.
    t.move_cursor(CursorMove::Jump(0, 15));
    let (_, buf) = draw(&m, &t, 10, 1);
    assert_eq!(m.cursor_position(), Some(Position::new(5, 0)));
    assert!(reversed(&buf, 5, 0) && !reversed(&buf, 4, 0));
    // A caret the host put inside the mention is drawn at its start.
    t.move_cursor(CursorMove::Jump(0, 6));
    let _ = draw(&m, &t, 10, 1);
    assert_eq!(m.cursor_position(), Some(Position::new(2, 0)));
    // At the end of the line: a cell past the text.
    t.move_cursor(CursorMove::End);
    let (rows, buf) = draw(&m, &t, 10, 1);
    assert_eq!(rows, ["a #ui b   "]);
    assert!(reversed(&buf, 7, 0));
}

#[test]
fn a_long_line_scrolls_to_keep_the_caret_and_chips_stay_whole() {
    let m = mentions();
    let mut t = TextArea::from(["0123456789 #[ui](tag:ui) abcdefghij"]);
    t.move_cursor(CursorMove::End);
    let (rows, _) = draw(&m, &t, 10, 1);
    // The caret cell (past `j`) is the last column; `#ui` is off to the left.
    assert_eq!(rows, ["bcdefghij "]);
    assert_eq!(m.cursor_position(), Some(Position::new(9, 0)));
    // Back to the chip's start: the view scrolls left only as far as the caret needs.
    t.move_cursor(CursorMove::Jump(0, 11));
    let (rows, _) = draw(&m, &t, 10, 1);
    assert_eq!(rows, ["#ui abcdef"]);
    assert_eq!(m.cursor_position(), Some(Position::new(0, 0)));
    // Right after it: nothing moves.
    t.move_cursor(CursorMove::Jump(0, 24));
    let (rows, _) = draw(&m, &t, 10, 1);
    assert_eq!(rows, ["#ui abcdef"]);
    assert_eq!(m.cursor_position(), Some(Position::new(3, 0)));
    // Many lines: the first one on screen is the textarea's own (its scroll keys work).
    let mut long: TextArea = (0..20)
        .map(|i| format!("line {i} #[t{i}](tag:t{i})"))
        .collect();
    long.move_cursor(CursorMove::Bottom);
    let (rows, _) = draw(&m, &long, 16, 3);
    assert_eq!(
        rows,
        ["line 17 #t17    ", "line 18 #t18    ", "line 19 #t19    "]
    );
    assert_eq!(long.scroll_offset().0, 17);
}

#[test]
fn wide_text_and_chips_keep_their_cells() {
    let m = mentions();
    let mut t = TextArea::from(["漢字 #[界面](tag:ui) 了"]);
    t.move_cursor(CursorMove::Jump(0, 16));
    let (_, buf) = draw(&m, &t, 14, 1);
    // `漢字` 4 cells, space, `#界面` 5 cells, space, `了` 2 cells (the second cell of a
    // wide char is blank).
    let symbols: Vec<&str> = (0..14).map(|x| buf[(x, 0)].symbol()).collect();
    assert_eq!(
        symbols,
        [
            "漢", " ", "字", " ", " ", "#", "界", " ", "面", " ", " ", "了", " ", " "
        ]
    );
    // The caret is right after the chip, on the space.
    assert_eq!(m.cursor_position(), Some(Position::new(10, 0)));
    assert!(reversed(&buf, 10, 0));
    // Scrolled so a wide char is cut by the left edge: a blank cell, columns kept.
    let mut t = TextArea::from(["了了x"]);
    t.move_cursor(CursorMove::End);
    let (rows, _) = draw(&m, &t, 3, 1);
    assert_eq!(rows, [" x "]);
    assert_eq!(m.cursor_position(), Some(Position::new(2, 0)));
}

#[test]
fn the_selection_is_drawn_in_the_textareas_selection_style() {
    let m = mentions();
    let mut t = TextArea::from(["ab #[ui](tag:ui) cd"]);
    t.set_selection_style(Style::new().bg(Color::Green));
    t.move_cursor(CursorMove::Jump(0, 1));
    t.start_selection();
    t.move_cursor(CursorMove::Jump(0, 16));
    let (_, buf) = draw(&m, &t, 12, 1);
    let green: Vec<bool> = (0..9).map(|x| buf[(x, 0)].bg == Color::Green).collect();
    // `a` out, `b #ui` in (the whole chip), the caret's ` ` is the cursor.
    assert_eq!(
        green,
        [false, true, true, true, true, true, false, false, false]
    );
    assert!(reversed(&buf, 6, 0));
}

#[test]
fn a_hostile_control_char_is_shown_escaped() {
    let m = mentions();
    let t = TextArea::from(["a\u{1b}[31mb #[x\u{7}y](tag:x) c"]);
    let (rows, buf) = draw(&m, &t, 30, 1);
    assert_eq!(rows, ["a\\x1B[31mb #x\\x07y c          "]);
    assert!(
        buf.content
            .iter()
            .all(|c| !c.symbol().contains(char::is_control))
    );
}

#[test]
fn block_placeholder_line_numbers_and_wrapping_are_the_textareas() {
    let m = mentions();
    let mut t = TextArea::default();
    t.set_block(Block::bordered().title("notes"));
    t.set_placeholder_text("type # for a tag");
    let (rows, _) = draw(&m, &t, 20, 3);
    assert_eq!(
        rows,
        [
            "┌notes─────────────┐",
            "│ type # for a tag │",
            "└──────────────────┘"
        ]
    );
    assert_eq!(m.cursor_position(), Some(Position::new(1, 1)));

    let mut t = TextArea::from(["see #[user interface](tag:ui) and more words", "x"]);
    t.set_wrap_mode(WrapMode::WordOrGlyph);
    t.set_line_number_style(Style::new());
    t.move_cursor(CursorMove::Jump(0, 29));
    let (rows, _) = draw(&m, &t, 16, 4);
    // The chip moves to the next row whole (cut with `…`: it is wider than the row); rows
    // wrap at blanks; continuation rows have a blank gutter; the caret is after the chip.
    assert_eq!(
        rows,
        [
            " 1 see          ",
            "   #user interf…",
            "   and more     ",
            "   words        "
        ]
    );
    assert_eq!(m.cursor_position(), Some(Position::new(15, 1)));
}

#[test]
fn snapshot_of_a_bordered_textarea_with_chips_selection_and_caret() {
    let m = mentions();
    let mut t = TextArea::from([
        "@[login bug](issue:12) breaks #[ui](tag:ui)",
        "second 漢字 line",
    ]);
    t.set_block(Block::bordered().title(" notes "));
    t.move_cursor(CursorMove::Jump(0, 23));
    t.start_selection();
    t.move_cursor(CursorMove::Jump(1, 3));
    let (_, buf) = draw(&m, &t, 34, 4);
    insta::assert_snapshot!(format!("{buf:?}"));
}
