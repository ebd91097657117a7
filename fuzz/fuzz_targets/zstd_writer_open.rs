//! The session writer opening a `.zstd` log of arbitrary frames (raw bytes, or the input
//! compressed, optionally cut short) after a valid header frame: it never panics, and it
//! agrees with the read-only reader: it opens exactly when the reader reads the log, keeps
//! exactly the readable events, and leaves a log the reader reads whole (no torn tail).
#![no_main]

use std::io::{BufReader, Write};
use std::path::Path;

use dsh_store::dsh_compat::{ZstdFrames, encode_frame};
use dsh_store::reader::{Limits, scan_limited};
use dsh_store::{Event, SessionStore};
use libfuzzer_sys::fuzz_target;

const LIMITS: Limits = Limits {
    max_line_bytes: 4096,
    max_packed_members: 64,
};

fn compressed(body: &[u8], cut: usize) -> Vec<u8> {
    let mut out = encode_frame(body).unwrap();
    if cut > 0 && cut < out.len() {
        out.truncate(out.len() - cut);
    }
    out
}

/// What the read-only path reads of `bytes`: its events, whether it ends in a torn tail.
fn read_only(bytes: Vec<u8>) -> Result<(Vec<Event>, bool), String> {
    let mut events = Vec::new();
    let src = BufReader::new(ZstdFrames::new(bytes));
    scan_limited(Path::new("/fuzz/log.zstd"), src, &LIMITS, &mut |e, _| {
        events.push(e);
        Ok(())
    })
    .map(|summary| (events, summary.torn_tail.is_some()))
    .map_err(|e| e.to_string())
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let header = r#"{"type":"session","version":0,"id":"f","createdAt":1,"delegationDepth":0}"#;
    let mut bytes = encode_frame(format!("{header}\n").as_bytes()).unwrap();
    match mode % 3 {
        0 => bytes.extend_from_slice(rest),
        1 => bytes.extend_from_slice(&compressed(rest, 0)),
        _ => bytes.extend_from_slice(&compressed(rest, usize::from(mode / 3))),
    }
    let want = read_only(bytes.clone());
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let session = root.join("_no-cwd").join("f");
    std::fs::create_dir_all(&session).unwrap();
    let log = session.join("session.jsonl.zstd");
    std::fs::File::create(&log).unwrap().write_all(&bytes).unwrap();
    let store = SessionStore::with_options(&root, None, false, LIMITS);
    let opened = store.open_writer("f", None);
    match (&want, opened) {
        (Ok((events, _)), Ok(writer)) => {
            assert_eq!(writer.next_seq(), events.len() as u64);
            assert_eq!(&writer.read_all_events().unwrap(), events);
            drop(writer);
            let after = read_only(std::fs::read(&log).unwrap()).unwrap();
            assert_eq!(&after.0, events, "the cut log reads back the same events");
            assert!(!after.1, "no torn tail is left behind");
        }
        (Err(_), Err(_)) => {
            // Corruption: the writer refuses and leaves the file untouched.
            assert_eq!(std::fs::read(&log).unwrap(), bytes);
        }
        (Ok(_), Err(e)) => panic!("the reader reads the log but the writer refuses: {e}"),
        (Err(e), Ok(_)) => panic!("the writer opens a log the reader refuses: {e}"),
    }
});
