//! Opening the on-disk (or, when the cache dir is unusable, in-memory) tantivy index: format
//! check, damage detection and rebuild with a notice.

use std::fs;
use std::path::{Path, PathBuf};

use tantivy::directory::MmapDirectory;
use tantivy::schema::Schema;
use tantivy::store::{Compressor, ZstdCompressor};
use tantivy::{Index, IndexReader, IndexSettings, ReloadPolicy};

use crate::error::SearchError;
use crate::file_check;
use crate::schema::{self, FORMAT, Fields};
use crate::text_analysis::{self, ANALYZER};

/// File in the index directory naming the format it was written in.
const FORMAT_FILE: &str = "dsh-search-format";

/// An opened index with its reader.
pub struct Engine {
    pub index: Index,
    pub reader: IndexReader,
    pub fields: Fields,
    /// Where it lives; `None` in memory.
    pub dir: Option<PathBuf>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

fn settings() -> IndexSettings {
    IndexSettings {
        docstore_compression: Compressor::Zstd(ZstdCompressor::default()),
        docstore_blocksize: 64 * 1024,
        ..IndexSettings::default()
    }
}

fn prepared(index: Index, fields: Fields, dir: Option<PathBuf>) -> Result<Engine, SearchError> {
    index
        .tokenizers()
        .register(ANALYZER, text_analysis::analyzer());
    let reader = index
        .reader_builder()
        .reload_policy(ReloadPolicy::Manual)
        .try_into()?;
    Ok(Engine {
        index,
        reader,
        fields,
        dir,
    })
}

/// A fresh index in memory (the fallback when no directory can be used).
pub fn in_memory() -> Result<Engine, SearchError> {
    let (schema, fields) = schema::build();
    let index = Index::builder()
        .schema(schema)
        .settings(settings())
        .create_in_ram()?;
    prepared(index, fields, None)
}

/// Open the index in `dir`, creating it when absent. An index of another format, or one
/// that cannot be opened, is deleted and created again: the notice says so.
pub fn open_dir(dir: &Path) -> Result<(Engine, Option<String>), SearchError> {
    fs::create_dir_all(dir).map_err(|e| SearchError::unavailable(dir, e))?;
    let mut notice = None;
    if dir.join("meta.json").exists() {
        match open_existing(dir) {
            Ok(engine) => return Ok((engine, None)),
            Err(why) => {
                notice = Some(format!("search index {why}; rebuilding it"));
                wipe(dir)?;
            }
        }
    }
    // The format mark goes in first, and whole (a rename): another process that sees this
    // index's meta.json must never find the mark missing and wipe a live index.
    write_format_mark(dir)?;
    let (schema, fields) = schema::build();
    let directory = MmapDirectory::open(dir).map_err(|e| SearchError::unavailable(dir, e))?;
    let index = Index::builder()
        .schema(schema)
        .settings(settings())
        .open_or_create(directory)?;
    Ok((prepared(index, fields, Some(dir.to_owned()))?, notice))
}

/// Numbers this process's temporary format marks (threads may open at once).
static TEMP_MARKS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Write [`FORMAT_FILE`] atomically: a temporary file of this process renamed over it.
fn write_format_mark(dir: &Path) -> Result<(), SearchError> {
    let target = dir.join(FORMAT_FILE);
    if fs::read_to_string(&target).is_ok_and(|f| f == FORMAT) {
        return Ok(());
    }
    let n = TEMP_MARKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let temp = dir.join(format!(".{FORMAT_FILE}.{}.{n}.tmp", std::process::id()));
    fs::write(&temp, FORMAT)
        .and_then(|()| fs::rename(&temp, &target))
        .map_err(|e| {
            let _ = fs::remove_file(&temp);
            SearchError::unavailable(dir, e)
        })
}

/// Open an existing index and check that it can be trusted: our format, our schema, every
/// segment readable.
fn open_existing(dir: &Path) -> Result<Engine, String> {
    let format = fs::read_to_string(dir.join(FORMAT_FILE)).unwrap_or_default();
    if format != FORMAT {
        return Err(format!("is of another format ({:?})", format.trim()));
    }
    let index = Index::open_in_dir(dir).map_err(|e| format!("was damaged ({e})"))?;
    let (schema, fields): (Schema, Fields) = schema::build();
    if index.schema() != schema {
        return Err("has another schema".into());
    }
    file_check::verify(&index, dir)?;
    let engine =
        prepared(index, fields, Some(dir.to_owned())).map_err(|e| format!("was damaged ({e})"))?;
    let searcher = engine.reader.searcher();
    for segment in searcher.segment_readers() {
        segment
            .fast_fields()
            .bytes("state")
            .map_err(|e| format!("was damaged ({e})"))?;
    }
    Ok(engine)
}

/// Remove everything in `dir` (an index we cannot use).
pub fn wipe(dir: &Path) -> Result<(), SearchError> {
    let entries = fs::read_dir(dir).map_err(|e| SearchError::unavailable(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| SearchError::unavailable(dir, e))?;
        let path = entry.path();
        let removed = if entry.file_type().is_ok_and(|t| t.is_dir()) {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        };
        // Another process may be removing the same files (it rebuilds too): gone is fine.
        match removed {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(SearchError::unavailable(&path, e));
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn processes_opening_a_new_index_at_once_never_wipe_each_other() {
        // One creator's meta.json appearing before its format mark made another opener
        // call the index foreign and wipe it under the creator.
        for round in 0..20 {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path().join("index");
            let notices: Vec<Option<String>> = std::thread::scope(|s| {
                let openers: Vec<_> = (0..4)
                    .map(|_| s.spawn(|| open_dir(&dir).map(|(_, notice)| notice)))
                    .collect();
                openers
                    .into_iter()
                    .map(|h| h.join().unwrap().unwrap())
                    .collect()
            });
            assert!(
                notices.iter().all(Option::is_none),
                "round {round}: {notices:?}"
            );
            assert_eq!(fs::read_to_string(dir.join(FORMAT_FILE)).unwrap(), FORMAT);
        }
    }
}
