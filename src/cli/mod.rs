//! Command-line layer (docs/cli.md): argument parsing, configuration, store location, and the
//! scriptable subcommands. The TUI is the default when no subcommand is given.

pub mod candidates;
pub mod check;
pub mod config;
pub mod continue_session;
pub mod demo_store;
pub mod error;
pub mod foreign_sources;
pub mod json_escape;
pub mod output;
pub mod prepare;
pub mod provider_setup;
pub mod reference_service;
pub mod search;
pub mod send;
pub mod sessions;
pub mod sources_report;
pub mod tui_launch;
pub mod usage;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

pub use error::CliError;

/// Help headings: where the options that every subcommand takes are listed.
const STORE_HEADING: &str = "Store and configuration (any subcommand)";
/// Help heading of the options that only the chat app reads.
const APP_HEADING: &str = "Chat app";

/// dsh-refs: a terminal chat client for agent sessions with @-references to other sessions.
#[derive(Debug, Parser)]
#[command(
    name = "dsh-refs",
    version,
    about,
    long_about = None,
    max_term_width = 100,
    after_help = "Without a subcommand dsh-refs opens the chat app on a new session in the \
current directory. Every subcommand prints JSON with --json."
)]
pub struct Cli {
    /// Session store directory; an explicit one must exist for the read commands (`send`
    /// creates it). Default: the platform data dir.
    #[arg(
        long,
        global = true,
        env = "DSH_REFS_STORE",
        hide_env_values = true,
        value_name = "DIR",
        help_heading = STORE_HEADING
    )]
    pub store: Option<PathBuf>,
    /// Configuration file. Default: the platform config dir's dsh-refs/config.toml.
    #[arg(
        long,
        global = true,
        env = "DSH_REFS_CONFIG",
        hide_env_values = true,
        value_name = "FILE",
        help_heading = STORE_HEADING
    )]
    pub config: Option<PathBuf>,
    /// Run on a temporary copy of the bundled demo store, removed afterwards (your store is
    /// not touched); cannot be combined with --store (a store set in the environment is ignored).
    #[arg(long, global = true, help_heading = STORE_HEADING)]
    pub demo: bool,
    /// Do not list or read other agents' sessions: Claude Code, Codex CLI, Gemini CLI,
    /// OpenCode, Qwen Code, GitHub Copilot CLI (see [sources] in the config).
    #[arg(long, global = true, help_heading = STORE_HEADING)]
    pub no_foreign_sources: bool,
    /// Open the chat app on an existing session: ID, a unique start of one, or an exact
    /// title; without ID, or when ID names no single session, the session picker (filtered by
    /// ID). A session open in another window is shown read-only.
    #[arg(
        long,
        value_name = "ID",
        num_args = 0..=1,
        default_missing_value = "",
        conflicts_with = "demo",
        help_heading = APP_HEADING
    )]
    pub resume: Option<String>,
    /// Open the chat app on the dsh session of the current directory that was active last
    /// and is not open in another window (when every one is, the last one read-only); other
    /// agents' sessions are read-only and never continued.
    #[arg(
        long = "continue",
        conflicts_with_all = ["resume", "demo"],
        help_heading = APP_HEADING
    )]
    pub continue_last: bool,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Scriptable subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List every session, newest first.
    Sessions(SessionsArgs),
    /// List the sessions a target session may reference, as dsh's candidate listing does.
    #[command(
        long_about = "List the sessions TARGET may reference, as dsh's candidate listing gives \
them (its contract: filter, groups and order).

Every other session whose id, cwd or latest title contains Q (case-insensitive) is listed: \
sessions in TARGET's cwd first, then sessions without a cwd, then the rest, newest created \
first within each group. TARGET's cwd is its header's cwd when the session exists, else the \
current directory. The chat app's @ popup offers more than this: it orders by last activity, \
matches several words, offers closest matches and hits in conversations, and files.

Each row carries the mention to paste into a message.

A limit that is not a positive whole number is a usage error (exit status 2). On a \
session-reference error (for example an invalid candidate_limit in the config) the exit \
status is 1 and, with --json, stdout holds {\"error\":{\"code\",\"message\"}}."
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
    #[command(
        long_about = "Send one message to a session (created if absent, with the store) and \
stream the reply to stdout, through the same submit path as the chat app.

With --json the reply streams as JSON lines: {\"type\":\"text\",\"text\"} and \
{\"type\":\"reasoning\",\"text\"} deltas, then one final {\"type\":\"done\",\"usage\"} \
or {\"type\":\"error\",\"code\",\"message\"}.

Exit status 0 when the turn completes (also when stdout is closed early: the turn still \
finishes and is logged), 1 with CODE: message on stderr when it fails, 2 for usage errors."
    )]
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
    /// List other agents' session sources: path, found or not, sessions, last error
    #[command(
        long_about = "List every source of other agents' sessions dsh-refs knows (Claude Code, \
Codex CLI, Gemini CLI, OpenCode, Qwen Code, GitHub Copilot CLI): its [sources] setting, the \
directory read, whether it was found, how many sessions it lists, and the last error. Read-only: \
nothing is written to the tools' directories."
    )]
    Sources(SourcesArgs),
    /// Check every session log against the rules both dsh versions read logs by.
    #[command(
        long_about = "Read every session log of the store (or the one named with --session) \
against the rules both DeepSeek Harness versions this project writes for read by (the followed \
commit 6816e8a3d5 and the newest release 0.1.0-rc.8): seq contiguity, the event envelope and \
known event types, message shapes, surface provenance (a replacement cites every node it \
shadows), turn structure, compaction records and title sources. Every rule a version would \
refuse a log for is reported with the version, what it costs there and the first events that \
break it. Read-only: nothing is written or repaired.

Exit status 0 when every log follows every rule, 1 when a log breaks a rule or cannot be \
read, 2 for usage errors, 3 when the store (or the named session) cannot be read."
    )]
    Check(CheckArgs),
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Check only this session.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Machine output: {checked, withProblems, sessions: [{sessionId, path, writtenBy, note, problems: [{rule, summary, versions, effects, events, first: [{seq, detail}]}]}]}.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SearchArgs {
    /// Words, "quoted phrases"; all must occur in a session.
    pub query: String,
    /// At most N sessions, 1 to 1000.
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub limit: u32,
    /// Machine output: a JSON array of {sessionId, origin, label, cwd?, createdAt, mention,
    /// score, snippets: [{role, number, seq, text, excerptMention}]}.
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
pub struct SourcesArgs {
    /// Machine output: a JSON array of {origin, tool, key, setting, path, found, sessions,
    /// error}.
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
    /// At most N results, 1 or more (default: `candidate_limit` from the config).
    #[arg(
        long,
        value_name = "N",
        allow_negative_numbers = true,
        value_parser = positive_limit
    )]
    pub limit: Option<i64>,
    /// Machine output: a JSON array of {sessionId, label, cwd?, createdAt, mention, origin}
    /// (with `--rank frecency`, also `pinned` and `frecency`).
    #[arg(long)]
    pub json: bool,
    /// Order within each cwd group: `dsh` (newest created first, dsh's contract) or
    /// `frecency` (pinned, then how recently and often you referenced or resumed a session).
    #[arg(long, value_enum, default_value_t = Rank::Dsh)]
    pub rank: Rank,
}

/// A `--limit` of 1 or more; anything else is a usage error caught by the parser (exit 2).
fn positive_limit(text: &str) -> Result<i64, String> {
    match text.trim().parse::<i64>() {
        Ok(n) if n >= 1 => Ok(n),
        Ok(_) => Err("must be 1 or more".to_owned()),
        Err(_) => Err("must be a whole number, 1 or more".to_owned()),
    }
}

/// How `candidates` orders sessions within a cwd group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Rank {
    Dsh,
    Frecency,
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
    /// Machine output: JSON lines (text and reasoning deltas, then done or error).
    #[arg(long)]
    pub json: bool,
    /// The message text, with mentions.
    pub text: String,
}

/// Parse the process arguments and run; returns the process exit code.
pub fn main() -> ExitCode {
    use clap::{CommandFactory, FromArgMatches};
    let matches = Cli::command().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let store_on_command_line =
        matches.value_source("store") == Some(clap::parser::ValueSource::CommandLine);
    match run(&cli, store_on_command_line) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            report(&err, cli.json_output());
            ExitCode::from(err.exit_status())
        }
    }
}

/// How an error is shown: the only place a [`CliError`] reaches the user. A closed stdout
/// is not reported at all; `--json` errors go to stdout as JSON, others to stderr.
fn report(err: &CliError, json: JsonErrors) {
    use std::io::Write;
    if err.is_closed_pipe() || err.is_quiet() {
        return;
    }
    let message = err.to_string();
    let body = match json {
        JsonErrors::None => {
            // One line per line of the message, each with its controls made visible.
            let visible = term_text::visible_controls_line;
            let lines = err.lines();
            let mut lines = lines.iter();
            eprintln!(
                "dsh-refs: {}: {}",
                err.code(),
                visible(lines.next().map_or("", String::as_str))
            );
            for line in lines {
                eprintln!("  {}", visible(line.trim_start()));
            }
            return;
        }
        JsonErrors::Object => serde_json::to_string_pretty(
            &serde_json::json!({"error": {"code": err.code(), "message": message}}),
        ),
        JsonErrors::Line => serde_json::to_string(
            &serde_json::json!({"type": "error", "code": err.code(), "message": message}),
        ),
    };
    let Ok(body) = body else { return };
    let text = format!("{}\n", json_escape::escape_json_controls(&body));
    // Nothing more can be done when stdout is gone too.
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

/// The JSON shape errors take for the chosen subcommand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum JsonErrors {
    /// Human output: `dsh-refs: CODE: message` on stderr.
    None,
    /// `{"error":{"code","message"}}` (sessions, candidates, prepare).
    Object,
    /// A final `{"type":"error","code","message"}` line (`send --json`).
    Line,
}

impl Cli {
    fn json_output(&self) -> JsonErrors {
        match &self.command {
            Some(
                Command::Sessions(SessionsArgs { json: true })
                | Command::Candidates(CandidatesArgs { json: true, .. })
                | Command::Prepare(PrepareArgs { json: true, .. })
                | Command::Search(SearchArgs { json: true, .. })
                | Command::Check(CheckArgs { json: true, .. })
                | Command::Sources(SourcesArgs { json: true }),
            ) => JsonErrors::Object,
            Some(Command::Send(SendArgs { json: true, .. })) => JsonErrors::Line,
            _ => JsonErrors::None,
        }
    }
}

/// What every subcommand needs: the resolved store root and the loaded configuration.
#[derive(Debug, Clone)]
pub struct Context {
    pub store_root: PathBuf,
    /// Whether the root was named (`--store` / `DSH_REFS_STORE`) rather than the default.
    pub store_explicit: bool,
    pub config: config::Config,
    /// The `--demo` copy the root points into; removed (with what the run put in the
    /// cache dir for it) when the last clone is dropped.
    demo: Option<std::sync::Arc<demo_store::DemoCopy>>,
    /// Whether other agents' sessions are listed (`--no-foreign-sources` clears it).
    pub foreign_sources: bool,
}

impl Context {
    /// Resolve the store (`--demo` copy, `--store` / `DSH_REFS_STORE`, or the platform data
    /// dir) and load the config file. `store_on_command_line` tells `--store` from the env.
    pub fn from_cli(cli: &Cli, store_on_command_line: bool) -> Result<Context, CliError> {
        let (config_path, explicit) = match &cli.config {
            Some(path) => (path.clone(), true),
            None => (default_dirs()?.config_dir().join("config.toml"), false),
        };
        let config = config::Config::load(&config_path, explicit)?;
        if cli.demo {
            if store_on_command_line {
                return Err(CliError::Usage(
                    "--demo runs on a temporary copy of the demo store; drop --store".into(),
                ));
            }
            let dir = demo_store::temporary_copy()?;
            return Ok(Context {
                store_root: dir.root().to_path_buf(),
                store_explicit: false,
                config,
                // The demo is self-contained: the user's other tools' sessions stay out.
                foreign_sources: false,
                demo: Some(std::sync::Arc::new(dir)),
            });
        }
        let (store_root, store_explicit) = match &cli.store {
            Some(dir) => (dir.clone(), true),
            None => (default_dirs()?.data_dir().join("store"), false),
        };
        Ok(Context {
            store_root,
            store_explicit,
            config,
            foreign_sources: !cli.no_foreign_sources,
            demo: None,
        })
    }

    /// Whether the store is the temporary `--demo` copy.
    pub fn is_demo(&self) -> bool {
        self.demo.is_some()
    }

    /// For read commands: an explicitly named store must exist (a typo is not "no
    /// sessions"); the default location missing simply means no sessions yet.
    pub fn require_store(&self) -> Result<(), CliError> {
        if self.store_explicit && !self.store_root.is_dir() {
            return Err(CliError::NoStore {
                path: self.store_root.clone(),
            });
        }
        Ok(())
    }
}

fn default_dirs() -> Result<directories::ProjectDirs, CliError> {
    directories::ProjectDirs::from("", "", "dsh-refs").ok_or(CliError::NoHome)
}

fn run(cli: &Cli, store_on_command_line: bool) -> Result<(), CliError> {
    let ctx = Context::from_cli(cli, store_on_command_line)?;
    // A configured source path that lists nothing is said once, on stderr, by the commands
    // that read sources (`sources` lists it itself; the app shows it as a notice).
    if matches!(
        cli.command,
        Some(
            Command::Sessions(_)
                | Command::Candidates(_)
                | Command::Prepare(_)
                | Command::Send(_)
                | Command::Search(_)
        )
    ) {
        foreign_sources::warn_about_sources(&ctx);
    }
    match &cli.command {
        Some(Command::Sessions(args)) => sessions::run(&ctx, args),
        Some(Command::Candidates(args)) => candidates::run(&ctx, args),
        Some(Command::Prepare(args)) => prepare::run(&ctx, args),
        Some(Command::Send(args)) => send::run(&ctx, args),
        Some(Command::Search(args)) => search::run(&ctx, args),
        Some(Command::Check(args)) => check::run(&ctx, args),
        Some(Command::Sources(args)) => sources_report::run(&ctx, args),
        None => tui_launch::run(&ctx, cli),
    }
}
