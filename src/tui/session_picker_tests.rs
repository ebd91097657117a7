//! Key-sequence tests of the `/resume` picker.
