//! Checking an index's files before tantivy reads them: every segment file's checksum is
//! verified once (a damaged file could otherwise make the engine fail in ways it does not
//! report as errors) and remembered by name, length and mtime in a small list next to the
//! index, so a warm open checks only files it has not seen.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use tantivy::Index;
use tantivy::index::SegmentComponent;

/// The list of verified files.
const VERIFIED_FILE: &str = "dsh-search-verified";
/// Tantivy's footer is 8 bytes at least; a shorter file is damaged.
const MIN_FILE: u64 = 8;

type Seen = BTreeSet<(String, u64, u128)>;

fn identity(dir: &Path, name: &str) -> Option<(String, u64, u128)> {
    let meta = fs::metadata(dir.join(name)).ok()?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    Some((name.to_owned(), meta.len(), mtime))
}

fn segment_files(index: &Index) -> Result<Vec<PathBuf>, String> {
    let metas = index
        .searchable_segment_metas()
        .map_err(|e| format!("was damaged ({e})"))?;
    let mut out = Vec::new();
    for meta in metas {
        for component in [
            SegmentComponent::Postings,
            SegmentComponent::Positions,
            SegmentComponent::Terms,
            SegmentComponent::Store,
            SegmentComponent::FastFields,
            SegmentComponent::FieldNorms,
        ] {
            out.push(meta.relative_path(component));
        }
        if meta.has_deletes() {
            out.push(meta.relative_path(SegmentComponent::Delete));
        }
    }
    Ok(out)
}

fn load(dir: &Path) -> Seen {
    fs::read(dir.join(VERIFIED_FILE))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// Verify every segment file of `index` in `dir` not verified before.
pub fn verify(index: &Index, dir: &Path) -> Result<(), String> {
    let seen = load(dir);
    let mut now = Seen::new();
    let mut fresh = false;
    for rel in segment_files(index)? {
        let name = rel.to_string_lossy().into_owned();
        let Some(id) = identity(dir, &name) else {
            return Err(format!("was damaged ({name} is missing)"));
        };
        if !seen.contains(&id) {
            if id.1 < MIN_FILE {
                return Err(format!("was damaged ({name} is truncated)"));
            }
            match index.directory().validate_checksum(&rel) {
                Ok(true) => {}
                Ok(false) => return Err(format!("was damaged ({name} fails its checksum)")),
                Err(e) => return Err(format!("was damaged ({e})")),
            }
            fresh = true;
        }
        now.insert(id);
    }
    if fresh || now != seen {
        remember(dir, &now);
    }
    Ok(())
}

/// After this process committed: every current segment file is its own or was verified.
pub fn trust_current(index: &Index, dir: &Path) {
    let Ok(files) = segment_files(index) else {
        return;
    };
    let now: Seen = files
        .iter()
        .filter_map(|rel| identity(dir, &rel.to_string_lossy()))
        .collect();
    remember(dir, &now);
}

/// Write the list atomically (a lost race only means a file is verified again).
fn remember(dir: &Path, seen: &Seen) {
    let Ok(bytes) = serde_json::to_vec(seen) else {
        return;
    };
    let tmp = dir.join(format!("{VERIFIED_FILE}.{}", std::process::id()));
    if fs::write(&tmp, bytes).is_ok() && fs::rename(&tmp, dir.join(VERIFIED_FILE)).is_err() {
        let _ = fs::remove_file(&tmp);
    }
}
