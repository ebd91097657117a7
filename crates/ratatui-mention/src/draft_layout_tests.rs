//! Wrap and caret tables of the draft layout; rows are written as shown, chips in `‹…›`.

use super::*;
use pretty_assertions::assert_eq;

/// Each row as the user sees it (chips marked `‹›`, tabs as spaces).
fn rows(text: &str, width: u16) -> Vec<String> {
    let layout = layout(text, width);
    layout
        .rows
        .iter()
        .map(|row| {
            row.units
                .iter()
                .map(|u| match &u.glyph {
                    Glyph::Text if u.width == 0 && u.range.len() == 1 => String::new(),
                    Glyph::Text => text[u.range.clone()].to_string(),
                    Glyph::Tab => " ".repeat(u.width),
                    Glyph::Newline => String::new(),
                    Glyph::Control(shown) => shown.clone(),
                    Glyph::Chip(shown) | Glyph::Fold(shown) => format!("‹{shown}›"),
                })
                .collect()
        })
        .collect()
}

/// `text` laid out at `width`, its `user:` mentions as chips.
fn layout(text: &str, width: u16) -> DraftLayout {
    let grammar = crate::MentionConfig::default()
        .with_uri_scheme("user:")
        .grammar();
    let atoms: Vec<(Range<usize>, Glyph)> = grammar
        .find(text)
        .into_iter()
        .map(|f| (f.range, Glyph::Chip(f.shown)))
        .collect();
    DraftLayout::with_atoms(text, &atoms, width)
}
const VITE: &str = "@[Speed up the Vite build](user:ImJlYWNvbiI)";

#[test]
fn wrap_table() {
    let cases: Vec<(String, u16, Vec<&str>)> = vec![
        ("hello world".into(), 20, vec!["hello world"]),
        ("hello world".into(), 8, vec!["hello ", "world"]),
        ("abcdefghij".into(), 4, vec!["abcd", "efgh", "ij"]),
        ("abcd".into(), 4, vec!["abcd", ""]),
        ("a\nb".into(), 10, vec!["a", "b"]),
        ("a\n".into(), 10, vec!["a", ""]),
        (
            format!("see {VITE} ok"),
            40,
            vec!["see ‹@Speed up the Vite build› ok"],
        ),
        (
            format!("see {VITE} ok"),
            26,
            vec!["see ", "‹@Speed up the Vite build› ", "ok"],
        ),
        (VITE.to_string(), 10, vec!["‹@Speed up…›", ""]),
        (format!("ab {VITE}"), 10, vec!["ab ", "‹@Speed up…›", ""]),
        (
            "@[会话记录](user:ImEi) 漢字".into(),
            12,
            vec!["‹@会话记录› ", "漢字"],
        ),
        ("@[会话记录](user:ImEi)".into(), 6, vec!["‹@会话…›", ""]),
        ("a\tb".into(), 10, vec!["a   b"]),
        ("ab\tc".into(), 10, vec!["ab  c"]),
        ("tab\u{1b}esc".into(), 20, vec!["tab\\x1Besc"]),
        (
            "👍🏽👨\u{200d}👩\u{200d}👧".into(),
            4,
            vec!["👍🏽👨\u{200d}👩\u{200d}👧", ""],
        ),
    ];
    for (text, width, want) in cases {
        assert_eq!(rows(&text, width), want, "{text:?} at {width}");
    }
}

#[test]
fn chips_are_never_split_at_any_width() {
    let text = format!("x {VITE} y @[漢字 label](user:ImEi) z");
    let chips: Vec<Range<usize>> = layout(&text, 80)
        .rows
        .iter()
        .flat_map(|r| r.units.iter())
        .filter(|u| matches!(u.glyph, Glyph::Chip(_)))
        .map(|u| u.range.clone())
        .collect();
    assert_eq!(chips.len(), 2);
    for width in 1..60 {
        let layout = layout(&text, width);
        for row in &layout.rows {
            assert!(
                row.width() <= usize::from(width).max(2),
                "row fits at {width}"
            );
        }
        for chip in &chips {
            let holders = layout
                .rows
                .iter()
                .filter(|r| r.units.iter().any(|u| u.range == *chip))
                .count();
            assert_eq!(holders, 1, "chip {chip:?} on exactly one row at {width}");
        }
    }
}

#[test]
fn caret_cells() {
    let family = "👨\u{200d}👩\u{200d}👧";
    let cases: Vec<(String, u16, usize, (usize, usize))> = vec![
        ("abc".into(), 10, 3, (0, 3)),
        ("abc".into(), 3, 3, (1, 0)),
        ("hello world".into(), 8, 6, (1, 0)),
        ("a\nb".into(), 10, 1, (0, 1)),
        ("a\nb".into(), 10, 2, (1, 0)),
        ("👍🏽".into(), 10, "👍🏽".len(), (0, 2)),
        (format!("{family}x"), 10, family.len(), (0, 2)),
        (format!("a{family}"), 10, 1 + family.len(), (0, 3)),
        ("e\u{301}x".into(), 10, 3, (0, 1)),
        ("漢字".into(), 10, 6, (0, 4)),
        (format!("{VITE} x"), 40, VITE.len(), (0, 24)),
        ("a\tb".into(), 10, 2, (0, 4)),
    ];
    for (text, width, caret, want) in cases {
        let layout = layout(&text, width);
        assert_eq!(
            layout.caret(caret),
            want,
            "{text:?} at {width}, caret {caret}"
        );
    }
}

#[test]
fn offsets_for_up_and_down() {
    let text = format!("ab {VITE} cd\nxy");
    let layout = layout(&text, 40);
    // Row 0: "ab ‹@Speed up the Vite build› cd" — column 10 is inside the chip: nearest side.
    assert_eq!(layout.offset_at(0, 1), 1);
    assert_eq!(layout.offset_at(0, 10), 3, "chip start is nearer");
    assert_eq!(
        layout.offset_at(0, 20),
        3 + VITE.len(),
        "chip end is nearer"
    );
    assert_eq!(
        layout.offset_at(0, 99),
        text.find('\n').unwrap_or(0),
        "before the newline"
    );
    assert_eq!(layout.offset_at(1, 99), text.len());
    let wrapped = DraftLayout::with_atoms("abcdef", &[], 3);
    assert_eq!(
        wrapped.offset_at(0, 3),
        2,
        "a soft row's end belongs to the next row"
    );
    assert_eq!(
        wrapped.offset_at(1, 3),
        5,
        "row 1 is soft-wrapped too (a fresh row follows)"
    );
    assert_eq!(wrapped.offset_at(2, 3), 6);
}
