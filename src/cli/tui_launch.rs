//! `dsh-refs` without a subcommand: the TUI on a new session, on the session `--resume X`
//! names (else the `/resume` picker filtered by X), on the session of this directory active
//! last (`--continue`), or on a temporary copy of the bundled demo store (`--demo`); a
//! session another window writes to is shown read-only.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use super::output::write_stdout;
use super::provider_setup::{INTERACTIVE_OFFLINE_CHUNK_DELAY, provider_for_app};
use super::reference_service::open_service;
use super::{Cli, CliError, Context};
use crate::agent::LogFacts;
use crate::tui::app::{App, AppOptions, new_session_id};
use crate::tui::event::{AppEvent, AppEventSender};
use crate::tui::session::resolve::{ResumeTarget, resolve};
use crate::tui::terminal;
use dsh_foreign::SessionSources;
use dsh_search::IndexOptions;
use dsh_store::event::now_ms;
use dsh_store::{SessionHeader, SessionQuery, SessionStore, SessionWriter, StoreError};

/// Send tracing output to `<data dir>/logs/dsh-refs.log`, never to the terminal. The file
/// is opened like every file of ours (no link followed, never blocking: a FIFO there once
/// hung the app before its first frame) and must be a regular file; when it cannot be used,
/// logging is off and the returned notice says why (the app runs all the same).
fn init_logging() -> Option<String> {
    let dirs = directories::ProjectDirs::from("", "", "dsh-refs")?;
    let dir = dirs.data_dir().join("logs");
    let path = dir.join("dsh-refs.log");
    let opened =
        std::fs::create_dir_all(&dir).and_then(|()| dsh_store::own_file::open_append(&path));
    let file = match opened {
        Ok(file) => file,
        Err(e) => {
            return Some(format!(
                "logging is off for this run: cannot use {} ({e})",
                path.display()
            ));
        }
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("DSH_REFS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(Arc::new(file))
        .try_init();
    None
}

/// What the app opens on, decided before the terminal is needed.
enum Start {
    /// A new session in this directory (the demo's: in its main project).
    New,
    /// The session `--resume X` names (docs/cli.md): written to, unless another window
    /// writes to it or it is another tool's (then shown read-only).
    Resume(String),
    /// `--continue`: the first of these sessions (the one active last first) no other
    /// window writes to; when every one is busy, the first read-only.
    Continue(Vec<String>),
    /// `--resume` without an id, or naming no single session: the picker, filtered by this.
    Pick(String),
}

/// What the app shows over its session as it starts.
enum AtStart {
    Nothing,
    /// Session `id` read-only (busy in another window, or another tool's).
    ReadOnly(String),
    /// The `/resume` picker with this filter.
    Pick(String),
    /// A notice in the transcript.
    Notice(String),
}

/// Opens the session the TUI starts on, gathering what the agent keeps of its log in the
/// same pass (a resumed log is read once before the first frame, not twice); says what to
/// show over it.
fn open_session(
    store: &SessionStore,
    sources: &SessionSources,
    start: Start,
    demo: bool,
    mut facts: LogFacts,
) -> Result<((SessionWriter, LogFacts), AtStart), CliError> {
    let mut open = |id: &str| {
        store
            .open_writer_observing(id, None, &mut |e| facts.observe(e))
            .map_err(|source| CliError::OpenSession {
                id: id.to_owned(),
                source,
            })
    };
    let busy = |e: &CliError| {
        matches!(
            e,
            CliError::OpenSession {
                source: StoreError::Busy { .. },
                ..
            }
        )
    };
    let at_start = match start {
        Start::New => AtStart::Nothing,
        Start::Pick(filter) => AtStart::Pick(filter),
        Start::Resume(id) if sources.origin(&id).is_foreign() => AtStart::ReadOnly(id),
        Start::Resume(id) => match open(&id) {
            Ok(writer) => return Ok(((writer, facts), AtStart::Nothing)),
            Err(e) if busy(&e) => AtStart::ReadOnly(id),
            Err(e) => return Err(e),
        },
        Start::Continue(ids) => {
            for (n, id) in ids.iter().enumerate() {
                match open(id) {
                    Ok(writer) => {
                        let notice = match ids.first() {
                            Some(last) if n > 0 => AtStart::Notice(format!(
                                "--continue: {last}, the session of this directory active \
                                 last, is open in another window; continuing {id}"
                            )),
                            _ => AtStart::Nothing,
                        };
                        return Ok(((writer, facts), notice));
                    }
                    Err(e) if busy(&e) => {}
                    Err(e) => return Err(e),
                }
            }
            // Every one is busy: the one active last, to look at (and mention).
            ids.into_iter()
                .next()
                .map_or(AtStart::Nothing, AtStart::ReadOnly)
        }
    };
    let cwd = if demo {
        // The demo opens in its main project, so `@` shows same-project sessions first.
        let sessions = store.list_sessions().map_err(CliError::List)?;
        sessions.iter().find_map(|h| h.cwd.clone())
    } else {
        std::env::current_dir()
            .ok()
            .map(|d| d.to_string_lossy().into_owned())
    };
    let id = new_session_id();
    let header = dsh_reference::record_branch(SessionHeader::new(id.clone(), now_ms(), cwd));
    store
        .open_writer(&id, Some(header))
        .map(|writer| ((writer, facts), at_start))
        .map_err(|source| CliError::OpenSession { id, source })
}

/// What `--resume X` / `--continue` ask to open (before the terminal is needed: there may
/// be nothing to continue here).
fn start_of(cli: &Cli, store: &SessionStore, sources: &SessionSources) -> Result<Start, CliError> {
    if let Some(wanted) = &cli.resume {
        return match resolve(sources, wanted).map_err(CliError::List)? {
            ResumeTarget::Open(id) => Ok(Start::Resume(id)),
            ResumeTarget::Pick(filter) => Ok(Start::Pick(filter)),
        };
    }
    if cli.continue_last {
        return super::continue_session::targets(store).map(Start::Continue);
    }
    Ok(Start::New)
}

/// `DSH_REFS_OFFLINE_DELAY_MS`: the pause between offline reply chunks, overriding the
/// interactive default (tests use it to keep a reply streaming while they type).
fn offline_delay_override() -> Result<Option<Duration>, CliError> {
    const NAME: &str = "DSH_REFS_OFFLINE_DELAY_MS";
    match std::env::var(NAME) {
        Ok(value) => value
            .trim()
            .parse::<u64>()
            .map(|ms| Some(Duration::from_millis(ms)))
            .map_err(|_| CliError::BadEnv { name: NAME, value }),
        Err(_) => Ok(None),
    }
}

/// How long quitting waits for background work still running on the runtime's blocking
/// threads (a listing's first check of every log, an estimate of a long session): nothing
/// there is needed once the app has ended, and a cold start's first check can take seconds.
const EXIT_WAIT: Duration = Duration::from_millis(250);

/// Shut the app's runtime down without waiting for its blocking work beyond [`EXIT_WAIT`]
/// (dropping it would wait for every blocking task to end).
fn end_runtime(runtime: tokio::runtime::Runtime) {
    runtime.shutdown_timeout(EXIT_WAIT);
}

/// Run the TUI; returns when the user quits.
pub fn run(ctx: &Context, cli: &Cli) -> Result<(), CliError> {
    use std::io::IsTerminal;
    let service = open_service(ctx)?;
    let (store, sources, refs) = (service.store, service.sources, service.refs);
    // Said before the terminal is needed: there may be nothing to continue here.
    let start = start_of(cli, &store, &sources)?;
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(CliError::NotATerminal);
    }
    let logging_notice = init_logging();
    let delay = offline_delay_override()?.unwrap_or(INTERACTIVE_OFFLINE_CHUNK_DELAY);
    let (provider, provider_notice) = provider_for_app(&ctx.config.model, delay)?;
    let options = AppOptions {
        history_size: ctx.config.tui.history_size,
        show_reasoning: ctx.config.tui.show_reasoning,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::io("cannot start the async runtime", e))?;
    let facts = LogFacts::for_provider(provider.as_ref());
    let (opened, at_start) = open_session(&store, &sources, start, ctx.is_demo(), facts)?;
    // The demo's index lives in a temporary directory of its own, not in the cache dir.
    let demo_index = if ctx.is_demo() {
        Some(
            tempfile::TempDir::new()
                .map_err(|e| CliError::io("cannot make a temporary directory", e))?,
        )
    } else {
        None
    };
    let search_options = ctx.config.search.enabled.then(|| IndexOptions {
        index_dir: demo_index
            .as_ref()
            .map(|d| d.path().to_owned())
            .or_else(|| ctx.config.search.index_dir.clone()),
    });
    let hint_store = store.clone();
    let store_root = store.root().to_owned();
    let remember_first_page = !ctx.is_demo();
    // Sent inputs, kept for Up across runs (outside the store: it holds only session logs).
    let history_path = directories::ProjectDirs::from("", "", "dsh-refs")
        .map(|dirs| dirs.data_dir().join("input-history.jsonl"));
    let history_size = options.history_size;
    // The app's session was there before (a new one has no log until its first message).
    let resumed = store.exists(&opened.0.header().id);
    let source_warnings = super::foreign_sources::source_warnings(ctx);
    let session_id = runtime.block_on(async move {
        // SIGTERM, SIGHUP and SIGINT end the app like /quit (a running turn is logged as
        // aborted); the terminal is restored even if it does not end.
        let app_sender: Arc<OnceLock<AppEventSender>> = Arc::default();
        let quit_sender = Arc::clone(&app_sender);
        terminal::watch_termination_signals(move || {
            quit_sender
                .get()
                .map(|sender| sender.send(AppEvent::Quit))
                .is_some()
        });
        let mut tui =
            terminal::init().map_err(|e| CliError::io("cannot set up the terminal", e))?;
        let _restore = terminal::RestoreGuard;
        let mut app = App::with_facts(store, Some(refs), provider, opened, options);
        let _ = app_sender.set(app.sender());
        app.set_mouse_switch(Box::new(terminal::set_mouse_capture));
        for notice in [logging_notice, provider_notice].into_iter().flatten() {
            app.show_notice(notice);
        }
        if let Some(path) = &history_path {
            app.use_history_file(path, history_size);
        }
        app.set_sources(sources, &source_warnings);
        if resumed {
            // `/new` opens in this process's directory, not in the resumed session's.
            app.set_home_cwd(
                std::env::current_dir()
                    .ok()
                    .map(|d| d.to_string_lossy().into_owned()),
            );
        }
        // The demo's store is a temporary copy: nothing of it is kept in the cache dir.
        if let Some(path) = remember_first_page
            .then(|| crate::tui::composer::remembered_page::path_for(&store_root))
            .flatten()
        {
            app.remember_first_page_in(path);
        }
        // Pins and uses of the demo's sessions are not kept either.
        if let Some(path) = remember_first_page.then(super::usage::usage_path).flatten() {
            app.keep_usage_in(path);
        }
        app.warm_listing();
        if let Some(options) = search_options {
            app.start_search_indexing(options);
        }
        match at_start {
            AtStart::Nothing => {}
            AtStart::ReadOnly(id) => app.show_read_only(&id),
            AtStart::Pick(filter) => app.open_picker(&filter),
            AtStart::Notice(text) => app.notice(&text),
        }
        let result = app
            .run(&mut tui, crossterm::event::EventStream::new())
            .await;
        app.shutdown().await;
        result?;
        Ok::<_, CliError>(app.session_id().to_owned())
    });
    end_runtime(runtime);
    let session_id = session_id?;
    terminal::restore();
    let signalled = terminal::termination_signal();
    if !ctx.is_demo() && hint_store.exists(&session_id) {
        let hint = write_stdout(&format!(
            "Resume this session with: dsh-refs --resume {session_id}\n"
        ));
        // After SIGHUP the terminal may be gone: the exit status still says why it ended.
        if signalled.is_none() {
            hint?;
        }
    }
    match signalled {
        Some(number) => Err(CliError::Signalled { number }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ending_the_runtime_does_not_wait_for_blocking_work() {
        // Issue 23, break 8: after /quit the app sometimes stayed open for seconds — the
        // runtime's drop waited for blocking tasks such as a cold listing check.
        let (release, held) = std::sync::mpsc::channel::<()>();
        let (ended, done) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .build()
                .unwrap();
            // A blocking task that ends only when the test says so.
            runtime.spawn_blocking(move || {
                let _ = held.recv();
            });
            end_runtime(runtime);
            let _ = ended.send(());
        });
        let returned = done.recv_timeout(Duration::from_secs(60));
        let _ = release.send(());
        assert_eq!(
            returned,
            Ok(()),
            "ending the runtime waited for its blocking work"
        );
    }
}
