//! Graphs as constants: structure, node/edge/graph data, normalisation, transforms,
//! batching, sampling, generators and readers.
//!
//! This crate knows nothing about differentiation: everything it produces is a plain
//! array that a differentiated program reads as a constant.

mod batch;
mod data;
mod error;
mod generate;
mod graph;
mod io;
mod norm;
mod sample;
mod split;
mod transform;

pub use data::{Array, DataStore};
pub use error::{GraphError, GraphResult};
pub use generate::{
    Csbm, SyntheticDataset, csbm, erdos_renyi, knn_graph, radius_graph, rand_graph, sprand,
    stochastic_block_model,
};
pub use graph::{Csr, Graph, GraphFloat, MAX_NODES};
pub use io::{
    Dataset, NpzOptions, edge_list_string, npz_bytes, parse_edge_list, parse_npz, read_edge_list,
    read_npz, write_edge_list, write_npz,
};
pub use norm::{GcnNorm, NormEdges};
pub use sample::{EdgeSplit, NeighborSampler, SampledSubgraph, negative_edges, random_edge_split};
pub use split::{NodeSplit, split_per_class};
pub use transform::KHop;

/// How to merge values of edges that become one (coalesce, to_undirected).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reduce {
    /// Sum of the values.
    #[default]
    Sum,
    /// Mean of the values.
    Mean,
    /// Largest value.
    Max,
}
