//! `prepare` with the budget plan (docs/references.md: prepare, the budget plan): every
//! source read and retained at `max_reference_bytes` in parallel with the files; then, given
//! the room the host measured, the sources planned into their share and those whose budget
//! was lowered retained again with it (the same retention, a smaller budget).

use std::sync::Arc;

use futures_util::future::try_join_all;
use tokio_util::sync::CancellationToken;

use super::budget_plan::{self, BudgetPlan, PlanInput, PlanRoom};
use super::error::ReferenceError;
use super::file_context::file_context_message;
use super::file_mention::FileMention;
use super::parse::Mentioned;
use super::prompt::context_message;
use super::retention::RetainedSource;
use super::service::{
    AgentRef, Normalized, Prepared, SessionReferences, read_and_retain, read_files,
};
use dsh_store::{ContentBlock, Message};

impl SessionReferences {
    /// [`prepare_mentions`](Self::prepare_mentions) with the budget plan: given `room`
    /// (what the model's context window has left, measured by the host), the sessions share
    /// `[references] share` of it after the file context, each within
    /// `max_reference_bytes`; sources that do not fit together are lowered, and refused
    /// (`BUDGET_EXCEEDED`, naming the plan) when even their minimums do not fit. Without a
    /// room every source keeps `max_reference_bytes` and no plan is made.
    pub async fn prepare_planned(
        &self,
        agent: &AgentRef,
        content: &[ContentBlock],
        mentions: &[Mentioned],
        files: &[FileMention],
        room: Option<PlanRoom>,
        cancel: &CancellationToken,
    ) -> Result<Prepared, ReferenceError> {
        let content = content.to_vec();
        let sources = self.normalize(agent, mentions)?;
        if sources.is_empty() && files.is_empty() {
            return Ok(Prepared {
                content,
                context: None,
                file_context: None,
                plan: None,
            });
        }
        if cancel.is_cancelled() {
            return Err(ReferenceError::cancelled());
        }
        let config = self.config;
        let file_read = {
            let files = files.to_vec();
            let cwd = agent.cwd.clone();
            let task =
                tokio::task::spawn_blocking(move || read_files(cwd.as_deref(), &files, &config));
            async move { task.await.map_err(|e| ReferenceError::task_failed(&e))? }
        };
        let (retained, attached) = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(ReferenceError::cancelled()),
            all = futures_util::future::try_join(
                self.retain_all(&sources, None, cancel),
                file_read,
            ) => all?,
        };
        let file_context = (!attached.is_empty()).then(|| file_context_message(&attached));
        let (retained, plan) = match room {
            Some(room) if !retained.is_empty() => {
                let file_tokens = file_context.as_ref().map_or(0, message_tokens);
                let share = budget_plan::share_bytes(
                    room.left(file_tokens),
                    config.share(),
                    retained.len(),
                );
                self.planned(&sources, retained, share, cancel).await?
            }
            _ => (retained, None),
        };
        Ok(Prepared {
            content,
            context: (!retained.is_empty()).then(|| context_message(&retained)),
            file_context,
            plan,
        })
    }

    /// The plan `mentions` (with `files`) would get in `room`, for a preview: `None` when
    /// every session keeps `max_reference_bytes` without reading any (no files, and `n`
    /// sources at `max_reference_bytes` fit the share together, so the plan would lower
    /// none), else the plan [`prepare_planned`](Self::prepare_planned) makes, refused as it
    /// refuses.
    pub async fn plan_for(
        &self,
        agent: &AgentRef,
        mentions: &[Mentioned],
        files: &[FileMention],
        room: PlanRoom,
        cancel: &CancellationToken,
    ) -> Result<Option<BudgetPlan>, ReferenceError> {
        let n = self.normalize(agent, mentions)?.len();
        let share = budget_plan::share_bytes(room.left(0), self.config.share(), n);
        if n == 0 || files.is_empty() && n.saturating_mul(self.config.max_reference_bytes) <= share
        {
            return Ok(None);
        }
        let prepared = self
            .prepare_planned(agent, &[], mentions, files, Some(room), cancel)
            .await?;
        Ok(prepared.plan)
    }

    /// Read and retain every source (in parallel), each within its budget: `budgets[i]`
    /// when given, else `max_reference_bytes`.
    async fn retain_all(
        &self,
        sources: &[Normalized],
        budgets: Option<&[usize]>,
        cancel: &CancellationToken,
    ) -> Result<Vec<RetainedSource>, ReferenceError> {
        let reads = sources.iter().enumerate().map(|(i, source)| {
            let store = Arc::clone(&self.query);
            let token = cancel.clone();
            let mut config = self.config;
            if let Some(b) = budgets.and_then(|b| b.get(i)) {
                config.max_reference_bytes = *b;
            }
            let source = source.clone();
            let task = tokio::task::spawn_blocking(move || {
                read_and_retain(store.as_ref(), source, &config, &token)
            });
            async move { task.await.map_err(|e| ReferenceError::task_failed(&e))? }
        });
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(ReferenceError::cancelled()),
            all = try_join_all(reads) => all,
        }
    }

    /// Plan `retained` (read at `max_reference_bytes`) into `share` bytes and retain again
    /// the sources whose budget the plan lowered.
    async fn planned(
        &self,
        sources: &[Normalized],
        retained: Vec<RetainedSource>,
        share: usize,
        cancel: &CancellationToken,
    ) -> Result<(Vec<RetainedSource>, Option<BudgetPlan>), ReferenceError> {
        let max = self.config.max_reference_bytes;
        let inputs: Vec<PlanInput> = retained.iter().map(PlanInput::of).collect();
        let mut plan = budget_plan::plan(&inputs, share, max)?;
        let budgets: Vec<usize> = plan.sources.iter().map(|s| s.budget_bytes).collect();
        let lowered: Vec<usize> = (0..retained.len())
            .filter(|&i| {
                budgets
                    .get(i)
                    .zip(retained.get(i))
                    .is_some_and(|(b, r)| *b < r.serialized_bytes)
            })
            .collect();
        let mut retained = retained;
        if !lowered.is_empty() {
            let again: Vec<Normalized> = lowered
                .iter()
                .filter_map(|&i| sources.get(i).cloned())
                .collect();
            let again_budgets: Vec<usize> = lowered
                .iter()
                .filter_map(|&i| budgets.get(i).copied())
                .collect();
            let fresh = self
                .retain_all(&again, Some(&again_budgets), cancel)
                .await?;
            for ((i, mut r), budget) in lowered.into_iter().zip(fresh).zip(again_budgets) {
                r.planned_bytes = Some(budget);
                if let Some(slot) = retained.get_mut(i) {
                    *slot = r;
                }
            }
        }
        for (line, r) in plan.sources.iter_mut().zip(&retained) {
            line.retained_messages = r.stats.retained_messages;
            line.omitted_messages = r.stats.omitted_messages;
            line.tokens = budget_plan::message_tokens(r.serialized_bytes as u64);
        }
        Ok((retained, Some(plan)))
    }
}

/// The estimated tokens of a context message.
fn message_tokens(m: &Message) -> u64 {
    budget_plan::message_tokens(m.joined_text().len() as u64)
}
