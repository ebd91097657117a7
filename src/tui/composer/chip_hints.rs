//! What the hint line says about the mention at the caret: ` @label · id · cwd`, the cwd as
//! a listing showed it, or looked up once off the UI thread for a mention no listing has
//! shown (a recalled or pasted one).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::tui::event::{AppEvent, AppEventSender};
use dsh_reference::{Candidate, parse_text};
use dsh_store::SessionQuery;
use ratatui_mention::{Mention, MentionSyntax};

use super::dsh_syntax::DshSyntax;
use term_text::visible_controls_line;

/// Most session cwds remembered for hints (the map starts over when full).
const MAX_KNOWN_CWDS: usize = 4096;

/// A looked-up working directory.
#[derive(Debug)]
pub enum ChipEvent {
    /// The working directory of a session a chip names, looked up because no listing had
    /// shown it.
    Cwd {
        session_id: String,
        cwd: Option<String>,
    },
}

/// Working directories of sessions seen in listings or looked up.
#[derive(Debug, Default)]
pub struct ChipHints {
    known_cwds: HashMap<String, Option<String>>,
    /// Sessions whose cwd was looked up (each at most once).
    lookups: HashSet<String>,
}

impl ChipHints {
    /// Remembers the cwds of listed `rows`.
    pub fn remember(&mut self, rows: &[Candidate]) {
        if self.known_cwds.len() + rows.len() > MAX_KNOWN_CWDS {
            self.known_cwds.clear();
        }
        for row in rows.iter().take(MAX_KNOWN_CWDS) {
            self.known_cwds
                .insert(row.session_id.clone(), row.cwd.clone());
        }
    }

    /// Takes a looked-up cwd.
    pub fn on_event(&mut self, event: ChipEvent) {
        match event {
            ChipEvent::Cwd { session_id, cwd } => {
                self.known_cwds.insert(session_id, cwd);
            }
        }
    }

    /// Whether the cwd of `session_id` is known.
    pub fn knows(&self, session_id: &str) -> bool {
        self.known_cwds.contains_key(session_id)
    }

    /// Looks up, off the UI thread, the cwd of the session `mention` names when no listing
    /// has shown it yet (once per session).
    pub fn look_up(
        &mut self,
        mention: &Mention,
        sessions: Arc<dyn SessionQuery>,
        tx: &AppEventSender,
    ) {
        let Some(id) = session_of(mention) else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if self.known_cwds.contains_key(&id) || !self.lookups.insert(id.clone()) {
            return;
        }
        let tx = tx.clone();
        runtime.spawn_blocking(move || {
            let cwd = sessions
                .list_sessions()
                .ok()
                .and_then(|list| list.iter().find(|h| h.id == id).map(|h| h.cwd.clone()));
            if let Some(cwd) = cwd {
                tx.send(AppEvent::Chip(ChipEvent::Cwd {
                    session_id: id,
                    cwd,
                }));
            }
        });
    }

    /// ` @label · id · cwd` for `mention` (the cwd when known), untrusted text made visible.
    pub fn hint(&self, mention: &Mention) -> Option<String> {
        let parsed = parse_text(&DshSyntax.write(mention)).ok()?;
        let reference = parsed.references.first()?;
        let label = reference.label.as_deref().unwrap_or(&reference.session_id);
        let mut hint = format!(
            " @{} · {}",
            visible_controls_line(label),
            visible_controls_line(&reference.session_id)
        );
        if let Some(Some(cwd)) = self.known_cwds.get(&reference.session_id) {
            hint.push_str(" · ");
            hint.push_str(&visible_controls_line(cwd));
        }
        Some(hint)
    }
}

/// The session a mention refers to.
fn session_of(mention: &Mention) -> Option<String> {
    parse_text(&DshSyntax.write(mention))
        .ok()?
        .references
        .into_iter()
        .next()
        .map(|r| r.session_id)
}
