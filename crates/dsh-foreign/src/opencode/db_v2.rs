//! OpenCode 2.x's messages (docs/foreign-sources.md, OpenCode): the table `session_message
//! (id, session_id, type, seq, time_created, time_updated, data)`, one row per message, `type`
//! saying what it is and `data` its JSON without `type` and `id` (OpenCode's
//! `SessionMessage`, `packages/core/src/session-message.ts`):
//!
//! - `user` `{text, files, agents, references, time}`: what the person sent;
//! - `assistant` `{agent, model, content: [{type: text, text, ignored?, synthetic?} |
//!   {type: reasoning} | {type: tool, …}], finish?, error?, time}`;
//! - `compaction` `{reason, summary, include?}`: the summary that stands for what came
//!   before;
//! - `shell` `{callID, command, output}`: a command the person ran with `!`;
//! - `synthetic` (text OpenCode adds itself), `agent-switched`, `model-switched`, `idle`,
//!   and any type a later version adds: nothing to show.
//!
//! Messages are in `seq` order (`time_created`, then id, where an early 2.x table has no
//! `seq`). Only the text shown is taken out of the JSON, measured by SQLite before it is
//! loaded: a text longer than the line limit is reported, never read.

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::db::{TooLong, has_table};
use super::items::Step;
use crate::surface_events::ItemKind;

/// One 2.x message as it is shown: its id, time and what it does to the surface (a
/// compaction keeps nothing of what came before it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct V2Message {
    pub id: String,
    pub time: i64,
    pub step: Step,
}

/// The shown text of a row, by its type, as one SQL expression over `data` (`NULL` when
/// there is none): a user's text, a reply's text parts (not `ignored`, not `synthetic`)
/// joined with `\n`, a compaction's summary, `!` and a shell command.
const SHOWN: &str = "CASE CAST(type AS TEXT) \
    WHEN 'user' THEN CASE WHEN json_type(data, '$.text') = 'text' \
      THEN json_extract(data, '$.text') END \
    WHEN 'compaction' THEN CASE WHEN json_type(data, '$.summary') = 'text' \
      THEN json_extract(data, '$.summary') END \
    WHEN 'shell' THEN CASE WHEN json_type(data, '$.command') = 'text' \
      THEN '!' || json_extract(data, '$.command') END \
    WHEN 'assistant' THEN (SELECT group_concat(json_extract(c.value, '$.text'), char(10)) \
      FROM json_each(data, '$.content') AS c \
      WHERE json_extract(c.value, '$.type') = 'text' \
        AND json_type(c.value, '$.text') = 'text' \
        AND coalesce(json_type(c.value, '$.ignored'), 'false') <> 'true' \
        AND coalesce(json_type(c.value, '$.synthetic'), 'false') <> 'true') \
    END";

/// The row's columns: rowid, id, type, time, the shown text when within `?2` bytes, its
/// length; in the session's order (`seq` when the table has it, else time and id).
fn select(where_clause: &str, has_seq: bool) -> String {
    let seq = if has_seq { "seq" } else { "0" };
    format!(
        "SELECT r, i, k, t, CASE WHEN length(CAST(x AS BLOB)) <= ?2 THEN x END, \
           length(CAST(x AS BLOB)) FROM (SELECT rowid AS r, CAST(id AS TEXT) AS i, \
           CAST(type AS TEXT) AS k, CAST(time_created AS INTEGER) AS t, {seq} AS s, \
           CASE WHEN json_valid(data) THEN {SHOWN} END AS x \
           FROM session_message WHERE {where_clause}) ORDER BY s, t, i"
    )
}

/// A row, or the text that was too long to read.
fn message_of(r: &Row<'_>) -> rusqlite::Result<Result<(i64, V2Message), TooLong>> {
    let rowid: i64 = r.get(0)?;
    let id = r.get::<_, Option<String>>(1)?.unwrap_or_default();
    let kind = r.get::<_, Option<String>>(2)?.unwrap_or_default();
    let time = r.get::<_, Option<i64>>(3)?.unwrap_or(0);
    let text: Option<String> = r.get(4)?;
    let len: Option<i64> = r.get(5)?;
    if text.is_none()
        && let Some(len) = len
    {
        return Ok(Err(TooLong {
            part: id,
            len: u64::try_from(len).unwrap_or(0),
        }));
    }
    let text = text.filter(|t| !t.trim().is_empty());
    let step = match (kind.as_str(), text) {
        ("user" | "shell", Some(t)) => Step::Show(ItemKind::User, t),
        ("assistant", Some(t)) => Step::Show(ItemKind::Assistant, t),
        ("compaction", Some(text)) => Step::Compact {
            keep_from: None,
            text,
        },
        _ => Step::Nothing,
    };
    Ok(Ok((rowid, V2Message { id, time, step })))
}

/// Whether session `id` has 2.x messages (then they are its conversation).
pub fn has_messages(conn: &Connection, id: &str) -> rusqlite::Result<bool> {
    if !has_table(conn, "session_message")? {
        return Ok(false);
    }
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM session_message WHERE session_id = ?1)",
        params![id],
        |r| r.get::<_, bool>(0),
    )
}

/// Whether the table numbers a session's messages (`seq`; an early 2.x table has none).
fn has_seq(conn: &Connection) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT count(*) FROM pragma_table_info('session_message') WHERE name = 'seq'",
        [],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
}

/// Call `each` with every 2.x message of session `id` in order (its rowid, the message or
/// the text too long to read), as long as it returns `Ok(true)`; a database error is
/// turned into `E` by `fail`.
pub fn for_each_message<E>(
    conn: &Connection,
    id: &str,
    max_text: u64,
    fail: &dyn Fn(rusqlite::Error) -> E,
    each: &mut dyn FnMut(i64, Result<V2Message, TooLong>) -> Result<bool, E>,
) -> Result<(), E> {
    let sql = select("session_id = ?1", has_seq(conn).map_err(fail)?);
    let mut stmt = conn.prepare(&sql).map_err(fail)?;
    let max = i64::try_from(max_text).unwrap_or(i64::MAX);
    let mut rows = stmt.query(params![id, max]).map_err(fail)?;
    while let Some(row) = rows.next().map_err(fail)? {
        let (rowid, message) = match message_of(row).map_err(fail)? {
            Ok((rowid, m)) => (rowid, Ok(m)),
            Err(too_long) => (0, Err(too_long)),
        };
        if !each(rowid, message)? {
            break;
        }
    }
    Ok(())
}

/// The 2.x message at `rowid`.
pub fn message(
    conn: &Connection,
    rowid: i64,
    max_text: u64,
) -> rusqlite::Result<Option<Result<V2Message, TooLong>>> {
    let max = i64::try_from(max_text).unwrap_or(i64::MAX);
    let sql = select("rowid = ?1", has_seq(conn)?);
    conn.query_row(&sql, params![rowid, max], |r| {
        message_of(r).map(|m| m.map(|(_, m)| m))
    })
    .optional()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::unwrap_used)] // test code
    fn message_types_table() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE session_message (id text PRIMARY KEY, session_id text NOT NULL, \
             type text NOT NULL, seq integer NOT NULL, time_created integer NOT NULL, \
             time_updated integer NOT NULL, data text NOT NULL);",
        )
        .unwrap();
        let rows: &[(&str, i64, &str, &str)] = &[
            (
                "m9",
                9,
                "assistant",
                r#"{"content":[{"type":"text","text":"late"}]}"#,
            ),
            ("m1", 1, "user", r#"{"text":"Fix the login","files":[]}"#),
            (
                "m2",
                2,
                "synthetic",
                r#"{"sessionID":"s","text":"SYNTHETIC"}"#,
            ),
            (
                "m3",
                3,
                "assistant",
                r#"{"content":[{"type":"reasoning","id":"r","text":"THINK"},{"type":"text","text":"Fixed."},{"type":"text","text":"IGNORED","ignored":true},{"type":"text","text":"SYNTH","synthetic":true},{"type":"tool","id":"t","name":"x","state":{"status":"completed","input":{},"content":[{"type":"text","text":"TOOL"}]}}]}"#,
            ),
            (
                "m4",
                4,
                "shell",
                r#"{"callID":"c","command":"ls -la","output":"OUT"}"#,
            ),
            (
                "m5",
                5,
                "compaction",
                r#"{"reason":"auto","summary":"So far: login fixed"}"#,
            ),
            ("m6", 6, "agent-switched", r#"{"agent":"plan"}"#),
            (
                "m7",
                7,
                "user",
                &format!(r#"{{"text":"{}"}}"#, "x".repeat(100)),
            ),
            ("m8", 8, "user", "not json"),
        ];
        for (id, seq, kind, data) in rows {
            conn.execute(
                "INSERT INTO session_message VALUES (?1, 's', ?2, ?3, ?3, ?3, ?4)",
                params![id, kind, seq, data],
            )
            .unwrap();
        }
        let mut got = Vec::new();
        for_each_message(&conn, "s", 50, &|e| e, &mut |_, m| {
            got.push(match m {
                Ok(m) => format!("{} {:?}", m.id, m.step),
                Err(t) => format!("{} too long {}", t.part, t.len),
            });
            Ok(true)
        })
        .unwrap();
        assert_eq!(
            got,
            [
                "m1 Show(User, \"Fix the login\")",
                "m2 Nothing",
                "m3 Show(Assistant, \"Fixed.\")",
                "m4 Show(User, \"!ls -la\")",
                "m5 Compact { keep_from: None, text: \"So far: login fixed\" }",
                "m6 Nothing",
                "m7 too long 100",
                "m8 Nothing",
                "m9 Show(Assistant, \"late\")",
            ]
        );
        assert!(has_messages(&conn, "s").unwrap());
        assert!(!has_messages(&conn, "other").unwrap());
    }
}
