//! What a line longer than `store.max_line_bytes` still tells without being held
//! (docs/session-store.md: damage): its bytes go through [`LineSkim`] as they are skipped,
//! which keeps only a few small envelope values — `type`, `seq`, `time`, `surfaceOp`,
//! `sourceEventSeqs`, `seq0`/`time0` of a packed row, `data.turn`/`data.step` and the number
//! of members of a packed row's `data.texts`/`data.args` — so the line can stay in the log
//! as a placeholder event (seqs stay contiguous) instead of ending the readable log.
//!
//! Memory: the values kept are bounded ([`CAPS`]); the container stack is two bytes of
//! state whatever the nesting. The skim is not a validator: a line whose kept values do not
//! parse, or that does not look like one event, yields no placeholder (and stays damage).

use serde_json::Value;

use super::event::SurfaceOp;

/// A top-level value kept, and how many bytes of it at most (a longer one is dropped).
const CAPS: [(&[u8], usize); 7] = [
    (b"type", 256),
    (b"seq", 32),
    (b"time", 32),
    (b"seq0", 32),
    (b"time0", 32),
    (b"surfaceOp", 4096),
    (b"sourceEventSeqs", 1 << 20),
];

/// Values of `data` kept (depth 2).
const DATA_CAPS: [(&[u8], usize); 2] = [(b"turn", 32), (b"step", 32)];

/// Arrays of `data` whose elements are counted (a packed row's members).
const COUNTED: [&[u8]; 2] = [b"texts", b"args"];

/// Longest key remembered (every key of interest is shorter).
const MAX_KEY: usize = 32;

/// What a skimmed line said of itself.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Skimmed {
    pub(crate) kind: Option<String>,
    pub(crate) seq: Option<u64>,
    pub(crate) time: Option<i64>,
    pub(crate) seq0: Option<u64>,
    pub(crate) time0: Option<i64>,
    pub(crate) surface_op: Option<SurfaceOp>,
    pub(crate) source_event_seqs: Option<Vec<u64>>,
    pub(crate) turn: Option<u64>,
    pub(crate) step: Option<u64>,
    /// Elements of `data.texts` or `data.args`, when the line has one of them.
    pub(crate) members: Option<u64>,
    /// The line is one JSON object that closed exactly at its end.
    pub(crate) closed: bool,
}

/// Where a kept value goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Top(usize),
    Data(usize),
}

#[derive(Debug)]
struct Capture {
    target: Target,
    /// Depth of the container holding the value.
    depth: u64,
    bytes: Vec<u8>,
    cap: usize,
    overflow: bool,
}

/// Where the reader is in a string.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Str {
    #[default]
    Outside,
    Inside,
    /// Right after a `\` inside a string.
    Escape,
}

/// Where the reader is in the line as a whole.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Whole {
    #[default]
    Open,
    /// The top-level object closed: only whitespace may follow.
    Closed,
    /// Not one JSON object.
    Broken,
}

/// A byte-at-a-time reader of one JSON line that keeps only the values named above.
#[derive(Debug, Default)]
pub(crate) struct LineSkim {
    depth: u64,
    string: Str,
    whole: Whole,
    /// At depth 1 / 2: the next string is a key.
    key_next: [bool; 3],
    /// The depth-2 container is `data`'s object.
    data_object: bool,
    /// Key being read at depth 1 or 2, and the last key read there.
    reading_key: Option<usize>,
    keys: [Vec<u8>; 3],
    key_overflow: [bool; 3],
    capture: Option<Capture>,
    /// Counting the elements of a `data` array at depth 3: whether the next non-space byte
    /// starts an element.
    counting: Option<bool>,
    members: Option<u64>,
    kept: [Option<Vec<u8>>; 7],
    kept_data: [Option<Vec<u8>>; 2],
}

impl LineSkim {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Read `bytes`, the next part of the line (without its `\n`).
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        while let Some((&b, after)) = rest.split_first() {
            if self.whole == Whole::Broken {
                return;
            }
            // Long string runs with nothing to keep are skipped at memchr speed.
            if self.string == Str::Inside && self.capture.is_none() && self.reading_key.is_none() {
                match memchr::memchr2(b'"', b'\\', rest) {
                    Some(0) => {}
                    Some(at) => {
                        let (_, tail) = rest.split_at(at);
                        rest = tail;
                        continue;
                    }
                    None => return,
                }
            }
            self.byte(b);
            rest = after;
        }
    }

    fn byte(&mut self, b: u8) {
        if self.whole == Whole::Closed {
            if !b.is_ascii_whitespace() {
                self.whole = Whole::Broken;
            }
            return;
        }
        if self.string != Str::Outside {
            if let Some(c) = &mut self.capture {
                c.push(b);
            }
            if self.string == Str::Escape {
                self.string = Str::Inside;
                self.push_key(b);
            } else if b == b'\\' {
                self.string = Str::Escape;
                self.push_key(b);
            } else if b == b'"' {
                self.string = Str::Outside;
                self.reading_key = None;
            } else {
                self.push_key(b);
            }
            return;
        }
        let depth = self.depth;
        // A kept value ends at a `,` or the close of its container.
        if matches!(b, b',' | b'}' | b']')
            && let Some(c) = &self.capture
            && c.depth == depth
        {
            self.finish_capture();
        }
        if let Some(c) = &mut self.capture {
            c.push(b);
        }
        if self.counting.is_some() && depth == 3 {
            match b {
                b',' => self.counting = Some(true),
                b']' => {}
                _ if b.is_ascii_whitespace() => {}
                _ => {
                    if self.counting == Some(true) {
                        self.members = Some(self.members.unwrap_or(0).saturating_add(1));
                        self.counting = Some(false);
                    }
                }
            }
        }
        match b {
            b'"' => {
                self.string = Str::Inside;
                let d = usize::try_from(depth).unwrap_or(usize::MAX);
                if (d == 1 || (d == 2 && self.data_object))
                    && self.key_next.get(d).copied().unwrap_or(false)
                {
                    self.reading_key = Some(d);
                    self.keys[d].clear();
                    self.key_overflow[d] = false;
                    self.key_next[d] = false;
                }
            }
            b'{' | b'[' => {
                self.depth = depth.saturating_add(1);
                match self.depth {
                    1 => {
                        if b != b'{' {
                            self.whole = Whole::Broken;
                        }
                        self.key_next[1] = true;
                    }
                    2 => {
                        self.data_object = b == b'{' && self.key_is(1, b"data");
                        self.key_next[2] = self.data_object;
                    }
                    3 if b == b'['
                        && self.data_object
                        && COUNTED.iter().any(|k| self.key_is(2, k)) =>
                    {
                        self.members = Some(0);
                        self.counting = Some(true);
                    }
                    _ => {}
                }
            }
            b'}' | b']' => {
                if depth == 3 {
                    self.counting = None;
                }
                if depth == 2 {
                    self.data_object = false;
                }
                match depth.checked_sub(1) {
                    Some(0) => {
                        self.depth = 0;
                        self.whole = Whole::Closed;
                    }
                    Some(d) => self.depth = d,
                    None => self.whole = Whole::Broken,
                }
            }
            b',' => {
                if depth == 1 {
                    self.key_next[1] = true;
                } else if depth == 2 && self.data_object {
                    self.key_next[2] = true;
                }
            }
            b':' => self.start_capture(depth),
            _ => {
                if depth == 0 && !b.is_ascii_whitespace() {
                    self.whole = Whole::Broken;
                }
            }
        }
    }

    fn push_key(&mut self, b: u8) {
        if let Some(d) = self.reading_key {
            if self.keys[d].len() < MAX_KEY {
                self.keys[d].push(b);
            } else {
                self.key_overflow[d] = true;
            }
        }
    }

    fn key_is(&self, depth: usize, key: &[u8]) -> bool {
        !self.key_overflow[depth] && self.keys[depth] == key
    }

    fn start_capture(&mut self, depth: u64) {
        let target = match depth {
            1 => CAPS
                .iter()
                .position(|(k, _)| self.key_is(1, k))
                .map(|i| (Target::Top(i), CAPS[i].1)),
            2 if self.data_object => DATA_CAPS
                .iter()
                .position(|(k, _)| self.key_is(2, k))
                .map(|i| (Target::Data(i), DATA_CAPS[i].1)),
            _ => None,
        };
        if let Some((target, cap)) = target {
            self.capture = Some(Capture {
                target,
                depth,
                bytes: Vec::new(),
                cap,
                overflow: false,
            });
        }
    }

    fn finish_capture(&mut self) {
        let Some(c) = self.capture.take() else {
            return;
        };
        let value = (!c.overflow).then_some(c.bytes);
        match c.target {
            Target::Top(i) => self.kept[i] = value,
            Target::Data(i) => self.kept_data[i] = value,
        }
    }

    /// What the whole line said (call after its last byte).
    pub(crate) fn finish(mut self) -> Skimmed {
        fn parse<T: serde::de::DeserializeOwned>(bytes: Option<&[u8]>) -> Option<T> {
            serde_json::from_slice(bytes?).ok()
        }
        self.finish_capture();
        let closed = self.whole == Whole::Closed;
        let top = |i: usize| self.kept[i].as_deref();
        let data = |i: usize| self.kept_data[i].as_deref();
        Skimmed {
            kind: parse::<String>(top(0)),
            seq: parse(top(1)),
            time: parse(top(2)),
            seq0: parse(top(3)),
            time0: parse(top(4)),
            surface_op: parse::<Value>(top(5)).and_then(|v| serde_json::from_value(v).ok()),
            source_event_seqs: parse(top(6)),
            turn: parse(data(0)),
            step: parse(data(1)),
            members: self.members,
            closed,
        }
    }
}

impl Capture {
    fn push(&mut self, b: u8) {
        if self.overflow {
            return;
        }
        if self.bytes.len() < self.cap {
            self.bytes.push(b);
        } else {
            self.overflow = true;
            self.bytes = Vec::new();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn skim_in_pieces(line: &str, piece: usize) -> Skimmed {
        let mut skim = LineSkim::new();
        for part in line.as_bytes().chunks(piece.max(1)) {
            skim.feed(part);
        }
        skim.finish()
    }

    #[test]
    fn a_message_line_keeps_its_envelope() {
        let big = "x\\\"y}],{".repeat(1000);
        let line = format!(
            r#"{{"type":"assistant/message","seq":12,"time":1700,"data":{{"turn":3,"step":2,"message":{{"role":"assistant","content":[{{"type":"text","text":"{big}"}}]}},"usage":{{"inputTokens":1}}}},"surfaceOp":"append"}}"#
        );
        for piece in [1, 7, 4096, line.len()] {
            let s = skim_in_pieces(&line, piece);
            assert_eq!(
                s,
                Skimmed {
                    kind: Some("assistant/message".into()),
                    seq: Some(12),
                    time: Some(1700),
                    surface_op: Some(SurfaceOp::Append),
                    turn: Some(3),
                    step: Some(2),
                    closed: true,
                    ..Skimmed::default()
                },
                "piece {piece}"
            );
        }
    }

    #[test]
    fn a_replacement_keeps_its_provenance_and_keys_in_any_order() {
        let line = r#"{ "surfaceOp" : {"op":"replace","start":1,"end":4} , "sourceEventSeqs":[1,2,3,4], "data": {"id":"m","turn":"no","nested":{"turn":9}}, "seq":5, "type":"user/message", "time":-3 }  "#;
        let s = skim_in_pieces(line, 3);
        assert_eq!(s.kind.as_deref(), Some("user/message"));
        assert_eq!(s.seq, Some(5));
        assert_eq!(s.time, Some(-3));
        assert_eq!(s.surface_op, Some(SurfaceOp::Replace { start: 1, end: 4 }));
        assert_eq!(s.source_event_seqs, Some(vec![1, 2, 3, 4]));
        // `turn` is kept only at data's own level, and only when it parses.
        assert_eq!(s.turn, None);
        assert!(s.closed);
    }

    #[test]
    fn a_packed_row_counts_its_members() {
        let line = r#"{"type":"text-chunks","seq0":40,"time0":9,"data":{"turn":1,"step":1,"index":0,"dt":[1,1],"texts":["a,b]", "[c]" ,"d"]}}"#;
        let s = skim_in_pieces(line, 5);
        assert_eq!(s.kind.as_deref(), Some("text-chunks"));
        assert_eq!((s.seq0, s.time0, s.seq), (Some(40), Some(9), None));
        assert_eq!(s.members, Some(3));
        let empty = skim_in_pieces(
            r#"{"type":"text-chunks","seq0":1,"time0":1,"data":{"texts":[ ]}}"#,
            2,
        );
        assert_eq!(empty.members, Some(0));
    }

    #[test]
    fn what_is_not_one_object_is_not_closed() {
        for line in [
            r#"{"type":"a","seq":1"#,
            r#"{"type":"a","seq":1} x"#,
            r#"[{"type":"a"}]"#,
            r#"{"type":"a","seq":1}}"#,
            r#"{"type":"a","text":"open"#,
            "",
        ] {
            assert!(!skim_in_pieces(line, 2).closed, "{line}");
        }
    }

    #[test]
    fn kept_values_are_bounded() {
        let long_type = "t".repeat(300);
        let line = format!(r#"{{"type":"{long_type}","seq":1,"time":1,"data":{{}}}}"#);
        let s = skim_in_pieces(&line, 64);
        assert_eq!((s.kind, s.seq), (None, Some(1)));
        let seqs: Vec<String> = (0..200_000).map(|i| i.to_string()).collect();
        let line = format!(
            r#"{{"type":"user/message","seq":1,"time":1,"sourceEventSeqs":[{}],"data":{{}}}}"#,
            seqs.join(",")
        );
        let s = skim_in_pieces(&line, 4096);
        assert_eq!(s.source_event_seqs, None);
        assert!(s.closed);
    }
}
