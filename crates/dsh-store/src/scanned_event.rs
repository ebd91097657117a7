//! The events a streaming surface read hands its visitor (docs/performance.md: streaming
//! prepare): a message line is only measured ([`SizedMessage`]) when that suffices, a turn
//! or step boundary only checked, and either is decoded from the very same line bytes when
//! a visitor needs the whole event.

use std::borrow::Cow;
use std::rc::Rc;

use super::bookkeeping_line;
use super::event::{Event, SurfaceOp};
use super::reader::{self, Limits, LineItems, ScanItem};
use super::sized_line::{self, SizedMessage};

/// One event of a streaming surface read.
// Moved once per line and never stored, so the size difference costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum ScannedEvent {
    /// Decoded in full, with the line it came from.
    Full {
        event: Event,
        line: Rc<Vec<u8>>,
        body_len: usize,
    },
    /// A message line that was only measured, with the line it came from.
    Sized {
        message: SizedMessage,
        line: Rc<Vec<u8>>,
        body_len: usize,
    },
    /// A turn or step boundary (never on the surface) that was only checked.
    Boundary {
        seq: u64,
        line: Rc<Vec<u8>>,
        body_len: usize,
    },
}

impl ScannedEvent {
    /// The event's seq.
    pub fn seq(&self) -> u64 {
        match self {
            ScannedEvent::Full { event, .. } => event.seq,
            ScannedEvent::Sized { message, .. } => message.seq,
            ScannedEvent::Boundary { seq, .. } => *seq,
        }
    }

    /// How it changes the surface.
    pub fn surface_op(&self) -> Option<SurfaceOp> {
        match self {
            ScannedEvent::Full { event, .. } => event.surface_op,
            ScannedEvent::Sized { message, .. } => Some(message.surface_op),
            ScannedEvent::Boundary { .. } => None,
        }
    }

    /// The line the event came from, with its `\n`.
    pub fn line(&self) -> &[u8] {
        let (ScannedEvent::Full { line, body_len, .. }
        | ScannedEvent::Sized { line, body_len, .. }
        | ScannedEvent::Boundary { line, body_len, .. }) = self;
        line.get(..body_len + 1).unwrap_or_default()
    }

    /// The whole event (a measured message is decoded from its line now); the error is
    /// why its line does not decode.
    pub fn to_event(&self) -> Result<Cow<'_, Event>, String> {
        match self {
            ScannedEvent::Full { event, .. } => Ok(Cow::Borrowed(event)),
            ScannedEvent::Sized {
                message: SizedMessage { seq, .. },
                line,
                body_len,
            }
            | ScannedEvent::Boundary {
                seq,
                line,
                body_len,
            } => {
                let body = line.get(..*body_len).unwrap_or_default();
                reader::decode_line(body, *seq)?
                    .into_iter()
                    .next()
                    .map(Cow::Owned)
                    .ok_or_else(|| "line holds no event".to_owned())
            }
        }
    }
}

impl ScanItem for ScannedEvent {
    fn not_loaded(event: Event) -> Self {
        // Nothing of the line was kept: it cannot be decoded again.
        ScannedEvent::Full {
            event,
            line: Rc::new(Vec::new()),
            body_len: 0,
        }
    }

    fn decode(
        line: &Rc<Vec<u8>>,
        body_len: usize,
        next_seq: u64,
        limits: &Limits,
    ) -> Result<LineItems<Self>, String> {
        let body = line.get(..body_len).unwrap_or_default();
        // Measured or checked only when it is UTF-8; everything else, and any line the
        // scanners are unsure of, is decoded. The scanners refuse every lone surrogate
        // escape, so a line they accept is one the exact path would not have repaired.
        let message = sized_line::is_message_line(body);
        let boundary = !message && bookkeeping_line::is_boundary_line(body);
        if (message || boundary) && simdutf8::basic::from_utf8(body).is_ok() {
            if message && let Some(message) = sized_line::measure(body, next_seq) {
                return Ok(LineItems::One(ScannedEvent::Sized {
                    message,
                    line: Rc::clone(line),
                    body_len,
                }));
            }
            if boundary && let Some(seq) = bookkeeping_line::check(body, next_seq) {
                return Ok(LineItems::One(ScannedEvent::Boundary {
                    seq,
                    line: Rc::clone(line),
                    body_len,
                }));
            }
        }
        let line = Rc::clone(line);
        Ok(
            reader::decode_items(body, next_seq, limits)?.map(move |event| ScannedEvent::Full {
                event,
                line: Rc::clone(&line),
                body_len,
            }),
        )
    }
}
