//! The order event of a Databento MBO record, decoded: the books apply it as they apply
//! ITCH (a DBN MBO input), so it lives beside the ITCH views, below both the readers that
//! decode it and the books.

/// One MBO record, as Databento defines its fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MboRecord {
    /// Databento's numeric instrument id.
    pub instrument_id: u32,
    /// The order id assigned at the venue (for XNAS.ITCH, the ITCH order reference).
    pub order_id: u64,
    /// Price in units of 1e-9 (`i64::MAX` is DBN's undefined price).
    pub price: i64,
    /// Shares: the order's size (add, modify), the shares cancelled (cancel), or the shares
    /// traded (trade, fill).
    pub size: u32,
    /// `A`dd, `C`ancel, `M`odify, clea`R`, `T`rade, `F`ill or `N`one.
    pub action: u8,
    /// `B`id, `A`sk or `N`one.
    pub side: u8,
    /// Bit field: `F_LAST` (0x80), `F_TOB` (0x40), `F_SNAPSHOT` (0x20), `F_MBP` (0x10),
    /// `F_BAD_TS_RECV` (0x08), `F_MAYBE_BAD_BOOK` (0x04).
    pub flags: u8,
    /// Matching-engine timestamp, nanoseconds since the Unix epoch.
    pub ts_event: u64,
    /// The venue's sequence number.
    pub sequence: u32,
}
