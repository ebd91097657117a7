//! The event loop: wait for input, a bus event or the next timer; handle it and everything
//! already queued; draw one frame for the burst.

use std::io;
use std::task::Poll;
use std::time::Duration;

use crossterm::event::Event as TermEvent;
use futures_util::{Stream, StreamExt};
use ratatui::Terminal;
use ratatui::backend::Backend;
use tokio::time::Instant;

use super::App;
use crate::agent::AgentStatus;
use crate::tui::error::TuiError;

/// How often the spinner turns while busy.
const TICK: Duration = Duration::from_millis(100);

impl App {
    /// Run until the user quits or the input stream ends.
    pub async fn run<B, S>(
        &mut self,
        terminal: &mut Terminal<B>,
        mut input: S,
    ) -> Result<(), TuiError>
    where
        B: Backend,
        B::Error: std::fmt::Display,
        S: Stream<Item = io::Result<TermEvent>> + Unpin,
    {
        self.draw(terminal)?;
        while !self.frames.should_quit {
            if !self.step(&mut input).await? {
                break;
            }
            if self.frames.dirty {
                self.draw(terminal)?;
            }
        }
        Ok(())
    }

    /// Wait for the next input, app event or timer, handle it and everything else already
    /// queued. Returns false when the input stream has ended.
    pub async fn step<S>(&mut self, input: &mut S) -> Result<bool, TuiError>
    where
        S: Stream<Item = io::Result<TermEvent>> + Unpin,
    {
        self.schedule_tick();
        // The widgets' timers start at a tick after the events that armed them.
        self.tick_widgets();
        // The spinner tick, the end of "Ctrl+C again to quit" or a widget's timer (an
        // Enter's wait for an answer, older rows on show), whichever comes first.
        let next = [
            self.ticks.next_tick,
            self.ticks.quit_armed_until,
            self.composer.input.next_tick().map(Instant::from_std),
            self.picker
                .as_ref()
                .and_then(|p| p.picker.next_tick())
                .map(Instant::from_std),
            self.held.deadline(),
        ]
        .into_iter()
        .flatten()
        .min();
        let sleep = async move {
            match next {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            event = input.next() => match event {
                Some(Ok(event)) => self.handle_terminal_event(event),
                Some(Err(e)) => return Err(TuiError::Input(e)),
                None => return Ok(false),
            },
            Some(event) = self.rx.recv() => self.handle_app_event(event),
            () = sleep => self.on_tick(),
        }
        // Coalesce: handle everything that is already waiting before the next frame.
        while let Ok(event) = self.rx.try_recv() {
            self.handle_app_event(event);
        }
        // Polled with this task's own waker (not a no-op one): crossterm's EventStream wakes
        // the waker of its last poll, so a pending poll here must still wake this task.
        while let Poll::Ready(next) = futures_util::poll!(input.next()) {
            match next {
                Some(Ok(event)) => self.handle_terminal_event(event),
                Some(Err(e)) => return Err(TuiError::Input(e)),
                None => return Ok(false),
            }
        }
        self.schedule_tick();
        Ok(true)
    }

    pub(super) fn schedule_tick(&mut self) {
        if self.phase().is_busy() {
            if self.ticks.next_tick.is_none() {
                self.ticks.next_tick = Some(Instant::now() + TICK);
            }
        } else {
            self.ticks.next_tick = None;
        }
    }

    /// Runs the `@` popup's and `/resume`'s timers: no answer in time, and the waiting
    /// Enter sends nothing (the popup says so); a slow answer, and the rows of the query
    /// before stop looking like one.
    fn tick_widgets(&mut self) {
        let now = Instant::now().into_std();
        let outcomes = self.composer.input.tick(now);
        self.act_on(outcomes);
        let picked = self
            .picker
            .as_mut()
            .map(|p| p.picker.tick(now))
            .unwrap_or_default();
        if !picked.is_empty() {
            self.act_on_picker(picked);
        }
    }

    fn on_tick(&mut self) {
        let now = Instant::now();
        if self
            .ticks
            .quit_armed_until
            .is_some_and(|until| now >= until)
        {
            self.ticks.quit_armed_until = None;
            self.frames.dirty = true;
        }
        self.tick_widgets();
        // Input held for a switch taking long (or a picker's wait that ran out).
        self.release_held();
        if self.ticks.next_tick.is_some_and(|at| now < at) {
            return;
        }
        self.ticks.next_tick = None;
        if self.phase().is_busy() {
            self.ticks.spinner_frame = self.ticks.spinner_frame.wrapping_add(1);
            self.frames.dirty = true;
        }
    }

    /// Draw one frame; then ask for the previews the frame made visible.
    pub fn draw<B>(&mut self, terminal: &mut Terminal<B>) -> Result<(), TuiError>
    where
        B: Backend,
        B::Error: std::fmt::Display,
    {
        terminal
            .draw(|frame| self.render(frame))
            .map_err(|e| TuiError::Draw(e.to_string()))?;
        self.frames.dirty = false;
        self.frames.drawn += 1;
        // A resize may have made a preview visible: ask for it now it has been placed.
        self.request_preview();
        // The view may have reached the transcript's first line (or come back down).
        self.follow_scrollback();
        Ok(())
    }

    /// Before exit: stop preparation and the running turn, and wait (bounded) until the
    /// agent has logged the turn's end.
    pub async fn shutdown(&mut self) {
        self.submit_flow.abort();
        if self.session.status != AgentStatus::Running {
            return;
        }
        self.session.agent.cancel();
        let wait_idle = async {
            while self.session.status == AgentStatus::Running {
                match self.rx.recv().await {
                    Some(event) => self.handle_app_event(event),
                    None => break,
                }
            }
        };
        // A stuck provider must not keep the terminal hostage.
        let _ = tokio::time::timeout(Duration::from_secs(3), wait_idle).await;
    }
}
