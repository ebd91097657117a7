//! Where a store's search index lives: the platform cache dir, one directory per store root,
//! never inside the store (a dsh store must not get foreign files).

use std::path::{Path, PathBuf};

/// `<cache>/dsh-refs/<root name>-<hash of the absolute root>/search`, or `None` when the
/// platform has no home directory.
pub fn default_index_dir(store_root: &Path) -> Option<PathBuf> {
    let dirs = directories::ProjectDirs::from("", "", "dsh-refs")?;
    Some(
        dirs.cache_dir()
            .join(per_root_dir_name(store_root))
            .join("search"),
    )
}

/// A directory name unique to one store root: a readable part of its last component and a
/// hash of its absolute path (the canonical one when the root exists).
pub fn per_root_dir_name(store_root: &Path) -> String {
    let absolute = std::fs::canonicalize(store_root).unwrap_or_else(|_| {
        std::env::current_dir().map_or_else(|_| store_root.to_owned(), |cwd| cwd.join(store_root))
    });
    let readable: String = absolute
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .take(32)
        .collect();
    format!(
        "{}-{:016x}",
        if readable.is_empty() {
            "root"
        } else {
            &readable
        },
        fnv1a(absolute.as_os_str().as_encoded_bytes())
    )
}

/// FNV-1a (64 bit): stable across runs and versions, unlike `std`'s hasher.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_directory_per_root_outside_the_store() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let (na, nb) = (per_root_dir_name(a.path()), per_root_dir_name(b.path()));
        assert_ne!(na, nb);
        assert_eq!(na, per_root_dir_name(a.path()));
        assert!(!na.contains('/'));
        if let Some(dir) = default_index_dir(a.path()) {
            assert!(!dir.starts_with(a.path()));
            assert!(dir.ends_with("search"));
        }
    }
}
