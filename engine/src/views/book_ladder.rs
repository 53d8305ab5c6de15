//! The replay demo's picture of a book: the top levels of both sides face to face, bids
//! (quantity, price, orders) on the left and asks on the right, best first.

use std::io::{self, Write};

use ticklane_feed::itch::Locate;

use crate::book::{Books, LevelView, Side};

use crate::digit_groups::group;

/// Writes the top `levels` levels of the first `count` books (lowest locates first).
///
/// # Errors
///
/// Whatever `out` returns.
pub fn write_tops(
    out: &mut impl Write,
    books: &Books,
    count: usize,
    levels: usize,
) -> io::Result<()> {
    for locate in books.locates().into_iter().take(count) {
        write_book_ladder(out, books, locate, levels)?;
    }
    Ok(())
}

/// Writes one book's top `levels` levels: a blank line, a title, then one line per level.
///
/// # Errors
///
/// Whatever `out` returns.
pub fn write_book_ladder(
    out: &mut impl Write,
    books: &Books,
    locate: Locate,
    levels: usize,
) -> io::Result<()> {
    let symbol = String::from_utf8_lossy(books.symbol(locate)).into_owned();
    writeln!(
        out,
        "\n  {symbol:<8} (locate {})         bid | ask",
        locate.0
    )?;
    let best = |side| -> Vec<LevelView> {
        books
            .side(locate, side)
            .map(|l| l.best_first().take(levels).collect())
            .unwrap_or_default()
    };
    let (bids, asks) = (best(Side::Bid), best(Side::Ask));
    for i in 0..levels {
        let bid = bids
            .get(i)
            .map(|l| {
                format!(
                    "{:>12} {:>12} ({:>3})",
                    group(l.qty),
                    l.price.to_string(),
                    l.orders
                )
            })
            .unwrap_or_default();
        let ask = asks
            .get(i)
            .map(|l| {
                format!(
                    "{:<12} {:<12} ({:>3})",
                    l.price.to_string(),
                    group(l.qty),
                    l.orders
                )
            })
            .unwrap_or_default();
        writeln!(out, "  {bid:>32} | {ask}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::book::{Applier, BookConfig, NoBbo};

    /// `R` laid out by hand from the spec: stock at offset 11; the rest may stay zero here.
    fn directory(locate: u16, stock: &[u8; 8]) -> Vec<u8> {
        let mut m = vec![0u8; 39];
        m[0] = b'R';
        m[1..3].copy_from_slice(&locate.to_be_bytes());
        m[11..19].copy_from_slice(stock);
        m
    }

    /// `A` laid out by hand: reference 11, side 19, shares 20, stock 24, price 32.
    fn add(locate: u16, reference: u64, side: u8, shares: u32, price: u32) -> Vec<u8> {
        let mut m = vec![0u8; 36];
        m[0] = b'A';
        m[1..3].copy_from_slice(&locate.to_be_bytes());
        m[11..19].copy_from_slice(&reference.to_be_bytes());
        m[19] = side;
        m[20..24].copy_from_slice(&shares.to_be_bytes());
        m[24..32].copy_from_slice(b"ZVZZT   ");
        m[32..36].copy_from_slice(&price.to_be_bytes());
        m
    }

    fn ladder_of(messages: &[Vec<u8>], levels: usize) -> String {
        let config = BookConfig {
            max_orders: 64,
            max_books: 4,
            levels_per_side: 16,
        };
        let mut applier: Applier<NoBbo> = Applier::new(config, None).expect("books");
        for (i, m) in messages.iter().enumerate() {
            applier.step(i as u64 + 1, m).expect("valid message");
        }
        let mut out = Vec::new();
        write_tops(&mut out, applier.books(), 4, levels).expect("Vec");
        String::from_utf8(out).expect("UTF-8")
    }

    #[test]
    fn bids_left_asks_right_best_first() {
        let text = ladder_of(
            &[
                directory(5, b"ZVZZT   "),
                add(5, 1, b'B', 100, 100_000),
                add(5, 2, b'B', 2_000, 100_000),
                add(5, 3, b'B', 300, 99_900),
                add(5, 4, b'S', 1_500, 100_100),
            ],
            3,
        );
        let expected = [
            "",
            "  ZVZZT    (locate 5)         bid | ask",
            "          2,100      10.0000 (  2) | 10.0100      1,500        (  1)",
            "            300       9.9900 (  1) | ",
            "                                   | ",
        ];
        assert_eq!(text.lines().collect::<Vec<_>>(), expected, "\n{text}");
    }

    #[test]
    fn no_books_no_lines() {
        assert_eq!(ladder_of(&[directory(5, b"ZVZZT   ")], 3), "");
    }
}
