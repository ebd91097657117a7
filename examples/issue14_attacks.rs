//! Re-runs the attacks of issue 14 (docs/reliability.md, hardening) against a real binary
//! and prints one table row per attack: what was done, what came back, whether that is the
//! required outcome (a clear message or the right answer, promptly; nothing outside the
//! store touched; no acknowledged message hidden).
//!
//! `issue14_attacks BIN [WORKDIR]` (default WORKDIR `/tmp/issue14-attacks`, emptied first).
//! Run as root to include the attacks that need another user (`setpriv` to `nobody`) or a
//! tiny full filesystem (a 64 KiB tmpfs); they are reported as skipped otherwise. Memory
//! attacks are measured by `hostile_rss`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a measuring tool: a failure should stop it
#![allow(clippy::too_many_lines)] // one attack after another, in the order

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A child still running after this long is a hang (the attack succeeded).
const HANG_AFTER: Duration = Duration::from_secs(60);

struct Run {
    code: Option<i32>,
    secs: f64,
    stdout: String,
    stderr: String,
    hung: bool,
}

impl Run {
    fn first_err(&self) -> String {
        let line = self.stderr.lines().next().unwrap_or("").to_owned();
        let short: String = line.chars().take(110).collect();
        short.replace('|', "\\|")
    }
}

struct Ctx {
    bin: PathBuf,
    cache: PathBuf,
    rows: Vec<String>,
    failures: usize,
}

impl Ctx {
    /// Run the binary on `store` with `args` (as `nobody` when asked), under the hang guard.
    fn run(&self, store: &Path, args: &[&str], as_nobody: bool) -> Run {
        let mut cmd = if as_nobody {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]);
            c.arg(&self.bin);
            c
        } else {
            Command::new(&self.bin)
        };
        cmd.env("XDG_CACHE_HOME", &self.cache)
            .env("HOME", self.cache.join("home"))
            .env_remove("DSH_REFS_CONFIG")
            .arg("--store")
            .arg(store)
            .arg("--no-foreign-sources")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let started = Instant::now();
        let mut child = cmd.spawn().expect("spawn the binary");
        let mut hung = false;
        loop {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            if started.elapsed() > HANG_AFTER {
                hung = true;
                let _ = child.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let out = child.wait_with_output().unwrap();
        Run {
            code: if hung { None } else { out.status.code() },
            secs: started.elapsed().as_secs_f64(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            hung,
        }
    }

    fn row(&mut self, attack: &str, run: Option<&Run>, ok: bool, note: &str) {
        if !ok {
            self.failures += 1;
        }
        let (code, secs, err) = run.map_or_else(
            || ("-".to_owned(), "-".to_owned(), String::new()),
            |r| {
                (
                    if r.hung {
                        "HANG".to_owned()
                    } else {
                        r.code.map_or("signal".into(), |c| c.to_string())
                    },
                    format!("{:.2}", r.secs),
                    r.first_err(),
                )
            },
        );
        let verdict = if ok { "ok" } else { "**FAILED**" };
        self.rows.push(format!(
            "| {attack} | {verdict} | {code} | {secs} | {note} | {err} |"
        ));
    }

    fn skip(&mut self, attack: &str, why: &str) {
        self.rows
            .push(format!("| {attack} | skipped | - | - | {why} | |"));
    }
}

fn header(id: &str, cwd: Option<&str>) -> String {
    let mut h = serde_json::json!({"type": "session", "version": 0, "id": id, "createdAt": 1, "delegationDepth": 0});
    if let Some(cwd) = cwd {
        h["cwd"] = cwd.into();
    }
    h.to_string() + "\n"
}

/// A small complete log: header, one user message, the end of its turn, a title.
fn small_log(id: &str, cwd: Option<&str>, title: &str) -> String {
    let msg = serde_json::json!({"type": "user/message", "seq": 1, "time": 1, "data": {"id": "u", "role": "user", "content": [{"type": "text", "text": "hello"}], "source": {"kind": "user"}}, "surfaceOp": "append"});
    let start = serde_json::json!({"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1, "trigger": {"kind": "user"}}});
    let end = serde_json::json!({"type": "turn/end", "seq": 2, "time": 1, "data": {"turn": 1, "reason": {"kind": "completed"}}});
    let title = serde_json::json!({"type": "session/title", "seq": 3, "time": 1, "data": {"title": title, "messageSeqs": [1], "source": {"kind": "manual"}}});
    format!("{}{start}\n{msg}\n{end}\n{title}\n", header(id, cwd))
}

fn write_session(store: &Path, project: &str, id: &str, text: &str) -> PathBuf {
    let dir = store.join(project).join(id);
    fs::create_dir_all(&dir).unwrap();
    let path = dir.join("session.jsonl");
    fs::write(&path, text).unwrap();
    path
}

fn fresh(work: &Path, name: &str) -> PathBuf {
    let dir = work.join(name);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every file under `dir`, relative, with its length.
fn files(dir: &Path) -> Vec<(PathBuf, u64)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let meta = fs::symlink_metadata(e.path()).unwrap();
            if meta.is_dir() {
                stack.push(e.path());
            } else {
                out.push((e.path().strip_prefix(dir).unwrap().to_owned(), meta.len()));
            }
        }
    }
    out.sort();
    out
}

fn logs_of(store: &Path, id: &str) -> usize {
    files(store)
        .iter()
        .filter(|(p, _)| {
            p.parent().and_then(Path::file_name) == Some(id.as_ref())
                && p.file_name().is_some_and(|n| n == "session.jsonl")
        })
        .count()
}

fn chown_nobody(path: &Path) {
    let status = Command::new("chown")
        .args(["-R", "nobody:nogroup"])
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

fn mode(path: &Path, m: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(m)).unwrap();
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bin = fs::canonicalize(args.get(1).expect("BIN: the dsh-refs binary")).unwrap();
    let work = PathBuf::from(args.get(2).map_or("/tmp/issue14-attacks", String::as_str));
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&work).unwrap();
    mode(&work, 0o755);
    let cache = work.join("cache");
    fs::create_dir_all(cache.join("home")).unwrap();
    mode(&cache, 0o777);
    mode(&cache.join("home"), 0o777);
    let root = is_root();
    let mut ctx = Ctx {
        bin,
        cache: cache.clone(),
        rows: Vec::new(),
        failures: 0,
    };
    let offline = work.join("offline.toml");
    fs::write(&offline, "[model]\nprovider = \"offline\"\n").unwrap();
    let cfg = offline.to_str().unwrap().to_owned();
    let send = |session: &str, cwd: &str, text: &str| -> Vec<String> {
        // `send --cwd` names a directory that exists.
        fs::create_dir_all(cwd).unwrap();
        [
            "--config",
            &cfg,
            "send",
            "--session",
            session,
            "--cwd",
            cwd,
            text,
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
    };

    // 2. `send` must end promptly with a clear message (exit 1) when a write fails.
    if root {
        let store = fresh(&work, "ro-store");
        write_session(&store, "_no-cwd", "seed", &small_log("seed", None, "Seed"));
        mode(&store, 0o555);
        let r = ctx.run(&store, &strs(&send("new", "/tmp/p", "hello")), true);
        let ok = r.code == Some(1) && r.stderr.contains("Permission denied");
        ctx.row(
            "2 store dir not writable (as nobody), new session",
            Some(&r),
            ok,
            "exit 1 with the path and the OS error",
        );

        let store = fresh(&work, "dir000");
        write_session(
            &store,
            "--tmp-p--",
            "locked",
            &small_log("locked", Some("/tmp/p"), "Locked"),
        );
        chown_nobody(&store);
        mode(&store.join("--tmp-p--").join("locked"), 0o000);
        let r = ctx.run(&store, &strs(&send("locked", "/tmp/p", "hello")), true);
        let ok = r.code == Some(1) && !r.hung;
        ctx.row(
            "2 session dir chmod 000 (as nobody)",
            Some(&r),
            ok,
            "exit 1, nothing written",
        );
        mode(&store.join("--tmp-p--").join("locked"), 0o755);
    } else {
        ctx.skip(
            "2 unwritable store / session dir",
            "needs root (to become nobody)",
        );
    }
    if root {
        let tiny = fresh(&work, "tiny");
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
            .arg(&tiny)
            .status()
            .is_ok_and(|s| s.success());
        if mounted {
            let store = tiny.join("store");
            fs::create_dir_all(&store).unwrap();
            let big = "x".repeat(100_000);
            let r = ctx.run(&store, &strs(&send("full", "/tmp/p", &big)), false);
            let ok = r.code == Some(1) && r.stderr.contains("No space left");
            ctx.row(
                "2 full disk (64 KiB tmpfs), new session",
                Some(&r),
                ok,
                "exit 1 `No space left on device`",
            );
            let _ = fs::remove_dir_all(store.join("--tmp-p--"));
            let r0 = ctx.run(&store, &strs(&send("small", "/tmp/p", "hi")), false);
            let filler = tiny.join("filler");
            let _ = fs::write(&filler, vec![0u8; 64 << 10]);
            let r = ctx.run(&store, &strs(&send("small", "/tmp/p", &big)), false);
            let ok = r0.code == Some(0) && r.code == Some(1) && r.stderr.contains("No space left");
            ctx.row(
                "2 full disk, existing session",
                Some(&r),
                ok,
                "exit 1; the earlier turn stays readable",
            );
            let _ = Command::new("umount").arg(&tiny).status();
        } else {
            ctx.skip("2 full disk", "tmpfs mount failed");
        }
    } else {
        ctx.skip("2 full disk", "needs root (mount)");
    }

    // 2 and 4. Concurrent first sends of one id (same and different --cwd).
    for (label, cwds) in [
        ("2 two first sends of one id at once", ["/tmp/p", "/tmp/p"]),
        (
            "4 two first sends of one id, different --cwd",
            ["/tmp/p1", "/tmp/p2"],
        ),
    ] {
        let store = fresh(&work, "race");
        let mut one_log = true;
        let mut loser_clear = true;
        let mut worst = 0.0f64;
        for round in 0..10 {
            let id = format!("dup{round}");
            let spawn = |cwd: &str| {
                let mut c = Command::new(&ctx.bin);
                c.env("XDG_CACHE_HOME", &cache)
                    .arg("--store")
                    .arg(&store)
                    .arg("--no-foreign-sources")
                    .args(strs(&send(&id, cwd, "hello")))
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped());
                c.spawn().unwrap()
            };
            let started = Instant::now();
            let (a, b) = (spawn(cwds[0]), spawn(cwds[1]));
            let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
            worst = worst.max(started.elapsed().as_secs_f64());
            one_log &= logs_of(&store, &id) == 1;
            let codes = [a.status.code(), b.status.code()];
            let err = format!(
                "{}{}",
                String::from_utf8_lossy(&a.stderr),
                String::from_utf8_lossy(&b.stderr)
            );
            // Both may succeed one after the other (the second appends); a loser says busy.
            loser_clear &= codes.contains(&Some(0))
                && codes
                    .iter()
                    .all(|c| *c == Some(0) || (*c == Some(1) && err.contains("busy")));
        }
        ctx.row(
            label,
            None,
            one_log && loser_clear,
            &format!("10 rounds: one log per id: {one_log}; loser exit 1 `busy`: {loser_clear}; slowest round {worst:.2} s"),
        );
    }

    // 5 and 2. Symlinks below the root are never followed.
    let outside = fresh(&work, "outside");
    let outside_log = outside.join("victim.jsonl");
    fs::write(&outside_log, small_log("linked", None, "Outside")).unwrap();
    let before = fs::read(&outside_log).unwrap();
    let store = fresh(&work, "links");
    write_session(
        &store,
        "_no-cwd",
        "plain",
        &small_log("plain", None, "Plain"),
    );
    let dir = store.join("_no-cwd").join("linked");
    fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(&outside_log, dir.join("session.jsonl")).unwrap();
    let r = ctx.run(&store, &["sessions"], false);
    let listed = r.stdout.contains("linked");
    let warned = r.stderr.contains("warning") && r.stderr.contains("linked");
    ctx.row(
        "5 `session.jsonl` is a symlink: sessions",
        Some(&r),
        r.code == Some(0) && !listed && warned,
        "not listed, one warning",
    );
    let r = ctx.run(
        &store,
        &strs(&send("linked", "/tmp/p", "append through the link?")),
        false,
    );
    let same = fs::read(&outside_log).unwrap() == before;
    ctx.row(
        "5 `session.jsonl` is a symlink: send",
        Some(&r),
        r.code == Some(1) && same,
        "refused; the file outside is unchanged",
    );

    let outside_dir = fresh(&work, "outside-session");
    write_session(
        &outside_dir,
        "x",
        "ldir",
        &small_log("ldir", None, "Outside dir"),
    );
    let target = outside_dir.join("x").join("ldir");
    let before_dir = files(&outside_dir);
    std::os::unix::fs::symlink(&target, store.join("_no-cwd").join("ldir")).unwrap();
    let r = ctx.run(
        &store,
        &strs(&send("ldir", "/tmp/p", "write through the dir link?")),
        false,
    );
    let ok = r.code == Some(1) && files(&outside_dir) == before_dir;
    ctx.row(
        "5 session dir is a symlink: send",
        Some(&r),
        ok,
        "refused; nothing outside changes",
    );
    let mention = dsh_reference::format_mention("ldir", None);
    let text = format!("look at {mention}");
    let r = ctx.run(&store, &["prepare", "--session", "me", &text], false);
    let ok = r.code == Some(1) && !r.stdout.contains("Outside dir");
    ctx.row(
        "5 session dir is a symlink: prepare",
        Some(&r),
        ok,
        "not read (not found)",
    );

    let outside_proj = fresh(&work, "outside-project");
    std::os::unix::fs::symlink(&outside_proj, store.join("--tmp-linked--")).unwrap();
    let r = ctx.run(
        &store,
        &strs(&send("viaproj", "/tmp/linked", "hello")),
        false,
    );
    let ok = r.code == Some(1) && files(&outside_proj).is_empty();
    ctx.row(
        "2/5 project dir is a symlink: send --cwd",
        Some(&r),
        ok,
        "exit 1; no log created outside the root",
    );

    // 3. The index file as a FIFO or /dev/zero.
    let store = fresh(&work, "fifo");
    write_session(&store, "_no-cwd", "a", &small_log("a", None, "Alpha"));
    write_session(&store, "_no-cwd", "b", &small_log("b", None, "Beta"));
    let _ = ctx.run(&store, &["sessions"], false);
    let index = files(&cache)
        .into_iter()
        .map(|(p, _)| cache.join(p))
        .find(|p| {
            p.ends_with(dsh_store::index_file::INDEX_FILE) && p.to_string_lossy().contains("fifo")
        });
    let legacy = store.join(".dsh-refs-index.json");
    let fifo_ok = Command::new("mkfifo")
        .arg(&legacy)
        .status()
        .is_ok_and(|s| s.success());
    if let (Some(index), true) = (index, fifo_ok) {
        fs::remove_file(&index).unwrap();
        let made = Command::new("mkfifo").arg(&index).status().unwrap();
        assert!(made.success());
        let mention = dsh_reference::format_mention("a", None);
        let text = format!("see {mention}");
        for (label, args) in [
            ("3 FIFO index: sessions", vec!["sessions"]),
            (
                "3 FIFO index: candidates",
                vec!["candidates", "--session", "b"],
            ),
            (
                "3 FIFO index: prepare",
                vec!["prepare", "--session", "b", text.as_str()],
            ),
        ] {
            let r = ctx.run(&store, &args, false);
            ctx.row(
                label,
                Some(&r),
                r.code == Some(0),
                "answers from the logs, no block",
            );
        }
        let sendargs = send("b", "/tmp/p", &text);
        let r = ctx.run(&store, &strs(&sendargs), false);
        ctx.row(
            "3 FIFO index: send with a mention",
            Some(&r),
            r.code == Some(0),
            "no block",
        );
        let _ = fs::remove_file(&index);
        std::os::unix::fs::symlink("/dev/zero", &index).unwrap();
        let r = ctx.run(&store, &["sessions"], false);
        let ok = r.code == Some(0) && r.secs < HANG_AFTER.as_secs_f64();
        ctx.row(
            "3 index linked to /dev/zero: sessions",
            Some(&r),
            ok,
            "skipped, not read",
        );
    } else {
        ctx.skip(
            "3 FIFO index",
            "index not found in the cache dir or mkfifo failed",
        );
    }

    // 4. An unreadable project dir is an error for a writer, not a second log.
    if root {
        let store = fresh(&work, "unreadable-project");
        write_session(
            &store,
            "--tmp-p--",
            "hidden",
            &small_log("hidden", Some("/tmp/p"), "Hidden"),
        );
        chown_nobody(&store);
        mode(&store.join("--tmp-p--"), 0o000);
        let r = ctx.run(&store, &strs(&send("hidden", "/tmp/q", "hello")), true);
        mode(&store.join("--tmp-p--"), 0o755);
        let ok = r.code == Some(1) && logs_of(&store, "hidden") == 1;
        ctx.row(
            "4 unreadable project dir (as nobody): send",
            Some(&r),
            ok,
            "exit 1; no second log",
        );
    } else {
        ctx.skip("4 unreadable project dir", "needs root (to become nobody)");
    }

    // 6. A hand-edited index never changes an answer.
    let store = fresh(&work, "edited-index");
    let alpha = write_session(
        &store,
        "--p--",
        "alpha",
        &small_log("alpha", Some("/p"), "Alpha"),
    );
    write_session(
        &store,
        "--p--",
        "beta",
        &small_log("beta", Some("/p"), "Beta"),
    );
    let want = ctx.run(&store, &["sessions", "--json"], false).stdout;
    let _ = ctx.run(&store, &["candidates", "--session", "beta"], false);
    let index = files(&cache)
        .into_iter()
        .map(|(p, _)| cache.join(p))
        .find(|p| {
            p.ends_with(dsh_store::index_file::INDEX_FILE)
                && p.to_string_lossy().contains("edited-index")
        })
        .expect("index written");
    let mut record = dsh_store::index_file::parse(&fs::read(&index).unwrap()).expect("index valid");
    for s in record
        .projects
        .iter_mut()
        .flat_map(|p| p.sessions.iter_mut())
    {
        if let Some(t) = &mut s.digest {
            t.digest.title = Some("spoofed".into());
            t.stamp.len = 1;
        }
        if let Some(h) = &mut s.header {
            if s.name == "alpha" {
                h.id = "beta".into();
            }
            if s.name == "beta" {
                h.cwd = Some("/elsewhere".into());
            }
        }
    }
    fs::write(&index, dsh_store::index_file::encode(&record)).unwrap();
    let r = ctx.run(&store, &["sessions", "--json"], false);
    ctx.row(
        "6 hand-edited index (spoofed title, header of another id, edited cwd)",
        Some(&r),
        r.stdout == want,
        "same answer as the logs give",
    );
    let meta = fs::metadata(&alpha).unwrap();
    let text = fs::read_to_string(&alpha).unwrap();
    fs::write(
        &alpha,
        text.replacen("\"createdAt\":1", "\"createdAt\":7", 1),
    )
    .unwrap();
    fs::File::options()
        .write(true)
        .open(&alpha)
        .unwrap()
        .set_modified(meta.modified().unwrap())
        .unwrap();
    let r = ctx.run(&store, &["sessions", "--json"], false);
    let listed: serde_json::Value = serde_json::from_str(&r.stdout).unwrap_or_default();
    let ok = listed.as_array().is_some_and(|l| {
        l.iter()
            .any(|s| s["sessionId"] == "alpha" && s["createdAt"] == 7)
    });
    ctx.row(
        "6 header rewritten in place, mtime set back",
        Some(&r),
        ok,
        "the new createdAt is served",
    );

    // 7. Visible warnings and invisible characters.
    let store = fresh(&work, "warnings");
    write_session(
        &store,
        "_no-cwd",
        "bidi",
        &small_log("bidi", None, "evil\u{202E}txt.exe\u{200B}\u{2028}"),
    );
    write_session(&store, "_no-cwd", "broken", "not a header\n");
    let r = ctx.run(&store, &["sessions"], false);
    let ok = r.code == Some(0)
        && !r.stdout.contains('\u{202E}')
        && r.stdout.contains("\\u{202E}")
        && r.stderr.contains("broken");
    ctx.row(
        "7 bidi/zero-width title and a corrupt session",
        Some(&r),
        ok,
        "shown as `\\u{202E}`; one warning for the skipped session",
    );
    if root {
        let unreadable = write_session(
            &store,
            "_no-cwd",
            "secret",
            &small_log("secret", None, "Secret"),
        );
        chown_nobody(&store);
        fs::set_permissions(&unreadable, fs::Permissions::from_mode(0o000)).unwrap();
        let r = ctx.run(&store, &["sessions", "--json"], true);
        let ok = r.code == Some(0) && r.stderr.contains("secret");
        ctx.row(
            "7 unreadable session (as nobody): sessions --json",
            Some(&r),
            ok,
            "listed JSON unchanged, warning on stderr",
        );
    }

    println!(
        "| attack | result | exit | seconds | required outcome / observed | first stderr line |"
    );
    println!("|---|---|---|---|---|---|");
    for row in &ctx.rows {
        println!("{row}");
    }
    println!();
    println!("{} attack(s) not handled as required", ctx.failures);
    if ctx.failures > 0 {
        std::process::exit(1);
    }
}

/// The arguments as `&str`s.
fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Whether this process runs as root (reads `/proc/self/status`, no unsafe code).
fn is_root() -> bool {
    fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find(|l| l.starts_with("Uid:"))
            .is_some_and(|l| l.split_whitespace().nth(1) == Some("0"))
    })
}
