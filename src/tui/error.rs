//! Errors of the terminal app layer.

/// Why the app stopped abnormally.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    #[error("terminal setup failed: {0}")]
    Setup(#[source] std::io::Error),
    #[error("reading terminal input failed: {0}")]
    Input(#[source] std::io::Error),
    #[error("drawing failed: {0}")]
    Draw(String),
}
