//! `dsh-refs` without a subcommand: the TUI on a new session, on `--resume ID`, or on a
//! temporary copy of the bundled demo store (`--demo`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use super::foreign_sources::{open_sources, read_only_refusal};
use super::{Cli, Context};
use crate::tui::app::{App, AppOptions, new_session_id};
use crate::tui::app_event::{AppEvent, AppEventSender};
use crate::tui::terminal;
use dsh_foreign::SessionSources;
use dsh_reference::SessionReferences;
use dsh_search::IndexOptions;
use dsh_store::event::now_ms;
use dsh_store::{SessionHeader, SessionQuery, SessionStore, SessionWriter};

/// Where the bundled demo store lives: the source tree, else next to the executable.
fn demo_source() -> Result<PathBuf, String> {
    let built = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/demo/store"));
    if built.is_dir() {
        return Ok(built);
    }
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("assets/demo/store")));
    match beside {
        Some(dir) if dir.is_dir() => Ok(dir),
        _ => Err(format!(
            "the demo store is missing (looked in {} and next to the executable)",
            built.display()
        )),
    }
}

/// Copy a directory tree (files and directories only).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// Send tracing output to `<data dir>/logs/dsh-refs.log`, never to the terminal.
fn init_logging() {
    let Some(dirs) = directories::ProjectDirs::from("", "", "dsh-refs") else {
        return;
    };
    let dir = dirs.data_dir().join("logs");
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    let Ok(file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("dsh-refs.log"))
    else {
        return;
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("DSH_REFS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(Arc::new(file))
        .try_init();
}

/// Build the reference service over every session source from the `[references]` section.
fn reference_service(
    ctx: &Context,
    sources: &Arc<SessionSources>,
) -> Result<SessionReferences, String> {
    let config = super::reference_service::reference_config(&ctx.config.references)
        .map_err(|e| format!("{}: {}", e.code.as_str(), e.message))?;
    let query: Arc<dyn SessionQuery> = Arc::clone(sources) as Arc<dyn SessionQuery>;
    Ok(SessionReferences::new(query, config))
}

/// Open the session the TUI starts on.
fn open_session(
    store: &SessionStore,
    sources: &SessionSources,
    cli: &Cli,
    demo: bool,
) -> Result<SessionWriter, String> {
    if let Some(id) = &cli.resume {
        if !store.exists(id)
            && let Some(refusal) = read_only_refusal(sources, id)
        {
            return Err(format!("cannot resume session {id:?}: {refusal}"));
        }
        return store
            .open_writer(id, None)
            .map_err(|e| format!("cannot resume session {id:?}: {e}"));
    }
    let cwd = if demo {
        // The demo opens in its main project, so `@` shows same-project sessions first.
        let sessions = store.list_sessions().map_err(|e| e.to_string())?;
        sessions.iter().find_map(|h| h.cwd.clone())
    } else {
        std::env::current_dir()
            .ok()
            .map(|d| d.to_string_lossy().into_owned())
    };
    let id = new_session_id();
    let header = SessionHeader::new(id.clone(), now_ms(), cwd);
    store
        .open_writer(&id, Some(header))
        .map_err(|e| format!("cannot create session {id}: {e}"))
}

/// `DSH_REFS_OFFLINE_DELAY_MS`: the pause between offline reply chunks, overriding the
/// interactive default (tests use it to keep a reply streaming while they type).
fn offline_delay_override() -> Result<Option<Duration>, String> {
    match std::env::var("DSH_REFS_OFFLINE_DELAY_MS") {
        Ok(value) => value
            .trim()
            .parse::<u64>()
            .map(|ms| Some(Duration::from_millis(ms)))
            .map_err(|_| {
                format!("DSH_REFS_OFFLINE_DELAY_MS must be a whole number of milliseconds, got {value:?}")
            }),
        Err(_) => Ok(None),
    }
}

/// SIGTERM and SIGHUP end the app like /quit, so the terminal is restored and a running
/// turn is logged as aborted.
fn quit_on_termination_signals(sender: &AppEventSender) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        for kind in [SignalKind::terminate(), SignalKind::hangup()] {
            let Ok(mut stream) = signal(kind) else {
                continue;
            };
            let sender = sender.clone();
            tokio::spawn(async move {
                if stream.recv().await.is_some() {
                    sender.send(AppEvent::Quit);
                }
            });
        }
    }
    #[cfg(not(unix))]
    let _ = sender;
}

/// Run the TUI; returns when the user quits.
pub fn run(ctx: &Context, cli: &Cli) -> Result<ExitCode, String> {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(
            "the chat app needs an interactive terminal; for scripts use the subcommands \
             (see dsh-refs --help)"
                .to_owned(),
        );
    }
    init_logging();
    let demo_dir = if cli.demo {
        let dir = tempfile::TempDir::new()
            .map_err(|e| format!("cannot make a temporary directory: {e}"))?;
        let source = demo_source()?;
        copy_tree(&source, dir.path())
            .map_err(|e| format!("cannot copy the demo store {}: {e}", source.display()))?;
        Some(dir)
    } else {
        None
    };
    let root = demo_dir
        .as_ref()
        .map_or_else(|| ctx.store_root.clone(), |d| d.path().to_path_buf());
    let store = SessionStore::with_persisted_index(root)
        .with_limits(ctx.config.store.limits())
        .with_compression(ctx.config.store.compression);
    let sources = open_sources(ctx, &store);
    let refs = reference_service(ctx, &sources)?;
    let provider = match offline_delay_override()? {
        Some(delay) => super::provider_setup::provider_for(&ctx.config.model, delay)
            .map_err(|e| format!("{}: {e}", e.code()))?,
        None => super::provider_setup::build_provider(&ctx.config.model)?,
    };
    let options = AppOptions {
        history_size: ctx.config.tui.history_size,
        show_reasoning: ctx.config.tui.show_reasoning,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let writer = open_session(&store, &sources, cli, demo_dir.is_some())?;
    // The demo's index lives next to its temporary store, not in the cache dir.
    let demo_index = match &demo_dir {
        Some(_) => Some(
            tempfile::TempDir::new()
                .map_err(|e| format!("cannot make a temporary directory: {e}"))?,
        ),
        None => None,
    };
    let search_options = ctx.config.search.enabled.then(|| IndexOptions {
        index_dir: demo_index
            .as_ref()
            .map(|d| d.path().to_owned())
            .or_else(|| ctx.config.search.index_dir.clone()),
    });
    let hint_store = store.clone();
    let session_id = runtime.block_on(async move {
        let mut tui = terminal::init().map_err(|e| format!("cannot set up the terminal: {e}"))?;
        let _restore = terminal::RestoreGuard;
        let mut app = App::new(store, Some(refs), provider, writer, options);
        app.set_sources(sources);
        if let Some(options) = search_options {
            app.start_search_indexing(options);
        }
        quit_on_termination_signals(&app.sender());
        let result = app
            .run(&mut tui, crossterm::event::EventStream::new())
            .await;
        app.shutdown().await;
        result.map_err(|e| e.to_string())?;
        Ok::<_, String>(app.session_id().to_owned())
    })?;
    terminal::restore();
    if demo_dir.is_none() && hint_store.exists(&session_id) {
        println!("Resume this session with: dsh-refs --resume {session_id}");
    }
    Ok(ExitCode::SUCCESS)
}
