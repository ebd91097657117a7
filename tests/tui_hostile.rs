//! Hostile text on the terminal (issue 7 item 4): the bottom pane (composer and `@` popup)
//! is drawn through the real crossterm backend into a byte buffer, and those bytes are fed to
//! a VT100 parser. Hostile candidate labels, ids and cwds (escapes, OSC titles and clipboard
//! writes, C1 CSI, BEL) and hostile pasted text must have no effect on the terminal: no
//! bell, no title or clipboard change, no unknown sequence, and the escapes show as text.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use dsh_refs::reference::Candidate;
use dsh_refs::session::untrusted::is_control;
use dsh_refs::tui::bottom_pane::{ActivePopup, BottomPane};
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;
use ratatui::{Terminal, TerminalOptions, Viewport};
use serde_json::Value;

/// Everything a VT100 parser was asked to do besides drawing cells.
#[derive(Debug, Default)]
struct SideEffects(Vec<String>);

impl vt100::Callbacks for SideEffects {
    fn audible_bell(&mut self, _: &mut vt100::Screen) {
        self.0.push("bell".into());
    }
    fn visual_bell(&mut self, _: &mut vt100::Screen) {
        self.0.push("visual bell".into());
    }
    fn resize(&mut self, _: &mut vt100::Screen, size: (u16, u16)) {
        self.0.push(format!("resize {size:?}"));
    }
    fn set_window_icon_name(&mut self, _: &mut vt100::Screen, name: &[u8]) {
        self.0.push(format!("icon name {name:?}"));
    }
    fn set_window_title(&mut self, _: &mut vt100::Screen, title: &[u8]) {
        self.0.push(format!("title {title:?}"));
    }
    fn copy_to_clipboard(&mut self, _: &mut vt100::Screen, _: &[u8], data: &[u8]) {
        self.0.push(format!("clipboard {data:?}"));
    }
    fn paste_from_clipboard(&mut self, _: &mut vt100::Screen, _: &[u8]) {
        self.0.push("paste request".into());
    }
    fn unhandled_char(&mut self, _: &mut vt100::Screen, c: char) {
        self.0.push(format!("unhandled char {c:?}"));
    }
    fn unhandled_control(&mut self, _: &mut vt100::Screen, b: u8) {
        self.0.push(format!("unhandled control {b:#x}"));
    }
    fn unhandled_escape(&mut self, _: &mut vt100::Screen, _: Option<u8>, _: Option<u8>, b: u8) {
        self.0.push(format!("unhandled escape {b:#x}"));
    }
    fn unhandled_osc(&mut self, _: &mut vt100::Screen, params: &[&[u8]]) {
        self.0.push(format!("osc {params:?}"));
    }
}

fn hostile_texts() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hostile/strings.json");
    let v: Value = serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
    v["text"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

const W: u16 = 100;
const H: u16 = 30;

/// A writer whose bytes the test can read back after the terminal owns it.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Draw the pane through crossterm into bytes, as the app would on a real terminal.
fn terminal_bytes(pane: &BottomPane) -> Vec<u8> {
    let capture = Capture::default();
    let backend = CrosstermBackend::new(capture.clone());
    let mut terminal = Terminal::with_options(
        backend,
        TerminalOptions {
            viewport: Viewport::Fixed(Rect::new(0, 0, W, H)),
        },
    )
    .unwrap();
    terminal
        .draw(|frame| {
            let area = frame.area();
            let h = pane.desired_height(area.width).min(area.height);
            let pane_area = Rect {
                y: area.bottom() - h,
                height: h,
                ..area
            };
            if let Some(p) = pane.render(pane_area, frame.buffer_mut()) {
                frame.set_cursor_position(p);
            }
        })
        .unwrap();
    drop(terminal);
    capture.0.lock().unwrap().clone()
}

/// Parse `bytes` on a VT100 screen: (screen text, side effects).
fn on_screen(bytes: &[u8]) -> (String, Vec<String>) {
    let mut parser = vt100::Parser::new_with_callbacks(H, W, 0, SideEffects::default());
    parser.process(bytes);
    let text = parser.screen().contents();
    (text, parser.callbacks().0.clone())
}

fn type_str(pane: &mut BottomPane, text: &str) {
    for c in text.chars() {
        pane.handle_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
    }
}

#[test]
fn hostile_candidates_in_the_popup_have_no_terminal_effect() {
    let texts = hostile_texts();
    let mut pane = BottomPane::new(10);
    type_str(&mut pane, "@");
    let query_id = match pane.active_popup() {
        ActivePopup::Mention(popup) => popup.query_id(),
        ActivePopup::None => panic!("@ opens the popup"),
    };
    let rows: Vec<Candidate> = texts
        .iter()
        .enumerate()
        .map(|(n, t)| Candidate {
            session_id: format!("id\u{1b}[2J{n}\u{9b}H"),
            label: t.clone(),
            cwd: Some(format!("/w/\u{1b}]0;cwd-title\u{7}{n}")),
            created_at: 1_795_167_000_000,
        })
        .collect();
    pane.set_candidates(query_id, Ok(rows));
    // Walk the selection over every row so each one is drawn at some point.
    for n in 0..texts.len() {
        let bytes = terminal_bytes(&pane);
        assert!(
            !bytes.contains(&0x07),
            "row {n}: raw BEL reached the terminal"
        );
        assert!(
            !bytes.windows(2).any(|w| w == b"\x1b]" || w == [0xc2, 0x9b]),
            "row {n}: OSC or C1 CSI reached the terminal"
        );
        let (screen, effects) = on_screen(&bytes);
        assert_eq!(effects, Vec::<String>::new(), "row {n}:\n{screen}");
        // The escapes are shown, not obeyed: the popup is still there, with visible text.
        assert!(screen.contains("\\x1B"), "row {n}:\n{screen}");
        pane.handle_key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE));
    }
}

#[test]
fn hostile_pasted_text_in_the_composer_has_no_terminal_effect() {
    let texts = hostile_texts();
    let mut pane = BottomPane::new(10);
    pane.handle_paste(&texts.join("\n"));
    let bytes = terminal_bytes(&pane);
    let (screen, effects) = on_screen(&bytes);
    assert_eq!(effects, Vec::<String>::new(), "{screen}");
    assert!(!bytes.contains(&0x07));
    assert!(!bytes.windows(2).any(|w| w == b"\x1b]" || w == [0xc2, 0x9b]));
    // The draft keeps the readable text with the controls stripped (nothing else lost).
    let draft = pane.draft();
    assert!(
        !draft.chars().any(|c| c != '\n' && is_control(c)),
        "{draft:?}"
    );
    assert!(draft.starts_with("clear [2J[H screen\n"), "{draft:?}");
    assert!(draft.contains("</referenced-sessions>"));
    assert!(screen.contains("json {\"a\":[1,{\"b\":null}]}"), "{screen}");
    // Restoring a draft with controls (e.g. from history) is just as inert.
    pane.restore_draft(&texts.join(" "));
    let (screen, effects) = on_screen(&terminal_bytes(&pane));
    assert_eq!(effects, Vec::<String>::new(), "{screen}");
}
