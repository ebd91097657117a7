//! Writing subcommand output: all of it to stdout, and times shown the same way everywhere.

use std::io::Write;

use super::CliError;

/// Write all of `text` to stdout; a reader that closed the pipe gives
/// [`CliError::Output`] with `BrokenPipe`, which ends the command quietly.
pub fn write_stdout(text: &str) -> Result<(), CliError> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(CliError::Output)
}

/// `createdAt` (Unix ms) as local time, or the raw number when out of range.
pub fn local_time(ms: i64) -> String {
    use chrono::TimeZone;
    match chrono::Local.timestamp_millis_opt(ms) {
        chrono::LocalResult::Single(t) | chrono::LocalResult::Ambiguous(t, _) => {
            t.format("%Y-%m-%d %H:%M").to_string()
        }
        chrono::LocalResult::None => ms.to_string(),
    }
}
