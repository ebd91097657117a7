//! `parse_text` on arbitrary text: never panics; every reference it returns has a canonical
//! URI; text without `dsh-session:` is returned unchanged with no references.
#![no_main]

use dsh_reference::{decode_uri, encode_uri, format_mention, parse_text};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match parse_text(&text) {
        Ok(parsed) => {
            for r in &parsed.references {
                assert_eq!(
                    decode_uri(&encode_uri(&r.session_id)).ok().as_deref(),
                    Some(r.session_id.as_str())
                );
            }
            if !text.contains("dsh-session:") {
                assert!(parsed.references.is_empty());
                assert_eq!(parsed.text, text);
            }
        }
        Err(e) => assert!(text.contains("dsh-session:"), "error without a URI: {e:?}"),
    }
    // A mention built from the fuzzed text as id and label parses back to exactly that reference.
    let mention = format_mention(&text, Some(&text));
    let parsed = parse_text(&mention).expect("format_mention output parses");
    assert_eq!(parsed.references.len(), 1, "{mention:?}");
    assert_eq!(parsed.references[0].session_id, *text);
    assert_eq!(parsed.references[0].label.as_deref(), Some(&*text));
    assert_eq!(parsed.text, format!("@{text}"));
});
