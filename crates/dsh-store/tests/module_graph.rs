//! The store crate's modules import each other without a cycle (issue 23 item 9: the read
//! contract's `Stamp` and `QueryError` live in leaf modules), and the search index depends
//! on the store crate, not on the reference service.
//!
//! The graph is read from the sources: every `super::name` / `crate::name` path (also inside
//! `use super::{a, b::c}` groups) outside comments and `#[cfg(test)]` modules is an edge to
//! the top-level module `name`. A file under `src/<dir>/` is part of module `<dir>`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

#[path = "../../../tests/support/module_graph.rs"]
mod module_graph;

use module_graph::{Graph, crate_graph, cycles, described_cycles, non_test_code, targets_after};

fn store_graph() -> Graph {
    crate_graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

#[test]
fn the_reader_of_the_graph_sees_imports_and_cycles() {
    let code = non_test_code(
        "use super::{a, b::{c, d}, e::F};\nuse crate::g::H;\n// use super::z;\nfn f() { super::i::j(); x::super::k; }\n#[cfg(test)]\nmod tests { use super::t; }",
    );
    assert_eq!(targets_after(&code, "super::"), ["a", "b", "e", "i"]);
    assert_eq!(targets_after(&code, "crate::"), ["g"]);
    let graph: Graph = [
        ("a", &["b"][..]),
        ("b", &["c"]),
        ("c", &["a"]),
        ("d", &["a"]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.iter().map(ToString::to_string).collect()))
    .collect();
    assert_eq!(cycles(&graph), [["a", "b", "c"]]);
}

#[test]
fn the_store_crate_has_no_import_cycle() {
    let graph = store_graph();
    // The graph was read: modules with their imports.
    assert!(graph.len() > 20, "{graph:?}");
    assert!(graph["listing"].contains("reader"), "{graph:?}");
    let described = described_cycles(&graph);
    assert!(described.is_empty(), "import cycles: {described:#?}");
}

#[test]
fn stamp_and_query_error_are_leaves() {
    let graph = store_graph();
    assert_eq!(graph["stamp"], BTreeSet::new());
    assert_eq!(graph["query_error"], BTreeSet::new());
}

#[test]
fn the_search_index_does_not_depend_on_the_reference_service() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../dsh-search/Cargo.toml");
    let text = fs::read_to_string(manifest).unwrap();
    let dependencies = text.split("\n[").filter(|section| {
        section.starts_with("dependencies]") || section.starts_with("dev-dependencies]")
    });
    for section in dependencies {
        assert!(
            !section
                .lines()
                .any(|l| l.trim_start().starts_with("dsh-reference")),
            "dsh-search depends on dsh-reference:\n{section}"
        );
    }
    assert!(
        text.contains("\ndsh-store"),
        "the manifest was read: {text}"
    );
}
