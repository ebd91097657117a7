//! Where an excerpt's window lies in its session: read by the excerpt reader, recorded by
//! retention in the reference entry (a leaf, so neither imports the other for it).

/// Where an excerpt's window lies in its session, as the reference entry records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExcerptWindow {
    /// The seq the mention asked for.
    pub seq: u64,
    /// Messages asked for on each side.
    pub before: u32,
    pub after: u32,
    /// The seq standing for it now: itself, or the checkpoint that replaced it.
    pub match_seq: u64,
    /// Seqs of the window's first and last message.
    pub first_seq: u64,
    pub last_seq: u64,
    /// 1-based positions of the window's first and last message in the projected
    /// conversation, and how many messages that conversation has.
    pub first: usize,
    pub last: usize,
    pub of: usize,
}
