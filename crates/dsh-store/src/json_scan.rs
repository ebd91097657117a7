//! A validating JSON scanner over the raw bytes of one log line (docs/performance.md:
//! streaming prepare): it checks syntax and measures strings without building them.
//!
//! Every method answers `None` when it is not sure the exact decoder (`serde_json`) would
//! accept the same bytes the same way — invalid syntax, but also anything merely unusual
//! (escaped keys, deep nesting, huge numbers). The caller then decodes the line exactly,
//! so the scanner can only ever be less accepting, never differently accepting.
//! The line must already be known to be valid UTF-8.

/// Sizes of a decoded JSON string, measured from its escaped form: its UTF-8 length and how
/// many of its bytes `JSON.stringify`-style escaping (plus `<` for the tag-safe form) widens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TextMeasure {
    /// UTF-8 bytes of the decoded text.
    pub bytes: usize,
    /// Bytes written as a two-byte escape: `"`, `\`, backspace, form feed, `\n`, `\r`, `\t`.
    pub short_escapes: usize,
    /// Other control bytes (below 0x20), written as six-byte `\u00XX` escapes.
    pub controls: usize,
    /// `<` bytes (six bytes in the tag-safe form).
    pub less_than: usize,
}

impl TextMeasure {
    /// The measure of an already decoded text.
    pub fn of(text: &str) -> Self {
        let mut m = TextMeasure::default();
        for &b in text.as_bytes() {
            m.push_byte(b);
        }
        m
    }

    /// Add `other`'s counts (the texts concatenated).
    pub fn add(&mut self, other: &TextMeasure) {
        self.bytes += other.bytes;
        self.short_escapes += other.short_escapes;
        self.controls += other.controls;
        self.less_than += other.less_than;
    }

    /// Count one decoded byte.
    fn push_byte(&mut self, b: u8) {
        self.bytes += 1;
        match b {
            b'"' | b'\\' | 0x08 | 0x0C | b'\n' | b'\r' | b'\t' => self.short_escapes += 1,
            0x00..=0x1F => self.controls += 1,
            b'<' => self.less_than += 1,
            _ => {}
        }
    }

    /// Count one decoded character given by its code point.
    fn push_char(&mut self, c: char) {
        if c.is_ascii() {
            self.push_byte(c as u8);
        } else {
            self.bytes += c.len_utf8();
        }
    }
}

/// Deepest nesting [`Scan::skip_value`] follows (`serde_json` stops at 128; deeper lines
/// are left to it).
const MAX_DEPTH: usize = 64;
/// Longest integer part of a skipped number (longer ones are left to `serde_json`, which
/// may find them out of range).
const MAX_INT_DIGITS: usize = 20;

/// A cursor over one line's bytes.
pub(crate) struct Scan<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Scan<'a> {
    /// A scan from the start of `bytes`.
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Scan { bytes, at: 0 }
    }

    fn skip_ws(&mut self) {
        while let Some(&b) = self.bytes.get(self.at) {
            if !matches!(b, b' ' | b'\n' | b'\t' | b'\r') {
                break;
            }
            self.at += 1;
        }
    }

    /// The next byte that is not whitespace, not consumed.
    pub(crate) fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.bytes.get(self.at).copied()
    }

    /// Consume `byte` (after whitespace).
    pub(crate) fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// Only whitespace is left.
    pub(crate) fn finish(&mut self) -> Option<()> {
        self.skip_ws();
        (self.at == self.bytes.len()).then_some(())
    }

    /// Walk an object's members: `member(scan, key)` must consume the value of each key.
    /// Keys with escapes are refused (their decoded spelling is left to `serde_json`).
    pub(crate) fn object(
        &mut self,
        mut member: impl FnMut(&mut Self, &'a [u8]) -> Option<()>,
    ) -> Option<()> {
        self.eat(b'{')?;
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(());
        }
        loop {
            let key = self.plain_string()?;
            self.eat(b':')?;
            member(self, key)?;
            match self.peek()? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// Walk an array's elements: `element(scan)` must consume each one.
    pub(crate) fn array(&mut self, mut element: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.eat(b'[')?;
        if self.peek()? == b']' {
            self.at += 1;
            return Some(());
        }
        loop {
            element(self)?;
            match self.peek()? {
                b',' => self.at += 1,
                b']' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// A string without escapes: its raw bytes.
    pub(crate) fn plain_string(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let start = self.at;
        let (end, _) = run_end(self.bytes, start)?;
        if *self.bytes.get(end)? != b'"' {
            return None;
        }
        self.at = end + 1;
        self.bytes.get(start..end)
    }

    /// Any valid string, measured.
    pub(crate) fn measured_string(&mut self, m: &mut TextMeasure) -> Option<()> {
        self.eat(b'"')?;
        loop {
            let (end, less_than) = run_end(self.bytes, self.at)?;
            m.bytes += end - self.at;
            m.less_than += less_than;
            self.at = end + 1;
            match *self.bytes.get(end)? {
                b'"' => return Some(()),
                b'\\' => self.escape(m)?,
                _ => return None,
            }
        }
    }

    /// Any valid string.
    pub(crate) fn skip_string(&mut self) -> Option<()> {
        self.measured_string(&mut TextMeasure::default())
    }

    /// The escape after a `\` (already consumed), counted into `m`.
    fn escape(&mut self, m: &mut TextMeasure) -> Option<()> {
        let b = *self.bytes.get(self.at)?;
        self.at += 1;
        let decoded = match b {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0C,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let unit = self.hex4()?;
                let c = match unit {
                    0xD800..=0xDBFF => {
                        if self.bytes.get(self.at..self.at + 2)? != b"\\u" {
                            return None;
                        }
                        self.at += 2;
                        let low = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return None;
                        }
                        let cp = 0x10000
                            + ((u32::from(unit) - 0xD800) << 10)
                            + (u32::from(low) - 0xDC00);
                        char::from_u32(cp)?
                    }
                    0xDC00..=0xDFFF => return None,
                    _ => char::from_u32(u32::from(unit))?,
                };
                m.push_char(c);
                return Some(());
            }
            _ => return None,
        };
        m.push_byte(decoded);
        Some(())
    }

    fn hex4(&mut self) -> Option<u16> {
        let digits = self.bytes.get(self.at..self.at + 4)?;
        let mut unit = 0u16;
        for &d in digits {
            let v = match d {
                b'0'..=b'9' => d - b'0',
                b'a'..=b'f' => d - b'a' + 10,
                b'A'..=b'F' => d - b'A' + 10,
                _ => return None,
            };
            unit = unit << 4 | u16::from(v);
        }
        self.at += 4;
        Some(unit)
    }

    /// A non-negative integer that fits a `u64` (no sign, fraction or exponent).
    pub(crate) fn u64(&mut self) -> Option<u64> {
        self.skip_ws();
        let start = self.at;
        let mut n: u64 = 0;
        while let Some(&d) = self.bytes.get(self.at) {
            if !d.is_ascii_digit() {
                break;
            }
            n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
            self.at += 1;
        }
        let digits = self.at - start;
        let leading_zero = digits > 1 && self.bytes.get(start) == Some(&b'0');
        let float = matches!(self.bytes.get(self.at), Some(b'.' | b'e' | b'E'));
        (digits > 0 && !leading_zero && !float).then_some(n)
    }

    /// A non-negative integer that fits an `i64`.
    pub(crate) fn i64(&mut self) -> Option<i64> {
        i64::try_from(self.u64()?).ok()
    }

    /// `null` (consumed) or `None` without consuming.
    pub(crate) fn null(&mut self) -> bool {
        self.skip_ws();
        let is = self.bytes.get(self.at..self.at + 4) == Some(b"null");
        if is {
            self.at += 4;
        }
        is
    }

    /// Any valid JSON value.
    pub(crate) fn skip_value(&mut self) -> Option<()> {
        self.skip_nested(0)
    }

    fn skip_nested(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => self.skip_string(),
            b'{' => self.object(|s, _| s.skip_nested(depth + 1)),
            b'[' => self.array(|s| s.skip_nested(depth + 1)),
            b't' => self.word(b"true"),
            b'f' => self.word(b"false"),
            b'n' => self.word(b"null"),
            b'-' | b'0'..=b'9' => self.skip_number(),
            _ => None,
        }
    }

    fn word(&mut self, w: &[u8]) -> Option<()> {
        (self.bytes.get(self.at..self.at + w.len())? == w).then(|| self.at += w.len())
    }

    fn digits(&mut self) -> usize {
        let start = self.at;
        while self.bytes.get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
        self.at - start
    }

    /// A number by the JSON grammar, small enough that `serde_json` surely takes it.
    fn skip_number(&mut self) -> Option<()> {
        if self.bytes.get(self.at) == Some(&b'-') {
            self.at += 1;
        }
        let start = self.at;
        let int = self.digits();
        if int == 0 || int > MAX_INT_DIGITS || (int > 1 && self.bytes.get(start) == Some(&b'0')) {
            return None;
        }
        if self.bytes.get(self.at) == Some(&b'.') {
            self.at += 1;
            if self.digits() == 0 {
                return None;
            }
        }
        if matches!(self.bytes.get(self.at), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.bytes.get(self.at), Some(b'+' | b'-')) {
                self.at += 1;
            }
            let exp = self.digits();
            if exp == 0 || exp > 2 {
                return None;
            }
        }
        Some(())
    }
}

const ONES: u64 = 0x0101_0101_0101_0101;
const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;

/// The high bit of each byte of `t` that is zero (exact: no false positives).
#[inline]
fn zero_bytes(t: u64) -> u64 {
    !(((t & LOW7).wrapping_add(LOW7)) | t | LOW7)
}

/// The high bit of each byte of `x` equal to `c`.
#[inline]
fn bytes_equal(x: u64, c: u8) -> u64 {
    zero_bytes(x ^ (ONES * u64::from(c)))
}

/// Where the run of plain string bytes from `from` ends — at the first `"`, `\` or byte
/// below 0x20; `None` if the line ends first — and how many `<` it holds. Eight bytes at a
/// time.
#[inline]
fn run_end(bytes: &[u8], from: usize) -> Option<(usize, usize)> {
    let mut at = from;
    let mut less_than = 0usize;
    while let Some(word) = bytes.get(at..at + 8) {
        let mut eight = [0u8; 8];
        eight.copy_from_slice(word);
        let x = u64::from_le_bytes(eight);
        let stop = bytes_equal(x, b'"') | bytes_equal(x, b'\\') | zero_bytes(x & !(ONES * 0x1F));
        let lt = bytes_equal(x, b'<');
        if stop != 0 {
            let first = stop.trailing_zeros() / 8;
            let before = (1u64 << (first * 8)) - 1;
            less_than += (lt & before).count_ones() as usize;
            return Some((at + first as usize, less_than));
        }
        less_than += lt.count_ones() as usize;
        at += 8;
    }
    while let Some(&b) = bytes.get(at) {
        if b == b'"' || b == b'\\' || b < 0x20 {
            return Some((at, less_than));
        }
        less_than += usize::from(b == b'<');
        at += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `text` written as a JSON string literal the way `serde_json` writes it.
    fn literal(text: &str) -> String {
        serde_json::to_string(text).unwrap()
    }

    #[test]
    fn measures_what_decoding_gives() {
        let texts = [
            "",
            "plain",
            "a \"quoted\" \\path\n<tag> \t\r\u{8}\u{c}\u{1}\u{1f}",
            "naïve 漢字 😀 <<",
        ];
        for text in texts {
            let lit = literal(text);
            let mut m = TextMeasure::default();
            let mut scan = Scan::new(lit.as_bytes());
            assert_eq!(scan.measured_string(&mut m), Some(()), "{lit}");
            assert_eq!(m, TextMeasure::of(text), "{lit}");
        }
        // Escapes serde_json never writes but reads.
        let cases = [
            (r#""\u0041\/\u00e9\ud83d\ude00\u003c""#, "A/é😀<"),
            (r#""\u0000\u001F\u0008""#, "\u{0}\u{1f}\u{8}"),
        ];
        for (lit, text) in cases {
            let mut m = TextMeasure::default();
            assert_eq!(Scan::new(lit.as_bytes()).measured_string(&mut m), Some(()));
            assert_eq!(m, TextMeasure::of(text), "{lit}");
        }
    }

    #[test]
    fn refuses_what_serde_json_refuses() {
        for bad in [
            "\"a\u{1}b\"",
            r#""\x""#,
            r#""\u12""#,
            r#""\ud83d""#,
            r#""\ude00""#,
            r#""\ud83d\u0041""#,
            r#""unterminated"#,
        ] {
            let mut m = TextMeasure::default();
            assert_eq!(
                Scan::new(bad.as_bytes()).measured_string(&mut m),
                None,
                "{bad}"
            );
            assert!(serde_json::from_str::<String>(bad).is_err(), "{bad}");
        }
    }

    proptest::proptest! {
        /// Whenever the scanner accepts a value, serde_json accepts it too, and a string's
        /// measure is that of its decoded text.
        #[test]
        fn accepted_values_are_serde_json_values(
            raw in proptest::collection::vec(proptest::sample::select(vec![
                "\"", "\\", "u", "d83d", "de00", "0041", "{", "}", "[", "]", ":", ",", "1", "0",
                "-", ".", "e", "+", "true", "null", "fals", " ", "a", "<", "é", "\n", "\u{1}",
            ]), 0..24)
        ) {
            let text: String = raw.concat();
            let mut scan = Scan::new(text.as_bytes());
            if scan.skip_value().and_then(|()| scan.finish()).is_some() {
                proptest::prop_assert!(serde_json::from_str::<serde_json::Value>(&text).is_ok(), "{}", text);
            }
            let mut m = TextMeasure::default();
            let mut scan = Scan::new(text.as_bytes());
            if scan.measured_string(&mut m).and_then(|()| scan.finish()).is_some() {
                let decoded: String = serde_json::from_str(&text).unwrap();
                proptest::prop_assert_eq!(m, TextMeasure::of(&decoded));
            }
        }

        /// The eight-bytes-at-a-time run end is the bytewise one, from every start.
        #[test]
        fn run_end_is_the_bytewise_scan(
            bytes in proptest::collection::vec(proptest::sample::select(vec![
                b'a', b'<', b'"', b'\\', 0x00, 0x1F, 0x20, 0x7F, 0x80, 0xBC, 0xDC, 0xE2, 0xFF,
            ]), 0..40),
            from in 0usize..40,
        ) {
            let from = from.min(bytes.len());
            let rest = &bytes[from..];
            let naive = rest
                .iter()
                .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
                .map(|end| (from + end, rest[..end].iter().fold(0, |n, &b| n + usize::from(b == b'<'))));
            proptest::prop_assert_eq!(run_end(&bytes, from), naive);
        }

        /// Any text serde_json writes is accepted and measured exactly.
        #[test]
        fn any_written_text_is_measured(text in "\\PC*|[\"\\\\<\\x00-\\x1f]*") {
            let lit = literal(&text);
            let mut m = TextMeasure::default();
            proptest::prop_assert_eq!(Scan::new(lit.as_bytes()).measured_string(&mut m), Some(()));
            proptest::prop_assert_eq!(m, TextMeasure::of(&text));
        }
    }
}
