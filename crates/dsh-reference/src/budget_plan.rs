//! One budget for all the references of a message (docs/references.md: the budget plan).
//!
//! The share: `[references] share` of what the model's context window has left — the input
//! budget minus the agent's estimate of the session's current window, the draft and the file
//! context (tokens: bytes / 3 + 4 per message, the estimate the agent trims with) — at 3
//! bytes a token, less the framing of the context message. Each source was retained at
//! `max_reference_bytes`; when they all fit the share together every budget stays
//! `max_reference_bytes`. Otherwise the budgets are lowered: first each source to its
//! minimum (its fixed fields, every checkpoint and its newest exchange, uncut), then what
//! the share holds beyond the minimums is given out in proportion to what each source holds
//! beyond its own. When the minimums alone do not fit, nothing is sent
//! (`SESSION_REFERENCE_BUDGET_EXCEEDED`, naming the plan).

use serde::Serialize;

use super::error::{ErrorCode, ReferenceError};
use super::prompt::prompt_text;

/// Bytes per token of the estimate (a conservative 3, below English's ~4).
pub const BYTES_PER_TOKEN: u64 = 3;
/// Estimated tokens of a message's framing (role, separators).
pub const MESSAGE_OVERHEAD_TOKENS: u64 = 4;
/// Default of `[references] share`.
pub const DEFAULT_SHARE: f64 = 0.5;

/// The estimated tokens of one message of `bytes` bytes of text.
pub fn message_tokens(bytes: u64) -> u64 {
    bytes.div_ceil(BYTES_PER_TOKEN) + MESSAGE_OVERHEAD_TOKENS
}

/// What the model's context window has left for a message's contexts: the input budget
/// less the agent's window and the draft (tokens), as the host estimates them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanRoom {
    /// The input budget of the model's context window (its 7/8).
    pub input_tokens: u64,
    /// The agent's estimate of the session's current window.
    pub window_tokens: u64,
    /// The draft message's estimate.
    pub draft_tokens: u64,
}

impl PlanRoom {
    /// Tokens left after the window, the draft and `file_tokens` (never below zero).
    pub fn left(&self, file_tokens: u64) -> u64 {
        self.input_tokens
            .saturating_sub(self.window_tokens)
            .saturating_sub(self.draft_tokens)
            .saturating_sub(file_tokens)
    }
}

/// What the plan knows of one source, retained at `max_reference_bytes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanInput {
    pub session_id: String,
    pub label: String,
    /// Its serialized size at `max_reference_bytes`.
    pub holds: usize,
    /// Its minimum (at most `holds`).
    pub minimum: usize,
}

impl PlanInput {
    /// What the plan needs of `source`, retained at `max_reference_bytes`.
    pub fn of(source: &super::retention::RetainedSource) -> Self {
        PlanInput {
            session_id: source.data.session_id.clone(),
            label: source.data.label.clone(),
            holds: source.serialized_bytes,
            minimum: source.minimum_bytes,
        }
    }
}

/// One source's line of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedSource {
    pub session_id: String,
    pub label: String,
    /// The budget it is retained with (at most `max_reference_bytes`).
    pub budget_bytes: usize,
    pub minimum_bytes: usize,
    /// Its size at `max_reference_bytes`.
    pub holds_bytes: usize,
    /// Filled in once retained with its budget: messages kept and left out, its estimated
    /// tokens.
    pub retained_messages: usize,
    pub omitted_messages: usize,
    pub tokens: u64,
}

/// The plan of one message's references.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetPlan {
    /// Bytes the sources may take together.
    pub share_bytes: usize,
    pub max_reference_bytes: usize,
    pub sources: Vec<PlannedSource>,
}

impl BudgetPlan {
    /// Whether any budget was lowered below `max_reference_bytes`.
    pub fn lowered(&self) -> bool {
        self.sources
            .iter()
            .any(|s| s.budget_bytes < self.max_reference_bytes)
    }
}

/// The bytes `n` sources may take together: `share` of `tokens_left` at 3 bytes a token,
/// less the context message's framing (heading, warning, tags, array brackets and commas).
pub fn share_bytes(tokens_left: u64, share: f64, sources: usize) -> usize {
    // An f64 holds every token count a model has exactly; the product is floored.
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let tokens = ((tokens_left as f64) * share.clamp(0.0, 1.0)).floor() as u64;
    let framing = prompt_text("[]").len() + sources.saturating_sub(1);
    usize::try_from(tokens.saturating_mul(BYTES_PER_TOKEN))
        .unwrap_or(usize::MAX)
        .saturating_sub(framing)
}

/// Plan the budgets of `inputs` (in the message's order) within `share` bytes.
pub fn plan(
    inputs: &[PlanInput],
    share: usize,
    max_reference_bytes: usize,
) -> Result<BudgetPlan, ReferenceError> {
    let holds: usize = inputs.iter().map(|i| i.holds).sum();
    let minimums: usize = inputs.iter().map(|i| i.minimum.min(i.holds)).sum();
    let line = |i: &PlanInput, budget: usize| PlannedSource {
        session_id: i.session_id.clone(),
        label: i.label.clone(),
        budget_bytes: budget,
        minimum_bytes: i.minimum.min(i.holds),
        holds_bytes: i.holds,
        retained_messages: 0,
        omitted_messages: 0,
        tokens: 0,
    };
    if holds <= share {
        return Ok(BudgetPlan {
            share_bytes: share,
            max_reference_bytes,
            sources: inputs
                .iter()
                .map(|i| line(i, max_reference_bytes))
                .collect(),
        });
    }
    if minimums > share {
        let parts: Vec<String> = inputs
            .iter()
            .map(|i| format!("{} needs {} bytes", i.label, i.minimum.min(i.holds)))
            .collect();
        return Err(ReferenceError::new(
            ErrorCode::BudgetExceeded,
            format!(
                "the referenced sessions do not fit what the model's context window has left: \
                 {} ({minimums} bytes together, each its checkpoints and newest exchange), but \
                 the share left for them is {share} bytes; /compact frees the window, fewer \
                 references or a larger [references] share or [model] context_tokens leave more",
                parts.join(", ")
            ),
        ));
    }
    let left_over = share - minimums;
    let beyond: usize = inputs
        .iter()
        .map(|i| i.holds - i.minimum.min(i.holds))
        .sum();
    let sources = inputs
        .iter()
        .map(|i| {
            let minimum = i.minimum.min(i.holds);
            let extra = proportion(left_over, i.holds - minimum, beyond);
            line(i, (minimum + extra).min(i.holds).min(max_reference_bytes))
        })
        .collect();
    Ok(BudgetPlan {
        share_bytes: share,
        max_reference_bytes,
        sources,
    })
}

/// `spare × part / whole`, floored (0 for an empty whole).
fn proportion(spare: usize, part: usize, whole: usize) -> usize {
    if whole == 0 {
        return 0;
    }
    let n = (spare as u128) * (part as u128) / (whole as u128);
    usize::try_from(n).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn input(label: &str, holds: usize, minimum: usize) -> PlanInput {
        PlanInput {
            session_id: label.to_lowercase(),
            label: label.into(),
            holds,
            minimum,
        }
    }

    fn budgets(plan: &BudgetPlan) -> Vec<usize> {
        plan.sources.iter().map(|s| s.budget_bytes).collect()
    }

    #[test]
    fn budgets_stay_at_the_maximum_while_everything_fits() {
        let inputs = [input("A", 60_000, 2_000), input("B", 30_000, 500)];
        let p = plan(&inputs, 90_000, 65_536).unwrap();
        assert_eq!(budgets(&p), [65_536, 65_536]);
        assert!(!p.lowered());
    }

    #[test]
    fn budgets_drop_to_minimums_then_share_the_rest_in_proportion() {
        // Beyond the minimums: 58 000 and 29 000 (2:1); the share leaves 30 000 spare.
        let inputs = [input("A", 60_000, 2_000), input("B", 30_000, 1_000)];
        let p = plan(&inputs, 33_000, 65_536).unwrap();
        assert_eq!(budgets(&p), [2_000 + 20_000, 1_000 + 10_000]);
        assert!(p.lowered());
        assert!(budgets(&p).iter().sum::<usize>() <= 33_000);
        // Exactly the minimums.
        assert_eq!(
            budgets(&plan(&inputs, 3_000, 65_536).unwrap()),
            [2_000, 1_000]
        );
    }

    #[test]
    fn minimums_that_do_not_fit_are_refused_naming_the_plan() {
        let inputs = [input("Alpha", 60_000, 2_000), input("Beta", 30_000, 1_500)];
        let e = plan(&inputs, 3_000, 65_536).unwrap_err();
        assert_eq!(e.code, ErrorCode::BudgetExceeded);
        for part in [
            "Alpha needs 2000 bytes",
            "Beta needs 1500 bytes",
            "3500 bytes",
            "3000 bytes",
        ] {
            assert!(e.message.contains(part), "{}", e.message);
        }
    }

    #[test]
    fn the_share_is_a_fraction_of_tokens_less_the_framing() {
        let framing = prompt_text("[]").len();
        assert_eq!(share_bytes(1_000, 0.5, 1), 1_500 - framing);
        assert_eq!(share_bytes(1_000, 1.0, 3), 3_000 - framing - 2);
        assert_eq!(share_bytes(10, 0.5, 1), 0);
        let room = PlanRoom {
            input_tokens: 57_344,
            window_tokens: 50_000,
            draft_tokens: 300,
        };
        assert_eq!((room.left(44), room.left(10_000)), (7_000, 0));
        assert_eq!(message_tokens(30), 14);
    }
}
