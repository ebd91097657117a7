//! Reading a stream on a second thread (docs/performance.md: streaming prepare): a large
//! `.zstd` log is decompressed while the previous chunk is being scanned, so the two
//! costs overlap on a machine with two cores instead of adding up.
//!
//! The thread hands over exactly what the inner reader's `read` calls return, in order
//! (data, errors, end), in chunks; at most [`IN_FLIGHT`] chunks of [`CHUNK`] bytes wait, so
//! memory stays bounded whatever the stream's length. Dropping the reader stops the thread
//! at its next hand-over.

use std::io::{self, BufRead, Read};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

/// Bytes per chunk handed over.
pub const CHUNK: usize = 256 * 1024;
/// Chunks that may wait between the threads.
pub const IN_FLIGHT: usize = 2;

/// What the reading thread hands over: data or the error a read gave.
type Piece = io::Result<Vec<u8>>;

/// A [`BufRead`] over `inner`, which a thread of its own reads ahead.
#[derive(Debug)]
pub struct ReadAhead {
    pieces: Receiver<Piece>,
    /// Chunks already scanned go back to the thread for reuse.
    spare: SyncSender<Vec<u8>>,
    chunk: Vec<u8>,
    at: usize,
    ended: bool,
}

impl ReadAhead {
    /// Start reading `inner` on a new thread.
    pub fn spawn(inner: impl Read + Send + 'static) -> io::Result<Self> {
        let (give, pieces) = sync_channel::<Piece>(IN_FLIGHT);
        let (spare, spares) = sync_channel::<Vec<u8>>(IN_FLIGHT + 2);
        std::thread::Builder::new()
            .name("log-read-ahead".into())
            .spawn(move || read_on(inner, &give, &spares))?;
        Ok(ReadAhead {
            pieces,
            spare,
            chunk: Vec::new(),
            at: 0,
            ended: false,
        })
    }
}

/// The thread's loop: fill chunks from `inner` and hand them over until the end, or until
/// the reader is dropped.
fn read_on(mut inner: impl Read, give: &SyncSender<Piece>, spares: &Receiver<Vec<u8>>) {
    loop {
        let mut chunk = spares.try_recv().unwrap_or_default();
        chunk.resize(CHUNK, 0);
        let mut filled = 0;
        let mut failure = None;
        let mut end = false;
        while filled < CHUNK {
            match inner.read(chunk.get_mut(filled..).unwrap_or_default()) {
                Ok(0) => {
                    end = true;
                    break;
                }
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        chunk.truncate(filled);
        if filled > 0 && give.send(Ok(chunk)).is_err() {
            return;
        }
        if let Some(e) = failure
            && give.send(Err(e)).is_err()
        {
            return;
        }
        if end {
            return;
        }
    }
}

impl Read for ReadAhead {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        if let (Some(to), Some(from)) = (buf.get_mut(..n), available.get(..n)) {
            to.copy_from_slice(from);
        }
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for ReadAhead {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.at >= self.chunk.len() && !self.ended {
            match self.pieces.recv() {
                Ok(Ok(next)) => {
                    let done = std::mem::replace(&mut self.chunk, next);
                    self.at = 0;
                    // The thread may already have enough spares; then this one is freed.
                    let _ = self.spare.try_send(done);
                }
                Ok(Err(e)) => return Err(e),
                // The thread finished: the inner reader said end of stream.
                Err(_) => self.ended = true,
            }
        }
        Ok(self.chunk.get(self.at..).unwrap_or_default())
    }

    fn consume(&mut self, amount: usize) {
        self.at = (self.at + amount).min(self.chunk.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gives `script` in order: data pieces, errors, then the end (and the end forever).
    struct Scripted(std::collections::VecDeque<io::Result<Vec<u8>>>);

    impl Read for Scripted {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            match self.0.pop_front() {
                None => Ok(0),
                Some(Err(e)) => Err(e),
                Some(Ok(mut data)) => {
                    let n = data.len().min(buf.len());
                    buf[..n].copy_from_slice(&data[..n]);
                    if n < data.len() {
                        self.0.push_front(Ok(data.split_off(n)));
                    }
                    Ok(n)
                }
            }
        }
    }

    #[test]
    fn hands_over_every_byte_in_order() {
        let data: Vec<u8> = (0..3 * CHUNK + 123)
            .map(|i| u8::try_from(i % 251).unwrap())
            .collect();
        let pieces = data.chunks(7_777).map(|c| Ok(c.to_vec())).collect();
        let mut out = Vec::new();
        ReadAhead::spawn(Scripted(pieces))
            .unwrap()
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, data);
    }

    #[test]
    fn an_error_arrives_after_the_data_before_it_and_interruptions_are_retried() {
        let script = vec![
            Ok(b"one\n".to_vec()),
            Err(io::ErrorKind::Interrupted.into()),
            Ok(b"two\n".to_vec()),
            Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "frame 2 is damaged",
            )),
            Ok(b"never\n".to_vec()),
        ];
        let mut reader = ReadAhead::spawn(Scripted(script.into())).unwrap();
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        assert_eq!(line, "one\n");
        line.clear();
        reader.read_line(&mut line).unwrap();
        assert_eq!(line, "two\n");
        line.clear();
        let err = reader.read_line(&mut line).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("frame 2"), "{err}");
    }

    #[test]
    fn dropping_the_reader_stops_an_endless_stream() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};
        struct Counting(Arc<AtomicUsize>);
        impl Read for Counting {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                self.0.fetch_add(1, Ordering::SeqCst);
                buf.fill(b'x');
                Ok(buf.len())
            }
        }
        let reads = Arc::new(AtomicUsize::new(0));
        let mut reader = ReadAhead::spawn(Counting(Arc::clone(&reads))).unwrap();
        let mut first = [0u8; 10];
        reader.read_exact(&mut first).unwrap();
        assert_eq!(first, [b'x'; 10]);
        drop(reader);
        // The thread's next hand-over fails and it returns: the reads stop growing.
        let settled = |reads: &AtomicUsize| {
            std::thread::sleep(std::time::Duration::from_millis(50));
            reads.load(Ordering::SeqCst)
        };
        let mut before = settled(&reads);
        for _ in 0..100 {
            let now = settled(&reads);
            if now == before {
                break;
            }
            before = now;
        }
        assert_eq!(settled(&reads), before);
        assert!(
            before <= IN_FLIGHT + 3,
            "{before} reads: the thread read on"
        );
    }
}
