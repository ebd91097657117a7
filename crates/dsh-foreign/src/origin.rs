//! Which tool a listed session comes from, and how each origin is spelled in ids, JSON and
//! on screen.

/// The tool that wrote a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Origin {
    /// A session of the dsh store (ours or dsh's).
    Dsh,
    /// A Claude Code session (`~/.claude/projects/<encoded-cwd>/<uuid>.jsonl`).
    ClaudeCode,
    /// A Codex CLI rollout (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`).
    Codex,
}

impl Origin {
    /// Every foreign origin, in the order their sources are consulted.
    pub const FOREIGN: [Origin; 2] = [Origin::ClaudeCode, Origin::Codex];

    /// The JSON spelling of the `"origin"` key: `dsh`, `claude-code`, `codex`.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Dsh => "dsh",
            Origin::ClaudeCode => "claude-code",
            Origin::Codex => "codex",
        }
    }

    /// The short badge shown next to a listed session (`None` for dsh sessions).
    pub fn badge(self) -> Option<&'static str> {
        match self {
            Origin::Dsh => None,
            Origin::ClaudeCode => Some("claude"),
            Origin::Codex => Some("codex"),
        }
    }

    /// The tool's name in messages ("read-only session from Claude Code").
    pub fn tool_name(self) -> &'static str {
        match self {
            Origin::Dsh => "dsh",
            Origin::ClaudeCode => "Claude Code",
            Origin::Codex => "Codex CLI",
        }
    }

    /// The namespace prefix of a foreign session id, colon included.
    pub fn id_prefix(self) -> Option<&'static str> {
        match self {
            Origin::Dsh => None,
            Origin::ClaudeCode => Some("claude-code:"),
            Origin::Codex => Some("codex:"),
        }
    }

    /// The namespaced id of a foreign session whose own id is `native`.
    pub fn namespaced(self, native: &str) -> String {
        format!("{}{native}", self.id_prefix().unwrap_or(""))
    }

    /// The origin an id's namespace names, and the tool's own id; `None` for ids without a
    /// foreign namespace (which can only be dsh sessions). A dsh session may still carry a
    /// namespaced id: listing decides (a dsh session with the id wins).
    pub fn split_id(id: &str) -> Option<(Origin, &str)> {
        Origin::FOREIGN.into_iter().find_map(|origin| {
            let prefix = origin.id_prefix()?;
            id.strip_prefix(prefix)
                .filter(|rest| !rest.is_empty())
                .map(|rest| (origin, rest))
        })
    }

    /// The origin named by an id's namespace (dsh when it has none). Used where only the id
    /// is at hand, such as a logged snapshot's reference card.
    pub fn of_id(id: &str) -> Origin {
        Origin::split_id(id).map_or(Origin::Dsh, |(origin, _)| origin)
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_split_by_namespace() {
        assert_eq!(
            Origin::split_id("claude-code:abc"),
            Some((Origin::ClaudeCode, "abc"))
        );
        assert_eq!(
            Origin::split_id("codex:0199"),
            Some((Origin::Codex, "0199"))
        );
        assert_eq!(Origin::split_id("codex:"), None);
        assert_eq!(Origin::split_id("claude:abc"), None);
        assert_eq!(Origin::split_id("s-1"), None);
        assert_eq!(Origin::of_id("codex:x"), Origin::Codex);
        assert_eq!(Origin::of_id("x"), Origin::Dsh);
        for origin in Origin::FOREIGN {
            let id = origin.namespaced("n");
            assert_eq!(Origin::split_id(&id), Some((origin, "n")));
        }
    }

    #[test]
    fn spellings() {
        assert_eq!(
            [Origin::Dsh, Origin::ClaudeCode, Origin::Codex].map(Origin::as_str),
            ["dsh", "claude-code", "codex"]
        );
        assert_eq!(Origin::ClaudeCode.badge(), Some("claude"));
        assert_eq!(Origin::Dsh.badge(), None);
    }
}
