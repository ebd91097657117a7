//! `send` when the session log cannot be written: every failure ends the command with exit 1
//! and a message naming the cause, never a hang (issue 14, finding 2).
//!
//! Each child runs under a hang guard: a run that does not end within [`HANG_GUARD`] is
//! killed and fails the test. The tests assert exit status and message, not a duration.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use dsh_store::SessionStore;

/// Far longer than any healthy `send`; only a hang reaches it.
const HANG_GUARD: Duration = Duration::from_secs(60);

struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("config.toml"),
            "[model]\nprovider = \"offline\"\n",
        )
        .unwrap();
        Fixture { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A real directory standing for the working directory `name` (`/p`): `--cwd` must
    /// name one.
    fn cwd(&self, name: &str) -> PathBuf {
        let dir = self.path().join("cwd").join(name.trim_start_matches('/'));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// The store's project directory for the working directory `name` stands for.
    fn project(&self, name: &str) -> String {
        dsh_store::paths::project_dir_name(Some(&self.cwd(name).to_string_lossy()))
    }

    fn command(&self, store: &Path, session: &str, cwd: &str, text: &str) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_dsh-refs"));
        cmd.arg("--store")
            .arg(store)
            .arg("--config")
            .arg(self.path().join("config.toml"))
            .args(["send", "--session", session, "--cwd"])
            .arg(self.cwd(cwd))
            .arg(text)
            .current_dir(self.path())
            .env_remove("DSH_REFS_STORE")
            .env_remove("DSH_REFS_CONFIG")
            .env_remove("DEEPSEEK_API_KEY")
            .env("XDG_CACHE_HOME", self.path().join("cache"));
        cmd
    }
}

/// Run `cmd` to its end, failing the test if it is still running after [`HANG_GUARD`].
fn run_guarded(mut cmd: Command) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if started.elapsed() > HANG_GUARD {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "send hung (killed by the guard); stderr so far:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn assert_fails_with(out: &Output, needles: &[&str]) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    for needle in needles {
        assert!(err.contains(needle), "stderr lacks {needle:?}: {err}");
    }
}

#[test]
fn a_project_path_that_is_a_file_ends_send_with_exit_1() {
    let fx = Fixture::new();
    // The project directory would have to be created where a regular file is.
    let store = fx.path().join("store");
    std::fs::create_dir_all(&store).unwrap();
    let p = fx.project("/p");
    std::fs::write(store.join(&p), "x").unwrap();
    let out = run_guarded(fx.command(&store, "s", "/p", "hello"));
    assert_fails_with(&out, &["AGENT_LOG_WRITE_FAILED", &p]);
    assert!(!SessionStore::new(&store).exists("s"));
}

/// A tmpfs of `kib` KiB mounted for the test's lifetime (root with mount permission only).
struct Tmpfs {
    dir: PathBuf,
}

impl Tmpfs {
    fn mount(dir: PathBuf, kib: u32) -> Option<Tmpfs> {
        std::fs::create_dir_all(&dir).unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={kib}k"), "tmpfs"])
            .arg(&dir)
            .stderr(Stdio::null())
            .status();
        match status {
            Ok(s) if s.success() => Some(Tmpfs { dir }),
            _ => None,
        }
    }

    /// Fill the filesystem completely.
    fn fill(&self) {
        use std::io::Write;
        let mut f = std::fs::File::create(self.dir.join("filler")).unwrap();
        let block = vec![0u8; 4096];
        while f.write_all(&block).is_ok() {}
        let _ = f.sync_all();
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).status();
    }
}

#[test]
fn a_full_disk_ends_send_with_exit_1_for_a_new_and_an_existing_session() {
    let fx = Fixture::new();
    let Some(fs) = Tmpfs::mount(fx.path().join("mnt"), 256) else {
        eprintln!("skipped: cannot mount a tmpfs here (needs root with mount permission)");
        return;
    };
    let store = fs.dir.join("store");
    // An existing session, written while there was room.
    let out = run_guarded(fx.command(&store, "old", "/p", "first"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let before = std::fs::read(
        SessionStore::new(&store)
            .locate("old")
            .unwrap()
            .unwrap()
            .path,
    )
    .unwrap();
    fs.fill();

    let out = run_guarded(fx.command(&store, "new", "/p", "hello"));
    assert_fails_with(&out, &["AGENT_LOG_WRITE_FAILED", "No space left"]);
    assert!(!SessionStore::new(&store).exists("new"));
    // Issue 23, break 8: no empty session directory (nor a new project's) is left behind.
    let out = run_guarded(fx.command(&store, "newer", "/q", "hello"));
    assert_fails_with(&out, &["AGENT_LOG_WRITE_FAILED", "No space left"]);
    let p = fx.project("/p");
    assert_eq!(dirs_below(&store), [format!("/{p}"), format!("/{p}/old")]);

    // Longer than a page, so it cannot fit in the slack of the log's last page.
    let long = "second ".repeat(2000);
    let out = run_guarded(fx.command(&store, "old", "/p", &long));
    assert_fails_with(&out, &["AGENT_LOG_WRITE_FAILED", "No space left"]);
    // Whatever was acknowledged before is still there, readable, unchanged in its prefix.
    let after = std::fs::read(
        SessionStore::new(&store)
            .locate("old")
            .unwrap()
            .unwrap()
            .path,
    )
    .unwrap();
    assert!(after.starts_with(&before));
}

/// Every directory below `root`, as `/`-joined paths relative to it, sorted.
fn dirs_below(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                let rel = path.strip_prefix(root).unwrap().to_string_lossy();
                out.push(format!("/{rel}"));
                stack.push(path);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_first_send_that_cannot_write_its_log_leaves_no_session_directory() {
    // Issue 23, break 8 (a full disk without needing a mount: a file-size limit makes the
    // first write fail the same way, SIGXFSZ ignored so the write returns the error).
    let fx = Fixture::new();
    let store = fx.path().join("store");
    let p = fx.project("/p");
    std::fs::create_dir_all(store.join(&p)).unwrap();
    let big = "x".repeat(64 * 1024);
    let cmd = fx.command(&store, "first", "/p", &big);
    let mut limited = Command::new("sh");
    limited
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 8 && exec \"$0\" \"$@\"")
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .current_dir(fx.path())
        .env_remove("DSH_REFS_STORE")
        .env_remove("DSH_REFS_CONFIG")
        .env_remove("DEEPSEEK_API_KEY")
        .env("XDG_CACHE_HOME", fx.path().join("cache"));
    let out = run_guarded(limited);
    assert_fails_with(&out, &["AGENT_LOG_WRITE_FAILED"]);
    assert!(!SessionStore::new(&store).exists("first"));
    assert_eq!(dirs_below(&store), [format!("/{p}")], "{}", stderr(&out));
    // A new project's directory goes too.
    let cmd = fx.command(&store, "second", "/elsewhere", &big);
    let mut limited = Command::new("sh");
    limited
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 8 && exec \"$0\" \"$@\"")
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .current_dir(fx.path())
        .env("XDG_CACHE_HOME", fx.path().join("cache"));
    let out = run_guarded(limited);
    assert_fails_with(&out, &["AGENT_LOG_WRITE_FAILED"]);
    assert_eq!(dirs_below(&store), [format!("/{p}")], "{}", stderr(&out));
}

/// `setpriv` to the `nobody` user, or `None` (with the reason printed) where that is not possible.
fn as_nobody(cmd: &Command) -> Option<Command> {
    let probe = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "true"])
        .status();
    if !matches!(probe, Ok(s) if s.success()) {
        eprintln!("skipped: cannot switch to the nobody user (needs root and setpriv)");
        return None;
    }
    let mut wrapped = Command::new("setpriv");
    wrapped
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(cmd.get_program())
        .args(cmd.get_args());
    if let Some(dir) = cmd.get_current_dir() {
        wrapped.current_dir(dir);
    }
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => wrapped.env(k, v),
            None => wrapped.env_remove(k),
        };
    }
    Some(wrapped)
}

#[test]
fn unwritable_store_and_session_dirs_end_send_with_exit_1_as_a_plain_user() {
    use std::os::unix::fs::PermissionsExt;
    let fx = Fixture::new();
    std::fs::set_permissions(fx.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let store = fx.path().join("store");
    // A session created by someone else (this process), then a store the user cannot write.
    let out = run_guarded(fx.command(&store, "theirs", "/p", "first"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    std::fs::create_dir_all(fx.path().join("cache")).unwrap();
    std::fs::set_permissions(
        fx.path().join("cache"),
        std::fs::Permissions::from_mode(0o777),
    )
    .unwrap();

    let Some(cmd) = as_nobody(&fx.command(&store, "mine", "/p", "hello")) else {
        return;
    };
    let out = run_guarded(cmd);
    assert_fails_with(&out, &["AGENT_LOG_WRITE_FAILED", "Permission denied"]);

    let Some(cmd) = as_nobody(&fx.command(&store, "theirs", "/p", "again")) else {
        return;
    };
    let out = run_guarded(cmd);
    assert_fails_with(&out, &["SESSION_OPEN_FAILED", "Permission denied"]);

    // A session dir at mode 000.
    let loc = SessionStore::new(&store).locate("theirs").unwrap().unwrap();
    let session_dir = loc.path.parent().unwrap().to_owned();
    std::fs::set_permissions(&session_dir, std::fs::Permissions::from_mode(0o000)).unwrap();
    let Some(cmd) = as_nobody(&fx.command(&store, "theirs", "/p", "again")) else {
        return;
    };
    let out = run_guarded(cmd);
    std::fs::set_permissions(&session_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
}

#[test]
fn an_unreadable_project_dir_is_an_error_for_a_writer_not_a_second_log() {
    use std::os::unix::fs::PermissionsExt;
    let fx = Fixture::new();
    std::fs::set_permissions(fx.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let store = fx.path().join("store");
    let out = run_guarded(fx.command(&store, "x", "/p1", "first"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    std::fs::create_dir_all(fx.path().join("cache")).unwrap();
    std::fs::set_permissions(
        fx.path().join("cache"),
        std::fs::Permissions::from_mode(0o777),
    )
    .unwrap();
    // The store is writable by everyone, but x's project dir only by its owner.
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o777)).unwrap();
    let (p1, p2) = (fx.project("/p1"), fx.project("/p2"));
    std::fs::set_permissions(store.join(&p1), std::fs::Permissions::from_mode(0o700)).unwrap();
    let Some(cmd) = as_nobody(&fx.command(&store, "x", "/p2", "second")) else {
        return;
    };
    let out = run_guarded(cmd);
    assert_fails_with(&out, &["SESSION_OPEN_FAILED", &p1, "Permission denied"]);
    assert!(!store.join(&p2).exists(), "a second log was started");
}

#[test]
fn two_first_sends_of_one_id_leave_one_log_and_the_loser_exits_1_busy() {
    let fx = Fixture::new();
    for round in 0..10 {
        let store = fx.path().join(format!("store-{round}"));
        let spawn = |cwd: &str| {
            fx.command(&store, "dup", cwd, "hello")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (a, b) = (spawn("/w/p1"), spawn("/w/p2"));
        let outs: Vec<Output> = [a, b]
            .into_iter()
            .map(|c| {
                let started = Instant::now();
                let mut c = c;
                while c.try_wait().unwrap().is_none() {
                    assert!(started.elapsed() < HANG_GUARD, "send hung");
                    std::thread::sleep(Duration::from_millis(20));
                }
                c.wait_with_output().unwrap()
            })
            .collect();
        let codes: Vec<_> = outs.iter().map(|o| o.status.code()).collect();
        let ok = codes.iter().filter(|c| **c == Some(0)).count();
        let logs = [fx.project("/w/p1"), fx.project("/w/p2")]
            .iter()
            .filter(|p| store.join(p).join("dup").join("session.jsonl").exists())
            .count();
        assert_eq!(logs, 1, "round {round}: two logs");
        if ok == 2 {
            // The second ran after the first had finished: it appended to the same log.
            continue;
        }
        assert_eq!(ok, 1, "round {round}: {codes:?}");
        let loser = outs.iter().find(|o| o.status.code() != Some(0)).unwrap();
        assert_fails_with(loser, &["busy"]);
    }
}
