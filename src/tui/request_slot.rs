//! One reusable request slot per concern (after gitui's `AsyncDiff`): the request running off
//! the UI thread, its cancel handle, and the rule for answers — written once, used by the
//! candidate listing, the conversation search of each picker, the size estimates of the
//! previews and the opening of a session. A new request either cancels the running one
//! ([`Policy::Replace`]) or waits behind it, only the newest waiting
//! ([`Policy::OneAtATime`]); an answer is taken only for the ticket that is current.

use tokio_util::sync::CancellationToken;

/// A cancel handle a background task watches.
pub trait CancelHandle: Clone + Default {
    /// Asks the task holding a clone of this handle to stop.
    fn cancel(&self);
    /// Whether it was asked to stop.
    fn is_cancelled(&self) -> bool;
}

impl CancelHandle for CancellationToken {
    fn cancel(&self) {
        CancellationToken::cancel(self);
    }
    fn is_cancelled(&self) -> bool {
        CancellationToken::is_cancelled(self)
    }
}

impl CancelHandle for dsh_search::Cancel {
    fn cancel(&self) {
        dsh_search::Cancel::cancel(self);
    }
    fn is_cancelled(&self) -> bool {
        dsh_search::Cancel::is_cancelled(self)
    }
}

/// What a new request does to the one running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Cancel it: its answer is stale from now on.
    Replace,
    /// Let it finish; the newest request waits and starts when it is answered (moving fast
    /// never queues up work).
    OneAtATime,
}

/// The request started now: its ticket (sent back with the answer) and its cancel handle.
#[derive(Debug, Clone)]
pub struct Ticket<C> {
    pub id: u64,
    pub cancel: C,
}

/// The slot: at most one request running, and in [`Policy::OneAtATime`] at most one
/// waiting.
#[derive(Debug)]
pub struct RequestSlot<R, C: CancelHandle = CancellationToken> {
    policy: Policy,
    last_id: u64,
    running: Option<(u64, C, R)>,
    waiting: Option<R>,
}

impl<R: Clone, C: CancelHandle> RequestSlot<R, C> {
    /// An empty slot.
    pub fn new(policy: Policy) -> Self {
        RequestSlot {
            policy,
            last_id: 0,
            running: None,
            waiting: None,
        }
    }

    /// Asks for `request`: the ticket to start it with now, or `None` when it waits behind
    /// the running one.
    pub fn request(&mut self, request: R) -> Option<Ticket<C>> {
        if self.running.is_some() && self.policy == Policy::OneAtATime {
            self.waiting = Some(request);
            return None;
        }
        self.cancel();
        Some(self.start(request))
    }

    /// An answer for ticket `id` arrived: whether it is the current one's (else it is stale
    /// and dropped), and the request to start next, if one waited.
    pub fn finish(&mut self, id: u64) -> (Option<R>, Option<(Ticket<C>, R)>) {
        if self
            .running
            .as_ref()
            .is_none_or(|(running, _, _)| *running != id)
        {
            return (None, None);
        }
        let answered = self.running.take().map(|(_, _, request)| request);
        let next = self.waiting.take().map(|request| {
            let ticket = self.start(request.clone());
            (ticket, request)
        });
        (answered, next)
    }

    /// Cancels the running request and forgets the waiting one.
    pub fn cancel(&mut self) {
        if let Some((_, cancel, _)) = self.running.take() {
            cancel.cancel();
        }
        self.waiting = None;
    }

    /// Whether ticket `id` is the running request's.
    pub fn is_current(&self, id: u64) -> bool {
        self.running
            .as_ref()
            .is_some_and(|(running, _, _)| *running == id)
    }

    /// The running request's ticket id, if one runs.
    pub fn running_ticket(&self) -> Option<u64> {
        self.running.as_ref().map(|(id, _, _)| *id)
    }

    /// The request running, if any.
    pub fn running(&self) -> Option<&R> {
        self.running.as_ref().map(|(_, _, request)| request)
    }

    /// The running request's cancel handle (tests watch it).
    pub fn running_cancel(&self) -> Option<&C> {
        self.running.as_ref().map(|(_, cancel, _)| cancel)
    }

    fn start(&mut self, request: R) -> Ticket<C> {
        self.last_id += 1;
        let cancel = C::default();
        self.running = Some((self.last_id, cancel.clone(), request));
        Ticket {
            id: self.last_id,
            cancel,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn replace_cancels_the_running_request_and_drops_its_answer() {
        let mut slot: RequestSlot<&str> = RequestSlot::new(Policy::Replace);
        let first = slot.request("a").expect("starts at once");
        let second = slot.request("ab").expect("starts at once");
        assert!(first.cancel.is_cancelled(), "the previous one is cancelled");
        assert!(!second.cancel.is_cancelled());
        assert_eq!(slot.finish(first.id).0, None, "stale");
        assert_eq!(slot.running(), Some(&"ab"));
        assert_eq!(slot.finish(second.id).0, Some("ab"));
        assert_eq!(slot.finish(second.id).0, None, "answered once");
        let third = slot.request("x").expect("starts");
        slot.cancel();
        assert!(third.cancel.is_cancelled());
        assert_eq!(slot.finish(third.id).0, None, "cancelled: dropped");
    }

    #[test]
    fn one_at_a_time_keeps_only_the_newest_waiting() {
        let mut slot: RequestSlot<u32, dsh_search::Cancel> = RequestSlot::new(Policy::OneAtATime);
        let first = slot.request(1).expect("starts at once");
        assert!(slot.request(2).is_none(), "waits");
        assert!(slot.request(3).is_none(), "replaces the waiting one");
        assert!(!first.cancel.is_cancelled(), "the running one finishes");
        let (answered, next) = slot.finish(first.id);
        assert_eq!(answered, Some(1));
        let (ticket, request) = next.expect("the newest waiting starts");
        assert_eq!(request, 3);
        let (answered, next) = slot.finish(ticket.id);
        assert_eq!(answered, Some(3));
        assert!(next.is_none());
        assert!(slot.running().is_none());
    }
}
