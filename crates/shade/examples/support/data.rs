//! The node-classification data of the examples: an npz citation graph (`--data`,
//! symmetrised, sparse features) or the built-in contextual SBM graph, optionally with
//! row-normalised features (`--normalize-features`) and restricted to its largest
//! connected component (`--lcc`), the split of `--split`, and shade's proactive checks
//! before training.
#![allow(dead_code)]

use super::cli::{Args, coded};
use shade::diagnostics::check_graph_features;
use shade::gnn::Features;
use shade::graph::{
    Csbm, Graph, LargestConnectedComponents, NodeSplit, NormalizeFeatures, NpzOptions, read_npz,
    split_per_class, split_per_class_rest,
};

/// How the nodes are split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SplitKind {
    /// PyG Planetoid's random split: 20 training nodes per class, 500 validation, 1000
    /// test.
    Random,
    /// Shchur et al.'s: 20 training and 30 validation nodes per class, the rest test.
    Shchur,
}

/// The data protocol of `--normalize-features`, `--lcc` and `--split`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Protocol {
    pub(crate) normalize: bool,
    pub(crate) lcc: bool,
    pub(crate) split: SplitKind,
}

impl Protocol {
    pub(crate) fn from_args(args: &Args) -> Result<Protocol, String> {
        let split = match args.str("split").unwrap_or("random") {
            "random" => SplitKind::Random,
            "shchur" => SplitKind::Shchur,
            other => {
                return Err(format!(
                    "option `--split`: `{other}` is not random or shchur"
                ));
            }
        };
        Ok(Protocol {
            normalize: args.flag("normalize-features"),
            lcc: args.flag("lcc"),
            split,
        })
    }

    /// In words, for the output.
    pub(crate) fn describe(&self) -> String {
        let mut s = match self.split {
            SplitKind::Random => "split 20 per class / 500 / 1000".to_string(),
            SplitKind::Shchur => "split 20 / 30 per class / rest".to_string(),
        };
        if self.lcc {
            s.push_str(", largest connected component");
        }
        if self.normalize {
            s.push_str(", row-normalised features");
        }
        s
    }
}

pub(crate) struct NodeData {
    /// The file, or "built-in CSBM graph".
    pub(crate) name: String,
    pub(crate) graph: Graph,
    pub(crate) x: Features<f32>,
    /// Dense features for the proactive checks.
    dense: shade::ndarray::Array2<f32>,
    pub(crate) labels: Vec<usize>,
    pub(crate) num_classes: usize,
    split: SplitKind,
}

impl NodeData {
    /// `--data` (or the CSBM graph) with `--normalize-features`, `--lcc`, `--split`.
    pub(crate) fn from_args(args: &Args) -> Result<NodeData, String> {
        let nodes = args.count("nodes", 3000)?;
        Self::load_sized(args.str("data"), &Protocol::from_args(args)?, nodes)
    }

    /// An npz file, or the CSBM graph for `None`.
    pub(crate) fn load(path: Option<&str>, p: &Protocol) -> Result<NodeData, String> {
        Self::load_sized(path, p, 3000)
    }

    /// An npz file, or the CSBM graph of `nodes` nodes for `None`.
    pub(crate) fn load_sized(
        path: Option<&str>,
        p: &Protocol,
        nodes: usize,
    ) -> Result<NodeData, String> {
        let normalize = p.normalize;
        match path {
            Some(path) => {
                let mut ds = read_npz(path, NpzOptions::undirected()).map_err(coded)?;
                if p.lcc {
                    ds = LargestConnectedComponents::new(1)
                        .apply_dataset(&ds)
                        .map_err(coded)?;
                }
                if normalize {
                    ds.graph = ds.graph.normalize_features().map_err(coded)?;
                }
                let name = std::path::Path::new(path)
                    .file_name()
                    .map_or(path.to_string(), |f| f.to_string_lossy().into_owned());
                Ok(NodeData {
                    name,
                    x: Features::sparse_from_f32(ds.features()),
                    dense: ds.features().to_dense(),
                    num_classes: ds.num_classes,
                    labels: ds.labels,
                    graph: ds.graph,
                    split: p.split,
                })
            }
            None => {
                let ds = Csbm {
                    avg_degree: 8.0,
                    homophily: 0.85,
                    feature_signal: 1.5,
                    seed: 7,
                    ..Csbm::new(nodes, 5, 64)
                }
                .generate()
                .map_err(coded)?;
                let mut ds = ds;
                if p.lcc {
                    let nodes = LargestConnectedComponents::new(1).nodes(&ds.graph);
                    let rows: Vec<usize> = nodes.iter().map(|&v| v as usize).collect();
                    ds.graph = ds.graph.induced_subgraph(&nodes).map_err(coded)?;
                    ds.features = ds.features.select(shade::ndarray::Axis(0), &rows);
                    ds.labels = rows.iter().map(|&v| ds.labels[v]).collect();
                }
                let x = if normalize {
                    NormalizeFeatures::dense(&ds.features)
                } else {
                    ds.features
                };
                Ok(NodeData {
                    name: "built-in CSBM graph".into(),
                    x: Features::dense(x.clone()),
                    dense: x,
                    num_classes: ds.num_classes,
                    labels: ds.labels,
                    graph: ds.graph,
                    split: p.split,
                })
            }
        }
    }

    /// The split of the protocol: 20 training nodes per class, then 500 validation and
    /// 1000 test, or 30 validation per class and the rest for testing.
    pub(crate) fn split(&self, seed: u64) -> Result<NodeSplit, String> {
        match self.split {
            SplitKind::Random => {
                split_per_class(&self.labels, self.num_classes, 20, 500, 1000, seed)
            }
            SplitKind::Shchur => split_per_class_rest(&self.labels, self.num_classes, 20, 30, seed),
        }
        .map_err(coded)
    }

    /// shade's proactive checks (feature rows, labels, training mask, finite values):
    /// warnings are printed, errors stop the run.
    pub(crate) fn check(&self, split: &NodeSplit) -> Result<(), String> {
        let mut train_mask = vec![false; self.graph.num_nodes()];
        for &i in &split.train {
            if let Some(m) = train_mask.get_mut(i as usize) {
                *m = true;
            }
        }
        let findings = check_graph_features(
            &self.graph,
            &self.dense,
            &self.labels,
            self.num_classes,
            &train_mask,
        );
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

    pub(crate) fn describe(&self, split: &NodeSplit) -> String {
        format!(
            "{}: {} nodes, {} edges, {} features, {} classes; split {}/{}/{}",
            self.name,
            self.graph.num_nodes(),
            self.graph.num_edges(),
            self.x.cols(),
            self.num_classes,
            split.train.len(),
            split.val.len(),
            split.test.len()
        )
    }
}
