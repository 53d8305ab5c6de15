//! `replay --dbn-out` names the venue's dataset and publisher as Databento does (XNAS.ITCH 2,
//! XBOS.ITCH 3, XPSX.ITCH 4, from Databento's publisher table): `--dataset` when given, else
//! the venue a word of the input's file name names, else XNAS.ITCH; a dataset that is not
//! one of the three is a usage error naming the flag.

use std::path::Path;
use std::process::Output;

use dbn::decode::{DbnMetadata, DecodeRecord};

use crate::util;

fn ticklane(args: &[&str]) -> Output {
    util::ticklane().args(args).output().expect("run ticklane")
}

fn text(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

/// The dataset in the metadata, and the publisher ids of the records.
fn dataset_and_publishers(path: &Path) -> (String, Vec<u16>) {
    let mut decoder = dbn::decode::DbnDecoder::from_file(path).expect("open the DBN file");
    let dataset = decoder.metadata().dataset.clone();
    let mut publishers = Vec::new();
    while let Some(r) = decoder.decode_record::<dbn::MboMsg>().expect("decode") {
        publishers.push(r.hd.publisher_id);
    }
    (dataset, publishers)
}

#[test]
fn the_dataset_is_the_flag_s_else_the_file_name_s_else_nasdaq() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases = [
        ("20190130.BX_ITCH_50", None, "XBOS.ITCH", 3),
        ("20190130.PSX_ITCH_50", None, "XPSX.ITCH", 4),
        ("01302019.NASDAQ_ITCH50", None, "XNAS.ITCH", 2),
        ("20190130.itch50", None, "XNAS.ITCH", 2),
        ("20190130.BX_ITCH_50", Some("XPSX.ITCH"), "XPSX.ITCH", 4),
    ];
    for (name, flag, dataset, publisher) in cases {
        let input = dir.path().join(name);
        let made = ticklane(&["gen", text(&input), "--messages", "2000", "--stocks", "2"]);
        assert!(made.status.success(), "{made:?}");
        let out = dir.path().join("out.dbn");
        let mut args = vec!["replay", text(&input), "-q", "--dbn-out", text(&out)];
        if let Some(flag) = flag {
            args.extend(["--dataset", flag]);
        }
        let replayed = ticklane(&args);
        assert!(replayed.status.success(), "{name}: {replayed:?}");
        let (got, publishers) = dataset_and_publishers(&out);
        assert_eq!(got, dataset, "{name} {flag:?}");
        assert!(!publishers.is_empty());
        assert!(
            publishers.iter().all(|&p| p == publisher),
            "{name} {flag:?}: publishers {:?}",
            publishers.first()
        );
    }
}

#[test]
fn an_unknown_dataset_is_a_usage_error_naming_the_flag() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("20190130.itch50");
    let out = dir.path().join("out.dbn");
    let refused = ticklane(&[
        "replay",
        text(&input),
        "--dbn-out",
        text(&out),
        "--dataset",
        "XNYS.PILLAR",
    ]);
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("--dataset"), "{stderr}");
}
