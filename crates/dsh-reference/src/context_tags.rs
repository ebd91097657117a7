//! The tags framing the prepared context and the reading of the array between them: a leaf,
//! so the prompt's writer and the reference entry's reader share it without importing each
//! other.

/// Opening framing tag.
pub const OPEN_TAG: &str = "<referenced-sessions>";
/// Closing framing tag.
pub const CLOSE_TAG: &str = "</referenced-sessions>";

/// The serialized array between the tags, if `text` is a context built by [`super::prompt::prompt_text`].
pub fn serialized_sources(text: &str) -> Option<&str> {
    let start = text.find(&format!("{OPEN_TAG}\n"))? + OPEN_TAG.len() + 1;
    let inner = text.get(start..)?.strip_suffix(&format!("\n{CLOSE_TAG}"))?;
    Some(inner)
}
