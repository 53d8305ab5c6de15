//! `--sample 1s`: the interval between sampling boundaries.

use std::num::NonZeroU64;
use std::str::FromStr;

/// The sampling interval, in nanoseconds of ITCH time. Boundaries are its multiples since
/// midnight: `1s` samples at 09:30:00, 09:30:01, …; `7s` at multiples of 7 s since midnight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SampleInterval(NonZeroU64);

/// The units `--sample` accepts, longest suffix first so `ms` is not read as `m`.
const UNITS: [(&str, u64); 6] = [
    ("ns", 1),
    ("us", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

impl SampleInterval {
    /// An interval of `ns` nanoseconds.
    pub fn from_nanos(ns: NonZeroU64) -> Self {
        SampleInterval(ns)
    }

    /// The interval in nanoseconds.
    pub fn nanos(self) -> u64 {
        self.0.get()
    }
}

impl FromStr for SampleInterval {
    type Err = String;

    /// A whole number and a unit: `500ns`, `250us`, `100ms`, `1s`, `5m`, `1h`.
    fn from_str(text: &str) -> Result<Self, String> {
        let bad = |why: &str| format!("--sample {text:?}: {why} (give e.g. 100ms, 1s, 5m)");
        let split = text
            .find(|c: char| !c.is_ascii_digit())
            .ok_or_else(|| bad("no unit (ns, us, ms, s, m or h)"))?;
        let (digits, unit) = text.split_at(split);
        let scale = UNITS
            .iter()
            .find(|(name, _)| *name == unit)
            .map(|&(_, scale)| scale)
            .ok_or_else(|| bad("the unit is one of ns, us, ms, s, m, h"))?;
        let count: u64 = digits
            .parse()
            .map_err(|_| bad("a whole number comes before the unit"))?;
        let ns = count
            .checked_mul(scale)
            .filter(|&ns| ns <= 86_400_000_000_000)
            .ok_or_else(|| bad("longer than a day"))?;
        NonZeroU64::new(ns)
            .map(SampleInterval)
            .ok_or_else(|| bad("the interval is zero"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(text: &str) -> Result<u64, String> {
        text.parse::<SampleInterval>().map(SampleInterval::nanos)
    }

    #[test]
    fn each_unit_scales_as_written() {
        assert_eq!(ns("500ns"), Ok(500));
        assert_eq!(ns("250us"), Ok(250_000));
        assert_eq!(ns("100ms"), Ok(100_000_000));
        assert_eq!(ns("1s"), Ok(1_000_000_000));
        assert_eq!(ns("5m"), Ok(300_000_000_000));
        assert_eq!(ns("1h"), Ok(3_600_000_000_000));
        assert_eq!(ns("24h"), Ok(86_400_000_000_000));
    }

    #[test]
    fn malformed_intervals_are_refused() {
        for bad in [
            "",
            "1",
            "s",
            "0s",
            "1.5s",
            "-1s",
            "1 s",
            "1sec",
            "1S",
            "25h",
            "99999999999999999999s",
        ] {
            assert!(ns(bad).is_err(), "{bad:?} was accepted");
        }
    }
}
