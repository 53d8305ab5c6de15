//! What a configuration key accepts, as a value an error carries and prints.

use core::fmt;

/// The values a key accepts. Every refused value's error carries the rule it broke, so the
/// message says what would have been accepted.
#[derive(Clone, Debug, PartialEq)]
pub enum Allowed {
    /// A TOML integer in `min ..= max`.
    Integer {
        /// Smallest accepted.
        min: u64,
        /// Largest accepted.
        max: u64,
    },
    /// A TOML integer that is a power of two in `min ..= max`.
    PowerOfTwo {
        /// Smallest accepted.
        min: u64,
        /// Largest accepted.
        max: u64,
    },
    /// A finite number of seconds (TOML integer or float) in `min ..= max`.
    Seconds {
        /// Shortest accepted.
        min: f64,
        /// Longest accepted.
        max: f64,
    },
    /// One of these strings.
    OneOf(&'static [&'static str]),
    /// The id of a core this process may run on.
    Core {
        /// The cores found on this machine (empty when they could not be listed).
        cores: Vec<usize>,
    },
    /// A string of printable ASCII (space to `~`), `min_len ..= max_len` bytes long: the
    /// SoupBinTCP alpha fields are fixed-width ASCII.
    Ascii {
        /// Fewest characters.
        min_len: usize,
        /// Most characters.
        max_len: usize,
    },
    /// A socket address such as `"127.0.0.1:26477"`; `connectable` ones also refuse port 0
    /// and the unspecified address, which cannot be sent to.
    SocketAddr {
        /// Whether the address is one to send to (not one to bind).
        connectable: bool,
    },
    /// An IPv4 address such as `"127.0.0.1"`; `multicast` ones lie in `224.0.0.0/4`.
    Ipv4 {
        /// Whether it must be a multicast group.
        multicast: bool,
    },
    /// A non-empty path.
    Path,
    /// A name that goes into a URL path and a metrics label: 1 to `max_len` ASCII letters,
    /// digits, `-`, `_` and `.`.
    Name {
        /// Most characters.
        max_len: usize,
    },
}

impl Allowed {
    /// Whether `n` lies in an integer rule's range (`false` for a rule of another kind).
    pub fn admits_integer(&self, n: i64) -> bool {
        match *self {
            Allowed::Integer { min, max } => {
                u64::try_from(n).is_ok_and(|n| (min..=max).contains(&n))
            }
            Allowed::PowerOfTwo { min, max } => {
                u64::try_from(n).is_ok_and(|n| n.is_power_of_two() && (min..=max).contains(&n))
            }
            _ => false,
        }
    }

    /// Whether an ASCII rule admits `s` (`false` for a rule of another kind).
    pub fn admits_text(&self, s: &str) -> bool {
        match *self {
            Allowed::Ascii { min_len, max_len } => {
                (min_len..=max_len).contains(&s.len())
                    && s.bytes().all(|b| (b' '..=b'~').contains(&b))
            }
            _ => false,
        }
    }

    /// Whether a name rule admits `s` (`false` for a rule of another kind).
    pub fn admits_name(&self, s: &str) -> bool {
        match *self {
            Allowed::Name { max_len } => {
                (1..=max_len).contains(&s.len())
                    && s.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
            }
            _ => false,
        }
    }

    /// Whether `s` seconds lies in a seconds rule's range; NaN and infinities never do.
    pub fn admits_seconds(&self, s: f64) -> bool {
        match *self {
            Allowed::Seconds { min, max } => s.is_finite() && min <= s && s <= max,
            _ => false,
        }
    }
}

impl fmt::Display for Allowed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Allowed::Integer { min, max } => write!(f, "an integer in {min} ..= {max}"),
            Allowed::PowerOfTwo { min, max } => {
                write!(f, "a power of two in {min} ..= {max}")
            }
            Allowed::Seconds { min, max } => {
                write!(f, "a finite number of seconds in {min} ..= {max}")
            }
            Allowed::OneOf(names) => {
                f.write_str("one of ")?;
                for (i, name) in names.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "\"{name}\"")?;
                }
                Ok(())
            }
            Allowed::Core { cores } if cores.is_empty() => {
                f.write_str("no core id: this machine's cores could not be listed, leave it unpinned")
            }
            Allowed::Core { cores } => {
                f.write_str("a core this process may run on: ")?;
                write_id_ranges(f, cores)
            }
            Allowed::Ascii { min_len, max_len } => write!(
                f,
                "{min_len} to {max_len} printable ASCII characters"
            ),
            Allowed::SocketAddr { connectable: false } => {
                f.write_str("a socket address such as \"0.0.0.0:26477\"")
            }
            Allowed::SocketAddr { connectable: true } => f.write_str(
                "a socket address to send to, such as \"127.0.0.1:26478\" (not port 0, not 0.0.0.0)",
            ),
            Allowed::Ipv4 { multicast: false } => {
                f.write_str("an IPv4 address such as \"127.0.0.1\"")
            }
            Allowed::Ipv4 { multicast: true } => f.write_str(
                "an IPv4 multicast group, 224.0.0.0 to 239.255.255.255, such as \"239.1.1.1\"",
            ),
            Allowed::Path => f.write_str("a non-empty path"),
            Allowed::Name { max_len } => write!(
                f,
                "1 to {max_len} characters of ASCII letters, digits, '-', '_' and '.'"
            ),
        }
    }
}

/// Writes sorted ids as runs: `0-3, 8, 10-11`.
fn write_id_ranges(f: &mut fmt::Formatter<'_>, ids: &[usize]) -> fmt::Result {
    let mut sorted = ids.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut i = 0;
    let mut first = true;
    while let Some(&start) = sorted.get(i) {
        let mut end = start;
        while sorted.get(i + 1) == Some(&(end + 1)) {
            end += 1;
            i += 1;
        }
        i += 1;
        if !first {
            f.write_str(", ")?;
        }
        first = false;
        if start == end {
            write!(f, "{start}")?;
        } else {
            write!(f, "{start}-{end}")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_rules_refuse_negatives_and_bounds() {
        let rule = Allowed::Integer { min: 1, max: 10 };
        let admitted: Vec<i64> = (-2..13).filter(|&n| rule.admits_integer(n)).collect();
        assert_eq!(admitted, (1..=10).collect::<Vec<_>>());
        let pow2 = Allowed::PowerOfTwo { min: 4, max: 64 };
        let admitted: Vec<i64> = (-8..200).filter(|&n| pow2.admits_integer(n)).collect();
        assert_eq!(admitted, vec![4, 8, 16, 32, 64]);
    }

    #[test]
    fn seconds_rules_refuse_nan_and_infinities() {
        let rule = Allowed::Seconds { min: 0.5, max: 2.0 };
        for s in [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -1.0,
            0.0,
            0.49,
            2.01,
        ] {
            assert!(!rule.admits_seconds(s), "{s}");
        }
        for s in [0.5, 1.0, 2.0] {
            assert!(rule.admits_seconds(s), "{s}");
        }
    }

    #[test]
    fn names_are_url_and_label_safe() {
        let rule = Allowed::Name { max_len: 8 };
        for good in ["feed", "nasdaq-A", "itch_5.0", "12345678"] {
            assert!(rule.admits_name(good), "{good}");
        }
        for bad in ["", "123456789", "a b", "a/b", "a%2F", "é", "a\"b"] {
            assert!(!rule.admits_name(bad), "{bad}");
        }
    }

    #[test]
    fn core_lists_print_as_runs() {
        let rule = Allowed::Core {
            cores: vec![3, 0, 1, 2, 8, 10, 11],
        };
        assert_eq!(
            rule.to_string(),
            "a core this process may run on: 0-3, 8, 10-11"
        );
    }
}
