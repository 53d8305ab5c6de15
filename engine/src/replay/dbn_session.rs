//! Which trading session a DBN MBO input belongs to, so that its top-of-book rows, its
//! `--between` window and its sampling boundaries are in ITCH time (nanoseconds since the
//! session's midnight in New York), as an ITCH replay's are.
//!
//! The session date is `--date` if given, else the New York date of the metadata's `start`,
//! else (a `start` of 0 or outside 1990..=2200) that of the first MBO record's `ts_event`.
//! An instant at or after 18:00 New York counts toward the next day's session: Nasdaq's day
//! runs from 04:00 to 20:00 New York, and Databento's daily files start at 00:00 UTC, which
//! is 19:00 (winter) or 20:00 (summer) New York the evening before; a file that ticklane
//! wrote starts at the session's own New York midnight.

use crate::dbn_out::SessionDate;

/// Nanoseconds in an hour and in a (UTC) day.
const HOUR_NS: u64 = 3_600_000_000_000;
const DAY_NS: u64 = 24 * HOUR_NS;
/// How far before New York midnight the next session is taken to begin (18:00 New York).
const EVE_NS: u64 = 6 * HOUR_NS;

/// The session of the instant `epoch_ns` (ns since the Unix epoch): the New York date of
/// `epoch_ns + 6 h`. `None` for an instant whose date is outside 1990..=2200 (what
/// [`SessionDate`] holds), such as a `start` of 0.
pub(super) fn session_of_instant(epoch_ns: u64) -> Option<SessionDate> {
    let shifted = epoch_ns.checked_add(EVE_NS)?;
    // New York midnight is 04:00 or 05:00 UTC, so its date is the UTC date or the one before.
    let utc = utc_date(shifted / DAY_NS)?;
    match utc {
        d if d.midnight_utc_ns() <= shifted => Some(d),
        d => utc_date(u64::from(days_since_epoch(d)?).checked_sub(1)?),
    }
}

/// Where a session's stamps start and its day ends, in ns since the Unix epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct SessionSpan {
    /// The session date's New York midnight: stamps are ns since this instant.
    pub midnight_ns: u64,
    /// The next date's New York midnight (23 or 25 hours later on a changeover day).
    pub next_midnight_ns: u64,
}

impl SessionSpan {
    /// The span of `date`.
    pub fn of(date: SessionDate) -> Self {
        let next = days_since_epoch(date)
            .and_then(|days| utc_date(u64::from(days) + 1))
            .map(SessionDate::midnight_utc_ns);
        let midnight_ns = date.midnight_utc_ns();
        SessionSpan {
            midnight_ns,
            // A date at the end of the range SessionDate holds: the day is 24 hours.
            next_midnight_ns: next.unwrap_or(midnight_ns + DAY_NS),
        }
    }
}

/// Days from 1970-01-01 to `date`.
fn days_since_epoch(date: SessionDate) -> Option<u32> {
    let epoch = time::Date::from_calendar_date(1970, time::Month::January, 1).ok()?;
    u32::try_from((date.date() - epoch).whole_days()).ok()
}

/// The date `days` after 1970-01-01, if [`SessionDate`] holds it.
fn utc_date(days: u64) -> Option<SessionDate> {
    let epoch = time::Date::from_calendar_date(1970, time::Month::January, 1).ok()?;
    let date = epoch.checked_add(time::Duration::days(i64::try_from(days).ok()?))?;
    let text = format!(
        "{:04}-{:02}-{:02}",
        date.year(),
        u8::from(date.month()),
        date.day()
    );
    SessionDate::parse(&text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn d(text: &str) -> SessionDate {
        SessionDate::parse(text).expect("a valid date")
    }

    /// Instants from GNU date, e.g. `date -d 'TZ="UTC" 2019-01-30 00:00' +%s` and
    /// `date -d 'TZ="America/New_York" 2019-01-30 18:00' +%s`.
    #[test]
    fn an_instant_belongs_to_the_new_york_session_it_falls_in_or_precedes() {
        // Databento daily files: 00:00 UTC is the evening before in New York.
        assert_eq!(session_of_instant(1_548_806_400 * S), Some(d("2019-01-30")));
        assert_eq!(session_of_instant(1_561_939_200 * S), Some(d("2019-07-01")));
        // ticklane's own files start at New York midnight.
        assert_eq!(session_of_instant(1_548_824_400 * S), Some(d("2019-01-30")));
        assert_eq!(session_of_instant(1_561_953_600 * S), Some(d("2019-07-01")));
        // 17:59:59 New York is still the day's; 18:00 is the next day's eve.
        assert_eq!(session_of_instant(1_548_889_199 * S), Some(d("2019-01-30")));
        assert_eq!(session_of_instant(1_548_889_200 * S), Some(d("2019-01-31")));
        // Changeover days: noon on 2019-03-10 (EDT from 02:00), 23:00 on 2019-11-03.
        assert_eq!(session_of_instant(1_552_233_600 * S), Some(d("2019-03-10")));
        assert_eq!(session_of_instant(1_572_840_000 * S), Some(d("2019-11-04")));
        // No date: a start of 0 is 1970.
        assert_eq!(session_of_instant(0), None);
        assert_eq!(session_of_instant(u64::MAX), None);
    }

    /// `TZ=America/New_York date -d '2019-03-11 00:00' +%s` and the 2019-01-30/31 midnights.
    #[test]
    fn a_span_runs_midnight_to_midnight_in_new_york() {
        let span = SessionSpan::of(d("2019-03-10"));
        assert_eq!(span.midnight_ns, 1_552_194_000 * S);
        assert_eq!(
            span.next_midnight_ns,
            1_552_276_800 * S,
            "23 hours that day"
        );
        let span = SessionSpan::of(d("2019-01-30"));
        assert_eq!(span.midnight_ns, 1_548_824_400 * S);
        assert_eq!(span.next_midnight_ns, (1_548_824_400 + 86_400) * S);
    }
}
