//! Command-line layer (docs/cli.md): argument parsing, configuration, store location, and the
//! scriptable subcommands. The TUI is the default when no subcommand is given.

pub mod candidates;
pub mod config;
pub mod foreign_sources;
pub mod json_escape;
pub mod prepare;
pub mod provider_setup;
pub mod reference_service;
pub mod search;
pub mod send;
pub mod sessions;
pub mod tui_launch;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

/// dsh-refs: a terminal chat client for agent sessions with @-references to other sessions.
#[derive(Debug, Parser)]
#[command(name = "dsh-refs", version, about, long_about = None)]
pub struct Cli {
    /// Session store directory (default: the platform data dir; env `DSH_REFS_STORE`).
    #[arg(long, global = true, env = "DSH_REFS_STORE", value_name = "DIR")]
    pub store: Option<PathBuf>,
    /// Configuration file (default: the platform config dir's dsh-refs/config.toml; env `DSH_REFS_CONFIG`).
    #[arg(long, global = true, env = "DSH_REFS_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Open the TUI on an existing session.
    #[arg(long, value_name = "ID", conflicts_with = "demo")]
    pub resume: Option<String>,
    /// Open the TUI on a temporary copy of the bundled demo store (your store is not touched).
    #[arg(long)]
    pub demo: bool,
    /// Do not list or read Claude Code and Codex CLI sessions (see [sources] in the config).
    #[arg(long, global = true)]
    pub no_foreign_sources: bool,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Scriptable subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List every session, newest first.
    Sessions(SessionsArgs),
    /// List the sessions a target session may reference (what the @ popup offers).
    #[command(
        long_about = "List the sessions TARGET may reference, as the @ popup offers them: \
every other session whose id, cwd or latest title contains Q (case-insensitive), sessions in \
TARGET's cwd first, then sessions without a cwd, then the rest, newest first within each group. \
TARGET's cwd is its header's cwd when the session exists, else the current directory. Each row \
carries the mention to paste into a message. On a session-reference error (for example \
--limit 0) the JSON is {\"error\":{\"code\",\"message\"}} and the exit status is 1."
    )]
    Candidates(CandidatesArgs),
    /// Parse the mentions in TEXT and prepare the snapshot context the model would get.
    #[command(
        long_about = "Parse the @[label](dsh-session:…) mentions and bare dsh-session: \
URIs in TEXT, read each referenced session once, and print the readable content plus the \
bounded, read-only snapshot context that would accompany the message (at most max_references \
sessions, each at most max_reference_bytes of JSON, from [references] in the config file). \
Nothing is written to any session.

Exit status 0 on success. On a session-reference error (a malformed mention, a reference to \
TARGET itself, too many sessions, a session that cannot be read, a budget too small) the exit \
status is 1 and, with --json, stdout holds {\"error\":{\"code\",\"message\"}} where code is \
one of the SESSION_REFERENCE_* codes. Usage errors exit 2."
    )]
    Prepare(PrepareArgs),
    /// Send one message to a session (created if absent) and stream the reply.
    Send(SendArgs),
    /// Find sessions by what was said in them (full-text index).
    #[command(
        long_about = "Find sessions by what was said in them: their conversation (your messages, \
steering, assistant replies, compact summaries; not tool output or reasoning), id, cwd and \
latest title. Every word must occur in the session; \"a quoted phrase\" must occur as written; \
the last word also matches as a prefix unless followed by a space. Case and accents are \
ignored; CJK text is found by any two or more consecutive characters. Sessions are ranked by \
relevance with a boost for recent activity.

The index lives in the platform cache dir (never in the store) and is brought up to date \
first; on a terminal a progress bar shows a long first build. No match prints [] with --json \
and exits 0. An invalid query (for example an unbalanced quote) exits 2."
    )]
    Search(SearchArgs),
}

#[derive(Debug, Args)]
pub struct SearchArgs {
    /// Words, "quoted phrases"; all must occur in a session.
    pub query: String,
    /// At most N sessions.
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub limit: u32,
    /// Machine output: a JSON array of {sessionId, label, cwd?, createdAt, mention, score, snippets: [{role, seq, text}]}.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SessionsArgs {
    /// Machine output: a JSON array of {sessionId, title, cwd, createdAt, origin}.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CandidatesArgs {
    /// The session that would do the referencing.
    #[arg(long, value_name = "TARGET")]
    pub session: String,
    /// Case-insensitive filter on id, cwd and title.
    #[arg(long, value_name = "Q", default_value = "")]
    pub query: String,
    /// At most N results (default: `candidate_limit` from the config).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub limit: Option<i64>,
    /// Machine output: a JSON array of {sessionId, label, cwd?, createdAt, mention, origin}.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct PrepareArgs {
    /// The session that would send the message (a reference to it is refused).
    #[arg(long, value_name = "TARGET")]
    pub session: String,
    /// Machine output: {"content": [blocks], "context": null or {id, source, content}}.
    #[arg(long)]
    pub json: bool,
    /// The message text, with mentions.
    pub text: String,
}

#[derive(Debug, Args)]
pub struct SendArgs {
    /// The session to send to (created if absent).
    #[arg(long, value_name = "ID")]
    pub session: String,
    /// Working directory recorded for a new session (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// The message text, with mentions.
    pub text: String,
}

/// Parse the process arguments and run; returns the process exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("dsh-refs: {message}");
            ExitCode::FAILURE
        }
    }
}

/// What every subcommand needs: the resolved store root and the loaded configuration.
#[derive(Debug, Clone)]
pub struct Context {
    pub store_root: PathBuf,
    pub config: config::Config,
    /// Whether Claude Code and Codex CLI sessions are listed (`--no-foreign-sources` clears it).
    pub foreign_sources: bool,
}

impl Context {
    /// Resolve `--store` / `DSH_REFS_STORE` / platform data dir and load the config file.
    pub fn from_cli(cli: &Cli) -> Result<Context, String> {
        let store_root = match &cli.store {
            Some(dir) => dir.clone(),
            None => default_dirs()?.data_dir().join("store"),
        };
        let (config_path, explicit) = match &cli.config {
            Some(path) => (path.clone(), true),
            None => (default_dirs()?.config_dir().join("config.toml"), false),
        };
        let config = config::Config::load(&config_path, explicit).map_err(|e| e.to_string())?;
        Ok(Context {
            store_root,
            config,
            foreign_sources: !cli.no_foreign_sources,
        })
    }
}

fn default_dirs() -> Result<directories::ProjectDirs, String> {
    directories::ProjectDirs::from("", "", "dsh-refs")
        .ok_or_else(|| "cannot determine a home directory; pass --store and --config".to_owned())
}

fn run(cli: &Cli) -> Result<ExitCode, String> {
    let ctx = Context::from_cli(cli)?;
    match &cli.command {
        Some(Command::Sessions(args)) => sessions::run(&ctx, args),
        Some(Command::Candidates(args)) => candidates::run(&ctx, args),
        Some(Command::Prepare(args)) => prepare::run(&ctx, args),
        Some(Command::Send(args)) => send::run(&ctx, args),
        Some(Command::Search(args)) => search::run(&ctx, args),
        None => tui_launch::run(&ctx, cli),
    }
}
