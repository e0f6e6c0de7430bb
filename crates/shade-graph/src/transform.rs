//! Pure transforms: each returns a new graph and carries node, edge and graph data
//! along (rows of removed items dropped, rows of new items filled with zeros).
//! `components.rs`: connected components and PyG's `LargestConnectedComponents`.

use std::sync::Arc;

use crate::graph::CsMat32;

use crate::Reduce;
use crate::data::DataStore;
use crate::error::{GraphError, GraphResult};
use crate::graph::{Graph, check_finite, check_nodes, check_num_nodes};

mod components;

pub use components::{Components, Connection, LargestConnectedComponents};

/// Result of [`Graph::k_hop_subgraph`].
#[derive(Debug, Clone, PartialEq)]
pub struct KHop {
    /// The induced subgraph on `nodes` (node `i` of it is `nodes[i]` of the original).
    pub graph: Graph,
    /// Original ids of the subgraph's nodes, ascending.
    pub nodes: Vec<u32>,
    /// Position of each seed in `nodes`.
    pub seed_index: Vec<u32>,
}

/// Rows `idx` of a sparse matrix (converted to CSR if needed).
pub(crate) fn select_sparse_rows(x: &CsMat32<f32>, idx: &[usize]) -> CsMat32<f32> {
    // A CSR input is read through a view (a loader calls this once per batch: no copy
    // of the whole matrix).
    let owned;
    let csr = if x.is_csr() {
        x.view()
    } else {
        owned = x.to_csr();
        owned.view()
    };
    let (mut indptr, mut indices, mut data) = (vec![0usize], Vec::new(), Vec::new());
    for &r in idx {
        if let Some(row) = csr.outer_view(r) {
            indices.extend_from_slice(row.indices());
            data.extend_from_slice(row.data());
        }
        indptr.push(indices.len());
    }
    CsMat32::new((idx.len(), csr.cols()), indptr, indices, data)
}

/// A sparse matrix followed by `n` empty rows.
fn append_sparse_rows(x: &CsMat32<f32>, n: usize) -> CsMat32<f32> {
    let csr = if x.is_csr() { x.clone() } else { x.to_csr() };
    let rows = csr.rows();
    let (mut indptr, indices, data) = csr.into_raw_storage();
    let last = *indptr.last().unwrap_or(&0);
    indptr.extend(std::iter::repeat_n(last, n));
    CsMat32::new((rows + n, x.cols()), indptr, indices, data)
}

impl Graph {
    /// A graph with the same nodes (and node/graph data) but other edges.
    pub(crate) fn with_new_edges(
        &self,
        src: Vec<u32>,
        dst: Vec<u32>,
        weights: Option<Vec<f64>>,
        edge_data: DataStore,
    ) -> Graph {
        Graph {
            num_nodes: self.num_nodes,
            src,
            dst,
            weights,
            node_ptr: self.node_ptr.clone(),
            node_data: self.node_data.clone(),
            edge_data,
            graph_data: self.graph_data.clone(),
            sparse_features: self.sparse_features.clone(),
            cache: Arc::default(),
        }
    }

    /// The edges `ids` (in that order, repeats allowed), data carried along.
    pub(crate) fn select_edges(&self, ids: &[usize]) -> Graph {
        let src = ids.iter().map(|&e| self.src[e]).collect();
        let dst = ids.iter().map(|&e| self.dst[e]).collect();
        let weights = self
            .weights
            .as_ref()
            .map(|w| ids.iter().map(|&e| w[e]).collect());
        let data = self.edge_data.map(|a| a.select_rows(ids));
        self.with_new_edges(src, dst, weights, data)
    }

    /// The edges `ids` followed by new edges `(s, d, w)` whose edge data are zeros.
    fn select_and_append(&self, ids: &[usize], s: &[u32], d: &[u32], w: &[f64]) -> Graph {
        let mut g = self.select_edges(ids);
        g.src.extend_from_slice(s);
        g.dst.extend_from_slice(d);
        let unit = w.iter().all(|&x| x == 1.0);
        match (&mut g.weights, unit) {
            (Some(gw), _) => gw.extend_from_slice(w),
            (None, true) => {}
            (None, false) => {
                let mut gw = vec![1.0; ids.len()];
                gw.extend_from_slice(w);
                g.weights = Some(gw);
            }
        }
        g.edge_data = g.edge_data.map(|a| a.append_zero_rows(s.len()));
        g
    }

    /// Adds a self-loop with weight `fill` to every node, even nodes that have one
    /// (PyG's `add_self_loops`). `SHADE-E0306` if `fill` is not finite.
    pub fn add_self_loops(&self, fill: f64) -> GraphResult<Graph> {
        check_finite("fill", &[fill])?;
        let all: Vec<usize> = (0..self.num_edges()).collect();
        let nodes: Vec<u32> = (0..self.num_nodes as u32).collect();
        Ok(self.select_and_append(&all, &nodes, &nodes, &vec![fill; self.num_nodes]))
    }

    /// Gives every node exactly one self-loop: an existing loop keeps its weight and edge
    /// data (the last one if several), a missing one gets weight `fill` and zero data
    /// (PyG's `add_remaining_self_loops`). The non-loop edges come first, in their order,
    /// then the loops in node order, so the transform is idempotent.
    pub fn add_remaining_self_loops(&self, fill: f64) -> GraphResult<Graph> {
        check_finite("fill", &[fill])?;
        let mut existing = vec![usize::MAX; self.num_nodes];
        let mut keep = Vec::with_capacity(self.num_edges() + self.num_nodes);
        for (e, (&s, &d)) in self.src.iter().zip(&self.dst).enumerate() {
            if s == d {
                existing[s as usize] = e;
            } else {
                keep.push(e);
            }
        }
        // Existing loops are selected like edges; missing ones are appended after, then
        // everything is put back in node order.
        let n_keep = keep.len();
        let (mut new_nodes, mut pos) = (Vec::new(), vec![0usize; self.num_nodes]);
        for (v, &e) in existing.iter().enumerate() {
            if e == usize::MAX {
                new_nodes.push(v as u32);
            } else {
                pos[v] = keep.len() - n_keep;
                keep.push(e);
            }
        }
        let n_existing = keep.len() - n_keep;
        for (i, &v) in new_nodes.iter().enumerate() {
            pos[v as usize] = n_existing + i;
        }
        let g = self.select_and_append(&keep, &new_nodes, &new_nodes, &vec![fill; new_nodes.len()]);
        // Reorder the loop block (positions n_keep..) into node order.
        let order: Vec<usize> = (0..n_keep).chain(pos.iter().map(|&p| n_keep + p)).collect();
        Ok(g.select_edges(&order))
    }

    /// Drops every self-loop.
    pub fn remove_self_loops(&self) -> Graph {
        let keep: Vec<usize> = (0..self.num_edges())
            .filter(|&e| self.src[e] != self.dst[e])
            .collect();
        self.select_edges(&keep)
    }

    /// Appends edges `src[i] -> dst[i]` with weights (1 if `None`) and zero edge data.
    /// Errors: lengths (`SHADE-E0301`), indices (`SHADE-E0302`), weights (`SHADE-E0306`),
    /// an edge joining two graphs of a batch (`SHADE-E0312`).
    pub fn add_edges(
        &self,
        src: &[u32],
        dst: &[u32],
        weights: Option<&[f64]>,
    ) -> GraphResult<Graph> {
        if src.len() != dst.len() {
            return Err(GraphError::LengthMismatch {
                what: "dst".into(),
                expected: src.len(),
                found: dst.len(),
            });
        }
        check_nodes("src", src, self.num_nodes)?;
        check_nodes("dst", dst, self.num_nodes)?;
        let w = match weights {
            Some(w) if w.len() != src.len() => {
                return Err(GraphError::LengthMismatch {
                    what: "weights".into(),
                    expected: src.len(),
                    found: w.len(),
                });
            }
            Some(w) => {
                check_finite("weights", w)?;
                w.to_vec()
            }
            None => vec![1.0; src.len()],
        };
        if self.num_graphs() > 1 {
            let ind = self.graph_indicator();
            if let Some(i) = (0..src.len()).find(|&i| ind[src[i] as usize] != ind[dst[i] as usize])
            {
                return Err(GraphError::InvalidBatch {
                    what: format!("new edge {i} ({} -> {}) joins two graphs", src[i], dst[i]),
                });
            }
        }
        let all: Vec<usize> = (0..self.num_edges()).collect();
        Ok(self.select_and_append(&all, src, dst, &w))
    }

    /// Drops the edges `ids` (`SHADE-E0303` if an id is out of range; repeats are fine).
    pub fn remove_edges(&self, ids: &[usize]) -> GraphResult<Graph> {
        let mut drop = vec![false; self.num_edges()];
        for (position, &e) in ids.iter().enumerate() {
            if e >= self.num_edges() {
                return Err(GraphError::EdgeOutOfRange {
                    position,
                    index: e,
                    num_edges: self.num_edges(),
                });
            }
            drop[e] = true;
        }
        let keep: Vec<usize> = (0..self.num_edges()).filter(|&e| !drop[e]).collect();
        Ok(self.select_edges(&keep))
    }

    /// Keeps only the edges `ids`, in that order, and all nodes (`SHADE-E0303`).
    pub fn edge_subgraph(&self, ids: &[usize]) -> GraphResult<Graph> {
        if let Some(position) = ids.iter().position(|&e| e >= self.num_edges()) {
            return Err(GraphError::EdgeOutOfRange {
                position,
                index: ids[position],
                num_edges: self.num_edges(),
            });
        }
        Ok(self.select_edges(ids))
    }

    /// Merges edges with the same `(src, dst)` into one, combining weights and edge data
    /// with `reduce`; the result is sorted by `(src, dst)`. An unweighted graph stays
    /// unweighted: its duplicates are simply dropped (give it weights to count them).
    pub fn coalesce(&self, reduce: Reduce) -> Graph {
        let csr = self.csr_by_src();
        let m = self.num_edges();
        let mut group = vec![0usize; m];
        let (mut src, mut dst, mut first) = (Vec::new(), Vec::new(), Vec::new());
        for u in 0..self.num_nodes {
            let (nb, ids) = csr.row(u);
            for k in 0..nb.len() {
                if k == 0 || nb[k] != nb[k - 1] {
                    src.push(u as u32);
                    dst.push(nb[k]);
                    first.push(ids[k]);
                }
                group[ids[k] as usize] = src.len() - 1;
            }
        }
        let groups = src.len();
        let weights = self.weights.as_ref().map(|w| {
            let mut out = vec![
                if reduce == Reduce::Max {
                    f64::NEG_INFINITY
                } else {
                    0.0
                };
                groups
            ];
            let mut count = vec![0usize; groups];
            for (e, &g) in group.iter().enumerate() {
                count[g] += 1;
                out[g] = if reduce == Reduce::Max {
                    out[g].max(w[e])
                } else {
                    out[g] + w[e]
                };
            }
            if reduce == Reduce::Mean {
                out.iter_mut()
                    .zip(&count)
                    .for_each(|(x, &c)| *x /= c as f64);
            }
            out
        });
        let data = self
            .edge_data
            .map(|a| a.reduce_rows(&group, groups, reduce));
        self.with_new_edges(src, dst, weights, data)
    }

    /// Adds the reverse of every edge and coalesces with `reduce` (PyG's
    /// `to_undirected`): the result is a simple graph with symmetric structure and, for
    /// `Sum`/`Mean`/`Max`, symmetric weights. A self-loop meets itself (`Sum` doubles it).
    pub fn to_undirected(&self, reduce: Reduce) -> Graph {
        let all: Vec<usize> = (0..self.num_edges()).chain(0..self.num_edges()).collect();
        let mut g = self.select_edges(&all);
        let m = self.num_edges();
        for e in 0..m {
            g.src[m + e] = self.dst[e];
            g.dst[m + e] = self.src[e];
        }
        g.coalesce(reduce)
    }

    /// [`to_undirected`](Self::to_undirected) with `Max`: every edge gets its reverse,
    /// multi-edges collapse, weights of a pair become the larger of the two.
    pub fn to_bidirected(&self) -> Graph {
        self.to_undirected(Reduce::Max)
    }

    /// Keeps one direction per node pair: `u -> v` and `v -> u` become one edge
    /// `min -> max` (weights and edge data averaged), sorted by `(src, dst)`.
    pub fn to_unidirected(&self) -> Graph {
        let all: Vec<usize> = (0..self.num_edges()).collect();
        let mut g = self.select_edges(&all);
        for e in 0..g.num_edges() {
            let (s, d) = (g.src[e], g.dst[e]);
            g.src[e] = s.min(d);
            g.dst[e] = s.max(d);
        }
        g.coalesce(Reduce::Mean)
    }

    /// The subgraph induced by `nodes` (unique ids; node `i` of the result is
    /// `nodes[i]`), with node, edge and sparse-feature rows carried along. If `nodes` is
    /// ascending, a batch keeps its layout and graph data; otherwise a batch becomes one
    /// graph and its graph data are dropped.
    pub fn induced_subgraph(&self, nodes: &[u32]) -> GraphResult<Graph> {
        check_nodes("nodes", nodes, self.num_nodes)?;
        let mut map = vec![u32::MAX; self.num_nodes];
        for (i, &v) in nodes.iter().enumerate() {
            if map[v as usize] != u32::MAX {
                return Err(GraphError::param(
                    "nodes",
                    format!("[.., {v}, ..]"),
                    "unique node ids",
                ));
            }
            map[v as usize] = i as u32;
        }
        let keep: Vec<usize> = (0..self.num_edges())
            .filter(|&e| {
                map[self.src[e] as usize] != u32::MAX && map[self.dst[e] as usize] != u32::MAX
            })
            .collect();
        let mut g = self.select_edges(&keep);
        g.src.iter_mut().for_each(|s| *s = map[*s as usize]);
        g.dst.iter_mut().for_each(|d| *d = map[*d as usize]);
        let rows: Vec<usize> = nodes.iter().map(|&v| v as usize).collect();
        g.num_nodes = nodes.len();
        g.node_data = self.node_data.map(|a| a.select_rows(&rows));
        g.sparse_features = self
            .sparse_features
            .as_ref()
            .map(|x| select_sparse_rows(x, &rows));
        let sorted = nodes.windows(2).all(|w| w[0] < w[1]);
        if sorted && self.num_graphs() > 1 {
            let ind = self.graph_indicator();
            let mut ptr = vec![0usize; self.num_graphs() + 1];
            for &v in nodes {
                ptr[ind[v as usize] as usize + 1] += 1;
            }
            for i in 0..self.num_graphs() {
                ptr[i + 1] += ptr[i];
            }
            g.node_ptr = ptr;
        } else {
            g.node_ptr = vec![0, nodes.len()];
            if self.num_graphs() > 1 {
                g.graph_data = DataStore::default();
            }
        }
        Ok(g)
    }

    /// Alias of [`induced_subgraph`](Self::induced_subgraph).
    pub fn subgraph(&self, nodes: &[u32]) -> GraphResult<Graph> {
        self.induced_subgraph(nodes)
    }

    /// The nodes from which some seed can be reached in at most `k` hops (following
    /// edges towards the seeds, as message passing does) and the subgraph they induce.
    pub fn k_hop_subgraph(&self, seeds: &[u32], k: usize) -> GraphResult<KHop> {
        check_nodes("seeds", seeds, self.num_nodes)?;
        let csr = self.csr_by_dst();
        let mut seen = vec![false; self.num_nodes];
        let mut frontier: Vec<u32> = Vec::new();
        for &s in seeds {
            if !std::mem::replace(&mut seen[s as usize], true) {
                frontier.push(s);
            }
        }
        for _ in 0..k {
            let mut next = Vec::new();
            for &v in &frontier {
                for &u in csr.row(v as usize).0 {
                    if !std::mem::replace(&mut seen[u as usize], true) {
                        next.push(u);
                    }
                }
            }
            frontier = next;
        }
        let nodes: Vec<u32> = (0..self.num_nodes as u32)
            .filter(|&v| seen[v as usize])
            .collect();
        let graph = self.induced_subgraph(&nodes)?;
        let seed_index = seeds
            .iter()
            .map(|s| nodes.binary_search(s).expect("seeds are in the subset") as u32)
            .collect();
        Ok(KHop {
            graph,
            nodes,
            seed_index,
        })
    }

    /// Appends `n` isolated nodes (to the last graph of a batch) with zero node data.
    pub fn add_nodes(&self, n: usize) -> GraphResult<Graph> {
        check_num_nodes(self.num_nodes.saturating_add(n))?;
        let mut g = self.clone();
        g.cache = Arc::default();
        g.num_nodes += n;
        *g.node_ptr.last_mut().expect("node_ptr is never empty") += n;
        g.node_data = self.node_data.map(|a| a.append_zero_rows(n));
        g.sparse_features = self
            .sparse_features
            .as_ref()
            .map(|x| append_sparse_rows(x, n));
        Ok(g)
    }

    /// Removes the nodes `nodes` and their edges; the remaining nodes keep their order
    /// and are renumbered from 0.
    pub fn remove_nodes(&self, nodes: &[u32]) -> GraphResult<Graph> {
        check_nodes("nodes", nodes, self.num_nodes)?;
        let mut drop = vec![false; self.num_nodes];
        nodes.iter().for_each(|&v| drop[v as usize] = true);
        let keep: Vec<u32> = (0..self.num_nodes as u32)
            .filter(|&v| !drop[v as usize])
            .collect();
        self.induced_subgraph(&keep)
    }
}

/// PyG's `T.NormalizeFeatures`: node features row-normalised to sum to one.
///
/// As PyG computes it, for each feature matrix: subtract the matrix's minimum (a no-op
/// for the usual non-negative bag-of-words features, whose minimum is 0), then divide
/// each row by its sum clamped below at 1 (`x / max(sum_j x_ij, 1)`): rows of
/// non-negative counts sum to one, zero rows stay zero. Applied to the graph's sparse
/// node features (which stay sparse, with the same pattern) and to each dense `f32` /
/// `f64` node array named in `attrs` (default `["x"]`) that the graph holds.
///
/// ```
/// use shade_graph::{Graph, NormalizeFeatures};
/// use shade_graph::ndarray::array;
/// let g = Graph::from_edges(3, &[(0, 1)])?
///     .with_node_data("x", array![[1.0f32, 3.0], [0.0, 0.0], [2.0, 2.0]])?;
/// let n = NormalizeFeatures::new().apply(&g)?;
/// let x = n.node_data().get("x").unwrap().as_f32().unwrap();
/// assert_eq!(x, &array![[0.25f32, 0.75], [0.0, 0.0], [0.5, 0.5]].into_dyn());
/// # Ok::<(), shade_graph::GraphError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NormalizeFeatures {
    /// Dense node arrays to normalise (PyG's `attrs`); absent names are skipped.
    pub attrs: Vec<String>,
}

impl Default for NormalizeFeatures {
    fn default() -> Self {
        NormalizeFeatures::new()
    }
}

impl NormalizeFeatures {
    /// PyG's default: the node array `x` (and the sparse node features).
    pub fn new() -> Self {
        NormalizeFeatures {
            attrs: vec!["x".into()],
        }
    }

    /// The graph with its sparse node features and the named node arrays normalised.
    /// `SHADE-E0320` if a named array holds integers, or if sparse features hold
    /// negative values (the shift by the minimum would make them dense:
    /// [`NormalizeFeatures::dense`] on `to_dense()` does what PyG would).
    pub fn apply(&self, g: &Graph) -> GraphResult<Graph> {
        let mut out = g.clone();
        if let Some(x) = g.sparse_node_features() {
            out.sparse_features = Some(Self::sparse(x)?);
        }
        for name in &self.attrs {
            let normalised: crate::data::Array = match g.node_data().get(name) {
                None => continue,
                Some(crate::data::Array::F32(a)) => Self::dense(a).into(),
                Some(crate::data::Array::F64(a)) => Self::dense(a).into(),
                Some(other) => {
                    return Err(GraphError::param(
                        "NormalizeFeatures attrs",
                        format!("`{name}` ({} node data)", other.dtype()),
                        "names of f32 or f64 node arrays",
                    ));
                }
            };
            out.node_data.insert_unchecked(name.clone(), normalised);
        }
        Ok(out)
    }

    /// A dense feature array normalised (rows along the last axis, as PyG's
    /// `sum(dim=-1)`).
    pub fn dense<A, S, D>(x: &ndarray::ArrayBase<S, D>) -> ndarray::Array<A, D>
    where
        A: num_traits::Float,
        S: ndarray::Data<Elem = A>,
        D: ndarray::Dimension,
    {
        let mut out = x.to_owned();
        if out.is_empty() {
            return out;
        }
        let min = out.iter().fold(A::infinity(), |m, &v| m.min(v));
        out.mapv_inplace(|v| v - min);
        let last = ndarray::Axis(out.ndim().saturating_sub(1));
        if out.ndim() == 0 {
            let v = out.first().copied().unwrap_or_else(A::zero);
            return out.mapv(|_| v / v.max(A::one()));
        }
        for mut row in out.lanes_mut(last) {
            let sum = row.iter().fold(A::zero(), |s, &v| s + v);
            let d = sum.max(A::one());
            row.mapv_inplace(|v| v / d);
        }
        out
    }

    /// Sparse features normalised, keeping their pattern (CSR out). `SHADE-E0320`
    /// for negative stored values (see [`apply`](Self::apply)).
    pub fn sparse(x: &CsMat32<f32>) -> GraphResult<CsMat32<f32>> {
        let csr = if x.is_csr() { x.clone() } else { x.to_csr() };
        let full = csr.nnz() == csr.rows() * csr.cols();
        let stored_min = csr.data().iter().fold(f32::INFINITY, |m, &v| m.min(v));
        // The minimum over all entries, implicit zeros included.
        let min = if full {
            stored_min
        } else {
            stored_min.min(0.0)
        };
        if min < 0.0 && !full {
            return Err(GraphError::param(
                "NormalizeFeatures",
                format!("sparse features with minimum {min}"),
                "non-negative sparse features (subtracting a negative minimum makes them dense: normalise `to_dense()` instead)",
            ));
        }
        let shift = if csr.nnz() == 0 { 0.0 } else { min };
        let (rows, cols) = csr.shape();
        let (indptr, indices, mut data) = csr.into_raw_storage();
        for r in 0..rows {
            let row = &mut data[indptr[r]..indptr[r + 1]];
            row.iter_mut().for_each(|v| *v -= shift);
            let sum: f64 = row.iter().map(|&v| f64::from(v)).sum();
            let d = sum.max(1.0);
            row.iter_mut().for_each(|v| *v = (f64::from(*v) / d) as f32);
        }
        Ok(CsMat32::new((rows, cols), indptr, indices, data))
    }
}

impl Graph {
    /// [`NormalizeFeatures::new`]`.apply(self)`: PyG's `T.NormalizeFeatures()`.
    pub fn normalize_features(&self) -> GraphResult<Graph> {
        NormalizeFeatures::new().apply(self)
    }
}

#[cfg(test)]
mod normalize_tests {
    use super::*;
    use ndarray::{Array2, array};
    use proptest::prelude::*;

    #[test]
    fn rows_sum_to_one_zero_rows_stay_zero_sparse_stays_sparse() {
        // Cora-like bag of words with an empty row, as CSR.
        let dense = array![
            [1.0f32, 0.0, 1.0, 1.0],
            [0.0, 0.0, 0.0, 0.0],
            [0.0, 2.0, 0.0, 0.0]
        ];
        let x = CsMat32::csr_from_dense(dense.view(), 0.0);
        let mut g = Graph::from_edges(3, &[(0, 1), (1, 2)]).unwrap();
        g.set_sparse_node_features(x.clone()).unwrap();
        let n = g.normalize_features().unwrap();
        let s = n.sparse_node_features().unwrap();
        assert_eq!(
            (s.indptr().raw_storage(), s.indices()),
            (x.indptr().raw_storage(), x.indices())
        );
        let third = 1.0f32 / 3.0;
        assert_eq!(
            s.to_dense(),
            array![[third, 0.0, third, third], [0.0; 4], [0.0, 1.0, 0.0, 0.0]]
        );
        // The dense form agrees, and PyG's clamp leaves a row summing below 1 alone.
        assert_eq!(NormalizeFeatures::dense(&dense), s.to_dense());
        let small = array![[0.25f64, 0.25, 0.0], [3.0, 1.0, 0.0]];
        assert_eq!(
            NormalizeFeatures::dense(&small),
            array![[0.25, 0.25, 0.0], [0.75, 0.25, 0.0]]
        );
        // A minimum above zero is subtracted first, as PyG does.
        let shifted = array![[1.25f64, 1.25], [4.25, 2.25]];
        assert_eq!(
            NormalizeFeatures::dense(&shifted),
            array![[0.0, 0.0], [0.75, 0.25]]
        );
        // Negative values: shifted by the minimum first (dense), refused when sparse.
        let neg = array![[-1.0f32, 1.0], [0.0, 3.0]];
        assert_eq!(
            NormalizeFeatures::dense(&neg),
            array![[0.0, 1.0], [0.2, 0.8]]
        );
        let e =
            NormalizeFeatures::sparse(&CsMat32::csr_from_dense(array![[-1.0f32, 0.0]].view(), 0.0))
                .unwrap_err();
        assert_eq!(e.code(), "SHADE-E0320");
        assert!(e.to_string().contains("minimum -1"), "{e}");
        // Integer node data named in attrs is refused; other arrays are untouched.
        let g = Graph::from_edges(2, &[(0, 1)])
            .unwrap()
            .with_node_data("x", ndarray::ArrayD::<i64>::zeros(ndarray::IxDyn(&[2, 1])))
            .unwrap();
        assert_eq!(g.normalize_features().unwrap_err().code(), "SHADE-E0320");
        let g = Graph::from_edges(2, &[(0, 1)])
            .unwrap()
            .with_node_data("pos", array![[2.0f32, 2.0], [1.0, 3.0]])
            .unwrap();
        assert_eq!(g.normalize_features().unwrap(), g);
    }

    proptest! {
        /// Non-negative sparse features with some zero (minimum 0, as bag-of-words
        /// features): same pattern, each row sums to 1 (or keeps a sum below 1, as
        /// PyG's clamp does), and the dense path agrees.
        #[test]
        fn sparse_and_dense_agree(rows in 1usize..6, cols in 1usize..6, cells in prop::collection::vec((0usize..36, 0u8..5), 0..20)) {
            // The last column stays zero.
            let mut dense = Array2::<f32>::zeros((rows, cols + 1));
            for (at, v) in cells {
                dense[[(at / cols) % rows, at % cols]] = f32::from(v) * 0.5;
            }
            let x = CsMat32::csr_from_dense(dense.view(), 0.0);
            let s = NormalizeFeatures::sparse(&x).unwrap();
            prop_assert_eq!(s.indices(), x.indices());
            let d = NormalizeFeatures::dense(&dense);
            for (r, row) in s.to_dense().outer_iter().enumerate() {
                let before: f32 = dense.row(r).sum();
                let after: f32 = row.sum();
                let want = if before >= 1.0 { 1.0 } else { before };
                prop_assert!((after - want).abs() < 1e-6, "row {r}: {before} -> {after}");
                for (a, b) in row.iter().zip(d.row(r)) {
                    prop_assert!((a - b).abs() < 1e-6);
                }
            }
        }
    }
}
