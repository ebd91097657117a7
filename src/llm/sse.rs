//! An incremental parser for server-sent events (the `text/event-stream` body of a streamed
//! chat completion). Pure: bytes in, complete events out, whatever the chunking. Lines end in
//! LF, CRLF or CR (a CRLF split across chunks counts once); `:` lines are comments; several
//! `data:` lines join with `\n`; `data: [DONE]` ends the stream; oversized lines are errors.

/// One dispatched item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseItem {
    /// An event: its `event:` name (if any) and its joined `data:` lines.
    Event { event: Option<String>, data: String },
    /// The `data: [DONE]` terminator of OpenAI-style streams.
    Done,
}

/// Why a stream could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    #[error("event-stream line longer than {limit} bytes")]
    LineTooLong { limit: usize },
    #[error("event-stream event longer than {limit} bytes")]
    EventTooLong { limit: usize },
    #[error("event-stream line is not valid UTF-8")]
    InvalidUtf8,
}

/// Default limit for one line and for one event's data: 1 MiB.
pub const DEFAULT_MAX_LINE_BYTES: usize = 1 << 20;

/// Incremental SSE parser. Feed chunks with [`SseParser::push`]; after an error the parser
/// must not be used further (the stream is unusable).
#[derive(Debug)]
pub struct SseParser {
    max_line: usize,
    line: Vec<u8>,
    /// The previous chunk ended in CR: a leading LF of the next chunk belongs to it.
    after_cr: bool,
    data: String,
    has_data: bool,
    event: Option<String>,
}

impl Default for SseParser {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_LINE_BYTES)
    }
}

impl SseParser {
    /// A parser rejecting lines (and event data) longer than `max_line` bytes.
    pub fn new(max_line: usize) -> Self {
        SseParser {
            max_line,
            line: Vec::new(),
            after_cr: false,
            data: String::new(),
            has_data: false,
            event: None,
        }
    }

    /// Consume `chunk` and return the items it completed, in order.
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<SseItem>, SseError> {
        let mut out = Vec::new();
        let mut rest = chunk;
        if self.after_cr {
            self.after_cr = false;
            if let Some((b'\n', tail)) = rest.split_first() {
                rest = tail;
            }
        }
        while !rest.is_empty() {
            if let Some(pos) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
                let (segment, tail) = rest.split_at(pos);
                self.extend_line(segment)?;
                let Some((&terminator, mut after)) = tail.split_first() else {
                    break;
                };
                if terminator == b'\r' {
                    match after.split_first() {
                        Some((b'\n', a)) => after = a,
                        Some(_) => {}
                        None => self.after_cr = true,
                    }
                }
                let line = std::mem::take(&mut self.line);
                if let Some(item) = self.process_line(&line)? {
                    out.push(item);
                }
                rest = after;
            } else {
                self.extend_line(rest)?;
                break;
            }
        }
        Ok(out)
    }

    /// Whether bytes of an unfinished line or event are buffered (the stream ended early).
    pub fn has_partial(&self) -> bool {
        !self.line.is_empty() || self.has_data
    }

    fn extend_line(&mut self, bytes: &[u8]) -> Result<(), SseError> {
        if self.line.len().saturating_add(bytes.len()) > self.max_line {
            return Err(SseError::LineTooLong {
                limit: self.max_line,
            });
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn process_line(&mut self, line: &[u8]) -> Result<Option<SseItem>, SseError> {
        if line.is_empty() {
            return Ok(self.dispatch());
        }
        if line.first() == Some(&b':') {
            return Ok(None);
        }
        let line = std::str::from_utf8(line).map_err(|_| SseError::InvalidUtf8)?;
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.data.len().saturating_add(value.len() + 1) > self.max_line {
                    return Err(SseError::EventTooLong {
                        limit: self.max_line,
                    });
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.event = Some(value.to_owned()),
            // `id`, `retry` and unknown fields do not matter for a one-shot completion.
            _ => {}
        }
        Ok(None)
    }

    fn dispatch(&mut self) -> Option<SseItem> {
        let event = self.event.take();
        if !std::mem::replace(&mut self.has_data, false) {
            return None;
        }
        let data = std::mem::take(&mut self.data);
        if data == "[DONE]" {
            return Some(SseItem::Done);
        }
        Some(SseItem::Event { event, data })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn ev(data: &str) -> SseItem {
        SseItem::Event {
            event: None,
            data: data.into(),
        }
    }

    fn parse_all(chunks: &[&[u8]], max: usize) -> Result<Vec<SseItem>, SseError> {
        let mut p = SseParser::new(max);
        let mut out = Vec::new();
        for c in chunks {
            out.extend(p.push(c)?);
        }
        Ok(out)
    }

    type Case = (
        &'static str,
        Vec<&'static [u8]>,
        Result<Vec<SseItem>, SseError>,
    );

    #[test]
    fn table() {
        let named = SseItem::Event {
            event: Some("error".into()),
            data: "{}".into(),
        };
        let cases: Vec<Case> = vec![
            ("one event", vec![b"data: a\n\n"], Ok(vec![ev("a")])),
            (
                "no space after colon",
                vec![b"data:a\n\n"],
                Ok(vec![ev("a")]),
            ),
            (
                "only one space stripped",
                vec![b"data:  a\n\n"],
                Ok(vec![ev(" a")]),
            ),
            ("crlf", vec![b"data: a\r\n\r\n"], Ok(vec![ev("a")])),
            ("bare cr", vec![b"data: a\r\r"], Ok(vec![ev("a")])),
            (
                "crlf split across chunks",
                vec![b"data: a\r", b"\n\r", b"\n"],
                Ok(vec![ev("a")]),
            ),
            (
                "cr then cr split",
                vec![b"data: a\r", b"\rdata: b\n\n"],
                Ok(vec![ev("a"), ev("b")]),
            ),
            (
                "line split across chunks",
                vec![b"da", b"ta: he", b"llo\n", b"\n"],
                Ok(vec![ev("hello")]),
            ),
            (
                "utf8 char split across chunks",
                vec![b"data: \xe6\xbc", b"\xa2\n\n"],
                Ok(vec![ev("漢")]),
            ),
            (
                "multi-line data",
                vec![b"data: a\ndata: b\n\n"],
                Ok(vec![ev("a\nb")]),
            ),
            ("empty data line", vec![b"data\n\n"], Ok(vec![ev("")])),
            (
                "comment ignored",
                vec![b": ka\n\ndata: x\n\n"],
                Ok(vec![ev("x")]),
            ),
            (
                "comment between data lines",
                vec![b"data: a\n: c\ndata: b\n\n"],
                Ok(vec![ev("a\nb")]),
            ),
            (
                "blank lines without data dispatch nothing",
                vec![b"\n\n\r\n"],
                Ok(vec![]),
            ),
            (
                "named event",
                vec![b"event: error\ndata: {}\n\n"],
                Ok(vec![named]),
            ),
            (
                "id and retry ignored",
                vec![b"id: 1\nretry: 5\ndata: x\n\n"],
                Ok(vec![ev("x")]),
            ),
            (
                "done",
                vec![b"data: x\n\ndata: [DONE]\n\n"],
                Ok(vec![ev("x"), SseItem::Done]),
            ),
            (
                "done with crlf",
                vec![b"data: [DONE]\r\n\r\n"],
                Ok(vec![SseItem::Done]),
            ),
            (
                "unterminated event not dispatched",
                vec![b"data: x\n"],
                Ok(vec![]),
            ),
            (
                "unterminated line not dispatched",
                vec![b"data: x"],
                Ok(vec![]),
            ),
            (
                "line at the limit",
                vec![b"data: 1234567890\n\n"],
                Ok(vec![ev("1234567890")]),
            ),
            (
                "oversized line in one chunk",
                vec![b"data: 12345678901\n\n"],
                Err(SseError::LineTooLong { limit: 16 }),
            ),
            (
                "oversized line across chunks",
                vec![b"data: 12", b"345678", b"901"],
                Err(SseError::LineTooLong { limit: 16 }),
            ),
            (
                "oversized event from many lines",
                vec![b"data: 1234567890\ndata: 1234567890\n\n"],
                Err(SseError::EventTooLong { limit: 16 }),
            ),
            (
                "invalid utf8",
                vec![b"data: \xff\n\n"],
                Err(SseError::InvalidUtf8),
            ),
            (
                "invalid utf8 in comment is fine",
                vec![b":\xff\n\n"],
                Ok(vec![]),
            ),
        ];
        for (name, chunks, want) in cases {
            assert_eq!(parse_all(&chunks, 16), want, "{name}");
        }
    }

    #[test]
    fn every_split_point_gives_the_same_items() {
        let stream: &[u8] = b": hi\r\ndata: {\"a\":\"\xc3\xa9\"}\r\n\r\nevent: e\ndata: 1\ndata: 2\r\rdata: [DONE]\n\n";
        let whole = parse_all(&[stream], 1024).unwrap();
        assert_eq!(whole.len(), 3);
        for i in 0..=stream.len() {
            for j in i..=stream.len() {
                let (a, rest) = stream.split_at(i);
                let (b, c) = rest.split_at(j - i);
                assert_eq!(parse_all(&[a, b, c], 1024).unwrap(), whole, "split {i}/{j}");
            }
        }
    }

    #[test]
    fn partial_state_is_reported() {
        let mut p = SseParser::default();
        assert!(!p.has_partial());
        p.push(b"data: x").unwrap();
        assert!(p.has_partial());
        p.push(b"\n").unwrap();
        assert!(p.has_partial());
        p.push(b"\n").unwrap();
        assert!(!p.has_partial());
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic_and_chunking_does_not_matter(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
            cut in 0usize..300,
        ) {
            let cut = cut.min(bytes.len());
            let (a, b) = bytes.split_at(cut);
            let whole = parse_all(&[&bytes], 64);
            let split = parse_all(&[a, b], 64);
            if let (Ok(w), Ok(s)) = (&whole, &split) {
                proptest::prop_assert_eq!(w, s);
            }
            proptest::prop_assert_eq!(whole.is_ok(), split.is_ok());
        }
    }
}
