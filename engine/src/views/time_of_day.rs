//! ITCH timestamps (nanoseconds since midnight) as a time of day.

use ticklane_feed::itch::Nanos;

/// `hh:mm:ss.nnnnnnnnn`.
///
/// # Examples
///
/// ```
/// use ticklane_feed::itch::Nanos;
/// assert_eq!(ticklane_engine::views::time_of_day(Nanos(34_200_000_000_123)), "09:30:00.000000123");
/// ```
pub fn time_of_day(t: Nanos) -> String {
    let s = t.0 / 1_000_000_000;
    format!(
        "{:02}:{:02}:{:02}.{:09}",
        s / 3600,
        s / 60 % 60,
        s % 60,
        t.0 % 1_000_000_000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn midnight_close_and_last_nanosecond() {
        assert_eq!(time_of_day(Nanos(0)), "00:00:00.000000000");
        // 16:00:00 is 57,600 s after midnight.
        assert_eq!(time_of_day(Nanos(57_600_000_000_000)), "16:00:00.000000000");
        assert_eq!(time_of_day(Nanos(86_399_999_999_999)), "23:59:59.999999999");
    }
}
