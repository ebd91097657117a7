//! Reading what dsh writes beyond plain JSONL (docs/session-store.md: on-disk layout): `session.jsonl.zstd` logs made
//! of concatenated zstd frames, and packed chunk rows.
//!
//! A packed row stores a run of `assistant/chunk` delta events in one line:
//! `{"type":"text-chunks"|"reasoning-chunks"|"tool-call-chunks","seq0","time0","data":{...}}`
//! with `data = {turn, step, index, dt, texts}` (tool calls: `{turn, step, index, dt, id,
//! name?, args}`). Member k is the event `assistant/chunk` with seq `seq0 + k`, time
//! `time0 + dt[0] + … + dt[k-1]` (`dt` holds the gaps between neighbours, one fewer than the
//! members) and chunk `{type:"text-delta"|"reasoning-delta", index, text}` or
//! `{type:"tool-call-delta", index, id, name?, argumentsDelta}`. A malformed row is an
//! unparsable line, never silently dropped.

use std::io::{self, Read};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::event::{Event, EventData};

/// The packed row types.
pub const PACKED_ROW_TYPES: [&str; 3] = ["text-chunks", "reasoning-chunks", "tool-call-chunks"];

/// Whether a line's `type` is a packed chunk row.
pub fn is_packed_row(kind: &str) -> bool {
    PACKED_ROW_TYPES.contains(&kind)
}

/// Expand one packed row into its `assistant/chunk` events.
pub fn expand_packed_row(
    kind: &str,
    seq0: Option<u64>,
    time0: Option<i64>,
    data: &Value,
) -> Result<Vec<Event>, String> {
    let seq0 = seq0.ok_or_else(|| format!("{kind} row without integer seq0"))?;
    let time0 = time0.ok_or_else(|| format!("{kind} row without integer time0"))?;
    let data = data
        .as_object()
        .ok_or_else(|| format!("{kind} row data is not an object"))?;
    let int = |key: &str| {
        data.get(key)
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("{kind} row without integer data.{key}"))
    };
    let turn = int("turn")?;
    let step = int("step")?;
    let index = data
        .get("index")
        .cloned()
        .ok_or_else(|| format!("{kind} row without data.index"))?;
    let members_key = if kind == "tool-call-chunks" {
        "args"
    } else {
        "texts"
    };
    let members: Vec<&str> = data
        .get(members_key)
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{kind} row without data.{members_key} array"))?
        .iter()
        .map(|m| {
            m.as_str()
                .ok_or_else(|| format!("{kind} row member is not a string"))
        })
        .collect::<Result<_, _>>()?;
    if members.is_empty() {
        return Err(format!("{kind} row has no members"));
    }
    let gaps: Vec<i64> = match data.get("dt") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|d| {
                d.as_i64()
                    .ok_or_else(|| format!("{kind} row dt entry is not an integer"))
            })
            .collect::<Result<_, _>>()?,
        _ => return Err(format!("{kind} row without data.dt array")),
    };
    if gaps.len() + 1 != members.len() {
        return Err(format!(
            "{kind} row has {} members but {} dt gaps",
            members.len(),
            gaps.len()
        ));
    }
    let tool = if kind == "tool-call-chunks" {
        let id = data
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{kind} row without string data.id"))?;
        let name = match data.get("name") {
            None => None,
            Some(Value::String(n)) => Some(n.as_str()),
            Some(_) => return Err(format!("{kind} row data.name is not a string")),
        };
        Some((id, name))
    } else {
        None
    };
    let delta_type = match kind {
        "text-chunks" => "text-delta",
        "reasoning-chunks" => "reasoning-delta",
        _ => "tool-call-delta",
    };
    let mut events = Vec::with_capacity(members.len());
    let mut time = time0;
    for (k, member) in members.into_iter().enumerate() {
        if k > 0 {
            let gap = gaps.get(k - 1).copied().unwrap_or(0);
            time = time
                .checked_add(gap)
                .ok_or_else(|| format!("{kind} row time overflows"))?;
        }
        let seq = u64::try_from(k)
            .ok()
            .and_then(|k| seq0.checked_add(k))
            .ok_or_else(|| format!("{kind} row seq overflows"))?;
        let mut chunk = Map::new();
        chunk.insert("type".into(), Value::String(delta_type.into()));
        chunk.insert("index".into(), index.clone());
        match tool {
            Some((id, name)) => {
                chunk.insert("id".into(), Value::String(id.into()));
                if let Some(name) = name {
                    chunk.insert("name".into(), Value::String(name.into()));
                }
                chunk.insert("argumentsDelta".into(), Value::String(member.into()));
            }
            None => {
                chunk.insert("text".into(), Value::String(member.into()));
            }
        }
        events.push(Event {
            seq,
            time,
            data: EventData::AssistantChunk {
                turn,
                step,
                chunk: Value::Object(chunk),
                extra: Map::new(),
            },
            surface_op: None,
            source_event_seqs: None,
        });
    }
    Ok(events)
}

/// Decoder of one frame of a shared in-memory `.zstd` log.
type FrameDecoder =
    zstd::stream::read::Decoder<'static, io::BufReader<io::Take<io::Cursor<Arc<[u8]>>>>>;

/// A reader over the concatenated zstd frames of a whole `.zstd` log held in memory.
///
/// Frame boundaries are found up front: a truncated final frame (a torn write) simply ends
/// the stream, so its partial line becomes a torn tail; a complete frame that fails to
/// decode is an `InvalidData` error (corruption) unless it is the last one.
pub struct ZstdFrames {
    data: Arc<[u8]>,
    frames: Vec<(usize, usize)>,
    next_frame: usize,
    current: Option<FrameDecoder>,
}

impl ZstdFrames {
    /// Split `data` into its complete frames.
    pub fn new(data: Vec<u8>) -> Self {
        let data: Arc<[u8]> = data.into();
        let mut frames = Vec::new();
        let mut at = 0usize;
        while let Some(rest) = data.get(at..) {
            if rest.is_empty() {
                break;
            }
            match zstd::zstd_safe::find_frame_compressed_size(rest) {
                Ok(size) if size > 0 && size <= rest.len() => {
                    frames.push((at, at + size));
                    at += size;
                }
                _ => break,
            }
        }
        ZstdFrames {
            data,
            frames,
            next_frame: 0,
            current: None,
        }
    }

    fn open_next(&mut self) -> io::Result<bool> {
        let Some(&(start, end)) = self.frames.get(self.next_frame) else {
            return Ok(false);
        };
        self.next_frame += 1;
        let mut cursor = io::Cursor::new(Arc::clone(&self.data));
        cursor.set_position(start as u64);
        let decoder = zstd::stream::read::Decoder::new(cursor.take((end - start) as u64))?;
        self.current = Some(decoder.single_frame());
        Ok(true)
    }
}

impl Read for ZstdFrames {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            let Some(decoder) = self.current.as_mut() else {
                if !self.open_next()? {
                    return Ok(0);
                }
                continue;
            };
            match decoder.read(buf) {
                Ok(0) => self.current = None,
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let last = self.next_frame >= self.frames.len();
                    self.current = None;
                    if last {
                        // A damaged final frame is a torn tail: end the stream here.
                        self.next_frame = self.frames.len();
                        return Ok(0);
                    }
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("zstd frame {} cannot be decoded: {e}", self.next_frame),
                    ));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn chunk_line(ev: &Event) -> Value {
        serde_json::to_value(ev).unwrap()
    }

    #[test]
    fn text_row_expands_to_chunks_with_times() {
        let data = json!({"turn":1,"step":2,"index":0,"dt":[3,-1],"texts":["a","b","c"]});
        let events = expand_packed_row("text-chunks", Some(5), Some(100), &data).unwrap();
        let got: Vec<Value> = events.iter().map(chunk_line).collect();
        assert_eq!(
            got,
            vec![
                json!({"type":"assistant/chunk","seq":5,"time":100,"data":{"turn":1,"step":2,"chunk":{"type":"text-delta","index":0,"text":"a"}}}),
                json!({"type":"assistant/chunk","seq":6,"time":103,"data":{"turn":1,"step":2,"chunk":{"type":"text-delta","index":0,"text":"b"}}}),
                json!({"type":"assistant/chunk","seq":7,"time":102,"data":{"turn":1,"step":2,"chunk":{"type":"text-delta","index":0,"text":"c"}}}),
            ]
        );
    }

    #[test]
    fn reasoning_and_tool_rows_expand() {
        let data = json!({"turn":1,"step":1,"index":1,"dt":[1],"texts":["why ","now"]});
        let events = expand_packed_row("reasoning-chunks", Some(0), Some(10), &data).unwrap();
        assert_eq!(
            chunk_line(&events[1])["data"]["chunk"],
            json!({"type":"reasoning-delta","index":1,"text":"now"})
        );
        let data = json!({"turn":1,"step":1,"index":2,"dt":[1],"id":"call-2","name":"bash","args":["{\"c\"",":1}"]});
        let events = expand_packed_row("tool-call-chunks", Some(9), Some(14), &data).unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(events[1].seq, 10);
        assert_eq!(events[1].time, 15);
        assert_eq!(
            chunk_line(&events[0])["data"]["chunk"],
            json!({"type":"tool-call-delta","index":2,"id":"call-2","name":"bash","argumentsDelta":"{\"c\""})
        );
        let data = json!({"turn":1,"step":1,"index":2,"dt":[],"id":"c","args":["x"]});
        let events = expand_packed_row("tool-call-chunks", Some(0), Some(0), &data).unwrap();
        assert_eq!(
            chunk_line(&events[0])["data"]["chunk"],
            json!({"type":"tool-call-delta","index":2,"id":"c","argumentsDelta":"x"})
        );
    }

    #[test]
    fn malformed_rows_are_errors() {
        let good = json!({"turn":1,"step":1,"index":0,"dt":[1],"texts":["a","b"]});
        assert!(expand_packed_row("text-chunks", None, Some(0), &good).is_err());
        assert!(expand_packed_row("text-chunks", Some(0), None, &good).is_err());
        for bad in [
            json!({"turn":1,"step":1,"index":0,"dt":[],"texts":["a","b"]}),
            json!({"turn":1,"step":1,"index":0,"dt":[1],"texts":["a",2]}),
            json!({"turn":1,"step":1,"index":0,"texts":["a"]}),
            json!({"turn":1,"step":1,"index":0,"dt":[],"texts":[]}),
            json!({"step":1,"index":0,"dt":[],"texts":["a"]}),
            json!("nope"),
        ] {
            assert!(
                expand_packed_row("text-chunks", Some(0), Some(0), &bad).is_err(),
                "{bad}"
            );
        }
        let no_id = json!({"turn":1,"step":1,"index":0,"dt":[],"args":["a"]});
        assert!(expand_packed_row("tool-call-chunks", Some(0), Some(0), &no_id).is_err());
    }

    #[test]
    fn zstd_frames_concatenate_and_torn_final_frame_ends_stream() {
        let a = zstd::encode_all(&b"line one\n"[..], 3).unwrap();
        let b = zstd::encode_all(&b"line two\n"[..], 3).unwrap();
        let mut all = a.clone();
        all.extend_from_slice(&b);
        let mut out = String::new();
        ZstdFrames::new(all.clone())
            .read_to_string(&mut out)
            .unwrap();
        assert_eq!(out, "line one\nline two\n");

        let mut torn = all.clone();
        torn.truncate(a.len() + b.len() / 2);
        let mut out = String::new();
        ZstdFrames::new(torn).read_to_string(&mut out).unwrap();
        assert_eq!(out, "line one\n");

        // A complete frame that fails its checksum, followed by a good one, is an error.
        let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        enc.include_checksum(true).unwrap();
        std::io::Write::write_all(&mut enc, b"line one\n").unwrap();
        let mut damaged = enc.finish().unwrap();
        if let Some(last) = damaged.last_mut() {
            *last ^= 0xFF;
        }
        let mut bad = damaged.clone();
        bad.extend_from_slice(&b);
        let err = ZstdFrames::new(bad)
            .read_to_end(&mut Vec::new())
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        // The same damaged frame at the very end is a torn tail: the stream just ends.
        let mut tail = a.clone();
        tail.extend_from_slice(&damaged);
        let mut out = Vec::new();
        ZstdFrames::new(tail).read_to_end(&mut out).unwrap();
        assert!(out.starts_with(b"line one\n"));
    }
}
