//! The app's parts live in their own homes (issue 35 item 7): nothing under `src/tui` outside
//! `src/tui/app` imports the app. The event bus (`tui::event`) and the slash commands
//! (`tui::commands`) sit beside the parts; the app reaches down into the parts, never the
//! other way round.
//!
//! Read from the sources by the workspace's module-graph reader (every `crate::tui::name` /
//! `super::name` path, also inside `use` groups), and, stricter, any `app::` path at all
//! outside comments — test modules included.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test

use std::fs;
use std::path::{Path, PathBuf};

#[path = "support/module_graph.rs"]
mod module_graph;

fn tui_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/tui")
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Whether `code` names a path through a module called `app` (`app::`, `tui::app::`,
/// `{app::…}`), not counting names that merely end in `app`.
fn names_app_path(code: &str) -> bool {
    code.match_indices("app::").any(|(at, _)| {
        code[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
    })
}

#[test]
fn the_path_check_sees_app_paths_only() {
    assert!(names_app_path("use crate::tui::app::event::AppEvent;"));
    assert!(names_app_path("use super::{app::commands::COMMANDS, x};"));
    assert!(names_app_path("app::App::new()"));
    assert!(!names_app_path("use crate::tui::event::AppEvent;"));
    assert!(!names_app_path("my_app::x(); mapp::y();"));
}

#[test]
fn no_part_of_the_tui_imports_the_app() {
    let graph = module_graph::module_graph(&tui_dir(), "crate::tui::");
    // The graph was read: the app reaches down into its parts.
    assert!(graph["app"].contains("composer"), "{graph:?}");
    assert!(graph.len() > 8, "{graph:?}");
    let up: Vec<&String> = graph
        .iter()
        .filter(|(module, targets)| *module != "app" && targets.contains("app"))
        .map(|(module, _)| module)
        .collect();
    assert!(up.is_empty(), "parts that import the app: {up:?}");

    let app_dir = tui_dir().join("app");
    let mut files = Vec::new();
    rust_files(&tui_dir(), &mut files);
    files.sort();
    let offenders: Vec<String> = files
        .iter()
        .filter(|path| !path.starts_with(&app_dir))
        .filter(|path| {
            let text = fs::read_to_string(path).unwrap();
            let code: String = text
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            names_app_path(&code)
        })
        .map(|path| path.strip_prefix(tui_dir()).unwrap().display().to_string())
        .collect();
    assert!(
        offenders.is_empty(),
        "files under src/tui outside src/tui/app that name `app::`: {offenders:#?}"
    );
}
