//! A fixed-length array of plain-old-data in zeroed anonymous memory, on huge pages where the
//! kernel allows them.
//!
//! The order table is large (sized for a full day) and filled in reference order, so on 4 KiB
//! pages every few hundred orders fault in a fresh page: on a synthetic day that was a tenth
//! of the run in the kernel. Asking for transparent huge pages makes that one fault per 2 MiB.
//! Pages never touched are never made resident either way.

use std::io;
use std::marker::PhantomData;

use bytemuck::Pod;
use memmap2::{Advice, MmapMut};

/// `len` zeroed values of `T`, allocated once.
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
        let bytes = len
            .checked_mul(core::mem::size_of::<T>())
            .ok_or_else(|| io::Error::other("table size overflows the address space"))?;
        let map = MmapMut::map_anon(bytes.max(1))?;
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
    pub fn as_slice(&self) -> &[T] {
        // The mapping is page aligned and exactly `len * size_of::<T>()` bytes are used.
        bytemuck::cast_slice(&self.map[..self.len * core::mem::size_of::<T>()])
    }

    /// The values, mutable.
    #[inline(always)]
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        bytemuck::cast_slice_mut(&mut self.map[..self.len * core::mem::size_of::<T>()])
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

    /// A copy of value `index`, if in range: one bounds check and a load, where
    /// [`ZeroedPages::as_slice`] also checks the mapping's alignment and length.
    #[inline(always)]
    pub(super) fn get(&self, index: usize) -> Option<T> {
        let size = core::mem::size_of::<T>();
        let start = index.checked_mul(size)?;
        let bytes = self.map.get(start..start.checked_add(size)?)?;
        (start < self.len * size).then(|| bytemuck::pod_read_unaligned(bytes))
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
