//! The trading session's date, and the UTC instant of its midnight in New York: ITCH stamps
//! each message in nanoseconds since that midnight, DBN in nanoseconds since the UNIX epoch.

use std::path::Path;

use time::{Date, Month};

/// Why a session date could not be had.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SessionDateError {
    /// `--date` was not a valid `YYYY-MM-DD`.
    #[error("--date {given:?}: expected a real date as YYYY-MM-DD, from 1990 to 2200")]
    Invalid {
        /// What was given.
        given: String,
    },
    /// No `--date`, and the file name holds no date.
    #[error(
        "{}: no session date in the file name (MMDDYYYY or YYYYMMDD); give --date YYYY-MM-DD",
        path
    )]
    NotInFileName {
        /// The input file.
        path: String,
    },
}

/// One trading day, as New York sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionDate(Date);

impl SessionDate {
    /// A date for a writer that must stamp its records with a date's times where the
    /// session's is not known: its reader counts ITCH time from this date's midnight.
    pub const UNDATED: SessionDate = match Date::from_calendar_date(2000, Month::January, 3) {
        Ok(date) => SessionDate(date),
        Err(_) => panic!("2000-01-03 is a date"),
    };

    /// Parses `YYYY-MM-DD`.
    ///
    /// # Errors
    ///
    /// [`SessionDateError::Invalid`] for anything else, or a day the calendar lacks.
    pub fn parse(text: &str) -> Result<Self, SessionDateError> {
        let invalid = || SessionDateError::Invalid {
            given: text.to_owned(),
        };
        let b = text.as_bytes();
        if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
            return Err(invalid());
        }
        let digits = |r: std::ops::Range<usize>| -> Option<u32> {
            let part = &text[r];
            part.bytes()
                .all(|c| c.is_ascii_digit())
                .then(|| part.parse().ok())
                .flatten()
        };
        let (Some(y), Some(m), Some(d)) = (digits(0..4), digits(5..7), digits(8..10)) else {
            return Err(invalid());
        };
        Self::from_ymd(y, m, d).ok_or_else(invalid)
    }

    /// The date in a capture's file name: the first run of exactly eight digits, read as
    /// Nasdaq names its files (`01302019.NASDAQ_ITCH50`, MMDDYYYY) or as `20190130`
    /// (YYYYMMDD), whichever is a real date (MMDDYYYY first).
    ///
    /// # Errors
    ///
    /// [`SessionDateError::NotInFileName`] when no such run is a date.
    pub fn from_file_name(path: &Path) -> Result<Self, SessionDateError> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let bytes = name.as_bytes();
        let mut start = 0;
        while start < bytes.len() {
            if !bytes[start].is_ascii_digit() {
                start += 1;
                continue;
            }
            let end = start
                + bytes[start..]
                    .iter()
                    .take_while(|c| c.is_ascii_digit())
                    .count();
            if end - start == 8 {
                let n = |r: std::ops::Range<usize>| -> u32 {
                    name[start + r.start..start + r.end].parse().unwrap_or(0)
                };
                if let Some(date) = Self::from_ymd(n(4..8), n(0..2), n(2..4))
                    .or_else(|| Self::from_ymd(n(0..4), n(4..6), n(6..8)))
                {
                    return Ok(date);
                }
            }
            start = end;
        }
        Err(SessionDateError::NotInFileName {
            path: path.display().to_string(),
        })
    }

    fn from_ymd(year: u32, month: u32, day: u32) -> Option<Self> {
        // ITCH 5.0 began in 2013; the bound keeps a stray eight digits from passing as a date.
        if !(1990..=2200).contains(&year) {
            return None;
        }
        let month = Month::try_from(u8::try_from(month).ok()?).ok()?;
        Date::from_calendar_date(i32::try_from(year).ok()?, month, u8::try_from(day).ok()?)
            .ok()
            .map(SessionDate)
    }

    /// The calendar date.
    pub fn date(self) -> Date {
        self.0
    }

    /// Whether New York keeps daylight time at this date's midnight. Since 2007 daylight
    /// time runs from 02:00 on the second Sunday of March to 02:00 on the first Sunday of
    /// November; from 1987 to 2006, from the first Sunday of April to the last Sunday of
    /// October. Midnight of a changeover day still has the old offset.
    pub fn is_daylight_time(self) -> bool {
        let year = self.0.year();
        let (begins, ends) = if year >= 2007 {
            (
                nth_sunday(year, Month::March, 2),
                nth_sunday(year, Month::November, 1),
            )
        } else {
            (
                nth_sunday(year, Month::April, 1),
                last_sunday(year, Month::October),
            )
        };
        self.0 > begins && self.0 <= ends
    }

    /// Nanoseconds from the UNIX epoch to this date's midnight in New York (UTC−5, or UTC−4
    /// in daylight time).
    pub fn midnight_utc_ns(self) -> u64 {
        let days = i64::from(self.0.to_julian_day() - UNIX_EPOCH_JULIAN_DAY);
        let offset_hours: i64 = if self.is_daylight_time() { 4 } else { 5 };
        let seconds = days * 86_400 + offset_hours * 3_600;
        // Dates are bounded to 1990..=2200 on construction, so this is positive and fits.
        u64::try_from(seconds).expect("invariant: session dates are after 1990") * 1_000_000_000
    }
}

impl std::str::FromStr for SessionDate {
    type Err = SessionDateError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        SessionDate::parse(text)
    }
}

/// Julian day number of 1970-01-01.
const UNIX_EPOCH_JULIAN_DAY: i32 = 2_440_588;

fn nth_sunday(year: i32, month: Month, n: u8) -> Date {
    let first = Date::from_calendar_date(year, month, 1).expect("invariant: day 1 exists");
    let to_sunday = (7 - first.weekday().number_days_from_sunday()) % 7;
    first + time::Duration::days(i64::from(to_sunday + 7 * (n - 1)))
}

fn last_sunday(year: i32, month: Month) -> Date {
    let last = Date::from_calendar_date(year, month, month.length(year))
        .expect("invariant: a month's last day exists");
    last - time::Duration::days(i64::from(last.weekday().number_days_from_sunday()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(text: &str) -> SessionDate {
        SessionDate::parse(text).unwrap()
    }

    /// Changeover days from the published US calendars (timeanddate.com): 2019 began
    /// daylight time on March 10 and ended it on November 3; 2006 on April 2 and October 29.
    #[test]
    fn daylight_time_follows_the_us_rule_at_midnight() {
        assert!(!d("2019-01-30").is_daylight_time());
        assert!(
            !d("2019-03-10").is_daylight_time(),
            "changeover midnight is still EST"
        );
        assert!(d("2019-03-11").is_daylight_time());
        assert!(
            d("2019-11-03").is_daylight_time(),
            "changeover midnight is still EDT"
        );
        assert!(!d("2019-11-04").is_daylight_time());
        assert!(d("2020-07-01").is_daylight_time());
        assert!(!d("2006-04-02").is_daylight_time());
        assert!(d("2006-04-03").is_daylight_time());
        assert!(d("2006-10-29").is_daylight_time());
        assert!(!d("2006-10-30").is_daylight_time());
    }

    /// Known instants, from `date -u -d '2019-01-30 00:00 America/New_York' +%s` and the like.
    #[test]
    fn midnight_is_the_right_utc_instant() {
        assert_eq!(
            d("2019-01-30").midnight_utc_ns(),
            1_548_824_400 * 1_000_000_000
        );
        assert_eq!(
            d("2020-07-01").midnight_utc_ns(),
            1_593_576_000 * 1_000_000_000
        );
        assert_eq!(
            d("2019-03-10").midnight_utc_ns(),
            1_552_194_000 * 1_000_000_000
        );
    }

    #[test]
    fn dates_come_from_nasdaq_and_iso_file_names() {
        let from = |name: &str| SessionDate::from_file_name(Path::new(name));
        assert_eq!(from("/data/01302019.NASDAQ_ITCH50"), Ok(d("2019-01-30")));
        assert_eq!(from("S20190130-v50.txt.gz"), Ok(d("2019-01-30")));
        assert_eq!(from("12302019.NASDAQ_ITCH50.gz"), Ok(d("2019-12-30")));
        assert!(matches!(
            from("day.itch"),
            Err(SessionDateError::NotInFileName { .. })
        ));
        assert!(matches!(
            from("99999999.itch"),
            Err(SessionDateError::NotInFileName { .. })
        ));
    }

    #[test]
    fn bad_dates_are_refused() {
        for bad in [
            "2019-02-30",
            "2019-1-30",
            "20190130",
            "2019-13-01",
            "abcd-ef-gh",
            "",
        ] {
            assert!(SessionDate::parse(bad).is_err(), "{bad}");
        }
    }
}
