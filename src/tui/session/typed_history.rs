//! Up history after a session is opened (`/resume`, `--resume`, `--continue`): what every
//! window typed (the history file, each entry with the time Enter was pressed) and the
//! opened session's own messages (each with the time it was logged), merged so Up recalls
//! the newest typed first — not the session's messages ahead of everything typed since.

use std::collections::HashMap;

/// How long after Enter a message may be logged and still be the same input (preparing its
/// references takes a while).
const SAME_INPUT_WINDOW_MS: i64 = 10 * 60 * 1000;

/// The Up history of `history` (every window's inputs with the time each was typed, any
/// order) and `typed` (the opened session's own messages with the time each was logged),
/// oldest first, at most `max` (the newest). A message of the session that `history`
/// already holds — the same text, typed at most ten minutes before it was logged — counts
/// once, at its typed time; equal times keep `history` first, each list in its own order.
pub fn merged_history(
    history: &[(String, i64)],
    typed: &[(String, i64)],
    max: usize,
) -> Vec<String> {
    // The typed times of each text in `history`, latest last, to pair the session's copies.
    let mut typed_at: HashMap<&str, Vec<i64>> = HashMap::new();
    for (text, at) in history {
        typed_at.entry(text.as_str()).or_default().push(*at);
    }
    for times in typed_at.values_mut() {
        times.sort_unstable();
    }
    let mut all: Vec<(i64, usize, &str)> = history
        .iter()
        .enumerate()
        .map(|(n, (text, at))| (*at, n, text.as_str()))
        .collect();
    for (n, (text, logged)) in typed.iter().enumerate() {
        let paired = typed_at.get_mut(text.as_str()).and_then(|times| {
            // The latest entry typed before it was logged, within the window.
            let found = times
                .iter()
                .rposition(|at| *at <= *logged && logged - at <= SAME_INPUT_WINDOW_MS)?;
            Some(times.remove(found))
        });
        if paired.is_none() {
            all.push((*logged, history.len() + n, text.as_str()));
        }
    }
    all.sort_by_key(|(at, order, _)| (*at, *order));
    let skip = all.len().saturating_sub(max);
    all.into_iter()
        .skip(skip)
        .map(|(_, _, text)| text.to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn entries(list: &[(&str, i64)]) -> Vec<(String, i64)> {
        list.iter().map(|(t, at)| ((*t).to_owned(), *at)).collect()
    }

    #[test]
    fn merged_by_time_with_the_sessions_own_inputs_once() {
        let min = 60_000;
        // Typed in another session an hour after the resumed session's last message.
        let history = entries(&[
            ("fix the login test", 10 * min),
            ("why is ci red?", 70 * min),
            ("/resume", 71 * min),
        ]);
        let session = entries(&[
            // Sent from this app: in the history too (logged a moment after Enter).
            ("fix the login test", 10 * min + 900),
            // Sent by another tool (dsh, `send`): only in the log.
            ("and the flaky one", 20 * min),
        ]);
        assert_eq!(
            merged_history(&history, &session, 100),
            [
                "fix the login test",
                "and the flaky one",
                "why is ci red?",
                "/resume"
            ],
            "Up recalls /resume, then the other session's input, then this one's newest"
        );
        // Capped to the newest.
        assert_eq!(
            merged_history(&history, &session, 2),
            ["why is ci red?", "/resume"]
        );
        // The same text typed again later is a new input; one logged long after its
        // typing is another input too.
        let again = entries(&[("continue", 0), ("continue", 30 * min)]);
        let logged = entries(&[
            ("continue", 500),
            ("continue", 30 * min + 500),
            ("continue", 90 * min),
        ]);
        assert_eq!(merged_history(&again, &logged, 100).len(), 3);
        // Nothing at all.
        assert_eq!(merged_history(&[], &[], 10), Vec::<String>::new());
        // Equal times: the history's first, each in its own order.
        let at_once = entries(&[("a", 5), ("b", 5)]);
        let also = entries(&[("c", 5)]);
        assert_eq!(merged_history(&at_once, &also, 10), ["a", "b", "c"]);
    }
}
