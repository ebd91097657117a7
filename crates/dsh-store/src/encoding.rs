//! Which encoding a store's logs are written in (`store.compression`). dsh's backend reads
//! only its configured encoding and refuses a root holding a log of the other kind, so a
//! store written here never gets a second encoding: `auto` follows the logs already there.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::error::StoreError;
use super::paths::{LOG_FILE, ZSTD_LOG_FILE};
use super::reader::LogFormat;

/// The `store.compression` setting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    /// The encoding the store already uses (any `.zstd` log → zstd); an empty store → plain.
    #[default]
    Auto,
    /// Plain `session.jsonl` logs.
    None,
    /// `session.jsonl.zstd` logs of checksummed zstd frames (dsh's default).
    Zstd,
}

impl Compression {
    /// The setting's config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Compression::Auto => "auto",
            Compression::None => "none",
            Compression::Zstd => "zstd",
        }
    }
}

/// One log of each encoding found in a store, if any.
#[derive(Debug, Default)]
struct Found {
    plain: Option<PathBuf>,
    zstd: Option<PathBuf>,
}

/// Look at every session directory (`<root>/<project>/<session>/`) for logs; stops as soon
/// as one of each encoding is found. A missing root is an empty store.
fn find_logs(root: &Path) -> Result<Found, StoreError> {
    let mut found = Found::default();
    for project in subdirs(root)? {
        for session in subdirs(&project)? {
            for (name, slot) in [
                (LOG_FILE, &mut found.plain),
                (ZSTD_LOG_FILE, &mut found.zstd),
            ] {
                let path = session.join(name);
                if slot.is_none() && fs::symlink_metadata(&path).is_ok() {
                    *slot = Some(path);
                }
            }
            if found.plain.is_some() && found.zstd.is_some() {
                return Ok(found);
            }
        }
    }
    Ok(found)
}

fn subdirs(dir: &Path) -> Result<Vec<PathBuf>, StoreError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(StoreError::io(dir, e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| StoreError::io(dir, e))?;
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            out.push(entry.path());
        }
    }
    out.sort();
    Ok(out)
}

/// The encoding new sessions and appends in the store at `root` use under `setting`, or why
/// the store cannot be written: it already holds both encodings, or the other one.
pub fn write_format(root: &Path, setting: Compression) -> Result<LogFormat, StoreError> {
    let found = find_logs(root)?;
    if let (Some(plain), Some(zstd)) = (&found.plain, &found.zstd) {
        return Err(StoreError::MixedEncoding {
            root: root.to_owned(),
            plain: plain.clone(),
            zstd: zstd.clone(),
        });
    }
    let (format, conflict) = match setting {
        Compression::Auto if found.zstd.is_some() => (LogFormat::Zstd, None),
        Compression::Auto | Compression::None => (LogFormat::Plain, found.zstd),
        Compression::Zstd => (LogFormat::Zstd, found.plain),
    };
    match conflict {
        Some(path) => Err(StoreError::EncodingMismatch {
            setting: setting.as_str(),
            path,
        }),
        None => Ok(format),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn log(root: &Path, session: &str, name: &str) {
        let dir = root.join("--p--").join(session);
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(name), b"x").unwrap();
    }

    #[test]
    fn encoding_follows_the_store() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("store");
        for setting in [Compression::Auto, Compression::None] {
            assert_eq!(write_format(&root, setting).unwrap(), LogFormat::Plain);
        }
        assert_eq!(
            write_format(&root, Compression::Zstd).unwrap(),
            LogFormat::Zstd
        );

        log(&root, "a", ZSTD_LOG_FILE);
        assert_eq!(
            write_format(&root, Compression::Auto).unwrap(),
            LogFormat::Zstd
        );
        assert_eq!(
            write_format(&root, Compression::Zstd).unwrap(),
            LogFormat::Zstd
        );
        let err = write_format(&root, Compression::None).unwrap_err();
        assert!(
            matches!(
                err,
                StoreError::EncodingMismatch {
                    setting: "none",
                    ..
                }
            ),
            "{err}"
        );

        log(&root, "b", LOG_FILE);
        for setting in [Compression::Auto, Compression::None, Compression::Zstd] {
            let err = write_format(&root, setting).unwrap_err();
            assert!(matches!(err, StoreError::MixedEncoding { .. }), "{err}");
            assert!(err.to_string().contains("both"), "{err}");
        }
    }

    #[test]
    fn the_setting_parses_from_config_spelling() {
        for (text, want) in [
            ("\"auto\"", Compression::Auto),
            ("\"none\"", Compression::None),
            ("\"zstd\"", Compression::Zstd),
        ] {
            assert_eq!(serde_json::from_str::<Compression>(text).unwrap(), want);
            assert_eq!(format!("\"{}\"", want.as_str()), text);
        }
        assert!(serde_json::from_str::<Compression>("\"gzip\"").is_err());
    }
}
