//! Issue 27 item 3 (data part of minor 26): `/resume` and the `@` popup order each group by
//! last activity, with each row's details; dsh's creation order stays available.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test

use std::fs;
use std::path::Path;
use std::sync::Arc;

use dsh_reference::{
    AgentRef, ListingOrder, ListingScope, ReferenceConfig, SessionDetails, SessionReferences,
};
use dsh_store::{SessionHeader, SessionQuery, SessionStore};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// A log with its header and, per `(time, text)`, a user message (all in one turn).
fn write_log(root: &Path, id: &str, cwd: Option<&str>, created: i64, messages: &[(i64, &str)]) {
    let dir = dsh_store::paths::session_dir(root, cwd, id).unwrap();
    fs::create_dir_all(&dir).unwrap();
    let header = SessionHeader::new(id, created, cwd.map(str::to_owned));
    let mut text = serde_json::to_string(&header).unwrap() + "\n";
    for (seq, (time, said)) in messages.iter().enumerate() {
        let line = json!({"type": "user/message", "seq": seq, "time": time, "data": {"id": format!("m{seq}"), "role": "user", "content": [{"type": "text", "text": said}], "source": {"kind": "user"}}, "surfaceOp": "append"});
        text.push_str(&line.to_string());
        text.push('\n');
    }
    fs::write(dir.join("session.jsonl"), text).unwrap();
}

fn ids(page: &dsh_reference::DetailedPage) -> Vec<&str> {
    page.page
        .rows
        .iter()
        .map(|c| c.session_id.as_str())
        .collect()
}

#[tokio::test]
async fn groups_are_ordered_by_last_activity_with_details() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    // Created oldest first: old (continued a moment ago), mid, new (never continued), plus
    // one elsewhere and one empty (only a header: ordered by its creation).
    write_log(
        root,
        "old",
        Some("/w"),
        1_000,
        &[(1_100, "a"), (9_000, "b")],
    );
    write_log(root, "mid", Some("/w"), 2_000, &[(2_500, "c")]);
    write_log(root, "new", Some("/w"), 3_000, &[(3_100, "d")]);
    write_log(root, "empty", Some("/w"), 4_000, &[]);
    write_log(root, "far", Some("/elsewhere"), 5_000, &[(99_000, "e")]);
    let store: Arc<dyn SessionQuery> = Arc::new(SessionStore::new(root));
    let refs = SessionReferences::new(store, ReferenceConfig::default());
    let cancel = CancellationToken::new();
    let scope = ListingScope::Agent(AgentRef {
        session_id: "me".into(),
        cwd: Some("/w".into()),
    });
    let created = refs
        .list_page_ordered(&scope, "", None, ListingOrder::Created, &cancel)
        .await
        .unwrap();
    assert_eq!(ids(&created), ["empty", "new", "mid", "old", "far"]);
    let active = refs
        .list_page_ordered(&scope, "", None, ListingOrder::LastActivity, &cancel)
        .await
        .unwrap();
    assert_eq!(
        ids(&active),
        ["old", "empty", "new", "mid", "far"],
        "same cwd first, each group by last activity"
    );
    assert_eq!(active.page.total, 5);
    // `/resume` (issue 32 item 8): the same groups, nobody left out ("me" would be listed).
    let project = refs
        .list_page_ordered(
            &ListingScope::Project(Some("/w".into())),
            "",
            None,
            ListingOrder::LastActivity,
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(ids(&project), ["old", "empty", "new", "mid", "far"]);
    assert_eq!(
        active.details.get("old"),
        Some(&SessionDetails {
            last_active_ms: Some(9_000),
            messages: Some(2),
        })
    );
    assert_eq!(
        active.details.get("empty"),
        Some(&SessionDetails {
            last_active_ms: None,
            messages: Some(0),
        })
    );
    // Filtered and cut to a limit; the picker's scope is one group.
    let two = refs
        .list_page_ordered(
            &ListingScope::All,
            "/w",
            Some(2),
            ListingOrder::LastActivity,
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(ids(&two), ["old", "empty"]);
    assert_eq!(two.page.total, 4);
    // No exact match: the closest ones come with their details too.
    let closest = refs
        .list_page_ordered(
            &ListingScope::All,
            "elswhere",
            None,
            ListingOrder::LastActivity,
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(closest.page.total, 0);
    assert_eq!(
        closest
            .page
            .closest
            .first()
            .map(|c| c.candidate.session_id.as_str()),
        Some("far")
    );
    assert_eq!(
        closest.details.get("far").and_then(|d| d.last_active_ms),
        Some(99_000)
    );
    // The plain listing keeps dsh's order (the `candidates` contract).
    let plain = refs
        .list_candidates(
            &AgentRef {
                session_id: "me".into(),
                cwd: Some("/w".into()),
            },
            "",
            None,
            &cancel,
        )
        .await
        .unwrap();
    let plain: Vec<&str> = plain.iter().map(|c| c.session_id.as_str()).collect();
    assert_eq!(plain, ["empty", "new", "mid", "old", "far"]);
}

/// A log with its header and a title (issue 27 minor 10's listing part).
fn write_titled(root: &Path, id: &str, cwd: &str, created: i64, title: &str) {
    let dir = dsh_store::paths::session_dir(root, Some(cwd), id).unwrap();
    fs::create_dir_all(&dir).unwrap();
    let header = SessionHeader::new(id, created, Some(cwd.to_owned()));
    let line = json!({"type": "session/title", "seq": 0, "time": created, "data": {"title": title, "messageSeqs": [], "source": {"kind": "fallback"}}});
    let text = serde_json::to_string(&header).unwrap() + "\n" + &line.to_string() + "\n";
    fs::write(dir.join("session.jsonl"), text).unwrap();
}

#[tokio::test]
async fn the_pickers_listing_matches_each_word_of_a_query() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write_titled(
        root,
        "s-leak",
        "/srv/pool",
        1_000,
        "Investigate memory leak",
    );
    write_titled(
        root,
        "s-pool",
        "/srv/pool",
        2_000,
        "Leak in the memory POOL",
    );
    write_titled(root, "s-kafka", "/home/ana/billing", 3_000, "Kafka lag");
    write_titled(root, "s-cjk", "/w", 4_000, "会话 记录 memory");
    let store: Arc<dyn SessionQuery> = Arc::new(SessionStore::new(root));
    let refs = SessionReferences::new(store, ReferenceConfig::default());
    let cancel = CancellationToken::new();
    let cases: &[(&str, &[&str])] = &[
        // Each word anywhere in the title, in any order and case.
        ("memory leak", &["s-pool", "s-leak"]),
        ("LEAK memory", &["s-pool", "s-leak"]),
        ("  leak   memory ", &["s-pool", "s-leak"]),
        // Words may come from different fields: the cwd, the id, the title.
        ("billing lag", &["s-kafka"]),
        ("s-kafka kafka", &["s-kafka"]),
        ("pool investigate", &["s-leak"]),
        ("记录 会话", &["s-cjk"]),
        // Every word must match.
        ("memory kafka", &[]),
        ("memory leak nowhere", &[]),
        // One word is a plain substring; no word matches everything.
        ("emor", &["s-cjk", "s-pool", "s-leak"]),
        ("", &["s-cjk", "s-kafka", "s-pool", "s-leak"]),
    ];
    for (query, want) in cases {
        let page = refs
            .list_page_ordered(
                &ListingScope::All,
                query,
                None,
                ListingOrder::LastActivity,
                &cancel,
            )
            .await
            .unwrap();
        assert_eq!(ids(&page), *want, "{query:?}");
        assert_eq!(page.page.total, want.len(), "{query:?}");
    }
    // dsh's listing (`candidates`) keeps matching the whole query as one substring.
    let agent = AgentRef {
        session_id: "me".into(),
        cwd: None,
    };
    let dsh = refs
        .list_candidates(&agent, "memory leak", None, &cancel)
        .await
        .unwrap();
    let dsh: Vec<&str> = dsh.iter().map(|c| c.session_id.as_str()).collect();
    assert_eq!(dsh, ["s-leak"]);
}

/// Issue 32 item 9: the pickers list an untitled session by the leading words of its first
/// message (secrets redacted, made neutral); `candidates` keeps dsh's label, its id.
#[tokio::test]
async fn an_untitled_session_is_listed_by_its_first_message() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let key = "sk-ant-api03-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    write_log(
        root,
        "s-untitled",
        Some("/w"),
        1_000,
        &[
            (1_100, &format!("Why does\nthe <login> fail with {key}?")),
            (1_200, "later"),
        ],
    );
    write_log(root, "s-empty", Some("/w"), 2_000, &[]);
    let store: Arc<dyn SessionQuery> = Arc::new(SessionStore::new(root));
    let cancel = CancellationToken::new();
    let agent = AgentRef {
        session_id: "me".into(),
        cwd: Some("/w".into()),
    };
    let scope = ListingScope::Agent(agent.clone());
    for redact in [true, false] {
        let config = ReferenceConfig {
            redact_secrets: redact,
            ..ReferenceConfig::default()
        };
        let refs = SessionReferences::new(Arc::clone(&store), config);
        let listed = |query: &'static str| {
            refs.list_page_ordered(&scope, query, None, ListingOrder::LastActivity, &cancel)
        };
        let page = listed("").await.unwrap();
        let labels: Vec<&str> = page.page.rows.iter().map(|c| c.label.as_str()).collect();
        let shown = if redact {
            "Why does the ‹login› fail with [redacted: anthropic-api-key]?".to_owned()
        } else {
            // The key unredacted is too long for the row: the words before it.
            "Why does the ‹login› fail with…".to_owned()
        };
        assert_eq!(labels, ["s-empty", shown.as_str()], "redact: {redact}");
        let contract = refs
            .list_candidates(&agent, "", None, &cancel)
            .await
            .unwrap();
        let labels: Vec<&str> = contract.iter().map(|c| c.label.as_str()).collect();
        assert_eq!(labels, ["s-empty", "s-untitled"], "dsh's label and order");
        // The words shown are found, also beside a word of another field; the contract's
        // filter (title, id, cwd) does not see them.
        for query in ["LOGIN fail", "fail untitled", "the why"] {
            assert_eq!(
                ids(&listed(query).await.unwrap()),
                ["s-untitled"],
                "{query}"
            );
        }
        let contract = refs
            .list_candidates(&agent, "login", None, &cancel)
            .await
            .unwrap();
        assert!(contract.is_empty(), "{contract:?}");
        // A redacted secret is not found by its text.
        let secret = listed("aaaaaaaaaa").await.unwrap();
        assert_eq!(secret.page.total, 0, "redact: {redact}");
    }
}

#[tokio::test]
async fn rows_carry_the_branch_each_session_recorded_never_the_checkouts() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("store");
    // One repository, now on `main`; one session recorded `feature/x` there, one recorded
    // nothing (an older session, or created outside a branch).
    let repo = tmp.path().join("repo");
    fs::create_dir_all(repo.join(".git")).unwrap();
    fs::write(repo.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    let cwd = repo.to_string_lossy().into_owned();
    for (id, branch) in [("recorded", Some("feature/x")), ("unrecorded", None)] {
        let dir = dsh_store::paths::session_dir(&root, Some(&cwd), id).unwrap();
        fs::create_dir_all(&dir).unwrap();
        let header =
            SessionHeader::new(id, 1_000, Some(cwd.clone())).with_branch(branch.map(str::to_owned));
        fs::write(
            dir.join("session.jsonl"),
            serde_json::to_string(&header).unwrap() + "\n",
        )
        .unwrap();
    }
    let store: Arc<dyn SessionQuery> = Arc::new(SessionStore::new(&root));
    let refs = SessionReferences::new(store, ReferenceConfig::default());
    let page = refs
        .list_page_ordered(
            &ListingScope::All,
            "",
            None,
            ListingOrder::LastActivity,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(page.page.rows.len(), 2);
    assert_eq!(
        page.branches,
        std::collections::HashMap::from([("recorded".to_owned(), "feature/x".to_owned())])
    );
    // The closest matches (no exact match) carry theirs too.
    let closest = refs
        .list_page_ordered(
            &ListingScope::All,
            "recordd",
            None,
            ListingOrder::LastActivity,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(closest.page.rows.is_empty());
    assert!(
        closest
            .page
            .closest
            .iter()
            .any(|c| c.candidate.session_id == "recorded"),
        "{closest:?}"
    );
    assert_eq!(
        closest.branches.get("recorded").map(String::as_str),
        Some("feature/x")
    );
    assert_eq!(closest.branches.get("unrecorded"), None);
}
