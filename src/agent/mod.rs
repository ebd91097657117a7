//! agent layer.
