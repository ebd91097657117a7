//! End-to-end: the real `dsh-refs` binary in a pseudo-terminal, its screen read through a
//! VT100 parser, on a temporary store with the offline provider. Every wait is bounded and
//! fails with the screen contents.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::needless_pass_by_value,
    clippy::similar_names
)] // test code: small known values, helpers that take values for brevity

#[path = "common/pty.rs"]
mod pty;

use std::path::{Path, PathBuf};
use std::time::Duration;

use dsh_store::{EventData, Message, NewEvent, SessionHeader, SessionQuery, SessionStore};
use pty::{Fixture, SEEDED, Session, copy_tree, fixture, seed_session};
use serde_json::Value;

/// Writes session `id` (created at `created`) in `cwd`: one question, its answer, `title`.
fn seed(store: &Path, cwd: &Path, (id, created): (&str, i64), title: &str, question: &str) {
    seed_session(store, (id, created, Some(cwd)), question, Some(title));
}

/// The one session the app created, as raw JSON lines (header excluded).
fn new_session_log(store: &Path) -> Vec<Value> {
    created_log(store, &SEEDED)
}

/// The one session of `store` not among `seeded`, as raw JSON lines (header excluded).
fn created_log(store: &Path, seeded: &[&str]) -> Vec<Value> {
    let sessions = SessionStore::new(store);
    let headers = sessions.list_sessions().unwrap();
    let created: Vec<_> = headers
        .iter()
        .filter(|h| !seeded.contains(&h.id.as_str()) && !SEEDED.contains(&h.id.as_str()))
        .collect();
    assert_eq!(
        created.len(),
        1,
        "expected one new session, got {created:?}"
    );
    let location = sessions.locate(&created[0].id).unwrap().unwrap();
    std::fs::read_to_string(location.path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn source_kind(event: &Value, message_path: &str) -> Option<String> {
    event
        .pointer(&format!("/data{message_path}/source/kind"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// Index of the session-reference context in `log`, asserting the direct message of
/// type `direct_type` follows it immediately.
fn assert_context_then(log: &[Value], direct_type: &str) -> usize {
    let types: Vec<&str> = log
        .iter()
        .map(|e| e["type"].as_str().unwrap_or(""))
        .collect();
    let context = log
        .iter()
        .position(|e| {
            e["type"] == "user/message"
                && source_kind(e, "").as_deref() == Some("session-reference")
        })
        .unwrap_or_else(|| panic!("no snapshot context in log: {types:?}"));
    let next = &log[context + 1];
    assert_eq!(
        next["type"], direct_type,
        "event after the context; log types {types:?}"
    );
    let path = if direct_type == "steering/message" {
        "/message"
    } else {
        ""
    };
    assert_eq!(source_kind(next, path).as_deref(), Some("user"), "{next}");
    let refs = &log[context]["data"]["source"]["references"];
    assert_eq!(refs[0]["sessionId"], "s-alpha", "{refs}");
    context
}

#[test]
fn pick_a_session_with_at_and_send_it_as_a_snapshot() {
    let fx = fixture();
    let mut app = Session::start(&fx.store, &fx.config, &fx.project, &[]);
    app.wait_for_text("@ reference a session");
    app.type_text("@");
    app.wait_for_text("Beta release notes");
    app.type_text("alph");
    app.wait_for("the filtered popup", |s| {
        s.contains("Alpha login bug") && !s.contains("Beta release notes")
    });
    app.send("\t"); // Tab inserts the selected (or first) session
    // The mention shows as one chip; its URI never appears on screen.
    let screen = app.wait_for_text("│@Alpha login bug ");
    assert!(!screen.contains("dsh-session:"), "{screen}");
    app.type_text("what broke?");
    app.wait_for_text("│@Alpha login bug what broke?");
    // Walk the caret into and around the chip: Home, Right (over the whole chip), Left
    // (back before it), Right again, then type right after it and at the start.
    for key in ["\x1b[H", "\x1b[C", "\x1b[D", "\x1b[C"] {
        app.send(key);
        std::thread::sleep(Duration::from_millis(30));
    }
    app.type_text(" now");
    app.wait_for_text("│@Alpha login bug now what broke?");
    let (row, col) = app.screen.lock().unwrap().screen().cursor_position();
    let line = app
        .contents()
        .lines()
        .nth(usize::from(row))
        .unwrap_or("")
        .to_owned();
    assert_eq!(
        line.chars().take(usize::from(col)).collect::<String>(),
        "│@Alpha login bug now",
        "the terminal cursor sits right after the typed text"
    );
    app.send("\x1b[H");
    app.type_text("see ");
    app.wait_for_text("│see @Alpha login bug now what broke?");
    app.send("\r");
    let screen = app.wait_for_text("Alpha login bug (s-alpha) · 2 messages · ");
    assert!(
        !screen.contains("<referenced-sessions>"),
        "snapshot JSON on screen:\n{screen}"
    );
    assert!(
        !screen.contains("\"sessionId\""),
        "snapshot JSON on screen:\n{screen}"
    );
    // The offline model answers and the app goes back to idle.
    app.wait_for("the reply to finish", |s| {
        s.contains("● idle") && s.contains("• ")
    });
    app.send("\x04"); // Ctrl+D on an empty draft quits
    app.wait_exit();

    let log = new_session_log(&fx.store);
    let context = assert_context_then(&log, "user/message");
    let direct = &log[context + 1]["data"];
    let text = direct["content"][0]["text"].as_str().unwrap();
    assert_eq!(text, "see @Alpha login bug now what broke?");
    // dsh's fallback title: the first five words, the mention as the message shows it.
    let title = log
        .iter()
        .find(|e| e["type"] == "session/title")
        .map(|e| e["data"]["title"].clone());
    assert_eq!(title, Some(serde_json::json!("see @Alpha login bug now")));
}

/// Issue 26 item 11: `@alph` and Enter written in one go reach the app in one read (a fast
/// typist, a macro); Enter waits for the answer to `alph` and inserts its row. The same for
/// a bracketed paste followed by Tab and more text, all in one write.
#[test]
fn keys_and_a_paste_sent_in_one_burst_with_enter_insert_the_right_session() {
    let fx = fixture();
    let mut app = Session::start(&fx.store, &fx.config, &fx.project, &[]);
    app.wait_for_text("@ reference a session");
    app.send("@alph\r");
    app.wait_for_text("│@Alpha login bug ");
    // Enter inserted the mention: nothing was sent.
    app.send("\x15"); // Ctrl+U clears the line
    app.wait_for("an empty composer", |s| s.contains("│ Ask anything"));
    app.send("\x1b[200~@bet\x1b[201~\twhat changed?\r");
    app.wait_for_text("Beta release notes (s-beta) · 2 messages · ");
    app.wait_for("the reply to finish", |s| {
        s.contains("● idle") && s.contains("• ")
    });
    app.send("\x04");
    app.wait_exit();
    let log = new_session_log(&fx.store);
    let texts: Vec<&str> = log
        .iter()
        .filter(|e| e["type"] == "user/message" && source_kind(e, "").as_deref() == Some("user"))
        .filter_map(|e| e["data"]["content"][0]["text"].as_str())
        .collect();
    assert_eq!(texts, ["@Beta release notes what changed?"]);
}

/// Issue 27 item 1: `@alph`, Enter, a (large, collapsed) paste and Enter arrive in one
/// read: the first Enter waits for `alph`'s answer and inserts its row, the paste goes in
/// after the chip, and the last Enter sends the message — the reference and the whole paste.
#[test]
fn a_query_enter_a_paste_and_enter_in_one_read_keep_the_reference() {
    let fx = fixture();
    let mut app = Session::start(&fx.store, &fx.config, &fx.project, &[]);
    app.wait_for_text("@ reference a session");
    let pasted: Vec<String> = (1..=30).map(|i| format!("trace {i}")).collect();
    let pasted = pasted.join("\n");
    app.send(&format!("@alph\r\x1b[200~{pasted}\x1b[201~\r"));
    app.wait_for_text("Alpha login bug (s-alpha) · 2 messages · ");
    app.wait_for("the reply to finish", |s| {
        s.contains("● idle") && s.contains("• ")
    });
    app.send("\x04");
    app.wait_exit();
    let log = new_session_log(&fx.store);
    let texts: Vec<&str> = log
        .iter()
        .filter(|e| e["type"] == "user/message" && source_kind(e, "").as_deref() == Some("user"))
        .filter_map(|e| e["data"]["content"][0]["text"].as_str())
        .collect();
    assert_eq!(texts, [format!("@Alpha login bug {pasted}")]);
    assert_context_then(&log, "user/message");
}

/// Issue 27 minor 8: Esc and then Ctrl+U (or Ctrl+A, Ctrl+K) pressed quickly reach the app
/// in one read, as the bytes of Alt+Ctrl+U; they typed `u`. Nothing is typed now.
#[test]
fn esc_and_a_ctrl_key_in_one_read_type_nothing() {
    let fx = fixture();
    let mut app = Session::start(&fx.store, &fx.config, &fx.project, &[]);
    app.wait_for_text("@ reference a session");
    app.type_text("keep");
    app.wait_for_text("│keep");
    app.send("\x1b\x15");
    app.send("\x1b\x01\x1b\x0b");
    app.type_text("!");
    let screen = app.wait_for_text("│keep!");
    assert!(
        !screen.contains("keepu") && !screen.contains("keepa"),
        "{screen}"
    );
    app.send("\x15");
    app.wait_for("an empty composer", |s| s.contains("│ Ask anything"));
    app.send("\x04");
    app.wait_exit();
}

#[test]
fn a_mention_sent_while_the_reply_streams_is_steered_with_its_context() {
    let fx = fixture();
    let mut app = Session::start(
        &fx.store,
        &fx.config,
        &fx.project,
        &[("DSH_REFS_OFFLINE_DELAY_MS", "300")],
    );
    app.wait_for_text("@ reference a session");
    app.type_text("tell me a long story");
    app.send("\r");
    app.wait_for_text("responding");
    app.type_text("@alph");
    app.wait_for("the filtered popup", |s| {
        s.contains("Alpha login bug") && !s.contains("Beta release notes")
    });
    app.send("\t"); // Tab inserts too
    app.type_text("also consider this");
    app.send("\r");
    app.wait_for_text("Alpha login bug (s-alpha) · ");
    app.wait_for("the turn to finish", |s| s.contains("● idle"));
    app.send("\x04");
    app.wait_exit();

    let log = new_session_log(&fx.store);
    let context = assert_context_then(&log, "steering/message");
    // Delivered inside the first turn: there is exactly one turn/start before it.
    let turns_before = log[..context]
        .iter()
        .filter(|e| e["type"] == "turn/start")
        .count();
    assert_eq!(turns_before, 1);
}

/// `--resume` at launch: the agent continues the session it opened (its view of the log is
/// gathered while the writer opens) — the reply sees the earlier messages, and the session
/// keeps its one title.
#[test]
fn a_session_resumed_at_launch_continues_its_conversation() {
    let fx = fixture();
    let app = Session::start_resuming(&fx.store, &fx.config, &fx.project, "s-alpha");
    app.wait_for_text("Why does login fail");
    app.type_text("and now?");
    app.send("\r");
    let screen = app.wait_for_text("Conversation so far: 3 messages");
    drop(app);
    let store = SessionStore::new(&fx.store);
    let mut titles = 0;
    store
        .open_writer("s-alpha", None)
        .unwrap()
        .read_log(&mut |e| {
            titles += usize::from(e.kind() == "session/title");
            Ok(())
        })
        .unwrap();
    assert_eq!(titles, 1, "{screen}");
}

/// Issue 34, item 10: a provider configured without its key refused to open the app at
/// all; now the app opens on the offline model with a notice naming the variable to set.
#[test]
fn without_its_key_the_app_opens_on_the_offline_model_and_says_what_to_set() {
    let fx = fixture();
    std::fs::write(
        &fx.config,
        "[model]\nprovider = \"openai\"\napi_key_env = \"DSH_REFS_TEST_UNSET_KEY\"\n",
    )
    .unwrap();
    let app = Session::start(&fx.store, &fx.config, &fx.project, &[]);
    let screen = app.wait_for_text("no API key");
    assert!(screen.contains("DSH_REFS_TEST_UNSET_KEY"), "{screen}");
    app.type_text("hello offline");
    app.send("\r");
    app.wait_for_text("hello offline");
}

/// Issue 34, break 8: a FIFO at the app's log file hung the app before its first frame.
/// Now logging is off with a notice, and the app runs.
#[test]
fn a_fifo_as_the_apps_log_file_turns_logging_off_with_a_notice() {
    let fx = fixture();
    let logs = fx.store.parent().unwrap().join("data/dsh-refs/logs");
    std::fs::create_dir_all(&logs).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(logs.join("dsh-refs.log"))
        .status()
        .unwrap();
    assert!(made.success());
    let app = Session::start(&fx.store, &fx.config, &fx.project, &[]);
    let screen = app.wait_for_text("logging is off");
    assert!(screen.contains("FIFO"), "{screen}");
    app.type_text("still here");
    app.send("\r");
    app.wait_for_text("still here");
}

/// Whether the terminal is out of app mode: main screen, cursor shown, no bracketed paste,
/// no mouse reporting.
fn restored(app: &Session) -> Result<(), String> {
    let parser = app.screen.lock().unwrap();
    let screen = parser.screen();
    let state = (
        screen.alternate_screen(),
        screen.hide_cursor(),
        screen.bracketed_paste(),
        screen.mouse_protocol_mode(),
    );
    if state == (false, false, false, vt100::MouseProtocolMode::None) {
        Ok(())
    } else {
        Err(format!(
            "alternate screen, hidden cursor, bracketed paste, mouse: {state:?}"
        ))
    }
}

/// Send `signal` (`TERM`, `HUP`, `INT`) to the app.
fn kill(app: &Session, signal: &str) {
    let pid = app.child.lock().unwrap().process_id().unwrap();
    let status = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn termination_signals_leave_the_terminal_restored() {
    // Issue 23, item 7: SIGTERM, SIGHUP and SIGINT restore the terminal as a panic does —
    // idle, and while a reply streams. (SIGINT used to end the process with the terminal
    // left in app mode.)
    for (signal, streaming) in [
        ("TERM", false),
        ("HUP", false),
        ("INT", false),
        ("INT", true),
        ("TERM", true),
    ] {
        let fx = fixture();
        let mut app = Session::start(
            &fx.store,
            &fx.config,
            &fx.project,
            &[("DSH_REFS_OFFLINE_DELAY_MS", "300")],
        );
        app.wait_for_text("@ reference a session");
        assert!(restored(&app).is_err(), "app mode is on");
        if streaming {
            app.type_text("tell me a long story");
            app.send("\r");
            app.wait_for_text("responding");
        }
        kill(&app, signal);
        // Quit like /quit, then the status a shell expects of a signalled program (was 0).
        let number = match signal {
            "TERM" => 15,
            "HUP" => 1,
            _ => 2,
        };
        assert_eq!(app.wait_exit_status(), 128 + number, "SIG{signal}");
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(
            restored(&app),
            Ok(()),
            "SIG{signal}, streaming: {streaming}"
        );
    }
}

#[test]
fn a_session_found_only_by_its_conversation_is_inserted_and_sent() {
    let fx = fixture();
    let mut app = Session::start(&fx.store, &fx.config, &fx.project, &[]);
    app.wait_for_text("@ reference a session");
    // "upgrade" is only in s-alpha's conversation: not its id, cwd or title.
    app.type_text("@upgrade");
    let screen = app.wait_for("the conversation hit", |s| {
        s.contains("in conversations") && s.contains("user: Why does login fail after the upgrade?")
    });
    assert!(screen.contains("Alpha login bug"), "{screen}");
    // Nothing matches exactly, so nothing is selected: Tab inserts the first offered row.
    app.send("\t");
    app.wait_for_text("│@Alpha login bug ");
    app.type_text("what changed?");
    app.wait_for_text("│@Alpha login bug what changed?");
    app.send("\r");
    app.wait_for_text("Alpha login bug (s-alpha) · 2 messages · ");
    app.wait_for("the reply to finish", |s| {
        s.contains("● idle") && s.contains("• ")
    });
    app.send("\x04");
    app.wait_exit();

    let log = new_session_log(&fx.store);
    let context = assert_context_then(&log, "user/message");
    let text = log[context + 1]["data"]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert_eq!(text, "@Alpha login bug what changed?");
}

/// A HOME beside the fixture's store holding copies of the foreign tools' fixtures `tools`
/// (`claude` as `.claude`, `codex` as `.codex`).
fn foreign_home(fx: &Fixture, tools: &[&str]) -> PathBuf {
    let home = fx.store.parent().unwrap().join("home");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/dsh-foreign/tests/fixtures");
    for tool in tools {
        copy_tree(&fixtures.join(tool), &home.join(format!(".{tool}")));
    }
    home
}

/// `dsh-refs` reading the foreign sources of `home` (its caches beside the store).
fn start_in_home(fx: &Fixture, home: &Path) -> Session {
    let cache = fx.store.parent().unwrap().join("cache");
    let (home_s, cache_s) = (home.display().to_string(), cache.display().to_string());
    let env = [
        ("HOME", home_s.as_str()),
        ("XDG_CACHE_HOME", cache_s.as_str()),
    ];
    Session::start_with_foreign(&fx.store, &fx.config, &fx.project, &env)
}

/// Every path under `root` with its bytes (empty for directories) and mtime.
fn tree(root: &Path) -> std::collections::BTreeMap<PathBuf, (Vec<u8>, std::time::SystemTime)> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![root.to_owned()];
    while let Some(path) = stack.pop() {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let bytes = if meta.is_dir() {
            for entry in std::fs::read_dir(&path).unwrap() {
                stack.push(entry.unwrap().path());
            }
            Vec::new()
        } else {
            std::fs::read(&path).unwrap()
        };
        out.insert(path, (bytes, meta.modified().unwrap()));
    }
    out
}

/// The conversation of each session in a logged snapshot, by session id.
fn snapshot_conversations(context: &Value) -> Vec<(String, Value)> {
    let prompt = context["data"]["content"][0]["text"].as_str().unwrap();
    let sources: Value =
        serde_json::from_str(dsh_reference::prompt::serialized_sources(prompt).unwrap()).unwrap();
    sources
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["sessionId"].as_str().unwrap().to_owned(),
                s["conversation"].clone(),
            )
        })
        .collect()
}

#[test]
fn at_lists_all_three_kinds_and_one_message_references_one_of_each() {
    const CLAUDE: &str = "claude-code:5f1c2d3e-0000-4000-8000-000000000001";
    const CODEX: &str = "codex:0199a1b2-c3d4-7e5f-8a9b-000000000001";
    let fx = fixture();
    let home = foreign_home(&fx, &["claude", "codex"]);
    let before = (tree(&home.join(".claude")), tree(&home.join(".codex")));
    let mut app = start_in_home(&fx, &home);
    app.wait_for_text("@ reference a session");
    // The popup lists all three kinds; other tools' sessions carry their badge.
    app.type_text("@");
    app.wait_for("all three kinds in the popup", |s| {
        s.contains("Alpha login bug") && s.contains("[claude]") && s.contains("[codex]")
    });
    app.type_text("checkout");
    app.wait_for("the Claude Code session", |s| {
        s.contains("[claude]") && s.contains("Fix checkout crash") && !s.contains("Alpha login bug")
    });
    app.send("\t");
    app.wait_for_text("@Fix checkout crash on empty cart ");
    app.type_text("@kafka");
    app.wait_for("the Codex session", |s| {
        s.contains("[codex]") && s.contains("Add a Kafka consumer") && !s.contains("[claude]")
    });
    app.send("\t");
    app.wait_for_text("@Add a Kafka consumer for ");
    app.type_text("@alph");
    app.wait_for("the dsh session", |s| {
        s.contains("Alpha login bug") && !s.contains("[codex]")
    });
    app.send("\t");
    app.type_text("compare");
    app.send("\r");
    // The card names each session and where it comes from.
    app.wait_for("the reference card", |s| {
        // Each row: `Label (id) · N messages · size · from Tool` (wrapped at 100 columns).
        s.contains(&format!("({CLAUDE}) · 7 messages"))
            && s.contains(&format!("({CODEX}) · 4 messages"))
            && s.contains("Claude Code")
            && s.contains("Codex CLI")
            && s.contains("Alpha login bug (s-alpha) · 2 messages")
            && s.matches(" · from ").count() == 2
    });
    app.wait_for("the reply to finish", |s| {
        s.contains("● idle") && s.contains("• ")
    });
    // /resume lists a foreign session and opens it read-only (issue 27 item 4).
    app.type_text("/resume");
    app.send("\r");
    app.wait_for_text("Resume a session");
    app.type_text("kafka");
    app.wait_for("the Codex row", |s| {
        s.contains("[codex] Add a Kafka consumer")
    });
    app.send("\r");
    app.wait_for("the Codex session read-only", |s| {
        s.contains("[codex] Add a Kafka consumer for order events · read-only")
            && s.contains("reference it with @")
            && s.contains("请把结账页面做简体中文本地化")
    });
    // Esc goes back to the session open before; nothing was sent to the foreign one.
    app.send("\x1b");
    app.wait_for("the open session again", |s| !s.contains("· read-only"));
    app.send("\x04");
    app.wait_exit();

    // The snapshot holds only each session's visible conversation.
    let log = new_session_log(&fx.store);
    let context = log
        .iter()
        .find(|e| {
            e["type"] == "user/message"
                && source_kind(e, "").as_deref() == Some("session-reference")
        })
        .unwrap();
    let conversations = snapshot_conversations(context);
    let ids: Vec<&str> = conversations.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, [CLAUDE, CODEX, "s-alpha"]);
    assert_eq!(
        conversations[1].1,
        serde_json::json!([
            {"role": "user", "text": "Add a Kafka consumer for order events"},
            {"role": "assistant", "text": "Added consumer/order_events.rs subscribed to the orders topic."},
            {"role": "user", "text": "请把结账页面做简体中文本地化"},
            {"role": "assistant", "text": "完成：结账页面已本地化。"}
        ])
    );
    let claude = conversations[0].1.as_array().unwrap();
    assert_eq!(claude.len(), 7);
    assert_eq!(
        claude[0]["text"],
        "The checkout page crashes on 結帳 — can you find why?"
    );
    let all = serde_json::to_string(&conversations).unwrap();
    for hidden in [
        "SECRET-THINKING",
        "TOOL-OUTPUT",
        "SIDECHAIN",
        "EDITED-AWAY",
        "INJECTED-INSTRUCTIONS",
        "TORN-TAIL",
    ] {
        assert!(!all.contains(hidden), "{hidden} leaked");
    }
    // Nothing was written under the foreign roots.
    assert!(
        (tree(&home.join(".claude")), tree(&home.join(".codex"))) == before,
        "a foreign directory changed"
    );
}

/// Issue 27 item 4: `--continue` opens the dsh session of the current directory that was
/// active last — here the older one, continued after the newer one was written, not the
/// newest created, and not a session of another directory active later still.
#[test]
fn continue_opens_the_session_of_this_directory_active_last() {
    let fx = fixture();
    let sessions = SessionStore::new(&fx.store);
    // Event times are milliseconds: make sure the next ones are later.
    std::thread::sleep(Duration::from_millis(5));
    let mut alpha = sessions.open_writer("s-alpha", None).unwrap();
    alpha
        .append(dsh_store::layout::in_turns(
            2,
            [NewEvent::appended(EventData::UserMessage(
                Message::user_text("One more thing about login"),
            ))],
        ))
        .unwrap();
    drop(alpha);
    std::thread::sleep(Duration::from_millis(5));
    let header = SessionHeader::new("s-other", 1_800_000_000_000, Some("/elsewhere".into()));
    let mut other = sessions.open_writer("s-other", Some(header)).unwrap();
    other
        .append(dsh_store::layout::in_turns(
            1,
            [NewEvent::appended(EventData::UserMessage(
                Message::user_text("Somewhere else entirely"),
            ))],
        ))
        .unwrap();
    drop(other);
    let app = Session::launch(
        &fx.store,
        &fx.config,
        &fx.project,
        &[],
        false,
        &["--continue"],
    );
    let screen = app.wait_for_text("One more thing about login");
    assert!(!screen.contains("Draft the release notes"), "{screen}");
    assert!(!screen.contains("Somewhere else"), "{screen}");
}

#[path = "e2e_pty/popup.rs"]
mod popup;
