//! The real `dsh-refs` binary in a pseudo-terminal, its screen read through a VT100 parser,
//! on a temporary store with the offline provider (the end-to-end tests' harness). Every
//! wait is bounded and fails with the screen contents.
#![allow(dead_code)] // not every test binary uses every helper

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dsh_store::event::TitleData;
use dsh_store::{
    ContentBlock, EventData, Message, NewEvent, Role, SessionHeader, SessionStore, Source,
};
use portable_pty::{Child, CommandBuilder, MasterPty, PtySize, native_pty_system};

pub const ROWS: u16 = 30;
pub const COLS: u16 = 100;
pub const WAIT: Duration = Duration::from_secs(20);

/// A running `dsh-refs` in a pty.
pub struct Session {
    pub screen: Arc<Mutex<vt100::Parser>>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    pub child: Mutex<Box<dyn Child + Send + Sync>>,
    /// The pty's master side: kept open while the app runs (and resized through it).
    master: Mutex<Box<dyn MasterPty + Send>>,
}

impl Session {
    pub fn start(store: &Path, config: &Path, cwd: &Path, env: &[(&str, &str)]) -> Session {
        Session::launch(store, config, cwd, env, false, &[])
    }

    /// Like [`start`](Self::start), opening session `id` (`--resume`).
    pub fn start_resuming(store: &Path, config: &Path, cwd: &Path, id: &str) -> Session {
        Session::launch(store, config, cwd, &[], false, &["--resume", id])
    }

    /// Like [`start`](Self::start), but reading the foreign sources `config` and `env`
    /// (HOME) name.
    pub fn start_with_foreign(
        store: &Path,
        config: &Path,
        cwd: &Path,
        env: &[(&str, &str)],
    ) -> Session {
        Session::launch(store, config, cwd, env, true, &[])
    }

    pub fn launch(
        store: &Path,
        config: &Path,
        cwd: &Path,
        env: &[(&str, &str)],
        foreign: bool,
        args: &[&str],
    ) -> Session {
        let (rows, cols) = (ROWS, COLS);
        let pty = native_pty_system()
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_dsh-refs"));
        cmd.env(
            "XDG_CACHE_HOME",
            std::env::temp_dir().join("dsh-refs-test-cache"),
        );
        cmd.arg("--store");
        cmd.arg(store);
        cmd.arg("--config");
        cmd.arg(config);
        // Never list the machine's own Claude Code / Codex sessions.
        if !foreign {
            cmd.arg("--no-foreign-sources");
        }
        cmd.args(args);
        cmd.cwd(cwd);
        cmd.env("TERM", "xterm-256color");
        // Keep the app's log file (platform data dir) inside the test's temporary directory.
        if let Some(parent) = store.parent() {
            cmd.env("XDG_DATA_HOME", parent.join("data"));
            cmd.env("XDG_CONFIG_HOME", parent.join("config"));
        }
        cmd.env_remove("DSH_REFS_STORE");
        cmd.env_remove("DSH_REFS_CONFIG");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = pty.slave.spawn_command(cmd).unwrap();
        drop(pty.slave);
        let screen = Arc::new(Mutex::new(vt100::Parser::new(rows, cols, 0)));
        let writer = Arc::new(Mutex::new(pty.master.take_writer().unwrap()));
        let mut reader = pty.master.try_clone_reader().unwrap();
        {
            let screen = Arc::clone(&screen);
            let writer = Arc::clone(&writer);
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                loop {
                    match reader.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            let bytes = &buf[..n];
                            // Answer the primary device attributes query the way a terminal
                            // without the kitty keyboard protocol would, so startup is quick.
                            if bytes.windows(3).any(|w| w == b"\x1b[c") {
                                let _ = writer.lock().unwrap().write_all(b"\x1b[?62;22c");
                            }
                            screen.lock().unwrap().process(bytes);
                        }
                    }
                }
            });
        }
        Session {
            screen,
            writer,
            child: Mutex::new(child),
            master: Mutex::new(pty.master),
        }
    }

    /// Resizes the terminal to `rows` × `cols` (the app gets SIGWINCH).
    pub fn resize(&self, rows: u16, cols: u16) {
        self.screen
            .lock()
            .unwrap()
            .screen_mut()
            .set_size(rows, cols);
        self.master
            .lock()
            .unwrap()
            .resize(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
    }

    pub fn contents(&self) -> String {
        self.screen.lock().unwrap().screen().contents()
    }

    pub fn send(&self, bytes: &str) {
        let mut w = self.writer.lock().unwrap();
        w.write_all(bytes.as_bytes()).unwrap();
        w.flush().unwrap();
    }

    /// Type text one key at a time (as a person would, so each key is its own event).
    pub fn type_text(&self, text: &str) {
        for c in text.chars() {
            self.send(&c.to_string());
            std::thread::sleep(Duration::from_millis(15));
        }
    }

    pub fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.contents();
            if pred(&screen) {
                return screen;
            }
            let exited = self.child.lock().unwrap().try_wait();
            if let Ok(Some(status)) = exited {
                panic!("dsh-refs exited ({status:?}) while waiting for {what}; screen:\n{screen}");
            }
            assert!(
                start.elapsed() <= WAIT,
                "timed out waiting for {what}; screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(30));
        }
    }

    pub fn wait_for_text(&self, needle: &str) -> String {
        self.wait_for(&format!("{needle:?}"), |s| s.contains(needle))
    }

    pub fn wait_exit(&mut self) {
        let status = self.wait_exit_status();
        assert_eq!(status, 0, "exit status; screen:\n{}", self.contents());
    }

    /// Wait for the app to exit; its exit status.
    pub fn wait_exit_status(&mut self) -> u32 {
        let start = Instant::now();
        loop {
            let exited = self.child.lock().unwrap().try_wait().unwrap();
            if let Some(status) = exited {
                return status.exit_code();
            }
            if start.elapsed() > WAIT {
                let _ = self.child.lock().unwrap().kill();
                panic!("dsh-refs did not exit; screen:\n{}", self.contents());
            }
            std::thread::sleep(Duration::from_millis(30));
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let child = self
            .child
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Ok(None) = child.try_wait() {
            let _ = child.kill();
        }
    }
}

/// A temporary project directory, store and offline config, with two seeded sessions.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub store: PathBuf,
    pub config: PathBuf,
    pub project: PathBuf,
}

pub const SEEDED: [&str; 2] = ["s-alpha", "s-beta"];

pub fn fixture() -> Fixture {
    let dir = tempfile::TempDir::new().unwrap();
    let store = dir.path().join("store");
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let project = project.canonicalize().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[model]\nprovider = \"offline\"\n").unwrap();
    for (i, (id, title, question)) in [
        (
            "s-alpha",
            "Alpha login bug",
            "Why does login fail after the upgrade?",
        ),
        ("s-beta", "Beta release notes", "Draft the release notes."),
    ]
    .into_iter()
    .enumerate()
    {
        let at = 1_700_000_000_000 + i as i64;
        seed_session(&store, (id, at, Some(&project)), question, Some(title));
    }
    Fixture {
        dir,
        store,
        config,
        project,
    }
}

/// Writes session `id` (created at `created` ms, in `cwd`) into `store`: one turn where
/// `question` is asked and answered, then `title` when given.
pub fn seed_session(
    store: &Path,
    (id, created, cwd): (&str, i64, Option<&Path>),
    question: &str,
    title: Option<&str>,
) {
    let sessions = SessionStore::new(store);
    let header = SessionHeader::new(id, created, cwd.map(|c| c.display().to_string()));
    let mut writer = sessions.open_writer(id, Some(header)).unwrap();
    let reply = Message::new(
        Role::Assistant,
        vec![ContentBlock::text(format!("Answer to {question}"))],
        Source::model("offline", "offline"),
    );
    let mut events = vec![
        NewEvent::appended(EventData::UserMessage(Message::user_text(question))),
        NewEvent::appended(EventData::AssistantMessage {
            turn: 1,
            step: 1,
            message: reply,
            usage: None,
            extra: serde_json::Map::new(),
        }),
    ];
    if let Some(title) = title {
        events.push(NewEvent::plain(EventData::SessionTitle(TitleData {
            title: title.into(),
            message_seqs: vec![],
            source: dsh_store::event::TitleSource {
                kind: "user".into(),
                extra: serde_json::Map::new(),
            },
            extra: serde_json::Map::new(),
        })));
    }
    writer
        .append(dsh_store::layout::in_turns(1, events))
        .unwrap();
}

/// Copies the directory tree `from` to `to` (a foreign tool's home from the fixtures).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}
