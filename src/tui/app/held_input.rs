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

use super::App;

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

impl HeldInput {
    /// When the held inputs are applied even if the switch is still under way.
    pub(super) fn deadline(&self) -> Option<Instant> {
        self.until
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

impl App {
    /// Whether input must wait: the picker's Enter waits for an answer, or a switch runs.
    fn input_waits(&self) -> bool {
        self.switcher.is_pending() || self.picker_waits()
    }

    fn picker_waits(&self) -> bool {
        self.picker.as_ref().is_some_and(|p| p.picker.is_waiting())
    }

    /// `event` back when it is to be handled now; else it is held.
    pub(super) fn hold(&mut self, event: TermEvent) -> Option<TermEvent> {
        let ctrl_c = match &event {
            TermEvent::Key(key) if key.kind != KeyEventKind::Release => {
                key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL)
            }
            TermEvent::Paste(_) => false,
            _ => return Some(event),
        };
        self.release_held();
        if !self.input_waits() || (ctrl_c && !self.picker_waits()) {
            return Some(event);
        }
        self.held.push(event);
        None
    }

    /// Applies the held inputs in order while nothing makes them wait (all of them once
    /// they have waited [`HOLD_AT_MOST`]).
    pub(super) fn release_held(&mut self) {
        let overdue = self.held.deadline().is_some_and(|at| Instant::now() >= at);
        while overdue || !self.input_waits() {
            let Some(event) = self.held.pop() else {
                break;
            };
            self.handle_input(event);
        }
    }
}
