//! Streaming reads of a `.zstd` log for its writer: frames are found by walking their
//! headers on disk and decoded one at a time, so opening or re-reading a big compressed log
//! holds one frame's decoder, never the whole file or its plaintext.
//!
//! The torn-frame rule matches the read-only path (`dsh_compat::ZstdFrames`): the stream
//! ends at the first incomplete frame, an undecodable final frame ends it too (a torn
//! write), and an undecodable frame before the last is an `InvalidData` error.

use std::cell::RefCell;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::rc::Rc;

/// `Read` over `file` from `pos` up to `end` with positioned reads, so a clone of the
/// writer's locked handle (which shares the cursor) is never moved.
pub(crate) struct ReadAt<'a> {
    file: &'a File,
    pos: u64,
    end: u64,
}

impl<'a> ReadAt<'a> {
    pub(crate) fn new(file: &'a File, pos: u64, end: u64) -> Self {
        ReadAt { file, pos, end }
    }
}

impl Read for ReadAt<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.end.saturating_sub(self.pos);
        let want = usize::try_from(left).unwrap_or(usize::MAX).min(buf.len());
        let Some(buf) = buf.get_mut(..want) else {
            return Ok(0);
        };
        if buf.is_empty() {
            return Ok(0);
        }
        let n = read_at(self.file, buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], pos: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, pos)
}

#[cfg(windows)]
fn read_at(file: &File, buf: &mut [u8], pos: u64) -> io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, pos)
}

/// Fill `buf` from `pos`; `false` when the file ends first.
fn read_exact_at(file: &File, buf: &mut [u8], pos: u64, end: u64) -> io::Result<bool> {
    let mut src = ReadAt::new(file, pos, end);
    match src.read_exact(buf) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}

/// End of the complete frame starting at `start`, or `None` when the bytes there are not a
/// frame or the frame runs past `end`.
pub(crate) fn frame_end(file: &File, start: u64, end: u64) -> io::Result<Option<u64>> {
    let span = super::zstd_frame_walk::walk_frame(
        |pos, buf| read_exact_at(file, buf, pos, end),
        start,
        end,
    )?;
    Ok(span.map(|s| s.end))
}

/// Where decoded frames end: `(file offset, plaintext offset)` of each boundary still
/// needed (the scanner drops those it has read past).
pub(crate) type FrameEnds = Rc<RefCell<Vec<(u64, u64)>>>;

type Decoder<'a> = zstd::stream::read::Decoder<'static, BufReader<ReadAt<'a>>>;

/// The plaintext of the frames of `file` in `[start, end)`, decoded one frame at a time;
/// every frame boundary reached is pushed to `ends`.
pub(crate) struct Frames<'a> {
    file: &'a File,
    at: u64,
    end: u64,
    current: Option<(Decoder<'a>, u64)>,
    plain: u64,
    ends: FrameEnds,
    done: bool,
}

impl<'a> Frames<'a> {
    pub(crate) fn new(file: &'a File, start: u64, end: u64, ends: FrameEnds) -> Self {
        Frames {
            file,
            at: start,
            end,
            current: None,
            plain: 0,
            ends,
            done: false,
        }
    }

    /// Open the next frame; `false` at the end of the complete frames.
    fn open_next(&mut self) -> io::Result<bool> {
        let Some(stop) = frame_end(self.file, self.at, self.end)? else {
            self.done = true;
            return Ok(false);
        };
        let last = frame_end(self.file, stop, self.end)?.is_none();
        if last
            && super::zstd_frame_walk::check_whole(self.at, stop)
            && !super::zstd_frame_walk::decodes_whole(ReadAt::new(self.file, self.at, stop))?
        {
            // A damaged last frame is a torn tail: none of it is read.
            self.done = true;
            return Ok(false);
        }
        let src = ReadAt::new(self.file, self.at, stop);
        let decoder = zstd::stream::read::Decoder::new(src)?.single_frame();
        self.current = Some((decoder, stop));
        Ok(true)
    }
}

impl Read for Frames<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if self.done {
                return Ok(0);
            }
            let Some((decoder, stop)) = self.current.as_mut() else {
                if !self.open_next()? {
                    return Ok(0);
                }
                continue;
            };
            let stop = *stop;
            match decoder.read(buf) {
                Ok(0) => {
                    self.current = None;
                    self.at = stop;
                    self.ends.borrow_mut().push((stop, self.plain));
                }
                Ok(n) => {
                    self.plain += n as u64;
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.current = None;
                    self.done = true;
                    let last = frame_end(self.file, stop, self.end)?.is_none();
                    if last {
                        // A damaged final frame is a torn tail: the stream ends here.
                        return Ok(0);
                    }
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("zstd frame at byte {} cannot be decoded: {e}", self.at),
                    ));
                }
            }
        }
    }
}

/// The first `len` plaintext bytes of the frame at `start`, compressed again as one frame
/// (what a writer puts back after cutting a log inside that frame).
pub(crate) fn reframe_prefix(file: &File, start: u64, end: u64, len: u64) -> io::Result<Vec<u8>> {
    let ends: FrameEnds = Rc::default();
    let mut plain = Frames::new(file, start, end, ends).take(len);
    let mut encoder = zstd::stream::write::Encoder::new(Vec::new(), 3)?;
    encoder.include_checksum(true)?;
    encoder.set_pledged_src_size(Some(len))?;
    encoder.include_contentsize(true)?;
    let copied = io::copy(&mut plain, &mut encoder)?;
    if copied != len {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "zstd frame shorter on the second read",
        ));
    }
    encoder.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn frames_file(frames: &[&[u8]], tail: &[u8]) -> (tempfile::TempDir, File, u64) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.zstd");
        let mut f = File::create(&path).unwrap();
        for plain in frames {
            f.write_all(&crate::dsh_compat::encode_frame(plain).unwrap())
                .unwrap();
        }
        f.write_all(tail).unwrap();
        drop(f);
        let f = File::open(&path).unwrap();
        let len = f.metadata().unwrap().len();
        (dir, f, len)
    }

    #[test]
    fn frames_stream_in_order_and_report_each_boundary() {
        let big = vec![b'q'; 300_000];
        let (_d, f, len) = frames_file(&[b"one\n", &big, b"three\n"], b"");
        let ends: FrameEnds = Rc::default();
        let mut out = Vec::new();
        Frames::new(&f, 0, len, ends.clone())
            .read_to_end(&mut out)
            .unwrap();
        let mut want = b"one\n".to_vec();
        want.extend_from_slice(&big);
        want.extend_from_slice(b"three\n");
        assert_eq!(out, want);
        let ends = ends.borrow();
        assert_eq!(ends.len(), 3);
        assert_eq!(ends[2], (len, want.len() as u64));
        assert_eq!(ends[0].1, 4);
    }

    #[test]
    fn a_cut_final_frame_ends_the_stream_and_garbage_after_a_frame_is_ignored() {
        let whole = crate::dsh_compat::encode_frame(b"second\n").unwrap();
        let cut = &whole[..whole.len() - 3];
        let (_d, f, len) = frames_file(&[b"first\n"], cut);
        let mut out = Vec::new();
        Frames::new(&f, 0, len, Rc::default())
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, b"first\n");
        let (_d, f, len) = frames_file(&[b"first\n"], b"not a frame at all");
        let mut out = Vec::new();
        Frames::new(&f, 0, len, Rc::default())
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, b"first\n");
    }

    #[test]
    fn a_damaged_frame_before_the_last_is_an_error_and_a_damaged_last_one_a_torn_end() {
        let mut bad = crate::dsh_compat::encode_frame(b"middle line\n").unwrap();
        let n = bad.len();
        bad[n - 1] ^= 0xFF; // checksum mismatch: the frame is complete but undecodable
        let good = crate::dsh_compat::encode_frame(b"after\n").unwrap();
        let mut tail = bad.clone();
        tail.extend_from_slice(&good);
        let (_d, f, len) = frames_file(&[b"first\n"], &tail);
        let err = Frames::new(&f, 0, len, Rc::default())
            .read_to_end(&mut Vec::new())
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        let (_d, f, len) = frames_file(&[b"first\n"], &bad);
        let mut out = Vec::new();
        Frames::new(&f, 0, len, Rc::default())
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, b"first\n", "none of the damaged frame is read");
    }

    /// Everything `src` gives, read `chunk` bytes at a time.
    fn read_in_chunks(mut src: impl Read, chunk: usize) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; chunk];
        loop {
            match src.read(&mut buf)? {
                0 => return Ok(out),
                k => out.extend_from_slice(&buf[..k]),
            }
        }
    }

    /// A damaged final frame gives nothing, whatever its size and wherever the damage: the
    /// writer's stream and the read-only reader end at the frame before it, so a writer
    /// never keeps lines the reader does not see (nor lines of a frame that failed its check).
    #[test]
    fn a_damaged_final_frame_adds_nothing_to_either_stream() {
        let mut noise = fastrand::Rng::with_seed(7);
        for size in [12usize, 4_000, 130_000, 400_000] {
            let mut plain: Vec<u8> = (0..size)
                .map(|i| {
                    if i % 61 == 60 {
                        b'\n'
                    } else {
                        b'a' + noise.u8(..26)
                    }
                })
                .collect();
            plain.push(b'\n');
            let frame = crate::dsh_compat::encode_frame(&plain).unwrap();
            let n = frame.len();
            for at in [n - 1, n - 4, n / 2, 20.min(n - 1)] {
                let mut bad = frame.clone();
                bad[at] ^= 0x5A;
                let (_d, f, len) = frames_file(&[b"first\n"], &bad);
                for chunk in [1usize, 7, 4096, 1 << 20] {
                    let writer = Frames::new(&f, 0, len, Rc::default());
                    let reader =
                        crate::dsh_compat::ZstdFrames::from_file(f.try_clone().unwrap()).unwrap();
                    for (who, out) in [
                        ("writer", read_in_chunks(writer, chunk)),
                        ("reader", read_in_chunks(reader, chunk)),
                    ] {
                        assert_eq!(
                            out.unwrap(),
                            b"first\n",
                            "{who}: size {size}, damage at {at}, reads of {chunk}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn frame_ends_agree_with_zstd_on_every_frame_shape() {
        let mut frames: Vec<Vec<u8>> = vec![Vec::new(), b"x".to_vec(), vec![7u8; 1 << 18]];
        // A frame without checksum or content size, and a skippable frame.
        let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap();
        enc.write_all(&vec![b'a'; 200_000]).unwrap();
        frames.push(enc.finish().unwrap());
        let mut skippable = 0x184D_2A53u32.to_le_bytes().to_vec();
        skippable.extend_from_slice(&5u32.to_le_bytes());
        skippable.extend_from_slice(b"12345");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mut bytes = Vec::new();
        for (i, plain) in frames.iter().enumerate() {
            if i == 3 {
                bytes.extend_from_slice(plain);
            } else {
                bytes.extend_from_slice(&crate::dsh_compat::encode_frame(plain).unwrap());
            }
        }
        bytes.extend_from_slice(&skippable);
        std::fs::write(&path, &bytes).unwrap();
        let f = File::open(&path).unwrap();
        let mut at = 0usize;
        while at < bytes.len() {
            let want = zstd::zstd_safe::find_frame_compressed_size(&bytes[at..]).unwrap();
            let got = frame_end(&f, at as u64, bytes.len() as u64)
                .unwrap()
                .unwrap();
            assert_eq!(got, (at + want) as u64);
            at += want;
        }
    }

    #[test]
    fn reframing_a_prefix_keeps_exactly_those_bytes() {
        let (_d, f, len) = frames_file(&[b"header\n", b"a\nb\nc-partial"], b"");
        let start = frame_end(&f, 0, len).unwrap().unwrap();
        let frame = reframe_prefix(&f, start, len, 4).unwrap();
        assert_eq!(zstd::stream::decode_all(&frame[..]).unwrap(), b"a\nb\n");
    }
}
