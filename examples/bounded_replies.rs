//! Stopping times and peak memory of replies (issue 23 items 2-4, docs/performance.md).
//!
//! `bounded_replies stream BIN [SECONDS]` starts an OpenAI-compatible server on 127.0.0.1
//! that answers every request with an endless stream (a 64 KiB delta again and again, as
//! fast as the client reads) and runs the release binary BIN against it:
//! - `send` with the default bounds (the reply is cut at `max_reply_bytes`, 4 MiB), then
//!   the next `send` to the same session (a server answering briefly) and `check`;
//! - `send` with the bounds out of reach (`max_reply_bytes` 1 GiB, lines of 7 GiB), sent
//!   SIGINT after SECONDS (default 3): the time from the signal to the exit;
//! - `send` against a trickle (one delta every 500 ms) with `max_turn_secs = 3`;
//! - the app in a pseudo-terminal, bounds out of reach: a prompt, then Esc (and in a second
//!   run Ctrl+C) after SECONDS; the time from the key to the turn's end in the log, and the
//!   app's peak RSS then (`VmHWM`).
//!
//! Peak RSS is the process's `VmHWM`, sampled every 5 ms until it exits. With `BEFORE_BIN`
//! set in the environment, the first `send` is also run with that binary, killed after 20 s
//! if it does not stop by itself. Prints one line per run.
//!
//! `bounded_replies session DIR GB` writes a store with one session of about GB gigabytes
//! (16 KiB user and assistant messages) whose every 10 000th reply is one 40 MiB line (as an
//! earlier version wrote a big reply: over the default 32 MiB line limit).
//! `bounded_replies big BIN DIR` runs `send`, `prepare`, `check` and the app (`--resume`,
//! to the first frame showing the session, then a prompt answered) on it, with time and
//! peak RSS.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a measuring tool: a failure should stop it
#![allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)] // sizes and times for display; a size in GB from the command line

use std::fs;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// How the server streams.
#[derive(Clone, Copy)]
enum Flow {
    /// A 64 KiB delta after another, as fast as the client reads.
    Endless,
    /// A short delta every 500 ms.
    Trickle,
    /// One short answer, then the end of the stream.
    Short,
}

/// Start the server on a thread of its own; its base URL.
fn start_server(flow: Flow) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            while let Ok((mut socket, _)) = listener.accept().await {
                tokio::spawn(async move {
                    // The request head and body (content-length), then the endless answer.
                    let mut buf = Vec::new();
                    let mut tmp = vec![0u8; 65536];
                    loop {
                        let Ok(n) = socket.read(&mut tmp).await else {
                            return;
                        };
                        if n == 0 {
                            return;
                        }
                        buf.extend_from_slice(&tmp[..n]);
                        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
                            let len: usize = head
                                .lines()
                                .find_map(|l| l.strip_prefix("content-length:"))
                                .map_or(0, |v| v.trim().parse().unwrap_or(0));
                            if buf.len() >= end + 4 + len {
                                break;
                            }
                        }
                    }
                    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
                    if socket.write_all(head.as_bytes()).await.is_err() {
                        return;
                    }
                    let (text, gap) = match flow {
                        Flow::Endless => ("x".repeat(64 * 1024), Duration::ZERO),
                        Flow::Trickle => ("tick ".to_owned(), Duration::from_millis(500)),
                        Flow::Short => ("a short answer".to_owned(), Duration::ZERO),
                    };
                    let event = format!(
                        "data: {}\n\n",
                        json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})
                    );
                    if let Flow::Short = flow {
                        let end = format!(
                            "{event}data: {}\n\ndata: [DONE]\n\n",
                            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
                        );
                        let _ = socket.write_all(end.as_bytes()).await;
                        return;
                    }
                    loop {
                        if socket.write_all(event.as_bytes()).await.is_err() {
                            return;
                        }
                        if !gap.is_zero() {
                            tokio::time::sleep(gap).await;
                        }
                    }
                });
            }
        });
    });
    format!("http://{}/v1", rx.recv().unwrap())
}

fn config(dir: &Path, base_url: &str, extra: &str) -> PathBuf {
    let path = dir.join("config.toml");
    fs::write(
        &path,
        format!(
            "[model]\nprovider = \"openai\"\nbase_url = \"{base_url}\"\napi_key_env = \"BOUNDED_KEY\"\nmax_retries = 0\ntimeout_secs = 30\n{extra}[search]\nenabled = false\n"
        ),
    )
    .unwrap();
    path
}

/// Bytes of every file under `dir`.
fn bytes_under(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let meta = e.metadata().unwrap();
            if meta.is_dir() {
                stack.push(e.path());
            } else {
                total += meta.len();
            }
        }
    }
    total
}

/// What one run of the binary gave.
struct Timed {
    status: String,
    peak_kib: u64,
    wall: f64,
    stdout_bytes: usize,
    stderr: String,
    /// From the signal to the exit.
    after_signal: Option<Duration>,
}

/// The high-water mark of `pid`'s resident set (KiB), 0 once it is gone.
fn vm_hwm(pid: u32) -> u64 {
    fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Run BIN with `args`, sampling its peak RSS (`VmHWM`) every 5 ms; SIGINT after
/// `signal_after`, SIGKILL after `kill_after`.
fn timed(
    bin: &Path,
    args: &[&str],
    store: &Path,
    config: &Path,
    signal_after: Option<Duration>,
    kill_after: Duration,
) -> Timed {
    let mut child = Command::new(bin)
        .arg("--store")
        .arg(store)
        .arg("--config")
        .arg(config)
        .arg("--no-foreign-sources")
        .args(args)
        .env("BOUNDED_KEY", "sk-local")
        .env("XDG_CACHE_HOME", store.with_extension("cache"))
        .env_remove("DSH_REFS_STORE")
        .env_remove("DSH_REFS_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_thread = std::thread::spawn(move || {
        let mut n = 0;
        let mut buf = vec![0u8; 1 << 16];
        while let Ok(k) = out.read(&mut buf) {
            if k == 0 {
                break;
            }
            n += k;
        }
        n
    });
    let err_thread = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let started = Instant::now();
    let mut signalled: Option<Instant> = None;
    let mut peak_kib = 0;
    let status = loop {
        peak_kib = peak_kib.max(vm_hwm(pid));
        if let Some(status) = child.try_wait().unwrap() {
            break format!("{status}");
        }
        if let Some(after) = signal_after
            && signalled.is_none()
            && started.elapsed() >= after
        {
            let _ = Command::new("kill")
                .args(["-INT", &pid.to_string()])
                .status();
            signalled = Some(Instant::now());
        }
        if started.elapsed() >= kill_after {
            let _ = child.kill();
            let status = child.wait().unwrap();
            break format!("killed after {kill_after:?} ({status})");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let wall = started.elapsed().as_secs_f64();
    let after_signal = signalled.map(|t| t.elapsed());
    let stdout_bytes = out_thread.join().unwrap();
    let stderr = err_thread.join().unwrap();
    Timed {
        status,
        peak_kib,
        wall,
        stdout_bytes,
        stderr: stderr
            .lines()
            .filter(|l| l.starts_with("dsh-refs"))
            .map(|l| l.chars().take(300).collect::<String>())
            .collect::<Vec<_>>()
            .join(" | "),
        after_signal,
    }
}

fn report(name: &str, t: &Timed, store: &Path) {
    println!(
        "{name}: {} | peak RSS {:.1} MiB | wall {:.2} s{} | stdout {:.1} MiB | store {:.1} MiB | {}",
        t.status,
        t.peak_kib as f64 / 1024.0,
        t.wall,
        t.after_signal
            .map(|d| format!(" | SIGINT to exit {:.0} ms", d.as_secs_f64() * 1000.0))
            .unwrap_or_default(),
        t.stdout_bytes as f64 / 1_048_576.0,
        bytes_under(store) as f64 / 1_048_576.0,
        t.stderr
    );
}

/// Bounds out of reach: a 1 GiB reply in lines of up to 7 GiB.
const OUT_OF_REACH: &str = "max_reply_bytes = 1073741824\n[store]\nmax_line_bytes = 7516192768\n";

fn stream(bin: &Path, seconds: u64) {
    let scratch = tempfile::tempdir().unwrap();
    let endless = start_server(Flow::Endless);
    let trickle = start_server(Flow::Trickle);
    let short = start_server(Flow::Short);
    let run_dir = |name: &str| {
        let d = scratch.path().join(name);
        fs::create_dir_all(&d).unwrap();
        d
    };
    // `send --cwd` names a directory that exists.
    let proj = scratch.path().join("proj");
    fs::create_dir_all(&proj).unwrap();
    let proj = proj.to_string_lossy().into_owned();
    let send = ["send", "--session", "s", "--cwd", &proj, "write forever"];
    // 1. Default bounds.
    let d = run_dir("default");
    let c = config(&d, &endless, "");
    let t = timed(
        bin,
        &send,
        &d.join("store"),
        &c,
        None,
        Duration::from_secs(120),
    );
    report("send, default bounds (4 MiB)", &t, &d.join("store"));
    // 1b. The session stays usable: the next send (to a server that answers briefly) and
    // a check of the store.
    let c = config(&d, &short, "");
    let t = timed(
        bin,
        &["send", "--session", "s", "now briefly"],
        &d.join("store"),
        &c,
        None,
        Duration::from_secs(120),
    );
    report("next send, same session", &t, &d.join("store"));
    let t = timed(
        bin,
        &["check"],
        &d.join("store"),
        &c,
        None,
        Duration::from_secs(120),
    );
    report("check, same store", &t, &d.join("store"));
    if let Some(before) = std::env::var_os("BEFORE_BIN") {
        let d = run_dir("before");
        let c = config(&d, &endless, "");
        let t = timed(
            Path::new(&before),
            &send,
            &d.join("store"),
            &c,
            None,
            Duration::from_secs(20),
        );
        report("send, before (no bound)", &t, &d.join("store"));
    }
    // 2. Out of reach, SIGINT.
    let d = run_dir("sigint");
    let c = config(&d, &endless, OUT_OF_REACH);
    let t = timed(
        bin,
        &send,
        &d.join("store"),
        &c,
        Some(Duration::from_secs(seconds)),
        Duration::from_secs(120),
    );
    report(
        &format!("send, bounds out of reach, SIGINT after {seconds} s"),
        &t,
        &d.join("store"),
    );
    // 3. Trickle against the turn deadline.
    let d = run_dir("trickle");
    let c = config(&d, &trickle, "max_turn_secs = 3\n");
    let t = timed(
        bin,
        &send,
        &d.join("store"),
        &c,
        None,
        Duration::from_secs(120),
    );
    report("send, trickle, max_turn_secs = 3", &t, &d.join("store"));
    // 4. The app with the default bounds: the reply is cut at 4 MiB.
    let d = run_dir("app-default");
    let c = config(&d, &endless, "");
    app_stop(bin, &d, &c, None, Duration::ZERO, "default bounds");
    // 5. The app, bounds out of reach, Esc and Ctrl+C.
    for (key, bytes) in [("Esc", &b"\x1b"[..]), ("Ctrl+C", &b"\x03"[..])] {
        let d = run_dir(&format!("app-{key}"));
        let c = config(&d, &endless, OUT_OF_REACH);
        app_stop(
            bin,
            &d,
            &c,
            Some((key, bytes)),
            Duration::from_secs(seconds),
            "bounds out of reach",
        );
    }
}

const ROWS: u16 = 36;
const COLS: u16 = 120;

/// The app in a pseudo-terminal; returns the screen, the input writer and the child.
struct App {
    screen: Arc<Mutex<vt100::Parser>>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
}

fn start_app(bin: &Path, dir: &Path, config: &Path, store: &Path, extra: &[&str]) -> App {
    let pty = native_pty_system()
        .openpty(PtySize {
            rows: ROWS,
            cols: COLS,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap();
    let mut cmd = CommandBuilder::new(bin);
    cmd.args(["--no-foreign-sources", "--store"]);
    cmd.arg(store);
    cmd.arg("--config");
    cmd.arg(config);
    cmd.args(extra);
    let project = dir.join("project");
    fs::create_dir_all(&project).unwrap();
    cmd.cwd(&project);
    cmd.env("TERM", "xterm-256color");
    cmd.env("BOUNDED_KEY", "sk-local");
    cmd.env("XDG_CACHE_HOME", dir.join("cache"));
    cmd.env("XDG_DATA_HOME", dir.join("data"));
    cmd.env("XDG_CONFIG_HOME", dir.join("config"));
    cmd.env_remove("DSH_REFS_STORE");
    cmd.env_remove("DSH_REFS_CONFIG");
    let child = pty.slave.spawn_command(cmd).unwrap();
    drop(pty.slave);
    let screen = Arc::new(Mutex::new(vt100::Parser::new(ROWS, COLS, 0)));
    let writer: Arc<Mutex<Box<dyn Write + Send>>> =
        Arc::new(Mutex::new(pty.master.take_writer().unwrap()));
    let mut reader = pty.master.try_clone_reader().unwrap();
    {
        let (screen, writer) = (Arc::clone(&screen), Arc::clone(&writer));
        std::thread::spawn(move || {
            let _master = pty.master;
            let mut buf = vec![0u8; 65536];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let bytes = &buf[..n];
                if bytes.windows(3).any(|w| w == b"\x1b[c") {
                    let _ = writer.lock().unwrap().write_all(b"\x1b[?62;22c");
                }
                screen.lock().unwrap().process(bytes);
            }
        });
    }
    App {
        screen,
        writer,
        child,
    }
}

impl App {
    fn text(&self) -> String {
        self.screen.lock().unwrap().screen().contents()
    }

    fn wait(&self, what: &str, give_up: Duration, pred: impl Fn(&str) -> bool) -> Duration {
        let start = Instant::now();
        loop {
            if pred(&self.text()) {
                return start.elapsed();
            }
            assert!(
                start.elapsed() < give_up,
                "gave up waiting for {what}; screen:\n{}",
                self.text()
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    fn keys(&self, bytes: &[u8]) {
        let mut w = self.writer.lock().unwrap();
        w.write_all(bytes).unwrap();
        w.flush().unwrap();
    }

    fn peak_kib(&self) -> u64 {
        let pid = self.child.process_id().unwrap();
        let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
            .unwrap_or(0)
    }

    fn quit(mut self) {
        self.keys(b"/quit\r");
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(10) {
            if self.child.try_wait().unwrap().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether `store`'s only log ends with a `turn/end` (read from the end of the file).
fn log_ends_turn(store: &Path) -> bool {
    let mut stack = vec![store.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "session.jsonl") {
                let mut f = fs::File::open(&p).unwrap();
                let len = f.metadata().unwrap().len();
                let from = len.saturating_sub(4096);
                std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(from)).unwrap();
                let mut tail = String::new();
                let _ = f.read_to_string(&mut tail);
                return tail
                    .lines()
                    .last()
                    .is_some_and(|l| l.contains("\"type\":\"turn/end\""));
            }
        }
    }
    false
}

/// The app streaming an endless reply: with `key`, the key is pressed after `wait` and the
/// time to the turn's end in the log is measured; without, the time from Enter to it.
fn app_stop(
    bin: &Path,
    dir: &Path,
    config: &Path,
    key: Option<(&str, &[u8])>,
    wait: Duration,
    bounds: &str,
) {
    let store = dir.join("store");
    let app = start_app(bin, dir, config, &store, &[]);
    app.wait("the first frame", Duration::from_secs(30), |s| {
        !s.trim().is_empty()
    });
    app.keys(b"write forever\r");
    let entered = Instant::now();
    std::thread::sleep(wait);
    let before_key = app.peak_kib();
    let logged = bytes_under(&store);
    let pressed = Instant::now();
    if let Some((_, bytes)) = key {
        app.keys(bytes);
    }
    let mut stopped = None;
    while pressed.elapsed() < Duration::from_secs(60) {
        if log_ends_turn(&store) {
            stopped = Some(pressed.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let peak = app.peak_kib();
    let what = match key {
        Some((name, _)) => format!(
            "app, {bounds}, {name} after {:.0} s: {}",
            wait.as_secs_f64(),
            stopped.map_or("did not stop within 60 s".to_owned(), |d| format!(
                "{name} to turn/end {:.0} ms",
                d.as_secs_f64() * 1000.0
            ))
        ),
        None => format!(
            "app, {bounds}: {}",
            stopped.map_or("did not stop within 60 s".to_owned(), |_| format!(
                "Enter to turn/end {:.0} ms",
                entered.elapsed().as_secs_f64() * 1000.0
            ))
        ),
    };
    println!(
        "{what} | peak RSS {:.1} MiB ({:.1} MiB at the key) | store {:.1} MiB at the key, {:.1} MiB after",
        peak as f64 / 1024.0,
        before_key as f64 / 1024.0,
        logged as f64 / 1_048_576.0,
        bytes_under(&store) as f64 / 1_048_576.0,
    );
    app.quit();
}

// ---------------------------------------------------------------------------------------
// The big session

const BIG_ID: &str = "big-session";

fn session(dir: &Path, gb: f64) {
    let store = dir.join("store");
    let sdir = store.join("_no-cwd").join(BIG_ID);
    fs::create_dir_all(&sdir).unwrap();
    let mut out = BufWriter::with_capacity(
        1 << 20,
        fs::File::create(sdir.join("session.jsonl")).unwrap(),
    );
    writeln!(
        out,
        "{}",
        json!({"type": "session", "version": 0, "id": BIG_ID, "createdAt": 1, "delegationDepth": 0})
    )
    .unwrap();
    let target = (gb * 1e9) as u64;
    let body = "lorem ipsum dolor sit amet ".repeat(16 * 1024 / 27);
    let huge = "the long reply of an earlier version ".repeat(40 * 1024 * 1024 / 37);
    let (mut seq, mut written, mut turn) = (0u64, 0u64, 0u64);
    let line = |out: &mut BufWriter<fs::File>, v: serde_json::Value, written: &mut u64| {
        let s = v.to_string();
        *written += s.len() as u64 + 1;
        writeln!(out, "{s}").unwrap();
    };
    while written < target {
        turn += 1;
        let user = json!({"type": "user/message", "seq": seq + 1, "time": 1, "data": {"id": format!("u{turn}"), "role": "user", "content": [{"type": "text", "text": format!("question {turn}: {body}")}], "source": {"kind": "user"}}, "surfaceOp": "append"});
        let reply_text = if turn % 10_000 == 0 { &huge } else { &body };
        let reply = json!({"type": "assistant/message", "seq": seq + 3, "time": 2, "data": {"turn": turn, "step": 1, "message": {"id": format!("a{turn}"), "role": "assistant", "content": [{"type": "text", "text": format!("answer {turn}: {reply_text}")}], "source": {"kind": "model", "provider": "offline", "model": "offline"}}}, "surfaceOp": "append"});
        for v in [
            json!({"type": "turn/start", "seq": seq, "time": 1, "data": {"turn": turn, "trigger": {"kind": "message", "source": {"kind": "user"}}}}),
            user,
            json!({"type": "step/start", "seq": seq + 2, "time": 1, "data": {"turn": turn, "step": 1}}),
            reply,
            json!({"type": "step/end", "seq": seq + 4, "time": 2, "data": {"turn": turn, "step": 1}}),
            json!({"type": "turn/end", "seq": seq + 5, "time": 2, "data": {"turn": turn, "reason": {"kind": "completed"}}}),
        ] {
            line(&mut out, v, &mut written);
        }
        seq += 6;
    }
    out.flush().unwrap();
    println!(
        "wrote {} turns, {seq} events, {:.2} GB, {} lines of 40 MiB",
        turn,
        written as f64 / 1e9,
        turn / 10_000
    );
}

fn big(bin: &Path, dir: &Path) {
    let store = dir.join("store");
    let c = dir.join("offline.toml");
    fs::write(
        &c,
        "[model]\nprovider = \"offline\"\n[search]\nenabled = false\n",
    )
    .unwrap();
    let long = Duration::from_secs(1800);
    let mention = format!(
        "what did we say in {}",
        dsh_reference::format_mention(BIG_ID, Some("big"))
    );
    for (name, args) in [
        ("check --session", vec!["check", "--session", BIG_ID]),
        (
            "prepare (mention)",
            vec!["prepare", "--session", "other", "--json", mention.as_str()],
        ),
        (
            "send (continue)",
            vec!["send", "--session", BIG_ID, "one more question"],
        ),
    ] {
        let t = timed(bin, &args, &store, &c, None, long);
        report(name, &t, &store);
    }
    // The app: resume the session, to the first frame that shows it, then one prompt.
    let app_dir = dir.join("app");
    fs::create_dir_all(&app_dir).unwrap();
    let started = Instant::now();
    let app = start_app(bin, &app_dir, &c, &store, &["--resume", BIG_ID]);
    let shown = app.wait(
        "the session's newest reply",
        Duration::from_secs(600),
        |s| s.contains("one more question") || s.contains("answer "),
    );
    let peak_open = app.peak_kib();
    app.keys(b"and another\r");
    let answered = Instant::now();
    let before = bytes_under(&store);
    while answered.elapsed() < Duration::from_secs(600) {
        if bytes_under(&store) > before && log_ends_turn(&store) {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    println!(
        "app --resume: shown after {:.2} s (peak RSS {:.1} MiB); a prompt answered {:.2} s later (peak RSS {:.1} MiB)",
        shown.as_secs_f64(),
        peak_open as f64 / 1024.0,
        answered.elapsed().as_secs_f64(),
        app.peak_kib() as f64 / 1024.0
    );
    let _ = started;
    app.quit();
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bin = |i: usize| fs::canonicalize(&args[i]).unwrap();
    match args.get(1).map(String::as_str) {
        Some("stream") => stream(&bin(2), args.get(3).map_or(3, |s| s.parse().unwrap())),
        Some("session") => session(Path::new(&args[2]), args[3].parse().unwrap()),
        Some("big") => big(&bin(2), Path::new(&args[3])),
        _ => {
            eprintln!("usage: bounded_replies stream BIN [SECONDS] | session DIR GB | big BIN DIR");
        }
    }
}
