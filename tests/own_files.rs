//! Our own files read by the real binary (issue 23, item 6): a config file or a search
//! index that is a FIFO, a device, huge, or holds a huge line is refused at once, with a
//! short, sanitised, multi-line message — never a hang, never gigabytes, never the whole
//! line echoed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A temporary home with the platform dirs inside it.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        Home {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The binary under `sh -c 'ulimit -v …'` (1 GiB of address space: a regression that
    /// reads a device whole fails instead of eating the machine), killed after a minute (a
    /// regression that blocks fails instead of hanging the test run).
    fn run(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg("ulimit -v 1048576 && exec \"$0\" \"$@\"")
            .arg(env!("CARGO_BIN_EXE_dsh-refs"))
            .args(args)
            .current_dir(self.dir.path())
            .env_remove("DSH_REFS_STORE")
            .env_remove("DSH_REFS_CONFIG")
            .env("HOME", self.dir.path())
            .env("XDG_DATA_HOME", self.path("data"))
            .env("XDG_CACHE_HOME", self.path("cache"))
            .env("XDG_CONFIG_HOME", self.path("config-home"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        // Drained as it comes, so a long message cannot block the child on a full pipe.
        let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
            std::thread::spawn(move || {
                let mut bytes = Vec::new();
                if let Some(mut pipe) = pipe {
                    let _ = pipe.read_to_end(&mut bytes);
                }
                bytes
            })
        };
        let out = drain(child.stdout.take().map(|p| Box::new(p) as Box<_>));
        let err = drain(child.stderr.take().map(|p| Box::new(p) as Box<_>));
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > Duration::from_secs(60) {
                let _ = child.kill();
                let _ = child.wait();
                let err = err.join().unwrap();
                panic!(
                    "still running after a minute: {}",
                    String::from_utf8_lossy(&err[..err.len().min(2000)])
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        Output {
            status,
            stdout: out.join().unwrap(),
            stderr: err.join().unwrap(),
        }
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The start of a message that may be huge (for assertion output).
fn short(text: &str) -> String {
    text.chars().take(600).collect()
}

fn mkfifo(path: &Path) {
    let made = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success());
}

/// `sessions` with `--config config` on an empty store: its exit status and stderr.
fn with_config(home: &Home, config: &Path) -> (Option<i32>, String) {
    std::fs::create_dir_all(home.path("store")).unwrap();
    let out = home.run(&[
        "--config",
        config.to_str().unwrap(),
        "--store",
        home.path("store").to_str().unwrap(),
        "sessions",
    ]);
    (out.status.code(), stderr(&out))
}

#[test]
fn a_fifo_or_a_device_as_the_config_is_refused_at_once() {
    // Issue 23, break 7: a FIFO as the config hung every command; /dev/zero cost 4.2 GB.
    let home = Home::new();
    let fifo = home.path("config.toml");
    mkfifo(&fifo);
    for (config, what) in [
        (fifo.as_path(), "a FIFO"),
        (Path::new("/dev/zero"), "a device"),
    ] {
        let (code, err) = with_config(&home, config);
        assert_eq!(code, Some(1), "{}", short(&err));
        assert!(
            err.starts_with("dsh-refs: CLI_CONFIG_INVALID: "),
            "{}",
            short(&err)
        );
        assert!(
            err.contains(&config.display().to_string()),
            "{}",
            short(&err)
        );
        assert!(err.contains(what), "{}", short(&err));
    }
}

#[test]
fn a_huge_config_is_refused_without_reading_or_echoing_it() {
    // Issue 23, break 7: a 300 MB config line cost 1.2 GB and was echoed whole to stderr.
    let home = Home::new();
    let config = home.path("config.toml");
    let line = format!("[model]\nbase_url = \"{}\"\n", "h".repeat(3 << 20));
    std::fs::write(&config, line).unwrap();
    let (code, err) = with_config(&home, &config);
    assert_eq!(code, Some(1), "{}", short(&err));
    assert!(err.contains("larger than 1048576 bytes"), "{}", short(&err));
    assert!(err.len() < 400, "{} bytes of stderr", err.len());
}

#[test]
fn a_parse_error_is_quoted_in_short_sanitised_lines() {
    let home = Home::new();
    let config = home.path("config.toml");
    // A long line of the wrong type, with a terminal escape and a bidi override in it.
    let value = format!("\u{1b}[2J\u{202e}{}", "x".repeat(500_000));
    std::fs::write(
        &config,
        format!("[references]\n\nmax_references = \"{value}\"\n"),
    )
    .unwrap();
    let (code, err) = with_config(&home, &config);
    assert_eq!(code, Some(1), "{}", short(&err));
    let lines: Vec<&str> = err.lines().collect();
    assert!(lines.len() >= 3, "{}", short(&err));
    assert!(
        lines[0].starts_with(&format!(
            "dsh-refs: CLI_CONFIG_INVALID: {}: invalid TOML at line 3, column",
            config.display()
        )),
        "{}",
        short(&err)
    );
    assert!(
        lines.iter().any(|l| l.contains("max_references")),
        "{}",
        short(&err)
    );
    assert!(
        lines.iter().any(|l| l.starts_with("  3 | ")),
        "{}",
        short(&err)
    );
    for line in &lines {
        // 200 quoted characters, their escapes made visible, and a short prefix.
        assert!(line.chars().count() < 320, "a line of {} chars", line.len());
        assert!(
            !line.chars().any(|c| c.is_control() || c == '\u{202e}'),
            "{}",
            short(line)
        );
    }
    assert!(err.len() < 2000, "{} bytes of stderr", err.len());
}

/// `send` of `text` to session `id` in the home's store (offline model).
fn send(home: &Home, id: &str, text: &str) -> Output {
    std::fs::create_dir_all(home.path("store")).unwrap();
    home.run(&[
        "--store",
        home.path("store").to_str().unwrap(),
        "send",
        "--session",
        id,
        text,
    ])
}

#[cfg(unix)]
#[test]
fn a_link_at_the_usage_books_temporary_name_is_never_written_through() {
    // Issue 34, break 8: a symlink at usage.json.tmp made `send` overwrite its target.
    let home = Home::new();
    let first = send(&home, "first", "hello");
    assert!(first.status.success(), "{}", stderr(&first));
    let data = home.path("data").join("dsh-refs");
    std::fs::create_dir_all(&data).unwrap();
    let precious = home.path("precious.txt");
    std::fs::write(&precious, "not yours").unwrap();
    for name in ["usage.json.tmp", ".usage.json.tmp"] {
        std::os::unix::fs::symlink(&precious, data.join(name)).unwrap();
    }
    let mention = dsh_reference::format_mention("first", Some("first"));
    let out = send(&home, "second", &format!("{mention} what was said?"));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "not yours");
    let book = std::fs::read_to_string(data.join("usage.json")).unwrap();
    assert!(book.contains("\"first\""), "{book}");
    // A FIFO as the book is neither read (no hang) nor written through.
    std::fs::remove_file(data.join("usage.json")).unwrap();
    mkfifo(&data.join("usage.json"));
    let out = send(&home, "third", &format!("{mention} again"));
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn every_command_judges_the_config_alike_and_names_the_file() {
    // Issue 34, break 10: `max_references = 5` was accepted by `sessions`, `search` and
    // `check` and refused by `candidates`, `prepare` and `send` — without naming the file.
    let home = Home::new();
    let config = home.path("config.toml");
    std::fs::write(&config, "[references]\nmax_references = 5\n").unwrap();
    let store = home.path("store");
    std::fs::create_dir_all(&store).unwrap();
    let (config, store) = (config.to_str().unwrap(), store.to_str().unwrap());
    let commands: [&[&str]; 6] = [
        &["sessions"],
        &["search", "anything"],
        &["check"],
        &["candidates", "--session", "s"],
        &["prepare", "--session", "s", "hello"],
        &["send", "--session", "s", "hello"],
    ];
    for args in commands {
        let mut all = vec!["--config", config, "--store", store];
        all.extend_from_slice(args);
        let out = home.run(&all);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.starts_with(&format!("dsh-refs: CLI_CONFIG_INVALID: {config}: ")),
            "{args:?}: {err}"
        );
        assert!(err.contains("max_references"), "{args:?}: {err}");
    }
}
