//! Which directory a Gemini CLI chat was recorded in (docs/foreign-sources.md, Gemini CLI).
//!
//! A chat records only `projectHash`, the SHA-256 of its project root, and lives under
//! `~/.gemini/tmp/<project>/`, where `<project>` is that hash (older releases) or a short
//! name the release's project registry hands out (`~/.gemini/projects.json`:
//! `{"projects": {"<root>": "<name>"}}`, plus a `.project_root` file holding the root in
//! each named directory). The cwd is, in this order:
//!
//! 1. the root the registry (or the directory's `.project_root`) names for the chat's
//!    directory, when its hash is the chat's `projectHash` (or the chat records none);
//! 2. a known working directory whose hash is the chat's `projectHash` (or the directory's
//!    name): the registry's roots, the cwds of every other session listed, the current dir;
//! 3. none.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::open_file::open_regular;
use crate::source_index::FileStamp;

/// Longest registry or marker file read.
const MAX_REGISTRY_BYTES: u64 = 4 * 1024 * 1024;

/// The SHA-256 of a project root as Gemini CLI writes it (lower-case hex).
pub fn project_hash(root: &str) -> String {
    format!("{:x}", Sha256::digest(root.as_bytes()))
}

#[derive(Debug, Deserialize)]
struct Registry {
    projects: HashMap<String, String>,
}

/// What is known about Gemini CLI's project directories.
#[derive(Debug, Default)]
pub struct ProjectDirs {
    registry_stamp: Option<FileStamp>,
    /// Directory name → root, from the registry.
    registered: HashMap<String, String>,
    /// Directory name → root, from `.project_root` files (read once per directory).
    markers: HashMap<String, Option<String>>,
    /// Hash → root, of every root and working directory known.
    by_hash: HashMap<String, String>,
    /// Directories already hashed.
    hashed: HashSet<String>,
    /// Bumped whenever an answer may have changed.
    generation: u64,
}

fn read_small(path: &Path) -> Option<Vec<u8>> {
    let file = open_regular(path).ok()?;
    let mut buf = Vec::new();
    file.take(MAX_REGISTRY_BYTES).read_to_end(&mut buf).ok()?;
    Some(buf)
}

impl ProjectDirs {
    /// What changes with every change that may change an answer.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Read the registry under `home` again if it changed, and the `.project_root` files
    /// of `project_dirs` not read yet.
    pub fn refresh(&mut self, home: &Path, project_dirs: &[PathBuf]) {
        let registry = home.join("projects.json");
        let stamp = std::fs::symlink_metadata(&registry)
            .ok()
            .filter(std::fs::Metadata::is_file)
            .map(|m| FileStamp::of(&m));
        if stamp != self.registry_stamp {
            self.registry_stamp = stamp;
            self.registered = read_small(&registry)
                .and_then(|bytes| serde_json::from_slice::<Registry>(&bytes).ok())
                .map(|r| {
                    r.projects
                        .into_iter()
                        .map(|(root, name)| (name, root))
                        .collect()
                })
                .unwrap_or_default();
            let roots: Vec<String> = self.registered.values().cloned().collect();
            self.learn(roots.iter().map(String::as_str));
            self.generation += 1;
        }
        for dir in project_dirs {
            let Some(name) = dir.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if self.markers.contains_key(name) {
                continue;
            }
            let root = read_small(&dir.join(".project_root"))
                .and_then(|b| String::from_utf8(b).ok())
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty());
            if let Some(root) = &root {
                self.learn(std::iter::once(root.as_str()));
                self.generation += 1;
            }
            self.markers.insert(name.to_owned(), root);
        }
    }

    /// Working directories to match hashes against; whether any was new.
    pub fn learn<'d>(&mut self, dirs: impl Iterator<Item = &'d str>) -> bool {
        let mut new = false;
        for dir in dirs {
            if dir.is_empty() || self.hashed.contains(dir) {
                continue;
            }
            self.hashed.insert(dir.to_owned());
            self.by_hash.insert(project_hash(dir), dir.to_owned());
            new = true;
        }
        if new {
            self.generation += 1;
        }
        new
    }

    /// The cwd of a chat in the project directory named `dir` that recorded `hash`.
    pub fn cwd_for(&self, dir: &str, hash: Option<&str>) -> Option<String> {
        let named = self
            .registered
            .get(dir)
            .or_else(|| self.markers.get(dir).and_then(Option::as_ref));
        if let Some(root) = named
            && hash.is_none_or(|h| h.eq_ignore_ascii_case(&project_hash(root)))
        {
            return Some(root.clone());
        }
        hash.or(Some(dir))
            .and_then(|h| self.by_hash.get(&h.to_ascii_lowercase()))
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_lower_case_sha256_hex() {
        assert_eq!(
            project_hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn cwd_order_registry_then_hash_then_none() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path();
        std::fs::write(
            home.join("projects.json"),
            r#"{"projects": {"/home/dev/shop": "shop", "/home/dev/moved": "moved"}}"#,
        )
        .unwrap();
        let named = home.join("tmp/api");
        std::fs::create_dir_all(&named).unwrap();
        std::fs::write(named.join(".project_root"), "/home/dev/api\n").unwrap();
        let mut dirs = ProjectDirs::default();
        dirs.refresh(home, &[named]);
        let shop = project_hash("/home/dev/shop");
        assert_eq!(
            dirs.cwd_for("shop", Some(&shop)).as_deref(),
            Some("/home/dev/shop")
        );
        assert_eq!(
            dirs.cwd_for("shop", None).as_deref(),
            Some("/home/dev/shop")
        );
        assert_eq!(
            dirs.cwd_for("api", Some(&project_hash("/home/dev/api")))
                .as_deref(),
            Some("/home/dev/api")
        );
        // The registry's name now belongs to another root: the hash decides.
        assert_eq!(
            dirs.cwd_for("moved", Some(&shop)).as_deref(),
            Some("/home/dev/shop")
        );
        // An older hash-named directory: matched against the known working directories.
        let work = project_hash("/home/dev/work");
        assert_eq!(dirs.cwd_for(&work, Some(&work)), None);
        assert!(dirs.learn(["/home/dev/work"].into_iter()));
        assert!(!dirs.learn(["/home/dev/work"].into_iter()));
        assert_eq!(
            dirs.cwd_for(&work, Some(&work)).as_deref(),
            Some("/home/dev/work")
        );
        assert_eq!(dirs.cwd_for(&work, None).as_deref(), Some("/home/dev/work"));
        assert_eq!(dirs.cwd_for("other", Some("00ff")), None);
    }
}
