//! The examples' command line, one flag style for all of them (`--data PATH`,
//! `--seeds N`, `--model NAME`, `--epochs N`, ...; `--key value` or `--key=value`),
//! and their common reporting: coded error messages, the thread count, where plots go
//! and how they are written. No dependency beyond shade.
// Each example includes this file and uses part of it.
#![allow(dead_code)]

use shade::diagnostics::Diagnostic;
use shade::gnn::report::{TrainingCurve, output_path};
use std::path::PathBuf;
use std::process::ExitCode;
use std::str::FromStr;

/// One option: `--name VALUE` (or a switch when `value` is empty) and its help text.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Opt {
    pub(crate) name: &'static str,
    pub(crate) value: &'static str,
    pub(crate) help: &'static str,
}

pub(crate) const DATA: Opt = Opt {
    name: "data",
    value: "PATH",
    help: "npz citation graph (e.g. ../shared/data/cora.npz); default: built-in CSBM graph",
};
pub(crate) const DATA_NPZ: Opt = Opt {
    name: "data",
    value: "PATH",
    help: "npz citation graph (default ../shared/data/cora.npz)",
};
pub(crate) const NORMALIZE: Opt = Opt {
    name: "normalize-features",
    value: "",
    help: "row-normalise the features (PyG's NormalizeFeatures)",
};
pub(crate) const LCC: Opt = Opt {
    name: "lcc",
    value: "",
    help: "keep the largest connected component (PyG's LargestConnectedComponents)",
};
pub(crate) const SPLIT: Opt = Opt {
    name: "split",
    value: "NAME",
    help: "random: 20 per class, 500 val, 1000 test (default); shchur: 20 + 30 per class, rest test",
};
pub(crate) const MODEL: Opt = Opt {
    name: "model",
    value: "NAME",
    help: "gcn | gat | sage | gin (default gcn)",
};
pub(crate) const MODELS: Opt = Opt {
    name: "model",
    value: "LIST",
    help: "comma-separated models: gcn,gat,sage,gin (default gcn,gat)",
};
pub(crate) const HIDDEN: Opt = Opt {
    name: "hidden",
    value: "N",
    help: "hidden width (per head for gat; default: 16, gat 8, sage/gin 64)",
};
pub(crate) const EPOCHS: Opt = Opt {
    name: "epochs",
    value: "N",
    help: "training epochs",
};
pub(crate) const LR: Opt = Opt {
    name: "lr",
    value: "X",
    help: "Adam learning rate (default: 0.01, gat 0.005)",
};
pub(crate) const SEED: Opt = Opt {
    name: "seed",
    value: "N",
    help: "seed of the split, parameters and dropout (default 0)",
};
pub(crate) const SEEDS: Opt = Opt {
    name: "seeds",
    value: "N",
    help: "number of seeds, each with its own split (default 10)",
};
pub(crate) const THREADS: Opt = Opt {
    name: "threads",
    value: "N",
    help: "worker threads of the sparse kernels (default: all cores)",
};
pub(crate) const PLOT: Opt = Opt {
    name: "plot",
    value: "PATH",
    help: "SVG training curve, CSV beside it (default $CARGO_TARGET_DIR or target/)",
};

/// A program's options.
pub(crate) struct Spec {
    pub(crate) program: &'static str,
    pub(crate) about: &'static str,
    pub(crate) opts: &'static [Opt],
}

/// Parsed options.
#[derive(Debug, Default)]
pub(crate) struct Args {
    values: Vec<(&'static str, String)>,
    switches: Vec<&'static str>,
}

impl Spec {
    pub(crate) fn usage(&self) -> String {
        let mut s = format!("{}\n\nusage: {} [options]\n", self.about, self.program);
        for o in self.opts.iter().chain([&Opt {
            name: "help",
            value: "",
            help: "this message",
        }]) {
            let flag = if o.value.is_empty() {
                format!("--{}", o.name)
            } else {
                format!("--{} {}", o.name, o.value)
            };
            s.push_str(&format!("  {flag:<24} {}\n", o.help));
        }
        s
    }

    /// `Ok(None)` for `--help`.
    pub(crate) fn parse(&self, args: &[String]) -> Result<Option<Args>, String> {
        let mut out = Args::default();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            if a == "--help" || a == "-h" {
                return Ok(None);
            }
            let body = a
                .strip_prefix("--")
                .ok_or_else(|| format!("unexpected argument `{a}` (options start with `--`)"))?;
            let (key, inline) = match body.split_once('=') {
                Some((k, v)) => (k, Some(v.to_string())),
                None => (body, None),
            };
            let opt = self
                .opts
                .iter()
                .find(|o| o.name == key)
                .ok_or_else(|| format!("unknown option `--{key}`"))?;
            if opt.value.is_empty() {
                if inline.is_some() {
                    return Err(format!("option `--{key}` takes no value"));
                }
                out.switches.push(opt.name);
            } else {
                let v = inline
                    .or_else(|| it.next().cloned())
                    .ok_or_else(|| format!("option `--{key}` needs a value ({})", opt.value))?;
                out.values.retain(|(k, _)| *k != opt.name);
                out.values.push((opt.name, v));
            }
        }
        Ok(Some(out))
    }

    /// Runs `main` with the parsed options: `--help` prints the usage; a bad option
    /// prints the message and the usage (exit code 2); an error of `main` is printed
    /// (exit code 1).
    pub(crate) fn run(&self, main: impl FnOnce(&Args) -> Result<(), String>) -> ExitCode {
        let args: Vec<String> = std::env::args().skip(1).collect();
        match self.parse(&args) {
            Ok(None) => {
                print!("{}", self.usage());
                ExitCode::SUCCESS
            }
            Err(msg) => {
                eprintln!("error: {msg}\n\n{}", self.usage());
                ExitCode::from(2)
            }
            Ok(Some(a)) => match main(&a) {
                Ok(()) => ExitCode::SUCCESS,
                Err(msg) => {
                    // An empty message: the program printed its error itself.
                    if !msg.is_empty() {
                        eprintln!("{msg}");
                    }
                    ExitCode::FAILURE
                }
            },
        }
    }
}

impl Args {
    pub(crate) fn str(&self, name: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn flag(&self, name: &str) -> bool {
        self.switches.contains(&name)
    }

    /// The value of `--name` parsed as `T`, if given.
    pub(crate) fn opt<T: FromStr>(&self, name: &str) -> Result<Option<T>, String>
    where
        T::Err: std::fmt::Display,
    {
        self.str(name)
            .map(|v| {
                v.parse()
                    .map_err(|e| format!("option `--{name}`: cannot read `{v}`: {e}"))
            })
            .transpose()
    }

    pub(crate) fn get<T: FromStr>(&self, name: &str, default: T) -> Result<T, String>
    where
        T::Err: std::fmt::Display,
    {
        Ok(self.opt(name)?.unwrap_or(default))
    }

    /// A count that must be at least 1.
    pub(crate) fn count(&self, name: &str, default: usize) -> Result<usize, String> {
        match self.get(name, default)? {
            0 => Err(format!("option `--{name}` must be at least 1")),
            n => Ok(n),
        }
    }

    /// The plot's path: `--plot`, else `file` in the target folder.
    pub(crate) fn plot(&self, file: &str) -> PathBuf {
        self.str("plot")
            .map_or_else(|| output_path(file), PathBuf::from)
    }

    /// Builds the tensor kernels' thread pool: `--threads` workers (else rayon's
    /// default), the calling thread one of them, so that a kernel's split is a
    /// work-stealing `join` and not a hand-off (see `shade_autodiff`'s small-op rule).
    pub(crate) fn threads(&self) -> Result<(), String> {
        let pool = rayon::ThreadPoolBuilder::new().use_current_thread();
        match self.opt::<usize>("threads")? {
            Some(0) => Err("option `--threads` must be at least 1".into()),
            Some(t) => pool
                .num_threads(t)
                .build_global()
                .map_err(|e| format!("cannot start {t} threads: {e}")),
            // A pool that already exists (an earlier run in this process) serves as it is.
            None => {
                let _ = pool.build_global();
                Ok(())
            }
        }
    }
}

/// A library error rendered the way shade reports every failure: code, message,
/// notes and help.
pub(crate) fn coded(e: impl Into<Diagnostic>) -> String {
    e.into().render()
}

/// Prints what the model's use of the graph found probably not meant (shade's
/// warnings, e.g. isolated nodes under a GCN normalisation without self-loops), as the
/// proactive checks' warnings are printed: to stderr, the run goes on.
#[track_caller]
pub(crate) fn show_warnings<T: shade::gnn::Float>(ctx: &shade::gnn::GraphCtx<T>) {
    for w in ctx.warnings() {
        eprintln!("{}", Diagnostic::from_warning(&w).render());
    }
}

/// Writes the curve's SVG and CSV and says where.
pub(crate) fn write_curve(curve: &TrainingCurve, svg: &std::path::Path) -> Result<(), String> {
    let csv = curve
        .write(svg)
        .map_err(|e| format!("cannot write the training curve to {}: {e}", svg.display()))?;
    println!(
        "training curve: {} (numbers: {})",
        svg.display(),
        csv.display()
    );
    Ok(())
}
