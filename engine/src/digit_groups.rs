//! Counts with their thousands grouped, the way every `ticklane` summary prints them.

/// `1234567` as `1,234,567`.
///
/// # Examples
///
/// ```
/// assert_eq!(ticklane_engine::digit_groups::group(1_234_567), "1,234,567");
/// ```
pub fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::group;

    #[test]
    fn groups_of_three_from_the_right() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1_000), "1,000");
        assert_eq!(group(12_345), "12,345");
        assert_eq!(group(100_000_000), "100,000,000");
        assert_eq!(group(u64::MAX), "18,446,744,073,709,551,615");
    }
}
