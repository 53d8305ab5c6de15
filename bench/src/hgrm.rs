//! HdrHistogram's percentile-distribution text (`.hgrm`), the format HdrHistogram's own
//! tools print (`outputPercentileDistribution`) and its online plotter reads. The Rust
//! hdrhistogram crate serializes only its binary V2 form, so the text is written here.

use std::io::{self, Write};

use hdrhistogram::Histogram;

/// Steps per halving of the distance to 100%, as in HdrHistogram's own output.
const TICKS_PER_HALF_DISTANCE: u32 = 5;

/// Writes `h` (recorded in nanoseconds) as a percentile distribution, values divided by
/// `unit_ratio` (1000: microseconds, as HdrHistogram's tools are usually run).
///
/// # Errors
///
/// As `out`.
pub fn write_hgrm(h: &Histogram<u64>, unit_ratio: f64, mut out: impl Write) -> io::Result<()> {
    writeln!(
        out,
        "{:>12} {:>14} {:>10} {:>14}\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    )?;
    let mut total = 0u64;
    if !h.is_empty() {
        for step in h.iter_quantiles(TICKS_PER_HALF_DISTANCE) {
            total += step.count_since_last_iteration();
            let value = h.highest_equivalent(step.value_iterated_to()) as f64 / unit_ratio;
            let q = step.quantile_iterated_to();
            if q < 1.0 {
                writeln!(
                    out,
                    "{value:12.3} {q:2.12} {total:10} {:14.2}",
                    1.0 / (1.0 - q)
                )?;
            } else {
                writeln!(out, "{value:12.3} {q:2.12} {total:10}")?;
            }
        }
    }
    writeln!(
        out,
        "#[Mean    = {:12.3}, StdDeviation   = {:12.3}]",
        h.mean() / unit_ratio,
        h.stdev() / unit_ratio
    )?;
    writeln!(
        out,
        "#[Max     = {:12.3}, Total count    = {:12}]",
        h.max() as f64 / unit_ratio,
        h.len()
    )?;
    writeln!(
        out,
        "#[Buckets = {:12}, SubBuckets     = {:12}]",
        h.buckets(),
        (2 * 10u64.pow(u32::from(h.sigfig()))).next_power_of_two()
    )
}

/// The (percentile, value) points of `h`'s distribution, for plotting: the same steps as
/// the `.hgrm` file, values in nanoseconds, percentiles in `0.0 ..= 1.0`.
pub fn percentile_points(h: &Histogram<u64>) -> Vec<(f64, u64)> {
    if h.is_empty() {
        return Vec::new();
    }
    h.iter_quantiles(TICKS_PER_HALF_DISTANCE)
        .map(|step| {
            (
                step.quantile_iterated_to(),
                h.highest_equivalent(step.value_iterated_to()),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticklane_engine::pipeline::new_histogram;

    #[test]
    fn writes_the_standard_columns_and_footer() {
        let mut h = new_histogram();
        for v in 1..=1_000u64 {
            h.saturating_record(v * 100);
        }
        let mut text = Vec::new();
        write_hgrm(&h, 1000.0, &mut text).expect("writing to memory");
        let text = String::from_utf8(text).expect("utf-8");
        let mut lines = text.lines();
        let header: Vec<_> = lines.next().expect("header").split_whitespace().collect();
        assert_eq!(
            header,
            ["Value", "Percentile", "TotalCount", "1/(1-Percentile)"]
        );
        let rows: Vec<Vec<f64>> = text
            .lines()
            .skip(2)
            .take_while(|l| !l.starts_with('#'))
            .map(|l| {
                l.split_whitespace()
                    .map(|x| x.parse().expect("number"))
                    .collect()
            })
            .collect();
        assert!(rows.len() > 10);
        // Percentiles and counts rise; the last row is the whole histogram.
        assert!(rows
            .windows(2)
            .all(|w| w[0][1] <= w[1][1] && w[0][2] <= w[1][2]));
        let last = rows.last().expect("rows");
        assert_eq!((last[1], last[2]), (1.0, 1000.0));
        assert!((last[0] - 100.0).abs() < 0.2, "{last:?}");
        assert!(text.contains("Total count    =         1000"));
    }
}
