//! The dsh-compatible on-disk layout (docs/session-store.md: on-disk layout): `<root>/<project>/<encoded-id>/session.jsonl`.
//!
//! Both encodings work per UTF-16 code unit, like dsh's JavaScript, so the same session lands
//! in the same directory. An encoded id is always one plain path component: it can never be
//! empty, `.`, `..`, or contain a separator, so no id can name a path outside the root.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::query_error::QueryError;

/// The log file of a session.
pub const LOG_FILE: &str = "session.jsonl";
/// dsh's compressed log file (read only).
pub const ZSTD_LOG_FILE: &str = "session.jsonl.zstd";
/// The project directory of sessions without a cwd.
pub const NO_CWD_DIR: &str = "_no-cwd";
/// Longest slug kept (so `--<slug>--` fits one 255-byte path component).
const MAX_SLUG_CHARS: usize = 251;
/// Longest encoded id accepted (one path component).
const MAX_ENCODED_ID_BYTES: usize = 255;

fn is_kept(unit: u16) -> bool {
    matches!(unit, 0x30..=0x39 | 0x41..=0x5A | 0x61..=0x7A | 0x2E | 0x5F | 0x2D)
}

fn push_escaped(out: &mut String, unit: u16) {
    // Writing to a String cannot fail.
    let _ = write!(out, "~{unit:04X}");
}

/// The directory name of a session id: `[A-Za-z0-9._-]` kept, every other UTF-16 unit
/// `~XXXX`; a whole `.` or `..` is escaped; the empty id is invalid.
pub fn encode_session_id(id: &str) -> Result<String, QueryError> {
    let invalid = |reason: &str| QueryError::InvalidId {
        id: id.to_owned(),
        reason: reason.to_owned(),
    };
    if id.is_empty() {
        return Err(invalid("the empty id is not a session id"));
    }
    let mut out = String::with_capacity(id.len());
    if id == "." || id == ".." {
        for unit in id.encode_utf16() {
            push_escaped(&mut out, unit);
        }
    } else {
        for unit in id.encode_utf16() {
            match char::from_u32(u32::from(unit)) {
                Some(c) if is_kept(unit) => out.push(c),
                _ => push_escaped(&mut out, unit),
            }
        }
    }
    if out.len() > MAX_ENCODED_ID_BYTES {
        return Err(invalid("too long for a directory name"));
    }
    Ok(out)
}

/// The readable slug of a cwd: runs of `/`, `\`, `:` become one `-`, `[A-Za-z0-9._-]` are
/// kept, everything else is `~XXXX`; leading `-` stripped; empty → `root`; 251 chars at most.
pub fn project_slug(cwd: &str) -> String {
    let mut readable = String::with_capacity(cwd.len());
    let mut in_separator_run = false;
    for unit in cwd.encode_utf16() {
        if matches!(unit, 0x2F | 0x5C | 0x3A) {
            if !in_separator_run {
                readable.push('-');
            }
            in_separator_run = true;
            continue;
        }
        in_separator_run = false;
        match char::from_u32(u32::from(unit)) {
            Some(c) if is_kept(unit) => readable.push(c),
            _ => push_escaped(&mut readable, unit),
        }
    }
    let trimmed = readable.trim_start_matches('-');
    let body = if trimmed.is_empty() { "root" } else { trimmed };
    // The slug is ASCII, so chars and bytes coincide.
    body.chars().take(MAX_SLUG_CHARS).collect()
}

/// The project directory name: `_no-cwd` without a cwd, else `--<slug>--`.
pub fn project_dir_name(cwd: Option<&str>) -> String {
    match cwd {
        None | Some("") => NO_CWD_DIR.to_owned(),
        Some(cwd) => format!("--{}--", project_slug(cwd)),
    }
}

/// The directory of a session under `root`.
pub fn session_dir(root: &Path, cwd: Option<&str>, id: &str) -> Result<PathBuf, QueryError> {
    Ok(root
        .join(project_dir_name(cwd))
        .join(encode_session_id(id)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use proptest::prelude::*;
    use std::path::Component;

    #[test]
    fn session_id_encoding_table() {
        let cases = [
            ("abc-1.2_x", "abc-1.2_x"),
            ("a/b", "a~002Fb"),
            (".", "~002E"),
            ("..", "~002E~002E"),
            ("...", "..."),
            (".hidden", ".hidden"),
            ("~", "~007E"),
            ("a b", "a~0020b"),
            ("é", "~00E9"),
            ("😀", "~D83D~DE00"),
            ("../../x", "..~002F..~002Fx"),
            ("a\\b", "a~005Cb"),
            ("\0", "~0000"),
        ];
        for (id, want) in cases {
            assert_eq!(encode_session_id(id).unwrap(), want, "id {id:?}");
        }
    }

    #[test]
    fn empty_and_oversized_ids_are_invalid() {
        assert!(matches!(
            encode_session_id(""),
            Err(QueryError::InvalidId { .. })
        ));
        assert!(matches!(
            encode_session_id(&"é".repeat(60)),
            Err(QueryError::InvalidId { .. })
        ));
        assert!(encode_session_id(&"a".repeat(255)).is_ok());
    }

    #[test]
    fn project_dir_table() {
        let cases = [
            (None, "_no-cwd"),
            (Some(""), "_no-cwd"),
            (Some("/"), "--root--"),
            (Some("/home/me/proj"), "--home-me-proj--"),
            (Some("C:\\Users\\me"), "--C-Users-me--"),
            (Some("/a//b::c\\/d"), "--a-b-c-d--"),
            (Some("/my dir/a:b"), "--my~0020dir-a-b--"),
            (Some("/tmp/é😀"), "--tmp-~00E9~D83D~DE00--"),
            (Some("/-x"), "--x--"),
            (Some("~/x"), "--~007E-x--"),
        ];
        for (cwd, want) in cases {
            assert_eq!(project_dir_name(cwd), want, "cwd {cwd:?}");
        }
    }

    #[test]
    fn long_slug_is_cut_to_251_chars() {
        let cwd = format!("/{}", "a".repeat(400));
        let name = project_dir_name(Some(&cwd));
        assert_eq!(name.len(), 255);
        assert!(name.starts_with("--aaa") && name.ends_with("a--"));
    }

    proptest! {
        #[test]
        fn no_id_escapes_the_root(id in any::<String>(), cwd in proptest::option::of(any::<String>())) {
            let root = Path::new("/store/root");
            if let Ok(dir) = session_dir(root, cwd.as_deref(), &id) {
                let rest = dir.strip_prefix(root).unwrap();
                let parts: Vec<_> = rest.components().collect();
                prop_assert_eq!(parts.len(), 2);
                for part in parts {
                    prop_assert!(matches!(part, Component::Normal(_)), "{:?}", part);
                }
                let enc = encode_session_id(&id).unwrap();
                prop_assert!(enc != "." && enc != ".." && !enc.is_empty());
                prop_assert!(enc.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-~".contains(&b)));
            } else {
                prop_assert!(id.is_empty() || id.encode_utf16().count() > 50);
            }
        }
    }
}
