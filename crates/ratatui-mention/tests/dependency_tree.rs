//! The cut is real: `cargo tree -e normal -p ratatui-mention` holds no runtime, network,
//! JSON, compression, CLI or session crate (docs/architecture.md, crate map).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test

use std::collections::BTreeSet;
use std::process::Command;

/// Crates a host brings itself; none may reach the widget's normal dependency tree.
const FORBIDDEN: &[&str] = &[
    "tokio",
    "reqwest",
    "serde_json",
    "zstd",
    "clap",
    "chrono",
    "dsh-store",
    "dsh-reference",
    "dsh-refs",
];

/// Package names in `cargo tree -e normal -p <package>`, read offline from the lock file.
fn normal_tree(package: &str) -> BTreeSet<String> {
    let output = Command::new(env!("CARGO"))
        .args([
            "tree",
            "-e",
            "normal",
            "--prefix",
            "none",
            "--offline",
            "-p",
        ])
        .arg(package)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        output.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .expect("utf-8 tree")
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

#[test]
fn the_widget_depends_on_no_app_crate() {
    let tree = normal_tree("ratatui-mention");
    assert!(
        tree.contains("ratatui") && tree.contains("crossterm"),
        "{tree:?}"
    );
    let found: Vec<&str> = FORBIDDEN
        .iter()
        .copied()
        .filter(|name| tree.contains(*name))
        .collect();
    assert_eq!(
        found,
        Vec::<&str>::new(),
        "forbidden crates in the widget's tree"
    );
}

#[test]
fn the_check_sees_forbidden_crates_where_they_are() {
    // The app depends on all of them but itself: the same reading must find them there.
    let tree = normal_tree("dsh-refs");
    for name in [
        "tokio",
        "reqwest",
        "serde_json",
        "zstd",
        "clap",
        "dsh-store",
    ] {
        assert!(tree.contains(name), "{name} missing from the app's tree");
    }
}
