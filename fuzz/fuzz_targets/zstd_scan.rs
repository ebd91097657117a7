//! The `.zstd` log reader on arbitrary bytes, raw (hostile frames) or compressed from the
//! input (valid frames, optionally cut short): never panics, never holds a line over the
//! limit, packed rows over the member cap are damage, seqs are contiguous from 0.
#![no_main]

use std::io::{BufReader, Write};
use std::path::Path;

use dsh_store::dsh_compat::ZstdFrames;
use dsh_store::reader::{Limits, scan_limited};
use libfuzzer_sys::fuzz_target;

const LIMITS: Limits = Limits {
    max_line_bytes: 4096,
    max_packed_members: 64,
};

fn compressed(body: &[u8], cut: usize) -> Vec<u8> {
    let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap();
    enc.write_all(body).unwrap();
    let mut out = enc.finish().unwrap();
    if cut > 0 && cut < out.len() {
        out.truncate(out.len() - cut);
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let bytes = match mode % 3 {
        0 => rest.to_vec(),
        1 => compressed(rest, 0),
        _ => compressed(rest, usize::from(mode / 3)),
    };
    let src = BufReader::new(ZstdFrames::new(bytes));
    let mut next = 0u64;
    let result = scan_limited(Path::new("/fuzz/session.jsonl.zstd"), src, &LIMITS, &mut |e, _| {
        assert_eq!(e.seq, next, "seqs are contiguous from 0");
        next += 1;
        Ok(())
    });
    if let Ok(summary) = result {
        assert_eq!(summary.next_seq, next);
        assert!(summary.readable_len <= 4096 * (summary.lines + 1));
    }
});
