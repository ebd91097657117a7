//! OpenCode's database (docs/foreign-sources.md, OpenCode). From 1.2: tables `session (id,
//! parent_id, directory, title, time_created, time_updated, …)`, `message (id, session_id,
//! time_created, time_updated, data)` and `part (id, message_id, session_id, time_created,
//! time_updated, data)`, `data` being the message's or part's JSON. OpenCode 2.x keeps its
//! sessions in `session_v2` (the same columns, `title` nullable) and their messages in
//! `session_message` ([`super::db_v2`]); an upgraded database may hold both, a session in
//! both under the same id (2.x backfills it, or renamed `session` to `session_v2`). Only the
//! fields shown are taken out of the JSON (SQLite's `json_extract`), so a tool output is
//! never loaded here, and a text longer than the line limit is reported, not read.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::items::{MessageInfo, PartInfo};

/// A listed session.
#[derive(Debug, Clone)]
pub struct SessionRow {
    pub id: String,
    pub directory: Option<String>,
    pub title: Option<String>,
    pub created: i64,
    /// When OpenCode last changed the row (which of two rows of one session is newer).
    pub updated: i64,
    /// The row is 2.x's (`session_v2`).
    pub v2: bool,
}

/// The session tables this database has, oldest layout first.
fn session_tables(conn: &Connection) -> rusqlite::Result<Vec<(&'static str, bool)>> {
    let mut out = Vec::new();
    for (table, v2) in [("session", false), ("session_v2", true)] {
        if has_table(conn, table)? {
            out.push((table, v2));
        }
    }
    Ok(out)
}

/// Whether `table` exists.
pub fn has_table(conn: &Connection, table: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
        params![table],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
}

fn session_select(table: &str) -> String {
    format!(
        "SELECT CAST(id AS TEXT), CAST(directory AS TEXT), CAST(title AS TEXT), \
         CAST(time_created AS INTEGER), CAST(time_updated AS INTEGER) FROM {table}"
    )
}

/// Sessions that are not another session's child (a sub-agent's), from every session table:
/// a session in two tables once, from the row OpenCode changed last (2.x's on a tie).
pub fn sessions(conn: &Connection) -> rusqlite::Result<Vec<SessionRow>> {
    let mut by_id: HashMap<String, SessionRow> = HashMap::new();
    for (table, v2) in session_tables(conn)? {
        let mut stmt = conn.prepare(&format!(
            "{} WHERE parent_id IS NULL OR CAST(parent_id AS TEXT) = ''",
            session_select(table)
        ))?;
        let rows = stmt.query_map([], |r| session_of(r, v2))?;
        for row in rows {
            let row = row?;
            match by_id.get(&row.id) {
                Some(old) if (old.updated, old.v2) >= (row.updated, row.v2) => {}
                _ => {
                    by_id.insert(row.id.clone(), row);
                }
            }
        }
    }
    Ok(by_id.into_values().collect())
}

fn session_of(r: &Row<'_>, v2: bool) -> rusqlite::Result<SessionRow> {
    Ok(SessionRow {
        id: r.get::<_, Option<String>>(0)?.unwrap_or_default(),
        directory: r.get(1)?,
        title: r.get(2)?,
        created: r.get::<_, Option<i64>>(3)?.unwrap_or(0),
        updated: r.get::<_, Option<i64>>(4)?.unwrap_or(0),
        v2,
    })
}

/// Per session: (messages + parts, newest `time_updated` of either) — what changes
/// whenever its conversation does — over every message table this database has.
pub fn fingerprints(conn: &Connection) -> rusqlite::Result<HashMap<String, (u64, i64)>> {
    let mut out: HashMap<String, (u64, i64)> = HashMap::new();
    for table in ["message", "part", "session_message"] {
        if !has_table(conn, table)? {
            continue;
        }
        let mut stmt = conn.prepare(&format!(
            "SELECT CAST(session_id AS TEXT), count(*), CAST(max(time_updated) AS INTEGER) \
             FROM {table} GROUP BY session_id"
        ))?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, Option<String>>(0)?.unwrap_or_default(),
                r.get::<_, i64>(1)?,
                r.get::<_, Option<i64>>(2)?,
            ))
        })?;
        for row in rows {
            let (id, count, newest) = row?;
            let entry = out.entry(id).or_default();
            entry.0 += u64::try_from(count).unwrap_or(0);
            entry.1 = entry.1.max(newest.unwrap_or(0));
        }
    }
    Ok(out)
}

/// The message columns, each typed by SQL whatever the JSON holds (a field of another
/// type than expected reads as absent, never as an error).
const MESSAGE_COLUMNS: &str = "rowid, CAST(id AS TEXT), CAST(time_created AS INTEGER), \
    CASE WHEN json_type(data, '$.role') = 'text' THEN json_extract(data, '$.role') END, \
    json_type(data, '$.summary') = 'true', \
    (json_type(data, '$.finish') IN ('text', 'integer', 'real', 'true') \
      OR json_type(data, '$.time.completed') IN ('integer', 'real')) \
      AND coalesce(json_type(data, '$.error'), 'null') = 'null', \
    CASE WHEN json_type(data, '$.parentID') = 'text' THEN json_extract(data, '$.parentID') END";

/// A message row: its rowid (stable in one copy) and fields.
fn message_of(r: &Row<'_>) -> rusqlite::Result<(i64, MessageInfo)> {
    Ok((
        r.get(0)?,
        MessageInfo {
            id: r.get::<_, Option<String>>(1)?.unwrap_or_default(),
            time: r.get::<_, Option<i64>>(2)?.unwrap_or(0),
            role: r.get::<_, Option<String>>(3)?.unwrap_or_default(),
            summary: r.get::<_, Option<bool>>(4)?.unwrap_or(false),
            complete: r.get::<_, Option<bool>>(5)?.unwrap_or(false),
            parent_id: r.get(6)?,
        },
    ))
}

/// Call `each` with every message of session `id` in order (creation time, then id), as
/// long as it returns `Ok(true)`; a database error is turned into `E` by `fail`.
pub fn for_each_message<E>(
    conn: &Connection,
    id: &str,
    fail: &dyn Fn(rusqlite::Error) -> E,
    each: &mut dyn FnMut(i64, MessageInfo) -> Result<bool, E>,
) -> Result<(), E> {
    let mut stmt = conn
        .prepare(&format!(
            "SELECT {MESSAGE_COLUMNS} FROM message WHERE session_id = ?1 AND json_valid(data) \
         ORDER BY time_created, id"
        ))
        .map_err(fail)?;
    let mut rows = stmt.query(params![id]).map_err(fail)?;
    while let Some(row) = rows.next().map_err(fail)? {
        let (rowid, info) = message_of(row).map_err(fail)?;
        if !each(rowid, info)? {
            break;
        }
    }
    Ok(())
}

/// The message at `rowid`.
pub fn message(conn: &Connection, rowid: i64) -> rusqlite::Result<Option<MessageInfo>> {
    conn.query_row(
        &format!("SELECT {MESSAGE_COLUMNS} FROM message WHERE rowid = ?1 AND json_valid(data)"),
        params![rowid],
        |r| message_of(r).map(|(_, m)| m),
    )
    .optional()
}

/// A part whose text is longer than the limit.
#[derive(Debug)]
pub struct TooLong {
    pub part: String,
    pub len: u64,
}

/// The `text` and `compaction` parts of message `message_id`, in order; a text longer
/// than `max_text` bytes is an error naming the part.
pub fn parts(
    conn: &Connection,
    message_id: &str,
    max_text: u64,
) -> rusqlite::Result<Result<Vec<PartInfo>, TooLong>> {
    let mut stmt = conn.prepare_cached(
        "SELECT CAST(id AS TEXT), json_extract(data, '$.type'), \
         CASE WHEN json_type(data, '$.text') = 'text' \
           THEN length(CAST(json_extract(data, '$.text') AS BLOB)) END, \
         CASE WHEN json_type(data, '$.text') = 'text' \
           AND length(CAST(json_extract(data, '$.text') AS BLOB)) <= ?2 \
           THEN json_extract(data, '$.text') END, \
         json_type(data, '$.synthetic') = 'true', json_type(data, '$.ignored') = 'true', \
         CASE WHEN json_type(data, '$.tail_start_id') = 'text' \
           THEN json_extract(data, '$.tail_start_id') END \
         FROM part WHERE message_id = ?1 \
         AND (CASE WHEN json_valid(data) THEN json_extract(data, '$.type') END) \
           IN ('text', 'compaction') ORDER BY id",
    )?;
    let max = i64::try_from(max_text).unwrap_or(i64::MAX);
    let mut rows = stmt.query(params![message_id, max])?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        let len: Option<i64> = r.get(2)?;
        if let Some(len) = len.filter(|l| *l > max) {
            return Ok(Err(TooLong {
                part: r.get::<_, Option<String>>(0)?.unwrap_or_default(),
                len: u64::try_from(len).unwrap_or(0),
            }));
        }
        let flag = |i: usize| -> rusqlite::Result<bool> {
            Ok(r.get::<_, Option<bool>>(i)?.unwrap_or(false))
        };
        out.push(PartInfo {
            kind: r.get::<_, Option<String>>(1)?.unwrap_or_default(),
            text: r.get(3)?,
            synthetic: flag(4)?,
            ignored: flag(5)?,
            tail_start_id: r.get(6)?,
        });
    }
    Ok(Ok(out))
}
