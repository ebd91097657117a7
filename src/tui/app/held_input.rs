//! Input that waits its turn. Keys and pastes that come while the `/resume` picker's Enter
//! waits for its filter's answer, or while a session switch (an open, a `/resume X`
//! resolution) is under way, are held here and applied in order once it is done, to what
//! shows then: typed into the picker they would edit a picker about to close (lost), typed
//! into the composer they would be sent to the session being left. Bounded in count and in
//! time: after [`HOLD_AT_MOST`] (a huge log still loading) they are applied as they stand,
//! and Ctrl+C never waits for a switch.

use std::collections::VecDeque;
use std::time::Duration;

use crossterm::event::{Event as TermEvent, KeyCode, KeyEventKind, KeyModifiers};
use tokio::time::Instant;

/// Longest time input is held for a switch before it is applied anyway.
const HOLD_AT_MOST: Duration = Duration::from_secs(2);

/// Most inputs held; later ones are dropped (no typist's burst is this long).
const MAX_HELD: usize = 4096;

/// The inputs held, oldest first, and until when.
#[derive(Debug, Default)]
pub(super) struct HeldInput {
    events: VecDeque<TermEvent>,
    until: Option<Instant>,
}

/// What makes input wait now.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Waits {
    /// A session switch (an open, a `/resume X` resolution) is under way.
    pub(super) switch: bool,
    /// The `/resume` picker's Enter waits for its filter's answer.
    pub(super) picker: bool,
}

impl Waits {
    fn any(self) -> bool {
        self.switch || self.picker
    }
}

impl HeldInput {
    /// When the held inputs are applied even if the switch is still under way.
    pub(super) fn deadline(&self) -> Option<Instant> {
        self.until
    }

    /// Whether `event` is input that can wait its turn (a key press or a paste; the mouse,
    /// a resize or a key release never waits).
    pub(super) fn can_wait(event: &TermEvent) -> bool {
        match event {
            TermEvent::Key(key) => key.kind != KeyEventKind::Release,
            TermEvent::Paste(_) => true,
            _ => false,
        }
    }

    /// `event` back when it is to be handled now, given what makes input wait (Ctrl+C
    /// never waits for a switch); else it is held.
    pub(super) fn hold(&mut self, event: TermEvent, waits: Waits) -> Option<TermEvent> {
        let ctrl_c = matches!(&event, TermEvent::Key(key)
            if key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL));
        if !waits.any() || (ctrl_c && !waits.picker) {
            return Some(event);
        }
        self.push(event);
        None
    }

    /// Whether the held inputs have waited [`HOLD_AT_MOST`] (then they are all applied).
    pub(super) fn overdue(&self) -> bool {
        self.until.is_some_and(|at| Instant::now() >= at)
    }

    /// The oldest held input when it is to be applied now: nothing makes input wait, or
    /// the held inputs are `overdue`.
    pub(super) fn release(&mut self, overdue: bool, waits: Waits) -> Option<TermEvent> {
        if overdue || !waits.any() {
            self.pop()
        } else {
            None
        }
    }

    fn push(&mut self, event: TermEvent) {
        if self.events.is_empty() {
            self.until = Some(Instant::now() + HOLD_AT_MOST);
        }
        if self.events.len() < MAX_HELD {
            self.events.push_back(event);
        }
    }

    fn pop(&mut self) -> Option<TermEvent> {
        let event = self.events.pop_front();
        if self.events.is_empty() {
            self.until = None;
        }
        event
    }
}
