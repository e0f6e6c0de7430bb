//! The examples as a user runs them: every one takes the same flag style (`--key
//! value` or `--key=value`, `--help`, a coded message and exit code 2 for an unknown
//! flag), writes its training curve as an SVG a user reads (a title naming the model
//! and the data, the loss on a log scale, the best validation epoch marked) with the
//! numbers in a CSV beside it, to `--plot PATH` or else under `$CARGO_TARGET_DIR`.
//!
//! The examples run as built by this `cargo test` (which builds a package's examples
//! with its tests); run alone (`--test examples`), the test builds them first.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The built example `name`, beside this test's binary (`target/<profile>/examples/`).
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile = exe
        .parent()
        .and_then(Path::parent)
        .expect("test binaries live in target/<profile>/deps");
    let bin = profile.join("examples").join(name);
    if !bin.exists() {
        let status = Command::new(env!("CARGO"))
            .args(["build", "-p", "shade", "--examples"])
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building the examples failed");
    }
    bin
}

/// A fresh, empty folder for one run's files.
fn folder(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("examples")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("a temporary folder");
    d
}

/// The workspace root: where a user types `cargo run --example ..`, so that the
/// examples' default data path `../shared/data/..` resolves as for them.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The example `name` as a command started from the workspace root.
fn command(name: &str) -> Command {
    let mut c = Command::new(example(name));
    c.current_dir(root());
    c
}

/// Runs an example with `args`, `CARGO_TARGET_DIR` set to `target_dir`.
fn run(name: &str, args: &[&str], target_dir: &Path) -> Output {
    let out = command(name)
        .args(args)
        .env("CARGO_TARGET_DIR", target_dir)
        .output()
        .expect("the example starts");
    assert!(
        out.status.success(),
        "{name} {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The citation graph the tests read, as the examples' documentation names it.
fn cora() -> String {
    "../shared/data/cora.npz".into()
}

/// Checks the SVG at `svg` and the CSV beside it: title fragments, the log-scale loss
/// panel, the best-validation marker, ticks and grid lines, and one CSV line per epoch
/// under a header naming the series.
fn check_curve(svg: &Path, title: &[&str], epochs: usize, series: &[&str]) {
    let text = std::fs::read_to_string(svg).unwrap_or_else(|e| panic!("{}: {e}", svg.display()));
    for t in title {
        assert!(text.contains(t), "{}: the title names `{t}`", svg.display());
    }
    for want in ["best validation (epoch ", ">epoch</text>"] {
        assert!(text.contains(want), "{}: `{want}`", svg.display());
    }
    assert!(
        text.matches("stroke=\"#e4e4e4\"").count() >= 6,
        "{}: grid lines",
        svg.display()
    );
    let csv = std::fs::read_to_string(svg.with_extension("csv"))
        .unwrap_or_else(|e| panic!("the CSV beside {}: {e}", svg.display()));
    let mut lines = csv.lines();
    let header = lines.next().unwrap_or_default();
    assert_eq!(header, format!("epoch,{}", series.join(",")), "{csv}");
    let losses: Vec<f64> = lines
        .map(|l| l.split(',').nth(1).unwrap().parse().unwrap())
        .collect();
    assert_eq!(losses.len(), epochs, "{csv}");
    // The loss panel is on a log scale once the loss spans more than a factor of 3.
    let (lo, hi) = losses
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(l, h), &v| (l.min(v), h.max(v)));
    let panel = if hi / lo > 3.0 {
        ">loss (log scale)</text>"
    } else {
        ">loss</text>"
    };
    assert!(text.contains(panel), "{}: `{panel}`", svg.display());
}

#[test]
fn train_gcn_plots_to_the_flag_or_the_target_dir() {
    let d = folder("train_gcn");
    let svg = d.join("curve.svg");
    let out = run(
        "train_gcn",
        &[
            "--data",
            &cora(),
            "--model=gcn",
            "--epochs",
            "5",
            "--plot",
            svg.to_str().unwrap(),
        ],
        &d,
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("training curve:"));
    let series = ["loss", "train acc", "val acc", "test acc"];
    check_curve(&svg, &["GCN on cora.npz, seed 0"], 5, &series);
    // Without `--plot`: the target folder, as cargo's own outputs.
    run("train_gcn", &["--epochs", "3", "--model", "sage"], &d);
    check_curve(
        &d.join("train_gcn.svg"),
        &["SAGE on built-in CSBM graph"],
        3,
        &series,
    );
}

#[test]
fn cora_benchmark_plots_one_curve_per_model() {
    let d = folder("cora_benchmark");
    let data = cora();
    let series = ["loss", "train acc", "val acc", "test acc"];
    let svg = d.join("bench.svg");
    let plot = svg.to_str().unwrap();
    let args = [
        "--data", &data, "--model", "gcn", "--seeds", "1", "--epochs", "4", "--plot", plot,
    ];
    run("cora_benchmark", &args, &d);
    check_curve(&d.join("bench_gcn.svg"), &["GCN on cora.npz"], 4, &series);
    let args = ["--data", &data, "--model", "gcn", "--seeds=1", "--epochs=3"];
    run("cora_benchmark", &args, &d);
    check_curve(
        &d.join("cora_benchmark_gcn.svg"),
        &["GCN on cora.npz"],
        3,
        &series,
    );
}

#[test]
fn link_prediction_plots_to_the_flag_or_the_target_dir() {
    let d = folder("link_prediction");
    let svg = d.join("lp.svg");
    let series = ["loss", "val auc", "test auc"];
    run(
        "link_prediction",
        &["--epochs", "4", "--plot", svg.to_str().unwrap()],
        &d,
    );
    check_curve(
        &svg,
        &["GCN link prediction on built-in CSBM graph"],
        4,
        &series,
    );
    run("link_prediction", &["--data", &cora(), "--epochs=2"], &d);
    check_curve(
        &d.join("link_prediction.svg"),
        &["GCN link prediction on cora.npz"],
        2,
        &series,
    );
}

#[test]
fn graph_classification_plots_to_the_flag_or_the_target_dir() {
    let d = folder("graph_classification");
    let svg = d.join("gc.svg");
    let series = ["loss", "val acc", "test acc"];
    run(
        "graph_classification",
        &["--epochs", "12", "--plot", svg.to_str().unwrap()],
        &d,
    );
    check_curve(&svg, &["GIN on rings vs random graphs"], 12, &series);
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(
        text.contains(">loss (log scale)</text>"),
        "a falling loss on a log scale"
    );
    run("graph_classification", &["--epochs=2", "--seed=1"], &d);
    check_curve(
        &d.join("graph_classification.svg"),
        &["GIN on rings vs random graphs, seed 1"],
        2,
        &series,
    );
}

#[test]
fn minibatch_plots_to_the_flag_or_the_target_dir() {
    let d = folder("minibatch");
    let svg = d.join("mb.svg");
    let series = ["loss", "val acc", "test acc"];
    let small = ["--nodes", "3000", "--batch", "256", "--epochs", "2"];
    let mut args = small.to_vec();
    args.extend(["--plot", svg.to_str().unwrap()]);
    run("minibatch", &args, &d);
    check_curve(
        &svg,
        &["GraphSAGE (mini-batch) on a CSBM graph of 3000 nodes"],
        2,
        &series,
    );
    run("minibatch", &small, &d);
    check_curve(&d.join("minibatch.svg"), &["GraphSAGE"], 2, &series);
}

#[test]
fn every_example_has_the_same_flags_and_refuses_an_unknown_one() {
    for name in [
        "train_gcn",
        "cora_benchmark",
        "link_prediction",
        "graph_classification",
        "minibatch",
    ] {
        let help = command(name).arg("--help").output().unwrap();
        let usage = String::from_utf8_lossy(&help.stdout);
        assert!(help.status.success(), "{name} --help");
        for flag in ["--epochs N", "--threads N", "--plot PATH", "--help"] {
            assert!(usage.contains(flag), "{name}: `{flag}` in\n{usage}");
        }
        let bad = command(name).arg("--epoch").output().unwrap();
        assert_eq!(bad.status.code(), Some(2), "{name} --epoch");
        let err = String::from_utf8_lossy(&bad.stderr);
        assert!(
            err.starts_with("error: unknown option `--epoch`") && err.contains("usage:"),
            "{name}: {err}"
        );
        let zero = command(name).args(["--epochs", "0"]).output().unwrap();
        assert_eq!(zero.status.code(), Some(1), "{name} --epochs 0");
        assert!(
            String::from_utf8_lossy(&zero.stderr).contains("`--epochs` must be at least 1"),
            "{name}"
        );
    }
}
