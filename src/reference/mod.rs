//! reference layer.
