//! Domain values carried by ITCH fields, and how each is read from and written to the wire.
//!
//! Every integer on the wire is big-endian. Prices are integers: never `f64`.

use core::fmt;

/// A field type that has a fixed size on the wire.
///
/// `read` and `write` are given a slice that starts at the field and is at least `SIZE`
/// bytes long; the message views guarantee that with their compile-time offsets.
pub trait WireField: Copy {
    /// Bytes on the wire.
    const SIZE: usize;
    /// Reads the field from the first `SIZE` bytes of `bytes`.
    fn read(bytes: &[u8]) -> Self;
    /// Writes the field into the first `SIZE` bytes of `out`.
    fn write(self, out: &mut [u8]);
}

macro_rules! be_int_field {
    ($($t:ty),*) => {$(
        impl WireField for $t {
            const SIZE: usize = core::mem::size_of::<$t>();
            #[inline(always)]
            fn read(bytes: &[u8]) -> Self {
                let mut raw = [0u8; core::mem::size_of::<$t>()];
                raw.copy_from_slice(&bytes[..Self::SIZE]);
                <$t>::from_be_bytes(raw)
            }
            #[inline(always)]
            fn write(self, out: &mut [u8]) {
                out[..Self::SIZE].copy_from_slice(&self.to_be_bytes());
            }
        }
    )*};
}
be_int_field!(u8, u16, u32, u64);

macro_rules! newtype_field {
    ($(#[$doc:meta])* $name:ident($inner:ty)) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub struct $name(pub $inner);

        impl WireField for $name {
            const SIZE: usize = <$inner as WireField>::SIZE;
            #[inline(always)]
            fn read(bytes: &[u8]) -> Self {
                $name(<$inner>::read(bytes))
            }
            #[inline(always)]
            fn write(self, out: &mut [u8]) {
                self.0.write(out)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($name), self.0)
            }
        }
    };
}

newtype_field!(
    /// A `Price(4)`: an unsigned price in 1/10,000 dollars (four implied decimals).
    Price(u32)
);
newtype_field!(
    /// A `Price(8)` (the MWCB decline levels): an unsigned price in 1/100,000,000 dollars.
    Price8(u64)
);
newtype_field!(
    /// An order reference number: day-unique per the spec, reusable once the order is gone.
    /// Reference 0 is an ordinary reference.
    OrderRef(u64)
);
newtype_field!(
    /// A stock locate code: a small, dense, day-scoped index of the instrument.
    Locate(u16)
);
newtype_field!(
    /// A match number, shared by an execution and a later broken-trade message.
    MatchNumber(u64)
);

impl fmt::Display for Price {
    /// Dollars with the four implied decimals: `1234500` prints as `123.4500`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:04}", self.0 / 10_000, self.0 % 10_000)
    }
}

/// Nanoseconds since midnight, carried on the wire in 6 bytes.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct Nanos(pub u64);

impl Nanos {
    /// The largest value 6 bytes hold.
    pub const MAX: Nanos = Nanos((1 << 48) - 1);
}

impl WireField for Nanos {
    const SIZE: usize = 6;
    #[inline(always)]
    fn read(bytes: &[u8]) -> Self {
        let b = &bytes[..6];
        Nanos(
            (u64::from(b[0]) << 40)
                | (u64::from(b[1]) << 32)
                | (u64::from(b[2]) << 24)
                | (u64::from(b[3]) << 16)
                | (u64::from(b[4]) << 8)
                | u64::from(b[5]),
        )
    }
    #[inline(always)]
    fn write(self, out: &mut [u8]) {
        out[..6].copy_from_slice(&self.0.to_be_bytes()[2..]);
    }
}

/// A left-justified, space-padded ASCII field of `N` bytes (stock symbols, MPIDs, reasons).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Alpha<const N: usize>(pub [u8; N]);

impl<const N: usize> Alpha<N> {
    /// Pads `text` with spaces on the right; `None` if it is longer than `N` bytes.
    pub fn new(text: &[u8]) -> Option<Self> {
        if text.len() > N {
            return None;
        }
        let mut raw = [b' '; N];
        raw[..text.len()].copy_from_slice(text);
        Some(Alpha(raw))
    }

    /// The bytes with trailing spaces removed (the spec pads on the right).
    #[inline]
    pub fn trimmed(&self) -> &[u8] {
        Self::trim(&self.0)
    }

    /// `raw` with trailing spaces removed.
    #[inline]
    pub fn trim(raw: &[u8; N]) -> &[u8] {
        let end = raw.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1);
        &raw[..end]
    }

    /// The trimmed text, with any byte that is not printable ASCII shown as `?`.
    pub fn to_text(&self) -> String {
        self.trimmed()
            .iter()
            .map(|&b| {
                if b.is_ascii_graphic() || b == b' ' {
                    b as char
                } else {
                    '?'
                }
            })
            .collect()
    }
}

impl<const N: usize> Default for Alpha<N> {
    fn default() -> Self {
        Alpha([b' '; N])
    }
}

impl<const N: usize> fmt::Debug for Alpha<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.to_text())
    }
}

impl<const N: usize> WireField for Alpha<N> {
    const SIZE: usize = N;
    #[inline(always)]
    fn read(bytes: &[u8]) -> Self {
        let mut raw = [0u8; N];
        raw.copy_from_slice(&bytes[..N]);
        Alpha(raw)
    }
    #[inline(always)]
    fn write(self, out: &mut [u8]) {
        out[..N].copy_from_slice(&self.0);
    }
}

/// A stock symbol: 8 bytes, space padded.
pub type Stock = Alpha<8>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamp_round_trips_in_six_bytes() {
        let mut buf = [0xAAu8; 8];
        Nanos(0x0102_0304_0506).write(&mut buf);
        assert_eq!(buf, [1, 2, 3, 4, 5, 6, 0xAA, 0xAA]);
        assert_eq!(Nanos::read(&buf), Nanos(0x0102_0304_0506));
    }

    #[test]
    fn alpha_trims_only_trailing_spaces() {
        let a = Alpha::<8>::new(b" AB").expect("fits");
        assert_eq!(a.trimmed(), b" AB");
        assert_eq!(Alpha::<8>::default().trimmed(), b"");
        assert!(Alpha::<2>::new(b"ABC").is_none());
    }

    #[test]
    fn price_displays_four_decimals() {
        assert_eq!(Price(1_234_500).to_string(), "123.4500");
        assert_eq!(Price(7).to_string(), "0.0007");
    }
}
