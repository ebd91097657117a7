//! Up history: the inputs sent in every window (the history file's entries and this
//! window's own, each with the time Enter was pressed) and the own messages of the sessions
//! opened in this window (`/resume`, `--resume`, `--continue`: each with the time it was
//! logged), merged so Up recalls the newest typed first — not an opened session's messages
//! ahead of everything typed since (docs/composer.md, "Input history").

use std::collections::HashMap;

use ratatui_mention::MentionInputState;

/// An Up history entry and when it was typed (ms since the Unix epoch).
pub type Timed = (String, i64);

/// How long after Enter a message may be logged and still be the same input (preparing its
/// references takes a while).
const SAME_INPUT_WINDOW_MS: i64 = 10 * 60 * 1000;

/// The Up history of `history` (every window's inputs with the time each was typed, any
/// order) and `typed` (the opened sessions' own messages with the time each was logged),
/// oldest first, at most `max` (the newest). A message of a session that `history`
/// already holds — the same text, typed at most ten minutes before it was logged — counts
/// once, at its typed time; equal times keep `history` first, each list in its own order.
pub fn merged_history(history: &[Timed], typed: &[Timed], max: usize) -> Vec<Timed> {
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
        .map(|(at, _, text)| (text.to_owned(), at))
        .collect()
}

/// What the widget's Up history holds after pushing `entries` in turn: blank entries and
/// repeats of the entry before are not kept.
fn as_pushed(entries: Vec<Timed>) -> Vec<Timed> {
    let mut kept: Vec<Timed> = Vec::with_capacity(entries.len());
    for entry in entries {
        if entry.0.trim().is_empty() || kept.last().is_some_and(|last| last.0 == entry.0) {
            continue;
        }
        kept.push(entry);
    }
    kept
}

/// The entries of `current` (the widget's Up history, oldest first) missing from `shown`
/// (what was last put there, oldest first): those the widget pushed itself (a draft
/// cleared to history, an unsent message given back). Each gets the time of the entry
/// before it (0 at the front) so a merge keeps it in its place. Matched from the newest:
/// the widget drops its oldest entries past its cap, never newer ones.
pub fn unshown(current: &[String], shown: &[Timed]) -> Vec<Timed> {
    let mut matched = vec![None; current.len()];
    let mut rest = shown.iter().rev().peekable();
    for (slot, text) in matched.iter_mut().zip(current).rev() {
        if let Some((_, at)) = rest.next_if(|entry| entry.0 == *text) {
            *slot = Some(*at);
        }
    }
    let mut before = 0;
    let mut found = Vec::new();
    for (text, at) in current.iter().zip(matched) {
        match at {
            Some(at) => before = at,
            None => found.push((text.clone(), before)),
        }
    }
    found
}

/// Where the composer's Up history comes from, and what it last put into the widget.
#[derive(Debug, Default)]
pub struct UpHistory {
    /// Inputs sent in any window (and entries the widget pushed itself), newest `max`.
    sent: Vec<Timed>,
    /// The own messages of the sessions opened in this window, newest `max`.
    opened: Vec<Timed>,
    /// The widget's Up history as last put there, oldest first.
    shown: Vec<Timed>,
    max: usize,
}

impl UpHistory {
    /// Keeps at most `max` entries (the widget's own cap).
    pub fn new(max: usize) -> Self {
        UpHistory {
            max,
            ..UpHistory::default()
        }
    }

    /// Inputs sent (in any window, any order) with the time each was typed.
    pub fn add_sent(&mut self, entries: impl IntoIterator<Item = Timed>) {
        self.sent.extend(entries);
        keep_newest(&mut self.sent, self.max);
    }

    /// An opened session's own messages with the time each was logged; a session opened
    /// again adds nothing twice.
    pub fn add_opened(&mut self, typed: &[Timed]) {
        for entry in typed {
            if !self.opened.contains(entry) {
                self.opened.push(entry.clone());
            }
        }
        keep_newest(&mut self.opened, self.max);
    }

    /// Brings `input`'s Up history to the merge, leaving out `own` (the input just sent,
    /// which the widget's `take_submit` pushes next, its pastes collapsed): entries the
    /// widget pushed itself stay where they were; when the history only gains newer
    /// entries they are appended (the older keep their collapsed pastes), else it is
    /// refilled.
    pub fn sync(&mut self, input: &mut MentionInputState, own: Option<&Timed>) {
        let current = input.history_entries();
        let pushed = unshown(&current, &self.shown);
        self.add_sent(pushed);
        let mut want = merged_history(&self.sent, &self.opened, self.max);
        if let Some(at) = own.and_then(|own| want.iter().rposition(|e| e == own)) {
            want.remove(at);
        }
        let want = as_pushed(want);
        let appends = current.len() <= want.len()
            && current
                .iter()
                .zip(&want)
                .all(|(now, (text, _))| now == text);
        if !appends {
            input.clear_history();
        }
        let from = if appends { current.len() } else { 0 };
        for (text, _) in want.iter().skip(from) {
            input.push_history(text);
        }
        self.shown = want;
    }

    /// The widget pushed `own` (the input just sent) as its newest entry.
    pub fn took(&mut self, own: Timed) {
        self.shown.push(own);
        self.shown = as_pushed(std::mem::take(&mut self.shown));
        let extra = self.shown.len().saturating_sub(self.max);
        self.shown.drain(..extra);
    }
}

/// Drops the oldest of `entries` (by time, equal times in their order) past `max`, sorted.
fn keep_newest(entries: &mut Vec<Timed>, max: usize) {
    entries.sort_by_key(|(_, at)| *at);
    let extra = entries.len().saturating_sub(max);
    entries.drain(..extra);
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn entries(list: &[(&str, i64)]) -> Vec<(String, i64)> {
        list.iter().map(|(t, at)| ((*t).to_owned(), *at)).collect()
    }

    fn merged(history: &[Timed], typed: &[Timed], max: usize) -> Vec<String> {
        let merged = merged_history(history, typed, max);
        merged.into_iter().map(|(text, _)| text).collect()
    }

    fn widget(max: usize) -> MentionInputState {
        crate::tui::composer::session_items::composer_state(max)
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
            merged(&history, &session, 100),
            [
                "fix the login test",
                "and the flaky one",
                "why is ci red?",
                "/resume"
            ],
            "Up recalls /resume, then the other session's input, then this one's newest"
        );
        // Capped to the newest.
        assert_eq!(merged(&history, &session, 2), ["why is ci red?", "/resume"]);
        // The same text typed again later is a new input; one logged long after its
        // typing is another input too.
        let again = entries(&[("continue", 0), ("continue", 30 * min)]);
        let logged = entries(&[
            ("continue", 500),
            ("continue", 30 * min + 500),
            ("continue", 90 * min),
        ]);
        assert_eq!(merged(&again, &logged, 100).len(), 3);
        // Nothing at all.
        assert_eq!(merged(&[], &[], 10), Vec::<String>::new());
        // Equal times: the history's first, each in its own order.
        let at_once = entries(&[("a", 5), ("b", 5)]);
        let also = entries(&[("c", 5)]);
        assert_eq!(merged(&at_once, &also, 10), ["a", "b", "c"]);
    }

    #[test]
    fn merged_entries_keep_their_times() {
        let history = entries(&[("typed", 100)]);
        let session = entries(&[("typed", 150), ("logged only", 120)]);
        assert_eq!(
            merged_history(&history, &session, 10),
            entries(&[("typed", 100), ("logged only", 120)])
        );
    }

    /// The widget's entries, and what of them `shown` lacks (with the times they get).
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, i64)]);

    #[test]
    fn entries_the_widget_pushed_itself_are_found_in_their_place() {
        let shown = entries(&[("a", 10), ("b", 20), ("c", 30)]);
        let cases: &[Case] = &[
            (&["a", "b", "c"], &[]),
            (&[], &[]),
            // A draft cleared to history after c, another after a.
            (&["a", "x", "b", "c", "y"], &[("x", 10), ("y", 30)]),
            // The widget dropped its oldest past its cap.
            (&["b", "c", "z"], &[("z", 30)]),
            // Before anything was shown.
            (&["q", "a", "b", "c"], &[("q", 0)]),
            // The same text as a shown one, pushed again later.
            (&["a", "b", "c", "a"], &[("a", 30)]),
        ];
        for (current, want) in cases {
            let current: Vec<String> = current.iter().map(|t| (*t).to_owned()).collect();
            assert_eq!(unshown(&current, &shown), entries(want), "{current:?}");
        }
        assert_eq!(unshown(&["n".to_owned()], &[]), entries(&[("n", 0)]));
    }

    /// Issue 32 item 10: after a session is opened, Up recalls every window's inputs and
    /// the session's own messages newest typed first; an input sent while it loaded stays,
    /// and one sent from this app to that session is there once.
    #[test]
    fn an_opened_sessions_messages_join_by_time() {
        let mut input = widget(50);
        let mut up = UpHistory::new(50);
        up.add_sent(entries(&[
            ("old from a", 100),
            ("fix the login", 1_000),
            ("from b", 5_000),
        ]));
        up.sync(&mut input, None);
        // `/resume` typed, then a message sent while the session loads.
        up.add_sent(entries(&[("/resume", 6_000), ("while loading", 6_500)]));
        up.sync(&mut input, None);
        up.add_opened(&entries(&[
            ("fix the login", 1_200),
            ("and the flaky one", 2_000),
        ]));
        up.sync(&mut input, None);
        let want = [
            "old from a",
            "fix the login",
            "and the flaky one",
            "from b",
            "/resume",
            "while loading",
        ];
        assert_eq!(input.history_entries(), want);
        // Opened again (back and forth): nothing twice.
        up.add_opened(&entries(&[("and the flaky one", 2_000)]));
        up.sync(&mut input, None);
        assert_eq!(input.history_entries(), want);
    }

    #[test]
    fn own_entry_last_and_widget_entries_kept_through_a_refill() {
        let mut input = widget(50);
        let mut up = UpHistory::new(50);
        up.add_sent(entries(&[("one", 10), ("two", 20)]));
        up.sync(&mut input, None);
        // The widget keeps an unsent draft (cleared to history) after "two".
        input.set_draft("draft kept");
        assert!(input.clear_draft_to_history());
        // Sent now; another window's entry typed before it comes along.
        let own = ("three".to_owned(), 40);
        up.add_sent(entries(&[("elsewhere", 30), ("three", 40)]));
        input.set_draft("three");
        up.sync(&mut input, Some(&own));
        assert!(input.take_submit("three"), "the draft is cleared");
        up.took(own);
        assert_eq!(
            input.history_entries(),
            ["one", "two", "draft kept", "elsewhere", "three"]
        );
        // A session opened with an older message: refilled, the draft where it was.
        up.add_opened(&entries(&[("logged", 15)]));
        up.sync(&mut input, None);
        assert_eq!(
            input.history_entries(),
            ["one", "logged", "two", "draft kept", "elsewhere", "three"]
        );
        // Nothing new: nothing changes, nothing doubles.
        up.sync(&mut input, None);
        assert_eq!(input.history_entries().len(), 6);
    }

    #[test]
    fn capped_to_the_newest() {
        let mut input = widget(3);
        let mut up = UpHistory::new(3);
        up.add_sent(entries(&[("a", 1), ("b", 2), ("c", 3), ("d", 4)]));
        up.add_opened(&entries(&[("s", 5)]));
        up.sync(&mut input, None);
        assert_eq!(input.history_entries(), ["c", "d", "s"]);
        let own = ("e".to_owned(), 6);
        up.add_sent([own.clone()]);
        up.sync(&mut input, Some(&own));
        input.take_submit("e");
        up.took(own);
        assert_eq!(input.history_entries(), ["d", "s", "e"]);
        up.sync(&mut input, None);
        assert_eq!(input.history_entries(), ["d", "s", "e"]);
    }
}
