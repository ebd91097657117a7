//! End-to-end (issue 32 items 8–10): `/resume`, `--resume` and `--continue` as people know
//! them, busy sessions, untitled sessions' labels and the small items — the real binary in a
//! pseudo-terminal on a temporary store with the offline provider.
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

use pty::{Fixture, Session, fixture, seed_session};

/// The app on `fx`'s store in its project, with `args`.
fn app(fx: &Fixture, args: &[&str]) -> Session {
    Session::launch(&fx.store, &fx.config, &fx.project, &[], false, args)
}

/// The app's title line (the header, first row).
fn header(screen: &str) -> String {
    screen.lines().next().unwrap_or("").to_owned()
}

/// The row (0-based) of the first screen line holding `needle`.
fn row_of(screen: &str, needle: &str) -> Option<usize> {
    screen.lines().position(|l| l.contains(needle))
}

/// Item 8: `/resume` lists this project's sessions first (the `@` popup's groups), also
/// when another project's session was active later.
#[test]
fn resume_lists_this_projects_sessions_first() {
    let fx = fixture();
    let elsewhere = fx.dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    // Created (and so active) after both of the project's sessions.
    seed_session(
        &fx.store,
        ("s-far", 1_800_000_000_000, Some(elsewhere.as_path())),
        "Something in another checkout",
        Some("Far away work"),
    );
    let app = Session::start(&fx.store, &fx.config, &fx.project, &[]);
    app.wait_for_text("@ reference a session");
    app.type_text("/resume");
    app.send("\r");
    let screen = app.wait_for("the picker's rows", |s| {
        s.contains("Far away work") && s.contains("Alpha login bug")
    });
    let far = row_of(&screen, "Far away work").unwrap();
    for own in ["Alpha login bug", "Beta release notes"] {
        let row = row_of(&screen, own).unwrap();
        assert!(
            row < far,
            "{own} after another project's session:\n{screen}"
        );
    }
}

/// Item 8: `--resume` without an id opens the picker over a new session; Esc leaves the
/// new session in this directory.
#[test]
fn resume_without_an_id_opens_the_picker() {
    let fx = fixture();
    let app = app(&fx, &["--resume"]);
    let screen = app.wait_for("the picker", |s| {
        s.contains("Resume a session") && s.contains("Alpha login bug")
    });
    assert!(screen.contains("Beta release notes"), "{screen}");
    app.send("\x1b");
    let screen = app.wait_for_text("@ reference a session");
    assert!(header(&screen).contains(" s-"), "a new session: {screen}");
}

/// Item 8: `--resume X` opens the session whose id starts with X (one only) or whose title
/// is exactly X; X naming several sessions, or none, opens the picker filtered by X.
#[test]
fn resume_takes_a_unique_id_prefix_or_an_exact_title_else_the_filtered_picker() {
    let fx = fixture();
    for (wanted, opened) in [
        ("s-al", "Why does login fail"),
        ("Beta release notes", "Draft the release notes."),
    ] {
        let app = app(&fx, &["--resume", wanted]);
        let screen = app.wait_for_text(opened);
        assert!(!screen.contains("Resume a session"), "{wanted}: {screen}");
    }
    // Both ids start with `s-`: the picker, filtered by it, shows both.
    let app = app(&fx, &["--resume", "s-"]);
    let screen = app.wait_for("the filtered picker", |s| {
        s.contains("Resume a session") && s.contains("Alpha login bug")
    });
    assert!(screen.contains("s-"), "{screen}");
    assert!(screen.contains("Beta release notes"), "{screen}");
    // Nothing is titled `release`: the picker filtered by it shows the one that matches.
    let app2 = self::app(&fx, &["--resume", "release"]);
    let screen = app2.wait_for("the filtered picker", |s| {
        s.contains("Resume a session") && s.contains("Beta release notes")
    });
    assert!(!screen.contains("Alpha login bug"), "{screen}");
    // Enter opens the row on show.
    app2.send("\r");
    app2.wait_for_text("Draft the release notes.");
    drop(app);
}

/// Item 8: a session another window writes to opens read-only with a notice — from
/// `--resume`, and from the picker, which marks it.
#[test]
fn a_session_busy_in_another_window_opens_read_only_and_is_marked() {
    let fx = fixture();
    let first = app(&fx, &["--resume", "s-alpha"]);
    first.wait_for_text("Why does login fail");
    let second = app(&fx, &["--resume", "s-alpha"]);
    let screen = second.wait_for_text("open in another window");
    assert!(header(&screen).contains("read-only"), "{screen}");
    second.wait_for_text("Why does login fail");
    // Typing says what to do instead.
    second.type_text("x");
    let screen = second.wait_for_text("read-only: Tab/Enter mention it, Esc back");
    assert!(!screen.contains("│x"), "nothing typed: {screen}");
    second.send("\x1b");
    second.wait_for_text("@ reference a session");
    second.type_text("/resume");
    second.send("\r");
    let screen = second.wait_for("the busy mark", |s| s.contains("(in another window)"));
    let marked = screen
        .lines()
        .find(|l| l.contains("(in another window)"))
        .unwrap();
    assert!(marked.contains("Alpha login bug"), "{screen}");
    // Picked, it opens read-only too (not "cannot open").
    second.type_text("alpha");
    second.send("\r");
    let screen = second.wait_for("the read-only view", |s| {
        header(s).contains("read-only") && s.contains("Why does login fail")
    });
    assert!(!screen.contains("cannot open"), "{screen}");
    drop(first);
}

/// The session logs under `store` that hold `text`.
fn logs_holding(store: &std::path::Path, text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut dirs = vec![store.to_owned()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if std::fs::read_to_string(&path).is_ok_and(|log| log.contains(text)) {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

/// Item 8: what is typed after `/resume`'s Enter in one burst — while that Enter waits for
/// the filter's answer and the session opens — goes to the session it opens, in order:
/// neither lost in the closing picker nor sent to the session being left.
#[test]
fn keys_typed_after_the_pick_in_one_burst_reach_the_session_it_opens() {
    let fx = fixture();
    let app = Session::start(&fx.store, &fx.config, &fx.project, &[]);
    app.wait_for_text("@ reference a session");
    app.send("/resume\rBeta release\rand the tests?\r");
    let screen = app.wait_for("the message sent in the opened session", |s| {
        s.contains("You said: \"and the tests?\"")
    });
    assert!(header(&screen).contains("Beta release notes"), "{screen}");
    assert!(screen.contains("Draft the release notes."), "{screen}");
    let logs = logs_holding(&fx.store, "and the tests?");
    assert_eq!(logs.len(), 1, "{logs:?}");
    assert!(logs[0].contains("s-beta"), "{logs:?}");
}

/// Item 8: `--continue` takes the session of this directory active last that no other
/// window writes to, saying so; when every one is busy, the last one read-only.
#[test]
fn continue_passes_over_a_busy_session_or_shows_it_read_only() {
    let fx = fixture();
    // s-beta was created after s-alpha: it is the one active last.
    let holder = app(&fx, &["--resume", "s-beta"]);
    holder.wait_for_text("Draft the release notes.");
    let cont = app(&fx, &["--continue"]);
    cont.wait_for_text("Why does login fail");
    let screen = cont.wait_for_text("continuing s-alpha");
    assert!(
        screen.contains("s-beta, the session of this directory active last, is open in another"),
        "{screen}"
    );
    assert!(!header(&screen).contains("read-only"), "{screen}");
    // Now both are busy: the last one, read-only.
    let again = app(&fx, &["--continue"]);
    let screen = again.wait_for_text("open in another window");
    again.wait_for_text("Draft the release notes.");
    assert!(header(&screen).contains("read-only"), "{screen}");
    drop((holder, cont));
}

/// Item 9: an untitled session is shown by the leading words of its first message — in the
/// `@` popup (and the mention it inserts) and in `/resume` — secrets redacted; `candidates
/// --json` keeps the contract's label, its id.
#[test]
fn an_untitled_session_is_shown_by_its_first_message() {
    let fx = fixture();
    let key = "sk-ant-api03-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    seed_session(
        &fx.store,
        (
            "s-untitled-1",
            1_700_000_000_100,
            Some(fx.project.as_path()),
        ),
        &format!("Why is the nightly\n build so slow with {key}"),
        None,
    );
    let shown = "Why is the nightly build so slow with [redacted: anthropic-api-key]";
    // The row is cut to its width.
    let row = "Why is the nightly build so slow with [redacted";
    let app = app(&fx, &[]);
    app.wait_for_text("@ reference a session");
    app.type_text("@");
    let screen = app.wait_for_text(row);
    assert!(!screen.contains("aaaaaaaa"), "{screen}");
    app.type_text("untitled");
    app.wait_for("the one row", |s| {
        s.contains(row) && !s.contains("Alpha login bug")
    });
    app.send("\t");
    app.wait_for_text(&format!("│@{shown} "));
    app.send("\x15"); // Ctrl+U: the draft goes
    app.type_text("/resume");
    app.send("\r");
    let screen = app.wait_for("the picker's row", |s| {
        s.contains("Resume a session") && s.contains(row)
    });
    assert!(!screen.contains("aaaaaaaa"), "{screen}");
    // The words shown find it.
    app.type_text("nightly BUILD");
    app.wait_for("the row found by its words", |s| {
        s.contains("filter: nightly BUILD")
            && s.contains(row)
            && !s.contains("Alpha login bug")
            && !s.contains("closest matches")
    });
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dsh-refs"))
        .args(["--no-foreign-sources", "--store"])
        .arg(&fx.store)
        .arg("--config")
        .arg(&fx.config)
        .args(["candidates", "--session", "s-alpha", "--json"])
        .output()
        .unwrap();
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["sessionId"] == "s-untitled-1")
        .unwrap();
    assert_eq!(row["label"], "s-untitled-1", "{row}");
}

/// Item 10: `/clear` and `/rename` are aliases of `/new` and `/title`.
#[test]
fn clear_and_rename_are_aliases_of_new_and_title() {
    let fx = fixture();
    let app = app(&fx, &["--resume", "s-alpha"]);
    app.wait_for_text("Why does login fail");
    app.type_text("/rename Login after the upgrade");
    app.send("\r");
    app.wait_for_text("title set: Login after the upgrade");
    app.wait_for("the header's new title", |s| {
        header(s).contains("Login after the upgrade")
    });
    app.type_text("/clear");
    app.send("\r");
    let screen = app.wait_for("a new session", |s| {
        !s.contains("Why does login fail") && header(s).contains(" s-20")
    });
    assert!(!screen.contains("unknown command"), "{screen}");
}

/// Item 10: at narrow widths the header keeps the project's name, the directory cut in the
/// middle.
#[test]
fn the_header_keeps_the_projects_name_in_a_narrow_window() {
    let fx = fixture();
    let project = fx.dir.path().join("work").join("billing-service-api");
    std::fs::create_dir_all(&project).unwrap();
    let project = project.canonicalize().unwrap();
    let app = Session::launch(&fx.store, &fx.config, &project, &[], false, &[]);
    app.wait_for_text("@ reference");
    for cols in [40u16, 60] {
        app.resize(12, cols);
        let screen = app.wait_for("the resized header", |s| {
            let top = header(s);
            top.trim_end().ends_with("billing-service-api")
                && top.trim_end().chars().count() <= usize::from(cols)
        });
        assert!(header(&screen).contains(" s-"), "{cols}: {screen}");
        // And after a resize to a tinier window, cut in the middle.
        app.resize(10, 32);
        let screen = app.wait_for("the resized header", |s| {
            let top = header(s);
            top.contains("bill") && top.contains("…") && top.trim_end().ends_with("-api")
        });
        assert!(header(&screen).trim_end().chars().count() <= 32, "{screen}");
    }
}

/// Item 10: a read-only view shows that session's token totals and a placeholder saying
/// what works there; a failed request is left out of the totals.
#[test]
fn a_read_only_view_shows_its_own_totals_and_failed_requests_count_nothing() {
    let fx = fixture();
    let sessions = dsh_store::SessionStore::new(&fx.store);
    let header_of = dsh_store::SessionHeader::new(
        "s-used",
        1_700_000_000_500,
        Some(fx.project.display().to_string()),
    );
    let mut writer = sessions.open_writer("s-used", Some(header_of)).unwrap();
    writer
        .append(dsh_store::layout::in_turns(
            1,
            [
                dsh_store::NewEvent::appended(dsh_store::EventData::UserMessage(
                    dsh_store::Message::user_text("How much did this cost?"),
                )),
                dsh_store::NewEvent::appended(dsh_store::EventData::AssistantMessage {
                    turn: 1,
                    step: 1,
                    message: dsh_store::Message::new(
                        dsh_store::Role::Assistant,
                        vec![dsh_store::ContentBlock::text("Plenty.")],
                        dsh_store::Source::model("offline", "offline"),
                    ),
                    usage: Some(serde_json::json!({"inputTokens": 1234, "outputTokens": 56})),
                    extra: serde_json::Map::new(),
                }),
            ],
        ))
        .unwrap();
    // Held open: the second window shows it read-only.
    let config = fx.dir.path().join("failing.toml");
    std::fs::write(
        &config,
        "[model]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:1\"\n\
         api_key_env = \"DSH_REFS_TEST_KEY\"\nmax_retries = 1\ntimeout_secs = 5\n",
    )
    .unwrap();
    let env = [("DSH_REFS_TEST_KEY", "sk-test")];
    let view = Session::launch(&fx.store, &config, &fx.project, &env, false, &[]);
    view.wait_for_text("Ask anything");
    view.type_text("does this fail?");
    view.send("\r");
    let screen = view.wait_for_text("LLM_NETWORK");
    let failed = view.wait_for("the totals after the failure", |s| {
        s.lines().any(|l| l.contains("● idle"))
    });
    assert!(failed.contains(" 0 in / 0 out"), "{screen}\n{failed}");
    drop(writer);
    let holder = app(&fx, &["--resume", "s-used"]);
    holder.wait_for_text("How much did this cost?");
    view.type_text("/resume s-used");
    view.send("\r");
    let screen = view.wait_for("the read-only view", |s| {
        header(s).contains("read-only") && s.contains("Plenty.")
    });
    assert!(screen.contains("1.2k in / 56 out"), "its totals: {screen}");
    assert!(
        screen.contains("│ read-only: Tab/Enter mention it, Esc back"),
        "the placeholder: {screen}"
    );
    view.send("\x1b");
    let screen = view.wait_for_text("Ask anything");
    assert!(screen.contains(" 0 in / 0 out"), "{screen}");
}

/// Item 8: `--resume` names another tool's session by its exact title: it opens read-only
/// (it used to be refused), and Tab goes back to a new session with a mention of it.
#[test]
fn resume_opens_another_tools_session_read_only() {
    let fx = fixture();
    let home = fx.dir.path().join("home");
    let fixtures =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/dsh-foreign/tests/fixtures");
    pty::copy_tree(&fixtures.join("claude"), &home.join(".claude"));
    let cache = fx.dir.path().join("cache");
    let (home_s, cache_s) = (home.display().to_string(), cache.display().to_string());
    let env = [
        ("HOME", home_s.as_str()),
        ("XDG_CACHE_HOME", cache_s.as_str()),
    ];
    let app = Session::launch(
        &fx.store,
        &fx.config,
        &fx.project,
        &env,
        true,
        &["--resume", "Fix checkout crash on empty cart"],
    );
    let screen = app.wait_for_text("[claude] Fix checkout crash on empty cart · read-only");
    assert!(!screen.contains("open in another window"), "{screen}");
    app.send("\t");
    app.wait_for_text("│@Fix checkout crash on empty cart ");
}

/// Item 10: after `/resume`, Up recalls newest typed first across windows — `/resume`
/// itself, what the other window sent, this window's older input — and only then the
/// resumed session's own message, logged long before.
#[test]
fn up_after_resume_walks_both_windows_then_the_sessions_older_message() {
    let fx = fixture();
    let one = Session::start(&fx.store, &fx.config, &fx.project, &[]);
    let two = Session::start(&fx.store, &fx.config, &fx.project, &[]);
    for app in [&one, &two] {
        app.wait_for_text("@ reference a session");
    }
    one.type_text("first from one");
    one.send("\r");
    one.wait_for_text("You said: \"first from one\"");
    two.type_text("then from two");
    two.send("\r");
    two.wait_for_text("You said: \"then from two\"");
    one.type_text("/resume");
    one.send("\r");
    one.wait_for_text("Resume a session");
    one.type_text("Alpha login");
    one.send("\r");
    one.wait_for("the resumed session", |s| {
        header(s).contains("Alpha login bug") && s.contains("Why does login fail")
    });
    for want in [
        "/resume",
        "then from two",
        "first from one",
        "Why does login fail after the upgrade?",
    ] {
        one.send("\x1b[A");
        one.wait_for(want, |s| s.lines().any(|l| l.contains(&format!("│{want}"))));
    }
}
