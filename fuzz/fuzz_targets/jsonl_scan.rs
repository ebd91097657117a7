//! The session log reader on arbitrary bytes: never panics; delivers contiguous seqs from 0;
//! the readable prefix re-reads to the same events with no torn tail; every event read
//! writes back (as the writer serializes it) and reads back equal; folding never panics.
#![no_main]

use std::path::Path;

use dsh_store::reader::scan;
use dsh_store::{Event, SurfaceFolder};
use libfuzzer_sys::fuzz_target;

fn read(bytes: &[u8]) -> Result<(Vec<Event>, u64, bool), String> {
    let mut events = Vec::new();
    let summary = scan(Path::new("/fuzz/session.jsonl"), bytes, &mut |e, _| {
        events.push(e);
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    Ok((events, summary.readable_len, summary.torn_tail.is_some()))
}

fuzz_target!(|data: &[u8]| {
    let Ok((events, readable_len, _torn)) = read(data) else {
        return;
    };
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e.seq, i as u64, "seqs are contiguous from 0");
    }
    let readable_len = usize::try_from(readable_len).unwrap();
    assert!(readable_len <= data.len());
    let prefix = &data[..readable_len];
    let (again, again_len, again_torn) = read(prefix).expect("the readable prefix reads");
    assert_eq!(again, events, "prefix re-read differs");
    assert_eq!(again_len as usize, readable_len);
    assert!(!again_torn, "the readable prefix has no torn tail");

    let mut folder = SurfaceFolder::new();
    for e in &events {
        let _ = folder.push(e);
    }

    // Write back the way the writer does (header line + one compact JSON line per event).
    let header_end = prefix.iter().position(|&b| b == b'\n').unwrap();
    let mut log = prefix[..=header_end].to_vec();
    for e in &events {
        serde_json::to_writer(&mut log, e).unwrap();
        log.push(b'\n');
    }
    let (written, _, torn) = read(&log).expect("a re-written log reads");
    assert!(!torn, "a re-written log has no torn tail");
    assert_eq!(written, events, "events changed through a write/read cycle");
});
