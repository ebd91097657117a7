//! The crate's public surface is deliberate: every module is private and the root re-exports
//! what a host needs. This test lists what is exported — the names re-exported at the root,
//! the public methods and fields of those types, the variants of those enums and the traits
//! they implement — and compares the listing with `tests/public_api.txt`. A change to the
//! surface fails here until the listing is regenerated on purpose:
//!
//! `UPDATE_PUBLIC_API=1 cargo test -p ratatui-mention --test public_api`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

use std::collections::BTreeSet;
use std::path::Path;

const LISTING: &str = "tests/public_api.txt";

#[test]
fn the_exported_names_are_the_checked_in_listing() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let listing = listing(&root.join("src"));
    let text: String = listing.iter().flat_map(|l| [l.as_str(), "\n"]).collect();
    let path = root.join(LISTING);
    if std::env::var_os("UPDATE_PUBLIC_API").is_some() {
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_default();
    if want != text {
        let want: BTreeSet<&str> = want.lines().collect();
        let got: BTreeSet<&str> = text.lines().collect();
        let added: Vec<_> = got.difference(&want).collect();
        let removed: Vec<_> = want.difference(&got).collect();
        panic!(
            "the public API changed — added {added:?}, removed {removed:?}; if on purpose, \
             regenerate {LISTING} with UPDATE_PUBLIC_API=1"
        );
    }
}

#[test]
fn modules_are_private_and_only_reexports_are_public_at_the_root() {
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    for line in lib.lines() {
        let line = line.trim_start();
        let public = line.starts_with("pub ") && !line.starts_with("pub use ");
        assert!(!public, "only `pub use` at the root: {line}");
    }
    assert!(lib.contains("#![warn(missing_docs)]"));
}

/// The exported names: `pub use` of lib.rs, and of every exported type its `pub` methods,
/// fields, variants and implemented traits, found in the sources under `src`.
fn listing(src: &Path) -> BTreeSet<String> {
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let exported = reexports(&lib);
    let mut out: BTreeSet<String> = exported.iter().cloned().collect();
    let mut files: Vec<_> = std::fs::read_dir(src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    let texts: Vec<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect();
    // Traits of the crate's own that are not exported: their impls are no public surface.
    let private_traits: BTreeSet<String> = texts
        .iter()
        .flat_map(|t| t.lines())
        .filter_map(|l| {
            let rest = l
                .strip_prefix("pub(crate) trait ")
                .or_else(|| l.strip_prefix("trait "))?;
            Some(rest.split([' ', ':', '<', '{']).next()?.to_owned())
        })
        .collect();
    for text in &texts {
        members(text, &exported, &mut out);
    }
    out.retain(|line| {
        line.split_once(": ")
            .is_none_or(|(_, tr)| !private_traits.contains(tr))
    });
    out
}

/// The names of `pub use a::{B, C};` and `pub use a::B;` lines (multi-line groups too).
fn reexports(lib: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut statement = String::new();
    for line in lib.lines() {
        let line = line.trim();
        if statement.is_empty() && !line.starts_with("pub use ") {
            continue;
        }
        statement.push_str(line);
        if !line.ends_with(';') {
            continue;
        }
        let body = statement
            .trim_start_matches("pub use ")
            .trim_end_matches(';');
        let list = match body.split_once('{') {
            Some((_, group)) => group.trim_end_matches('}').to_owned(),
            None => body.rsplit("::").next().unwrap_or_default().to_owned(),
        };
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            names.insert(name.rsplit("::").next().unwrap_or(name).to_owned());
        }
        statement.clear();
    }
    names
}

/// What follows `impl` and its generic parameters on an impl line, up to the `{`.
fn impl_head(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("impl")?;
    let rest = if let Some(generics) = rest.strip_prefix('<') {
        // Skip the balanced `<…>` of the impl's generic parameters.
        let mut depth = 1;
        let end = generics.char_indices().find_map(|(i, c)| {
            match c {
                '<' => depth += 1,
                '>' => depth -= 1,
                _ => {}
            }
            (depth == 0).then_some(i)
        })?;
        generics.get(end + 1..)?
    } else {
        rest
    };
    Some(rest.trim().trim_end_matches('{').trim())
}

/// Public members of the exported types in one source file (its test module excluded).
fn members(text: &str, exported: &BTreeSet<String>, out: &mut BTreeSet<String>) {
    // What the top-level block being read is: an impl of a type, a struct or an enum.
    enum Block {
        Impl(String),
        Struct(String),
        Enum(String),
        Other,
    }
    let mut block = Block::Other;
    for line in text.lines() {
        if line.starts_with("#[cfg(test)]") || line.starts_with("mod tests") {
            break;
        }
        if line.trim().is_empty() {
            continue;
        }
        if !line.starts_with(' ') && !line.starts_with('}') {
            block = Block::Other;
            let type_name = |w: &str| {
                let w = w.split('<').next().unwrap_or(w);
                w.rsplit("::").next().unwrap_or(w).to_owned()
            };
            if let Some(head) = impl_head(line) {
                match head.split_once(" for ") {
                    // `impl Trait for Type`: the type implements the trait.
                    Some((tr, ty)) => {
                        let ty = type_name(ty.trim());
                        if exported.contains(&ty) {
                            out.insert(format!("{ty}: {}", tr.trim()));
                        }
                    }
                    None => block = Block::Impl(type_name(head.trim())),
                }
            } else if let Some(rest) = line.strip_prefix("pub struct ") {
                block = Block::Struct(type_name(rest.split([' ', '(']).next().unwrap_or(rest)));
            } else if let Some(rest) = line.strip_prefix("pub enum ") {
                block = Block::Enum(type_name(rest.split(' ').next().unwrap_or(rest)));
            }
            continue;
        }
        let Some(member) = line.strip_prefix("    ") else {
            continue;
        };
        if member.starts_with(' ') || member.starts_with("//") || member.starts_with('#') {
            continue;
        }
        match &block {
            Block::Impl(ty) if exported.contains(ty) => {
                if let Some(rest) = member
                    .strip_prefix("pub fn ")
                    .or_else(|| member.strip_prefix("pub const fn "))
                {
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    out.insert(format!("{ty}::{name}"));
                }
                // The URI builders one macro writes for the types that have them.
                if member.starts_with("uri_rule_builders!(") {
                    out.insert(format!("{ty}::with_uri_predicate"));
                    out.insert(format!("{ty}::with_uri_scheme"));
                }
            }
            Block::Struct(ty) if exported.contains(ty) => {
                if let Some(rest) = member.strip_prefix("pub ") {
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    out.insert(format!("{ty}.{name}"));
                }
            }
            Block::Enum(ty) if exported.contains(ty) => {
                let name: String = member
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if name.starts_with(|c: char| c.is_uppercase()) {
                    out.insert(format!("{ty}::{name}"));
                }
            }
            Block::Impl(_) | Block::Struct(_) | Block::Enum(_) | Block::Other => {}
        }
    }
}
