//! Edge sets as the tensor layer's constants: [`EdgeIndex`] (a graph's edge list, its
//! `u32` slices as the graph stores them, with its aggregation matrices from shade-graph), [`NormEdgeList`] (a
//! normalised edge list of shade-graph mapped onto a cached matrix's entries), and the
//! constants that fill the edge features of added self-loops ([`SelfLoopFill`], with
//! the CSR builder of its edge-to-node matrices).

use super::Float;
use ndarray::{ArrayD, IxDyn};
use shade_autodiff::tensor::{Element, SparseMatrix, SymNorm};
use shade_graph::{Graph, NormEdges};
use std::sync::{Arc, OnceLock};

/// CSR (rows = destination) from `(row, col, value)` triples; duplicates summed,
/// columns sorted.
pub(crate) fn csr_from_triples<T: Element>(
    rows: usize,
    cols: usize,
    r: &[usize],
    c: &[usize],
    v: impl Fn(usize) -> T,
) -> SparseMatrix<T> {
    let mut counts = vec![0usize; rows + 1];
    r.iter().for_each(|&i| counts[i + 1] += 1);
    for i in 0..rows {
        counts[i + 1] += counts[i];
    }
    let mut next = counts.clone();
    let mut order = vec![0usize; r.len()];
    for (e, &i) in r.iter().enumerate() {
        order[next[i]] = e;
        next[i] += 1;
    }
    let mut indptr = Vec::with_capacity(rows + 1);
    let mut indices = Vec::with_capacity(r.len());
    let mut data = Vec::with_capacity(r.len());
    indptr.push(0);
    let mut row: Vec<(usize, T)> = Vec::new();
    for i in 0..rows {
        row.clear();
        row.extend(
            order[counts[i]..counts[i + 1]]
                .iter()
                .map(|&e| (c[e], v(e))),
        );
        row.sort_by_key(|p| p.0);
        for &(col, x) in &row {
            if indices.len() > indptr[i] && indices.last() == Some(&col) {
                *data.last_mut().expect("a previous entry") += x;
            } else {
                indices.push(col);
                data.push(x);
            }
        }
        indptr.push(indices.len());
    }
    SparseMatrix::try_from_csr((rows, cols), indptr, indices, data)
        .expect("valid CSR by construction")
}

/// The stored entry (CSR position) of every edge `src[e] -> dst[e]` of a matrix that
/// stores an entry for each of these edges (rows = destination, columns sorted: one
/// built from them by [`csr_from_triples`], or shade-graph's normalised adjacency whose
/// edge list they are).
pub(crate) fn entry_positions<T: Element>(
    matrix: &SparseMatrix<T>,
    dst: &[u32],
    src: &[u32],
) -> Vec<usize> {
    let m = matrix.csr();
    let (indptr, indices) = (m.indptr(), m.indices());
    let indptr = indptr.raw_storage();
    dst.iter()
        .zip(src)
        .map(|(&v, &u)| {
            let v = v as usize;
            let row = &indices[indptr[v]..indptr[v + 1]];
            // Every edge has its entry: the matrix sums exactly these edges.
            indptr[v] + row.binary_search(&u).expect("the edge's own entry")
        })
        .collect()
}

/// An edge set as constants: the edges `src[e] -> dst[e]` of a graph (shared), its
/// edge weights, and, built on first need, its aggregation matrices from shade-graph.
/// The edge list is the graph's own: its `u32` slices go to the tensor layer's
/// gathers and scatters as they are (the index operations take `u32`), so no layer
/// makes a copy of it (a `usize` copy of both lists was 16 bytes per edge, 160 MB per
/// 10M edges).
#[derive(Debug)]
pub struct EdgeIndex<T: Float> {
    graph: Arc<Graph>,
    pub(crate) num_nodes: usize,
    pub(crate) weights: Option<ArrayD<T>>,
    sum: OnceLock<SparseMatrix<T>>,
    mean: OnceLock<SparseMatrix<T>>,
    wsum: OnceLock<SparseMatrix<T>>,
    wmean: OnceLock<SparseMatrix<T>>,
}

impl<T: Float> EdgeIndex<T> {
    /// The edges of `graph` (and its weights, if it has them) as constants.
    pub(crate) fn of(graph: Arc<Graph>) -> Self {
        let m = graph.num_edges();
        let weights = graph.weights().map(|w| {
            let w = w.iter().map(|&x| T::cst(x)).collect();
            ArrayD::from_shape_vec(IxDyn(&[m, 1]), w).expect("one weight per edge")
        });
        EdgeIndex {
            num_nodes: graph.num_nodes(),
            weights,
            graph,
            sum: OnceLock::new(),
            mean: OnceLock::new(),
            wsum: OnceLock::new(),
            wmean: OnceLock::new(),
        }
    }

    /// Number of nodes.
    pub fn num_nodes(&self) -> usize {
        self.num_nodes
    }

    /// Number of edges.
    pub fn num_edges(&self) -> usize {
        self.graph.num_edges()
    }

    /// The graph's edge list, `(src, dst)`, as stored (`u32`; no copy): the same
    /// slices as [`EdgeIndex::src`] and [`EdgeIndex::dst`].
    pub fn edge_index_u32(&self) -> (&[u32], &[u32]) {
        self.graph.edge_index()
    }

    /// Source of every edge: the graph's `u32` list, no copy (the tensor layer's index
    /// operations take it as it is; `as usize` where an index is needed).
    pub fn src(&self) -> &[u32] {
        self.graph.src()
    }

    /// Destination of every edge: the graph's `u32` list, no copy.
    pub fn dst(&self) -> &[u32] {
        self.graph.dst()
    }

    /// Edge weights as an `[E, 1]` column (ones when the graph has none).
    pub fn weights(&self) -> Option<&ArrayD<T>> {
        self.weights.as_ref()
    }

    /// Number of incoming edges of every node (multi-edges counted).
    pub fn in_degree(&self) -> &[usize] {
        self.graph.in_degree()
    }

    /// `S` with `S[v, u]` = number of edges `u -> v`: `S · X` sums incoming source rows
    /// (shade-graph's [`Graph::adjacency_matrix`] without weights).
    pub fn sum_matrix(&self) -> &SparseMatrix<T> {
        self.sum
            .get_or_init(|| SparseMatrix::new(self.graph.adjacency_matrix(false)))
    }

    /// `S` with rows divided by the in-degree: `S · X` averages incoming source rows
    /// (isolated nodes get a zero row; shade-graph's [`Graph::mean_adjacency_matrix`]
    /// without weights).
    pub fn mean_matrix(&self) -> &SparseMatrix<T> {
        self.mean
            .get_or_init(|| SparseMatrix::new(self.graph.mean_adjacency_matrix(false)))
    }

    /// `W` with `W[v, u]` = sum of the weights of the edges `u -> v` (shade-graph's
    /// [`Graph::adjacency_matrix`]).
    pub fn weighted_sum_matrix(&self) -> &SparseMatrix<T> {
        self.wsum
            .get_or_init(|| SparseMatrix::new(self.graph.adjacency_matrix(true)))
    }

    /// `W` with rows divided by the in-degree (mean of weighted messages; shade-graph's
    /// [`Graph::mean_adjacency_matrix`]).
    pub fn weighted_mean_matrix(&self) -> &SparseMatrix<T> {
        self.wmean
            .get_or_init(|| SparseMatrix::new(self.graph.mean_adjacency_matrix(true)))
    }
}

/// How the edge features of [`GraphCtx::edges_with_self_loops`] come from the graph's:
/// the kept (non-loop) edges' rows, then one row per node for its new self-loop, filled
/// from the features of the kept edges into that node (PyG's `add_self_loops` with a
/// `fill_value`). Constants, so that the fill is a differentiable product or gather on
/// the tape.
///
/// [`GraphCtx::edges_with_self_loops`]: crate::GraphCtx::edges_with_self_loops
#[derive(Debug)]
pub(crate) struct SelfLoopFill<T: Element> {
    /// The graph's edge ids that are not self-loops, in order: row `k` of the edge set
    /// with self-loops is graph edge `kept[k]` for `k < kept.len()`.
    pub(crate) kept: Vec<usize>,
    /// `[N, E]`: `S[v, e] = 1` for every kept edge `e` into `v` (`S · E` sums them).
    pub(crate) sum: SparseMatrix<T>,
    /// `[N, E]`: `S` with rows divided by the number of kept edges into the node (`M · E`
    /// averages them; a node without any gets a zero row).
    pub(crate) mean: SparseMatrix<T>,
}

impl<T: Float> SelfLoopFill<T> {
    /// The fill constants of `edges` (the graph's own edge set).
    pub(crate) fn new(e: &EdgeIndex<T>) -> Self {
        let (n, m) = (e.num_nodes, e.num_edges());
        let (src, dst) = e.edge_index_u32();
        let kept: Vec<usize> = (0..m).filter(|&i| src[i] != dst[i]).collect();
        let rows: Vec<usize> = kept.iter().map(|&i| dst[i] as usize).collect();
        let mut count = vec![0usize; n];
        rows.iter().for_each(|&v| count[v] += 1);
        let sum = csr_from_triples(n, m, &rows, &kept, |_| T::one());
        let mean = csr_from_triples(n, m, &rows, &kept, |k| {
            T::one() / T::cst(count[rows[k]] as f64)
        });
        SelfLoopFill { kept, sum, mean }
    }
}

/// A normalised edge list of shade-graph (PyG's `gcn_norm` list,
/// [`Graph::gcn_norm_edges`](shade_graph::Graph::gcn_norm_edges)) mapped onto the
/// stored entries of the matrix it sums to (the cached normalised adjacency of the
/// same options, [`GraphCtx::normalized_adjacency`]): what a layer needs to change
/// that matrix's values on the tape (edge weights from edge features) or per call
/// (edge dropout) while its structure stays the cached constant.
///
/// [`GraphCtx::normalized_adjacency`]: crate::GraphCtx::normalized_adjacency
#[derive(Debug)]
pub struct NormEdgeList<T: Element> {
    /// Source of every listed edge (`u32`, as shade-graph lists it).
    pub src: Vec<u32>,
    /// Destination of every listed edge (`u32`, as shade-graph lists it).
    pub dst: Vec<u32>,
    /// The graph edge whose weight each listed edge carries; `None` for an added
    /// self-loop, which carries `fill`.
    pub from: Vec<Option<usize>>,
    /// The weight of an added self-loop (2 with `improved`, else 1).
    pub fill: f64,
    /// The weight each listed edge carries (`w[from]` or `fill`).
    pub weights: Vec<T>,
    /// The normalised coefficient of each listed edge, from shade-graph.
    pub coef: Vec<T>,
    /// The stored entry of every listed edge, in the matrix's CSR order.
    pub position: Vec<usize>,
    /// Number of stored entries of the matrix.
    pub nnz: usize,
    /// Number of nodes.
    pub num_nodes: usize,
}

impl<T: Element> NormEdgeList<T> {
    /// `list` (with `fill`, the weight of its added loops) on the entries of `matrix`.
    pub(crate) fn new(
        list: NormEdges,
        fill: f64,
        weights: Vec<T>,
        matrix: &SparseMatrix<T>,
    ) -> Self {
        let position = entry_positions(matrix, &list.dst, &list.src);
        NormEdgeList {
            coef: list.weight.iter().map(|&c| T::cst(c)).collect(),
            src: list.src,
            dst: list.dst,
            from: list.edge,
            fill,
            weights,
            position,
            nnz: matrix.nnz(),
            num_nodes: matrix.rows(),
        }
    }

    /// The structure of the core's [`Tape::sym_norm_values`] for this list: the
    /// normalised values (PyG's `gcn_norm`) of the matrix from edge weights on the tape,
    /// or, unless `normalize`, the weights summed into the entries.
    ///
    /// [`Tape::sym_norm_values`]: shade_autodiff::tensor::Tape::sym_norm_values
    pub fn sym_norm(&self, normalize: bool) -> SymNorm<'_, u32> {
        SymNorm {
            rows: &self.dst,
            cols: &self.src,
            from: &self.from,
            fill: self.fill,
            entry: &self.position,
            num_entries: self.nnz,
            num_nodes: self.num_nodes,
            normalize,
        }
    }
}
