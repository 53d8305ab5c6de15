//! A percentile plot as a hand-written SVG: latency (log scale) against percentile, with
//! the percentile axis in "nines" (90%, 99%, 99.9%, …) the way HdrHistogram plots are read.
//! Written by hand so the harness needs no plotting crate.

use std::fmt::Write as _;

/// One curve: a name for the legend and (percentile in `0..=1`, nanoseconds) points.
pub struct Series {
    /// Legend text.
    pub name: String,
    /// Points in rising percentile order.
    pub points: Vec<(f64, u64)>,
}

const WIDTH: f64 = 1080.0;
const HEIGHT: f64 = 560.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 370.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
/// Curve colours, distinguishable in print and for the common colour blindnesses.
const COLOURS: [&str; 8] = [
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000", "#999999",
];
const DASHES: [&str; 3] = ["", "6,3", "2,2"];

/// How many nines `p` is: 0.9 → 1, 0.99 → 2; capped so the 100th percentile (the max) lands
/// just past the last finite step.
fn nines(p: f64, cap: f64) -> f64 {
    if p >= 1.0 {
        cap
    } else {
        (-(1.0 - p).log10()).min(cap)
    }
}

/// `1500` ns as `1.5µs`, for tick labels.
fn tick_label(ns: f64) -> String {
    match ns {
        n if n < 1e3 => format!("{n:.0}ns"),
        n if n < 1e6 => format!("{}µs", trim(n / 1e3)),
        n if n < 1e9 => format!("{}ms", trim(n / 1e6)),
        n => format!("{}s", trim(n / 1e9)),
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.1}");
    s.strip_suffix(".0").map(str::to_owned).unwrap_or(s)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Renders `series` under `title` as a complete SVG document.
pub fn render(title: &str, series: &[Series]) -> String {
    let all = series.iter().flat_map(|s| s.points.iter());
    let (mut lo, mut hi, mut max_nines) = (f64::MAX, 1.0f64, 1.0f64);
    let mut finite_cap = 1.0f64;
    for &(p, v) in all.clone() {
        if p < 1.0 {
            finite_cap = finite_cap.max(nines(p, 9.0));
        }
        lo = lo.min(v.max(1) as f64);
        hi = hi.max(v.max(1) as f64);
    }
    let cap = (finite_cap + 0.5).ceil();
    for &(p, _) in all {
        max_nines = max_nines.max(nines(p, cap));
    }
    if lo > hi {
        lo = 1.0;
    }
    let (y_lo, y_hi) = (
        lo.log10().floor(),
        hi.log10().ceil().max(lo.log10().floor() + 1.0),
    );
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let x_of = |n: f64| LEFT + n / max_nines * plot_w;
    let y_of = |ns: f64| TOP + plot_h - (ns.max(1.0).log10() - y_lo) / (y_hi - y_lo) * plot_h;

    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="22" font-size="15" text-anchor="middle">{}</text>"#,
        LEFT + plot_w / 2.0,
        escape(title)
    );
    // Grid and axes: one vertical line per nine, one horizontal line per decade.
    let mut n = 0.0;
    while n <= max_nines + 1e-9 {
        let x = x_of(n);
        let label = match n as u32 {
            0 => "0%".to_owned(),
            k => format!("{}%", 100.0 - 100.0 / 10f64.powi(k as i32)),
        };
        let _ = writeln!(
            svg,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="#ddd"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{label}</text>"##,
            TOP + plot_h,
            TOP + plot_h + 18.0
        );
        n += 1.0;
    }
    for decade in y_lo as i32..=y_hi as i32 {
        let ns = 10f64.powi(decade);
        let y = y_of(ns);
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + plot_w,
            LEFT - 6.0,
            y + 4.0,
            tick_label(ns)
        );
    }
    let _ = writeln!(
        svg,
        r##"<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#444"/>"##
    );
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">percentile (the rightmost point of each curve is its max)</text>"#,
        LEFT + plot_w / 2.0,
        HEIGHT - 10.0
    );
    let _ = writeln!(
        svg,
        r#"<text transform="translate(16 {:.1}) rotate(-90)" text-anchor="middle">latency (log scale)</text>"#,
        TOP + plot_h / 2.0
    );
    for (i, s) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let dash = DASHES[(i / COLOURS.len()) % DASHES.len()];
        let path: Vec<String> = s
            .points
            .iter()
            .map(|&(p, v)| format!("{:.1},{:.1}", x_of(nines(p, cap)), y_of(v as f64)))
            .collect();
        let _ = writeln!(
            svg,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="1.6" stroke-dasharray="{dash}" points="{}"/>"#,
            path.join(" ")
        );
        let ly = TOP + 10.0 + i as f64 * 18.0;
        let lx = WIDTH - RIGHT + 14.0;
        let _ = writeln!(
            svg,
            r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{colour}" stroke-width="2" stroke-dasharray="{dash}"/><text x="{}" y="{}">{}</text>"#,
            lx + 24.0,
            lx + 30.0,
            ly + 4.0,
            escape(&s.name)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_one_curve_per_series_with_a_legend() {
        let series = [
            Series {
                name: "a <1>".into(),
                points: vec![(0.0, 100), (0.9, 200), (0.99, 5_000), (1.0, 90_000)],
            },
            Series {
                name: "b".into(),
                points: vec![(0.0, 50), (0.999, 700), (1.0, 800)],
            },
        ];
        let svg = render("t", &series);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("a &lt;1&gt;"));
        assert!(svg.contains("99.9%"));
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
    }

    #[test]
    fn labels() {
        assert_eq!(tick_label(100.0), "100ns");
        assert_eq!(tick_label(1_000.0), "1µs");
        assert_eq!(tick_label(10_000_000.0), "10ms");
    }
}
