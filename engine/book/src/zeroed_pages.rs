//! A fixed-length array of plain-old-data in zeroed anonymous memory, on huge pages where the
//! kernel allows them.
//!
//! The order table is large (sized for a full day) and filled in reference order, so on 4 KiB
//! pages every few hundred orders fault in a fresh page: on a synthetic day that was a tenth
//! of the run in the kernel. Asking for transparent huge pages makes that one fault per 2 MiB.
//! Pages never touched are never made resident either way.
//!
//! The views are the one `unsafe` of the book crate: the order table views its two tables
//! several times per message, and a `bytemuck` cast per view (alignment, length and size
//! checks of the mapping, each time) cost about a tenth of the book thread's instructions.
//! What a cast checks holds for the life of the mapping, so it is checked once, when the
//! mapping is made, and asserted in debug builds at each view.

use std::io;
use std::marker::PhantomData;

use bytemuck::Pod;
use memmap2::{Advice, MmapMut, MmapOptions};

/// The smallest page size Linux maps on any architecture ticklane builds for.
const PAGE: usize = 4096;

/// `len` zeroed values of `T`, allocated once.
///
/// Invariant: `map` starts at an address aligned for `T` (a mapping is page aligned, and
/// `T`'s alignment is at most a page) and holds at least `len * size_of::<T>()` bytes. The
/// bytes are only ever written through `&mut [T]`, so they always hold valid `T`s (all-zero
/// is one, `T: Pod`).
pub struct ZeroedPages<T> {
    map: MmapMut,
    len: usize,
    _values: PhantomData<T>,
}

impl<T: Pod> ZeroedPages<T> {
    /// Maps `len` zeroed values.
    ///
    /// # Errors
    ///
    /// If the size overflows or the kernel refuses the mapping.
    pub fn new(len: usize) -> io::Result<Self> {
        Self::map(len, false)
    }

    /// Maps `len` zeroed values without reserving swap for all of them (`MAP_NORESERVE`):
    /// for a table sized for a worst case far above what it fills, so that the worst case
    /// alone does not exceed the machine's commit limit at start-up.
    ///
    /// # Errors
    ///
    /// If the size overflows or the kernel refuses the mapping.
    pub fn sparse(len: usize) -> io::Result<Self> {
        Self::map(len, true)
    }

    fn map(len: usize, sparse: bool) -> io::Result<Self> {
        let bytes = len
            .checked_mul(core::mem::size_of::<T>())
            .ok_or_else(|| io::Error::other("table size overflows the address space"))?;
        const { assert!(core::mem::align_of::<T>() <= PAGE) };
        let mut options = MmapOptions::new();
        options.len(bytes.max(1));
        if sparse {
            options.no_reserve_swap();
        }
        let map = options.map_anon()?;
        // Only a hint: without huge pages the table works the same, just with more faults.
        let _ = map.advise(Advice::HugePage);
        Ok(ZeroedPages {
            map,
            len,
            _values: PhantomData,
        })
    }

    /// The values.
    #[inline(always)]
    #[allow(unsafe_code)]
    pub fn as_slice(&self) -> &[T] {
        let values = self.map.as_ptr().cast::<T>();
        self.debug_check(values);
        // SAFETY: by the type's invariant `values` is aligned for `T` and starts `len`
        // initialised, valid `T`s inside the mapping, which lives as long as `self`; the
        // shared borrow of `self` keeps `as_mut_slice` from aliasing them meanwhile.
        unsafe { core::slice::from_raw_parts(values, self.len) }
    }

    /// The values, mutable.
    #[inline(always)]
    #[allow(unsafe_code)]
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        let values = self.map.as_mut_ptr().cast::<T>();
        self.debug_check(values);
        // SAFETY: as in `as_slice`; the exclusive borrow of `self` makes this the only view.
        // Any bytes written through it form a valid `T` (`T: Pod`), keeping the invariant.
        unsafe { core::slice::from_raw_parts_mut(values, self.len) }
    }

    /// The type's invariant, in debug builds.
    #[inline(always)]
    fn debug_check(&self, values: *const T) {
        debug_assert!(
            values.is_aligned(),
            "invariant: the mapping is aligned for T"
        );
        debug_assert!(
            self.len * core::mem::size_of::<T>() <= self.map.len(),
            "invariant: the mapping holds len values"
        );
    }

    /// Where value `index` lies, for a prefetch: no bounds check (and no use of the
    /// pointer but as an address), so out of range gives some other address.
    #[inline(always)]
    pub(super) fn address_of(&self, index: usize) -> *const T {
        self.map
            .as_ptr()
            .wrapping_add(index.wrapping_mul(core::mem::size_of::<T>()))
            .cast()
    }

    /// A copy of value `index`, if in range.
    #[inline(always)]
    pub(super) fn get(&self, index: usize) -> Option<T> {
        self.as_slice().get(index).copied()
    }

    /// Number of values.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}
