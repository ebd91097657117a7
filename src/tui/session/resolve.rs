//! What `--resume X` and `/resume X` name (docs/cli.md, docs/tui-app.md): the session whose
//! id is X, else the one session whose id starts with X or whose title is exactly X; when
//! none or several do, the `/resume` picker opens filtered by X.

use std::collections::BTreeSet;
use std::time::Duration;

use dsh_store::{QueryError, SessionQuery};

/// How old a cached title may be when X is compared with the titles (one listing's worth).
const TITLE_MAX_AGE: Duration = Duration::from_secs(1);

/// Where resuming X leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResumeTarget {
    /// The one session X names.
    Open(String),
    /// The picker, its filter holding X (empty: no X).
    Pick(String),
}

/// Resolves `wanted` over every session `sessions` lists: an exact id first, then the ids it
/// is a prefix of and the sessions titled exactly `wanted` — opened when they are one
/// session, else the picker filtered by `wanted` (also for nothing typed).
pub fn resolve(sessions: &dyn SessionQuery, wanted: &str) -> Result<ResumeTarget, QueryError> {
    let pick = || Ok(ResumeTarget::Pick(wanted.to_owned()));
    if wanted.trim().is_empty() {
        return pick();
    }
    let listed = sessions.list_sessions()?;
    if listed.iter().any(|h| h.id == wanted) {
        return Ok(ResumeTarget::Open(wanted.to_owned()));
    }
    let mut named: BTreeSet<&str> = listed
        .iter()
        .filter(|h| h.id.starts_with(wanted))
        .map(|h| h.id.as_str())
        .collect();
    sessions.with_recent_titles(TITLE_MAX_AGE, &mut |read_title| {
        for header in listed.iter() {
            // Two names are enough to know the picker opens.
            if named.len() > 1 {
                return;
            }
            if let Ok(Some(title)) = read_title(&header.id)
                && *title == *wanted
            {
                named.insert(&header.id);
            }
        }
    });
    let mut named = named.into_iter();
    match (named.next(), named.next()) {
        (Some(only), None) => Ok(ResumeTarget::Open(only.to_owned())),
        _ => pick(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_store::event::{TitleData, TitleSource};
    use dsh_store::{EventData, NewEvent, SessionHeader, SessionStore, layout};

    fn session(store: &SessionStore, id: &str, title: Option<&str>) {
        let header = SessionHeader::new(id, 1, Some("/w".into()));
        let mut writer = store.open_writer(id, Some(header)).unwrap();
        let mut events = vec![NewEvent::appended(EventData::UserMessage(
            dsh_store::Message::user_text("hi"),
        ))];
        if let Some(title) = title {
            events.push(NewEvent::plain(EventData::SessionTitle(TitleData {
                title: title.into(),
                message_seqs: vec![],
                source: TitleSource {
                    kind: "user".into(),
                    extra: serde_json::Map::new(),
                },
                extra: serde_json::Map::new(),
            })));
        }
        writer.append(layout::in_turns(1, events)).unwrap();
    }

    #[test]
    fn an_id_a_unique_prefix_or_an_exact_title_opens_anything_else_picks() {
        let tmp = tempfile::tempdir().unwrap();
        let store = SessionStore::new(tmp.path());
        session(&store, "s-1", Some("Fix login"));
        session(&store, "s-10", None);
        session(&store, "s-20", Some("Release notes"));
        session(&store, "s-21", Some("release notes"));
        session(&store, "x-9", Some("Fix login again"));
        let open = |id: &str| ResumeTarget::Open(id.into());
        let pick = |q: &str| ResumeTarget::Pick(q.into());
        let cases = [
            ("", pick("")),
            ("  ", pick("  ")),
            // An exact id wins over the longer ids it starts.
            ("s-1", open("s-1")),
            ("s-10", open("s-10")),
            ("x", open("x-9")),
            ("s-2", pick("s-2")),
            ("s", pick("s")),
            // Titles: exactly, case and all.
            ("Fix login", open("s-1")),
            ("Release notes", open("s-20")),
            ("release notes", open("s-21")),
            ("Fix", pick("Fix")),
            ("nothing like it", pick("nothing like it")),
        ];
        for (wanted, want) in cases {
            assert_eq!(resolve(&store, wanted).unwrap(), want, "{wanted:?}");
        }
        // The prefix of one id and the exact title of another: two sessions.
        session(&store, "y-1", Some("x"));
        assert_eq!(resolve(&store, "x").unwrap(), pick("x"));
    }
}
