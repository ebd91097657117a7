//! The git branch a session's working directory is on, read from the repository's `HEAD`
//! file without running git (docs/references.md: candidates).
//!
//! These are files in a user's repository, read while a picker is open: every one is opened
//! without following a final symbolic link and without blocking (a FIFO or device is
//! refused), must be a regular file, and at most [`MAX_FILE_BYTES`] of it is read. Call it
//! off the UI thread: it costs a `stat` per directory level up to the repository and one or
//! two small reads.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Most of a `HEAD` or `.git` file read.
pub const MAX_FILE_BYTES: u64 = 4096;
/// Most directory levels looked at, from the working directory up.
const MAX_LEVELS: usize = 64;
/// Longest branch name shown (characters).
const MAX_NAME_CHARS: usize = 255;
/// Hex digits shown of a detached HEAD's commit.
const SHORT_COMMIT: usize = 7;

/// What a repository's `HEAD` names. Both strings come from the user's files: show them as
/// untrusted text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GitHead {
    /// On a branch (`ref: refs/heads/NAME`): its name; another ref is named without its
    /// `refs/` prefix.
    Branch(String),
    /// Detached at a commit: its first seven hex digits.
    Detached(String),
}

impl GitHead {
    /// The text a picker shows: the branch name, or `detached abc1234`.
    pub fn label(&self) -> String {
        match self {
            GitHead::Branch(name) => name.clone(),
            GitHead::Detached(commit) => format!("detached {commit}"),
        }
    }
}

/// At most [`MAX_FILE_BYTES`] of the regular file at `path`, never blocking on it.
fn read_small(path: &Path) -> Option<String> {
    let file: File = dsh_store::nofollow::open_regular(path).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES).read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// What the text of a `HEAD` file names.
pub fn parse_head(text: &str) -> Option<GitHead> {
    let line = text.lines().next()?.trim();
    if let Some(target) = line.strip_prefix("ref:") {
        let target = target.trim();
        let name = target
            .strip_prefix("refs/heads/")
            .or_else(|| target.strip_prefix("refs/"))
            .unwrap_or(target);
        let fine = !name.is_empty()
            && name.chars().count() <= MAX_NAME_CHARS
            && !name.chars().any(char::is_control);
        return fine.then(|| GitHead::Branch(name.to_owned()));
    }
    let commit = matches!(line.len(), 40 | 64) && line.bytes().all(|b| b.is_ascii_hexdigit());
    if !commit {
        return None;
    }
    Some(GitHead::Detached(
        line.get(..SHORT_COMMIT)?.to_ascii_lowercase(),
    ))
}

/// The git directory a `.git` file (`gitdir: PATH`, as worktrees and submodules have)
/// points at, relative paths taken from the directory holding the file.
fn gitdir_of(dot_git_file: &Path) -> Option<PathBuf> {
    let text = read_small(dot_git_file)?;
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    if target.is_empty() {
        return None;
    }
    let target = Path::new(target);
    Some(if target.is_absolute() {
        target.to_owned()
    } else {
        dot_git_file.parent()?.join(target)
    })
}

/// The `HEAD` of the repository `cwd` is in: the nearest directory at or above it (at most
/// 64 levels) holding `.git` — a directory, or a `gitdir:` file — and that git directory's
/// `HEAD`. `None` when there is none or it cannot be read.
pub fn git_head(cwd: &Path) -> Option<GitHead> {
    for dir in cwd.ancestors().take(MAX_LEVELS) {
        let dot_git = dir.join(".git");
        let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
            continue;
        };
        let git_dir = if meta.is_file() {
            gitdir_of(&dot_git)?
        } else {
            // A directory, or a link to one (the `HEAD` inside is still not followed).
            dot_git
        };
        return parse_head(&read_small(&git_dir.join("HEAD"))?);
    }
    None
}

/// `header` of a session being created, recording the branch its cwd's repository is on
/// now (docs/session-store.md: the header): the branch a session was recorded on is the
/// one it was created on, kept in its log, never looked up again. A detached `HEAD`, no
/// repository, no cwd or a branch already recorded leave the header as it is. It reads a
/// few small files (see [`git_head`]): call it where the session is created, off the UI
/// thread.
pub fn record_branch(header: dsh_store::SessionHeader) -> dsh_store::SessionHeader {
    if header.branch.is_some() {
        return header;
    }
    let branch = header
        .cwd
        .as_deref()
        .and_then(|cwd| git_head(Path::new(cwd)))
        .and_then(|head| match head {
            GitHead::Branch(name) => Some(name),
            GitHead::Detached(_) => None,
        });
    header.with_branch(branch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn a_new_session_records_the_branch_its_cwd_is_on_and_keeps_it() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        fs::create_dir_all(repo.join(".git")).unwrap();
        fs::create_dir_all(repo.join("src/deep")).unwrap();
        fs::write(repo.join(".git/HEAD"), "ref: refs/heads/feature/x\n").unwrap();
        let cwd = repo.join("src/deep").to_string_lossy().into_owned();
        let header = |cwd: Option<String>| dsh_store::SessionHeader::new("s", 1, cwd);
        let made = record_branch(header(Some(cwd.clone())));
        assert_eq!(made.branch.as_deref(), Some("feature/x"));
        // The checkout moves: what was recorded stays.
        fs::write(repo.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        assert_eq!(record_branch(made).branch.as_deref(), Some("feature/x"));
        // Detached, no repository, no cwd: nothing recorded.
        fs::write(
            repo.join(".git/HEAD"),
            "0123456789abcdef0123456789abcdef01234567\n",
        )
        .unwrap();
        assert_eq!(record_branch(header(Some(cwd))).branch, None);
        let bare = dir.path().join("plain");
        fs::create_dir_all(&bare).unwrap();
        assert_eq!(
            record_branch(header(Some(bare.to_string_lossy().into_owned()))).branch,
            None
        );
        assert_eq!(record_branch(header(None)).branch, None);
    }

    #[test]
    fn head_texts() {
        let sha = "0123456789abcdef0123456789abcdef01234567";
        let cases: Vec<(String, Option<GitHead>)> = vec![
            (
                "ref: refs/heads/main\n".into(),
                Some(GitHead::Branch("main".into())),
            ),
            (
                "ref:refs/heads/feat/x-1".into(),
                Some(GitHead::Branch("feat/x-1".into())),
            ),
            (
                "ref: refs/remotes/o/y\n".into(),
                Some(GitHead::Branch("remotes/o/y".into())),
            ),
            (
                format!("{sha}\n"),
                Some(GitHead::Detached("0123456".into())),
            ),
            (
                sha.to_uppercase(),
                Some(GitHead::Detached("0123456".into())),
            ),
            (
                format!("{sha}{}", &sha[..24]),
                Some(GitHead::Detached("0123456".into())),
            ),
            ("ref: refs/heads/\n".into(), None),
            ("ref: refs/heads/a\u{1b}[2Jb".into(), None),
            (format!("ref: refs/heads/{}", "x".repeat(256)), None),
            ("0123".into(), None),
            (String::new(), None),
            ("garbage".into(), None),
        ];
        for (text, want) in cases {
            assert_eq!(parse_head(&text), want, "{text:?}");
        }
    }

    #[test]
    fn repositories_worktrees_and_subdirectories() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        fs::create_dir_all(repo.join(".git/worktrees/wt")).unwrap();
        fs::create_dir_all(repo.join("src/deep")).unwrap();
        fs::write(repo.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        assert_eq!(git_head(&repo), Some(GitHead::Branch("main".into())));
        assert_eq!(
            git_head(&repo.join("src/deep")),
            Some(GitHead::Branch("main".into())),
            "from a subdirectory"
        );
        // A worktree: `.git` is a file naming its git directory, relative or absolute.
        let wt = tmp.path().join("wt");
        fs::create_dir_all(&wt).unwrap();
        fs::write(
            repo.join(".git/worktrees/wt/HEAD"),
            "4b825dc642cb6eb9a060e54bf8d69288fbee4904\n",
        )
        .unwrap();
        fs::write(wt.join(".git"), "gitdir: ../repo/.git/worktrees/wt\n").unwrap();
        assert_eq!(git_head(&wt), Some(GitHead::Detached("4b825dc".into())));
        let absolute = format!("gitdir: {}\n", repo.join(".git/worktrees/wt").display());
        fs::write(wt.join(".git"), absolute).unwrap();
        assert_eq!(
            git_head(&wt).map(|h| h.label()),
            Some("detached 4b825dc".into())
        );
        // Not a repository; a `gitdir:` pointing nowhere; a `.git` file of garbage.
        let plain = tmp.path().join("plain");
        fs::create_dir_all(&plain).unwrap();
        assert_eq!(git_head(&plain), None);
        fs::write(wt.join(".git"), "gitdir: nowhere\n").unwrap();
        assert_eq!(git_head(&wt), None);
        fs::write(wt.join(".git"), "x".repeat(10_000)).unwrap();
        assert_eq!(git_head(&wt), None);
    }

    /// A `HEAD` that is a FIFO, a link or a huge file is never waited for nor read whole.
    #[cfg(unix)]
    #[test]
    fn hostile_head_files_are_refused_without_blocking() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        fs::create_dir_all(repo.join(".git")).unwrap();
        let head = repo.join(".git/HEAD");
        let made = std::process::Command::new("mkfifo").arg(&head).status();
        if made.is_ok_and(|s| s.success()) {
            assert_eq!(git_head(&repo), None, "a FIFO");
            fs::remove_file(&head).unwrap();
        }
        let real = tmp.path().join("real-head");
        fs::write(&real, "ref: refs/heads/linked\n").unwrap();
        std::os::unix::fs::symlink(&real, &head).unwrap();
        assert_eq!(git_head(&repo), None, "a link");
        fs::remove_file(&head).unwrap();
        let mut big = "ref: refs/heads/big\n".to_owned();
        big.push_str(&"x".repeat(1 << 20));
        fs::write(&head, big).unwrap();
        assert_eq!(
            git_head(&repo),
            Some(GitHead::Branch("big".into())),
            "only the first 4 KiB are read"
        );
    }
}
