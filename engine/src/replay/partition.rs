//! Which book thread owns which stock locate, for `replay --threads N`.
//!
//! Every ITCH 5.0 message carries a stock locate in bytes 1..3, and the messages that
//! modify an order (E, C, X, D, U) carry the locate of the order they name, so routing
//! by locate sends each stock's whole story to one thread.
//!
//! Balance: the locates are weighed by their message counts over a window at the start
//! of the input (a pre-pass that reads at most [`WINDOW`] messages), then placed
//! longest-processing-time first: heaviest locate first, each on the thread with the least
//! weight so far. A window rather than the whole file keeps the pre-pass's cost bounded
//! whatever the file's size (and a gzipped input is decompressed only that far); activity
//! per name is skewed and persistent through a day, so the busy names of the window are the
//! busy names of the file. Locates the window never saw go to `locate % threads`.
//!
//! The pre-pass must not cost what the replay's own framing costs: on an uncompressed
//! BinaryFILE (the common input) it only steps from length prefix to length prefix and
//! reads each message's locate ([`count_binary_file`]: a few instructions a message,
//! where the full framing of `CaptureReader` spends about fifty: with a callgrind
//! profile the weighing pre-pass had been a third of the reader thread). Other formats
//! (gzip, pcap) are weighed through `CaptureReader`, whose framing they need.
//! Either way the counts, and so the partition, are a pure function of the input's bytes.

use std::fs::File;
use std::io::{self, Read};

use ticklane_feed::capture::{CaptureReader, InputFormat, ReadOptions};
use ticklane_feed::itch::message_len;

/// Messages read by the pre-pass that weighs the locates.
pub const WINDOW: u64 = 1 << 21;

/// Every locate a 16-bit field can name.
const LOCATES: usize = 1 << 16;

/// The book thread of every locate.
#[derive(Clone, Debug)]
pub struct LocatePartition {
    /// Thread of each locate, in `0 .. threads` (a whole table, so a lookup has no bounds
    /// check: every book thread looks up every message's locate).
    owner: Box<[u8; LOCATES]>,
    threads: usize,
}

impl LocatePartition {
    /// Longest-processing-time-first placement of locates weighed by `counts` (indexed by
    /// locate) over `threads` threads (1 ..= 255); unweighed locates go to `locate % threads`.
    pub fn balanced(counts: &[u64], threads: usize) -> Self {
        let threads = threads.clamp(1, usize::from(u8::MAX));
        let mut owner = Box::new([0u8; LOCATES]);
        for (l, o) in owner.iter_mut().enumerate() {
            *o = (l % threads) as u8;
        }
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

    /// Weighs the locates over the first `WINDOW` (2,097,152) messages of the input
    /// `reader` reads (from its start, whatever it has read), then places them as
    /// [`LocatePartition::balanced`] does. A mapped BinaryFILE is scanned where it lies; a
    /// read error or a frame that cannot be a message ends the window early: the replay
    /// itself meets the same fault and reports it.
    pub fn weighed(reader: &CaptureReader, read: ReadOptions, threads: usize) -> Self {
        let mut counts = vec![0u64; LOCATES];
        let mapped = reader.mapped_input();
        match (reader.format(), &mapped) {
            (InputFormat::Itch50, Some(map)) => {
                scan(map.bytes(), read.recover_lengths, WINDOW, &mut counts);
            }
            (InputFormat::Itch50, None) => {
                if let Ok(file) = File::open(reader.path()) {
                    count_binary_file(file, read.recover_lengths, WINDOW, &mut counts);
                }
            }
            _ => {
                if let Ok(reader) = reader.reopen(read) {
                    count_framed(reader, WINDOW, &mut counts);
                }
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

/// Counts the messages per locate of the first `window` messages `reader` yields.
fn count_framed(mut reader: CaptureReader, window: u64, counts: &mut [u64]) {
    for _ in 0..window {
        match reader.next_message() {
            Ok(Some(raw)) => {
                if let Some(locate) = locate_of(raw.bytes) {
                    counts[usize::from(locate)] += 1;
                }
            }
            Ok(None) | Err(_) => break,
        }
    }
}

/// Bytes read at a time by [`count_binary_file`]; any frame (at most 2 + 65,535 bytes)
/// fits.
const SCAN_BUFFER: usize = 1 << 20;

/// Counts the messages per locate of the first `window` messages of a BinaryFILE read
/// from `input`: each frame is a 2-byte big-endian length (or, with `recover_lengths`, the
/// length of its type byte's message) then the message, whose bytes 1..3 are its locate.
/// Nothing else is checked: a frame too short to hold a locate, or an unknown type while
/// recovering lengths, ends the count, as does a truncated frame or a read error.
fn count_binary_file(mut input: impl Read, recover_lengths: bool, window: u64, counts: &mut [u64]) {
    let mut buf = vec![0u8; SCAN_BUFFER];
    let (mut have, mut seen) = (0usize, 0u64);
    loop {
        let scanned = scan(&buf[..have], recover_lengths, window - seen, counts);
        seen += scanned.messages;
        if scanned.stopped || seen >= window {
            return;
        }
        buf.copy_within(scanned.bytes..have, 0);
        have -= scanned.bytes;
        match read_up_to(&mut input, &mut buf[have..]) {
            Ok(0) | Err(_) => return,
            Ok(n) => have += n,
        }
    }
}

/// How far [`scan`] got.
struct Scanned {
    /// Bytes of whole frames counted.
    bytes: usize,
    messages: u64,
    /// A frame that cannot be a message ended the count for good.
    stopped: bool,
}

/// Counts per locate the whole frames at the start of `bytes`, at most `budget` of them, as
/// [`count_binary_file`] reads them; a frame cut off by the end of `bytes` is left.
fn scan(bytes: &[u8], recover_lengths: bool, budget: u64, counts: &mut [u64]) -> Scanned {
    // As a whole table, so counting a locate checks no bound.
    let counts: &mut [u64; LOCATES] = counts.try_into().expect("invariant: one count per locate");
    let (mut at, mut seen) = (0usize, 0u64);
    let stopped = loop {
        if seen == budget {
            break false;
        }
        let Some(&[hi, lo, tag, locate_hi, locate_lo]) = bytes.get(at..at + 5) else {
            break false;
        };
        let len = if recover_lengths {
            match message_len(tag) {
                Some(len) => len,
                None => break true,
            }
        } else {
            usize::from(u16::from_be_bytes([hi, lo]))
        };
        if len < 3 {
            break true;
        }
        if at + 2 + len > bytes.len() {
            break false;
        }
        counts[usize::from(u16::from_be_bytes([locate_hi, locate_lo]))] += 1;
        at += 2 + len;
        seen += 1;
    };
    Scanned {
        bytes: at,
        messages: seen,
        stopped,
    }
}

/// Reads until `buf` is full or the input ends; the bytes read.
fn read_up_to(input: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match input.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
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

    /// Frames laid by hand: `(type, locate)` pairs at their spec lengths, each after its
    /// 2-byte length prefix (or a zero prefix, as RITCH writes them).
    fn binary_file(messages: &[(u8, u16)], zero_prefixes: bool) -> Vec<u8> {
        let mut file = Vec::new();
        for &(tag, locate) in messages {
            let len = message_len(tag).expect("a defined type");
            let prefix = if zero_prefixes { 0 } else { len as u16 };
            file.extend_from_slice(&prefix.to_be_bytes());
            file.push(tag);
            file.extend_from_slice(&locate.to_be_bytes());
            file.resize(file.len() + len - 3, 0xEE);
        }
        file
    }

    #[test]
    fn the_prefix_scan_counts_each_locate_s_messages() {
        let messages = [
            (b'S', 0),
            (b'A', 5),
            (b'D', 5),
            (b'F', 300),
            (b'U', 5),
            (b'X', 300),
        ];
        let mut counts = vec![0u64; LOCATES];
        count_binary_file(
            &binary_file(&messages, false)[..],
            false,
            WINDOW,
            &mut counts,
        );
        assert_eq!((counts[0], counts[5], counts[300]), (1, 3, 2));
        assert_eq!(counts.iter().sum::<u64>(), 6);

        // Zero prefixes, lengths from the types; and a window of 4 stops after the U.
        let mut counts = vec![0u64; LOCATES];
        count_binary_file(&binary_file(&messages, true)[..], true, 4, &mut counts);
        assert_eq!((counts[0], counts[5], counts[300]), (1, 2, 1));
    }

    #[test]
    fn the_prefix_scan_stops_at_a_frame_it_cannot_read() {
        let mut file = binary_file(&[(b'A', 9), (b'A', 9)], false);
        // A frame of length 2 cannot hold a locate; what follows it is not counted.
        file.extend_from_slice(&[0, 2, b'A', 0]);
        file.extend_from_slice(&binary_file(&[(b'A', 9)], false));
        let mut counts = vec![0u64; LOCATES];
        count_binary_file(&file[..], false, WINDOW, &mut counts);
        assert_eq!(counts[9], 2);

        // A frame cut short at the end is not counted.
        let mut file = binary_file(&[(b'D', 4), (b'D', 4)], false);
        file.truncate(file.len() - 1);
        let mut counts = vec![0u64; LOCATES];
        count_binary_file(&file[..], false, WINDOW, &mut counts);
        assert_eq!(counts[4], 1);
    }

    /// A reader that hands out at most 7 bytes a call, so frames cross every refill.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(7).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn the_prefix_scan_agrees_with_the_framing_reader_on_a_generated_day() {
        use ticklane_sim::{write_itch50, GenConfig};
        let mut day = Vec::new();
        let config = GenConfig {
            messages: 20_000,
            seed: 3,
            stocks: 40,
            hard_cases: true,
            ..GenConfig::default()
        };
        write_itch50(config, &mut day).expect("writing to a Vec");
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("day.itch50");
        std::fs::write(&path, &day).expect("write");
        // The reference: the replay's own framing reader, whole file.
        let mut framed = vec![0u64; LOCATES];
        let reader = CaptureReader::open(&path, ReadOptions::default()).expect("open");
        count_framed(reader, u64::MAX, &mut framed);
        assert_eq!(framed.iter().sum::<u64>(), 20_000);
        let mut scanned = vec![0u64; LOCATES];
        count_binary_file(Trickle(&day), false, u64::MAX, &mut scanned);
        assert!(scanned == framed, "per-locate counts differ");
        // The scan of the mapped file agrees, and the partition weighed from the file is the
        // one from those counts.
        let mut mapped = vec![0u64; LOCATES];
        scan(&day, false, u64::MAX, &mut mapped);
        assert!(mapped == framed, "per-locate counts differ");
        let reader = CaptureReader::open(&path, ReadOptions::default()).expect("open");
        let p = LocatePartition::weighed(&reader, ReadOptions::default(), 3);
        let q = LocatePartition::balanced(&framed, 3);
        assert!((0..=u16::MAX).all(|l| p.owner(l) == q.owner(l)));
    }
}
