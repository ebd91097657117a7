//! Terminal setup and teardown in one place: raw mode, alternate screen, bracketed paste,
//! mouse capture (for the wheel) and keyboard enhancement when the terminal supports it.
//! A panic hook restores the terminal before the panic message is printed; SIGTERM, SIGHUP
//! and SIGINT ask the app to quit and restore the terminal even when it does not
//! ([`watch_termination_signals`]).

use std::io::{self, Stdout, Write};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

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

/// The termination signal that asked the app to quit (0: none yet).
static SIGNALLED: AtomicU8 = AtomicU8::new(0);

/// The termination signal (its number) that ended the app through its normal quit, if one
/// did: the process then exits with 128 + it, as a shell expects of a signalled program.
pub fn termination_signal() -> Option<u8> {
    match SIGNALLED.load(Ordering::SeqCst) {
        0 => None,
        n => Some(n),
    }
}
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

/// How long the app has to quit after a termination signal before the terminal is
/// restored and the process ends without it.
pub const SIGNAL_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// Handle SIGTERM, SIGHUP and SIGINT from now on (call inside the runtime, before
/// [`init`], so no signal finds the terminal in app mode without a handler). The first one
/// calls `quit`, which asks the app to end the way `/quit` does and says whether there was
/// an app to ask; when there was none, or the process is still running [`SIGNAL_GRACE`]
/// later, or a second signal comes, the terminal is restored as on a panic and the process
/// exits with 128 + the signal's number.
pub fn watch_termination_signals(quit: impl Fn() -> bool + Send + Sync + 'static) {
    #[cfg(unix)]
    {
        use std::sync::Arc;
        use tokio::signal::unix::{SignalKind, signal};
        let quit = Arc::new(quit);
        let asked = Arc::new(AtomicBool::new(false));
        for (kind, number) in [
            (SignalKind::terminate(), 15u8),
            (SignalKind::hangup(), 1),
            (SignalKind::interrupt(), 2),
        ] {
            let Ok(mut stream) = signal(kind) else {
                continue;
            };
            let (quit, asked) = (Arc::clone(&quit), Arc::clone(&asked));
            tokio::spawn(async move {
                while stream.recv().await.is_some() {
                    let _ =
                        SIGNALLED.compare_exchange(0, number, Ordering::SeqCst, Ordering::SeqCst);
                    if asked.swap(true, Ordering::SeqCst) || !quit() {
                        restore_and_exit(number);
                    }
                    tokio::spawn(async move {
                        tokio::time::sleep(SIGNAL_GRACE).await;
                        restore_and_exit(number);
                    });
                }
            });
        }
    }
    #[cfg(not(unix))]
    let _ = quit;
}

/// Leave app mode and end the process for signal `number` (the app did not, or could not).
fn restore_and_exit(number: u8) -> ! {
    restore();
    std::process::exit(128 + i32::from(number))
}

/// Restores the terminal when dropped, so every exit path (including `?`) leaves app mode.
pub struct RestoreGuard;

impl Drop for RestoreGuard {
    fn drop(&mut self) {
        restore();
    }
}
