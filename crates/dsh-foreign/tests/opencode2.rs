//! OpenCode 2.x databases (`session_v2`, `session_message`) built from real captured rows
//! (tests/fixtures/opencode2, provenance in its README): a database of 2.x sessions only,
//! and one holding a session in both layouts, listed once with the newer data.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

mod support;

use std::fs;
use std::path::{Path, PathBuf};

use dsh_foreign::Origin;
use dsh_store::SessionQuery;
use pretty_assertions::assert_eq;
use support::{fixtures, items, pairs, scan_matches_whole_read, source, tree};

const CAPTURED: &str = "opencode:ses_eed07b19affeqL6wrtBlxM40fP";
const LEGACY: &str = "opencode:ses_test001";

/// Where the captured file's 2.x schema and rows begin.
const V2_TABLES: &str = "-- OpenCode 2.x tables";

/// An OpenCode data dir whose `opencode.db` is built from the captured file: all of it
/// (a session in both layouts) or, `v2_only`, its 2.x schema and rows alone (a database
/// holding 2.x sessions only).
fn data_dir(v2_only: bool) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("opencode");
    fs::create_dir_all(&dir).unwrap();
    let mut text =
        fs::read_to_string(fixtures().join("opencode2").join("both-layouts.sql")).unwrap();
    if v2_only {
        let at = text.find(V2_TABLES).expect("the 2.x part of the capture");
        text = format!("BEGIN TRANSACTION;\n{}", &text[at..]);
    }
    let conn = rusqlite::Connection::open(dir.join("opencode.db")).unwrap();
    // The capture holds its session rows without their project row.
    conn.pragma_update(None, "foreign_keys", false).unwrap();
    conn.execute_batch(&text).unwrap();
    drop(conn);
    (tmp, dir)
}

fn listed(dir: &Path) -> Vec<(String, Option<String>, i64)> {
    source(Origin::OpenCode, dir)
        .list_sessions()
        .unwrap()
        .iter()
        .map(|h| (h.id.clone(), h.cwd.clone(), h.created_at))
        .collect()
}

#[test]
fn a_database_of_2x_sessions_only_is_read() {
    let (_tmp, dir) = data_dir(true);
    let before = tree(&dir);
    assert_eq!(
        listed(&dir),
        [(
            CAPTURED.to_owned(),
            Some("/tmp/chatstrata-oc2-throwaway".to_owned()),
            1_791_319_625_346
        )]
    );
    let src = source(Origin::OpenCode, &dir);
    assert_eq!(
        src.read_title(CAPTURED).unwrap().as_deref(),
        Some("chatstrata oc2 fixture")
    );
    let surface = src.read_surface(CAPTURED).unwrap();
    assert_eq!(
        items(&surface.events),
        pairs(&[
            (
                "user",
                "\"Create a file hello.txt containing hi, then read it back and tell me what it says\""
            ),
            (
                "assistant",
                "Done. I created `hello.txt` containing `hi`, read it back, and it says exactly that: **hi**."
            ),
        ]),
        "reasoning, tool calls and their output, and the idle mark are not on the surface"
    );
    let all = serde_json::to_string(&surface.events).unwrap();
    for hidden in [
        "Created file successfully",
        "Read file /tmp",
        "Simple confirmation",
    ] {
        assert!(!all.contains(hidden), "{hidden} leaked");
    }
    scan_matches_whole_read(&src, CAPTURED);
    assert_eq!(tree(&dir), before, "reading changed the data dir");
}

#[test]
fn a_session_in_both_layouts_is_listed_once_with_the_newer_data() {
    let (_tmp, dir) = data_dir(false);
    assert_eq!(
        listed(&dir),
        [
            (
                CAPTURED.to_owned(),
                Some("/tmp/chatstrata-oc2-throwaway".to_owned()),
                1_791_319_625_346
            ),
            (
                LEGACY.to_owned(),
                Some("/home/user/projects/myapp".to_owned()),
                1_700_000_000_000
            ),
        ]
    );
    let src = source(Origin::OpenCode, &dir);
    assert_eq!(
        src.read_title(CAPTURED).unwrap().as_deref(),
        Some("chatstrata oc2 fixture"),
        "the 2.x row, not the legacy copy"
    );
    let captured = serde_json::to_string(&src.read_surface(CAPTURED).unwrap().events).unwrap();
    assert!(captured.contains("Create a file hello.txt"));
    assert!(
        !captured.contains("LEGACY COPY"),
        "the legacy copy's messages"
    );
    assert_eq!(
        items(&src.read_surface(LEGACY).unwrap().events),
        pairs(&[
            (
                "user",
                "Add error handling to the database connection module"
            ),
            (
                "assistant",
                "I'll add error handling to the database connection module.\nI've reviewed the module. Adding try-except blocks now."
            ),
        ])
    );
    assert_eq!(
        src.read_title(LEGACY).unwrap().as_deref(),
        Some("Add error handling to database module")
    );
    for id in [CAPTURED, LEGACY] {
        scan_matches_whole_read(&src, id);
    }
}
