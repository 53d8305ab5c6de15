//! Argument values checked when they are parsed, so a wrong one is a usage error (exit 2)
//! before anything runs or prints.

/// A fraction of packets, `0.0 ..= 1.0` (`--drop`, `--duplicate`, `--reorder`,
/// `--burst-probability`).
pub fn fraction(text: &str) -> Result<f64, String> {
    let value: f64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number; give a fraction in 0.0 ..= 1.0"))?;
    if (0.0..=1.0).contains(&value) {
        Ok(value)
    } else {
        Err(format!("{text} is outside 0.0 ..= 1.0 (0.01 is 1%)"))
    }
}

/// `user:password` for SoupBinTCP (at most 6 and 10 characters).
pub fn login(text: &str) -> Result<ticklane_feed::soupbintcp::Credentials, String> {
    let (user, pass) = text
        .split_once(':')
        .ok_or_else(|| format!("`{text}` is not user:password"))?;
    ticklane_feed::soupbintcp::Credentials::new(user.as_bytes(), pass.as_bytes())
        .ok_or_else(|| "the username is at most 6, the password at most 10 characters".into())
}
