//! A log scan that decodes lines on two threads, for very long logs (SPEC §8), with exactly
//! the results of [`reader::scan_at`]: a batch of lines is decoded in parallel without the
//! seq check, then walked in order; a line whose quick decode failed or does not continue the
//! seqs is decoded again by `decode_line`, so events, errors and torn tails are the
//! sequential scan's own.

use std::io::BufRead;
use std::path::Path;

use super::event::Event;
use super::query::QueryError;
use super::reader::{
    self, LinePos, ScanPos, ScanSummary, TornTail, UNTERMINATED, decode_line,
    decode_line_unchecked, is_turn_end,
};

/// How much is read ahead and when a second thread is worth it.
#[derive(Debug, Clone, Copy)]
struct Batching {
    /// Bytes of lines read ahead and decoded together.
    batch_bytes: usize,
    /// Below this many bytes a batch is decoded on the calling thread alone.
    parallel_min_bytes: usize,
}

const BATCHING: Batching = Batching {
    batch_bytes: 4 << 20,
    parallel_min_bytes: 256 << 10,
};

/// Like [`reader::scan_at`], decoding on two threads.
pub fn scan_at_batched(
    path: &Path,
    mut src: impl BufRead,
    on_event: &mut dyn FnMut(Event, LinePos) -> Result<(), QueryError>,
) -> Result<ScanSummary, QueryError> {
    let (header, start) = reader::scan_header(path, &mut src)?;
    let (end, torn_tail) = scan_events_in_batches(path, src, start, on_event, BATCHING)?;
    Ok(ScanSummary::new(header, end, torn_tail))
}

/// Like [`reader::scan_events_at`], decoding on two threads.
pub fn scan_events_batched(
    path: &Path,
    src: impl BufRead,
    start: ScanPos,
    on_event: &mut dyn FnMut(Event, LinePos) -> Result<(), QueryError>,
) -> Result<(ScanPos, Option<TornTail>), QueryError> {
    scan_events_in_batches(path, src, start, on_event, BATCHING)
}

fn scan_events_in_batches(
    path: &Path,
    mut src: impl BufRead,
    start: ScanPos,
    on_event: &mut dyn FnMut(Event, LinePos) -> Result<(), QueryError>,
    batching: Batching,
) -> Result<(ScanPos, Option<TornTail>), QueryError> {
    let mut pos = start;
    let mut batch: Vec<u8> = Vec::with_capacity(batching.batch_bytes + (64 << 10));
    let mut spans: Vec<(usize, usize)> = Vec::new();
    loop {
        batch.clear();
        spans.clear();
        // A read error is reported only after the lines before it, as a sequential scan would.
        let mut read_error = None;
        let mut ended = false;
        while batch.len() < batching.batch_bytes {
            let from = batch.len();
            let line_no = pos.line + 1 + spans.len() as u64;
            match reader::read_line(path, &mut src, &mut batch, line_no) {
                Ok(0) => {
                    ended = true;
                    break;
                }
                Ok(n) => {
                    spans.push((from, from + n));
                    if !batch.ends_with(b"\n") {
                        ended = true;
                        break;
                    }
                }
                Err(e) => {
                    read_error = Some(e);
                    break;
                }
            }
        }
        let decoded = decode_batch(&batch, &spans, batching.parallel_min_bytes);
        let lines = spans.iter().filter_map(|&(from, to)| batch.get(from..to));
        for (i, (line, quick)) in lines.zip(decoded).enumerate() {
            let line_no = pos.line + 1;
            let result = match line.strip_suffix(b"\n") {
                None => Err(UNTERMINATED.to_owned()),
                Some(body) => match quick {
                    Ok(events) if events.first().map(|e| e.seq) == Some(pos.next_seq) => Ok(events),
                    _ => decode_line(body, pos.next_seq),
                },
            };
            match result {
                Ok(events) => {
                    pos.next_seq += events.len() as u64;
                    let at = LinePos {
                        line: line_no,
                        offset: pos.readable_len,
                        len: line.len() as u64,
                    };
                    for event in events {
                        on_event(event, at)?;
                    }
                    pos.readable_len += line.len() as u64;
                    pos.line = line_no;
                }
                Err(reason) => {
                    let later = spans
                        .get(i + 1..)
                        .unwrap_or_default()
                        .iter()
                        .filter_map(|&(from, to)| batch.get(from..to));
                    let mut complete_turn_end_follows = (line.ends_with(b"\n")
                        && is_turn_end(line))
                        || later.clone().any(|l| l.ends_with(b"\n") && is_turn_end(l));
                    if !complete_turn_end_follows {
                        if let Some(e) = read_error {
                            return Err(e);
                        }
                        let last_line = line_no + later.count() as u64;
                        let mut buf = Vec::new();
                        complete_turn_end_follows =
                            reader::turn_end_follows(path, &mut src, &mut buf, last_line)?;
                    }
                    if complete_turn_end_follows {
                        return Err(reader::corrupt(
                            path,
                            line_no,
                            format!("{reason} (before the last complete turn/end)"),
                        ));
                    }
                    return Ok((
                        pos,
                        Some(TornTail {
                            line: line_no,
                            reason,
                        }),
                    ));
                }
            }
        }
        if let Some(e) = read_error {
            return Err(e);
        }
        if ended {
            return Ok((pos, None));
        }
    }
}

/// Quick-decode every terminated line of `batch` (unterminated ones get an error), the
/// second half of the bytes on a helper thread.
fn decode_batch(
    batch: &[u8],
    spans: &[(usize, usize)],
    parallel_min_bytes: usize,
) -> Vec<Result<Vec<Event>, String>> {
    let decode = |spans: &[(usize, usize)]| -> Vec<Result<Vec<Event>, String>> {
        spans
            .iter()
            .map(
                |&(from, to)| match batch.get(from..to).and_then(|l| l.strip_suffix(b"\n")) {
                    Some(body) => decode_line_unchecked(body),
                    None => Err(UNTERMINATED.to_owned()),
                },
            )
            .collect()
    };
    let total = spans.last().map_or(0, |s| s.1);
    if total < parallel_min_bytes {
        return decode(spans);
    }
    let mid = spans.partition_point(|s| s.0 < total / 2);
    let (first, second) = spans.split_at(mid);
    std::thread::scope(|scope| {
        let helper = scope.spawn(|| decode(second));
        let mut out = decode(first);
        match helper.join() {
            Ok(rest) => out.extend(rest),
            // The helper cannot panic short of a bug; decode its half here instead.
            Err(_) => out.extend(decode(second)),
        }
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    const H: &str = r#"{"type":"session","version":0,"id":"s","createdAt":5,"delegationDepth":0}"#;

    /// Event lines of many kinds, including a packed row that expands to three events.
    fn lines() -> Vec<String> {
        let mut out = Vec::new();
        let mut seq = 0u64;
        for turn in 0..6u64 {
            out.push(format!(r#"{{"type":"turn/start","seq":{seq},"time":1,"data":{{"turn":{turn},"trigger":{{"kind":"user"}}}}}}"#));
            seq += 1;
            out.push(format!(r#"{{"type":"user/message","seq":{seq},"time":2,"data":{{"id":"u","role":"user","content":[{{"type":"text","text":"héllo {turn}"}}],"source":{{"kind":"user"}}}},"surfaceOp":"append"}}"#));
            seq += 1;
            out.push(format!(r#"{{"type":"text-chunks","seq0":{seq},"time0":7,"data":{{"turn":{turn},"step":0,"index":0,"dt":[1,1],"texts":["a","b","c"]}}}}"#));
            seq += 3;
            out.push(format!(r#"{{"type":"turn/end","seq":{seq},"time":1,"data":{{"turn":{turn},"reason":{{"kind":"completed"}}}}}}"#));
            seq += 1;
        }
        out
    }

    type Outcome = Result<(Vec<(u64, LinePos)>, String), String>;

    fn run(text: &[u8], batched: Option<Batching>) -> Outcome {
        let mut seen = Vec::new();
        let mut on_event = |e: Event, at: LinePos| {
            seen.push((e.seq, at));
            Ok(())
        };
        let path = Path::new("/x/session.jsonl");
        let result = match batched {
            None => reader::scan_at(path, text, &mut on_event),
            Some(b) => {
                let mut src = text;
                reader::scan_header(path, &mut src).and_then(|(header, start)| {
                    let (end, torn) = scan_events_in_batches(path, src, start, &mut on_event, b)?;
                    Ok(ScanSummary::new(header, end, torn))
                })
            }
        };
        match result {
            Ok(summary) => Ok((seen, format!("{summary:?}"))),
            Err(e) => Err(format!("{e:?} after {seen:?}")),
        }
    }

    #[test]
    fn batched_scan_equals_the_sequential_scan_on_damaged_logs() {
        let base = lines();
        let mut logs: Vec<Vec<u8>> = Vec::new();
        let whole = format!("{H}\n{}\n", base.join("\n"));
        logs.push(whole.clone().into_bytes());
        // Every cut (torn tails and unterminated lines).
        for cut in (0..whole.len()).step_by(7) {
            logs.push(whole.as_bytes()[..cut].to_vec());
        }
        // Each line in turn damaged, dropped, or given a wrong seq.
        for i in 0..base.len() {
            for damage in 0..3 {
                let mut ls = base.clone();
                match damage {
                    0 => ls[i] = "{broken".into(),
                    1 => {
                        ls.remove(i);
                    }
                    _ => ls[i] = ls[i].replacen("\"seq", "\"seq\":999,\"x", 1),
                }
                logs.push(format!("{H}\n{}\n", ls.join("\n")).into_bytes());
            }
        }
        let batchings = [
            Batching {
                batch_bytes: 1,
                parallel_min_bytes: 0,
            },
            Batching {
                batch_bytes: 150,
                parallel_min_bytes: 0,
            },
            Batching {
                batch_bytes: 700,
                parallel_min_bytes: 300,
            },
            BATCHING,
        ];
        for (n, log) in logs.iter().enumerate() {
            let want = run(log, None);
            for b in batchings {
                assert_eq!(run(log, Some(b)), want, "log {n} with {b:?}");
            }
        }
    }
}
