//! Issue 32 items 1–7 in the real binary: the `@` popup does what the screen shows — Enter
//! takes the highlighted row in every section, `@` and a space is no mention, queries of
//! several words work anywhere in the draft, an exact title comes first, a fourth session
//! is refused in the popup, Alt+E works on another tool's hit, and Esc read together with
//! the next key (no kitty protocol) closes the popup and lets the key act on the draft.

use super::*;

/// The texts of the user's own messages in the session the app created.
fn sent_texts(log: &[Value]) -> Vec<String> {
    log.iter()
        .filter(|e| e["type"] == "user/message" && source_kind(e, "").as_deref() == Some("user"))
        .filter_map(|e| e["data"]["content"][0]["text"].as_str().map(str::to_owned))
        .collect()
}

/// The app started on `fx`, ready for keys.
fn ready(fx: &Fixture) -> Session {
    let app = Session::start(&fx.store, &fx.config, &fx.project, &[]);
    app.wait_for_text("@ reference a session");
    app
}

/// Sends the draft and waits for the reply to finish, then quits.
fn send_and_quit(app: &mut Session) {
    app.send("\r");
    app.wait_for("the reply to finish", |s| {
        s.contains("● idle") && s.contains("• ")
    });
    app.send("\x04");
    app.wait_exit();
}

/// The composer's text row on screen (`│…│` right above the hint line's border).
fn composer_row(screen: &str) -> String {
    let lines: Vec<&str> = screen.lines().collect();
    let bottom = lines.iter().rposition(|l| l.starts_with('╰')).unwrap_or(0);
    let row = lines.get(bottom.saturating_sub(1)).copied().unwrap_or("");
    let row = row.trim_end();
    row.strip_suffix('│').unwrap_or(row).trim_end().to_owned()
}

/// Item 1: a query only the fuzzy matcher answers shows one row under "closest matches";
/// it is highlighted and Enter inserts it (it used to send `@alpbug` as the message).
#[test]
fn enter_on_a_closest_match_inserts_it() {
    let fx = fixture();
    let mut app = ready(&fx);
    app.type_text("@alpbug");
    app.wait_for("the closest match, highlighted", |s| {
        s.contains("closest matches") && s.contains("› Alpha login bug")
    });
    app.wait_for_text("Enter/Tab insert this session");
    app.send("\r");
    app.wait_for_text("│@Alpha login bug ");
    app.type_text("why?");
    send_and_quit(&mut app);
    let log = new_session_log(&fx.store);
    assert_eq!(sent_texts(&log), ["@Alpha login bug why?"]);
    assert_context_then(&log, "user/message");
}

/// Item 1: a session found only in its conversation is inserted by Enter — typed slowly
/// and, once the index is up, `@upgrade` and Enter in one write (Enter waits for the hits).
#[test]
fn enter_on_a_conversation_hit_inserts_it_also_in_a_burst() {
    let fx = fixture();
    let mut app = ready(&fx);
    app.type_text("@upgrade");
    app.wait_for("the hit, highlighted", |s| {
        s.contains("in conversations") && s.contains("› Alpha login bug")
    });
    app.send("\r");
    app.wait_for_text("│@Alpha login bug ");
    app.send("\x15");
    app.wait_for("an empty composer", |s| s.contains("│ Ask anything"));
    app.send("@upgrade\r");
    app.wait_for_text("│@Alpha login bug ");
    app.type_text("what changed?");
    send_and_quit(&mut app);
    let log = new_session_log(&fx.store);
    assert_eq!(sent_texts(&log), ["@Alpha login bug what changed?"]);
}

/// Items 1 and 3: the start of a file's name with a `.` in it is a path: the files come
/// first, the first highlighted, and Enter inserts it; a directory row opens on Enter
/// (`@src/`, its entries next) and on Tab, quoted or not.
#[test]
fn enter_on_file_and_directory_rows_inserts_them() {
    let fx = fixture();
    std::fs::write(fx.project.join("notes.md"), "# notes\nship friday\n").unwrap();
    std::fs::create_dir_all(fx.project.join("src")).unwrap();
    std::fs::write(fx.project.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::create_dir_all(fx.project.join("my docs")).unwrap();
    std::fs::write(fx.project.join("my docs/plan.md"), "plan\n").unwrap();
    let mut app = ready(&fx);
    app.type_text("@note");
    app.wait_for("the file, first and highlighted", |s| {
        s.contains("› [file] notes.md")
    });
    app.send("\r");
    app.wait_for_text("│@notes.md ");
    app.type_text("@sr");
    app.wait_for("the directory row", |s| s.contains("› [dir] src"));
    app.wait_for_text("Enter/Tab open this folder");
    app.send("\r");
    app.wait_for("the directory's entries", |s| {
        composer_row(s).starts_with("│@notes.md @src/") && s.contains("› [file] src/main.rs")
    });
    app.send("\r");
    app.wait_for_text("│@notes.md @src/main.rs ");
    app.type_text("@my");
    app.wait_for("the quoted directory", |s| s.contains("[dir] my docs"));
    app.send("\t");
    app.wait_for("its entries, the quote still open", |s| {
        composer_row(s).contains("@\"my docs/") && s.contains("› [file] my docs/plan.md")
    });
    app.send("\r");
    app.wait_for_text("@notes.md @src/main.rs @\"my docs/plan.md\" ");
    app.type_text("compare");
    send_and_quit(&mut app);
    let log = new_session_log(&fx.store);
    assert_eq!(
        sent_texts(&log),
        ["@notes.md @src/main.rs @\"my docs/plan.md\" compare"]
    );
    let all = serde_json::to_string(&log).unwrap();
    assert!(all.contains("ship friday"), "notes.md attached");
}

/// Item 4: two words typed in the middle of a draft, and where a chip was deleted, insert
/// the session like at the end (the popup used to close at the space).
#[test]
fn a_query_of_two_words_inserts_in_the_middle_and_after_a_deleted_chip() {
    let fx = fixture();
    let mut app = ready(&fx);
    app.type_text("compare later");
    for _ in 0.." later".len() {
        app.send("\x1b[D");
        std::thread::sleep(Duration::from_millis(15));
    }
    app.type_text(" @alpha");
    app.wait_for_text("› Alpha login bug");
    app.type_text(" login");
    app.wait_for("the two-word query's row", |s| {
        s.contains("› Alpha login bug") && composer_row(s).contains("@alpha login later")
    });
    app.send("\r");
    app.wait_for_text("│compare @Alpha login bug  later");
    // Delete that chip (the caret goes right after it) and type two words there.
    app.send("\x1b[F");
    for _ in 0.."  later".len() {
        app.send("\x1b[D");
        std::thread::sleep(Duration::from_millis(15));
    }
    app.send("\x7f");
    app.wait_for_text("│compare   later");
    app.type_text("@beta");
    app.wait_for_text("› Beta release notes");
    app.type_text(" release");
    app.wait_for("the two-word query's row", |s| {
        s.contains("› Beta release notes") && composer_row(s).contains("@beta release  later")
    });
    app.send("\r");
    app.wait_for_text("│compare @Beta release notes   later");
    send_and_quit(&mut app);
    let log = new_session_log(&fx.store);
    assert_eq!(sent_texts(&log), ["compare @Beta release notes   later"]);
}

/// Item 2: typing a session's whole title puts it first, above a newer session whose title
/// merely holds it; that one's chip shows its leading `@` once.
#[test]
fn an_exact_title_beats_a_recent_partial_match() {
    let fx = fixture();
    seed(
        &fx.store,
        &fx.project,
        ("s-exact", 1),
        "Deploy plan",
        "Plan it.",
    );
    std::thread::sleep(Duration::from_millis(5));
    seed(
        &fx.store,
        &fx.project,
        ("s-partial", 2),
        "@Deploy plan what now",
        "And now?",
    );
    let mut app = ready(&fx);
    app.type_text("@Deploy");
    app.wait_for_text("@Deploy plan what now");
    app.type_text(" plan");
    app.wait_for("both rows, the exact title first", |s| {
        let exact = s
            .find("› Deploy plan\n")
            .or_else(|| s.find("› Deploy plan "));
        exact.is_some_and(|at| s.find("@Deploy plan what now").is_some_and(|p| at < p))
    });
    app.send("\r");
    let screen = app.wait_for_text("│@Deploy plan ");
    assert!(!screen.contains("│@@"), "{screen}");
    app.type_text("@Deploy plan");
    app.wait_for_text("@Deploy plan what now");
    app.send("\x1b[B");
    app.wait_for_text("› @Deploy plan what now");
    app.send("\r");
    let screen = app.wait_for_text("│@Deploy plan @Deploy plan what now ");
    assert!(!screen.contains("@@"), "{screen}");
    send_and_quit(&mut app);
    let log = created_log(&fx.store, &["s-exact", "s-partial"]);
    let context = log
        .iter()
        .find(|e| source_kind(e, "").as_deref() == Some("session-reference"))
        .unwrap();
    let refs = &context["data"]["source"]["references"];
    assert_eq!(refs[0]["sessionId"], "s-exact", "{refs}");
    assert_eq!(refs[1]["sessionId"], "s-partial", "{refs}");
}

/// Item 4: `@` and a space is no mention: Enter sends the text as typed (it used to insert
/// the session the words after it matched).
#[test]
fn an_at_sign_and_a_space_then_enter_sends_the_text_as_typed() {
    let fx = fixture();
    seed(
        &fx.store,
        &fx.project,
        ("s-atlas", 3),
        "Atlas rollout",
        "Roll it out.",
    );
    let mut app = ready(&fx);
    app.type_text("the cost is 5 @");
    app.wait_for_text("Atlas rollout");
    app.type_text(" atlas");
    app.wait_for("the popup closed", |s| {
        !s.contains("@ sessions") && s.contains("│the cost is 5 @ atlas")
    });
    send_and_quit(&mut app);
    let log = created_log(&fx.store, &["s-atlas"]);
    assert_eq!(sent_texts(&log), ["the cost is 5 @ atlas"]);
    assert!(
        !log.iter()
            .any(|e| source_kind(e, "").as_deref() == Some("session-reference")),
        "no reference"
    );
}

/// Item 5: with three sessions in the draft (`max_references`) a fourth row says so, and
/// Enter inserts nothing and sends nothing (it used to be refused only at send).
#[test]
fn a_fourth_session_is_refused_in_the_popup() {
    let fx = fixture();
    seed(
        &fx.store,
        &fx.project,
        ("s-gamma", 4),
        "Gamma metrics",
        "Count.",
    );
    seed(
        &fx.store,
        &fx.project,
        ("s-delta", 5),
        "Delta cleanup",
        "Clean.",
    );
    let mut app = ready(&fx);
    for (query, chip) in [
        ("@alph", "@Alpha login bug "),
        ("@bet", "@Beta release notes "),
        ("@gamm", "@Gamma metrics "),
    ] {
        app.type_text(query);
        app.wait_for_text(&format!("› {}", chip.trim_start_matches('@').trim_end()));
        app.send("\r");
        app.wait_for_text(chip);
    }
    app.type_text("@delt");
    app.wait_for("the row and the hint saying why", |s| {
        s.contains("› Delta cleanup · limit: 3 sessions per message")
            && s.contains("Enter/Tab insert nothing")
    });
    app.send("\r");
    app.send("\t");
    std::thread::sleep(Duration::from_millis(300));
    let screen = app.wait_for_text("limit: 3 sessions per message");
    assert!(composer_row(&screen).ends_with("@delt"), "{screen}");
    assert!(!screen.contains("@Delta cleanup"), "{screen}");
    assert!(!screen.contains("SESSION_REFERENCE_TOO_MANY"), "{screen}");
    // A session already in the draft is no new one: it goes in.
    app.send("\x7f\x7f\x7f\x7f");
    app.type_text("alph");
    app.wait_for_text("› Alpha login bug ✓");
    app.send("\r");
    app.wait_for("the repeat inserted", |s| {
        composer_row(s).ends_with("@Gamma metrics @Alpha login bug")
    });
    app.send("\x15");
    app.wait_for("an empty composer", |s| s.contains("│ Ask anything"));
    app.send("\x04");
    app.wait_exit();
    let sessions = SessionStore::new(&fx.store).list_sessions().unwrap();
    assert_eq!(sessions.len(), 4, "nothing was sent");
}

/// Item 6: Alt+E on another tool's conversation hit inserts an excerpt of the exchange
/// that matched; the excerpt's URI carries the foreign id, and `prepare` reads it.
#[test]
fn alt_e_on_a_foreign_hit_inserts_an_excerpt() {
    const CLAUDE: &str = "claude-code:5f1c2d3e-0000-4000-8000-000000000001";
    let fx = fixture();
    let mut app = start_in_home(&fx, &foreign_home(&fx, &["claude"]));
    app.wait_for_text("@ reference a session");
    app.type_text("@crashes");
    app.wait_for("the Claude Code hit with its key", |s| {
        s.contains("in conversations")
            && s.contains("[claude] Fix checkout crash")
            && s.contains("Alt+E excerpt")
    });
    // Onto the hit, then Alt+E (Esc and `e` in one write: what a terminal sends).
    for _ in 0..8 {
        let screen = app.contents();
        if screen.contains("› [claude] Fix checkout crash") {
            break;
        }
        app.send("\x1b[B");
        std::thread::sleep(Duration::from_millis(60));
    }
    app.wait_for_text("Alt+E only the matching exchange");
    app.send("\x1be");
    app.wait_for_text("│@Fix checkout crash on empty cart ");
    app.type_text("why?");
    send_and_quit(&mut app);
    let log = new_session_log(&fx.store);
    let context = log
        .iter()
        .find(|e| source_kind(e, "").as_deref() == Some("session-reference"))
        .unwrap();
    let refs = &context["data"]["source"]["references"];
    assert_eq!(refs[0]["sessionId"], CLAUDE, "{refs}");
    assert!(refs[0]["excerpt"].is_object(), "an excerpt: {refs}");
    let conversations = snapshot_conversations(context);
    let messages = conversations[0].1.as_array().unwrap();
    assert!(messages.len() < 7, "not the whole session: {messages:?}");
    let text = serde_json::to_string(messages).unwrap();
    assert!(text.contains("crashes"), "{text}");
}

/// Item 7: Esc then Ctrl+U in one read (a terminal without the kitty protocol sends them as
/// Alt+Ctrl+U) close the popup and clear the draft; in `/resume` they close the picker.
#[test]
fn esc_then_a_key_in_one_read_closes_the_popup_and_the_key_acts() {
    let fx = fixture();
    let mut app = ready(&fx);
    app.type_text("keep @alph");
    app.wait_for_text("› Alpha login bug");
    app.send("\x1b\x15");
    app.wait_for("the popup closed, the draft cleared", |s| {
        !s.contains("@ sessions") && s.contains("│ Ask anything")
    });
    app.type_text("/resume");
    app.send("\r");
    app.wait_for_text("Resume a session");
    app.type_text("alph");
    app.wait_for_text("› Alpha login bug");
    app.send("\x1b\x15");
    app.wait_for("the picker closed", |s| !s.contains("Resume a session"));
    app.send("\x04");
    app.wait_exit();
}
