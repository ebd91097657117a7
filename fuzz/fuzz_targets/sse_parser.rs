//! The SSE parser on arbitrary bytes and chunkings: never panics, and the items it yields do
//! not depend on how the stream is split into chunks.
#![no_main]

use dsh_refs::llm::sse::{SseItem, SseParser};
use libfuzzer_sys::fuzz_target;

fn run(chunks: &[&[u8]], max_line: usize) -> Result<Vec<SseItem>, String> {
    let mut parser = SseParser::new(max_line);
    let mut out = Vec::new();
    for chunk in chunks {
        out.extend(parser.push(chunk).map_err(|e| e.to_string())?);
    }
    Ok(out)
}

fuzz_target!(|data: &[u8]| {
    // First byte: line limit; second: chunk size; the rest is the stream.
    let (Some(&limit), Some(&size)) = (data.first(), data.get(1)) else {
        return;
    };
    let stream = &data[2..];
    let max_line = usize::from(limit) + 1;
    let whole = run(&[stream], max_line);
    let chunks: Vec<&[u8]> = stream.chunks(usize::from(size % 16) + 1).collect();
    let split = run(&chunks, max_line);
    let bytes: Vec<&[u8]> = stream.chunks(1).collect();
    let single = run(&bytes, max_line);
    assert_eq!(whole, split, "chunking changed the result");
    assert_eq!(whole, single, "byte-at-a-time changed the result");
});
