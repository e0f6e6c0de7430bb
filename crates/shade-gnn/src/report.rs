//! Progress reporting and training curves: a terminal progress line per epoch, and the
//! recorded metrics as an SVG plot a user can read (title, axis ticks and grid, a log
//! scale for the loss, the best validation epoch marked) with a CSV of the same
//! numbers beside it, written without any plotting dependency.
//!
//! ```
//! use shade_gnn::report::TrainingCurve;
//! let mut c = TrainingCurve::new(["loss", "val acc"]).with_title("GCN on cora.npz");
//! c.push(&[1.9, 0.3]);
//! c.push(&[0.8, 0.7]);
//! c.mark_epoch(2, "best validation");
//! assert_eq!(c.to_csv(), "epoch,loss,val acc\n1,1.9,0.3\n2,0.8,0.7\n");
//! assert!(c.to_svg().contains("GCN on cora.npz"));
//! ```

mod svg;

use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

/// Metrics recorded once per epoch, in the order they were logged.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TrainingCurve {
    /// Series names, e.g. `["loss", "train acc", "val acc"]`. Series whose name
    /// contains "loss" share the left panel (log scale when positive), the others the
    /// right one.
    pub names: Vec<String>,
    /// One row per epoch; `rows[e][i]` is series `i` at epoch `e + 1`.
    pub rows: Vec<Vec<f64>>,
    /// The plot's title (say the model and the dataset).
    pub title: String,
    /// An epoch to mark (1-based) with its label, e.g. the best validation epoch.
    pub marker: Option<(usize, String)>,
}

impl TrainingCurve {
    /// An empty curve with the given series names.
    pub fn new<S: Into<String>>(names: impl IntoIterator<Item = S>) -> Self {
        TrainingCurve {
            names: names.into_iter().map(Into::into).collect(),
            ..TrainingCurve::default()
        }
    }

    /// With a title (e.g. `"GCN on cora.npz, seed 0"`).
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = title.into();
        self
    }

    /// Marks `epoch` (1-based) with a vertical line and `label` in both panels.
    pub fn mark_epoch(&mut self, epoch: usize, label: impl Into<String>) {
        self.marker = Some((epoch, label.into()));
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

    /// The curve as CSV: a header `epoch,<names>`, then one line per epoch (1-based);
    /// missing values are empty fields.
    pub fn to_csv(&self) -> String {
        let quote = |s: &str| {
            if s.contains([',', '"', '\n']) {
                format!("\"{}\"", s.replace('"', "\"\""))
            } else {
                s.to_string()
            }
        };
        let mut out = String::from("epoch");
        for n in &self.names {
            out.push(',');
            out.push_str(&quote(n));
        }
        out.push('\n');
        for (e, row) in self.rows.iter().enumerate() {
            let _ = write!(out, "{}", e + 1);
            for v in row {
                out.push(',');
                if v.is_finite() {
                    let _ = write!(out, "{v}");
                }
            }
            out.push('\n');
        }
        out
    }

    /// Renders the curve as a standalone SVG document: one panel for series whose
    /// name contains "loss" (log scale if every value is positive), one for the others,
    /// sharing the epoch axis; ticks, grid, legend, title and the marked epoch.
    pub fn to_svg(&self) -> String {
        svg::render(self)
    }

    /// Writes the SVG to `svg_path` and the CSV beside it (same name, `.csv`),
    /// creating the folder if needed; returns the CSV's path.
    pub fn write(&self, svg_path: impl AsRef<Path>) -> std::io::Result<PathBuf> {
        let svg_path = svg_path.as_ref();
        if let Some(dir) = svg_path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(svg_path, self.to_svg())?;
        let csv = svg_path.with_extension("csv");
        std::fs::write(&csv, self.to_csv())?;
        Ok(csv)
    }
}

/// Where a program's output file goes by default: `$CARGO_TARGET_DIR/<file>` if that
/// variable is set (as cargo uses it), else `target/<file>`.
pub fn output_path(file: &str) -> PathBuf {
    output_dir(std::env::var_os("CARGO_TARGET_DIR")).join(file)
}

fn output_dir(target_dir: Option<std::ffi::OsString>) -> PathBuf {
    target_dir
        .filter(|d| !d.is_empty())
        .map_or_else(|| PathBuf::from("target"), PathBuf::from)
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
    fn csv_has_a_header_and_one_line_per_epoch() {
        let mut c = TrainingCurve::new(["loss", "val, acc"]);
        c.push(&[2.0, 0.25]);
        c.push(&[1.0]);
        assert!(c.rows[1][1].is_nan());
        assert_eq!(c.to_csv(), "epoch,loss,\"val, acc\"\n1,2,0.25\n2,1,\n");
    }

    #[test]
    fn write_puts_the_csv_beside_the_svg() {
        let dir = std::env::temp_dir().join(format!("shade-report-{}", std::process::id()));
        let mut c = TrainingCurve::new(["loss"]).with_title("t");
        c.push(&[1.0]);
        let csv = c.write(dir.join("sub/curve.svg")).unwrap();
        assert_eq!(csv, dir.join("sub/curve.csv"));
        assert_eq!(std::fs::read_to_string(&csv).unwrap(), "epoch,loss\n1,1\n");
        assert!(
            std::fs::read_to_string(dir.join("sub/curve.svg"))
                .unwrap()
                .starts_with("<svg")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn output_paths_follow_cargo_target_dir() {
        assert_eq!(output_dir(Some("/tmp/t".into())), PathBuf::from("/tmp/t"));
        assert_eq!(output_dir(Some("".into())), PathBuf::from("target"));
        assert_eq!(output_dir(None), PathBuf::from("target"));
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
