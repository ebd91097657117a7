//! Where one JSON value of a larger record sits in its file, so the value can be read again
//! alone: a message of a Gemini CLI chat document (or of a JSON line holding a whole
//! history) is found once, in the one parse of the record, and read back by its span —
//! never by parsing the record again. That keeps a session of any length linear: one parse
//! of the whole, then each item read again costs its own bytes.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use dsh_store::QueryError;

/// A value's place in a file: byte offset and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub offset: u64,
    pub len: u64,
}

impl Span {
    /// The span of `inner`, a value borrowed from `outer` (a `serde_json::value::RawValue`
    /// parsed from it), when `outer` starts at byte `base` of its file; `None` when `inner`
    /// is not a part of `outer`.
    pub fn within(base: u64, outer: &[u8], inner: &str) -> Option<Span> {
        let start = (inner.as_ptr() as usize).checked_sub(outer.as_ptr() as usize)?;
        let end = start.checked_add(inner.len())?;
        if end > outer.len() {
            return None;
        }
        Some(Span {
            offset: base.checked_add(u64::try_from(start).ok()?)?,
            len: u64::try_from(inner.len()).ok()?,
        })
    }

    /// Read the span's bytes from `file` into `buf` (replacing what it held).
    pub fn read(&self, path: &Path, mut file: &File, buf: &mut Vec<u8>) -> Result<(), QueryError> {
        let io = |source| QueryError::Io {
            path: path.to_owned(),
            source,
        };
        let len = usize::try_from(self.len).map_err(|_| QueryError::Corrupt {
            path: path.to_owned(),
            line: 0,
            reason: "a value longer than memory can address".into(),
        })?;
        buf.clear();
        buf.resize(len, 0);
        file.seek(SeekFrom::Start(self.offset)).map_err(io)?;
        file.read_exact(buf).map_err(io)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::value::RawValue;

    #[test]
    #[allow(clippy::unwrap_used)] // test code
    fn spans_of_borrowed_values_read_back_alone() {
        #[derive(serde::Deserialize)]
        struct Doc<'a> {
            #[serde(borrow)]
            messages: Vec<&'a RawValue>,
        }
        let text = br#"{"a": 1, "messages": [{"id":"x"}, {"id":"\u00e9"}]}"#;
        let doc: Doc<'_> = serde_json::from_slice(text).unwrap();
        let spans: Vec<Span> = doc
            .messages
            .iter()
            .map(|m| Span::within(7, text, m.get()).unwrap())
            .collect();
        let mut file = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut file, b"prefix:").unwrap();
        std::io::Write::write_all(&mut file, text).unwrap();
        let mut buf = Vec::new();
        spans[1].read(Path::new("/f"), &file, &mut buf).unwrap();
        assert_eq!(buf, br#"{"id":"\u00e9"}"#);
        spans[0].read(Path::new("/f"), &file, &mut buf).unwrap();
        assert_eq!(buf, br#"{"id":"x"}"#);
        let elsewhere = String::from("elsewhere");
        let mut outer = vec![0u8; 4];
        outer.shrink_to_fit();
        assert_eq!(Span::within(0, &outer, &elsewhere), None);
    }
}
