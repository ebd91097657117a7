//! Title sources (dsh's session-title package).
//!
//! 0.1.0-rc.8 declares three sources, `fallback`, `provider` and `user` (an explicit rename,
//! which pins the title); folding a title of any other source fails, so the session's title
//! cannot be read while such an event is the newest title. Its title invariant also wants a
//! user rename to cite no message seq and every other title at least one. 6816e8a3d5 reads
//! every source (anything but `fallback` as a provider title).

use super::{Rule, Versions, Violation};
use crate::event::{Event, EventData, TitleSourceKind};

pub(super) fn check(event: &Event, out: &mut Vec<Violation>) {
    let EventData::SessionTitle(title) = &event.data else {
        return;
    };
    let seq = event.seq;
    let kind = &title.source.kind;
    if !matches!(
        kind,
        TitleSourceKind::Fallback | TitleSourceKind::Provider | TitleSourceKind::User
    ) {
        out.push(Violation::new(
            Rule::TitleSource,
            Versions::RELEASE,
            seq,
            format!("title source \"{kind}\" is not fallback, provider or user"),
        ));
    }
    let is_user = matches!(kind, TitleSourceKind::User);
    if title.message_seqs.is_empty() != is_user {
        let want = if is_user {
            "cite no message seqs"
        } else {
            "cite at least one message seq"
        };
        out.push(Violation::new(
            Rule::TitleCitations,
            Versions::RELEASE,
            seq,
            format!(
                "a \"{kind}\" title must {want}; it cites {}",
                title.message_seqs.len()
            ),
        ));
    }
}
