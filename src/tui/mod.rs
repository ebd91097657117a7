//! tui layer.
