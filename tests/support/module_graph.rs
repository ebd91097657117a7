//! The module graph of a crate, read from its sources, and its import cycles: shared by the
//! crates' `module_graph` tests (each includes this file with `#[path]`).
//!
//! Every `super::name` / `crate::name` path (also inside `use super::{a, b::c}` groups)
//! outside comments and `#[cfg(test)]` modules is an edge to the top-level module `name`. A
//! file under `src/<dir>/` is part of module `<dir>`.
#![allow(dead_code)] // each test uses what it needs

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

pub type Graph = BTreeMap<String, BTreeSet<String>>;

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without comments and without its `#[cfg(test)]` modules.
pub fn non_test_code(text: &str) -> String {
    let code = match text.find("#[cfg(test)]\nmod ") {
        Some(at) => &text[..at],
        None => text,
    };
    code.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The identifiers right after `prefix` (`super::`), including every first segment of a
/// `{a, b::c, d::{e, f}}` group.
pub fn targets_after(code: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            // First segments at depth 0 of the group.
            let mut depth = 0;
            let mut segment_start = true;
            let mut ident = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        if !ident.is_empty() {
                            out.push(std::mem::take(&mut ident));
                        }
                        segment_start = true;
                    }
                    c if depth == 0 && segment_start && (c.is_alphanumeric() || c == '_') => {
                        ident.push(c);
                    }
                    _ if depth == 0 && segment_start && !ident.is_empty() => {
                        out.push(std::mem::take(&mut ident));
                        segment_start = false;
                    }
                    _ => {}
                }
            }
            if !ident.is_empty() {
                out.push(ident);
            }
        } else {
            let ident: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.push(ident);
        }
    }
    out
}

/// The import graph of the crate whose sources are under `src`.
pub fn crate_graph(src: &Path) -> Graph {
    module_graph(src, "crate::")
}

/// The import graph of the modules under `src`, a module tree reached from the crate root
/// as `root` (`crate::` for a crate's `src`, `crate::tui::` for the app's `src/tui`).
pub fn module_graph(src: &Path, root: &str) -> Graph {
    let mut files = Vec::new();
    sources(src, &mut files);
    let module_of = |path: &Path| -> (String, bool) {
        let rel = path.strip_prefix(src).unwrap();
        let mut parts = rel.iter().map(|p| p.to_string_lossy().into_owned());
        let first = parts.next().unwrap();
        let nested = parts.next().is_some();
        (first.trim_end_matches(".rs").to_owned(), nested)
    };
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(f).0).collect();
    let mut graph = Graph::new();
    for file in &files {
        let (module, nested) = module_of(file);
        if module == "lib" || module == "mod" {
            continue;
        }
        let code = non_test_code(&fs::read_to_string(file).unwrap());
        let mut targets = targets_after(&code, root);
        // `super::` is the crate root for a top-level file and for a directory's mod.rs.
        let root_super = !nested || file.file_name().is_some_and(|n| n == "mod.rs");
        if root_super {
            targets.extend(targets_after(&code, "super::"));
        } else {
            targets.extend(targets_after(&code, "super::super::"));
        }
        let edges = graph.entry(module.clone()).or_default();
        for target in targets {
            if target != module && modules.contains(&target) {
                edges.insert(target);
            }
        }
    }
    graph
}

/// The strongly connected components with more than one module (Tarjan).
pub fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    struct State<'g> {
        graph: &'g Graph,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'g>(s: &mut State<'g>, v: &'g str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on_stack.remove(w);
                component.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.found
}

/// The import cycles of `graph`, each as its modules' edges inside it (empty: none).
pub fn described_cycles(graph: &Graph) -> Vec<String> {
    let found = cycles(graph);
    found
        .iter()
        .map(|component| {
            let edges: Vec<String> = component
                .iter()
                .map(|m| {
                    let inside: Vec<&str> = graph[m]
                        .iter()
                        .filter(|t| component.contains(t))
                        .map(String::as_str)
                        .collect();
                    format!("{m} -> {}", inside.join(", "))
                })
                .collect();
            edges.join("; ")
        })
        .collect()
}
