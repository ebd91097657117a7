//! The header line `{type:"session", version, id, createdAt, cwd?, …, delegationDepth}`: what
//! each version's JSONL backend accepts as a session header (its header guard), and so
//! what this project may write there.
//!
//! - Both: `type` is `"session"`, `version` a number, `id` a string, `createdAt` and
//!   `delegationDepth` non-negative safe integers. A header either refuses is not a session:
//!   the log is not listed, read or resumed.
//! - 0.1.0-rc.8 also refuses `origin` other than `"subagent"`, an `agentPreset` that is not a
//!   string, and the retired policy keys `sandboxMode` and `approvalPolicy`.
//! - Any other key is read and dropped by both (their header is rebuilt from the keys they
//!   know). That is why the branch a session was recorded on can live in the header as
//!   `gitBranch`: both versions list, read and resume such a log, and a log they write
//!   themselves never has the key.
//!
//! A header is not an event: its violations are reported at seq 0 with a detail that says
//! it is the header line.

use serde_json::Value;

use super::envelope::MAX_SAFE_INTEGER;
use super::{Rule, Versions, Violation};
use crate::event::SessionHeader;

/// The rules `header` breaks, per version.
pub fn check_header(header: &SessionHeader) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut broken = |versions: Versions, why: String| {
        out.push(Violation::new(
            Rule::Header,
            versions,
            0,
            format!("the header line: {why}"),
        ));
    };
    if header.kind != "session" {
        broken(
            Versions::BOTH,
            format!("type {:?} is not \"session\"", header.kind),
        );
    }
    if !(0..=MAX_SAFE_INTEGER).contains(&header.created_at) {
        broken(
            Versions::BOTH,
            format!(
                "createdAt {} is not a non-negative safe integer",
                header.created_at
            ),
        );
    }
    if i64::try_from(header.delegation_depth).map_or(true, |d| d > MAX_SAFE_INTEGER) {
        broken(
            Versions::BOTH,
            format!(
                "delegationDepth {} is not a safe integer",
                header.delegation_depth
            ),
        );
    }
    for retired in ["sandboxMode", "approvalPolicy"] {
        if header.extra.contains_key(retired) {
            broken(
                Versions::RELEASE,
                format!("{retired} is a retired policy field"),
            );
        }
    }
    if let Some(origin) = header.extra.get("origin")
        && origin.as_str() != Some("subagent")
    {
        broken(
            Versions::RELEASE,
            format!("origin {origin} is not \"subagent\""),
        );
    }
    if let Some(preset) = header.extra.get("agentPreset")
        && !matches!(preset, Value::String(_))
    {
        broken(
            Versions::RELEASE,
            format!("agentPreset {preset} is not a string"),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn header(line: Value) -> SessionHeader {
        serde_json::from_value(line).unwrap()
    }

    fn codes(h: &SessionHeader) -> Vec<(String, String)> {
        check_header(h)
            .into_iter()
            .map(|v| (v.versions.to_string(), v.detail))
            .collect()
    }

    #[test]
    fn a_recorded_branch_is_a_key_both_versions_read_and_drop() {
        let ours = SessionHeader::new("s", 1, Some("/work/app".into()))
            .with_branch(Some("feature/x".into()));
        assert_eq!(codes(&ours), Vec::<(String, String)>::new());
        let line = serde_json::to_value(&ours).unwrap();
        assert_eq!(line["gitBranch"], "feature/x");
        assert_eq!(header(line).branch.as_deref(), Some("feature/x"));
        // None recorded: no key at all (dsh's own headers never have one).
        let plain = serde_json::to_value(SessionHeader::new("s", 1, None)).unwrap();
        assert_eq!(plain.get("gitBranch"), None);
        // A branch that is not a string reads as none; the header stays a header.
        let odd = header(
            json!({"type": "session", "version": 0, "id": "s", "createdAt": 1,
            "delegationDepth": 0, "gitBranch": 7}),
        );
        assert_eq!(odd.branch, None);
        assert_eq!(
            SessionHeader::new("s", 1, None)
                .with_branch(Some(" ".into()))
                .branch,
            None
        );
    }

    #[test]
    fn what_each_version_refuses_in_a_header() {
        let rc8 = header(
            json!({"type": "session", "version": 0, "id": "s", "createdAt": 1,
            "delegationDepth": 0, "origin": "other", "agentPreset": 3, "sandboxMode": "x"}),
        );
        assert_eq!(
            codes(&rc8),
            [
                (
                    "0.1.0-rc.8".to_owned(),
                    "the header line: sandboxMode is a retired policy field".to_owned()
                ),
                (
                    "0.1.0-rc.8".to_owned(),
                    "the header line: origin \"other\" is not \"subagent\"".to_owned()
                ),
                (
                    "0.1.0-rc.8".to_owned(),
                    "the header line: agentPreset 3 is not a string".to_owned()
                ),
            ]
        );
        let both = SessionHeader {
            created_at: -1,
            ..SessionHeader::new("s", 0, None)
        };
        assert_eq!(
            codes(&both),
            [(
                "6816e8a3d5 and 0.1.0-rc.8".to_owned(),
                "the header line: createdAt -1 is not a non-negative safe integer".to_owned()
            )]
        );
        let subagent = header(
            json!({"type": "session", "version": 0, "id": "s", "createdAt": 1,
            "delegationDepth": 1, "origin": "subagent", "agentPreset": "code"}),
        );
        assert!(codes(&subagent).is_empty());
    }
}
