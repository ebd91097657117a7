//! `dsh-refs send` end to end: the real binary on a temporary store.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::needless_pass_by_value,
    clippy::similar_names
)] // test code: small known values, helpers that take values for brevity

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pretty_assertions::assert_eq;

use dsh_reference::{encode_uri, format_mention};
use dsh_store::{Event, EventData, SessionStore};

struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new(config: &str) -> Fixture {
        let fx = Fixture {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::write(fx.dir.path().join("config.toml"), config).unwrap();
        fx
    }

    fn store_root(&self) -> PathBuf {
        self.dir.path().join("store")
    }

    fn send(&self, session: &str, text: &str) -> Output {
        self.send_with(session, text, &[])
    }

    fn send_with(&self, session: &str, text: &str, env: &[(&str, &str)]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_dsh-refs"));
        cmd.env(
            "XDG_CACHE_HOME",
            std::env::temp_dir().join("dsh-refs-test-cache"),
        );
        cmd.arg("--store")
            .arg(self.store_root())
            .arg("--config")
            .arg(self.dir.path().join("config.toml"))
            .arg("--no-foreign-sources")
            .args(["send", "--session", session, "--cwd", "proj", text])
            .current_dir(self.dir.path())
            .env_remove("DSH_REFS_STORE")
            .env_remove("DSH_REFS_CONFIG")
            .env_remove("DEEPSEEK_API_KEY");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    }

    /// The whole log of `id` (opening the writer proves no one else holds it).
    fn log(&self, id: &str) -> Vec<Event> {
        let store = SessionStore::new(self.store_root());
        store.open_writer(id, None).unwrap().events().to_vec()
    }

    fn raw_log(&self, id: &str) -> Vec<u8> {
        let store = SessionStore::new(self.store_root());
        let loc = store.locate(id).unwrap().unwrap();
        std::fs::read(loc.path).unwrap()
    }
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_ok(out: &Output) {
    let (o, e) = text(out);
    assert!(
        out.status.success(),
        "status {:?}\nstdout {o}\nstderr {e}",
        out.status
    );
}

/// Kinds of the log without chunks, the user messages tagged direct/context.
fn shape(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.kind() != "assistant/chunk")
        .map(|e| match &e.data {
            EventData::UserMessage(m) if m.is_direct_user() => {
                format!("user/message {}", m.joined_text())
            }
            EventData::UserMessage(m) => format!(
                "user/message [{}]",
                m.source.as_ref().and_then(|s| s.kind()).unwrap_or("?")
            ),
            _ => e.kind().to_owned(),
        })
        .collect()
}

#[test]
fn send_with_a_mention_logs_snapshot_then_direct_message_and_streams_the_offline_reply() {
    let fx = Fixture::new("[model]\nprovider = \"offline\"\n");
    assert_ok(&fx.send("alpha", "We decided to ship on Friday."));
    let a_log = fx.log("alpha");
    assert_eq!(
        shape(&a_log),
        [
            "turn/start",
            "user/message We decided to ship on Friday.",
            "session/title",
            "step/start",
            "assistant/message",
            "step/end",
            "turn/end"
        ]
    );

    let mention = format_mention("alpha", Some("Alpha plan"));
    let out = fx.send("t", &format!("what did {mention} decide?"));
    assert_ok(&out);
    let (stdout, _) = text(&out);
    assert!(
        stdout.contains("Alpha plan"),
        "reply should name the session: {stdout}"
    );
    assert!(stdout.ends_with('\n'));

    let log = fx.log("t");
    assert_eq!(
        shape(&log),
        [
            "turn/start",
            "user/message [session-reference]",
            "user/message what did @Alpha plan decide?",
            "session/title",
            "step/start",
            "assistant/message",
            "step/end",
            "turn/end"
        ]
    );
    // The streamed stdout is the logged reply.
    let reply = log.iter().find_map(|e| match &e.data {
        EventData::AssistantMessage { message, .. } => Some(message.joined_text()),
        _ => None,
    });
    assert_eq!(stdout.trim_end(), reply.unwrap().trim_end());
    let EventData::SessionTitle(title) = &log[3].data else {
        panic!("title")
    };
    assert_eq!(title.title, "what did @Alpha plan decide?");
    assert_eq!(title.message_seqs, [2]);
    // The session was created with the absolute --cwd.
    let store = SessionStore::new(fx.store_root());
    let header = store.open_writer("t", None).unwrap().header().clone();
    assert_eq!(
        header.cwd.as_deref().map(Path::new),
        Some(fx.dir.path().join("proj").as_path())
    );

    // A third session referencing t carries t's direct messages, never the nested snapshot.
    let out = fx.send("c", &format!("and {}", format_mention("t", None)));
    assert_ok(&out);
    let c_log = fx.log("c");
    let context = c_log
        .iter()
        .find_map(|e| match &e.data {
            EventData::UserMessage(m) if !m.is_direct_user() => Some(m.joined_text()),
            _ => None,
        })
        .unwrap();
    assert!(
        context.contains("what did @Alpha plan decide?"),
        "{context}"
    );
    assert!(
        !context.contains("ship on Friday"),
        "nested snapshot leaked: {context}"
    );
}

/// Builds the message text for a target session id.
type MessageFor = fn(&str) -> String;

#[test]
fn reference_errors_exit_1_with_the_code_and_write_nothing() {
    let fx = Fixture::new("");
    assert_ok(&fx.send("t", "first message"));
    let before = fx.raw_log("t");
    let cases: [(MessageFor, &str); 3] = [
        (
            |_| "see @[x](dsh-session:!!)".to_owned(),
            "SESSION_REFERENCE_INVALID_REFERENCE",
        ),
        (
            |me| format!("see {}", format_mention(me, None)),
            "SESSION_REFERENCE_SELF_REFERENCE",
        ),
        (
            |_| format!("see {}", encode_uri("missing")),
            "SESSION_REFERENCE_READ_FAILED",
        ),
    ];
    for (input, code) in cases {
        // Existing target: its log is untouched.
        let out = fx.send("t", &input("t"));
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(1), "{code}: {stderr}");
        assert!(stderr.contains(code), "{code}: {stderr}");
        assert_eq!(stdout, "");
        assert_eq!(fx.raw_log("t"), before, "{code}");
        // New target: not even created.
        let out = fx.send("fresh", &input("fresh"));
        let (_, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(1), "{code}: {stderr}");
        assert!(stderr.contains(code), "{code}: {stderr}");
        assert!(!SessionStore::new(fx.store_root()).exists("fresh"));
    }
}

#[test]
fn provider_errors_exit_1_with_the_llm_code_and_keep_the_message() {
    let fx = Fixture::new(
        "[model]\nprovider = \"openai\"\nbase_url = \"http://127.0.0.1:1\"\napi_key_env = \"DSH_REFS_TEST_KEY\"\nmax_retries = 0\ntimeout_secs = 5\n",
    );
    let out = fx.send_with(
        "t",
        "hello there",
        &[("DSH_REFS_TEST_KEY", "sk-test-secret")],
    );
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("LLM_NETWORK"), "{stderr}");
    assert!(!stderr.contains("sk-test-secret"));
    let log = fx.log("t");
    assert!(shape(&log).contains(&"user/message hello there".to_owned()));
    let Some(EventData::TurnEnd { reason, .. }) = log.last().map(|e| &e.data) else {
        panic!("turn/end last")
    };
    assert_eq!(reason.kind, "error");

    // An explicit openai provider without its key is a configuration error.
    let out = fx.send("t", "again");
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr.contains("LLM_INVALID_CONFIG"), "{stderr}");
}

#[test]
fn empty_text_is_a_usage_error_and_creates_nothing() {
    let fx = Fixture::new("");
    let out = fx.send("t", "  \n ");
    assert_eq!(out.status.code(), Some(2));
    assert!(!SessionStore::new(fx.store_root()).exists("t"));
}

#[test]
fn a_session_over_the_context_window_is_sent_trimmed_with_a_warning() {
    let fx = Fixture::new("[model]\nprovider = \"offline\"\ncontext_tokens = 1024\n");
    let long = "word ".repeat(600);
    assert_ok(&fx.send("t", &long));
    let out = fx.send("t", &long);
    assert_ok(&out);
    let (_, stderr) = text(&out);
    assert!(
        stderr.contains("dsh-refs: warning: AGENT_CONTEXT_TRIMMED: ")
            && stderr.contains("1024 tokens"),
        "{stderr}"
    );
    // Nothing is lost from the log.
    let users = fx
        .log("t")
        .iter()
        .filter(|e| e.kind() == "user/message")
        .count();
    assert_eq!(users, 2);
}
