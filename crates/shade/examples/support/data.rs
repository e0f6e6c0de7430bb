//! The node-classification data of the examples: an npz citation graph (`--data`,
//! symmetrised, sparse features) or the built-in contextual SBM graph, optionally with
//! row-normalised features (`--normalize-features`), the usual split, and shade's
//! proactive checks before training.
#![allow(dead_code)]

use super::cli::{Args, coded};
use shade::diagnostics::check_graph_features;
use shade::gnn::Features;
use shade::graph::{
    Csbm, Graph, NodeSplit, NormalizeFeatures, NpzOptions, read_npz, split_per_class,
};

pub(crate) struct NodeData {
    /// The file, or "built-in CSBM graph".
    pub(crate) name: String,
    pub(crate) graph: Graph,
    pub(crate) x: Features<f32>,
    /// Dense features for the proactive checks.
    dense: shade::ndarray::Array2<f32>,
    pub(crate) labels: Vec<usize>,
    pub(crate) num_classes: usize,
}

impl NodeData {
    /// `--data` (or the CSBM graph) with `--normalize-features`.
    pub(crate) fn from_args(args: &Args) -> Result<NodeData, String> {
        let nodes = args.count("nodes", 3000)?;
        Self::load_sized(args.str("data"), args.flag("normalize-features"), nodes)
    }

    /// An npz file, or the CSBM graph for `None`.
    pub(crate) fn load(path: Option<&str>, normalize: bool) -> Result<NodeData, String> {
        Self::load_sized(path, normalize, 3000)
    }

    /// An npz file, or the CSBM graph of `nodes` nodes for `None`.
    pub(crate) fn load_sized(
        path: Option<&str>,
        normalize: bool,
        nodes: usize,
    ) -> Result<NodeData, String> {
        match path {
            Some(path) => {
                let mut ds = read_npz(path, NpzOptions::undirected()).map_err(coded)?;
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
                })
            }
        }
    }

    /// The usual split: 20 training nodes per class, 500 validation, 1000 test.
    pub(crate) fn split(&self, seed: u64) -> Result<NodeSplit, String> {
        split_per_class(&self.labels, self.num_classes, 20, 500, 1000, seed).map_err(coded)
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
