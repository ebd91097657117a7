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
        let meta = || fs::read(dir.join("meta.json")).ok();
        match open_until_settled(|| open_existing(dir), meta, OPEN_ATTEMPTS) {
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

/// Attempts at opening an existing index whose `meta.json` changes meanwhile (another
/// process committing or merging: a segment listed a moment ago may be gone) before it is
/// called damaged and rebuilt.
const OPEN_ATTEMPTS: usize = 5;

/// `open` until it succeeds, or until it fails with `meta()` the same before and after the
/// attempt — the failure is then the index's own, not a step of another process's writer —
/// at most `attempts` times; the last failure is returned.
fn open_until_settled<T>(
    mut open: impl FnMut() -> Result<T, String>,
    mut meta: impl FnMut() -> Option<Vec<u8>>,
    attempts: usize,
) -> Result<T, String> {
    let mut failure = String::from("was not opened");
    for _ in 0..attempts.max(1) {
        let before = meta();
        match open() {
            Ok(opened) => return Ok(opened),
            Err(why) => failure = why,
        }
        if meta() == before {
            break;
        }
    }
    Err(failure)
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
    fn an_open_failing_while_meta_changes_is_tried_again() {
        // (meta.json seen before and after each attempt, opens' results) → opens made, result.
        type Case = (&'static [(u8, u8)], &'static [bool], usize, bool);
        let cases: &[Case] = &[
            (&[(1, 1)], &[true], 1, true),
            // Damaged for good: the same meta.json around the failure, no second try.
            (&[(1, 1)], &[false, true], 1, false),
            // A writer moved on during the attempt: tried again, then opened.
            (&[(1, 2), (2, 2)], &[false, true], 2, true),
            (&[(1, 2), (2, 3), (3, 3)], &[false, false, true], 3, true),
            // Still changing after every attempt: gives up after OPEN_ATTEMPTS.
            (
                &[(1, 2), (2, 3), (3, 4), (4, 5), (5, 6)],
                &[false; 5],
                5,
                false,
            ),
        ];
        for &(metas, results, want_opens, want_ok) in cases {
            let mut seen = metas.iter().flat_map(|&(a, b)| [a, b]);
            let mut outcomes = results.iter();
            let mut opens = 0;
            let got = open_until_settled(
                || {
                    opens += 1;
                    match outcomes.next() {
                        Some(true) => Ok(()),
                        _ => Err(format!("damaged at open {opens}")),
                    }
                },
                || seen.next().map(|m| vec![m]),
                OPEN_ATTEMPTS,
            );
            assert_eq!((opens, got.is_ok()), (want_opens, want_ok), "{metas:?}");
        }
    }

    #[test]
    fn opening_an_index_another_writer_is_merging_never_rebuilds_it() {
        // A writer commits and merges (old segment files are deleted) while others open the
        // index: a segment gone between reading meta.json and checking the files is a step
        // of that writer, never damage to rebuild (which would wipe the writer's index).
        use std::sync::atomic::{AtomicBool, Ordering};
        /// Tells the openers to stop when the writer ends, even by a panic.
        struct Done<'a>(&'a AtomicBool);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Relaxed);
            }
        }
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("index");
        let (engine, _) = open_dir(&dir).unwrap();
        let stop = AtomicBool::new(false);
        let (written, notices) = std::thread::scope(|s| {
            let writer = s.spawn(|| -> Result<(), String> {
                let _done = Done(&stop);
                let mut writer: tantivy::IndexWriter = engine
                    .index
                    .writer_with_num_threads(1, 15_000_000)
                    .map_err(|e| e.to_string())?;
                for round in 0..80 {
                    writer
                        .add_document(tantivy::TantivyDocument::default())
                        .map_err(|e| e.to_string())?;
                    writer.commit().map_err(|e| format!("round {round}: {e}"))?;
                    if round % 2 == 1 {
                        let ids = engine
                            .index
                            .searchable_segment_ids()
                            .map_err(|e| e.to_string())?;
                        if ids.len() > 1 {
                            writer
                                .merge(&ids)
                                .wait()
                                .map_err(|e| format!("merge {round}: {e}"))?;
                        }
                        let _ = writer.garbage_collect_files().wait();
                    }
                }
                Ok(())
            });
            let openers: Vec<_> = (0..2)
                .map(|_| {
                    s.spawn(|| {
                        let mut notices = Vec::new();
                        for _ in 0..20_000 {
                            if stop.load(Ordering::Relaxed) {
                                break;
                            }
                            match open_dir(&dir) {
                                Ok((_, None)) => {}
                                Ok((_, Some(notice))) => notices.push(notice),
                                Err(e) => notices.push(e.to_string()),
                            }
                        }
                        notices
                    })
                })
                .collect();
            let written = writer.join().unwrap();
            let notices: Vec<String> = openers
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect();
            (written, notices)
        });
        assert_eq!((written, notices), (Ok(()), Vec::<String>::new()));
    }

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
