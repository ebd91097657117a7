//! App tests of the transcript, the previews, switching sessions and the commands
//! (issue 27, part B), on the harness of the app tests.

use super::*;

/// Issue 27 minor 4: a tab in the user's own message (and in the model's reply quoting it)
/// is expanded in the transcript, not shown as `\x09`.
#[tokio::test]
async fn tabs_in_a_sent_message_and_its_reply_are_expanded() {
    let mut h = harness(true).await;
    send_and_expect(&mut h, "ab\tcd\tx", "ab\tcd\tx").await;
    let shown = format!("{}", screen(&mut h.app, 80, 24).backend());
    assert!(shown.contains("› ab  cd  x"), "{shown}");
    assert!(!shown.contains("\\x09"), "{shown}");
}
