//! The mouse: over the `/resume` picker or the `@` popup it moves, selects and picks rows
//! (the widgets' own handling); anywhere else it is the transcript's. A key turns mouse
//! capture off, so the terminal selects text as usual, and on again.

use crossterm::event::{MouseEvent, MouseEventKind};

use super::App;
use crate::tui::transcript::NoticeKind;

/// Lines per mouse-wheel notch.
const WHEEL_LINES: isize = 3;

/// Turns the terminal's mouse reporting on or off.
pub type MouseSwitch = Box<dyn FnMut(bool) -> std::io::Result<()> + Send>;

/// Whether the app asks the terminal for mouse events, and how it tells the terminal.
pub struct MouseCapture {
    on: bool,
    switch: Option<MouseSwitch>,
}

impl Default for MouseCapture {
    /// On (the terminal is set up with it), with no terminal to tell.
    fn default() -> Self {
        MouseCapture {
            on: true,
            switch: None,
        }
    }
}

impl App {
    /// Tells the terminal to start or stop reporting the mouse with `switch` when
    /// [`AppAction::ToggleMouse`](super::keys::AppAction::ToggleMouse) is pressed
    /// (capture is on at start).
    pub fn set_mouse_switch(&mut self, switch: MouseSwitch) {
        self.frames.mouse.switch = Some(switch);
    }

    /// Whether the app has the terminal report the mouse.
    pub fn mouse_captured(&self) -> bool {
        self.frames.mouse.on
    }

    /// Mouse capture off (the terminal selects text again) or back on; a notice says so.
    pub(super) fn toggle_mouse(&mut self) {
        let on = !self.frames.mouse.on;
        if let Some(switch) = self.frames.mouse.switch.as_mut()
            && let Err(e) = switch(on)
        {
            self.chat
                .push_notice(NoticeKind::Error, format!("mouse capture not changed: {e}"));
            return;
        }
        self.frames.mouse.on = on;
        let text = if on {
            "mouse on: the wheel scrolls, a click selects a row, a double-click picks it; Shift+drag selects text (Alt+M: off)"
        } else {
            "mouse off: drag to select and copy text (Alt+M: on)"
        };
        self.chat.push_notice(NoticeKind::Info, text.to_owned());
    }

    /// One mouse event: the picker's when it is open, else the `@` popup's when it is
    /// over it, else the transcript's.
    pub(super) fn handle_mouse(&mut self, mouse: MouseEvent) {
        let now = tokio::time::Instant::now().into_std();
        if let Some(picker) = self.picker.as_mut() {
            // The picker covers the transcript: the mouse is its own or nobody's.
            let outcome = picker.picker.handle_mouse(&mouse, now);
            self.act_on_picker(vec![outcome]);
            self.request_preview();
            return;
        }
        let outcome = if self.read_only.is_some() {
            ratatui_mention::Outcome::Ignored
        } else {
            self.composer.input.handle_mouse(&mouse, now)
        };
        if outcome.is_consumed() {
            self.handle_outcome(outcome);
            self.request_preview();
            self.look_up_chip_cwd();
            return;
        }
        self.transcript_mouse(mouse);
    }

    /// A mouse event the pickers did not take: the wheel scrolls the transcript on show
    /// (a read-only session's while one is shown).
    pub(super) fn transcript_mouse(&mut self, mouse: MouseEvent) {
        let chat = match self.read_only.as_mut() {
            Some(view) => &mut view.chat,
            None => &mut self.chat,
        };
        match mouse.kind {
            MouseEventKind::ScrollUp => {
                chat.scroll_by(WHEEL_LINES);
                self.frames.dirty = true;
            }
            MouseEventKind::ScrollDown => {
                chat.scroll_by(-WHEEL_LINES);
                self.frames.dirty = true;
            }
            _ => {}
        }
    }
}
