//! Terminal setup and teardown in one place: raw mode, alternate screen, bracketed paste,
//! mouse capture (for the wheel) and keyboard enhancement when the terminal supports it.
//! A panic hook restores the terminal before the panic message is printed.

use std::io::{self, Stdout, Write};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
    KeyboardEnhancementFlags, PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
    supports_keyboard_enhancement,
};
use crossterm::{cursor, execute};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

/// The concrete terminal the app draws on.
pub type Tui = Terminal<CrosstermBackend<Stdout>>;

/// Whether keyboard enhancement flags were pushed (they must be popped on restore).
static ENHANCED: AtomicBool = AtomicBool::new(false);
/// Whether the terminal is currently in app mode (restore is idempotent).
static ACTIVE: AtomicBool = AtomicBool::new(false);
static PANIC_HOOK: Once = Once::new();

/// Put the terminal in app mode and return a ratatui terminal on stdout.
pub fn init() -> io::Result<Tui> {
    install_panic_hook();
    enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    let mut out = io::stdout();
    let setup = execute!(
        out,
        EnterAlternateScreen,
        EnableBracketedPaste,
        EnableMouseCapture
    );
    if let Err(e) = setup {
        restore();
        return Err(e);
    }
    // Shift+Enter needs the kitty keyboard protocol; Ctrl+J is the fallback everywhere.
    if matches!(supports_keyboard_enhancement(), Ok(true)) {
        let flags = KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES
            | KeyboardEnhancementFlags::REPORT_EVENT_TYPES
            | KeyboardEnhancementFlags::REPORT_ALTERNATE_KEYS;
        if execute!(out, PushKeyboardEnhancementFlags(flags)).is_ok() {
            ENHANCED.store(true, Ordering::SeqCst);
        }
    }
    match Terminal::new(CrosstermBackend::new(out)) {
        Ok(terminal) => Ok(terminal),
        Err(e) => {
            restore();
            Err(e)
        }
    }
}

/// Leave app mode. Safe to call more than once and from the panic hook; errors are ignored
/// because there is nothing better to do with them while tearing down.
pub fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut out = io::stdout();
    if ENHANCED.swap(false, Ordering::SeqCst) {
        let _ = execute!(out, PopKeyboardEnhancementFlags);
    }
    let _ = execute!(
        out,
        DisableMouseCapture,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        cursor::Show
    );
    let _ = disable_raw_mode();
    let _ = out.flush();
}

/// Chain a panic hook that restores the terminal before the default hook prints.
fn install_panic_hook() {
    PANIC_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}

/// Restores the terminal when dropped, so every exit path (including `?`) leaves app mode.
pub struct RestoreGuard;

impl Drop for RestoreGuard {
    fn drop(&mut self) {
        restore();
    }
}
