//! Where caches of a store live: the platform cache directory, one subdirectory per store
//! root, never inside the store (docs/session-store.md), so a read-only store works fully and
//! a dsh store gets no foreign files.

use std::path::{Path, PathBuf};

/// Name of the application's cache directory (`~/.cache/dsh-refs` on Linux).
const APP_DIR: &str = "dsh-refs";

/// The cache directory of the store rooted at `root`:
/// `<platform cache dir>/dsh-refs/<root's last component>-<16 hex digits of a hash of the
/// canonical root path>`. `None` when the platform has no cache directory. Nothing is
/// created here. Every cache of a store (header/title index, full-text index) goes below it.
pub fn store_cache_dir(root: &Path) -> Option<PathBuf> {
    let base = directories::BaseDirs::new()?.cache_dir().join(APP_DIR);
    Some(base.join(store_dir_name(root)))
}

/// The per-store directory name: readable prefix plus a stable hash of the canonical path
/// (the path as given when it does not exist yet).
pub fn store_dir_name(root: &Path) -> String {
    let canonical = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let bytes = canonical.as_os_str().as_encoded_bytes();
    let label: String = canonical
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .take(32)
        .collect();
    let label = label.trim_start_matches('.');
    let label = if label.is_empty() { "store" } else { label };
    format!("{label}-{:016x}", fnv1a64(bytes))
}

/// A hash of `bytes` that is the same in every process, version and platform (for cache
/// file names).
pub fn stable_hash(bytes: &[u8]) -> u64 {
    fnv1a64(bytes)
}

/// FNV-1a, 64 bits: stable across Rust versions and platforms (std's hasher is not).
fn fnv1a64(bytes: &[u8]) -> u64 {
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
    fn one_directory_per_canonical_root() {
        let tmp = tempfile::tempdir().unwrap();
        let a = tmp.path().join("store-a");
        let b = tmp.path().join("store-b");
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        let name_a = store_dir_name(&a);
        assert!(name_a.starts_with("store-a-"), "{name_a}");
        assert_eq!(name_a.len(), "store-a-".len() + 16);
        assert_ne!(name_a, store_dir_name(&b));
        // The same root through another spelling is the same store.
        assert_eq!(name_a, store_dir_name(&a.join("../store-a")));
        #[cfg(unix)]
        {
            let link = tmp.path().join("link");
            std::os::unix::fs::symlink(&a, &link).unwrap();
            assert_eq!(name_a, store_dir_name(&link));
        }
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
