//! The main job: train a two-layer graph neural network for node classification.
//!
//! ```text
//! cargo run --release --example train_gcn
//! cargo run --release --example train_gcn -- --data ../shared/data/cora.npz --model gat
//! ```
//!
//! Default data: a built-in contextual stochastic block model graph (no files needed).
//! With `--data PATH` it reads an npz citation graph (symmetrised, 20 training nodes
//! per class, 500 validation, 1000 test). Prints a progress line per epoch (loss and
//! accuracies), the final test accuracy and the test accuracy at the best validation
//! epoch, and writes the training curve as SVG. Before training it runs shade's
//! proactive checks (feature rows, labels, training mask, finite values) and stops with
//! a coded message if one fails; any library error is rendered the same way.

use shade::diagnostics::{Diagnostic, check_graph_features};
use shade::gnn::models::{Model, NodeConfig, train_node_classifier};
use shade::gnn::report::Progress;
use shade::gnn::{Features, GraphCtx};
use shade::graph::{Csbm, Graph, NodeSplit, NpzOptions, read_npz, split_per_class};
use std::process::ExitCode;
use std::time::Instant;

const USAGE: &str = "\
usage: train_gcn [options]
  --data PATH      npz graph (e.g. ../shared/data/cora.npz); default: built-in CSBM graph
  --model NAME     gcn | gat | sage | gin                      (default gcn)
  --hidden N       hidden width (per head for gat)             (default: 16, gat 8, sage/gin 64)
  --epochs N       training epochs                             (default 200)
  --lr X           Adam learning rate                          (default: 0.01, gat 0.005)
  --seed N         seed of the split, parameters and dropout   (default 0)
  --threads N      worker threads of the sparse kernels        (default: all cores)
  --plot PATH      SVG training curve                          (default target/train_gcn.svg)
  --help           this message";

#[derive(Debug)]
struct Opts {
    data: Option<String>,
    model: Model,
    hidden: Option<usize>,
    epochs: usize,
    lr: Option<f64>,
    seed: u64,
    threads: Option<usize>,
    plot: String,
}

fn parse(args: &[String]) -> Result<Option<Opts>, String> {
    let mut o = Opts {
        data: None,
        model: Model::Gcn,
        hidden: None,
        epochs: 200,
        lr: None,
        seed: 0,
        threads: None,
        plot: "target/train_gcn.svg".into(),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let (key, inline) = match a.split_once('=') {
            Some((k, v)) => (k, Some(v.to_string())),
            None => (a.as_str(), None),
        };
        if key == "--help" || key == "-h" {
            return Ok(None);
        }
        let mut value = || -> Result<String, String> {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or_else(|| format!("option `{key}` needs a value"))
        };
        fn num<V: std::str::FromStr>(key: &str, v: String, what: &str) -> Result<V, String> {
            v.parse()
                .map_err(|_| format!("option `{key}` expects {what}, got `{v}`"))
        }
        match key {
            "--data" => o.data = Some(value()?),
            "--model" => {
                o.model = value()?
                    .parse()
                    .map_err(|e| format!("option `--model`: {e}"))?
            }
            "--hidden" => o.hidden = Some(num(key, value()?, "a positive integer")?),
            "--epochs" => o.epochs = num(key, value()?, "a positive integer")?,
            "--lr" => o.lr = Some(num(key, value()?, "a positive number")?),
            "--seed" => o.seed = num(key, value()?, "a non-negative integer")?,
            "--threads" => o.threads = Some(num(key, value()?, "a positive integer")?),
            "--plot" => o.plot = value()?,
            _ => return Err(format!("unknown option `{a}`")),
        }
    }
    if o.hidden == Some(0) || o.epochs == 0 || o.threads == Some(0) {
        return Err("`--hidden`, `--epochs` and `--threads` must be at least 1".into());
    }
    if let Some(lr) = o.lr
        && !(lr.is_finite() && lr > 0.0)
    {
        return Err(format!(
            "option `--lr` expects a positive number, got `{lr}`"
        ));
    }
    Ok(Some(o))
}

/// Renders a library error the way shade reports every failure: code, message,
/// notes and help.
fn coded(e: impl Into<Diagnostic>) -> String {
    e.into().render()
}

/// shade's proactive checks on the data before any training: warnings are printed,
/// errors stop the run.
fn check_data<S, A>(
    graph: &Graph,
    features: &ndarray::ArrayBase<S, ndarray::Ix2>,
    labels: &[usize],
    num_classes: usize,
    split: &NodeSplit,
) -> Result<(), String>
where
    S: ndarray::Data<Elem = A>,
    A: num_traits::Float + std::fmt::Debug,
{
    let mut train_mask = vec![false; graph.num_nodes()];
    for &i in &split.train {
        if let Some(m) = train_mask.get_mut(i as usize) {
            *m = true;
        }
    }
    let findings = check_graph_features(graph, features, labels, num_classes, &train_mask);
    if findings.is_clean() {
        return Ok(());
    }
    let text = findings.render();
    if findings.is_ok() {
        eprintln!("{text}");
        Ok(())
    } else {
        Err(text)
    }
}

fn run(o: &Opts) -> Result<(), String> {
    if let Some(t) = o.threads {
        rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build_global()
            .map_err(|e| format!("cannot start {t} threads: {e}"))?;
    }
    let t0 = Instant::now();
    let (name, ctx, x, labels, split) = match &o.data {
        Some(path) => {
            let ds = read_npz(path, NpzOptions::undirected()).map_err(coded)?;
            let split = ds.split(20, 500, 1000, o.seed).map_err(coded)?;
            let dense = ds.features().to_dense();
            check_data(&ds.graph, &dense, &ds.labels, ds.num_classes, &split)?;
            let x = Features::<f32>::sparse_from_f32(ds.features());
            (path.clone(), GraphCtx::new(&ds.graph), x, ds.labels, split)
        }
        None => {
            let ds = Csbm {
                avg_degree: 8.0,
                homophily: 0.85,
                feature_signal: 1.5,
                seed: 7,
                ..Csbm::new(3000, 5, 64)
            }
            .generate()
            .map_err(coded)?;
            let split = split_per_class(&ds.labels, ds.num_classes, 20, 500, 1000, o.seed)
                .map_err(coded)?;
            check_data(&ds.graph, &ds.features, &ds.labels, ds.num_classes, &split)?;
            let x = Features::dense(ds.features.clone());
            (
                "built-in CSBM graph".to_string(),
                GraphCtx::new(&ds.graph),
                x,
                ds.labels,
                split,
            )
        }
    };
    let mut cfg = NodeConfig::standard(o.model);
    cfg.epochs = o.epochs;
    cfg.seed = o.seed;
    if let Some(h) = o.hidden {
        cfg.hidden = h;
    }
    if let Some(lr) = o.lr {
        cfg.lr = lr;
    }
    println!(
        "data: {name}: {} nodes, {} edges, {} features, {} classes; split {}/{}/{}",
        ctx.num_nodes(),
        ctx.edges().num_edges(),
        x.cols(),
        labels.iter().max().map_or(0, |m| m + 1),
        split.train.len(),
        split.val.len(),
        split.test.len()
    );
    println!(
        "model: {:?}, hidden {}, dropout {}, Adam lr {}, weight decay {}, {} epochs, {} threads",
        cfg.model,
        cfg.hidden,
        cfg.dropout,
        cfg.lr,
        cfg.weight_decay,
        cfg.epochs,
        rayon::current_num_threads()
    );
    let progress = Progress::new(cfg.epochs);
    let t1 = Instant::now();
    let r = train_node_classifier(&cfg, &ctx, &x, &labels, &split, |e, m| {
        progress.update(e, m)
    })
    .map_err(coded)?;
    let train_time = t1.elapsed();
    println!(
        "final test accuracy: {:.2}%  (at the best validation epoch {}: test {:.2}%, val {:.2}%)",
        100.0 * r.final_test_acc,
        r.best_epoch,
        100.0 * r.test_acc,
        100.0 * r.best_val_acc
    );
    if let Some(dir) = std::path::Path::new(&o.plot).parent()
        && !dir.as_os_str().is_empty()
    {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create the folder {}: {e}", dir.display()))?;
    }
    std::fs::write(&o.plot, r.curve.to_svg())
        .map_err(|e| format!("cannot write the training curve to {}: {e}", o.plot))?;
    println!(
        "training curve: {}; training {:.2} s ({:.2} ms per epoch incl. evaluation), total {:.2} s",
        o.plot,
        train_time.as_secs_f64(),
        1e3 * train_time.as_secs_f64() / cfg.epochs as f64,
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match parse(&args) {
        Ok(None) => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        Err(msg) => {
            eprintln!("error: {msg}\n\n{USAGE}");
            ExitCode::from(2)
        }
        Ok(Some(o)) => match run(&o) {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("{message}");
                ExitCode::FAILURE
            }
        },
    }
}
