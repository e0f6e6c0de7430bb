//! Progress reporting and training curves: a terminal progress line per epoch and an
//! SVG plot of the recorded metrics, written without any plotting dependency.

use std::fmt::Write as _;
use std::io::{IsTerminal, Write};

/// Metrics recorded once per epoch, in the order they were logged.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TrainingCurve {
    /// Series names, e.g. `["loss", "train acc", "val acc"]`.
    pub names: Vec<String>,
    /// One row per epoch; `rows[e][i]` is series `i` at epoch `e`.
    pub rows: Vec<Vec<f64>>,
}

impl TrainingCurve {
    /// An empty curve with the given series names.
    pub fn new<S: Into<String>>(names: impl IntoIterator<Item = S>) -> Self {
        TrainingCurve {
            names: names.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// Records one epoch. Missing trailing values are stored as NaN (not plotted);
    /// extra values are ignored.
    pub fn push(&mut self, values: &[f64]) {
        let mut row: Vec<f64> = values.iter().copied().take(self.names.len()).collect();
        row.resize(self.names.len(), f64::NAN);
        self.rows.push(row);
    }

    /// Values of series `i` over the epochs.
    pub fn series(&self, i: usize) -> impl Iterator<Item = f64> + '_ {
        self.rows.iter().map(move |r| r[i])
    }

    /// Renders the curve as a standalone SVG document: one panel for series whose
    /// name contains "loss", one for the others (accuracies and the like), sharing the
    /// epoch axis.
    pub fn to_svg(&self) -> String {
        let (w, h, pad) = (900.0, 360.0, 50.0);
        let losses: Vec<usize> = (0..self.names.len())
            .filter(|&i| self.names[i].contains("loss"))
            .collect();
        let others: Vec<usize> = (0..self.names.len())
            .filter(|&i| !self.names[i].contains("loss"))
            .collect();
        let panels: Vec<(&str, Vec<usize>)> = [("loss", losses), ("metrics", others)]
            .into_iter()
            .filter(|(_, s)| !s.is_empty())
            .collect();
        let mut svg = String::new();
        let _ = writeln!(
            svg,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(svg, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
        let colours = [
            "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
        ];
        let panel_w = w / panels.len().max(1) as f64;
        for (p, (title, series)) in panels.iter().enumerate() {
            let x0 = p as f64 * panel_w + pad;
            let (pw, ph) = (panel_w - 1.5 * pad, h - 2.0 * pad);
            let values = series
                .iter()
                .flat_map(|&i| self.series(i))
                .filter(|v| v.is_finite());
            let (mut lo, mut hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, u), v| {
                (l.min(v), u.max(v))
            });
            if !lo.is_finite() {
                (lo, hi) = (0.0, 1.0);
            }
            if hi - lo < 1e-12 {
                hi = lo + 1.0;
            }
            let n = self.rows.len().max(2) - 1;
            let px = |e: usize| x0 + pw * e as f64 / n as f64;
            let py = |v: f64| pad + ph * (1.0 - (v - lo) / (hi - lo));
            let _ = writeln!(
                svg,
                r#"<rect x="{x0}" y="{pad}" width="{pw}" height="{ph}" fill="none" stroke="gray"/>"#
            );
            let _ = writeln!(
                svg,
                r#"<text x="{}" y="{}" text-anchor="middle">{title}</text>"#,
                x0 + pw / 2.0,
                pad - 10.0
            );
            for (label, v) in [(format!("{hi:.3}"), hi), (format!("{lo:.3}"), lo)] {
                let _ = writeln!(
                    svg,
                    r#"<text x="{}" y="{}" text-anchor="end">{label}</text>"#,
                    x0 - 4.0,
                    py(v) + 4.0
                );
            }
            let _ = writeln!(
                svg,
                r#"<text x="{}" y="{}" text-anchor="middle">epoch (1..{})</text>"#,
                x0 + pw / 2.0,
                h - pad + 20.0,
                self.rows.len()
            );
            for (k, &i) in series.iter().enumerate() {
                let colour = colours[i % colours.len()];
                let mut points = String::new();
                for (e, v) in self.series(i).enumerate() {
                    if v.is_finite() {
                        let _ = write!(points, "{:.1},{:.1} ", px(e), py(v));
                    }
                }
                let _ = writeln!(
                    svg,
                    r#"<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{}"/>"#,
                    points.trim_end()
                );
                let _ = writeln!(
                    svg,
                    r#"<text x="{}" y="{}" fill="{colour}">{}</text>"#,
                    x0 + 8.0,
                    pad + 16.0 * (k as f64 + 1.0),
                    escape(&self.names[i])
                );
            }
        }
        svg.push_str("</svg>\n");
        svg
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A one-line progress bar for epochs, redrawn in place on a terminal and printed as
/// plain lines (every `every` epochs and at the end) when output is redirected.
#[derive(Debug)]
pub struct Progress {
    total: usize,
    every: usize,
    terminal: bool,
}

impl Progress {
    /// A progress bar over `total` epochs, writing to standard error.
    pub fn new(total: usize) -> Self {
        Progress {
            total,
            every: (total / 20).max(1),
            terminal: std::io::stderr().is_terminal(),
        }
    }

    /// The text of the line for `epoch` (1-based) with named metrics.
    pub fn line(&self, epoch: usize, metrics: &[(&str, f64)]) -> String {
        let width = 24;
        let filled = (width * epoch)
            .checked_div(self.total)
            .unwrap_or(width)
            .min(width);
        let mut s = format!(
            "[{}{}] epoch {epoch:>w$}/{}",
            "#".repeat(filled),
            ".".repeat(width - filled),
            self.total,
            w = self.total.to_string().len()
        );
        for (name, v) in metrics {
            let _ = write!(s, "  {name} {v:.4}");
        }
        s
    }

    /// Shows the state after `epoch` (1-based).
    pub fn update(&self, epoch: usize, metrics: &[(&str, f64)]) {
        let line = self.line(epoch, metrics);
        let mut err = std::io::stderr().lock();
        if self.terminal {
            let _ = write!(err, "\r{line}\x1b[K");
            if epoch >= self.total {
                let _ = writeln!(err);
            }
        } else if epoch.is_multiple_of(self.every) || epoch >= self.total || epoch == 1 {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn svg_has_one_polyline_per_series_and_scales_to_the_panel() {
        let mut c = TrainingCurve::new(["loss", "train acc", "val acc"]);
        c.push(&[2.0, 0.1, 0.2]);
        c.push(&[1.0, 0.5]);
        c.push(&[0.5, 0.9, 0.8]);
        assert!(c.rows[1][2].is_nan());
        let svg = c.to_svg();
        assert_eq!(svg.matches("<polyline").count(), 3);
        // Loss panel: first point at the top-left corner (max value), last at the bottom right.
        assert!(
            svg.contains(r#"points="50.0,50.0 237.5,223.3 425.0,310.0""#),
            "{svg}"
        );
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
    }

    #[test]
    fn progress_line_fills_in_proportion() {
        let p = Progress {
            total: 200,
            every: 10,
            terminal: false,
        };
        assert_eq!(
            p.line(100, &[("loss", 0.5)]),
            "[############............] epoch 100/200  loss 0.5000"
        );
        assert!(p.line(200, &[]).starts_with("[########################]"));
    }
}
