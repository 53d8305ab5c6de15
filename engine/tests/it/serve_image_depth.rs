//! A subscriber's initial image is as deep as the snapshot
//! (`snapshot.depth`), says how many levels it carries, and flags a side that fills that
//! depth (`IMAGE_AT_DEPTH`: the book may hold more). The oracle is the replayed books
//! themselves (their ladders, best first), not the snapshot code under test.

use ticklane_engine::book::{LevelView, Side};
use ticklane_engine::serve::protocol::IMAGE_AT_DEPTH;
use ticklane_engine::serve::{ImageSource, SnapshotImages};
use ticklane_engine::snapshot::SnapshotReader;

use crate::util::snapshot::{day, replay, snapshot_of};

#[test]
fn images_carry_min_of_book_and_snapshot_depth_and_flag_a_full_side() {
    let books = replay(&day(4_000, 10, 12, false));
    let dir = tempfile::tempdir().unwrap();
    let (mut flagged, mut whole) = (0, 0);
    for depth in [1, 2, 5, 40] {
        let path = dir.path().join(format!("d{depth}.snap"));
        let _writer = snapshot_of(&books, &path, depth);
        let mut images = SnapshotImages::new(SnapshotReader::open(&path).unwrap());
        for locate in books.locates() {
            let mut symbol = [b' '; 8];
            let name = books.symbol(locate);
            symbol[..name.len()].copy_from_slice(name);
            let want = |side| -> (Vec<LevelView>, usize) {
                let ladder = books.side(locate, side).unwrap();
                (ladder.best_first().take(depth).collect(), ladder.depth())
            };
            let (bids, bid_depth) = want(Side::Bid);
            let (asks, ask_depth) = want(Side::Ask);
            let at_depth = bid_depth >= depth || ask_depth >= depth;
            let found = images.image(&symbol, &mut |image| {
                assert_eq!(image.bids, bids.as_slice(), "bids of {symbol:?} at {depth}");
                assert_eq!(image.asks, asks.as_slice(), "asks of {symbol:?} at {depth}");
                assert_eq!(
                    image.flags & IMAGE_AT_DEPTH != 0,
                    at_depth,
                    "{symbol:?} at depth {depth}: book {bid_depth}/{ask_depth} levels"
                );
            });
            assert!(found, "{symbol:?} has no image");
            if at_depth {
                flagged += 1;
            } else {
                whole += 1;
            }
        }
    }
    // Both cases were seen, so the flag was tested both ways.
    assert!(flagged > 0 && whole > 0, "flagged {flagged}, whole {whole}");
}
