//! Graphs as constants: structure, node/edge/graph data, normalisation, transforms,
//! batching, sampling, generators and readers.
//!
//! This crate knows nothing about differentiation: everything it produces is a plain
//! array that a differentiated program reads as a constant. Structure never changes in
//! place; transforms return new graphs, and derived structures (CSR by destination and
//! source, degrees, the GCN / random-walk normalised adjacencies, the scaled Laplacian)
//! are built once on first use and shared by clones.
//!
//! - [`Graph`]: COO `src`/`dst` (`u32`), optional `f64` weights, batch layout, named
//!   [`DataStore`]s and a sparse node-feature slot.
//! - Normalisation, the one home of the degree conventions (PyG's): [`Graph::gcn_norm`]
//!   / [`Graph::gcn_norm_edges`] / [`Graph::gcn_adjacency`] (PyG's `gcn_norm`, degrees by
//!   destination), [`Graph::laplacian`] / [`Graph::laplacian_edges`] /
//!   [`Graph::scaled_laplacian`] (PyG's `get_laplacian` and ChebConv's rescaling,
//!   degrees by source, [`LaplacianNorm`]), [`Graph::lambda_max`] (PyG's
//!   `LaplacianLambdaMax`), [`Graph::random_walk_adjacency`]. Matrices are sprs CSR
//!   with rows = destination and `u32` indices ([`CsMat32`]), in `f32` or `f64`.
//! - Transforms on [`Graph`]: self-loops, edges, nodes, `coalesce`, `to_undirected`,
//!   subgraphs, [`NormalizeFeatures`] (PyG's row normalisation, sparse kept sparse),
//!   [`LargestConnectedComponents`] (PyG's, with [`Graph::connected_components`]);
//!   batching with [`Graph::batch`] / [`Graph::unbatch`].
//! - Generators ([`csbm`], [`erdos_renyi`], ...), sampling ([`NeighborSampler`],
//!   [`random_edge_split`]), mini-batch loaders ([`NeighborLoader`], [`DataLoader`]:
//!   the next batch prepared on a worker thread), splits ([`split_per_class`]), readers and writers
//!   ([`read_npz`] for citation graphs, [`read_npy`] / [`read_npz_arrays`] for arrays of
//!   any numeric type, order and rank, [`read_edge_list`]).
//!
//! Errors are [`GraphError`]s with stable codes `SHADE-E03xx`.
//!
//! ```
//! use shade_graph::{csbm, NeighborSampler};
//! let ds = csbm(200, 2, 8, 6.0, 1.0, 1)?;        // a learnable synthetic dataset
//! let a = ds.graph.gcn_adjacency::<f32>();      // Â = D^-1/2 (A + I) D^-1/2
//! let h = a * &ds.features;                     // one propagation step, [200, 8]
//! assert_eq!(h.shape(), &[200, 8]);
//! let split = shade_graph::split_per_class(&ds.labels, 2, 20, 50, 100, 0)?;
//! assert_eq!(split.train.len(), 40);
//! let batch = NeighborSampler::new(vec![10, 5]).sample(&ds.graph, &split.train, 0)?;
//! assert_eq!(batch.num_seeds, 40);
//! # Ok::<(), shade_graph::GraphError>(())
//! ```

mod batch;
mod data;
mod error;
mod generate;
mod graph;
mod io;
pub mod loader;
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
pub use graph::{CsMat32, Csr, Graph, GraphFloat, MAX_NODES};
pub use io::{
    Dataset, NpyArray, NpyElement, NpzArrays, NpzOptions, edge_list_string, npy_bytes,
    npz_arrays_bytes, npz_bytes, parse_edge_list, parse_npy, parse_npz, parse_npz_arrays,
    read_edge_list, read_npy, read_npz, read_npz_arrays, write_edge_list, write_npy, write_npz,
    write_npz_arrays, write_npz_arrays_compressed, write_npz_compressed,
};
pub use loader::{Batches, DataLoader, GraphBatch, NeighborLoader};
pub use norm::{GcnNorm, LaplacianNorm, NormEdges};
pub use sample::{EdgeSplit, NeighborSampler, SampledSubgraph, negative_edges, random_edge_split};
pub use split::{NodeSplit, split_per_class, split_per_class_rest};
pub use transform::{Components, Connection, KHop, LargestConnectedComponents, NormalizeFeatures};

// Public dependencies whose types appear in this crate's API, re-exported so that one
// dependency is enough (versions: README.md, "Re-exported dependencies").
/// The array crate of node, edge and graph data (`DataStore`, generated features).
pub use ndarray;
/// The sparse-matrix crate: sparse node features and normalised adjacencies are
/// sprs CSR matrices with `u32` indices ([`CsMat32`]).
pub use sprs;

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
