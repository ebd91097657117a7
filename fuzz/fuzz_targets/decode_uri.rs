//! `decode_uri` on arbitrary text: never panics, accepts only canonical URIs, and every
//! string survives an encode/decode round trip.
#![no_main]

use dsh_reference::{decode_uri, encode_uri};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(id) = decode_uri(&text) {
        assert_eq!(encode_uri(&id), text, "accepted a non-canonical URI");
    }
    let uri = encode_uri(&text);
    assert_eq!(
        decode_uri(&uri).ok().as_deref(),
        Some(&*text),
        "round trip of {text:?}"
    );
});
