//! The [`Graph`] type: directed COO structure, optional edge weights, batch layout,
//! named data, and lazily built caches (CSR by destination and by source, degrees,
//! normalised adjacencies) shared between clones.

use std::sync::{Arc, OnceLock};

use sprs::{CsMatI, SpIndex};

use crate::data::{Array, DataStore};
use crate::error::{GraphError, GraphResult};
use crate::norm::LaplacianNorm;

/// Largest supported node count: node indices are `u32`.
pub const MAX_NODES: usize = u32::MAX as usize;

/// The crate's sparse matrices (adjacencies, Laplacians, sparse node features): sprs
/// CSR with `u32` column indices (node ids and feature columns are `u32`) and `usize`
/// row offsets, 8 bytes a nonzero in `f32` instead of sprs's default 12. Graph
/// matrices keep rows = destination. The tensor layer's sparse matrix takes
/// this type as it is, without a copy.
pub type CsMat32<T> = CsMatI<T, u32, usize>;

/// A float type the graph can hand out matrices in (`f32` or `f64`; sealed).
pub trait GraphFloat:
    num_traits::Float + Default + Send + Sync + std::fmt::Debug + 'static + sealed::Sealed
{
    /// Conversion from the `f64` the crate computes in.
    fn from_f64(x: f64) -> Self;
    /// Picks the cache slot of this type (the crate's own dispatch).
    #[doc(hidden)]
    fn pick<'a>(
        for_f32: &'a OnceLock<CsMat32<f32>>,
        for_f64: &'a OnceLock<CsMat32<f64>>,
    ) -> &'a OnceLock<CsMat32<Self>>;
}

impl GraphFloat for f32 {
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    fn pick<'a>(
        for_f32: &'a OnceLock<CsMat32<f32>>,
        _: &'a OnceLock<CsMat32<f64>>,
    ) -> &'a OnceLock<CsMat32<f32>> {
        for_f32
    }
}

impl GraphFloat for f64 {
    fn from_f64(x: f64) -> Self {
        x
    }
    fn pick<'a>(
        _: &'a OnceLock<CsMat32<f32>>,
        for_f64: &'a OnceLock<CsMat32<f64>>,
    ) -> &'a OnceLock<CsMat32<f64>> {
        for_f64
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// A compressed sparse row structure over the edges.
///
/// For [`Graph::csr_by_dst`] row `v` lists the sources of the edges entering `v`
/// (`indices`) and those edges' ids (`edge_ids`, to permute edge data); for
/// [`Graph::csr_by_src`] row `u` lists the destinations of the edges leaving `u`.
/// Within a row entries are sorted by neighbour, then by edge id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Csr {
    /// Row offsets, length `num_nodes + 1`.
    pub indptr: Vec<usize>,
    /// Neighbour of each entry.
    pub indices: Vec<u32>,
    /// Edge id of each entry.
    pub edge_ids: Vec<u32>,
}

impl Csr {
    /// Neighbours and edge ids of row `row`. Panics if `row >= num_nodes` (a programming
    /// error: check with [`Graph::num_nodes`]).
    #[track_caller]
    pub fn row(&self, row: usize) -> (&[u32], &[u32]) {
        let r = self.indptr[row]..self.indptr[row + 1];
        (&self.indices[r.clone()], &self.edge_ids[r])
    }

    /// Builds the CSR of `rows`/`cols` (edge `e` at `(rows[e], cols[e])`): one counting
    /// scatter of `(col, edge id)` keys by row, then a sort of each (short) row. O(E + N)
    /// plus `Σ d log d` over the rows.
    pub(crate) fn build(n: usize, rows: &[u32], cols: &[u32]) -> Csr {
        let m = rows.len();
        let mut indptr = vec![0usize; n + 1];
        for &r in rows {
            indptr[r as usize + 1] += 1;
        }
        for i in 0..n {
            indptr[i + 1] += indptr[i];
        }
        let mut next = indptr[..n].to_vec();
        let mut keys = vec![0u64; m];
        for (e, (&r, &c)) in rows.iter().zip(cols).enumerate() {
            let slot = &mut next[r as usize];
            keys[*slot] = ((c as u64) << 32) | e as u64;
            *slot += 1;
        }
        drop(next);
        for w in indptr.windows(2) {
            keys[w[0]..w[1]].sort_unstable();
        }
        let indices = keys.iter().map(|&k| (k >> 32) as u32).collect();
        let edge_ids = keys.iter().map(|&k| k as u32).collect();
        Csr {
            indptr,
            indices,
            edge_ids,
        }
    }
}

/// Lazily built, shared derived structures. Valid as long as the structure does not
/// change, which it never does: transforms return new graphs with new caches.
#[derive(Debug, Default)]
pub(crate) struct Cache {
    pub(crate) csr_dst: OnceLock<Csr>,
    pub(crate) csr_src: OnceLock<Csr>,
    pub(crate) in_degree: OnceLock<Vec<usize>>,
    pub(crate) out_degree: OnceLock<Vec<usize>>,
    pub(crate) indicator: OnceLock<Vec<u32>>,
    pub(crate) gcn: (OnceLock<CsMat32<f32>>, OnceLock<CsMat32<f64>>),
    pub(crate) rw: (OnceLock<CsMat32<f32>>, OnceLock<CsMat32<f64>>),
    pub(crate) adjacency: (OnceLock<CsMat32<f32>>, OnceLock<CsMat32<f64>>),
    pub(crate) lambda_max: PerNorm<OnceLock<f64>>,
}

/// One value per Laplacian normalisation.
#[derive(Debug, Default)]
pub(crate) struct PerNorm<V> {
    none: V,
    sym: V,
    rw: V,
}

impl<V> PerNorm<V> {
    /// The value of `norm`.
    pub(crate) fn get(&self, norm: LaplacianNorm) -> &V {
        match norm {
            LaplacianNorm::None => &self.none,
            LaplacianNorm::Sym => &self.sym,
            LaplacianNorm::Rw => &self.rw,
        }
    }
}

/// A directed graph (or a batch of graphs) whose structure is a constant.
///
/// Edges are stored as COO arrays `src`/`dst` (`u32` node ids) with optional `f64`
/// weights. A batch of `num_graphs` graphs keeps each graph's nodes contiguous; edges
/// never join two graphs. Node, edge and graph data are named arrays whose first
/// dimension is checked against `num_nodes`, `num_edges`, `num_graphs`.
///
/// Derived structures (CSR by destination/source, degrees, the default GCN and
/// random-walk normalised adjacencies, λ_max per Laplacian) are built on first use and
/// shared between clones.
///
/// ```
/// use shade_graph::Graph;
/// // 0 -> 1, 1 -> 2, 2 -> 0
/// let g = Graph::try_new(3, vec![0, 1, 2], vec![1, 2, 0])?;
/// assert_eq!(g.num_edges(), 3);
/// assert_eq!(g.in_degree(), &[1, 1, 1]);
/// let a = g.gcn_adjacency::<f32>(); // D^-1/2 (A + I) D^-1/2, rows = destination
/// assert_eq!(a.nnz(), 6);
/// assert!((a.get(1, 0).unwrap() - 0.5).abs() < 1e-6);
/// # Ok::<(), shade_graph::GraphError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Graph {
    pub(crate) num_nodes: usize,
    pub(crate) src: Vec<u32>,
    pub(crate) dst: Vec<u32>,
    pub(crate) weights: Option<Vec<f64>>,
    /// Node offsets of the graphs in a batch, length `num_graphs + 1`.
    pub(crate) node_ptr: Vec<usize>,
    pub(crate) node_data: DataStore,
    pub(crate) edge_data: DataStore,
    pub(crate) graph_data: DataStore,
    pub(crate) sparse_features: Option<CsMat32<f32>>,
    pub(crate) cache: Arc<Cache>,
}

impl PartialEq for Graph {
    /// Structure, weights, batch layout and data are equal (caches are ignored).
    fn eq(&self, o: &Self) -> bool {
        self.num_nodes == o.num_nodes
            && self.src == o.src
            && self.dst == o.dst
            && self.weights == o.weights
            && self.node_ptr == o.node_ptr
            && self.node_data == o.node_data
            && self.edge_data == o.edge_data
            && self.graph_data == o.graph_data
            && self.sparse_features == o.sparse_features
    }
}

pub(crate) fn check_nodes(what: &str, idx: &[u32], num_nodes: usize) -> GraphResult<()> {
    match idx.iter().position(|&i| i as usize >= num_nodes) {
        None => Ok(()),
        Some(position) => Err(GraphError::NodeOutOfRange {
            what: what.into(),
            position,
            index: idx[position] as u64,
            num_nodes,
        }),
    }
}

pub(crate) fn check_finite(what: &str, w: &[f64]) -> GraphResult<()> {
    match w.iter().position(|x| !x.is_finite()) {
        None => Ok(()),
        Some(position) => Err(GraphError::NonFinite {
            what: what.into(),
            position,
            value: w[position],
        }),
    }
}

/// Checks a node count: at most [`MAX_NODES`], and small enough that the graph's
/// per-node structures (CSR offsets, degrees: a word each) can be allocated. The
/// structures are built lazily, on first use, where a failed allocation would abort
/// the process; so the offsets' allocation is tried (and released) here, once, and a
/// count the machine cannot hold is refused with `SHADE-E0307` instead (a garbage id,
/// e.g. `-1` or `-2` written as `u32`, asks for 4 billion nodes).
pub(crate) fn check_num_nodes(n: usize) -> GraphResult<()> {
    if n > MAX_NODES {
        return Err(GraphError::TooLarge {
            what: "num_nodes".into(),
            found: n as u64,
            max: MAX_NODES as u64,
        });
    }
    let mut probe: Vec<usize> = Vec::new();
    if probe.try_reserve_exact(n + 1).is_err() {
        let gib = ((n + 1) * std::mem::size_of::<usize>()) as f64 / f64::from(1u32 << 30);
        return Err(GraphError::Unallocatable {
            what: "num_nodes".into(),
            found: n as u64,
            gib,
        });
    }
    Ok(())
}

impl Graph {
    /// A graph with `num_nodes` nodes and edges `src[e] -> dst[e]`, without weights.
    ///
    /// Errors: `SHADE-E0301` if the lengths differ, `SHADE-E0302` if an index is
    /// `>= num_nodes`, `SHADE-E0305` if a count does not fit `u32`.
    pub fn try_new(num_nodes: usize, src: Vec<u32>, dst: Vec<u32>) -> GraphResult<Graph> {
        check_num_nodes(num_nodes)?;
        if src.len() != dst.len() {
            return Err(GraphError::LengthMismatch {
                what: "dst".into(),
                expected: src.len(),
                found: dst.len(),
            });
        }
        if src.len() > u32::MAX as usize {
            return Err(GraphError::TooLarge {
                what: "num_edges".into(),
                found: src.len() as u64,
                max: u32::MAX as u64,
            });
        }
        check_nodes("src", &src, num_nodes)?;
        check_nodes("dst", &dst, num_nodes)?;
        Ok(Graph::from_parts(num_nodes, src, dst, None))
    }

    /// As [`try_new`](Self::try_new), panicking on invalid input.
    ///
    /// # Panics
    /// If `try_new` would return an error (a contract violation by the caller).
    #[track_caller]
    pub fn new(num_nodes: usize, src: Vec<u32>, dst: Vec<u32>) -> Graph {
        match Graph::try_new(num_nodes, src, dst) {
            Ok(g) => g,
            Err(e) => panic!("error[{}]: {e}", e.code()),
        }
    }

    /// A graph from `(src, dst)` pairs.
    pub fn from_edges(num_nodes: usize, edges: &[(u32, u32)]) -> GraphResult<Graph> {
        let (src, dst) = edges.iter().copied().unzip();
        Graph::try_new(num_nodes, src, dst)
    }

    /// A graph with no edges.
    pub fn empty(num_nodes: usize) -> GraphResult<Graph> {
        Graph::try_new(num_nodes, Vec::new(), Vec::new())
    }

    /// Structure only, no checks (crate-internal: callers guarantee validity).
    pub(crate) fn from_parts(
        num_nodes: usize,
        src: Vec<u32>,
        dst: Vec<u32>,
        weights: Option<Vec<f64>>,
    ) -> Graph {
        debug_assert_eq!(src.len(), dst.len());
        Graph {
            num_nodes,
            src,
            dst,
            weights,
            node_ptr: vec![0, num_nodes],
            node_data: DataStore::default(),
            edge_data: DataStore::default(),
            graph_data: DataStore::default(),
            sparse_features: None,
            cache: Arc::default(),
        }
    }

    /// The same structure, weights and batch layout without the node, edge and graph
    /// data and the sparse node features, sharing this graph's derived structures (CSR,
    /// degrees, normalisations, λ_max): what a consumer of the structure alone keeps
    /// (shade-gnn's `GraphCtx`) without copying the features.
    ///
    /// ```
    /// use shade_graph::Graph;
    /// let g = Graph::from_edges(3, &[(0, 1), (1, 2)])?
    ///     .with_node_data("x", ndarray::Array2::<f32>::zeros((3, 1000)))?;
    /// let s = g.structure();
    /// assert_eq!(s.edge_index(), g.edge_index());
    /// assert!(s.node_data().is_empty());
    /// assert!(std::ptr::eq(s.csr_by_dst(), g.csr_by_dst())); // one CSR for both
    /// # Ok::<(), shade_graph::GraphError>(())
    /// ```
    pub fn structure(&self) -> Graph {
        Graph {
            num_nodes: self.num_nodes,
            src: self.src.clone(),
            dst: self.dst.clone(),
            weights: self.weights.clone(),
            node_ptr: self.node_ptr.clone(),
            node_data: DataStore::default(),
            edge_data: DataStore::default(),
            graph_data: DataStore::default(),
            sparse_features: None,
            cache: Arc::clone(&self.cache),
        }
    }

    /// This graph with edge weights (`SHADE-E0301` wrong length, `SHADE-E0306` NaN/inf).
    pub fn with_weights(mut self, weights: Vec<f64>) -> GraphResult<Graph> {
        if weights.len() != self.num_edges() {
            return Err(GraphError::LengthMismatch {
                what: "weights".into(),
                expected: self.num_edges(),
                found: weights.len(),
            });
        }
        check_finite("weights", &weights)?;
        self.weights = Some(weights);
        self.cache = Arc::default();
        Ok(self)
    }

    /// This graph without edge weights.
    pub fn without_weights(mut self) -> Graph {
        if self.weights.take().is_some() {
            self.cache = Arc::default();
        }
        self
    }

    /// This graph as a batch of `num_graphs` graphs: `graph_indicator[v]` is the graph of
    /// node `v`. The indicator must be sorted (nodes of a graph contiguous), below
    /// `num_graphs`, and no edge may join two graphs (`SHADE-E0312`). Graph data is
    /// dropped if its row count no longer matches.
    pub fn with_graph_indicator(
        mut self,
        graph_indicator: &[u32],
        num_graphs: usize,
    ) -> GraphResult<Graph> {
        if graph_indicator.len() != self.num_nodes {
            return Err(GraphError::LengthMismatch {
                what: "graph_indicator".into(),
                expected: self.num_nodes,
                found: graph_indicator.len(),
            });
        }
        if num_graphs > u32::MAX as usize {
            return Err(GraphError::TooLarge {
                what: "num_graphs".into(),
                found: num_graphs as u64,
                max: u32::MAX as u64,
            });
        }
        let mut ptr = vec![0usize; num_graphs + 1];
        let mut prev = 0u32;
        for (v, &g) in graph_indicator.iter().enumerate() {
            if g as usize >= num_graphs {
                return Err(GraphError::GraphOutOfRange {
                    index: g as usize,
                    num_graphs,
                });
            }
            if g < prev {
                return Err(GraphError::InvalidBatch {
                    what: format!("graph_indicator decreases at node {v} ({prev} then {g})"),
                });
            }
            prev = g;
            ptr[g as usize + 1] += 1;
        }
        for i in 0..num_graphs {
            ptr[i + 1] += ptr[i];
        }
        for (e, (&s, &d)) in self.src.iter().zip(&self.dst).enumerate() {
            let (gs, gd) = (graph_indicator[s as usize], graph_indicator[d as usize]);
            if gs != gd {
                return Err(GraphError::InvalidBatch {
                    what: format!("edge {e} ({s} -> {d}) joins graph {gs} to graph {gd}"),
                });
            }
        }
        self.node_ptr = ptr;
        self.graph_data = DataStore::default();
        self.cache = Arc::default();
        Ok(self)
    }

    /// Number of nodes.
    pub fn num_nodes(&self) -> usize {
        self.num_nodes
    }

    /// Number of (directed) edges, counting multi-edges and self-loops.
    pub fn num_edges(&self) -> usize {
        self.src.len()
    }

    /// Number of graphs in the batch (1 for a single graph).
    pub fn num_graphs(&self) -> usize {
        self.node_ptr.len() - 1
    }

    /// Source node of every edge.
    pub fn src(&self) -> &[u32] {
        &self.src
    }

    /// Destination node of every edge.
    pub fn dst(&self) -> &[u32] {
        &self.dst
    }

    /// `(src, dst)`: the edge index as two arrays.
    pub fn edge_index(&self) -> (&[u32], &[u32]) {
        (&self.src, &self.dst)
    }

    /// Edge weights, if the graph has them.
    pub fn weights(&self) -> Option<&[f64]> {
        self.weights.as_deref()
    }

    /// Weight of edge `e` (1 for an unweighted graph). Panics if `e >= num_edges`.
    #[track_caller]
    pub fn weight(&self, e: usize) -> f64 {
        self.weights.as_ref().map_or(1.0, |w| w[e])
    }

    /// Node offsets of the graphs in the batch (length `num_graphs + 1`).
    pub fn graph_node_ptr(&self) -> &[usize] {
        &self.node_ptr
    }

    /// Graph id of every node (the `batch` vector of PyG), built once.
    pub fn graph_indicator(&self) -> &[u32] {
        self.cache.indicator.get_or_init(|| {
            let mut ind = vec![0u32; self.num_nodes];
            for g in 0..self.num_graphs() {
                ind[self.node_ptr[g]..self.node_ptr[g + 1]].fill(g as u32);
            }
            ind
        })
    }

    /// Node data.
    pub fn node_data(&self) -> &DataStore {
        &self.node_data
    }

    /// Edge data.
    pub fn edge_data(&self) -> &DataStore {
        &self.edge_data
    }

    /// Graph data.
    pub fn graph_data(&self) -> &DataStore {
        &self.graph_data
    }

    /// The sparse node-feature matrix `[num_nodes, F]`, if set.
    pub fn sparse_node_features(&self) -> Option<&CsMat32<f32>> {
        self.sparse_features.as_ref()
    }

    fn check_rows(&self, kind: &'static str, name: &str, a: &Array) -> GraphResult<()> {
        let expected = match kind {
            "node" => self.num_nodes,
            "edge" => self.num_edges(),
            _ => self.num_graphs(),
        };
        let shape = a.shape();
        if shape.is_empty() || shape[0] != expected {
            return Err(GraphError::DataShape {
                kind,
                name: name.into(),
                shape: shape.to_vec(),
                expected,
            });
        }
        Ok(())
    }

    /// Stores node array `name` (first dimension must be `num_nodes`, `SHADE-E0310`).
    pub fn set_node_data(
        &mut self,
        name: impl Into<String>,
        a: impl Into<Array>,
    ) -> GraphResult<()> {
        let (name, a) = (name.into(), a.into());
        self.check_rows("node", &name, &a)?;
        self.node_data.insert_unchecked(name, a);
        Ok(())
    }

    /// Stores edge array `name` (first dimension must be `num_edges`, `SHADE-E0310`).
    pub fn set_edge_data(
        &mut self,
        name: impl Into<String>,
        a: impl Into<Array>,
    ) -> GraphResult<()> {
        let (name, a) = (name.into(), a.into());
        self.check_rows("edge", &name, &a)?;
        self.edge_data.insert_unchecked(name, a);
        Ok(())
    }

    /// Stores graph array `name` (first dimension must be `num_graphs`, `SHADE-E0310`).
    pub fn set_graph_data(
        &mut self,
        name: impl Into<String>,
        a: impl Into<Array>,
    ) -> GraphResult<()> {
        let (name, a) = (name.into(), a.into());
        self.check_rows("graph", &name, &a)?;
        self.graph_data.insert_unchecked(name, a);
        Ok(())
    }

    /// Builder form of [`set_node_data`](Self::set_node_data).
    pub fn with_node_data(
        mut self,
        name: impl Into<String>,
        a: impl Into<Array>,
    ) -> GraphResult<Graph> {
        self.set_node_data(name, a)?;
        Ok(self)
    }

    /// Builder form of [`set_edge_data`](Self::set_edge_data).
    pub fn with_edge_data(
        mut self,
        name: impl Into<String>,
        a: impl Into<Array>,
    ) -> GraphResult<Graph> {
        self.set_edge_data(name, a)?;
        Ok(self)
    }

    /// Removes and returns node array `name`.
    pub fn remove_node_data(&mut self, name: &str) -> Option<Array> {
        self.node_data.remove(name)
    }

    /// Removes and returns edge array `name`.
    pub fn remove_edge_data(&mut self, name: &str) -> Option<Array> {
        self.edge_data.remove(name)
    }

    /// Stores a sparse node-feature matrix (rows must be `num_nodes`, `SHADE-E0310`).
    /// The matrix is kept as given (CSR or CSC), its indices as `u32` ([`CsMat32`]:
    /// sprs's `CsMat<f32>`, with `usize` ones, is converted once; more than `u32::MAX`
    /// columns is `SHADE-E0305`).
    pub fn set_sparse_node_features<I: SpIndex, Iptr: SpIndex>(
        &mut self,
        x: CsMatI<f32, I, Iptr>,
    ) -> GraphResult<()> {
        // Both checks before the conversion, which needs every index to fit `u32` (the
        // rows do: there are `num_nodes` of them).
        if x.rows() != self.num_nodes {
            return Err(GraphError::DataShape {
                kind: "node",
                name: "sparse features".into(),
                shape: vec![x.rows(), x.cols()],
                expected: self.num_nodes,
            });
        }
        if x.cols() > u32::MAX as usize {
            return Err(GraphError::TooLarge {
                what: "sparse feature columns".into(),
                found: x.cols() as u64,
                max: u32::MAX as u64,
            });
        }
        self.sparse_features = Some(x.to_other_types());
        Ok(())
    }

    /// CSR with one row per destination: row `v` holds the sources of `v`'s incoming
    /// edges (the layout for aggregation `out[v] = Σ_u msg(u -> v)`). Built once.
    pub fn csr_by_dst(&self) -> &Csr {
        self.cache
            .csr_dst
            .get_or_init(|| Csr::build(self.num_nodes, &self.dst, &self.src))
    }

    /// CSR with one row per source: row `u` holds the destinations of `u`'s outgoing
    /// edges (the CSC of the destination-major adjacency). Built once.
    pub fn csr_by_src(&self) -> &Csr {
        self.cache
            .csr_src
            .get_or_init(|| Csr::build(self.num_nodes, &self.src, &self.dst))
    }

    /// Number of incoming edges of every node. Built once.
    pub fn in_degree(&self) -> &[usize] {
        self.cache.in_degree.get_or_init(|| {
            let mut d = vec![0usize; self.num_nodes];
            for &v in &self.dst {
                d[v as usize] += 1;
            }
            d
        })
    }

    /// Number of outgoing edges of every node. Built once.
    pub fn out_degree(&self) -> &[usize] {
        self.cache.out_degree.get_or_init(|| {
            let mut d = vec![0usize; self.num_nodes];
            for &u in &self.src {
                d[u as usize] += 1;
            }
            d
        })
    }

    /// Sum of incoming edge weights of every node (the in-degree if unweighted).
    pub fn weighted_in_degree(&self) -> Vec<f64> {
        let mut d = vec![0.0; self.num_nodes];
        for (e, &v) in self.dst.iter().enumerate() {
            d[v as usize] += self.weight(e);
        }
        d
    }

    /// Sum of outgoing edge weights of every node (the out-degree if unweighted).
    pub fn weighted_out_degree(&self) -> Vec<f64> {
        let mut d = vec![0.0; self.num_nodes];
        for (e, &u) in self.src.iter().enumerate() {
            d[u as usize] += self.weight(e);
        }
        d
    }

    fn check_node(&self, v: u32) -> GraphResult<()> {
        check_nodes("node", &[v], self.num_nodes)
    }

    /// Sources of the edges entering `v`, sorted (with repeats for multi-edges).
    pub fn in_neighbors(&self, v: u32) -> GraphResult<&[u32]> {
        self.check_node(v)?;
        Ok(self.csr_by_dst().row(v as usize).0)
    }

    /// Destinations of the edges leaving `u`, sorted (with repeats for multi-edges).
    pub fn out_neighbors(&self, u: u32) -> GraphResult<&[u32]> {
        self.check_node(u)?;
        Ok(self.csr_by_src().row(u as usize).0)
    }

    /// Whether some edge goes from a node to itself.
    pub fn has_self_loops(&self) -> bool {
        self.src.iter().zip(&self.dst).any(|(s, d)| s == d)
    }

    /// Whether some ordered pair `(u, v)` has more than one edge.
    pub fn has_multi_edges(&self) -> bool {
        let c = self.csr_by_dst();
        (0..self.num_nodes).any(|v| c.row(v).0.windows(2).any(|w| w[0] == w[1]))
    }

    /// Whether every edge `u -> v` has a reverse `v -> u`, with equal multiplicity.
    pub fn is_bidirected(&self) -> bool {
        let (i, o) = (self.csr_by_dst(), self.csr_by_src());
        (0..self.num_nodes).all(|v| i.row(v).0 == o.row(v).0)
    }

    /// The adjacency matrix `A[dst, src]` (rows = destination), multi-edges summed,
    /// with the edge weights if `weighted` and the graph has them, else ones.
    pub fn adjacency_matrix<T: GraphFloat>(&self, weighted: bool) -> CsMat32<T> {
        self.row_matrix(weighted, false, None, |_, _, w| T::from_f64(w))
    }

    /// A matrix with the structure of the cached CSR by destination: row `v` holds, per
    /// distinct source `u`, `val(v, u, Σ w(u -> v))` (w = 1 unless `weighted`); self-loops are skipped if
    /// `skip_loops`, and `diag(v)` (if given) becomes the diagonal entry. One pass over
    /// the cached CSR, no sort.
    pub(crate) fn row_matrix<T: GraphFloat>(
        &self,
        weighted: bool,
        skip_loops: bool,
        diag: Option<&dyn Fn(usize) -> f64>,
        val: impl Fn(usize, usize, f64) -> T,
    ) -> CsMat32<T> {
        let c = self.csr_by_dst();
        let n = self.num_nodes;
        let cap = c.indices.len() + if diag.is_some() { n } else { 0 };
        let (mut indptr, mut indices, mut data) = (
            Vec::with_capacity(n + 1),
            Vec::with_capacity(cap),
            Vec::with_capacity(cap),
        );
        indptr.push(0);
        for v in 0..n {
            let (nb, ids) = c.row(v);
            let mut k = 0;
            let mut diag_done = diag.is_none();
            while k < nb.len() {
                let u = nb[k] as usize;
                let mut w = 0.0;
                let mut j = k;
                while j < nb.len() && nb[j] as usize == u {
                    w += if weighted {
                        self.weight(ids[j] as usize)
                    } else {
                        1.0
                    };
                    j += 1;
                }
                if !diag_done && u >= v {
                    indices.push(v as u32);
                    data.push(T::from_f64(diag.expect("diag_done is false")(v)));
                    diag_done = true;
                }
                if !(skip_loops && u == v) {
                    indices.push(nb[k]);
                    data.push(val(v, u, w));
                }
                k = j;
            }
            if !diag_done {
                indices.push(v as u32);
                data.push(T::from_f64(diag.expect("diag_done is false")(v)));
            }
            indptr.push(indices.len());
        }
        CsMat32::new((n, n), indptr, indices, data)
    }

    /// The weighted adjacency matrix, built once per float type.
    pub fn adjacency<T: GraphFloat>(&self) -> &CsMat32<T> {
        T::pick(&self.cache.adjacency.0, &self.cache.adjacency.1)
            .get_or_init(|| self.adjacency_matrix::<T>(true))
    }
}
