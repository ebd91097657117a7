//! Lines too long to load (docs/session-store.md: damage). A complete line longer than
//! `store.max_line_bytes` — written by an earlier version of this project or by dsh, which
//! has no such limit — is skipped without being held, and its event stays in the log as a
//! placeholder: same `seq`, `time`, `surfaceOp` and `sourceEventSeqs`, an
//! [`EventData::Other`] of the line's `type` whose data says how long the line was. Seqs stay
//! contiguous and the surface keeps its node, so the session can be opened, continued,
//! referenced and checked; only that one event's content is missing (the model, the
//! transcript and a snapshot do without it).

use serde_json::{Map, Value, json};

use super::dsh_compat;
use super::event::{Event, EventData, kind};
use super::line_skim::Skimmed;

/// The data key that marks a placeholder (never in a line dsh or this project writes).
pub const MARK: &str = "$notLoaded";

/// What a placeholder stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotLoaded {
    /// Length of the line that was not loaded (with its `\n`; for a packed row, the row's).
    pub line_bytes: u64,
    /// Why: the line was within `store.max_line_bytes` but too dense to decode within its
    /// memory budget ([`crate::line_cost`]), rather than too long.
    pub dense: bool,
}

impl NotLoaded {
    /// The placeholder `event` is, if it is one.
    pub fn of(event: &Event) -> Option<NotLoaded> {
        match &event.data {
            EventData::Other { data, .. } => Self::of_data(data),
            _ => None,
        }
    }

    /// [`of`](Self::of) for an `Other` event's data.
    pub fn of_data(data: &Value) -> Option<NotLoaded> {
        let mark = data.get(MARK)?;
        let line_bytes = mark.get("lineBytes")?.as_u64()?;
        let dense = mark.get("dense").and_then(Value::as_bool) == Some(true);
        Some(NotLoaded { line_bytes, dense })
    }
}

/// The placeholders of one line: one event, or a packed row's members made as they are
/// taken (never all at once).
// Moved once per line and never stored, so the size difference costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Placeholders {
    One(Event),
    Members {
        len: usize,
        events: Box<dyn Iterator<Item = Event>>,
    },
}

impl Placeholders {
    /// Every placeholder, made now.
    #[cfg(test)]
    fn collect_vec(self) -> Vec<Event> {
        match self {
            Placeholders::One(event) => vec![event],
            Placeholders::Members { events, .. } => events.collect(),
        }
    }
}

/// Why a complete line was not loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Why {
    /// Longer than `store.max_line_bytes`.
    Long,
    /// Its decoding would cost more than its budget ([`crate::line_cost`]).
    Dense,
    /// A packed row of more members than `max_packed_members` (decoded in full no further).
    ManyMembers,
}

/// What a reader shows in place of the event of type `kind`, e.g. "[reply of 17 MiB not
/// loaded]"; `None` for events nobody shows (stream chunks, bookkeeping).
pub fn label(kind: &str, data: &Value) -> Option<String> {
    let NotLoaded { line_bytes, .. } = NotLoaded::of_data(data)?;
    let what = match kind {
        kind::ASSISTANT_MESSAGE => "reply",
        kind::USER_MESSAGE | kind::STEERING_MESSAGE => "message",
        kind::TOOL_RESULT => "tool result",
        _ => return None,
    };
    Some(format!("[{what} of {} not loaded]", size(line_bytes)))
}

/// `bytes` as a short size: "17 MiB", "2.5 MiB", "640 KiB".
pub fn size(bytes: u64) -> String {
    const MIB: u64 = 1 << 20;
    if bytes >= 10 * MIB {
        format!("{} MiB", (bytes + MIB / 2) / MIB)
    } else if bytes >= MIB {
        let tenths = (bytes * 10 + MIB / 2) / MIB;
        format!("{}.{} MiB", tenths / 10, tenths % 10)
    } else {
        format!("{} KiB", bytes.div_ceil(1024))
    }
}

/// The placeholders of a complete line of `line_bytes` that was not loaded (its skim is
/// `skimmed`), the first with seq `next_seq`, made as they are taken (a packed row has one
/// per member); the error says why the line stays damage.
///
/// `max_line_bytes` and `max_packed_members` are the reader's limits (`reader::Limits`).
pub(crate) fn placeholders(
    skimmed: &Skimmed,
    next_seq: u64,
    line_bytes: u64,
    why: Why,
    (max_line_bytes, max_packed_members): (u64, usize),
) -> Result<Placeholders, String> {
    let not_loaded = match why {
        Why::Long => format!(
            "line of {line_bytes} bytes, longer than store.max_line_bytes ({max_line_bytes} bytes)"
        ),
        Why::Dense => format!(
            "line of {line_bytes} bytes, too dense to decode within {}× its bytes",
            crate::line_cost::DECODE_FACTOR
        ),
        Why::ManyMembers => format!(
            "packed row of {line_bytes} bytes, more members than the {max_packed_members} \
             decoded in full"
        ),
    };
    if !skimmed.closed {
        return Err(format!("{not_loaded}, and not one JSON object"));
    }
    let Some(k) = skimmed.kind.as_deref() else {
        return Err(format!("{not_loaded}, without a readable type"));
    };
    let mark = match why {
        Why::Long => json!({ "lineBytes": line_bytes }),
        Why::Dense | Why::ManyMembers => json!({ "lineBytes": line_bytes, "dense": true }),
    };
    if dsh_compat::is_packed_row(k) {
        // A run of stream chunks: one placeholder chunk per member.
        let members = skimmed.members.unwrap_or(0);
        if skimmed.seq0 != Some(next_seq) || members == 0 {
            return Err(format!(
                "{not_loaded}; its {k} row does not start at seq {next_seq} with members"
            ));
        }
        let time = skimmed.time0.unwrap_or(0);
        let data = data_of(skimmed, &mark);
        return Ok(Placeholders::Members {
            len: usize::try_from(members).unwrap_or(usize::MAX),
            events: Box::new((0..members).map(move |k| Event {
                seq: next_seq + k,
                time,
                data: EventData::Other {
                    kind: kind::ASSISTANT_CHUNK.to_owned(),
                    data: data.clone(),
                },
                surface_op: None,
                source_event_seqs: None,
            })),
        });
    }
    let (Some(seq), Some(time)) = (skimmed.seq, skimmed.time) else {
        return Err(format!("{not_loaded}, without an integer seq and time"));
    };
    if seq != next_seq {
        return Err(format!(
            "{not_loaded}; its seq {seq} breaks continuity, expected {next_seq}"
        ));
    }
    if Event::is_surface_type(k) && skimmed.surface_op.is_none() {
        return Err(format!("{not_loaded}; `{k}` event {seq} has no surfaceOp"));
    }
    Ok(Placeholders::One(Event {
        seq,
        time,
        data: EventData::Other {
            kind: k.to_owned(),
            data: data_of(skimmed, &mark),
        },
        surface_op: skimmed.surface_op,
        source_event_seqs: skimmed.source_event_seqs.clone(),
    }))
}

fn data_of(skimmed: &Skimmed, mark: &Value) -> Value {
    let mut data = Map::new();
    if let Some(turn) = skimmed.turn {
        data.insert("turn".into(), turn.into());
    }
    if let Some(step) = skimmed.step {
        data.insert("step".into(), step.into());
    }
    data.insert(MARK.into(), mark.clone());
    Value::Object(data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::SurfaceOp;

    const LIMITS: (u64, usize) = (16 << 20, 65_536);

    fn too_long(skimmed: &Skimmed, next_seq: u64, bytes: u64) -> Result<Vec<Event>, String> {
        placeholders(skimmed, next_seq, bytes, Why::Long, LIMITS).map(Placeholders::collect_vec)
    }

    #[test]
    fn sizes_read_shortly() {
        let cases = [
            (1, "1 KiB"),
            (640 * 1024, "640 KiB"),
            (1 << 20, "1.0 MiB"),
            ((5 << 20) / 2, "2.5 MiB"),
            (17 << 20, "17 MiB"),
            ((21 << 20) + 1, "21 MiB"),
        ];
        for (bytes, want) in cases {
            assert_eq!(size(bytes), want, "{bytes}");
        }
    }

    #[test]
    fn a_placeholder_is_labelled_by_what_it_stands_for() {
        let skimmed = Skimmed {
            kind: Some(kind::ASSISTANT_MESSAGE.into()),
            seq: Some(7),
            time: Some(3),
            surface_op: Some(SurfaceOp::Append),
            turn: Some(2),
            step: Some(1),
            closed: true,
            ..Skimmed::default()
        };
        let events = too_long(&skimmed, 7, 17 << 20).unwrap();
        let [event] = &events[..] else {
            panic!("{events:?}")
        };
        assert_eq!(
            NotLoaded::of(event),
            Some(NotLoaded {
                line_bytes: 17 << 20,
                dense: false
            })
        );
        assert_eq!(event.surface_op, Some(SurfaceOp::Append));
        assert_eq!(event.kind(), kind::ASSISTANT_MESSAGE);
        let EventData::Other { kind: k, data } = &event.data else {
            panic!()
        };
        assert_eq!(
            label(k, data).as_deref(),
            Some("[reply of 17 MiB not loaded]")
        );
        assert_eq!(data["turn"], 2);
        assert_eq!(label(kind::ASSISTANT_CHUNK, data), None);
        // Wrong seq, no surfaceOp, not closed: damage.
        assert!(too_long(&skimmed, 8, 1 << 30).is_err());
        let no_op = Skimmed {
            surface_op: None,
            ..skimmed.clone()
        };
        assert!(too_long(&no_op, 7, 1 << 30).is_err());
        let open = Skimmed {
            closed: false,
            ..skimmed
        };
        assert!(too_long(&open, 7, 1 << 30).is_err());
    }

    #[test]
    fn a_packed_row_becomes_one_placeholder_chunk_per_member() {
        let skimmed = Skimmed {
            kind: Some("text-chunks".into()),
            seq0: Some(4),
            time0: Some(9),
            members: Some(3),
            turn: Some(1),
            step: Some(1),
            closed: true,
            ..Skimmed::default()
        };
        let events = too_long(&skimmed, 4, 1 << 30).unwrap();
        // However many members: they are made one at a time, never refused.
        let many = Skimmed {
            members: Some(5_000_000),
            ..skimmed.clone()
        };
        let Placeholders::Members {
            len,
            events: mut made,
        } = placeholders(&many, 4, 1 << 30, Why::Long, LIMITS).unwrap()
        else {
            panic!("one placeholder per member")
        };
        assert_eq!(len, 5_000_000);
        assert_eq!(made.nth(4_999_999).map(|e| e.seq), Some(5_000_003));
        let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [4, 5, 6]);
        assert!(
            events
                .iter()
                .all(|e| e.kind() == kind::ASSISTANT_CHUNK && NotLoaded::of(e).is_some())
        );
        // A dense line says so in its mark.
        let dense = placeholders(&skimmed, 4, 100, Why::Dense, LIMITS)
            .unwrap()
            .collect_vec();
        assert_eq!(
            NotLoaded::of(&dense[0]),
            Some(NotLoaded {
                line_bytes: 100,
                dense: true
            })
        );
    }
}
