//! `--symbols A,B` and `--between 09:30-16:00`: which rows the replay's outputs write.
//!
//! The filter chooses rows, never what the books hold: the books still apply every message
//! (an execution's stock is known only from the add that named it), and the final depth
//! (`--book-out`) is the books as they ended, restricted to the symbols (the time window does
//! not move the end of the day).
//!
//! Every file output takes it (`--bbo-out`, `--book-out`, `--dbn-out`, `--sample-out`,
//! `--parquet-out`, whose footer then says the filter), so a filtered output is exactly the
//! unfiltered one's rows of those symbols and times, on one thread or many, from an ITCH or
//! a DBN input. `--between HH:MM[:SS[.f]]-HH:MM[:SS[.f]]` is ITCH time of day (New York),
//! start included, end excluded (`09:30-16:00` keeps 09:30:00 up to but not 16:00:00); rows
//! are kept by their own stamp (`timestamp_ns`, the sampling boundary, DBN's message time).
//! A symbol the input's stock directory never lists is a warning on stderr (even with
//! `-q`), not an error: one list serves many days, and a stock may not trade on one of them;
//! the warning shows a typo. An empty or over-long symbol, or a bad window, exits 2. The
//! summary's `bbo_rows` counts rows before the filter. Not with `--pace`.
//!
//! ```
//! use ticklane_outputs::output_filter::OutputFilter;
//! use ticklane_itch::Nanos;
//!
//! let filter = OutputFilter::parse("AAPL,MSFT", "09:30-16:00").expect("valid");
//! let ten_am = Nanos(10 * 3_600_000_000_000);
//! assert!(filter.keeps(b"AAPL", ten_am));
//! assert!(!filter.keeps(b"ZVZZT", ten_am));
//! assert!(!filter.keeps(b"AAPL", Nanos(16 * 3_600_000_000_000)));
//! ```

use ticklane_itch::Nanos;

/// Nanoseconds in an hour, a minute, a second.
const HOUR_NS: u64 = 3_600_000_000_000;
const MINUTE_NS: u64 = 60_000_000_000;
const SECOND_NS: u64 = 1_000_000_000;

/// Why `--symbols` or `--between` was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    /// A symbol that ITCH cannot carry (empty, longer than 8 bytes, or not printable ASCII).
    #[error("--symbols: {symbol:?} is not an ITCH symbol (1 to 8 printable ASCII characters, no spaces)")]
    Symbol {
        /// The symbol as given.
        symbol: String,
    },
    /// A time window that is not `HH:MM[:SS[.fraction]]-HH:MM[:SS[.fraction]]` with the start
    /// before the end.
    #[error("--between {text:?}: {why} (give e.g. 09:30-16:00 or 09:30:00.5-09:31)")]
    Between {
        /// The window as given.
        text: String,
        /// What is wrong with it.
        why: &'static str,
    },
}

/// A half-open window of ITCH time of day (nanoseconds since midnight, New York):
/// `start <= t < end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeWindow {
    /// First nanosecond inside.
    pub start: Nanos,
    /// First nanosecond after.
    pub end: Nanos,
}

/// Which rows the outputs write: all of them unless symbols or a time window are given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OutputFilter {
    /// The symbols kept, each space-padded to 8 bytes as a big-endian `u64`, sorted; `None`
    /// keeps every symbol.
    symbols: Option<Box<[u64]>>,
    /// The time window kept; `None` keeps every time.
    between: Option<TimeWindow>,
}

/// A symbol padded with spaces to ITCH's 8 bytes, as one comparable integer.
#[inline]
fn symbol_key(symbol: &[u8]) -> Option<u64> {
    if symbol.is_empty() || symbol.len() > 8 {
        return None;
    }
    let mut padded = [b' '; 8];
    padded[..symbol.len()].copy_from_slice(symbol);
    Some(u64::from_be_bytes(padded))
}

impl OutputFilter {
    /// Parses `--symbols` (comma separated; empty keeps all) and `--between` (empty keeps
    /// all day).
    ///
    /// # Errors
    ///
    /// [`FilterError`] naming the option and the bad value.
    pub fn parse(symbols: &str, between: &str) -> Result<Self, FilterError> {
        Ok(OutputFilter {
            symbols: parse_symbols(symbols)?,
            between: if between.trim().is_empty() {
                None
            } else {
                Some(parse_between(between)?)
            },
        })
    }

    /// True if every row is kept.
    pub fn keeps_all(&self) -> bool {
        self.symbols.is_none() && self.between.is_none()
    }

    /// True if the symbols are restricted.
    pub fn has_symbols(&self) -> bool {
        self.symbols.is_some()
    }

    /// The time window, if one was given.
    pub fn between(&self) -> Option<TimeWindow> {
        self.between
    }

    /// The symbols kept (trimmed), if restricted.
    pub fn symbols(&self) -> Vec<String> {
        self.symbols
            .iter()
            .flat_map(|keys| keys.iter())
            .map(|key| String::from_utf8_lossy(key.to_be_bytes().trim_ascii_end()).into_owned())
            .collect()
    }

    /// True if rows of `symbol` (trimmed or space padded) are written.
    #[inline]
    pub fn keeps_symbol(&self, symbol: &[u8]) -> bool {
        match &self.symbols {
            None => true,
            Some(keys) => {
                symbol_key(symbol.trim_ascii_end()).is_some_and(|k| keys.binary_search(&k).is_ok())
            }
        }
    }

    /// True if rows stamped `at` (ITCH time of day) are written.
    #[inline]
    pub fn keeps_time(&self, at: Nanos) -> bool {
        self.between
            .is_none_or(|w| w.start.0 <= at.0 && at.0 < w.end.0)
    }

    /// True if a row of `symbol` stamped `at` is written.
    #[inline]
    pub fn keeps(&self, symbol: &[u8], at: Nanos) -> bool {
        self.keeps_time(at) && self.keeps_symbol(symbol)
    }
}

fn parse_symbols(text: &str) -> Result<Option<Box<[u64]>>, FilterError> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    let mut keys = Vec::new();
    for symbol in text.split(',').map(str::trim) {
        let printable = symbol.bytes().all(|b| b.is_ascii_graphic());
        match symbol_key(symbol.as_bytes()) {
            Some(key) if printable => keys.push(key),
            _ => {
                return Err(FilterError::Symbol {
                    symbol: symbol.to_string(),
                })
            }
        }
    }
    keys.sort_unstable();
    keys.dedup();
    Ok(Some(keys.into_boxed_slice()))
}

fn parse_between(text: &str) -> Result<TimeWindow, FilterError> {
    let bad = |why| FilterError::Between {
        text: text.to_string(),
        why,
    };
    let (start, end) = text
        .trim()
        .split_once('-')
        .ok_or_else(|| bad("no `-` between the start and the end"))?;
    let start = time_of_day(start).map_err(bad)?;
    let end = time_of_day(end).map_err(bad)?;
    if start >= end {
        return Err(bad("the start is not before the end"));
    }
    Ok(TimeWindow {
        start: Nanos(start),
        end: Nanos(end),
    })
}

/// `HH:MM[:SS[.fraction]]` in nanoseconds since midnight; `24:00` is the end of the day.
fn time_of_day(text: &str) -> Result<u64, &'static str> {
    let mut parts = text.trim().split(':');
    let number = |part: Option<&str>, max: u64| -> Result<Option<u64>, &'static str> {
        let Some(part) = part else { return Ok(None) };
        if part.len() != 2 || !part.bytes().all(|b| b.is_ascii_digit()) {
            return Err("hours, minutes and seconds are two digits each");
        }
        let n: u64 = part.parse().map_err(|_| "not a number")?;
        if n > max {
            return Err("a field is out of range");
        }
        Ok(Some(n))
    };
    let hours = number(parts.next(), 24)?.ok_or("no hours")?;
    let minutes = number(parts.next(), 59)?.ok_or("a time is HH:MM at least")?;
    let mut ns = hours * HOUR_NS + minutes * MINUTE_NS;
    if let Some(seconds) = parts.next() {
        let (whole, fraction) = seconds.split_once('.').unwrap_or((seconds, ""));
        ns += number(Some(whole), 59)?.unwrap_or(0) * SECOND_NS;
        if fraction.len() > 9 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
            return Err("the fraction of a second is 1 to 9 digits");
        }
        if !fraction.is_empty() {
            let digits: u64 = fraction.parse().map_err(|_| "not a number")?;
            ns += digits * 10u64.pow(9 - fraction.len() as u32);
        }
    }
    if parts.next().is_some() {
        return Err("too many `:` fields");
    }
    if ns > 24 * HOUR_NS {
        return Err("past 24:00");
    }
    Ok(ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_options_keep_everything() {
        let f = OutputFilter::parse("", "").expect("empty is valid");
        assert!(f.keeps_all());
        assert!(f.keeps(b"ANY", Nanos(0)));
        assert!(f.keeps(b"ANY", Nanos(u64::MAX)));
    }

    #[test]
    fn symbols_match_trimmed_or_padded_exactly() {
        let f = OutputFilter::parse(" MSFT,AAPL ,AAPL", "").expect("valid");
        assert_eq!(f.symbols(), ["AAPL", "MSFT"]);
        assert!(f.keeps_symbol(b"AAPL"));
        assert!(f.keeps_symbol(b"AAPL    "));
        assert!(f.keeps_symbol(b"MSFT"));
        assert!(!f.keeps_symbol(b"AAP"));
        assert!(!f.keeps_symbol(b"AAPLX"));
        assert!(!f.keeps_symbol(b""));
        assert!(!f.keeps_symbol(b"AAPL0000X"));
    }

    #[test]
    fn bad_symbols_are_refused_by_name() {
        for bad in ["A,,B", "TOOLONGXX", "A B", "A,\u{e9}"] {
            match OutputFilter::parse(bad, "") {
                Err(FilterError::Symbol { .. }) => {}
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn the_window_is_half_open_in_nanoseconds_since_midnight() {
        let f = OutputFilter::parse("", "09:30-16:00").expect("valid");
        // 09:30 = 34,200 s and 16:00 = 57,600 s, written out by hand.
        let open = 34_200 * SECOND_NS;
        let close = 57_600 * SECOND_NS;
        assert_eq!(
            f.between(),
            Some(TimeWindow {
                start: Nanos(open),
                end: Nanos(close)
            })
        );
        assert!(!f.keeps_time(Nanos(open - 1)));
        assert!(f.keeps_time(Nanos(open)));
        assert!(f.keeps_time(Nanos(close - 1)));
        assert!(!f.keeps_time(Nanos(close)));
    }

    #[test]
    fn seconds_and_fractions_are_read() {
        let f = OutputFilter::parse("", "09:30:01.5-09:30:02.000000001").expect("valid");
        let w = f.between().expect("given");
        assert_eq!(w.start, Nanos(34_201_500_000_000));
        assert_eq!(w.end, Nanos(34_202_000_000_001));
        let whole_day = OutputFilter::parse("", "00:00-24:00").expect("valid");
        assert_eq!(
            whole_day.between().expect("given").end,
            Nanos(86_400 * SECOND_NS)
        );
    }

    #[test]
    fn bad_windows_are_refused() {
        for bad in [
            "09:30",
            "16:00-09:30",
            "09:30-09:30",
            "9:30-16:00",
            "09:60-16:00",
            "25:00-26:00",
            "09:30-24:01",
            "09:30:00.1234567890-10:00",
            "09:30:00:00-10:00",
            "x-y",
        ] {
            match OutputFilter::parse("", bad) {
                Err(FilterError::Between { .. }) => {}
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }
}
