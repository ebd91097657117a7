//! The CLI's error type: every way a subcommand can fail, with a stable code and the exit
//! status it maps to, decided here once (docs/cli.md, exit statuses).

use std::path::PathBuf;

use crate::agent::SubmitError;
use crate::llm::LlmError;
use crate::tui::error::TuiError;
use dsh_reference::ReferenceError;
use dsh_store::{QueryError, StoreError};

use super::config::ConfigError;

/// Why a subcommand (or the TUI launch) failed.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Arguments the parser accepts but that make no sense together (exit 2).
    #[error("{0}")]
    Usage(String),
    #[error("cannot determine a home directory; pass --store and --config")]
    NoHome,
    #[error("{0}")]
    Config(#[from] ConfigError),
    /// An explicit `--store` / `DSH_REFS_STORE` that names no directory, for a read command.
    #[error("no store at {path} (it is created by the first `send`)", path = path.display())]
    NoStore { path: PathBuf },
    #[error("{0}")]
    Reference(#[from] ReferenceError),
    #[error("{0}")]
    Submit(#[from] SubmitError),
    #[error("{0}")]
    Llm(#[from] LlmError),
    #[error("cannot list sessions: {0}")]
    List(#[source] QueryError),
    #[error("cannot open session {id:?}: {source}")]
    OpenSession {
        id: String,
        #[source]
        source: StoreError,
    },
    /// `--continue` in a directory without a dsh session.
    #[error(
        "no dsh session to continue in {cwd}: start one with `dsh-refs`, or open another \
         with `dsh-refs --resume ID` (`dsh-refs sessions` lists them)"
    )]
    NothingToContinue { cwd: String },
    /// A foreign session (Claude Code, Codex CLI) is read-only: it cannot be sent to.
    #[error("cannot open session {id:?}: {reason}")]
    ReadOnlySession { id: String, reason: String },
    /// A turn that ended without completing, with the agent's code.
    #[error("{message}")]
    Turn { code: &'static str, message: String },
    /// Writing to stdout failed; a closed pipe ([`CliError::is_closed_pipe`]) exits quietly.
    #[error("cannot write output: {0}")]
    Output(#[source] std::io::Error),
    #[error("cannot encode the JSON output: {0}")]
    Json(#[from] serde_json::Error),
    /// The full-text index failed, or the query is invalid (a usage error).
    #[error(transparent)]
    Search(#[from] dsh_search::SearchError),
    /// An operating-system step of the launch (runtime, temp dir, current dir, demo copy).
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the demo store is missing (looked in {} and next to the executable)", looked.display())]
    DemoMissing { looked: PathBuf },
    #[error(
        "the chat app needs an interactive terminal; for scripts use the subcommands \
         (see dsh-refs --help)"
    )]
    NotATerminal,
    #[error("{0}")]
    Terminal(#[from] TuiError),
    #[error("{name} must be a whole number of milliseconds, got {value:?}")]
    BadEnv { name: &'static str, value: String },
    /// `check`: the store, or the session it was asked about, cannot be read (exit 3).
    #[error("{0}")]
    StoreUnreadable(String),
    /// The report on stdout already says why; only the exit status is left (`check`
    /// finding problems: 1).
    #[error("exit status {status}")]
    Quiet { status: u8 },
    /// The app ended because of termination signal `number` (SIGTERM, SIGHUP, SIGINT): it
    /// quit as on `/quit`, and the exit status says it was signalled, 128 + the number.
    #[error("ended by signal {number}")]
    Signalled { number: u8 },
}

impl CliError {
    /// An I/O failure of a named launch step.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        CliError::Io {
            what: what.into(),
            source,
        }
    }

    /// Stable code: the layer's own code where it has one, else `CLI_…`.
    pub fn code(&self) -> &'static str {
        match self {
            CliError::Usage(_) => "CLI_USAGE",
            CliError::NoHome => "CLI_NO_HOME",
            CliError::Config(_) => "CLI_CONFIG_INVALID",
            CliError::NoStore { .. } => "CLI_NO_STORE",
            CliError::Reference(e) => e.code.as_str(),
            CliError::Submit(e) => e.code(),
            CliError::Llm(e) => e.code(),
            CliError::List(_) => "CLI_LIST_FAILED",
            CliError::NothingToContinue { .. } => "CLI_NOTHING_TO_CONTINUE",
            CliError::OpenSession { .. } | CliError::ReadOnlySession { .. } => {
                "SESSION_OPEN_FAILED"
            }
            CliError::Turn { code, .. } => code,
            CliError::Output(_) => "CLI_OUTPUT_FAILED",
            CliError::Json(_) => "CLI_JSON_FAILED",
            CliError::Search(e) => e.code().as_str(),
            CliError::Io { .. } => "CLI_IO_FAILED",
            CliError::DemoMissing { .. } => "CLI_DEMO_MISSING",
            CliError::NotATerminal => "CLI_NOT_A_TERMINAL",
            CliError::Terminal(_) => "CLI_TERMINAL_FAILED",
            CliError::BadEnv { .. } => "CLI_BAD_ENV",
            CliError::StoreUnreadable(_) => "CLI_STORE_UNREADABLE",
            CliError::Quiet { .. } => "CLI_PROBLEMS_FOUND",
            CliError::Signalled { .. } => "CLI_TERMINATED",
        }
    }

    /// The message as lines for a terminal: several only for a config file the parser
    /// refused (its message and a quote of the line); anything else is one line, whatever
    /// it holds.
    pub fn lines(&self) -> Vec<String> {
        match self {
            CliError::Config(e) => e.lines(),
            other => vec![other.to_string()],
        }
    }

    /// Whether this is stdout closed by the reader (`| head`): not a failure.
    pub fn is_closed_pipe(&self) -> bool {
        matches!(self, CliError::Output(e) if e.kind() == std::io::ErrorKind::BrokenPipe)
    }

    /// Whether nothing is to be said: the command reported on stdout already.
    pub fn is_quiet(&self) -> bool {
        matches!(self, CliError::Quiet { .. } | CliError::Signalled { .. })
    }

    /// The process exit status: 0 for a closed pipe, 2 for usage errors, 3 for a store
    /// `check` cannot read, else 1.
    pub fn exit_status(&self) -> u8 {
        match self {
            CliError::Output(_) if self.is_closed_pipe() => 0,
            CliError::Quiet { status } => *status,
            CliError::Signalled { number } => number.saturating_add(128),
            CliError::StoreUnreadable(_) => 3,
            CliError::Usage(_) | CliError::Search(dsh_search::SearchError::InvalidQuery { .. }) => {
                2
            }
            _ => 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_statuses_and_codes() {
        let pipe = CliError::Output(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        let full = CliError::Output(std::io::Error::other("disk full"));
        let cases = [
            (pipe, 0, "CLI_OUTPUT_FAILED"),
            (full, 1, "CLI_OUTPUT_FAILED"),
            (CliError::Usage("x".into()), 2, "CLI_USAGE"),
            (CliError::Signalled { number: 15 }, 143, "CLI_TERMINATED"),
            (
                CliError::NoStore {
                    path: "/nope".into(),
                },
                1,
                "CLI_NO_STORE",
            ),
            (
                CliError::Submit(SubmitError::NoReferenceService),
                1,
                "SESSION_REFERENCE_UNAVAILABLE",
            ),
        ];
        for (err, status, code) in cases {
            assert_eq!((err.exit_status(), err.code()), (status, code), "{err}");
        }
    }
}
