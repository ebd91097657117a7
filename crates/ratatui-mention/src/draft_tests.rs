//! Table tests of the draft: tables write a chip as `{A}`/`{B}` and the caret as `|`.

use super::*;
use pretty_assertions::assert_eq;

const A: &str = "@[Alpha](contact-uri:ImEi)";
const B: &str = "@[会话 β](contact-uri:ImIi)";

/// `spec` with `{A}`/`{B}` expanded, and the caret's byte offset where `|` was.
fn expand(spec: &str) -> (String, usize) {
    let caret = spec
        .replace("{A}", A)
        .replace("{B}", B)
        .find('|')
        .unwrap_or(usize::MAX);
    let text = spec.replace('|', "").replace("{A}", A).replace("{B}", B);
    (text, caret)
}

fn draft(spec: &str) -> Draft {
    let (text, caret) = expand(spec);
    let mut d = Draft::default();
    d.set_text(&text);
    d.set_caret(caret.min(text.len()));
    d
}

fn show(d: &Draft) -> String {
    let mut s = d.text().to_string();
    s.insert(d.caret(), '|');
    s.replace(A, "{A}").replace(B, "{B}")
}

type Op = fn(&mut Draft) -> bool;

fn run(cases: &[(&str, Op, &str)]) {
    for (start, op, want) in cases {
        let mut d = draft(start);
        op(&mut d);
        assert_eq!(show(&d), *want, "from {start:?}");
        let inside = d
            .chips()
            .iter()
            .any(|c| c.start < d.caret() && d.caret() < c.end);
        assert!(!inside, "caret inside a chip after op on {start:?}");
    }
}

#[test]
fn caret_steps_over_chips() {
    run(&[
        ("x {A}| y", Draft::move_left, "x |{A} y"),
        ("x |{A} y", Draft::move_right, "x {A}| y"),
        ("x |{A} y", Draft::move_left, "x| {A} y"),
        ("{A}{B}|", Draft::move_left, "{A}|{B}"),
        ("{A}|{B}", Draft::move_left, "|{A}{B}"),
        ("|{A}", Draft::move_left, "|{A}"),
        ("{A}|", Draft::move_right, "{A}|"),
        ("see {A} now|", Draft::move_word_left, "see {A} |now"),
        ("see {A} |now", Draft::move_word_left, "see |{A} now"),
        ("see |{A} now", Draft::move_word_left, "|see {A} now"),
        ("see|{A}", Draft::move_word_right, "see{A}|"),
        ("|see {A} now", Draft::move_word_right, "see| {A} now"),
        ("see| {A} now", Draft::move_word_right, "see {A}| now"),
        ("ab {A}cd|", Draft::move_word_left, "ab {A}|cd"),
        ("one\n{A} t|wo", Draft::move_line_start, "one\n|{A} two"),
        ("one\n|{A} two", Draft::move_line_end, "one\n{A} two|"),
        ("a|\nb", Draft::move_line_end, "a|\nb"),
    ]);
}

#[test]
fn a_newline_inside_a_label_is_not_a_line_break() {
    let two_lines = "@[one\ntwo](contact-uri:ImEi)";
    let mut d = Draft::default();
    d.set_text(&format!("x {two_lines} y"));
    d.move_line_start();
    assert_eq!(d.caret(), 0);
    d.move_line_end();
    assert_eq!(d.caret(), d.text().len());
    assert!(d.kill_to_line_start());
    assert_eq!(d.text(), "");
}

#[test]
fn a_caret_placed_inside_a_chip_goes_to_its_end() {
    for pos in 3..3 + A.len() {
        let mut d = draft(&format!("ab {A} cd"));
        d.set_caret(pos);
        assert_eq!(d.caret(), if pos == 3 { 3 } else { 3 + A.len() }, "{pos}");
    }
}

#[test]
fn typing_next_to_chips_stays_outside() {
    let typed = |spec: &str, s: &str| {
        let mut d = draft(spec);
        for c in s.chars() {
            d.insert(&c.to_string());
        }
        show(&d)
    };
    assert_eq!(typed("|{A}", "hi "), "hi |{A}");
    assert_eq!(typed("{A}|", "!"), "{A}!|");
    assert_eq!(typed("{A}|{B}", "x"), "{A}x|{B}");
    assert_eq!(
        typed("{A}|", "\u{301}"),
        "{A}\u{301}|",
        "a combining mark stays apart"
    );
    // Completing a mention by typing makes a chip and puts the caret after it.
    assert_eq!(typed("@[Alpha](contact-uri:ImEi|", ")"), "{A}|");
    assert_eq!(
        typed("@[Alpha|](contact-uri:ImEi", ""),
        "@[Alpha|](contact-uri:ImEi"
    );
}

#[test]
fn an_edit_that_would_change_a_chip_beside_it_is_refused() {
    let typed = |spec: &str, s: &str| {
        let mut d = draft(spec);
        let mut refused = Vec::new();
        for c in s.chars() {
            d.insert(&c.to_string());
            refused.push(d.last_edit_refused());
        }
        (show(&d), refused)
    };
    // `@[` right before a chip would read as one longer mention with label `@[Alpha`.
    assert_eq!(typed("|{A}", "@["), ("@|{A}".into(), vec![false, true]));
    assert_eq!(
        typed("x |{A}", "@[ "),
        ("x @ |{A}".into(), vec![false, true, false])
    );
    // A label may hold spaces and `@[`: an unclosed `@[` anywhere before the chip joins it.
    assert_eq!(typed("| {A}", "@["), ("@| {A}".into(), vec![false, true]));
    // A closed one is plain text: pasted whole, the chip stays.
    let mut d = draft("|{A}");
    d.insert("@[x] ");
    assert_eq!(
        (show(&d), d.last_edit_refused()),
        ("@[x] |{A}".into(), false)
    );
    // Deleting the `]` that keeps them apart is refused the same way.
    let mut d = draft("@[x|]{A}");
    d.delete_forward();
    assert_eq!((show(&d), d.last_edit_refused()), ("@[x|]{A}".into(), true));
    d.move_left();
    assert!(!d.last_edit_refused(), "a caret move clears the refusal");
    // Pasting it whole is refused too; the chip's text never changes.
    let mut d = draft("|{A}");
    d.insert("see @[");
    assert_eq!(show(&d), "|{A}");
    assert!(d.last_edit_refused());
}

#[test]
fn pasted_and_recalled_mentions_become_chips() {
    let mut d = Draft::default();
    d.insert(&format!("look {A} and {B}"));
    assert_eq!(d.chips().len(), 2);
    assert_eq!(show(&d), "look {A} and {B}|");
    d.set_text(&format!("{B}\n{A}"));
    assert_eq!(d.chips().len(), 2);
    d.move_left();
    assert_eq!(show(&d), "{B}\n|{A}");
}

#[test]
fn deleting_removes_chips_whole() {
    run(&[
        ("x {A}| y", Draft::delete_backward, "x | y"),
        ("x |{A} y", Draft::delete_forward, "x | y"),
        ("x {A} |y", Draft::delete_backward, "x {A}|y"),
        ("{A}{B}|", Draft::delete_backward, "{A}|"),
        ("|{A}", Draft::delete_backward, "|{A}"),
        ("see {A} now|", Draft::delete_word_backward, "see {A} |"),
        ("see {A} |", Draft::delete_word_backward, "see |"),
        ("see {A}|", Draft::delete_word_backward, "see |"),
        ("|{A} now", Draft::delete_word_forward, "| now"),
        ("a {A} b|", Draft::kill_to_line_start, "|"),
        ("a |{A} b", Draft::kill_to_line_end, "a |"),
        ("one\n|two", Draft::kill_to_line_start, "one|two"),
        ("one|\ntwo", Draft::kill_to_line_end, "one|two"),
    ]);
}

#[test]
fn graphemes_move_and_delete_whole() {
    let family = "👨\u{200d}👩\u{200d}👧";
    let cases: Vec<(String, Op, String)> = vec![
        (
            format!("a{family}|"),
            Draft::move_left,
            format!("a|{family}"),
        ),
        (
            format!("a|{family}"),
            Draft::move_right,
            format!("a{family}|"),
        ),
        (format!("a{family}|"), Draft::delete_backward, "a|".into()),
        ("👍🏽|x".into(), Draft::delete_backward, "|x".into()),
        ("|👍🏽x".into(), Draft::delete_forward, "|x".into()),
        ("e\u{301}|".into(), Draft::move_left, "|e\u{301}".into()),
        ("🇩🇪🇫🇷|".into(), Draft::delete_backward, "🇩🇪|".into()),
        ("❤\u{fe0f}|".into(), Draft::delete_backward, "|".into()),
        ("漢字|".into(), Draft::move_left, "漢|字".into()),
    ];
    for (start, op, want) in cases {
        let mut d = draft(&start);
        op(&mut d);
        assert_eq!(show(&d), want, "from {start:?}");
    }
}

#[test]
fn undo_restores_chips_and_groups_typing() {
    let mut d = draft("x {A}|");
    d.delete_backward();
    assert_eq!(show(&d), "x |");
    assert!(d.undo());
    assert_eq!(show(&d), "x {A}|", "the chip comes back whole");
    for c in "hello".chars() {
        d.insert(&c.to_string());
    }
    d.insert(" ");
    for c in "you".chars() {
        d.insert(&c.to_string());
    }
    assert_eq!(show(&d), "x {A}hello you|");
    d.undo();
    assert_eq!(show(&d), "x {A}hello |", "a word is one step");
    d.undo();
    d.undo();
    assert_eq!(show(&d), "x {A}|");
    d.move_left();
    d.delete_word_backward();
    assert_eq!(show(&d), "|{A}");
    d.undo();
    assert_eq!(show(&d), "x |{A}");
    while d.undo() {}
    assert_eq!(show(&d), "|");
}

#[test]
fn kill_and_yank() {
    let mut d = draft("keep {A} this|");
    d.delete_word_backward();
    d.delete_word_backward();
    assert_eq!(d.yank_text(), format!("{A} "), "the last kill is yanked");
    assert_eq!(show(&d), "keep |");
    d.move_line_start();
    d.yank();
    assert_eq!(show(&d), "{A} |keep ");
    assert_eq!(d.chips().len(), 1);
    assert!(!Draft::default().yank());
}

#[test]
fn replace_never_cuts_a_chip() {
    let mut d = draft("ab {A} cd|");
    d.replace(4..6, "X");
    assert_eq!(show(&d), "ab X| cd", "widened to the whole chip");
    d.replace(0..2, "@[Beta](contact-uri:ImIi) ");
    assert_eq!(d.chips().first(), Some(&(0..25)));
    assert_eq!(d.chips().len(), 1);
}

#[test]
fn no_op_sequence_ever_leaves_the_caret_inside_a_chip() {
    use proptest::prelude::*;
    let ops: Vec<Op> = vec![
        Draft::move_left,
        Draft::move_right,
        Draft::move_word_left,
        Draft::move_word_right,
        Draft::move_line_start,
        Draft::move_line_end,
        Draft::delete_backward,
        Draft::delete_forward,
        Draft::delete_word_backward,
        Draft::delete_word_forward,
        Draft::kill_to_line_start,
        Draft::kill_to_line_end,
        Draft::yank,
        Draft::undo,
    ];
    let inserts = [
        "a", " ", "\n", "]", "(", "@", "[", ")", "\u{301}", "👍", A, B,
    ];
    proptest!(ProptestConfig::with_cases(300), |(steps in proptest::collection::vec((0usize..30, 0usize..12), 0..60))| {
        let mut d = Draft::default();
        d.set_text(&format!("a {A} b\n{B}"));
        for (op, ins) in steps {
            match ops.get(op) {
                Some(f) => { f(&mut d); }
                None => d.insert(inserts[ins % inserts.len()]),
            }
            let caret = d.caret();
            prop_assert!(d.text().is_char_boundary(caret));
            prop_assert!(!d.chips().iter().any(|c| c.start < caret && caret < c.end), "{:?} at {}", d.text(), caret);
        }
    });
}

/// Issue 27 (tried as a new user): `seq 3000` pasted was labelled `[pasted 3 001 lines]`.
#[test]
fn fold_labels_count_lines_as_people_do() {
    let fold = |kind| Fold { range: 0..0, kind };
    let cases: &[(&str, FoldKind, &str)] = &[
        ("a\nb\nc\n", FoldKind::Pasted, "[pasted 3 lines]"),
        ("a\nb\nc", FoldKind::Pasted, "[pasted 3 lines]"),
        ("a\nb\n\n", FoldKind::Pasted, "[pasted 3 lines]"),
        ("abc\n", FoldKind::Pasted, "[pasted 4 chars]"),
        ("abcd", FoldKind::Pasted, "[pasted 4 chars]"),
        ("a\nb", FoldKind::Long, "[2 lines]"),
    ];
    for (text, kind, want) in cases {
        assert_eq!(fold(*kind).label(text), *want, "{text:?}");
    }
    let many = "line\n".repeat(3000);
    assert_eq!(fold(FoldKind::Pasted).label(&many), "[pasted 3 000 lines]");
}
