//! Which book thread owns which stock locate, for `replay --threads N`.
//!
//! Every ITCH 5.0 message carries a stock locate in bytes 1..3, and the messages that
//! modify an order (E, C, X, D, U) carry the locate of the order they name, so routing
//! by locate sends each stock's whole story to one thread.
//!
//! Balance: the locates are weighed by their message counts over a window at the start
//! of the input (a second, framing-only pass that reads at most [`WINDOW`] messages), then
//! placed longest-processing-time first: heaviest locate first, each on the thread with
//! the least weight so far. A window rather than the whole file keeps the pre-pass's cost
//! bounded whatever the file's size (and a gzipped input is decompressed only that far);
//! activity per name is skewed and persistent through a day, so the busy names of the
//! window are the busy names of the file. Locates the window never saw go to
//! `locate % threads`.

use ticklane_feed::capture::CaptureReader;

/// Messages read by the pre-pass that weighs the locates.
pub const WINDOW: u64 = 1 << 21;

/// Every locate a 16-bit field can name.
const LOCATES: usize = 1 << 16;

/// The book thread of every locate.
#[derive(Clone, Debug)]
pub struct LocatePartition {
    /// Thread of each locate, in `0 .. threads`.
    owner: Vec<u8>,
    threads: usize,
}

impl LocatePartition {
    /// Longest-processing-time-first placement of locates weighed by `counts` (indexed by
    /// locate) over `threads` threads (1 ..= 255); unweighed locates go to `locate % threads`.
    pub fn balanced(counts: &[u64], threads: usize) -> Self {
        let threads = threads.clamp(1, usize::from(u8::MAX));
        let mut owner: Vec<u8> = (0..LOCATES).map(|l| (l % threads) as u8).collect();
        let mut weighed: Vec<(u64, u16)> = counts
            .iter()
            .enumerate()
            .take(LOCATES)
            .filter(|&(_, &n)| n > 0)
            .map(|(locate, &n)| (n, locate as u16))
            .collect();
        // Heaviest first; ties by locate so the placement is deterministic.
        weighed.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut load = vec![0u64; threads];
        for (n, locate) in weighed {
            let lightest = (0..threads)
                .min_by_key(|&t| (load[t], t))
                .expect("invariant: at least one thread");
            load[lightest] += n;
            owner[usize::from(locate)] = lightest as u8;
        }
        LocatePartition { owner, threads }
    }

    /// Weighs the locates over the first `WINDOW` (2,097,152) messages `reader` yields, then places
    /// them as [`LocatePartition::balanced`] does. A read error ends the window early: the
    /// replay itself meets the same error and reports it.
    pub fn weighed(mut reader: CaptureReader, threads: usize) -> Self {
        let mut counts = vec![0u64; LOCATES];
        for _ in 0..WINDOW {
            match reader.next_message() {
                Ok(Some(raw)) => {
                    if let Some(locate) = locate_of(raw.bytes) {
                        counts[usize::from(locate)] += 1;
                    }
                }
                Ok(None) | Err(_) => break,
            }
        }
        Self::balanced(&counts, threads)
    }

    /// The thread that owns `locate`.
    #[inline(always)]
    pub fn owner(&self, locate: u16) -> usize {
        usize::from(self.owner[usize::from(locate)])
    }

    /// Threads the locates are spread over.
    pub fn threads(&self) -> usize {
        self.threads
    }
}

/// The stock locate of an ITCH 5.0 message (bytes 1..3, big-endian), if it is long enough
/// to carry one.
#[inline(always)]
pub fn locate_of(bytes: &[u8]) -> Option<u16> {
    match bytes {
        [_, hi, lo, ..] => Some(u16::from_be_bytes([*hi, *lo])),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heaviest_locates_spread_first_and_loads_end_even() {
        // Weights 9, 5, 4, 3, 3 on two threads, worked by hand: 9 -> t0; 5 -> t1;
        // 4 -> t1 (5 < 9); loads 9 and 9, the tie goes to t0: 3 -> t0; 3 -> t1.
        // Loads 12 and 12.
        let mut counts = vec![0u64; LOCATES];
        counts[10] = 9;
        counts[11] = 5;
        counts[12] = 4;
        counts[13] = 3;
        counts[14] = 3;
        let p = LocatePartition::balanced(&counts, 2);
        assert_eq!(
            [10, 11, 12, 13, 14].map(|l| p.owner(l)),
            [0, 1, 1, 0, 1],
            "hand-worked LPT placement"
        );
        // An unweighed locate falls back to locate % threads.
        assert_eq!(p.owner(7), 1);
        assert_eq!(p.owner(8), 0);
    }

    #[test]
    fn one_thread_owns_everything() {
        let p = LocatePartition::balanced(&[5, 6, 7], 1);
        assert!((0..=u16::MAX).all(|l| p.owner(l) == 0));
    }

    #[test]
    fn locate_is_read_big_endian_from_bytes_one_and_two() {
        assert_eq!(locate_of(b"A\x01\x02rest"), Some(0x0102));
        assert_eq!(locate_of(b"A\x01"), None);
    }
}
