//! What the model's context window has left for a draft's contexts (docs/references.md: the
//! budget plan): the input budget of the provider's window, less the agent's estimate of the
//! window its next request sends and the draft's, in the estimate the agent trims with.

use super::context_window::{estimate_text_tokens, input_budget};
use super::handle::Agent;
use super::session_log::LogFacts;
use dsh_reference::budget_plan::PlanRoom;

/// The room a draft of `draft` text has in a window of `context_tokens` whose session's next
/// request holds `window_tokens`.
pub fn plan_room(context_tokens: u64, window_tokens: u64, draft: &str) -> PlanRoom {
    PlanRoom {
        input_tokens: input_budget(context_tokens),
        window_tokens,
        draft_tokens: estimate_text_tokens(draft),
    }
}

impl Agent {
    /// The room `draft` has in this session now, for the model the next turn uses.
    pub fn plan_room(&self, draft: &str) -> PlanRoom {
        let tokens = self.shared.provider().context_tokens();
        plan_room(tokens, self.shared.log.window_tokens(tokens), draft)
    }
}

impl LogFacts {
    /// The room `draft` has in the session these facts describe (before its agent runs).
    pub fn plan_room(&self, context_tokens: u64, draft: &str) -> PlanRoom {
        plan_room(context_tokens, self.window_tokens(context_tokens), draft)
    }
}
