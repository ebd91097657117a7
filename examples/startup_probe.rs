//! Start-up probe for the app (docs/performance.md): runs the real binary in a pseudo-terminal,
//! feeds its output to a VT100 parser and times (1) start to the first drawn frame and
//! (2) the `@` key to the first candidate rows in the popup.
//!
//! `startup_probe BIN STORE [RUNS] [WAIT_MS]`: `BIN` is `target/release/dsh-refs`, STORE a
//! store such as `prepare_big many` writes (its titles start with `topic`). `@` is typed
//! right after the first frame — started in a new project directory each run, then in one
//! kept directory (`STORE.probe-project`, where the app remembers the popup's first page
//! from the run before) — and again in a last round after `WAIT_MS` (default 1500) of idle,
//! when the listing started in the background has arrived. The header/title index is
//! kept in `STORE.probe-cache` (run `dsh-refs --store STORE candidates` with
//! `XDG_CACHE_HOME` set to it once for a warm start). Full-text search indexing is off
//! unless `DSH_PROBE_SEARCH` is set. Prints every run and the medians.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // probe code: a failure should stop it
#![allow(clippy::cast_precision_loss)] // milliseconds for printing

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

const ROWS: u16 = 36;
const COLS: u16 = 120;
/// The offline provider; `DSH_PROBE_SEARCH=1` keeps the full-text indexing the app starts
/// (on a large store it reads every log in the background and competes for the cores).
const CONFIG: &str = "[model]\nprovider = \"offline\"\n";
const CONFIG_NO_SEARCH: &str = "[model]\nprovider = \"offline\"\n[search]\nenabled = false\n";
/// Longest wait for anything before a run is reported as failed.
const GIVE_UP: Duration = Duration::from_secs(30);

/// What one run measured.
struct Run {
    first_frame: Duration,
    popup_rows: Duration,
}

fn screen_text(screen: &Mutex<vt100::Parser>) -> String {
    screen.lock().unwrap().screen().contents()
}

/// Poll the screen every millisecond until `pred` holds; the time it took.
fn wait_until(screen: &Mutex<vt100::Parser>, pred: impl Fn(&str) -> bool) -> Duration {
    let start = Instant::now();
    loop {
        if pred(&screen_text(screen)) {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < GIVE_UP,
            "gave up; screen:\n{}",
            screen_text(screen)
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// One start of the app in `project` (or a new directory under `scratch`).
fn run_once(
    bin: &Path,
    store: &Path,
    scratch: &Path,
    project: Option<&Path>,
    idle_before_key: Duration,
) -> Run {
    let pty = native_pty_system()
        .openpty(PtySize {
            rows: ROWS,
            cols: COLS,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap();
    let config = scratch.join("config.toml");
    let search = std::env::var_os("DSH_PROBE_SEARCH").is_some();
    std::fs::write(&config, if search { CONFIG } else { CONFIG_NO_SEARCH }).unwrap();
    let project = project.map_or_else(|| scratch.join("project"), Path::to_owned);
    std::fs::create_dir_all(&project).unwrap();
    let mut cmd = CommandBuilder::new(bin);
    cmd.args(["--no-foreign-sources", "--store"]);
    cmd.arg(store);
    cmd.arg("--config");
    cmd.arg(&config);
    cmd.cwd(&project);
    cmd.env("TERM", "xterm-256color");
    cmd.env("XDG_CACHE_HOME", cache_dir(store));
    cmd.env("XDG_DATA_HOME", scratch.join("data"));
    cmd.env("XDG_CONFIG_HOME", scratch.join("config"));
    cmd.env_remove("DSH_REFS_STORE");
    cmd.env_remove("DSH_REFS_CONFIG");
    let started = Instant::now();
    let mut child = pty.slave.spawn_command(cmd).unwrap();
    drop(pty.slave);
    let screen = Arc::new(Mutex::new(vt100::Parser::new(ROWS, COLS, 0)));
    let writer = Arc::new(Mutex::new(pty.master.take_writer().unwrap()));
    let mut reader = pty.master.try_clone_reader().unwrap();
    {
        let (screen, writer) = (Arc::clone(&screen), Arc::clone(&writer));
        std::thread::spawn(move || {
            let _master = pty.master;
            let mut buf = [0u8; 16384];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let bytes = &buf[..n];
                // Answer the device attributes query like a terminal without the kitty
                // keyboard protocol.
                if bytes.windows(3).any(|w| w == b"\x1b[c") {
                    let _ = writer.lock().unwrap().write_all(b"\x1b[?62;22c");
                }
                screen.lock().unwrap().process(bytes);
            }
        });
    }
    // The first frame: the composer's status line is on screen.
    let _ = wait_until(&screen, |s| !s.trim().is_empty());
    let first_frame = started.elapsed();
    std::thread::sleep(idle_before_key);
    let key = Instant::now();
    {
        let mut w = writer.lock().unwrap();
        w.write_all(b"@").unwrap();
        w.flush().unwrap();
    }
    let _ = wait_until(&screen, |s| s.contains("topic "));
    let popup_rows = key.elapsed();
    let _ = child.kill();
    let _ = child.wait();
    Run {
        first_frame,
        popup_rows,
    }
}

fn cache_dir(store: &Path) -> PathBuf {
    let mut name = store.as_os_str().to_owned();
    name.push(".probe-cache");
    PathBuf::from(name)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(bin), Some(store)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: startup_probe BIN STORE [RUNS] [WAIT_MS]");
        std::process::exit(2);
    };
    let runs: usize = args.get(3).map_or(5, |r| r.parse().unwrap());
    let wait = Duration::from_millis(args.get(4).map_or(1500, |w| w.parse().unwrap()));
    let (bin, store) = (PathBuf::from(bin), PathBuf::from(store));
    println!("cache (XDG_CACHE_HOME): {}", cache_dir(&store).display());
    // The app remembers the `@` popup's first page per project directory: a new directory
    // every run is a first start there; one kept directory is the daily case.
    let daily = PathBuf::from(format!("{}.probe-project", store.display()));
    for (round, idle, project) in [
        ("@ at once, new project dir", Duration::ZERO, None),
        (
            "@ at once, same project dir",
            Duration::ZERO,
            Some(daily.as_path()),
        ),
        ("@ after idle", wait, None),
    ] {
        let (mut frames, mut popups) = (Vec::new(), Vec::new());
        for n in 0..runs {
            let scratch = tempfile::tempdir().unwrap();
            let run = run_once(&bin, &store, scratch.path(), project, idle);
            println!(
                "{round} run {n}: first frame {:.1} ms, @ → rows {:.1} ms",
                ms(run.first_frame),
                ms(run.popup_rows)
            );
            frames.push(ms(run.first_frame));
            popups.push(ms(run.popup_rows));
        }
        println!(
            "{round}: median first frame {:.1} ms, median @ → rows {:.1} ms",
            median(frames),
            median(popups)
        );
    }
}
