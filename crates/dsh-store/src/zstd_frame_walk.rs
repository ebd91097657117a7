//! Where a zstd frame ends, found from its frame header and block headers alone (a few
//! bytes each; RFC 8878), so a `.zstd` log is split into frames without buffering one. Both
//! the read-only reader and the writer's streaming open use it.

use std::io;

/// zstd's frame magic and the skippable-frame magic range.
const ZSTD_MAGIC: u32 = 0xFD2F_B528;
const SKIPPABLE_MASK: u32 = 0xFFFF_FFF0;
const SKIPPABLE_MAGIC: u32 = 0x184D_2A50;

/// A frame whose structure is complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FrameSpan {
    /// Offset just past the frame.
    pub end: u64,
    /// A skippable frame: it carries no log data.
    pub skippable: bool,
    /// The plaintext length its header declares (`Frame_Content_Size`), when it does.
    pub content_size: Option<u64>,
}

/// The complete frame starting at `start`, or `None` when the data ends first, the frame
/// runs past `len`, or the bytes there are no frame. `read_exact_at(at, buf)` fills `buf`
/// from offset `at` and says `false` when the data ends first.
pub(crate) fn walk_frame(
    mut read_exact_at: impl FnMut(u64, &mut [u8]) -> io::Result<bool>,
    start: u64,
    len: u64,
) -> io::Result<Option<FrameSpan>> {
    let complete = |end: u64, skippable, content_size| {
        (end <= len).then_some(FrameSpan {
            end,
            skippable,
            content_size,
        })
    };
    let mut word = [0u8; 4];
    if start >= len || !read_exact_at(start, &mut word)? {
        return Ok(None);
    }
    let magic = u32::from_le_bytes(word);
    if magic & SKIPPABLE_MASK == SKIPPABLE_MAGIC {
        if !read_exact_at(start + 4, &mut word)? {
            return Ok(None);
        }
        return Ok(complete(
            start + 8 + u64::from(u32::from_le_bytes(word)),
            true,
            Some(0),
        ));
    }
    if magic != ZSTD_MAGIC {
        return Ok(None);
    }
    let mut descriptor = [0u8; 1];
    if !read_exact_at(start + 4, &mut descriptor)? {
        return Ok(None);
    }
    let [d] = descriptor;
    if d & 0x08 != 0 {
        return Ok(None); // reserved bit set: not a frame
    }
    let single_segment = d & 0x20 != 0;
    let window = u64::from(!single_segment);
    let dict_id = [0u64, 1, 2, 4][usize::from(d & 0x03)];
    let content_size = match d >> 6 {
        0 => u64::from(single_segment),
        1 => 2,
        2 => 4,
        _ => 8,
    };
    let declared = if content_size == 0 {
        None
    } else {
        let mut field = [0u8; 8];
        let width = usize::try_from(content_size).unwrap_or(8);
        let Some(bytes) = field.get_mut(..width) else {
            return Ok(None);
        };
        if !read_exact_at(start + 5 + window + dict_id, bytes)? {
            return Ok(None);
        }
        // A two-byte field stores the size minus 256 (RFC 8878, Frame_Content_Size).
        let raw = u64::from_le_bytes(field);
        Some(if width == 2 { raw + 256 } else { raw })
    };
    let mut at = start + 5 + window + dict_id + content_size;
    loop {
        let mut block = [0u8; 3];
        if !read_exact_at(at, &mut block)? {
            return Ok(None);
        }
        let header = u32::from(block[0]) | u32::from(block[1]) << 8 | u32::from(block[2]) << 16;
        let size = u64::from(header >> 3);
        let content = match (header >> 1) & 0x03 {
            0 | 2 => size,        // raw or compressed
            1 => 1,               // RLE: one byte repeated
            _ => return Ok(None), // reserved block type
        };
        at += 3 + content;
        if at > len {
            return Ok(None);
        }
        if header & 1 == 1 {
            break;
        }
    }
    if d & 0x04 != 0 {
        at += 4; // content checksum
    }
    Ok(complete(at, false, declared))
}

/// Last frames up to this many compressed bytes are checked whole before they are read
/// ([`decodes_whole`]). A torn write is one write batch (this project's are at most a few
/// MiB of lines, dsh's smaller); a larger last frame is a log compressed in one piece,
/// where checking first would decompress it twice, and it is streamed like the others.
pub(crate) const WHOLE_CHECK_MAX: u64 = 8 << 20;

/// Whether a last frame spanning `start..end` is small enough to check whole first.
pub(crate) fn check_whole(start: u64, end: u64) -> bool {
    end.saturating_sub(start) <= WHOLE_CHECK_MAX
}

/// Whether the one frame `src` holds decodes whole, its checksum included. A damaged last
/// frame is a torn tail that must give no bytes at all — a streaming decoder hands out a
/// block's bytes before the frame's check fails, so the last frame is checked this way
/// before any of it is read. A failure to read `src` itself is an error, not a `false`.
pub(crate) fn decodes_whole(src: impl io::Read) -> io::Result<bool> {
    /// Tells the source's own read errors from the decoder's verdict.
    struct Watched<R> {
        inner: R,
        failed: Option<io::Error>,
    }
    impl<R: io::Read> io::Read for Watched<R> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.inner.read(buf).inspect_err(|e| {
                self.failed = Some(io::Error::new(e.kind(), e.to_string()));
            })
        }
    }
    let mut watched = Watched {
        inner: src,
        failed: None,
    };
    let verdict = match zstd::stream::read::Decoder::new(&mut watched) {
        Ok(decoder) => io::copy(&mut decoder.single_frame(), &mut io::sink()).map(drop),
        Err(e) => Err(e),
    };
    match (verdict, watched.failed) {
        (Ok(()), _) => Ok(true),
        (Err(_), Some(read_error)) => Err(read_error),
        (Err(_), None) => Ok(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn in_memory(data: &[u8]) -> impl FnMut(u64, &mut [u8]) -> io::Result<bool> + '_ {
        move |at, buf| {
            let Some(src) = usize::try_from(at)
                .ok()
                .and_then(|at| data.get(at..at + buf.len()))
            else {
                return Ok(false);
            };
            buf.copy_from_slice(src);
            Ok(true)
        }
    }

    #[test]
    fn frames_are_found_by_their_headers_and_cut_ones_are_not() {
        let a = zstd::encode_all(&b"{\"a\":1}\n"[..], 3).unwrap();
        let b = zstd::encode_all(&vec![b'x'; 300_000][..], 1).unwrap();
        let mut skip = 0x184D_2A53u32.to_le_bytes().to_vec();
        skip.extend(3u32.to_le_bytes());
        skip.extend(b"abc");
        let data = [a.clone(), skip.clone(), b.clone()].concat();
        let len = data.len() as u64;
        let (a_end, skip_end) = (a.len() as u64, (a.len() + skip.len()) as u64);
        // What the headers declare, as zstd itself reads them.
        let declared = |frame: &[u8]| {
            zstd::zstd_safe::get_frame_content_size(frame)
                .ok()
                .flatten()
        };
        let (a_size, b_size) = (declared(&a), declared(&b));
        let table = [
            (
                0,
                len,
                Some(FrameSpan {
                    end: a_end,
                    skippable: false,
                    content_size: a_size,
                }),
            ),
            (
                a_end,
                len,
                Some(FrameSpan {
                    end: skip_end,
                    skippable: true,
                    content_size: Some(0),
                }),
            ),
            (
                skip_end,
                len,
                Some(FrameSpan {
                    end: len,
                    skippable: false,
                    content_size: b_size,
                }),
            ),
            (len, len, None),          // nothing left
            (skip_end, len - 1, None), // the last frame cut short
            (1, len, None),            // not at a frame start
        ];
        for (start, limit, want) in table {
            let got = walk_frame(in_memory(&data), start, limit).unwrap();
            assert_eq!(got, want, "frame at {start} of {limit}");
        }
    }
}
