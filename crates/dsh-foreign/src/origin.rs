//! Which tool a listed session comes from, and how each origin is spelled in ids, JSON and
//! on screen. A source names its origin; the composite carries it with every session it
//! lists (`SessionSources::origin`), so no badge is ever guessed from an id's spelling.

use std::sync::Arc;

/// The tool that wrote a session.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Origin {
    /// A session of the dsh store (ours or dsh's).
    Dsh,
    /// A Claude Code session (`~/.claude/projects/<encoded-cwd>/<uuid>.jsonl`).
    ClaudeCode,
    /// A Codex CLI rollout (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`).
    Codex,
    /// A Gemini CLI chat (`~/.gemini/tmp/<project>/chats/session-*.json[l]`) or saved chat
    /// (`~/.gemini/tmp/<project>/checkpoint-<tag>.json`).
    Gemini,
    /// An OpenCode session (`opencode.db` or `storage/` under its XDG data dir).
    OpenCode,
    /// A Qwen Code session (`~/.qwen/projects/<sanitized cwd>/chats/<session-id>.jsonl`).
    Qwen,
    /// A GitHub Copilot CLI session (`~/.copilot/session-state/<session-id>/events.jsonl`).
    Copilot,
    /// An origin this build has no source for, by its JSON spelling: what an `"origin"`
    /// written by another version (an index, a JSON listing) reads back as. Shown by that
    /// name, never read from.
    Other(Arc<str>),
}

impl Origin {
    /// Every foreign origin this build reads, in the order their sources are consulted.
    pub const FOREIGN: [Origin; 6] = [
        Origin::ClaudeCode,
        Origin::Codex,
        Origin::Gemini,
        Origin::OpenCode,
        Origin::Qwen,
        Origin::Copilot,
    ];

    /// The origin a JSON spelling names (the inverse of [`as_str`](Self::as_str)); an
    /// unknown spelling is [`Origin::Other`].
    pub fn parse(name: &str) -> Origin {
        match name {
            "dsh" => Origin::Dsh,
            "claude-code" => Origin::ClaudeCode,
            "codex" => Origin::Codex,
            "gemini" => Origin::Gemini,
            "opencode" => Origin::OpenCode,
            "qwen-code" => Origin::Qwen,
            "copilot" => Origin::Copilot,
            other => Origin::Other(Arc::from(other)),
        }
    }

    /// The JSON spelling of the `"origin"` key: `dsh`, `claude-code`, `codex`, `gemini`,
    /// `opencode`, `qwen-code`, `copilot`.
    pub fn as_str(&self) -> &str {
        match self {
            Origin::Dsh => "dsh",
            Origin::ClaudeCode => "claude-code",
            Origin::Codex => "codex",
            Origin::Gemini => "gemini",
            Origin::OpenCode => "opencode",
            Origin::Qwen => "qwen-code",
            Origin::Copilot => "copilot",
            Origin::Other(name) => name,
        }
    }

    /// Whether this is another tool's (read-only) session.
    pub fn is_foreign(&self) -> bool {
        *self != Origin::Dsh
    }

    /// The short badge shown next to a listed session (`None` for dsh sessions). An
    /// [`Origin::Other`] name is untrusted text: show it through the usual escaping.
    pub fn badge(&self) -> Option<&str> {
        match self {
            Origin::Dsh => None,
            Origin::ClaudeCode => Some("claude"),
            Origin::Codex => Some("codex"),
            Origin::Gemini => Some("gemini"),
            Origin::OpenCode => Some("opencode"),
            Origin::Qwen => Some("qwen"),
            Origin::Copilot => Some("copilot"),
            Origin::Other(name) => Some(name),
        }
    }

    /// The tool's name in messages ("read-only session from Claude Code").
    pub fn tool_name(&self) -> &str {
        match self {
            Origin::Dsh => "dsh",
            Origin::ClaudeCode => "Claude Code",
            Origin::Codex => "Codex CLI",
            Origin::Gemini => "Gemini CLI",
            Origin::OpenCode => "OpenCode",
            Origin::Qwen => "Qwen Code",
            Origin::Copilot => "GitHub Copilot CLI",
            Origin::Other(name) => name,
        }
    }

    /// The refusal for writing to (resuming, sending to) a session of this origin, `None`
    /// for a dsh session.
    pub fn read_only_refusal(&self) -> Option<String> {
        self.is_foreign().then(|| {
            format!(
                "read-only session from {} — reference it with @",
                self.tool_name()
            )
        })
    }

    /// The namespace prefix of a foreign session id this build reads, colon included.
    pub fn id_prefix(&self) -> Option<&'static str> {
        match self {
            Origin::Dsh | Origin::Other(_) => None,
            Origin::ClaudeCode => Some("claude-code:"),
            Origin::Codex => Some("codex:"),
            Origin::Gemini => Some("gemini:"),
            Origin::OpenCode => Some("opencode:"),
            Origin::Qwen => Some("qwen:"),
            Origin::Copilot => Some("copilot:"),
        }
    }

    /// The namespaced id of a foreign session whose own id is `native`.
    pub fn namespaced(&self, native: &str) -> String {
        format!("{}{native}", self.id_prefix().unwrap_or(""))
    }

    /// The source an id's namespace routes to, and the tool's own id; `None` for ids
    /// without a foreign namespace. For routing reads only: a dsh session may carry a
    /// namespaced id, so what a session *is* comes from the listing
    /// (`SessionSources::origin`), never from this.
    pub fn split_id(id: &str) -> Option<(Origin, &str)> {
        Origin::FOREIGN.into_iter().find_map(|origin| {
            let rest = id.strip_prefix(origin.id_prefix()?)?;
            (!rest.is_empty()).then_some((origin, rest))
        })
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
        for origin in Origin::FOREIGN {
            let id = origin.namespaced("n");
            assert_eq!(Origin::split_id(&id), Some((origin, "n")));
        }
        assert_eq!(
            Origin::split_id("gemini:9f0e"),
            Some((Origin::Gemini, "9f0e"))
        );
        assert_eq!(
            Origin::split_id("opencode:ses_1"),
            Some((Origin::OpenCode, "ses_1"))
        );
        assert_eq!(Origin::Other("cursor".into()).namespaced("n"), "n");
    }

    #[test]
    fn spellings_round_trip_and_unknown_ones_are_kept() {
        let known = [
            Origin::Dsh,
            Origin::ClaudeCode,
            Origin::Codex,
            Origin::Gemini,
            Origin::OpenCode,
        ];
        assert_eq!(
            known.clone().map(|o| o.as_str().to_owned()),
            ["dsh", "claude-code", "codex", "gemini", "opencode"]
        );
        assert_eq!(
            known.clone().map(|o| o.badge().map(str::to_owned)),
            [
                None,
                Some("claude".into()),
                Some("codex".into()),
                Some("gemini".into()),
                Some("opencode".into())
            ]
        );
        for origin in known {
            assert_eq!(Origin::parse(origin.as_str()), origin);
        }
        let other = Origin::parse("cursor-cli");
        assert_eq!(other, Origin::Other("cursor-cli".into()));
        assert_eq!(other.as_str(), "cursor-cli");
        assert_eq!(other.badge(), Some("cursor-cli"));
        assert!(other.is_foreign());
        assert_eq!(Origin::ClaudeCode.badge(), Some("claude"));
        assert_eq!(Origin::Dsh.badge(), None);
        assert_eq!(Origin::Dsh.read_only_refusal(), None);
        assert_eq!(
            Origin::ClaudeCode.read_only_refusal().as_deref(),
            Some("read-only session from Claude Code — reference it with @")
        );
    }
}
