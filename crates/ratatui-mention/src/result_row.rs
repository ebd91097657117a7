//! What a results list needs of a row ([`ResultRow`]): a leaf, so the rows (the popup's
//! [`crate::MentionItem`], a host's own) and the list both use it.

/// What a results list needs of a row: the host's identity of it and how many lines it
/// takes.
pub trait ResultRow: Clone {
    /// The host's identity of the row (offered rows already listed are left out by it; the
    /// preview is asked for by it).
    fn key(&self) -> &str;
    /// Lines the row takes on screen (at least one).
    fn lines(&self) -> u16;
    /// Why the row cannot be taken now (e.g. a limit is reached), if it cannot: Enter and
    /// Tab on it do nothing.
    fn blocked(&self) -> Option<&str> {
        None
    }
}
