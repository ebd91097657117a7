//! "2 h ago": how long ago a session was last active, as pickers show it.

/// Milliseconds in a minute, hour, day.
const MINUTE: i64 = 60_000;
const HOUR: i64 = 60 * MINUTE;
const DAY: i64 = 24 * HOUR;

/// How long before `now_ms` the time `then_ms` was (both Unix milliseconds), in the largest
/// whole unit: `just now` (under a minute, or a time in the future: a clock set apart),
/// `N min ago`, `N h ago`, `N d ago` (under two weeks), `N w ago` (under two months),
/// `N mo ago` (30-day months, under a year), `N y ago` (365-day years). Units are cut down,
/// never rounded up: 119 minutes are `1 h ago`.
pub fn relative_time(now_ms: i64, then_ms: i64) -> String {
    let ago = now_ms.saturating_sub(then_ms);
    if ago < MINUTE {
        return "just now".to_owned();
    }
    let (n, unit) = if ago < HOUR {
        (ago / MINUTE, "min")
    } else if ago < DAY {
        (ago / HOUR, "h")
    } else if ago < 14 * DAY {
        (ago / DAY, "d")
    } else if ago < 60 * DAY {
        (ago / (7 * DAY), "w")
    } else if ago < 365 * DAY {
        (ago / (30 * DAY), "mo")
    } else {
        (ago / (365 * DAY), "y")
    };
    format!("{n} {unit} ago")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        let now = 1_800_000_000_000;
        let cases: [(i64, &str); 20] = [
            (0, "just now"),
            (59_999, "just now"),
            (-5 * DAY, "just now"),
            (MINUTE, "1 min ago"),
            (59 * MINUTE + 59_999, "59 min ago"),
            (HOUR, "1 h ago"),
            (2 * HOUR - 1, "1 h ago"),
            (2 * HOUR, "2 h ago"),
            (DAY - 1, "23 h ago"),
            (DAY, "1 d ago"),
            (13 * DAY, "13 d ago"),
            (14 * DAY, "2 w ago"),
            (59 * DAY, "8 w ago"),
            (60 * DAY, "2 mo ago"),
            (364 * DAY, "12 mo ago"),
            (365 * DAY, "1 y ago"),
            (3 * 365 * DAY + DAY, "3 y ago"),
            (now, "57 y ago"),
            (i64::MAX, "292471208 y ago"),
            (i64::MIN, "just now"),
        ];
        for (ago, want) in cases {
            assert_eq!(
                relative_time(now, now.saturating_sub(ago)),
                want,
                "{ago} ms ago"
            );
        }
        // Extreme inputs never overflow.
        assert_eq!(relative_time(i64::MAX, i64::MIN), "292471208 y ago");
        assert_eq!(relative_time(i64::MIN, i64::MAX), "just now");
    }
}
