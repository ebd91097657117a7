//! Where a store's search index lives: `search/` in the store's cache directory
//! ([`dsh_store::cache::store_cache_dir`], shared with the header/title index), never inside
//! the store (a dsh store must not get foreign files).

use std::path::{Component, Path, PathBuf};

use crate::error::SearchError;

/// `<cache>/dsh-refs/<root name>-<hash of the root>/search`, or `None` when the platform
/// has no cache directory.
pub fn default_index_dir(store_root: &Path) -> Option<PathBuf> {
    Some(dsh_store::cache::store_cache_dir(store_root)?.join("search"))
}

/// Refuse an index directory inside the store, equal to it or above it: an index there
/// would write into the store, or a rebuild could touch its logs. Both paths are compared
/// resolved (links followed as far as they exist).
pub fn check_apart(index_dir: &Path, store_root: &Path) -> Result<(), SearchError> {
    let (dir, root) = (resolved(index_dir), resolved(store_root));
    let why = if dir == root {
        "it is the session store itself"
    } else if dir.starts_with(&root) {
        "it is inside the session store (only session logs are written there)"
    } else if root.starts_with(&dir) {
        "the session store is inside it"
    } else {
        return Ok(());
    };
    Err(SearchError::refused(
        index_dir,
        format!(
            "{why} ({}); set [search] index_dir to a directory apart from the store",
            store_root.display()
        ),
    ))
}

/// `path` made absolute with its longest existing ancestor resolved; the components below
/// that (which do not exist, so hold no links) are applied as written.
fn resolved(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let mut existing = absolute.clone();
    let mut rest = Vec::new();
    let base = loop {
        if let Ok(real) = existing.canonicalize() {
            break real;
        }
        let Some(name) = existing.file_name().map(ToOwned::to_owned) else {
            break existing;
        };
        rest.push(name);
        if !existing.pop() {
            break existing;
        }
    };
    let mut out = base;
    for part in rest.iter().rev() {
        match Path::new(part).components().next() {
            Some(Component::ParentDir) => {
                out.pop();
            }
            Some(Component::CurDir) | None => {}
            Some(_) => out.push(part),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_dir_in_at_or_above_the_store_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let store = tmp.path().join("store");
        std::fs::create_dir_all(store.join("proj")).unwrap();
        let link = tmp.path().join("link-to-store");
        std::os::unix::fs::symlink(&store, &link).unwrap();
        let cases: Vec<(PathBuf, bool)> = vec![
            (store.clone(), false),
            (store.join("proj"), false),
            (store.join("new/index"), false),
            (store.join("proj/../search"), false),
            (tmp.path().to_owned(), false),
            (link.join("index"), false),
            (tmp.path().join("cache/search"), true),
            (tmp.path().join("store-index"), true),
            (store.join("../elsewhere"), true),
        ];
        for (dir, ok) in cases {
            assert_eq!(check_apart(&dir, &store).is_ok(), ok, "{}", dir.display());
        }
    }

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
