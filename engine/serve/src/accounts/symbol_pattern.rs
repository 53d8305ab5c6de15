//! A symbol an account may follow: an exact name (`AAPL`) or a pattern, where `*` stands
//! for any run of characters (none included) and `?` for exactly one (`QQ*`, `A???`, `*`).
#![forbid(unsafe_code)]

use std::fmt;

/// One entry of an account's `symbols`.
#[derive(Clone, PartialEq, Eq)]
pub struct SymbolPattern {
    pattern: Box<[u8]>,
}

impl SymbolPattern {
    /// `text` as a pattern: 1 to 16 printable ASCII characters without spaces (a symbol is
    /// at most 8, a pattern may spell more with its wildcards).
    ///
    /// # Errors
    ///
    /// What is wrong with `text`.
    pub fn new(text: &str) -> Result<SymbolPattern, &'static str> {
        let bytes = text.as_bytes();
        if bytes.is_empty() || bytes.len() > 16 {
            return Err("a symbol or pattern is 1 to 16 characters");
        }
        if !bytes.iter().all(|b| (b'!'..=b'~').contains(b)) {
            return Err("a symbol or pattern is printable ASCII without spaces");
        }
        Ok(SymbolPattern {
            pattern: bytes.into(),
        })
    }

    /// Whether the symbol (8 bytes, space padded, as the protocol carries it) matches.
    pub fn matches(&self, symbol: &[u8; 8]) -> bool {
        let end = symbol.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1);
        glob(&self.pattern, &symbol[..end])
    }
}

/// Wildcard matching with one point of return (the last `*`): linear in the lengths, no
/// allocation.
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(&c) if c == b'?' || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                // Let the last `*` take one more character and try again after it.
                Some((sp, st)) => {
                    p = sp + 1;
                    t = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

impl fmt::Debug for SymbolPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(&self.pattern))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn symbol(s: &str) -> [u8; 8] {
        let mut out = [b' '; 8];
        out[..s.len()].copy_from_slice(s.as_bytes());
        out
    }

    fn matches(pattern: &str, s: &str) -> bool {
        SymbolPattern::new(pattern).unwrap().matches(&symbol(s))
    }

    #[test]
    fn exact_names_and_wildcards() {
        assert!(matches("AAPL", "AAPL"));
        assert!(!matches("AAPL", "AAP"));
        assert!(!matches("AAP", "AAPL"));
        assert!(matches("*", "ZVZZT"));
        assert!(matches("QQ*", "QQQ"));
        assert!(matches("QQ*", "QQ"));
        assert!(!matches("QQ*", "SQQQ"));
        assert!(matches("*Q", "SQQQ"));
        assert!(matches("A???", "AAPL"));
        assert!(!matches("A???", "AAP"));
        assert!(matches("*.*", "BRK.B"));
        assert!(!matches("*.*", "BRKB"));
        assert!(matches("A*P*L", "AAPL"));
    }

    #[test]
    fn refuses_what_no_symbol_could_be() {
        assert!(SymbolPattern::new("").is_err());
        assert!(SymbolPattern::new("A B").is_err());
        assert!(SymbolPattern::new("ÄAPL").is_err());
        assert!(SymbolPattern::new(&"*".repeat(17)).is_err());
    }

    /// The naive model: a regular expression written out by recursion.
    fn model(p: &[u8], t: &[u8]) -> bool {
        match (p.first(), t.first()) {
            (None, None) => true,
            (Some(b'*'), _) => model(&p[1..], t) || (!t.is_empty() && model(p, &t[1..])),
            (Some(&c), Some(&d)) if c == b'?' || c == d => model(&p[1..], &t[1..]),
            _ => false,
        }
    }

    proptest! {
        #[test]
        fn agrees_with_the_recursive_model(
            pattern in "[AB?*]{1,8}",
            text in "[AB]{0,8}",
        ) {
            let p = SymbolPattern::new(&pattern).unwrap();
            prop_assert_eq!(
                p.matches(&symbol(&text)),
                model(pattern.as_bytes(), text.as_bytes())
            );
        }
    }
}
