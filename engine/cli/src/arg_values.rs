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

/// `--linger-s`: seconds, `0 ..= 3600` (fractions allowed), as a duration.
pub fn linger_seconds(text: &str) -> Result<std::time::Duration, String> {
    let value: f64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds (0 ..= 3600)"))?;
    if (0.0..=3600.0).contains(&value) {
        Ok(std::time::Duration::from_secs_f64(value))
    } else {
        Err(format!("{text} is outside 0 ..= 3600 seconds"))
    }
}

/// `--reader-core`, `--book-core`: a core this process may run on (its affinity mask), as
/// `engine.reader_core` and `engine.book_core` are checked in a config file; pinning to any
/// other core would fail on the thread, or quietly not happen.
pub fn core(text: &str) -> Result<usize, String> {
    let cores = ticklane_engine::config::available_cores();
    text.parse::<usize>()
        .ok()
        .filter(|id| cores.contains(id))
        .ok_or_else(|| {
            format!(
                "`{text}` is refused; allowed: {}",
                ticklane_engine::config::Allowed::Core { cores }
            )
        })
}

/// `--symbols A,B`, checked when parsed (1 to 8 printable characters each). An empty list
/// is refused: leaving the flag out keeps every symbol, and an empty value (a shell
/// variable that was never set) must not quietly mean the same.
pub fn symbols(text: &str) -> Result<String, String> {
    if text.trim().is_empty() {
        return Err(
            "an empty list names no symbol; leave the flag out to keep every symbol".into(),
        );
    }
    ticklane_engine::output_filter::OutputFilter::parse(text, "")
        .map(|_| text.to_string())
        .map_err(|e| e.to_string())
}

/// One symbol of a comma-separated list (`subscribe --symbols`): 1 to 8 printable
/// characters, as ITCH's stock field holds; a longer one would be cut to a different stock.
pub fn symbol(text: &str) -> Result<String, String> {
    if text.is_empty() {
        return Err("a symbol is 1 to 8 characters; this one is empty".to_string());
    }
    symbols(text)
}

/// `--between HH:MM[:SS]-HH:MM[:SS]`, checked when parsed; an empty window is refused, as
/// an empty `--symbols` is.
pub fn between(text: &str) -> Result<String, String> {
    if text.trim().is_empty() {
        return Err(
            "an empty window is no window; give HH:MM-HH:MM, or leave the flag out to keep \
             every row"
                .into(),
        );
    }
    ticklane_engine::output_filter::OutputFilter::parse("", text)
        .map(|_| text.to_string())
        .map_err(|e| e.to_string())
}

/// `--speed`: a positive, finite factor (0 would never send; NaN or infinity has no pace).
pub fn speed(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        Ok(_) => Err(format!(
            "{text} is not a positive, finite factor (2 is twice as fast)"
        )),
        Err(_) => Err(format!(
            "`{text}` is not a number; give a positive factor such as 2 or 0.5"
        )),
    }
}

/// An address to send to (`sim --udp`, `--udp-b`): a port of 0 names no receiver, and
/// every send to it fails.
pub fn destination(text: &str) -> Result<std::net::SocketAddr, String> {
    let addr: std::net::SocketAddr = text
        .parse()
        .map_err(|_| format!("`{text}` is not an address (IP:PORT)"))?;
    if addr.port() == 0 {
        return Err(format!(
            "{addr}: port 0 is no destination; give the port the reader listens on"
        ));
    }
    Ok(addr)
}

/// `subscribe --account`: what the login's 16-byte field carries (1 to 16 printable ASCII
/// characters); a longer one would be cut to a different account.
pub fn account(text: &str) -> Result<String, String> {
    ticklane_engine::serve::protocol::account_field(text)
        .map(|_| text.to_string())
        .map_err(str::to_string)
}

/// `--wait`: the documented names only (the strategy's own parser also takes aliases,
/// which the documentation and `engine.wait` do not).
pub fn wait(text: &str) -> Result<ticklane_engine::pipeline::WaitStrategy, String> {
    match text {
        "busy-spin" | "spin-yield" | "park" => text.parse(),
        _ => Err(format!("`{text}` is not busy-spin, spin-yield or park")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_filters_are_usage_errors() {
        assert_eq!(symbols("AAPL,MSFT"), Ok("AAPL,MSFT".to_string()));
        assert!(symbols("AAPL,,MSFT").is_err());
        assert_eq!(symbol("BRK.A"), Ok("BRK.A".to_string()));
        assert!(symbol("").is_err());
        assert!(symbol("TOOLONGSYMBOL").is_err());
        assert_eq!(between("09:30-16:00"), Ok("09:30-16:00".to_string()));
        assert!(between("16:00-09:30").is_err());
        for empty in ["", " ", ","] {
            assert!(symbols(empty).is_err(), "{empty:?}");
        }
        assert!(between("").is_err());
        assert!(between("  ").is_err());
    }

    #[test]
    fn values_that_would_hang_or_do_nothing_are_refused() {
        assert_eq!(speed("2"), Ok(2.0));
        for bad in ["0", "-1", "nan", "NaN", "inf", "-inf", "fast"] {
            assert!(speed(bad).is_err(), "{bad}");
        }
        assert!(destination("127.0.0.1:0").is_err());
        assert!(destination("127.0.0.1:9000").is_ok());
        assert!(account("seventeen-chars-x").is_err());
        assert!(account("caf\u{e9}").is_err());
        assert!(account("ticklane").is_ok());
        assert!(wait("park").is_ok());
        assert!(wait("sleep").is_err());
    }
}
