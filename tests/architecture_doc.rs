//! `docs/architecture.md`'s crate table cannot drift: every workspace crate has a row, and
//! the names a row quotes in its "depends on" column are exactly the crate's direct
//! dependencies as `cargo metadata` reads them from the manifests.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// Each workspace crate's direct (normal and optional) dependencies, by crate name.
fn workspace_dependencies() -> BTreeMap<String, BTreeSet<String>> {
    let output = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|package| {
            let deps = package["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].is_null())
                .map(|d| d["name"].as_str().unwrap().to_owned())
                .collect();
            (package["name"].as_str().unwrap().to_owned(), deps)
        })
        .collect()
}

/// The crate table's rows: crate name (`crates/NAME` or `NAME` in the first column) and the
/// backquoted names of its "depends on" column.
fn documented() -> BTreeMap<String, BTreeSet<String>> {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/architecture.md"))
        .unwrap();
    let table = doc
        .split("| crate | holds | depends on |")
        .nth(1)
        .expect("the crate table");
    let mut rows = BTreeMap::new();
    for line in table.lines().skip(2) {
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (first, depends) = (cells[1], cells[3]);
        let name = quoted(first)
            .into_iter()
            .next()
            .unwrap()
            .trim_start_matches("crates/")
            .to_owned();
        rows.insert(name, quoted(depends).into_iter().collect());
    }
    rows
}

/// The names between backquotes in `text`.
fn quoted(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_crate_table_matches_cargo_metadata() {
    let actual = workspace_dependencies();
    let documented = documented();
    let crates: BTreeSet<&String> = actual.keys().collect();
    let rows: BTreeSet<&String> = documented.keys().collect();
    assert_eq!(rows, crates, "one row per workspace crate");
    for (name, deps) in &actual {
        assert_eq!(
            &documented[name], deps,
            "docs/architecture.md: the direct dependencies of {name}"
        );
    }
}

#[test]
fn a_missing_or_extra_dependency_is_seen() {
    // The check reads the quoted names only: prose around them does not count.
    assert_eq!(
        quoted("`dsh-store` (its query trait), tokio and `base64`"),
        ["dsh-store", "base64"]
    );
}
