//! A deadline for the answer to a query: an Enter (or Tab) that waits for it (docs/composer.md:
//! Enter never outruns the results), or the rows of the query before that may stay on show
//! meanwhile. Which query, and until when — the event loop sleeps until then and acts if no
//! answer came. Two per picker (the `@` popup, `/resume`).

use std::time::Duration;

use tokio::time::Instant;

/// The wait of one picker's Enter/Tab, if one waits.
#[derive(Debug, Default)]
pub struct AnswerWait(Option<(u64, Instant)>);

impl AnswerWait {
    /// An Enter or Tab waits for the answer to query `id`, at most `wait`.
    pub fn start(&mut self, id: u64, wait: Duration) {
        self.0 = Some((id, Instant::now() + wait));
    }

    /// The wait ended (the answer came, or the picker closed).
    pub fn end(&mut self) {
        self.0 = None;
    }

    /// When the waiting key gives up.
    pub fn deadline(&self) -> Option<Instant> {
        self.0.map(|(_, at)| at)
    }

    /// The query whose wait ran out by now, if one did (the wait ends).
    pub fn expired(&mut self) -> Option<u64> {
        self.0
            .take_if(|(_, until)| Instant::now() >= *until)
            .map(|(id, _)| id)
    }

    /// The query the key waits for.
    pub fn query(&self) -> Option<u64> {
        self.0.map(|(id, _)| id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_wait_expires_at_its_deadline_once() {
        let mut wait = AnswerWait::default();
        assert_eq!(wait.expired(), None);
        wait.start(7, Duration::from_secs(1));
        assert_eq!(wait.query(), Some(7));
        tokio::time::advance(Duration::from_millis(999)).await;
        assert_eq!(wait.expired(), None, "not yet");
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(wait.expired(), Some(7));
        assert_eq!(wait.expired(), None, "once");
        wait.start(8, Duration::from_secs(1));
        wait.end();
        assert_eq!(wait.deadline(), None);
    }
}
