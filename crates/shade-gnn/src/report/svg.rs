//! The SVG of a [`TrainingCurve`]: a title, one panel for the losses (log scale when
//! every value is positive) and one for the other metrics, each with "nice" ticks
//! (1, 2, 5 × 10^k; decades on a log axis), a light grid, a legend, and the marked
//! epoch as a dashed vertical line.

use super::TrainingCurve;
use std::fmt::Write as _;

const WIDTH: f64 = 960.0;
const HEIGHT: f64 = 420.0;
const TOP: f64 = 56.0;
const BOTTOM: f64 = 48.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 20.0;
const COLOURS: [&str; 6] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
];

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Ticks of a linear axis over `[lo, hi]`: about `n` multiples of 1, 2 or 5 × 10^k,
/// and the range widened to the outer ticks.
pub(super) fn linear_ticks(lo: f64, hi: f64, n: usize) -> (f64, f64, Vec<f64>) {
    let (lo, hi) = if hi - lo < 1e-12 {
        (lo - 0.5, hi + 0.5)
    } else {
        (lo, hi)
    };
    let raw = (hi - lo) / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * mag);
    let (a, b) = ((lo / step).floor() as i64, (hi / step).ceil() as i64);
    // k × step computed as an integer over a power of ten, so 3 × 0.2 is 0.6.
    let inv = if mag < 1.0 { (1.0 / mag).round() } else { 1.0 };
    let unit = (step * inv).round();
    let tick = |k: i64| k as f64 * unit / inv;
    let ticks = (a..=b).map(tick).collect();
    (tick(a), tick(b), ticks)
}

/// Ticks of a log axis over `[lo, hi]` (both positive): the decades, or 1-2-5 steps
/// within them when the range spans fewer than two decades.
pub(super) fn log_ticks(lo: f64, hi: f64) -> (f64, f64, Vec<f64>) {
    let (a, b) = (
        lo.log10().floor() as i32,
        hi.log10().ceil().max(lo.log10().floor() + 1.0) as i32,
    );
    let fine = (hi / lo).log10() < 2.0;
    let mut ticks = Vec::new();
    for k in a..=b {
        let d = 10f64.powi(k);
        if fine {
            ticks.extend([d, 2.0 * d, 5.0 * d]);
        } else {
            ticks.push(d);
        }
    }
    // Keep the ticks inside the data's range, with one step of margin on each side.
    let first = ticks.iter().rposition(|&t| t <= lo).unwrap_or(0);
    let last = ticks
        .iter()
        .position(|&t| t >= hi)
        .unwrap_or(ticks.len() - 1);
    let ticks = ticks[first..=last].to_vec();
    (ticks[0], ticks[ticks.len() - 1], ticks)
}

/// A tick label: integers plain, others with as few digits as tell them apart.
fn label(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    if v.fract() == 0.0 && v.abs() < 1e6 {
        return format!("{v:.0}");
    }
    let a = v.abs();
    if !(1e-3..1e5).contains(&a) {
        return format!("{v:.0e}");
    }
    let digits = (-a.log10().floor()).max(0.0) as usize + 1;
    let s = format!("{v:.digits$}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

struct Panel<'c> {
    curve: &'c TrainingCurve,
    title: &'static str,
    series: Vec<usize>,
    x0: f64,
    width: f64,
}

impl Panel<'_> {
    fn draw(&self, svg: &mut String) {
        let c = self.curve;
        let (x0, pw) = (self.x0, self.width);
        let ph = HEIGHT - TOP - BOTTOM;
        let values: Vec<f64> = self
            .series
            .iter()
            .flat_map(|&i| c.series(i))
            .filter(|v| v.is_finite())
            .collect();
        let (dlo, dhi) = values
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, u), &v| {
                (l.min(v), u.max(v))
            });
        let (dlo, dhi) = if dlo.is_finite() {
            (dlo, dhi)
        } else {
            (0.0, 1.0)
        };
        let log = self.title == "loss" && dlo > 0.0 && dhi / dlo > 3.0;
        let (lo, hi, yticks) = if log {
            log_ticks(dlo, dhi)
        } else {
            linear_ticks(dlo, dhi, 5)
        };
        let to_axis = |v: f64| if log { v.log10() } else { v };
        let (alo, ahi) = (to_axis(lo), to_axis(hi));
        let py = |v: f64| TOP + ph * (1.0 - (to_axis(v) - alo) / (ahi - alo).max(1e-300));
        let epochs = c.rows.len().max(1);
        let (_, xmax, mut xticks) = linear_ticks(1.0, epochs as f64, 6);
        // Epochs are whole: no tick between two of them on a short run.
        xticks.retain(|t| t.fract() == 0.0);
        let xmax = xmax.max(epochs as f64);
        let px = |e: f64| x0 + pw * (e - 1.0) / (xmax - 1.0).max(1.0);
        let grid = "#e4e4e4";
        let _ = writeln!(
            svg,
            r##"<rect x="{x0}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>"##
        );
        for &t in yticks.iter().filter(|&&t| t >= lo && t <= hi) {
            let y = py(t);
            let _ = writeln!(
                svg,
                r#"<line x1="{x0}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{grid}"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
                x0 + pw,
                x0 - 6.0,
                y + 4.0,
                label(t)
            );
        }
        for &t in xticks.iter().filter(|&&t| t >= 1.0 && t <= xmax) {
            let x = px(t);
            let _ = writeln!(
                svg,
                r#"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="{grid}"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                TOP + ph,
                TOP + ph + 16.0,
                label(t)
            );
        }
        let axis = if log {
            format!("{} (log scale)", self.title)
        } else {
            self.title.to_string()
        };
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-weight="bold">{axis}</text><text x="{:.1}" y="{:.1}" text-anchor="middle">epoch</text>"#,
            x0 + pw / 2.0,
            TOP - 8.0,
            x0 + pw / 2.0,
            HEIGHT - 12.0
        );
        if let Some((e, text)) = &c.marker {
            let x = px(*e as f64);
            // The label on the side of the line with room for it (about 7 px a char).
            let text = format!("{} (epoch {e})", escape(text));
            let fits_right = x + 8.0 + 7.0 * text.len() as f64 <= x0 + pw;
            let (tx, anchor) = if fits_right {
                (x + 4.0, "start")
            } else {
                (x - 4.0, "end")
            };
            let _ = writeln!(
                svg,
                r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="#444" stroke-dasharray="5,4"/><text x="{tx:.1}" y="{:.1}" fill="#444" text-anchor="{anchor}">{text}</text>"##,
                TOP + ph,
                TOP + ph - 6.0,
            );
        }
        // The legend goes in the right-hand corner the curves leave free: at the bottom
        // if the last quarter of the epochs runs in the upper half of the panel.
        let tail: Vec<f64> = self
            .series
            .iter()
            .flat_map(|&i| c.series(i).skip(c.rows.len() * 3 / 4))
            .filter(|v| v.is_finite() && (!log || *v > 0.0))
            .map(&py)
            .collect();
        let upper =
            !tail.is_empty() && tail.iter().sum::<f64>() / (tail.len() as f64) < TOP + ph / 2.0;
        let legend_y = if upper {
            TOP + ph - 16.0 * self.series.len() as f64 - 18.0
        } else {
            TOP + 16.0
        };
        for (k, &i) in self.series.iter().enumerate() {
            let colour = COLOURS[i % COLOURS.len()];
            let mut points = String::new();
            for (e, v) in c.series(i).enumerate() {
                if v.is_finite() && (!log || v > 0.0) {
                    let _ = write!(points, "{:.1},{:.1} ", px(e as f64 + 1.0), py(v));
                }
            }
            let _ = writeln!(
                svg,
                r#"<polyline fill="none" stroke="{colour}" stroke-width="1.6" points="{}"/>"#,
                points.trim_end()
            );
            // Legend, top right inside the panel.
            let (lx, ly) = (x0 + pw - 130.0, legend_y + 16.0 * k as f64);
            let _ = writeln!(
                svg,
                r#"<line x1="{lx:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{colour}" stroke-width="3"/><text x="{:.1}" y="{ly:.1}">{}</text>"#,
                ly - 4.0,
                lx + 18.0,
                ly - 4.0,
                lx + 24.0,
                escape(&c.names[i])
            );
        }
    }
}

/// The whole document.
pub(super) fn render(c: &TrainingCurve) -> String {
    let losses: Vec<usize> = (0..c.names.len())
        .filter(|&i| c.names[i].contains("loss"))
        .collect();
    let others: Vec<usize> = (0..c.names.len())
        .filter(|&i| !c.names[i].contains("loss"))
        .collect();
    let panels: Vec<(&'static str, Vec<usize>)> = [("loss", losses), ("metrics", others)]
        .into_iter()
        .filter(|(_, s)| !s.is_empty())
        .collect();
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        svg,
        r#"<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>"#
    );
    if !c.title.is_empty() {
        let _ = writeln!(
            svg,
            r#"<text x="{}" y="22" text-anchor="middle" font-size="16" font-weight="bold">{}</text>"#,
            WIDTH / 2.0,
            escape(&c.title)
        );
    }
    let slot = WIDTH / panels.len().max(1) as f64;
    for (p, (title, series)) in panels.into_iter().enumerate() {
        Panel {
            curve: c,
            title,
            series,
            x0: p as f64 * slot + LEFT,
            width: slot - LEFT - RIGHT,
        }
        .draw(&mut svg);
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_nice_and_cover_the_range() {
        assert_eq!(
            linear_ticks(0.12, 0.87, 5),
            (0.0, 1.0, vec![0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
        );
        let (lo, hi, t) = linear_ticks(1.0, 200.0, 6);
        assert_eq!((lo, hi, t.len()), (0.0, 200.0, 5));
        assert_eq!(t[1], 50.0);
        assert_eq!(
            log_ticks(0.03, 2.0).2,
            vec![0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0]
        );
        assert_eq!(
            log_ticks(1e-4, 3.0).2,
            vec![1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0]
        );
        assert_eq!(
            [label(0.2), label(50.0), label(0.05), label(1e-4)],
            ["0.2", "50", "0.05", "1e-4"]
        );
    }

    #[test]
    fn svg_has_title_ticks_grid_legend_marker_and_log_loss() {
        let mut c =
            TrainingCurve::new(["loss", "train acc", "val acc"]).with_title("GCN on <cora>");
        for e in 0..50 {
            let t = e as f64 / 49.0;
            c.push(&[2.0 * (-4.0 * t).exp(), 0.3 + 0.6 * t, 0.3 + 0.5 * t]);
        }
        c.mark_epoch(42, "best validation");
        let svg = c.to_svg();
        assert!(svg.contains("GCN on &lt;cora&gt;"));
        assert!(svg.contains("loss (log scale)"));
        assert!(svg.contains(">best validation (epoch 42)</text>"));
        assert_eq!(svg.matches("<polyline").count(), 3);
        for t in [">0.05</text>", ">0.8</text>", ">40</text>"] {
            assert!(svg.contains(t), "{t} in {svg}");
        }
        assert!(svg.matches("stroke=\"#e4e4e4\"").count() >= 10);
        // The loss's first point (2.0) is at the top tick of the log axis, y = TOP.
        assert!(
            svg.contains(&format!("points=\"{LEFT:.1},{TOP:.1} ")),
            "{svg}"
        );
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        // A short run has whole epochs only on its x axis.
        let mut short = TrainingCurve::new(["loss"]);
        for l in [1.0, 0.5, 0.25] {
            short.push(&[l]);
        }
        let svg = short.to_svg();
        assert!(
            svg.contains(">2</text>") && !svg.contains(">1.5</text>"),
            "{svg}"
        );
    }
}
