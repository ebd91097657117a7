//! Recall in the app: the open session's agent gets the search over a turn's referenced
//! sessions (docs/agent.md: tools) once the app knows every session source, with the search
//! index when it runs; Alt+C opens a reply's citation in the read-only view of the cited
//! session, scrolled to the message (docs/tui-app.md: recall and citations).

use std::sync::Arc;

use super::App;
use crate::agent::tools::recall::RecallTool;
use crate::tui::transcript::NoticeKind;
use crate::tui::transcript::chat_view::ChatView;
use dsh_store::SessionQuery;
use term_text::visible_controls_line;

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

/// Where an opened citation points, kept until its session is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Focus {
    pub seq: u64,
    pub label: String,
    /// What a search of the citing turn returned for it (shown when the session no longer
    /// shows the message: a compaction replaced it).
    pub recalled: Option<String>,
}

impl Focus {
    /// Scroll `chat` (the cited session, read) to the message; else say why not.
    pub fn apply(self, chat: &mut ChatView) {
        if chat.focus_seq(self.seq) {
            return;
        }
        let label = visible_controls_line(&self.label).into_owned();
        let text = match self.recalled {
            Some(text) => format!(
                "message #{} of {label} is no longer shown in its session (a compaction \
                 replaced it); the search returned: {}",
                self.seq,
                visible_controls_line(&text)
            ),
            None => format!(
                "{label} has no message #{}: the citation points nowhere",
                self.seq
            ),
        };
        chat.push_notice(NoticeKind::Error, text);
    }
}

impl App {
    /// Alt+C: open the newest citation of the transcript's replies (pressed again, the one
    /// before) in the read-only view of the cited session, scrolled to the message.
    pub(super) fn open_citation(&mut self) {
        let Some(target) = self.chat.transcript_mut().next_citation() else {
            self.chat.push_notice(
                NoticeKind::Info,
                "Alt+C: no reply cites a referenced message yet ([ref K #SEQ] citations come \
                 from searching referenced sessions)",
            );
            return;
        };
        let Some(id) = target.session_id.clone() else {
            self.chat.push_notice(
                NoticeKind::Error,
                format!(
                    "the citation ⟦{} #{}⟧ names a reference its message did not have",
                    visible_controls_line(&target.label),
                    target.seq
                ),
            );
            return;
        };
        let origin = self
            .sources
            .as_ref()
            .map_or(dsh_foreign::Origin::Dsh, |s| s.origin(&id));
        self.open_read_only_at(&id, origin, Some(target.seq));
        if let Some(view) = self.read_only.as_mut() {
            view.focus = Some(Focus {
                seq: target.seq,
                label: target.label,
                recalled: target.recalled.map(|r| r.text),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::transcript::HistoryCell;
    use dsh_store::{Event, EventData, Message, SurfaceOp};

    fn notices(chat: &ChatView) -> Vec<String> {
        chat.transcript()
            .cells()
            .iter()
            .filter_map(|c| match c {
                HistoryCell::Notice { text, .. } => Some(text.clone()),
                _ => None,
            })
            .collect()
    }

    fn focus(seq: u64, recalled: Option<&str>) -> Focus {
        Focus {
            seq,
            label: "Kafka\u{1b}[2J plan".into(),
            recalled: recalled.map(str::to_owned),
        }
    }

    #[test]
    fn a_cited_message_is_focused_else_shown_from_the_search_or_said_missing() {
        let mut chat = ChatView::default();
        chat.transcript_mut().apply(&Event {
            seq: 7,
            time: 0,
            surface_op: Some(SurfaceOp::Append),
            data: EventData::UserMessage(Message::user_text("we chose kafka")),
            source_event_seqs: None,
        });
        focus(7, None).apply(&mut chat);
        assert!(notices(&chat).is_empty());
        // Replaced by a compaction: what the search returned, controls made visible.
        focus(3, Some("we chose\u{7} redis first")).apply(&mut chat);
        // A seq the session never had.
        focus(99, None).apply(&mut chat);
        let said = notices(&chat);
        assert_eq!(said.len(), 2, "{said:?}");
        assert!(
            said[0].contains("message #3 of Kafka")
                && said[0].contains("a compaction replaced it")
                && said[0].contains("redis first"),
            "{said:?}"
        );
        assert!(said[1].contains("has no message #99"), "{said:?}");
        assert!(
            said.iter()
                .all(|s| !s.contains('\u{1b}') && !s.contains('\u{7}'))
        );
    }
}
