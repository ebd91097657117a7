//! The one-line notice for a session whose log breaks dsh's rules as it was found
//! (docs/session-store.md: the rule book): it names the dsh versions whose rules it breaks,
//! never who wrote it — a log dsh 0.1.0-rc.8 wrote breaks rules of 6816e8a3d5, an older
//! one rules of rc.8. The log is left as it is; new events follow the rules of both. Shown
//! once when the session is opened (the app's transcript, `send`'s stderr).

use dsh_store::Findings;

/// The warning code of the notice.
pub const CODE: &str = "SESSION_LOG_OUTDATED";

/// The notice for `session_id`'s log, or `None` when it follows every rule.
pub fn inherited_notice(session_id: &str, findings: &Findings) -> Option<String> {
    if findings.is_empty() {
        return None;
    }
    Some(format!(
        "{}; it is left as it is, and new events follow the rules of both versions · \
         dsh-refs check --session {session_id}",
        findings.one_line()
    ))
}
