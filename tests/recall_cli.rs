//! The recall tool end to end (issue 37 items 2–4, 6): the real binary, the offline model and
//! an OpenAI-compatible server on 127.0.0.1. A word said only in the first message of a
//! 5 000-message referenced session, or only in text a compaction replaced, reaches the
//! model through `search_references` and the answer with its citation; a `ref` the message
//! does not have is an error result; `send --json` shows the call and its result; a
//! cancel or a SIGKILL during a tool round leaves a log `check` accepts.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use dsh_reference::format_mention;
use dsh_store::event::{EventData, now_ms};
use dsh_store::{Event, SessionHeader, SessionQuery, SessionStore};

mod common;
use common::events::exchange;
use common::scripted_http::{Server, Step, chunk, end, stream_head};

/// A store, a config and the process environment for the binary.
struct Bench {
    dir: tempfile::TempDir,
}

impl Bench {
    fn new(model: &str) -> Bench {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.toml"), model).unwrap();
        Bench { dir }
    }

    fn offline() -> Bench {
        Bench::new("[model]\nprovider = \"offline\"\n")
    }

    fn through(server: &Server) -> Bench {
        Bench::new(&format!(
            "[model]\nprovider = \"openai\"\nbase_url = \"{}\"\napi_key_env = \"RECALL_TEST_KEY\"\nmax_retries = 0\ntimeout_secs = 20\n",
            server.base_url
        ))
    }

    fn store(&self) -> SessionStore {
        SessionStore::new(self.dir.path().join("store"))
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_dsh-refs"));
        cmd.arg("--store")
            .arg(self.dir.path().join("store"))
            .arg("--config")
            .arg(self.dir.path().join("config.toml"))
            .arg("--no-foreign-sources")
            .args(args)
            .current_dir(self.dir.path())
            .env("XDG_CACHE_HOME", self.dir.path().join("cache"))
            .env("RECALL_TEST_KEY", "sk-test")
            .env_remove("DSH_REFS_STORE")
            .env_remove("DSH_REFS_CONFIG")
            .env_remove("DEEPSEEK_API_KEY");
        cmd
    }

    /// `send --json` of `text` to session `target`.
    fn send(&self, target: &str, text: &str) -> Output {
        self.command(&["send", "--session", target, "--json", text])
            .output()
            .unwrap()
    }

    fn spawn_send(&self, target: &str, text: &str) -> Child {
        self.command(&["send", "--session", target, "--json", text])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }

    /// `check --session` passes.
    fn assert_checks(&self, target: &str) {
        let out = self.command(&["check", "--session", target]).output();
        let out = out.unwrap();
        let report = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "check: {report}");
    }

    fn events(&self, id: &str) -> Vec<Event> {
        let loc = self.store().locate(id).unwrap().unwrap();
        dsh_store::reader::read_all(&loc.path, loc.format)
            .unwrap()
            .0
            .into_iter()
            .map(|(e, _)| e)
            .collect()
    }
}

/// A session `id` of `exchanges` question/answer turns after `first` (the first question,
/// answered "noted"); returns the seq of the first question.
fn long_session(bench: &Bench, id: &str, first: &str, exchanges: u64) -> u64 {
    let header = SessionHeader::new(id, now_ms(), Some("/w".into()));
    let mut writer = bench.store().open_writer(id, Some(header)).unwrap();
    let written = writer.append(exchange(1, first, "noted")).unwrap();
    let first_seq = written[1].seq;
    let mut batch = Vec::new();
    for n in 2..=exchanges {
        batch.extend(exchange(
            n,
            &format!("question {n}: how do we keep the cache warm?"),
            &format!("answer {n}: prefetch the hot keys and watch the hit rate"),
        ));
        if batch.len() > 6_000 {
            writer.append(std::mem::take(&mut batch)).unwrap();
        }
    }
    writer.append(batch).unwrap();
    first_seq
}

fn mention(id: &str, label: &str) -> String {
    format_mention(id, Some(label))
}

/// The JSON lines `send --json` printed.
fn lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn answer(lines: &[Value]) -> String {
    lines
        .iter()
        .filter(|l| l["type"] == "text")
        .filter_map(|l| l["text"].as_str())
        .collect()
}

fn of_type<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["type"] == kind).collect()
}

/// The text of the session-reference context `target` logged.
fn snapshot_text(bench: &Bench, target: &str) -> String {
    bench
        .events(target)
        .iter()
        .find_map(|e| match &e.data {
            EventData::UserMessage(m)
                if m.source
                    .as_ref()
                    .is_some_and(dsh_store::Source::is_session_reference) =>
            {
                Some(m.joined_text())
            }
            _ => None,
        })
        .unwrap()
}

#[test]
fn a_word_only_in_the_first_of_5000_messages_reaches_the_answer_with_its_citation() {
    let bench = Bench::offline();
    let first = long_session(
        &bench,
        "big",
        "we named the uplink protocol zeppelin after the airship",
        2_500,
    );
    let out = bench.send(
        "t",
        &format!(
            "{} what was the protocol called?\nrecall: zeppelin",
            mention("big", "Big")
        ),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The snapshot kept the newest messages: the word is not in it.
    assert!(!snapshot_text(&bench, "t").contains("zeppelin"));
    let lines = lines(&out);
    // The call, then its result (what the model received), before the final line.
    let call = of_type(&lines, "tool-call")[0];
    assert_eq!(call["name"], "search_references");
    assert_eq!(
        serde_json::from_str::<Value>(call["arguments"].as_str().unwrap()).unwrap(),
        json!({"ref": 1, "query": "zeppelin"})
    );
    let result = of_type(&lines, "tool-result")[0];
    assert_eq!(result["callId"], call["callId"]);
    assert_eq!(result["isError"], false);
    let received = result["text"].as_str().unwrap();
    assert!(
        received.contains("zeppelin after the airship"),
        "{received}"
    );
    assert!(received.contains(&format!("\"seq\":{first}")), "{received}");
    assert_eq!(lines.last().unwrap()["type"], "done");
    let text = answer(&lines);
    assert!(text.contains("zeppelin"), "{text}");
    assert!(text.contains(&format!("[ref 1 #{first}]")), "{text}");
    bench.assert_checks("t");
}

#[test]
fn a_word_only_in_text_a_compaction_replaced_reaches_the_answer_with_its_citation() {
    let bench = Bench::offline();
    // The referenced session: a budget set early, then `/compact` by the agent itself.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let early = runtime.block_on(async {
        use dsh_refs::agent::{Agent, AgentEvent, AgentStatus};
        let header = SessionHeader::new("old", now_ms(), Some("/w".into()));
        let writer = bench.store().open_writer("old", Some(header)).unwrap();
        let (agent, mut events) = Agent::spawn(
            writer,
            std::sync::Arc::new(dsh_refs::llm::OfflineProvider::new()),
        );
        agent.followup(dsh_store::Message::user_text(
            "the quokka budget is 40 units per sprint",
        ));
        agent.followup(dsh_store::Message::user_text("and the release is in May"));
        agent.compact();
        let mut early = None;
        let mut idle = 0;
        while idle < 3 {
            match events.recv().await.unwrap() {
                AgentEvent::Appended(e)
                    if early.is_none()
                        && e.message()
                            .is_some_and(|m| m.joined_text().contains("quokka")) =>
                {
                    early = Some(e.seq);
                }
                AgentEvent::Status(AgentStatus::Idle) => idle += 1,
                _ => {}
            }
        }
        early.unwrap()
    });
    // What the snapshot holds is the checkpoint's summary, not the replaced message.
    let surface = bench.store().read_surface("old").unwrap();
    assert!(!surface.events.iter().any(|e| e.seq == early));
    let out = bench.send(
        "t",
        &format!(
            "{} what was the budget?\nrecall: quokka budget",
            mention("old", "Old")
        ),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = lines(&out);
    let received = of_type(&lines, "tool-result")[0]["text"].as_str().unwrap();
    assert!(received.contains("40 units per sprint"), "{received}");
    let text = answer(&lines);
    assert!(text.contains("quokka"), "{text}");
    assert!(text.contains(&format!("[ref 1 #{early}]")), "{text}");
    bench.assert_checks("t");
}

/// An SSE event of a tool-call delta.
fn call_delta(index: u64, id: Option<&str>, name: Option<&str>, args: &str) -> Vec<u8> {
    let mut call = json!({"index": index, "function": {"arguments": args}});
    if let Some(id) = id {
        call["id"] = json!(id);
        call["type"] = json!("function");
    }
    if let Some(name) = name {
        call["function"]["name"] = json!(name);
    }
    format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": null}]})
    )
    .into_bytes()
}

/// A reply calling `search_references` with `arguments`, streamed in three pieces.
fn calling(arguments: &str) -> Vec<Step> {
    let third = arguments.len() / 3;
    vec![
        stream_head(),
        chunk(&call_delta(0, Some("call_1"), Some("search_references"), "")),
        chunk(&call_delta(0, None, None, &arguments[..third])),
        chunk(&call_delta(0, None, None, &arguments[third..])),
        chunk(b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"),
        chunk(b"data: [DONE]\n\n"),
        end(),
    ]
}

fn saying(text: &str) -> Vec<Step> {
    vec![
        stream_head(),
        chunk(
            format!(
                "data: {}\n\n",
                json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})
            )
            .as_bytes(),
        ),
        chunk(b"data: [DONE]\n\n"),
        end(),
    ]
}

/// A runtime for the server on 127.0.0.1 (it serves while the binary runs).
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Runtime::new().unwrap()
}

#[test]
fn through_an_openai_server_the_call_streams_and_its_result_goes_back() {
    let rt = runtime();
    // The first question is seq 1 (after its turn's start): the scripted answer cites it.
    let bench_first = 1;
    let server = rt.block_on(Server::start(vec![
        calling(r#"{"ref":1,"query":"zeppelin"}"#),
        saying(&format!("It was zeppelin [ref 1 #{bench_first}].")),
    ]));
    let bench = Bench::through(&server);
    assert_eq!(
        long_session(&bench, "big", "the zeppelin uplink", 50),
        bench_first
    );
    let out = bench.send("t", &format!("{} which uplink?", mention("big", "Big")));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bodies: Vec<Value> = server
        .requests()
        .iter()
        .map(common::scripted_http::Recorded::json)
        .collect();
    assert_eq!(bodies.len(), 2);
    // Step 1 offered the tool; step 2 sent the call and its result back.
    assert_eq!(
        bodies[0]["tools"][0]["function"]["name"],
        "search_references"
    );
    assert_eq!(
        bodies[0]["tools"][0]["function"]["parameters"]["required"],
        json!(["ref", "query"])
    );
    let messages = bodies[1]["messages"].as_array().unwrap();
    let n = messages.len();
    assert_eq!(messages[n - 2]["role"], "assistant");
    assert_eq!(
        messages[n - 2]["tool_calls"][0]["function"]["arguments"],
        r#"{"ref":1,"query":"zeppelin"}"#
    );
    assert_eq!(messages[n - 1]["role"], "tool");
    assert_eq!(messages[n - 1]["tool_call_id"], "call_1");
    let received = messages[n - 1]["content"].as_str().unwrap();
    assert!(received.contains("the zeppelin uplink"), "{received}");
    assert!(
        received.contains(&format!("\"seq\":{bench_first}")),
        "{received}"
    );
    let lines = lines(&out);
    assert!(answer(&lines).contains(&format!("[ref 1 #{bench_first}]")));
    bench.assert_checks("t");
}

#[test]
fn a_ref_the_message_does_not_have_is_an_error_result_and_the_turn_goes_on() {
    let rt = runtime();
    let server = rt.block_on(Server::start(vec![
        calling(r#"{"ref":3,"query":"zeppelin"}"#),
        saying("There is no third reference."),
    ]));
    let bench = Bench::through(&server);
    long_session(&bench, "big", "the zeppelin uplink", 3);
    let out = bench.send("t", &format!("{} which uplink?", mention("big", "Big")));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = lines(&out);
    let result = of_type(&lines, "tool-result")[0];
    assert_eq!(result["isError"], true);
    assert!(
        result["text"]
            .as_str()
            .unwrap()
            .starts_with("RECALL_INVALID_REFERENCE: ref must be a number from 1 to 1"),
        "{result}"
    );
    let bodies: Vec<Value> = server
        .requests()
        .iter()
        .map(common::scripted_http::Recorded::json)
        .collect();
    let last = bodies[1]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["content"], result["text"]);
    assert_eq!(answer(&lines), "There is no third reference.");
    bench.assert_checks("t");
}

/// Wait until `server` has received `n` requests.
fn wait_requests(server: &Server, n: usize) {
    let start = Instant::now();
    while server.requests().len() < n {
        assert!(start.elapsed() < Duration::from_secs(60), "no request {n}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(child: &Child, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn a_sigkill_or_a_cancel_during_a_tool_round_leaves_a_log_check_accepts() {
    // The model stops mid-call (its arguments half streamed), or after the call's result
    // while the next step waits; the process is killed or interrupted there.
    let hang = Step::Pause(Duration::from_secs(600));
    let mid_call = vec![
        stream_head(),
        chunk(&call_delta(
            0,
            Some("call_1"),
            Some("search_references"),
            "{\"ref\":1,",
        )),
        hang.clone(),
    ];
    let after_result = vec![stream_head(), hang];
    for (name, replies, asked) in [
        ("mid-call", vec![mid_call], 1),
        (
            "after the result",
            vec![calling(r#"{"ref":1,"query":"uplink"}"#), after_result],
            2,
        ),
    ] {
        for how in ["KILL", "INT"] {
            let rt = runtime();
            let server = rt.block_on(Server::start(replies.clone()));
            let bench = Bench::through(&server);
            long_session(&bench, "big", "the zeppelin uplink", 3);
            let mut child =
                bench.spawn_send("t", &format!("{} which uplink?", mention("big", "Big")));
            wait_requests(&server, asked);
            std::thread::sleep(Duration::from_millis(200));
            signal(&child, how);
            let status = child.wait().unwrap();
            assert!(!status.success(), "{name} {how}");
            bench.assert_checks("t");
            let kinds: Vec<String> = bench
                .events("t")
                .iter()
                .map(|e| e.kind().to_owned())
                .collect();
            if how == "INT" {
                // The agent closed what it opened, as a cancel does.
                assert_eq!(kinds.last().map(String::as_str), Some("turn/end"), "{name}");
            }
            // Reopening closes whatever a kill left open, and the session goes on.
            let offline = Bench::offline();
            std::fs::rename(
                bench.dir.path().join("store"),
                offline.dir.path().join("store"),
            )
            .unwrap();
            let out = offline.send("t", "are you there?");
            assert!(
                out.status.success(),
                "{name} {how}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            offline.assert_checks("t");
            let paired = offline
                .events("t")
                .iter()
                .filter(|e| e.kind() == "tool/result")
                .count();
            let asked_calls = offline
                .events("t")
                .iter()
                .filter_map(Event::message)
                .flat_map(|m| {
                    m.content
                        .iter()
                        .filter_map(dsh_store::tool_round::ToolCallBlock::of)
                })
                .count();
            assert_eq!(paired, asked_calls, "{name} {how}");
        }
    }
}

/// Sessions `a`, `b`, `c` of 30 exchanges of about 700-byte messages each.
fn three_sessions(bench: &Bench) {
    for id in ["a", "b", "c"] {
        let header = SessionHeader::new(id, now_ms(), Some("/w".into()));
        let mut writer = bench.store().open_writer(id, Some(header)).unwrap();
        let filler = "the cache warms from the hot keys ".repeat(20);
        let batch: Vec<_> = (1..=30)
            .flat_map(|n| exchange(n, &format!("{id} question {n}: {filler}"), &filler))
            .collect();
        writer.append(batch).unwrap();
    }
}

#[test]
fn two_and_three_references_get_one_plan_that_fits_the_window() {
    let rt = runtime();
    let server = rt.block_on(Server::start(vec![saying("ok"), saying("ok")]));
    let bench = Bench::new(&format!(
        "[model]\nprovider = \"openai\"\nbase_url = \"{}\"\napi_key_env = \"RECALL_TEST_KEY\"\nmax_retries = 0\ntimeout_secs = 20\ncontext_tokens = 16384\n",
        server.base_url
    ));
    three_sessions(&bench);
    // 7/8 of the window is the input budget; the references' share is half of what is left.
    let input_tokens = 16_384 - 16_384 / 8;
    for ids in [&["a", "b"][..], &["a", "b", "c"][..]] {
        let text: Vec<String> = ids.iter().map(|id| mention(id, id)).collect();
        let draft = format!("{} compare them", text.join(" "));
        // prepare --json: the plan beside the context, never inside its source.
        let mut prepare = bench.command(&["prepare", "--session", "t", "--json", &draft]);
        let out = prepare.output().unwrap();
        let why = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{why}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let plan = v["plan"].as_array().unwrap();
        assert_eq!(plan.len(), ids.len());
        let entries = v["context"]["source"]["references"].as_array().unwrap();
        for (line, entry) in plan.iter().zip(entries) {
            let budget = line["budgetBytes"].as_u64().unwrap();
            assert!(budget < 65_536, "{line}");
            assert_eq!(entry["budgetBytes"], json!(budget));
            assert!(line["minimumBytes"].as_u64().unwrap() <= budget);
        }
        assert!(v["context"]["source"].get("plan").is_none());
        // send: the request holds the context within the share, the whole within the window.
        let before = server.requests().len();
        let out = bench.send("t", &draft);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let body = server.requests()[before].json();
        let texts: Vec<&str> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["content"].as_str())
            .collect();
        let context = texts
            .iter()
            .find(|t| t.starts_with("## Referenced sessions"))
            .unwrap();
        assert!(
            context.len() <= (input_tokens / 2) * 3,
            "{} bytes",
            context.len()
        );
        let estimate: usize = texts.iter().map(|t| t.len().div_ceil(3) + 4).sum();
        assert!(estimate <= input_tokens, "{estimate} tokens");
    }
    bench.assert_checks("t");
}
