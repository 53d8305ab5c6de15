//! `[engine] instance`: which of several engines started together this one is, so that
//! each waits its own share of the staggered start (see `live::stagger`).

use core::fmt;

/// Indices a name hashes to: `0 .. NAME_INDICES`.
pub const NAME_INDICES: u64 = 1024;

/// An engine instance: an index from the configuration, or a name (a host or partition)
/// hashed to one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Instance {
    /// Given as an integer.
    Index(u64),
    /// Given as a string; hashed with FNV-1a (64-bit) to `0 .. NAME_INDICES`.
    Name(String),
}

impl Instance {
    /// The instance's index: its own, or its name's FNV-1a hash modulo [`NAME_INDICES`].
    /// Two names can share an index, which is why the stagger adds jitter.
    pub fn index(&self) -> u64 {
        match self {
            Instance::Index(i) => *i,
            Instance::Name(name) => fnv1a(name.as_bytes()) % NAME_INDICES,
        }
    }

    /// A seed for this instance's jitter (its index and, for a name, the whole hash).
    pub fn seed(&self) -> u64 {
        match self {
            Instance::Index(i) => i.wrapping_mul(0x9E37_79B9_7F4A_7C15),
            Instance::Name(name) => fnv1a(name.as_bytes()),
        }
    }
}

impl Default for Instance {
    /// Index 0: the first instance waits no stagger step, only its jitter.
    fn default() -> Self {
        Instance::Index(0)
    }
}

impl fmt::Display for Instance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Instance::Index(i) => write!(f, "{i}"),
            Instance::Name(name) => write!(f, "{name:?} (index {})", self.index()),
        }
    }
}

/// 64-bit FNV-1a.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_the_published_test_vectors() {
        // From the FNV reference (draft-eastlake-fnv, 64-bit FNV-1a).
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn a_name_hashes_to_an_index_below_the_bound() {
        let i = Instance::Name("foobar".into());
        assert_eq!(i.index(), 0x8594_4171_f739_67e8 % 1024);
        assert_eq!(Instance::Index(7).index(), 7);
    }
}
