//! Where a store's search index lives: `search/` in the store's cache directory
//! ([`dsh_store::cache::store_cache_dir`], shared with the header/title index), never inside
//! the store (a dsh store must not get foreign files).

use std::path::{Path, PathBuf};

/// `<cache>/dsh-refs/<root name>-<hash of the root>/search`, or `None` when the platform
/// has no cache directory.
pub fn default_index_dir(store_root: &Path) -> Option<PathBuf> {
    Some(dsh_store::cache::store_cache_dir(store_root)?.join("search"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_directory_per_root_outside_the_store() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let (Some(da), Some(db)) = (default_index_dir(a.path()), default_index_dir(b.path()))
        else {
            return;
        };
        assert_ne!(da, db);
        assert_eq!(Some(da.clone()), default_index_dir(a.path()));
        assert!(!da.starts_with(a.path()));
        assert!(da.ends_with("search"));
    }
}
