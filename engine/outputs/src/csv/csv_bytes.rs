//! CSV fields formatted into memory at a cursor: the one formatting code behind every CSV
//! output, whether its bytes then go to a file ([`super::CsvBuffer`]) or stay in memory
//! for a caller that places whole rows itself (the book threads of `replay --threads`).
//!
//! Fields are written straight into the buffer at a cursor (integers eight digits at a
//! time in one 64-bit word, stored with one 8-byte write; no `format!`, no per-field length
//! checks of a growing `Vec`). The caller makes room for a row first ([`CsvBytes::room`]);
//! the fields of one row then never check for space, and a row formatted through one
//! [`RowCursor`] stores at an offset into a window of fixed length. On the top-of-book stream the
//! two-digits-per-step table this replaced had already halved the instructions per row
//! against `itoa` strings; the eight-digit words cut them again (figures in the commit that
//! made the change).

/// Bytes one row may take, and what [`CsvBytes::room`] guarantees free: more than any row
/// of this crate's formats needs (a `--bbo-out` row is at most 151 bytes), with the 8 bytes
/// a word store may write past the cursor.
pub const ROW_ROOM: usize = 1024;

/// Each byte `b'0'`: added to a word of digit values (0 to 9 per byte) it makes ASCII.
const ASCII_ZEROS: u64 = 0x3030_3030_3030_3030;

/// A byte buffer that CSV fields are formatted into.
#[derive(Debug, Default)]
pub struct CsvBytes {
    /// Zeroed storage; `buf[..len]` is the text so far.
    buf: Vec<u8>,
    /// Invariant: `len + ROW_ROOM <= buf.len()` after [`CsvBytes::room`], until the row's
    /// fields are written.
    len: usize,
}

/// The eight decimal digits of `v < 10^8`, leading zeros included, one per byte of the word
/// as values 0 to 9, the most significant digit in the lowest byte (so `to_le_bytes` gives
/// them in reading order).
///
/// Divisions by 10^4, 100 and 10 are done on all lanes at once with multiply-shift
/// reciprocals (exact for the lane ranges here: 10486 / 2^20 for 0..10^4 by 100, 103 / 2^10
/// for 0..100 by 10): a handful of multiplies for eight digits instead of a divide per pair.
#[inline(always)]
fn digit_lanes(v: u32) -> u64 {
    debug_assert!(v < 100_000_000);
    let v = u64::from(v);
    // abcd in the low 32 bits, efgh in the high 32 bits.
    let abcd_efgh = (v / 10_000) | ((v % 10_000) << 32);
    // Per 32-bit lane: x / 100 in its low 16 bits, x % 100 in its high 16 bits.
    let hundreds = ((abcd_efgh * 10_486) >> 20) & 0x0000_007F_0000_007F;
    let pairs = hundreds | ((abcd_efgh - hundreds * 100) << 16);
    // Per 16-bit lane: x / 10 in its low byte, x % 10 in its high byte.
    let tens = ((pairs * 103) >> 10) & 0x000F_000F_000F_000F;
    tens | ((pairs - tens * 10) << 8)
}

/// The four decimal digits of `v < 10^4`, as [`digit_lanes`] gives eight: one per byte,
/// the most significant in the lowest byte. Half the steps of the eight-digit split, for
/// the small numbers (locates, order counts, most sizes) that fill half a row's fields.
#[inline(always)]
fn four_digit_lanes(v: u32) -> u32 {
    debug_assert!(v < 10_000);
    // v / 100 by 5243 / 2^19, exact for v < 43,699: ab in the low 16 bits, cd in the high.
    let hundreds = (v * 5_243) >> 19;
    let pairs = hundreds | ((v - hundreds * 100) << 16);
    let tens = ((pairs * 103) >> 10) & 0x000F_000F;
    tens | ((pairs - tens * 10) << 8)
}

impl CsvBytes {
    /// An empty buffer of `capacity` bytes (at least [`ROW_ROOM`]), allocated and zeroed now.
    pub fn with_capacity(capacity: usize) -> Self {
        CsvBytes {
            buf: vec![0; capacity.max(ROW_ROOM)],
            len: 0,
        }
    }

    /// The text so far.
    #[inline(always)]
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// Bytes of text so far.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no text was written since the last clear.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes the buffer holds before it must grow or be emptied.
    #[inline(always)]
    pub fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// Forgets the text, keeping the storage.
    #[inline(always)]
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Makes [`ROW_ROOM`] bytes free past the cursor, doubling the storage if they are not:
    /// the only place this buffer allocates, so a reused buffer stops allocating once it has
    /// held its largest batch.
    #[inline(always)]
    pub fn room(&mut self) {
        if self.len + ROW_ROOM > self.buf.len() {
            self.grow();
        }
    }

    #[cold]
    fn grow(&mut self) {
        let size = (2 * self.buf.len()).max(self.len + ROW_ROOM);
        self.buf.resize(size, 0);
    }

    /// The fields of one row, written at the cursor into the room [`CsvBytes::room`] made;
    /// the text grows by what they wrote when the cursor is dropped. The row must fit in
    /// [`ROW_ROOM`] bytes (a window of that constant length, so the compiler knows it).
    ///
    /// # Panics
    ///
    /// If [`CsvBytes::room`] did not make room first.
    #[inline(always)]
    pub fn row(&mut self) -> RowCursor<'_> {
        RowCursor {
            window: &mut self.buf[self.len..self.len + ROW_ROOM],
            at: 0,
            len: &mut self.len,
        }
    }

    /// A cursor for one field: over all the storage past the text, so a row written field by
    /// field may be longer than [`ROW_ROOM`] where the storage allows.
    #[inline(always)]
    fn field(&mut self) -> RowCursor<'_> {
        RowCursor {
            window: &mut self.buf[self.len..],
            at: 0,
            len: &mut self.len,
        }
    }

    /// Appends an unsigned integer in decimal.
    #[inline(always)]
    pub fn uint(&mut self, v: u64) {
        self.field().uint(v);
    }

    /// Appends a space-padded 8-byte field with its trailing spaces removed (a stock
    /// symbol), as one 8-byte store.
    #[inline(always)]
    pub fn padded8(&mut self, raw: &[u8; 8]) {
        self.field().padded8(raw);
    }

    /// Appends a field separator.
    #[inline(always)]
    pub fn comma(&mut self) {
        self.field().comma();
    }

    /// Appends bytes as they are (a field the caller knows needs no quoting). At most 256
    /// bytes per call: fields here are symbols and letters.
    #[inline(always)]
    pub fn raw(&mut self, bytes: &[u8]) {
        self.field().raw(bytes);
    }

    /// Appends bytes of any length (whole rows formatted elsewhere).
    ///
    /// # Panics
    ///
    /// If they do not fit in the storage: the caller checks [`CsvBytes::capacity`] first.
    #[inline(always)]
    pub fn append(&mut self, bytes: &[u8]) {
        self.buf[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    /// Appends a single character.
    #[inline(always)]
    pub fn byte(&mut self, b: u8) {
        self.field().byte(b);
    }
}

/// A cursor over the storage past a [`CsvBytes`]'s text, from [`CsvBytes::row`]: where
/// every field is formatted.
///
/// A row's fields are stored at an offset into the free storage held as a slice (of the
/// constant length [`ROW_ROOM`] from [`CsvBytes::row`]), so each store checks an offset in
/// a register against a constant, where storing at the end of the buffer reloaded its
/// pointer and length and checked both at every field (on the top-of-book stream, a sixth
/// of the writer's instructions). The room was made for the row, so the checks never fail.
pub struct RowCursor<'a> {
    /// The storage past the text.
    window: &'a mut [u8],
    /// Bytes written into `window`.
    at: usize,
    /// The text's length, grown by `at` on drop.
    len: &'a mut usize,
}

impl RowCursor<'_> {
    /// Appends an unsigned integer in decimal.
    #[inline(always)]
    pub fn uint(&mut self, v: u64) {
        const E8: u64 = 100_000_000;
        const E16: u64 = E8 * E8;
        if v < 10_000 {
            self.leading_digits(u64::from(four_digit_lanes(v as u32)) << 32);
        } else if v < E8 {
            self.leading_digits(digit_lanes(v as u32));
        } else if v < E16 {
            self.leading_digits(digit_lanes((v / E8) as u32));
            self.eight_digits(digit_lanes((v % E8) as u32));
        } else {
            // v / 10^16 <= 1844.
            let rest = v % E16;
            self.leading_digits(digit_lanes((v / E16) as u32));
            self.eight_digits(digit_lanes((rest / E8) as u32));
            self.eight_digits(digit_lanes((rest % E8) as u32));
        }
    }

    /// Writes all eight digits of `lanes` (from [`digit_lanes`]).
    #[inline(always)]
    fn eight_digits(&mut self, lanes: u64) {
        self.word((lanes | ASCII_ZEROS).to_le_bytes(), 8);
    }

    /// Writes the digits of `lanes` from its first nonzero one (one `0` if all are zero).
    #[inline(always)]
    fn leading_digits(&mut self, lanes: u64) {
        // Leading zero digits are the low zero bytes; keep at least the last digit.
        let skip = (lanes.trailing_zeros() / 8).min(7);
        self.word(
            ((lanes | ASCII_ZEROS) >> (8 * skip)).to_le_bytes(),
            8 - skip as usize,
        );
    }

    /// Stores all 8 bytes of `bytes` at the cursor (the window leaves space) and keeps `n`.
    #[inline(always)]
    fn word(&mut self, bytes: [u8; 8], n: usize) {
        debug_assert!(n <= 8);
        self.window[self.at..self.at + 8].copy_from_slice(&bytes);
        self.at += n;
    }

    /// Appends a space-padded 8-byte field with its trailing spaces removed (a stock
    /// symbol), as one 8-byte store.
    #[inline(always)]
    pub fn padded8(&mut self, raw: &[u8; 8]) {
        let word = u64::from_le_bytes(*raw);
        // Trailing spaces are the high bytes equal to b' ': zero bytes after the xor.
        let spaces = (word ^ 0x2020_2020_2020_2020).leading_zeros() / 8;
        self.word(*raw, 8 - spaces as usize);
    }

    /// Appends a field separator.
    #[inline(always)]
    pub fn comma(&mut self) {
        self.byte(b',');
    }

    /// Appends bytes as they are (a field the caller knows needs no quoting). At most 256
    /// bytes per call: fields here are symbols and letters.
    #[inline(always)]
    pub fn raw(&mut self, bytes: &[u8]) {
        debug_assert!(bytes.len() <= 256, "fields are short");
        self.window[self.at..self.at + bytes.len()].copy_from_slice(bytes);
        self.at += bytes.len();
    }

    /// Appends a single character.
    #[inline(always)]
    pub fn byte(&mut self, b: u8) {
        self.window[self.at] = b;
        self.at += 1;
    }
}

impl Drop for RowCursor<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        *self.len += self.at;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(bytes: &CsvBytes) -> String {
        String::from_utf8(bytes.as_bytes().to_vec()).expect("ascii")
    }

    #[test]
    fn integers_match_std_formatting() {
        let mut values = vec![
            0u64,
            1,
            9,
            10,
            99,
            100,
            101,
            999,
            1000,
            u64::MAX,
            u64::MAX - 1,
        ];
        let mut v = 1u64;
        while let Some(next) = v.checked_mul(10) {
            values.extend([next - 1, next, next + 1]);
            v = next;
        }
        let mut csv = CsvBytes::default();
        for &v in &values {
            csv.room();
            csv.uint(v);
            csv.comma();
        }
        let expected: String = values.iter().map(|v| format!("{v},")).collect();
        assert_eq!(text(&csv), expected);
    }

    proptest::proptest! {
        #[test]
        fn any_integer_matches_std_formatting(v in proptest::num::u64::ANY, shift in 0u32..64) {
            // Shifting spreads values over every digit count, not just the 19-20 digit
            // numbers that uniform u64s nearly always are.
            let v = v >> shift;
            let mut csv = CsvBytes::default();
            csv.room();
            csv.uint(v);
            proptest::prop_assert_eq!(text(&csv), format!("{v}"));
        }
    }

    #[test]
    fn padded_symbols_lose_only_trailing_spaces() {
        let cases: [(&[u8; 8], &str); 5] = [
            (b"AAPL    ", "AAPL"),
            (b"BRK A   ", "BRK A"),
            (b"ABCDEFGH", "ABCDEFGH"),
            (b"        ", ""),
            (b"A       ", "A"),
        ];
        for (raw, expected) in cases {
            let mut csv = CsvBytes::default();
            csv.room();
            csv.padded8(raw);
            csv.comma();
            assert_eq!(text(&csv), format!("{expected},"), "{raw:?}");
        }
    }

    #[test]
    fn a_growing_buffer_keeps_its_text_and_a_cleared_one_its_storage() {
        let mut csv = CsvBytes::default();
        let mut expected = String::new();
        for i in 0..10_000u64 {
            csv.room();
            csv.uint(i);
            csv.byte(b'\n');
            expected.push_str(&format!("{i}\n"));
        }
        assert_eq!(text(&csv), expected);
        let capacity = csv.capacity();
        csv.clear();
        assert!(csv.is_empty());
        csv.room();
        assert_eq!(csv.capacity(), capacity, "no new storage after a clear");
    }
}
