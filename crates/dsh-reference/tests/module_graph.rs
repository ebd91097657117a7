//! The crate's modules import each other without a cycle (issue 35 item 8), read from the
//! sources by the workspace's module-graph reader.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test

use std::path::Path;

#[path = "../../../tests/support/module_graph.rs"]
mod module_graph;

#[test]
fn the_crate_has_no_import_cycle() {
    let graph = module_graph::crate_graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    // The graph was read: modules with their imports.
    assert!(graph.len() > 10, "{graph:?}");
    assert!(graph["parse"].contains("uri"), "{graph:?}");
    let described = module_graph::described_cycles(&graph);
    assert!(described.is_empty(), "import cycles: {described:#?}");
}
