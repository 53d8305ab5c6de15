//! Which Nasdaq venue's TotalView-ITCH feed a DBN file is written as (`--dataset`): Nasdaq,
//! BX and PSX each send their own ITCH 5.0 feed, which Databento publishes as three datasets
//! with a publisher each. Without `--dataset` the venue is the one the input's file name
//! names (Nasdaq's own files are `MMDDYYYY.NASDAQ_ITCH50`, `YYYYMMDD.BX_ITCH_50` and
//! `YYYYMMDD.PSX_ITCH_50`), else Nasdaq.

use std::path::Path;
use std::str::FromStr;

/// A Nasdaq ITCH dataset, as Databento names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ItchDataset {
    /// Nasdaq TotalView-ITCH: `XNAS.ITCH`.
    #[default]
    XnasItch,
    /// Nasdaq BX TotalView-ITCH: `XBOS.ITCH`.
    XbosItch,
    /// Nasdaq PSX TotalView-ITCH: `XPSX.ITCH`.
    XpsxItch,
}

/// The names `--dataset` accepts, for messages.
pub const DATASET_NAMES: &str = "XNAS.ITCH, XBOS.ITCH, XPSX.ITCH";

impl ItchDataset {
    /// The dataset as the `dbn` crate names it.
    pub fn dbn(self) -> dbn::Dataset {
        match self {
            ItchDataset::XnasItch => dbn::Dataset::XnasItch,
            ItchDataset::XbosItch => dbn::Dataset::XbosItch,
            ItchDataset::XpsxItch => dbn::Dataset::XpsxItch,
        }
    }

    /// Its name in the metadata: `XNAS.ITCH`, `XBOS.ITCH` or `XPSX.ITCH`.
    pub fn name(self) -> &'static str {
        self.dbn().as_str()
    }

    /// The records' `publisher_id`: the dataset's one publisher (2, 3 or 4).
    pub fn publisher_id(self) -> u16 {
        let publisher = match self {
            ItchDataset::XnasItch => dbn::Publisher::XnasItchXnas,
            ItchDataset::XbosItch => dbn::Publisher::XbosItchXbos,
            ItchDataset::XpsxItch => dbn::Publisher::XpsxItchXpsx,
        };
        publisher as u16
    }

    /// The venue `path`'s file name names, if it names one: a word of it (between `.`,
    /// `_`, `-` and spaces, any case) `NASDAQ` or `XNAS`, `BX` or `XBOS`, `PSX` or `XPSX`;
    /// `None` when it names none, or more than one.
    pub fn from_file_name(path: &Path) -> Option<Self> {
        let name = path.file_name()?.to_string_lossy().to_ascii_uppercase();
        let mut named = name
            .split(['.', '_', '-', ' '])
            .filter_map(|word| match word {
                "NASDAQ" | "XNAS" => Some(ItchDataset::XnasItch),
                "BX" | "XBOS" => Some(ItchDataset::XbosItch),
                "PSX" | "XPSX" => Some(ItchDataset::XpsxItch),
                _ => None,
            });
        let first = named.next()?;
        named.all(|d| d == first).then_some(first)
    }
}

impl FromStr for ItchDataset {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "XNAS.ITCH" => Ok(ItchDataset::XnasItch),
            "XBOS.ITCH" => Ok(ItchDataset::XbosItch),
            "XPSX.ITCH" => Ok(ItchDataset::XpsxItch),
            other => Err(format!(
                "unknown dataset {other:?}: one of {DATASET_NAMES} (Databento's names)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_names_and_publishers_are_databento_s() {
        // From Databento's publisher table: XNAS.ITCH 2, XBOS.ITCH 3, XPSX.ITCH 4.
        for (name, id) in [("XNAS.ITCH", 2), ("XBOS.ITCH", 3), ("XPSX.ITCH", 4)] {
            let dataset: ItchDataset = name.parse().expect("a dataset");
            assert_eq!((dataset.name(), dataset.publisher_id()), (name, id));
        }
        assert!("XNYS.PILLAR".parse::<ItchDataset>().is_err());
    }

    #[test]
    fn the_venue_comes_from_a_word_of_the_file_name() {
        let of = |name: &str| ItchDataset::from_file_name(Path::new(name));
        assert_eq!(of("01302019.NASDAQ_ITCH50.gz"), Some(ItchDataset::XnasItch));
        assert_eq!(
            of("/data/20190327.BX_ITCH_50.gz"),
            Some(ItchDataset::XbosItch)
        );
        assert_eq!(of("20190327.PSX_ITCH_50"), Some(ItchDataset::XpsxItch));
        assert_eq!(of("psx-capture.pcap"), Some(ItchDataset::XpsxItch));
        // Words only: "BOX" and "PSXY" name nothing.
        assert_eq!(of("BOX_day.pcap"), None);
        assert_eq!(of("PSXY.itch50"), None);
        assert_eq!(of("day.itch50"), None);
        assert_eq!(of("BX_vs_PSX.pcap"), None, "two venues: none chosen");
    }
}
