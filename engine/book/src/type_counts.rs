//! Messages counted by ITCH type.

use ticklane_itch as itch;

/// Counts by message type: index is the type byte.
#[derive(Clone, Copy, Debug)]
pub struct TypeCounts(pub [u64; 256]);

impl Default for TypeCounts {
    fn default() -> Self {
        TypeCounts([0; 256])
    }
}

impl TypeCounts {
    /// `(type letter, count)` for every type seen, in the spec's order.
    pub fn seen(&self) -> impl Iterator<Item = (u8, u64)> + '_ {
        itch::ALL_TAGS
            .iter()
            .map(|&t| (t, self.0[usize::from(t)]))
            .filter(|&(_, n)| n > 0)
    }
}
