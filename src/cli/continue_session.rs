//! `dsh-refs --continue` (docs/cli.md): the chat app on the dsh session of the current
//! directory that was active last — the last one no other window writes to, or the busy one
//! read-only.

use dsh_store::activity::most_recent_first;
use dsh_store::{QueryError, SessionQuery, SessionStore};

use super::CliError;

/// The dsh sessions whose header cwd is `cwd`, the one active last first: by its log's last
/// event (a session without one by its creation time; equal times in dsh's order). Only the
/// dsh store is asked — other tools' sessions are read-only and never continued. A session
/// whose log is gone since the listing is passed over; a damaged one is not (opening it
/// then says what is wrong). Empty when the directory has no session.
pub fn recent_in(store: &SessionStore, cwd: &str) -> Result<Vec<String>, QueryError> {
    let sessions = store.list_sessions()?;
    let mut found = Vec::new();
    for header in sessions.iter().filter(|h| h.cwd.as_deref() == Some(cwd)) {
        let last = match store.read_summary(&header.id) {
            Ok(summary) => summary.last_active_ms,
            Err(QueryError::NotFound { .. }) => continue,
            Err(_) => None,
        };
        found.push((header, last));
    }
    found.sort_by(|a, b| most_recent_first(*a, *b));
    Ok(found.into_iter().map(|(h, _)| h.id.clone()).collect())
}

/// The sessions `--continue` may open in the current directory, the one active last
/// first, or the error saying there is none.
pub fn targets(store: &SessionStore) -> Result<Vec<String>, CliError> {
    let cwd = std::env::current_dir()
        .map_err(|e| CliError::io("cannot read the current directory", e))?
        .to_string_lossy()
        .into_owned();
    let found = recent_in(store, &cwd).map_err(CliError::List)?;
    if found.is_empty() {
        return Err(CliError::NothingToContinue { cwd });
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_store::SessionHeader;
    use std::fs;

    fn write(root: &std::path::Path, id: &str, cwd: &str, created: i64, times: &[i64]) {
        let dir = dsh_store::paths::session_dir(root, Some(cwd), id).unwrap();
        fs::create_dir_all(&dir).unwrap();
        let header = SessionHeader::new(id, created, Some(cwd.to_owned()));
        let mut text = serde_json::to_string(&header).unwrap() + "\n";
        for (seq, time) in times.iter().enumerate() {
            let line = serde_json::json!({"type": "turn/start", "seq": seq, "time": time,
                "data": {"turn": 1, "trigger": {"kind": "user"}}});
            text.push_str(&line.to_string());
            text.push('\n');
        }
        fs::write(dir.join("session.jsonl"), text).unwrap();
    }

    fn latest_in(store: &SessionStore, cwd: &str) -> Result<Option<String>, QueryError> {
        Ok(recent_in(store, cwd)?.into_iter().next())
    }

    #[test]
    fn the_most_recently_active_session_of_the_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let store = SessionStore::new(root);
        assert_eq!(latest_in(&store, "/w").unwrap(), None, "no store yet");
        write(root, "old-but-active", "/w", 1, &[2, 900]);
        write(root, "newest-created", "/w", 50, &[60]);
        write(root, "empty", "/w", 70, &[]);
        write(root, "elsewhere", "/other", 80, &[5_000]);
        assert_eq!(
            latest_in(&store, "/w").unwrap().as_deref(),
            Some("old-but-active")
        );
        assert_eq!(
            latest_in(&store, "/other").unwrap().as_deref(),
            Some("elsewhere")
        );
        assert_eq!(
            latest_in(&store, "/w/sub").unwrap(),
            None,
            "not a prefix match"
        );
        // Equal times: dsh's order (newest created first).
        write(root, "tie", "/t", 1, &[100]);
        write(root, "tie-newer", "/t", 2, &[100]);
        assert_eq!(
            latest_in(&store, "/t").unwrap().as_deref(),
            Some("tie-newer")
        );
        // Without events, the creation time counts.
        write(root, "bare", "/b", 10, &[]);
        write(root, "bare-newer", "/b", 20, &[]);
        write(root, "bare-active", "/b", 5, &[15]);
        assert_eq!(
            latest_in(&store, "/b").unwrap().as_deref(),
            Some("bare-newer")
        );
        // Every session of the directory, the one active last first.
        assert_eq!(
            recent_in(&store, "/w").unwrap(),
            ["old-but-active", "empty", "newest-created"]
        );
    }
}
