//! Opening the on-disk (or, when the cache dir is unusable, in-memory) tantivy index: format
//! check, damage detection and rebuild with a notice.
//!
//! Nothing of ours deletes what we did not create (docs/search.md: the index directory): a
//! directory is used only when it is empty or carries our format mark — anything else is
//! refused, never wiped — and a rebuild deletes only the files an index of ours writes
//! (tantivy's own list of them, its fixed files, our marks), never a directory, a link or a
//! file it cannot name as ours.

use std::collections::HashSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use tantivy::directory::MmapDirectory;
use tantivy::schema::Schema;
use tantivy::store::{Compressor, ZstdCompressor};
use tantivy::{Index, IndexReader, IndexSettings, ReloadPolicy};

use crate::error::SearchError;
use crate::file_check;
use crate::schema::{self, FORMAT, Fields};
use crate::text_analysis::{self, ANALYZER};

/// File in the index directory naming the format it was written in: the mark that the
/// directory is ours.
const FORMAT_FILE: &str = "dsh-search-format";
/// What every format mark of ours starts with.
const MARK_PREFIX: &str = "dsh-search ";
/// Largest mark read.
const MAX_MARK_BYTES: u64 = 64;
/// Tantivy's fixed files: its meta and managed-files lists, its lock files.
const TANTIVY_FILES: [&str; 4] = [
    "meta.json",
    ".managed.json",
    ".tantivy-meta.lock",
    ".tantivy-writer.lock",
];
/// Largest `meta.json` or `.managed.json` an index of ours may have (they list segments and
/// files: a few KiB); a larger one is damage.
const MAX_META_BYTES: u64 = 16 << 20;
/// Segment file extensions tantivy writes.
const SEGMENT_EXTENSIONS: [&str; 7] = ["idx", "pos", "term", "store", "fast", "fieldnorm", "del"];

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

/// Whose directory the index is in (docs/search.md: the index directory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirKind {
    /// The default location in this project's own cache directory: a damaged or empty mark,
    /// or a special file where an index file belongs, is set aside and the index rebuilt.
    OwnCache,
    /// A directory the user named (`[search] index_dir`): anything that is not plainly an
    /// index of ours is refused, with how to repair it, and nothing is changed.
    Configured,
}

/// Open the index in `dir`, creating it when absent. An index of ours of another format, or
/// one that cannot be opened, has its files deleted and is created again: the notice says
/// so. A directory that is not empty and carries no mark of ours is refused
/// ([`SearchError::IndexDirRefused`]), and so is one where a file of an index's name is a
/// link, FIFO, device or directory — unless it is our own cache location
/// ([`DirKind::OwnCache`]): there whatever is in the way is set aside (renamed, never
/// deleted) and the index rebuilt, with one notice.
pub fn open_dir(dir: &Path, kind: DirKind) -> Result<(Engine, Option<String>), SearchError> {
    fs::create_dir_all(dir).map_err(|e| SearchError::unavailable(dir, e))?;
    let mut repaired = None;
    if let Err(unclaimed) = claim(dir) {
        match kind {
            DirKind::Configured => return Err(unclaimed.refusal(dir)),
            DirKind::OwnCache => repaired = set_aside(dir, &unclaimed)?,
        }
    }
    let mut notice = None;
    if dir.join("meta.json").exists() {
        let meta = || file_check::read_small(&dir.join("meta.json"), MAX_META_BYTES).ok();
        match open_until_settled(|| open_existing(dir), meta, OPEN_ATTEMPTS) {
            Ok(engine) => return Ok((engine, repaired)),
            Err(why) => {
                notice = Some(match repaired.take() {
                    Some(repaired) => format!("{repaired}; rebuilding it"),
                    None => format!("search index {why}; rebuilding it"),
                });
                wipe(dir)?;
            }
        }
    }
    if let Some(repaired) = repaired {
        notice = Some(format!("{repaired}; rebuilding it"));
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

/// The mark in `dir`: `Ok(None)` when there is none, `Err` with the reason when there is a
/// file of its name that is not a mark of ours.
fn read_mark(dir: &Path) -> Result<Option<String>, String> {
    let path = dir.join(FORMAT_FILE);
    match file_check::read_small(&path, MAX_MARK_BYTES) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(mark) if mark.starts_with(MARK_PREFIX) => Ok(Some(mark)),
            _ => Err(format!("{FORMAT_FILE} is not a format mark of dsh-refs")),
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{FORMAT_FILE}: {e}")),
    }
}

/// Why a directory is not plainly an index of ours.
#[derive(Debug)]
enum Unclaimed {
    /// A file of an index's name is a link, FIFO, device or directory.
    SpecialFile { name: &'static str, what: String },
    /// The mark is not a mark of ours (damaged, empty, someone else's) or cannot be read.
    BadMark { why: String },
    /// Other files and no mark.
    Foreign { example: String },
}

impl Unclaimed {
    fn reason(&self) -> String {
        match self {
            Unclaimed::SpecialFile { name, what } => {
                format!("{name} is {what}, not a file an index of ours writes")
            }
            Unclaimed::BadMark { why } => why.clone(),
            Unclaimed::Foreign { example } => format!(
                "it holds files that are not a dsh-refs search index (such as {example:?}) and \
                 no {FORMAT_FILE} mark"
            ),
        }
    }

    /// The refusal of a directory the user named, saying how to repair it.
    fn refusal(&self, dir: &Path) -> SearchError {
        let how = match self {
            Unclaimed::SpecialFile { name, .. } => format!(
                "to use it, move {name} out of it, or set [search] index_dir to an empty or new \
                 directory"
            ),
            Unclaimed::BadMark { .. } => format!(
                "if it holds only a dsh-refs search index (damaged by a crash or a full disk), \
                 empty it ({FORMAT_FILE}, meta.json and the segment files) and the index is \
                 built again; else set [search] index_dir to an empty or new directory. \
                 Without index_dir the index lives in the cache directory, where dsh-refs \
                 repairs such damage itself"
            ),
            Unclaimed::Foreign { .. } => {
                "set [search] index_dir to an empty or new directory".to_owned()
            }
        };
        SearchError::refused(
            dir,
            format!(
                "{}; nothing in it was changed. To repair: {how}",
                self.reason()
            ),
        )
    }
}

/// Check that `dir` is ours to use: it carries our mark, or holds nothing but our own
/// temporary marks (another process is creating the index); and that no file of an index's
/// name is something tantivy would block on or follow.
fn claim(dir: &Path) -> Result<(), Unclaimed> {
    if let Some((name, meta)) = special_files(dir).next() {
        return Err(Unclaimed::SpecialFile {
            name,
            what: dsh_store::nofollow::describe(&meta).to_owned(),
        });
    }
    if read_mark(dir)
        .map_err(|why| Unclaimed::BadMark { why })?
        .is_some()
    {
        return Ok(());
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return Ok(());
    };
    let foreign = entries.flatten().map(|e| e.file_name()).find(|name| {
        !name
            .to_str()
            .is_some_and(|n| file_check::is_temp_of(n, FORMAT_FILE))
    });
    let Some(foreign) = foreign else {
        return Ok(());
    };
    // Another process may have put its mark in while the directory was listed.
    if matches!(read_mark(dir), Ok(Some(_))) {
        return Ok(());
    }
    Err(Unclaimed::Foreign {
        example: foreign.to_string_lossy().into_owned(),
    })
}

/// The files of an index's name in `dir` that are not regular files.
fn special_files(dir: &Path) -> impl Iterator<Item = (&'static str, fs::Metadata)> + '_ {
    TANTIVY_FILES
        .iter()
        .copied()
        .chain([FORMAT_FILE, file_check::VERIFIED_FILE])
        .filter_map(move |name| {
            fs::symlink_metadata(dir.join(name))
                .ok()
                .filter(|meta| !meta.is_file())
                .map(|meta| (name, meta))
        })
}

/// In our own cache location: rename aside (never delete: we may not have made them) every
/// special file of an index's name and a mark that is not ours, so the index can be built
/// again; other files stay. Returns what the notice says (`None`: nothing was in the way).
fn set_aside(dir: &Path, unclaimed: &Unclaimed) -> Result<Option<String>, SearchError> {
    let mut names: Vec<&str> = special_files(dir).map(|(name, _)| name).collect();
    if read_mark(dir).is_err() {
        names.push(FORMAT_FILE);
    }
    let mut moved = Vec::new();
    for name in names {
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let aside = (0..100)
            .map(|n| match n {
                0 => format!("{name}.damaged-{stamp}"),
                n => format!("{name}.damaged-{stamp}-{n}"),
            })
            .find(|aside| fs::symlink_metadata(dir.join(aside)).is_err())
            .unwrap_or_else(|| format!("{name}.damaged-{stamp}-{}", std::process::id()));
        match fs::rename(dir.join(name), dir.join(&aside)) {
            Ok(()) => moved.push(format!("{name} as {aside}")),
            // Another process set it aside first.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(SearchError::unavailable(&dir.join(name), e)),
        }
    }
    Ok((!moved.is_empty()).then(|| {
        format!(
            "search index in {} was damaged ({}): set aside {}",
            dir.display(),
            unclaimed.reason(),
            moved.join(", ")
        )
    }))
}

/// Write [`FORMAT_FILE`] atomically: a new file of this process renamed over it.
fn write_format_mark(dir: &Path) -> Result<(), SearchError> {
    if matches!(read_mark(dir), Ok(Some(mark)) if mark == FORMAT) {
        return Ok(());
    }
    file_check::write_replacing(dir, FORMAT_FILE, FORMAT.as_bytes())
        .map_err(|e| SearchError::unavailable(dir, e))
}

/// Open an existing index and check that it can be trusted: our format, our schema, every
/// segment readable.
fn open_existing(dir: &Path) -> Result<Engine, String> {
    let format = read_mark(dir)?.unwrap_or_default();
    if format != FORMAT {
        return Err(format!("is of another format ({:?})", format.trim()));
    }
    // Tantivy reads these whole: only files of a sane size are handed to it.
    for name in ["meta.json", ".managed.json"] {
        match fs::symlink_metadata(dir.join(name)) {
            Ok(meta) if meta.len() > MAX_META_BYTES => {
                return Err(format!("was damaged ({name} is {} bytes)", meta.len()));
            }
            _ => {}
        }
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

/// Remove the files of the index in `dir` (one we cannot use): tantivy's fixed files, the
/// files its managed list names, segment files, our verified list and temporary files. The
/// mark stays (the directory is still ours); anything else — a directory, a link, a file
/// we cannot name as ours — is left alone.
pub fn wipe(dir: &Path) -> Result<(), SearchError> {
    let managed = managed_files(dir);
    let entries = fs::read_dir(dir).map_err(|e| SearchError::unavailable(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| SearchError::unavailable(dir, e))?;
        if !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        if !is_index_file(name, &managed) {
            continue;
        }
        // Another process may be removing the same files (it rebuilds too): gone is fine.
        match fs::remove_file(entry.path()) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                return Err(SearchError::unavailable(&entry.path(), e));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The files tantivy's `.managed.json` lists (empty when it is absent or unreadable).
fn managed_files(dir: &Path) -> HashSet<String> {
    file_check::read_small(&dir.join(".managed.json"), MAX_META_BYTES)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Vec<String>>(&bytes).ok())
        .map(|names| names.into_iter().filter(|n| !n.contains('/')).collect())
        .unwrap_or_default()
}

/// Whether `name` is a file an index of ours writes (the mark excepted).
fn is_index_file(name: &str, managed: &HashSet<String>) -> bool {
    TANTIVY_FILES.contains(&name)
        || name == file_check::VERIFIED_FILE
        || managed.contains(name)
        || is_segment_file(name)
        || file_check::is_temp_of(name, FORMAT_FILE)
        || file_check::is_temp_of(name, file_check::VERIFIED_FILE)
}

/// `<32 hex digits>.<extension>` or `<32 hex digits>.<opstamp>.del`: a segment file.
fn is_segment_file(name: &str) -> bool {
    let Some((id, rest)) = name.split_once('.') else {
        return false;
    };
    let id_ok = id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit());
    let rest_ok = SEGMENT_EXTENSIONS.contains(&rest)
        || rest
            .strip_suffix(".del")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    id_ok && rest_ok
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
        let (engine, _) = open_dir(&dir, DirKind::Configured).unwrap();
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
                            match open_dir(&dir, DirKind::Configured) {
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
                    .map(|_| {
                        s.spawn(|| open_dir(&dir, DirKind::OwnCache).map(|(_, notice)| notice))
                    })
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

    #[cfg(unix)]
    #[test]
    fn our_cache_sets_aside_what_is_in_the_way_and_a_named_directory_refuses() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("index");
        drop(open_dir(&dir, DirKind::OwnCache).unwrap());
        let lock = dir.join(".tantivy-writer.lock");
        fs::remove_file(&lock).ok();
        let made = std::process::Command::new("mkfifo").arg(&lock).status();
        assert!(made.unwrap().success());
        let refused = open_dir(&dir, DirKind::Configured).unwrap_err().to_string();
        assert!(
            refused.contains("To repair: to use it, move .tantivy-writer.lock"),
            "{refused}"
        );
        // Our cache: the FIFO is renamed aside; the index itself was fine, so no rebuild.
        let (_, notice) = open_dir(&dir, DirKind::OwnCache).unwrap();
        let notice = notice.unwrap();
        assert!(
            notice.contains("set aside .tantivy-writer.lock as"),
            "{notice}"
        );
        assert!(!notice.contains("rebuilding"), "{notice}");
        let aside: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.to_string_lossy()
                    .contains(".tantivy-writer.lock.damaged-")
            })
            .collect();
        assert_eq!(aside.len(), 1);
        assert!(std::os::unix::fs::FileTypeExt::is_fifo(
            &fs::symlink_metadata(&aside[0]).unwrap().file_type()
        ));
        assert_eq!(
            open_dir(&dir, DirKind::OwnCache).unwrap().1,
            None,
            "repaired"
        );
        // A mark of someone else's in our cache: set aside, the index rebuilt.
        fs::write(dir.join(FORMAT_FILE), "not ours").unwrap();
        let (_, notice) = open_dir(&dir, DirKind::OwnCache).unwrap();
        assert!(notice.unwrap().ends_with("rebuilding it"));
        assert_eq!(fs::read_to_string(dir.join(FORMAT_FILE)).unwrap(), FORMAT);
        // Files that are not the index's in our cache stay, and need no notice.
        let fresh = tmp.path().join("fresh");
        fs::create_dir_all(&fresh).unwrap();
        fs::write(fresh.join("notes.txt"), "mine").unwrap();
        assert_eq!(open_dir(&fresh, DirKind::OwnCache).unwrap().1, None);
        assert_eq!(fs::read_to_string(fresh.join("notes.txt")).unwrap(), "mine");
    }
}
