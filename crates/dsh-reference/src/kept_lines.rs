//! The raw lines of the items a [`RetentionWindow`](crate::source_read::RetentionWindow)
//! holds, copied while a compressed log is scanned, so that `prepare` can decode the items
//! it keeps without decompressing the log again (docs/performance.md: streaming prepare).

use std::collections::HashMap;

/// Bytes of kept lines held at most by default: the window holds about a budget's worth of
/// items, so this rarely binds; past it, items are read again from the log instead.
pub const KEPT_LINE_BYTES: usize = 4 << 20;

/// Lines by seq, at most `cap` bytes of them in all; a line that does not fit is not kept.
#[derive(Debug, Default)]
pub struct KeptLines {
    lines: HashMap<u64, Vec<u8>>,
    bytes: usize,
    cap: usize,
}

impl KeptLines {
    /// Nothing kept yet; at most `cap` bytes will be.
    pub fn new(cap: usize) -> Self {
        KeptLines {
            lines: HashMap::new(),
            bytes: 0,
            cap,
        }
    }

    /// Keep `line` for `seq` if it fits under the cap (replacing a line kept for it before).
    pub fn keep(&mut self, seq: u64, line: &[u8]) {
        self.forget(seq);
        if line.len() <= self.cap.saturating_sub(self.bytes) {
            self.bytes += line.len();
            self.lines.insert(seq, line.to_vec());
        }
    }

    /// Forget the line of `seq`, if kept.
    pub fn forget(&mut self, seq: u64) {
        if let Some(line) = self.lines.remove(&seq) {
            self.bytes -= line.len();
        }
    }

    /// Take the line kept for `seq` out.
    pub fn take(&mut self, seq: u64) -> Option<Vec<u8>> {
        let line = self.lines.remove(&seq)?;
        self.bytes -= line.len();
        Some(line)
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Number of lines held.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// Whether no line is held.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_kept_up_to_the_cap_and_forgotten_with_their_bytes() {
        let mut kept = KeptLines::new(10);
        kept.keep(1, b"abcd\n");
        kept.keep(2, b"efgh\n");
        assert_eq!((kept.len(), kept.bytes()), (2, 10));
        // Over the cap: not kept, the others stay.
        kept.keep(3, b"x\n");
        assert_eq!((kept.len(), kept.bytes()), (2, 10));
        kept.forget(1);
        kept.keep(3, b"x\n");
        assert_eq!((kept.len(), kept.bytes()), (2, 7));
        assert_eq!(kept.take(3).as_deref(), Some(&b"x\n"[..]));
        assert_eq!(kept.take(3), None);
        // Keeping a seq again replaces its line.
        kept.keep(2, b"z\n");
        assert_eq!((kept.len(), kept.bytes()), (1, 2));
        kept.forget(2);
        assert!(kept.is_empty());
        assert_eq!(kept.bytes(), 0);
    }
}
