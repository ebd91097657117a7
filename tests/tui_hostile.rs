//! Hostile text on the terminal (issue 7 item 4): the composer widget and its `@` popup
//! is drawn through the real crossterm backend into a byte buffer, and those bytes are fed to
//! a VT100 parser. Hostile candidate labels, ids and cwds (escapes, OSC titles and clipboard
//! writes, C1 CSI, BEL) and hostile pasted text must have no effect on the terminal: no
//! bell, no title or clipboard change, no unknown sequence, and the escapes show as text.
//! The last test does the same for the whole app (header, transcript, popup) running in a
//! pseudo-terminal on a store full of hostile sessions.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::needless_pass_by_value,
    clippy::similar_names
)] // test code: small known values, helpers that take values for brevity

use std::fs;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use dsh_reference::Candidate;
use dsh_refs::tui::composer::session_items::{
    DisplayZone, composer_config, composer_look, composer_state, popup_labels, session_item,
};
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;
use ratatui::{Terminal, TerminalOptions, Viewport};
use ratatui_mention::{MentionInputState, ResultsList};
use serde_json::Value;

/// Everything a VT100 parser was asked to do besides drawing cells.
#[derive(Debug, Default)]
struct SideEffects(Vec<String>);

impl vt100::Callbacks for SideEffects {
    fn audible_bell(&mut self, _: &mut vt100::Screen) {
        self.0.push("bell".into());
    }
    fn visual_bell(&mut self, _: &mut vt100::Screen) {
        self.0.push("visual bell".into());
    }
    fn resize(&mut self, _: &mut vt100::Screen, size: (u16, u16)) {
        self.0.push(format!("resize {size:?}"));
    }
    fn set_window_icon_name(&mut self, _: &mut vt100::Screen, name: &[u8]) {
        self.0.push(format!("icon name {name:?}"));
    }
    fn set_window_title(&mut self, _: &mut vt100::Screen, title: &[u8]) {
        self.0.push(format!("title {title:?}"));
    }
    fn copy_to_clipboard(&mut self, _: &mut vt100::Screen, _: &[u8], data: &[u8]) {
        self.0.push(format!("clipboard {data:?}"));
    }
    fn paste_from_clipboard(&mut self, _: &mut vt100::Screen, _: &[u8]) {
        self.0.push("paste request".into());
    }
    fn unhandled_char(&mut self, _: &mut vt100::Screen, c: char) {
        self.0.push(format!("unhandled char {c:?}"));
    }
    fn unhandled_control(&mut self, _: &mut vt100::Screen, b: u8) {
        self.0.push(format!("unhandled control {b:#x}"));
    }
    fn unhandled_escape(&mut self, _: &mut vt100::Screen, _: Option<u8>, _: Option<u8>, b: u8) {
        self.0.push(format!("unhandled escape {b:#x}"));
    }
    fn unhandled_osc(&mut self, _: &mut vt100::Screen, params: &[&[u8]]) {
        self.0.push(format!("osc {params:?}"));
    }
}

fn hostile_texts() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hostile/strings.json");
    let v: Value = serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
    v["text"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

const W: u16 = 100;
const H: u16 = 30;

/// A writer whose bytes the test can read back after the terminal owns it.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Draw the pane through crossterm into bytes, as the app would on a real terminal.
fn terminal_bytes(pane: &mut MentionInputState) -> Vec<u8> {
    let capture = Capture::default();
    let backend = CrosstermBackend::new(capture.clone());
    let mut terminal = Terminal::with_options(
        backend,
        TerminalOptions {
            viewport: Viewport::Fixed(Rect::new(0, 0, W, H)),
        },
    )
    .unwrap();
    terminal
        .draw(|frame| {
            let labels = popup_labels();
            frame.render_stateful_widget(composer_look(&labels, true), frame.area(), pane);
            if let Some(p) = pane.cursor_position() {
                frame.set_cursor_position(p);
            }
        })
        .unwrap();
    drop(terminal);
    capture.0.lock().unwrap().clone()
}

/// Parse `bytes` on a VT100 screen: (screen text, side effects).
fn on_screen(bytes: &[u8]) -> (String, Vec<String>) {
    let mut parser = vt100::Parser::new_with_callbacks(H, W, 0, SideEffects::default());
    parser.process(bytes);
    let text = parser.screen().contents();
    (text, parser.callbacks().0.clone())
}

fn type_str(pane: &mut MentionInputState, text: &str) {
    for c in text.chars() {
        pane.handle_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
    }
}

#[test]
fn hostile_candidates_in_the_popup_have_no_terminal_effect() {
    let texts = hostile_texts();
    let mut pane = composer_state(10);
    type_str(&mut pane, "@");
    let query_id = pane
        .results()
        .map(ResultsList::query_id)
        .expect("@ opens the popup");
    let rows: Vec<Candidate> = texts
        .iter()
        .enumerate()
        .map(|(n, t)| Candidate {
            session_id: format!("id\u{1b}[2J{n}\u{9b}H"),
            label: t.clone(),
            cwd: Some(format!("/w/\u{1b}]0;cwd-title\u{7}{n}")),
            created_at: 1_795_167_000_000,
        })
        .collect();
    let items = rows
        .iter()
        .map(|c| session_item(c, &dsh_foreign::Origin::Dsh, DisplayZone::Local, true))
        .collect();
    let _ = pane.set_results(query_id, items);
    // Walk the selection over every row so each one is drawn at some point.
    for n in 0..texts.len() {
        let bytes = terminal_bytes(&mut pane);
        assert!(
            !bytes.contains(&0x07),
            "row {n}: raw BEL reached the terminal"
        );
        assert!(
            !bytes.windows(2).any(|w| w == b"\x1b]" || w == [0xc2, 0x9b]),
            "row {n}: OSC or C1 CSI reached the terminal"
        );
        let (screen, effects) = on_screen(&bytes);
        assert_eq!(effects, Vec::<String>::new(), "row {n}:\n{screen}");
        // The escapes are shown, not obeyed: the popup is still there, with visible text.
        assert!(screen.contains("\\x1B"), "row {n}:\n{screen}");
        pane.handle_key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE));
    }
}

#[test]
fn hostile_pasted_text_in_the_composer_has_no_terminal_effect() {
    let texts = hostile_texts();
    // Collapsed (the app's default for a paste this long): one inert placeholder.
    let mut pane = composer_state(10);
    pane.handle_paste(&texts.join("\n"));
    let (screen, effects) = on_screen(&terminal_bytes(&mut pane));
    assert_eq!(effects, Vec::<String>::new(), "{screen}");
    assert!(screen.contains("[pasted "), "{screen}");
    // Shown in full.
    let mut pane =
        MentionInputState::new(composer_config(10).with_paste_collapse(usize::MAX, usize::MAX));
    pane.handle_paste(&texts.join("\n"));
    let bytes = terminal_bytes(&mut pane);
    let (screen, effects) = on_screen(&bytes);
    assert_eq!(effects, Vec::<String>::new(), "{screen}");
    assert!(!bytes.contains(&0x07));
    assert!(!bytes.windows(2).any(|w| w == b"\x1b]" || w == [0xc2, 0x9b]));
    // The draft keeps the readable text with the controls stripped (tabs and newlines are
    // text and stay; nothing else is lost).
    let draft = pane.draft();
    assert!(
        !draft
            .chars()
            .any(|c| c != '\n' && c != '\t' && c.is_control()),
        "{draft:?}"
    );
    assert!(draft.starts_with("clear [2J[H screen\n"), "{draft:?}");
    assert!(draft.contains("</referenced-sessions>"));
    assert!(screen.contains("json {\"a\":[1,{\"b\":null}]}"), "{screen}");
    // Restoring a draft with controls (e.g. from history) is just as inert.
    pane.restore_draft(&texts.join(" "));
    let (screen, effects) = on_screen(&terminal_bytes(&mut pane));
    assert_eq!(effects, Vec::<String>::new(), "{screen}");
}

// ---------------------------------------------------------------------------------------
// The real app in a pseudo-terminal.

use dsh_store::event::{TitleData, TitleSource};
use dsh_store::{
    ContentBlock, EventData, Message, NewEvent, Role, SessionHeader, SessionStore, Source,
};
use portable_pty::{CommandBuilder, PtySize, native_pty_system};
use std::time::{Duration, Instant};

/// A store with hostile sessions: id, title, cwd, user and assistant text all hostile.
fn hostile_store(root: &Path, texts: &[String]) {
    let store = SessionStore::new(root);
    for (n, id) in ["evil", "evil\u{1b}]0;pwned\u{7}\u{9b}2J-other"]
        .iter()
        .enumerate()
    {
        let cwd = format!("/tmp/{}", texts[(n + 3) % texts.len()]);
        let header = SessionHeader::new(*id, 1_700_000_000_000 + n as i64, Some(cwd));
        let mut w = store.open_writer(id, Some(header)).unwrap();
        let reply = Message::new(
            Role::Assistant,
            vec![ContentBlock::text(texts.join("\n"))],
            Source::model("offline", "offline"),
        );
        w.append(dsh_store::layout::in_turns(
            1,
            [
                NewEvent::appended(EventData::UserMessage(Message::user_text(texts.join("\n")))),
                NewEvent::appended(EventData::AssistantMessage {
                    turn: 1,
                    step: 1,
                    message: reply,
                    usage: None,
                    extra: serde_json::Map::new(),
                }),
                NewEvent::plain(EventData::SessionTitle(TitleData {
                    title: texts[(n + 2) % texts.len()].clone(),
                    message_seqs: vec![],
                    source: TitleSource {
                        kind: "user".into(),
                        extra: serde_json::Map::new(),
                    },
                    extra: serde_json::Map::new(),
                })),
            ],
        ))
        .unwrap();
    }
}

/// The real app in a pseudo-terminal, its output fed to a VT100 parser that records side
/// effects, and kept raw too.
struct AppPty {
    parser: Arc<Mutex<vt100::Parser<SideEffects>>>,
    raw: Arc<Mutex<Vec<u8>>>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
}

impl AppPty {
    fn start(dir: &Path, root: &Path, config: &Path, args: &[&str], env: &[(&str, &str)]) -> Self {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows: H,
                cols: W,
                pixel_width: 0,
                pixel_height: 0,
            })
            .unwrap();
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_dsh-refs"));
        cmd.env(
            "XDG_CACHE_HOME",
            std::env::temp_dir().join("dsh-refs-test-cache"),
        );
        cmd.args(args);
        cmd.arg("--store");
        cmd.arg(root);
        cmd.arg("--config");
        cmd.arg(config);
        // Never list the machine's own Claude Code / Codex sessions.
        cmd.arg("--no-foreign-sources");
        cmd.cwd(dir);
        cmd.env("TERM", "xterm-256color");
        cmd.env("XDG_DATA_HOME", dir.join("data"));
        cmd.env("XDG_CONFIG_HOME", dir.join("config"));
        cmd.env_remove("DSH_REFS_STORE");
        cmd.env_remove("DSH_REFS_CONFIG");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = pty.slave.spawn_command(cmd).unwrap();
        drop(pty.slave);
        let parser = Arc::new(Mutex::new(vt100::Parser::new_with_callbacks(
            H,
            W,
            0,
            SideEffects::default(),
        )));
        let raw = Arc::new(Mutex::new(Vec::<u8>::new()));
        let writer = Arc::new(Mutex::new(pty.master.take_writer().unwrap()));
        let mut reader = pty.master.try_clone_reader().unwrap();
        {
            let (parser, raw, writer) =
                (Arc::clone(&parser), Arc::clone(&raw), Arc::clone(&writer));
            std::thread::spawn(move || {
                let _master = pty.master;
                let mut buf = [0u8; 8192];
                while let Ok(n) = reader.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    let bytes = &buf[..n];
                    // Answer the device attributes query like a plain terminal (quick startup).
                    if bytes.windows(3).any(|w| w == b"\x1b[c") {
                        let _ = writer.lock().unwrap().write_all(b"\x1b[?62;22c");
                    }
                    raw.lock().unwrap().extend_from_slice(bytes);
                    parser.lock().unwrap().process(bytes);
                }
            });
        }
        AppPty {
            parser,
            raw,
            writer,
            child,
        }
    }

    fn wait_for(&self, needle: &str) -> String {
        let start = Instant::now();
        loop {
            let screen = self.parser.lock().unwrap().screen().contents();
            if screen.contains(needle) {
                return screen;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "timed out waiting for {needle:?}; screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(30));
        }
    }

    fn send(&self, bytes: &[u8]) {
        let mut w = self.writer.lock().unwrap();
        w.write_all(bytes).unwrap();
        w.flush().unwrap();
    }

    fn type_text(&self, text: &str) {
        for c in text.chars() {
            self.send(c.to_string().as_bytes());
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Stop the app; (side effects seen by the parser, raw output).
    fn finish(mut self) -> (Vec<String>, Vec<u8>) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let effects = self.parser.lock().unwrap().callbacks().0.clone();
        let raw = self.raw.lock().unwrap().clone();
        (effects, raw)
    }
}

impl Drop for AppPty {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
    }
}

#[test]
fn the_app_shows_hostile_sessions_without_obeying_their_escapes() {
    let texts = hostile_texts();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    hostile_store(&root, &texts);
    let config = dir.path().join("config.toml");
    fs::write(&config, "[model]\nprovider = \"offline\"\n").unwrap();
    let app = AppPty::start(dir.path(), &root, &config, &["--resume", "evil"], &[]);

    // The transcript and header of the hostile session, then the popup with the other one.
    let transcript = app.wait_for("\\x1B");
    app.send(b"@");
    // The popup's count shows once its rows arrived, with the preview (hostile text too);
    // Alt+P hides the preview so the row's id has the whole width.
    let previewed = app.wait_for("messages kept");
    app.send(b"\x1bp");
    let popup = app.wait_for("\\x9B2J-other");
    if std::env::var_os("SHOW_SCREENS").is_some() {
        eprintln!("{transcript}\n----\n{previewed}\n----\n{popup}");
    }
    let (effects, raw) = app.finish();
    assert_eq!(
        effects,
        Vec::<String>::new(),
        "{transcript}\n{previewed}\n{popup}"
    );
    assert!(!raw.contains(&0x07), "raw BEL reached the terminal");
    assert!(
        !raw.windows(2)
            .any(|w| w == b"\x1b]" || w == [0xc2, 0x9b] || w == [0xc2, 0x9d]),
        "OSC or C1 reached the terminal"
    );
    // The escapes are shown, not obeyed: the popup still lists the other session.
    assert!(popup.contains("\\x9B2J-other"), "{popup}");
}

#[test]
fn a_provider_failure_in_the_app_keeps_the_message_in_the_log_and_in_history() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let config = dir.path().join("config.toml");
    // Nothing listens on port 1: every attempt fails at once.
    fs::write(
        &config,
        "[model]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:1\"\napi_key_env = \"DSH_REFS_TEST_KEY\"\nmax_retries = 1\ntimeout_secs = 5\n",
    )
    .unwrap();
    let app = AppPty::start(
        dir.path(),
        &root,
        &config,
        &[],
        &[("DSH_REFS_TEST_KEY", "sk-test")],
    );
    app.wait_for("Ask anything");
    app.type_text("please keep this question");
    app.send(b"\r");
    let failed = app.wait_for("LLM_NETWORK");
    assert!(failed.contains("please keep this question"), "{failed}");
    // The text comes back with Up (input history): the draft is not lost.
    app.send(b"\x1b[A");
    let recalled = app.wait_for("│please keep this question");
    let _ = app.finish();
    let store = SessionStore::new(&root);
    let sessions = dsh_store::SessionQuery::list_sessions(&store).unwrap();
    assert_eq!(sessions.len(), 1, "{recalled}");
    let events = store
        .open_writer(&sessions[0].id, None)
        .unwrap()
        .read_all_events()
        .unwrap();
    let direct: Vec<String> = events
        .iter()
        .filter_map(|e| e.message())
        .filter(|m| m.is_direct_user())
        .map(Message::joined_text)
        .collect();
    assert_eq!(direct, ["please keep this question"]);
    match events.last().map(|e| &e.data) {
        Some(EventData::TurnEnd { reason, .. }) => assert_eq!(reason.kind.as_str(), "error"),
        other => panic!("turn/end expected, got {other:?}"),
    }
}
