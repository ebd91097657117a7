//! The one-line notice for a session whose log an earlier version wrote against dsh's rules
//! (docs/session-store.md: the rule book). The log is left as it is; new events follow the
//! rules. Shown once when the session is opened (the app's transcript, `send`'s stderr).

use dsh_store::Findings;

/// The warning code of the notice.
pub const CODE: &str = "SESSION_LOG_OUTDATED";

/// The notice for `session_id`'s log, or `None` when it follows every rule.
pub fn inherited_notice(session_id: &str, findings: &Findings) -> Option<String> {
    if findings.is_empty() {
        return None;
    }
    Some(format!(
        "{}: an earlier version wrote it; new events follow the rules · dsh-refs check \
         --session {session_id}",
        findings.one_line()
    ))
}
