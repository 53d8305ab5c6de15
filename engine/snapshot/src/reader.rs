//! Another process's side of the snapshot: maps the file read-only, validates it, and copies
//! slots out under their seqlocks.

use std::fs::{File, Metadata};
use std::ops::Range;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use memmap2::MmapOptions;

use super::error::{ReadError, SnapshotError};
use super::layout::{
    Geometry, LevelRecord, SlotPayload, SnapshotHeader, BYTE_ORDER_MARK, FIXED_PAYLOAD_WORDS,
    HEADER_SIZE, INSTRUMENTS_WORD, LAYOUT_VERSION, MAGIC, MAX_CAPACITY, MAX_DEPTH,
    STATIC_HEADER_WORDS,
};
use super::mapping::ReadOnlyMapping;
use super::state::InstrumentState;
use ticklane_ring::seqlock::{SeqLockReader, TryReadError};

/// Tries per read before a slot is reported unreadable. A write takes well under a
/// microsecond, so this bound is met only by a writer that died mid-write (or one stopped by
/// the scheduler for a while, on a crowded host).
pub const DEFAULT_READ_ATTEMPTS: u32 = 10_000;

/// A read-only view of a snapshot file, from any process.
///
/// Reading never blocks the writer and never writes to the file: the file is mapped read-only,
/// and the mapping is reachable only as [`ReadOnlyWords`](ticklane_ring::seqlock::ReadOnlyWords),
/// which has no store. Every read is bounded: a slot
/// that cannot be copied consistently within the retry bound is reported, never returned torn
/// and never waited on forever. `SnapshotReader` is `Send` and `Sync`.
#[derive(Debug)]
pub struct SnapshotReader {
    map: ReadOnlyMapping,
    /// The header as validated at open; its first `STATIC_HEADER_WORDS` words never change.
    header: SnapshotHeader,
    geometry: Geometry,
    path: PathBuf,
    /// The file mapped, as opened: the path may name another one later.
    file: FileId,
    attempts: u32,
}

/// Which file a path named: a writer restarted on the path renames a new file over it, so
/// the path's device and inode change while a reader's mapping still holds the old file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FileId {
    device: u64,
    inode: u64,
}

impl FileId {
    fn of(metadata: &Metadata) -> Self {
        FileId {
            device: metadata.dev(),
            inode: metadata.ino(),
        }
    }
}

impl SnapshotReader {
    /// Maps the snapshot at `path` read-only and validates its header: magic, byte order,
    /// layout version, and that every size agrees with the others and with the file.
    ///
    /// # Errors
    ///
    /// [`SnapshotError::Io`] if the file cannot be opened or mapped; [`SnapshotError::BadMagic`],
    /// [`SnapshotError::ByteOrder`], [`SnapshotError::UnsupportedVersion`] or
    /// [`SnapshotError::BadHeader`] if it is not a snapshot this reader can trust.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, SnapshotError> {
        let path = path.as_ref().to_path_buf();
        let io_err = |source| SnapshotError::Io {
            path: path.clone(),
            source,
        };
        let file = File::open(&path).map_err(io_err)?;
        let metadata = file.metadata().map_err(io_err)?;
        let len = metadata.len();
        let bad = |field: &'static str, found: u64, expected: u64| SnapshotError::BadHeader {
            path: path.clone(),
            field,
            found,
            expected,
        };
        if len < HEADER_SIZE as u64 {
            return Err(bad("file length", len, HEADER_SIZE as u64));
        }
        // Map only what the header covers now; the rest once its size is known and checked.
        let map = ReadOnlyMapping::new(
            MmapOptions::new()
                .len(HEADER_SIZE)
                .map_raw_read_only(&file)
                .map_err(io_err)?,
        )
        .map_err(io_err)?;
        let header = read_header(&map);
        if header.magic != MAGIC {
            return Err(SnapshotError::BadMagic { path });
        }
        if header.byte_order != BYTE_ORDER_MARK {
            return Err(if header.byte_order == BYTE_ORDER_MARK.swap_bytes() {
                SnapshotError::ByteOrder { path }
            } else {
                bad(
                    "byte_order",
                    u64::from(header.byte_order),
                    u64::from(BYTE_ORDER_MARK),
                )
            });
        }
        if header.layout_version != LAYOUT_VERSION {
            return Err(SnapshotError::UnsupportedVersion {
                path,
                found: header.layout_version,
                supported: LAYOUT_VERSION,
            });
        }
        // Ranges first: the sizes below are computed from these and must not overflow.
        let ranges = [
            (
                "slot_capacity",
                u64::from(header.slot_capacity),
                u64::from(header.slot_capacity).clamp(1, MAX_CAPACITY as u64),
            ),
            (
                "depth",
                u64::from(header.depth),
                u64::from(header.depth).clamp(1, MAX_DEPTH as u64),
            ),
        ];
        if let Some(&(field, found, expected)) = ranges.iter().find(|(_, f, e)| f != e) {
            return Err(bad(field, found, expected));
        }
        let geometry = Geometry {
            capacity: header.slot_capacity as usize,
            depth: header.depth as usize,
        };
        let checks = [
            (
                "header_size",
                u64::from(header.header_size),
                HEADER_SIZE as u64,
            ),
            (
                "slot_size",
                u64::from(header.slot_size),
                geometry.slot_size() as u64,
            ),
            ("file_size", header.file_size, geometry.file_size() as u64),
            ("file length", len.min(header.file_size), header.file_size),
        ];
        if let Some(&(field, found, expected)) = checks.iter().find(|(_, f, e)| f != e) {
            return Err(bad(field, found, expected));
        }
        let map = ReadOnlyMapping::new(
            MmapOptions::new()
                .len(geometry.file_size())
                .map_raw_read_only(&file)
                .map_err(io_err)?,
        )
        .map_err(io_err)?;
        Ok(SnapshotReader {
            map,
            header,
            geometry,
            path,
            file: FileId::of(&metadata),
            attempts: DEFAULT_READ_ATTEMPTS,
        })
    }

    /// Whether the path names another file than the one this reader maps: a writer that
    /// (re)starts on the path, after a `kill -9` too, builds a new file and renames it over
    /// the old one, so a reader that keeps its mapping keeps reading the old writer's books
    /// (its heartbeat stopped) until it reopens. A path that names no file now (removed) is
    /// not a replacement: the old mapping is all there is.
    pub fn is_replaced(&self) -> bool {
        std::fs::metadata(&self.path).is_ok_and(|m| FileId::of(&m) != self.file)
    }

    /// Reopens the path if [`SnapshotReader::is_replaced`]: `Ok(true)` when this reader now
    /// maps the new file (with the same read bound), `Ok(false)` when nothing changed.
    /// Cold: one `stat` of the path; call it between frames, not per read.
    ///
    /// # Errors
    ///
    /// As [`SnapshotReader::open`], for the new file; this reader keeps the old mapping then.
    ///
    /// # Examples
    ///
    /// ```
    /// use ticklane_snapshot::{SnapshotReader, SnapshotWriter};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("book.snap");
    /// SnapshotWriter::create(&path, 16, 5)?.close()?;
    /// let mut reader = SnapshotReader::open(&path)?;
    /// assert!(!reader.reopen_if_replaced()?);
    /// let restarted = SnapshotWriter::create(&path, 32, 5)?; // renamed over the old file
    /// assert!(reader.is_replaced());
    /// assert!(reader.reopen_if_replaced()?);
    /// assert_eq!(reader.header().slot_capacity, 32);
    /// assert!(!reader.header().is_closed(), "the new writer's file");
    /// # drop(restarted);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn reopen_if_replaced(&mut self) -> Result<bool, SnapshotError> {
        if !self.is_replaced() {
            return Ok(false);
        }
        *self = SnapshotReader::open(&self.path)?.with_read_attempts(self.attempts);
        Ok(true)
    }

    /// Sets how many times a read tries a slot before reporting it (at least 1).
    pub fn with_read_attempts(mut self, attempts: u32) -> Self {
        self.attempts = attempts.max(1);
        self
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The header: the fixed fields as validated at open, and the heartbeat, instrument
    /// count, flags and lag as they stand now (each loaded atomically on its own).
    pub fn header(&self) -> SnapshotHeader {
        merge_header(read_header(&self.map), &self.header, self.geometry.capacity)
    }

    /// Levels per side in each slot.
    pub fn depth(&self) -> usize {
        self.geometry.depth
    }

    /// The slots in use now, `0 .. instruments`: every one holds an instrument.
    pub fn slots(&self) -> Range<usize> {
        0..self.in_use()
    }

    fn in_use(&self) -> usize {
        // Acquire: pairs with the writer's Release after it wrote the new slot.
        let count = self.map.words().load_acquire(INSTRUMENTS_WORD);
        usize::try_from(count).map_or(self.geometry.capacity, |n| n.min(self.geometry.capacity))
    }

    /// The first slot in use whose symbol, trailing spaces removed, is `symbol`.
    ///
    /// The symbol is one 8-byte word of the slot, loaded atomically on its own, so the scan
    /// never waits on a slot being written.
    pub fn find(&self, symbol: &[u8]) -> Option<usize> {
        self.slots().find(|&slot| {
            let word = self.slot_reader(slot).word(0).to_ne_bytes();
            ticklane_itch::Alpha(word).trimmed() == symbol
        })
    }

    /// Copies slot `slot` out consistently, trying up to the read bound.
    ///
    /// # Errors
    ///
    /// [`ReadError::NoSuchSlot`] if `slot` is not in use; [`ReadError::WriteInProgress`] if
    /// its sequence stayed odd (a writer busy or killed mid-write); [`ReadError::Contended`]
    /// if writes kept overlapping the copy.
    pub fn read(&self, slot: usize) -> Result<InstrumentState, ReadError> {
        let mut words = Vec::new();
        self.read_with(slot, &mut words, InstrumentState::from_payload)
    }

    /// Copies slot `slot` out consistently into `words` (resized to the slot's payload once,
    /// then reused, so a caller that keeps `words` reads without allocating) and hands the
    /// copy to `view`: the sequence, the fixed payload, the bid and the ask ladders (each the
    /// file's depth long; the payload's level counts say how many are live).
    ///
    /// # Errors
    ///
    /// As [`SnapshotReader::read`].
    pub fn read_with<R>(
        &self,
        slot: usize,
        words: &mut Vec<u64>,
        view: impl FnOnce(u64, &SlotPayload, &[LevelRecord], &[LevelRecord]) -> R,
    ) -> Result<R, ReadError> {
        let in_use = self.in_use();
        if slot >= in_use {
            return Err(ReadError::NoSuchSlot { slot, in_use });
        }
        let lock = self.slot_reader(slot);
        words.resize(self.geometry.payload_words(), 0);
        let sequence = lock
            .load_bounded(words, self.attempts)
            .map_err(|e| match e {
                TryReadError::WriteInProgress => ReadError::WriteInProgress {
                    sequence: lock.sequence(),
                    attempts: self.attempts,
                },
                TryReadError::Changed => ReadError::Contended {
                    attempts: self.attempts,
                },
            })?;
        let (fixed, ladders) = words.split_at(FIXED_PAYLOAD_WORDS);
        let payload: &SlotPayload = &bytemuck::cast_slice(fixed)[0];
        let levels: &[LevelRecord] = bytemuck::cast_slice(ladders);
        let (bids, asks) = levels.split_at(self.geometry.depth);
        Ok(view(sequence, payload, bids, asks))
    }

    /// The raw sequence word of slot `slot` (odd while a write is in progress), for
    /// diagnostics.
    pub fn sequence(&self, slot: usize) -> Option<u64> {
        (slot < self.geometry.capacity).then(|| self.slot_reader(slot).sequence())
    }

    /// The reader's side of slot `slot`'s seqlock.
    #[inline]
    fn slot_reader(&self, slot: usize) -> SeqLockReader<'_> {
        debug_assert!(slot < self.geometry.capacity);
        SeqLockReader::new(self.map.words().slice(self.geometry.slot_words(slot)))
            .expect("invariant: a slot has a sequence word")
    }
}

/// Loads every header word atomically, one by one, each with Acquire ordering.
fn read_header(map: &ReadOnlyMapping) -> SnapshotHeader {
    let view = map.words();
    let mut words = [0u64; HEADER_SIZE / 8];
    for (index, w) in words.iter_mut().enumerate() {
        *w = view.load_acquire(index);
    }
    bytemuck::cast(words)
}

/// `current` with its fixed fields taken from `validated` (they never change after the file is
/// in place, and the copy validated at open is the one the reader trusts) and its instrument
/// count clamped to the capacity.
fn merge_header(
    current: SnapshotHeader,
    validated: &SnapshotHeader,
    capacity: usize,
) -> SnapshotHeader {
    let mut words: [u64; HEADER_SIZE / 8] = bytemuck::cast(current);
    let fixed: [u64; HEADER_SIZE / 8] = bytemuck::cast(*validated);
    words[..STATIC_HEADER_WORDS].copy_from_slice(&fixed[..STATIC_HEADER_WORDS]);
    let mut header: SnapshotHeader = bytemuck::cast(words);
    header.instruments = header.instruments.min(capacity as u64);
    header
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SnapshotWriter;
    use std::os::unix::fs::FileExt;

    /// A valid file, closed, then `patch` applied to its bytes.
    fn patched(patch: impl FnOnce(&mut Vec<u8>)) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("s.snap");
        SnapshotWriter::create(&path, 2, 3)
            .expect("create")
            .close()
            .expect("close");
        let mut bytes = std::fs::read(&path).expect("read");
        patch(&mut bytes);
        std::fs::write(&path, &bytes).expect("write");
        (dir, path)
    }

    #[test]
    fn a_valid_file_opens() {
        let (_dir, path) = patched(|_| {});
        let reader = SnapshotReader::open(&path).expect("valid");
        let header = reader.header();
        assert_eq!(header.magic, MAGIC);
        assert_eq!((header.slot_capacity, header.depth), (2, 3));
        assert_eq!(header.slot_size, 136 + 32 * 3);
        assert!(header.is_closed());
        assert_eq!(reader.slots(), 0..0);
        assert_eq!(reader.depth(), 3);
        assert_eq!(reader.sequence(0), Some(0));
        assert_eq!(reader.sequence(2), None);
    }

    #[test]
    fn invalid_files_are_refused_with_the_reason() {
        let (_d, path) = patched(|b| b[0] = b'X');
        assert!(matches!(
            SnapshotReader::open(&path),
            Err(SnapshotError::BadMagic { .. })
        ));
        // Version 1 had no line state or loss words: its bytes 88 to 128 are not those.
        let (_d, path) = patched(|b| b[8..12].copy_from_slice(&1u32.to_ne_bytes()));
        assert!(matches!(
            SnapshotReader::open(&path),
            Err(SnapshotError::UnsupportedVersion {
                found: 1,
                supported: 2,
                ..
            })
        ));
        let (_d, path) = patched(|b| b[12..16].copy_from_slice(&0x0403_0201u32.to_ne_bytes()));
        assert!(matches!(
            SnapshotReader::open(&path),
            Err(SnapshotError::ByteOrder { .. })
        ));
        let (_d, path) = patched(|b| b[20..24].copy_from_slice(&999u32.to_ne_bytes()));
        assert!(matches!(
            SnapshotReader::open(&path),
            Err(SnapshotError::BadHeader {
                field: "slot_size",
                ..
            })
        ));
        let (_d, path) = patched(|b| b[28..32].copy_from_slice(&u32::MAX.to_ne_bytes()));
        assert!(matches!(
            SnapshotReader::open(&path),
            Err(SnapshotError::BadHeader { field: "depth", .. })
        ));
        let (_d, path) = patched(|b| b[24..28].copy_from_slice(&0u32.to_ne_bytes()));
        assert!(matches!(
            SnapshotReader::open(&path),
            Err(SnapshotError::BadHeader {
                field: "slot_capacity",
                ..
            })
        ));
        let (_d, path) = patched(|b| b.truncate(b.len() - 8));
        assert!(matches!(
            SnapshotReader::open(&path),
            Err(SnapshotError::BadHeader {
                field: "file length",
                ..
            })
        ));
        let (_d, path) = patched(|b| b.truncate(100));
        assert!(matches!(
            SnapshotReader::open(&path),
            Err(SnapshotError::BadHeader {
                field: "file length",
                ..
            })
        ));
        assert!(matches!(
            SnapshotReader::open(_d.path().join("missing")),
            Err(SnapshotError::Io { .. })
        ));
    }

    #[test]
    fn an_odd_sequence_written_into_the_file_is_reported() {
        // What `kill -9` in the middle of a write leaves: the sequence odd on disk.
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("s.snap");
        let books = ticklane_book::Books::new(ticklane_book::BookConfig {
            max_orders: 4,
            max_books: 2,
            levels_per_side: 2,
        })
        .expect("books");
        let mut writer = SnapshotWriter::create(&path, 2, 1).expect("create");
        writer
            .publish(&books, ticklane_itch::Locate(4), 1, ticklane_itch::Nanos(1))
            .expect("room");
        std::mem::forget(writer);
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .expect("open for writing");
        file.write_at(&5u64.to_ne_bytes(), HEADER_SIZE as u64)
            .expect("poke");
        let reader = SnapshotReader::open(&path).expect("open");
        assert!(
            !reader.header().is_closed(),
            "a killed writer does not close"
        );
        assert_eq!(
            reader.read(0),
            Err(ReadError::WriteInProgress {
                sequence: 5,
                attempts: DEFAULT_READ_ATTEMPTS
            })
        );
    }
}
