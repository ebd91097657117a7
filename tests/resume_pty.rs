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

use std::path::Path;

use pty::{Session, fixture, seed_session};

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
        assert!(row < far, "{own} after another project's session:\n{screen}");
    }
}

#[allow(dead_code)]
fn _uses(_: &Path) {}
