//! Retention on arbitrary items and budgets: never panics; on success the tag-safe JSON has
//! exactly the reported size, fits the budget, holds no `<` and parses back to the retained
//! conversation; the stats add up.
#![no_main]

use std::borrow::Cow;

use dsh_reference::json_text::source_json;
use dsh_reference::{ConversationItem, SourceHeader, TurnRole, retain_source};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Byte 0-1: budget; then items separated by 0xFF, each led by a flags byte.
    let (Some(&lo), Some(&hi)) = (data.first(), data.get(1)) else {
        return;
    };
    let budget = usize::from(u16::from_le_bytes([lo, hi]));
    let text = String::from_utf8_lossy(&data[2..]);
    let mut parts = text.split('\u{fffd}');
    let label = parts.next().unwrap_or_default().to_owned();
    let items: Vec<ConversationItem<'_>> = parts
        .map(|p| {
            let flags = p.bytes().next().unwrap_or(0);
            ConversationItem {
                role: if flags & 1 == 0 {
                    TurnRole::User
                } else {
                    TurnRole::Assistant
                },
                text: Cow::Owned(p.to_owned()),
                checkpoint: flags & 6 == 6,
            }
        })
        .collect();
    let count = items.len();
    let header = SourceHeader {
        session_id: label.chars().rev().collect(),
        label: label.clone(),
        cwd: (label.len() % 2 == 0).then(|| label.clone()),
        captured_through_seq: Some(label.len() as u64),
    };
    if let Ok(r) = retain_source(header, items, budget) {
        let json = source_json(&r.data);
        assert_eq!(json.len(), r.serialized_bytes);
        assert!(json.len() <= budget);
        assert!(!json.contains('<'));
        let back: serde_json::Value = serde_json::from_str(&json).unwrap();
        let conversation = back["conversation"].as_array().unwrap();
        assert_eq!(conversation.len(), r.data.conversation.len());
        for (v, turn) in conversation.iter().zip(&r.data.conversation) {
            assert_eq!(v["text"].as_str().unwrap(), turn.text);
        }
        let s = r.stats;
        assert_eq!(s.original_messages, count);
        assert_eq!(s.retained_messages + s.omitted_messages, count);
    }
});
