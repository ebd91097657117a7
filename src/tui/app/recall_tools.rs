//! The open session's agent gets the search over a turn's referenced sessions
//! (docs/agent.md: tools) once the app knows every session source, with the search index
//! when it runs.

use std::sync::Arc;

use super::App;
use crate::agent::tools::recall::RecallTool;
use dsh_store::SessionQuery;

impl App {
    /// Offer `search_references` to the open session's agent (again after the sources or
    /// the index changed, and for every session opened).
    pub(super) fn offer_recall(&self) {
        let Some(sources) = &self.sources else {
            return;
        };
        let redact = self
            .refs
            .as_ref()
            .is_none_or(|refs| refs.config().redact_secrets);
        let query: Arc<dyn SessionQuery> = Arc::clone(sources) as Arc<dyn SessionQuery>;
        let mut tool = RecallTool::new(query, self.store.clone(), redact);
        if let Some(indexing) = &self.search.indexing {
            tool = tool.with_index(Arc::new(indexing.index_source()));
        }
        self.session.agent.set_tools(Arc::new(tool));
    }
}
