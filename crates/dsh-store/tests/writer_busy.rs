//! Issue 32 item 8: a picker marks a session whose log a writer holds (another app window),
//! and asking never gets in a writer's way.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: a failure should stop the test

use dsh_store::{EventData, Message, NewEvent, SessionHeader, SessionStore, StoreError};

#[test]
fn a_session_held_by_a_writer_is_busy_and_free_once_it_is_let_go() {
    let tmp = tempfile::tempdir().unwrap();
    let store = SessionStore::new(tmp.path());
    assert!(!store.writer_busy("s-1").unwrap(), "no log: not busy");
    let header = SessionHeader::new("s-1", 1, Some("/w".into()));
    let mut writer = store.open_writer("s-1", Some(header)).unwrap();
    assert!(
        !store.writer_busy("s-1").unwrap(),
        "nothing published yet: no log to hold"
    );
    writer
        .append(dsh_store::layout::in_turns(
            1,
            [NewEvent::appended(EventData::UserMessage(
                Message::user_text("hello"),
            ))],
        ))
        .unwrap();
    assert!(store.writer_busy("s-1").unwrap());
    // Asking took nothing: the writer appends on, a second writer is still refused.
    writer
        .append(dsh_store::layout::in_turns(
            2,
            [NewEvent::appended(EventData::UserMessage(
                Message::user_text("again"),
            ))],
        ))
        .unwrap();
    assert!(matches!(
        store.open_writer("s-1", None),
        Err(StoreError::Busy { .. })
    ));
    drop(writer);
    assert!(!store.writer_busy("s-1").unwrap(), "let go");
    // And asking leaves the log free for the next writer.
    let reopened = store.open_writer("s-1", None);
    assert!(reopened.is_ok(), "{:?}", reopened.err());
}
