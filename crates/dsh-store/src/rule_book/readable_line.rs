//! This project's own rule beside dsh's: the writer never appends a line its reader would
//! refuse with the active limits. dsh reads lines of any length; this project's reader
//! loads a line of at most `store.max_line_bytes` (a longer one is a placeholder, see
//! [`crate::not_loaded`]), so a line the writer appended over that limit would come back
//! without its content. Checked on the serialised line, before anything is written
//! ([`crate::StoreError::LineTooLong`]).

use crate::reader::Limits;

/// Whether a line of `len` bytes (with its `\n`) is one the reader loads under `limits`.
pub fn readable(len: u64, limits: &Limits) -> bool {
    len <= limits.max_line_bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_itself_is_readable() {
        let limits = Limits {
            max_line_bytes: 4096,
            ..Limits::default()
        };
        assert!(readable(4096, &limits));
        assert!(!readable(4097, &limits));
    }
}
