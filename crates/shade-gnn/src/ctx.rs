//! The prepared per-graph context: a [`Graph`] turned once into the tensor layer's
//! constants.
//!
//! Nothing graph-structural is computed inside a differentiated program. A
//! [`GraphCtx`] holds the edge index as `usize` slices for gather/scatter, and builds on
//! first need (then keeps) the sparse matrices of the fused aggregation paths: the
//! sum and mean aggregation matrices, the GCN-normalised adjacency for each option set
//! (PyG's `GCNConv(cached=True)` semantics: one normalisation per graph), the edge set
//! with self-loops used by attention layers (and the matrices that fill the edge
//! features of its self-loops), and the batch vector of a batched graph.
//! Build one context per graph and reuse it for every step.

use crate::layers::ChebNorm;
use ndarray::{Array1, Array2, ArrayD, IxDyn};
use shade_autodiff::tensor::{Element, SparseMatrix, SymNorm};
use shade_graph::{GcnNorm, Graph, GraphFloat};
use std::sync::OnceLock;

/// The float types of shade-gnn: `f32` and `f64` (the tensor layer's [`Element`] that
/// the graph crate can also produce).
pub trait Float: Element + GraphFloat {}
impl<T: Element + GraphFloat> Float for T {}

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

/// The stored entry (CSR position) of every edge `src[e] -> dst[e]` of a matrix built
/// from these edges by [`csr_from_triples`] (rows = destination, columns sorted).
fn entry_positions<T: Element>(
    matrix: &SparseMatrix<T>,
    dst: &[usize],
    src: &[usize],
) -> Vec<usize> {
    let m = matrix.csr();
    let (indptr, indices) = (m.indptr(), m.indices());
    let indptr = indptr.raw_storage();
    dst.iter()
        .zip(src)
        .map(|(&v, &u)| {
            let row = &indices[indptr[v]..indptr[v + 1]];
            // Every edge has its entry: the matrix was built from these edges.
            indptr[v] + row.binary_search(&u).expect("the edge's own entry")
        })
        .collect()
}

/// An edge set as constants: `src[e] -> dst[e]` over `num_nodes` nodes, optional edge
/// weights, and the aggregation matrices built on first need.
#[derive(Debug)]
pub struct EdgeIndex<T: Element> {
    num_nodes: usize,
    src: Vec<usize>,
    dst: Vec<usize>,
    weights: Option<ArrayD<T>>,
    sum: OnceLock<SparseMatrix<T>>,
    mean: OnceLock<SparseMatrix<T>>,
    wsum: OnceLock<SparseMatrix<T>>,
    wmean: OnceLock<SparseMatrix<T>>,
    in_degree: OnceLock<Vec<usize>>,
}

impl<T: Element> EdgeIndex<T> {
    /// An edge set from index arrays (checked by the caller: equal lengths, indices
    /// `< num_nodes`) and optional weights (one per edge).
    pub(crate) fn new(
        num_nodes: usize,
        src: Vec<usize>,
        dst: Vec<usize>,
        weights: Option<Vec<T>>,
    ) -> Self {
        let m = src.len();
        EdgeIndex {
            num_nodes,
            src,
            dst,
            weights: weights
                .map(|w| ArrayD::from_shape_vec(IxDyn(&[m, 1]), w).expect("one weight per edge")),
            sum: OnceLock::new(),
            mean: OnceLock::new(),
            wsum: OnceLock::new(),
            wmean: OnceLock::new(),
            in_degree: OnceLock::new(),
        }
    }

    /// Number of nodes.
    pub fn num_nodes(&self) -> usize {
        self.num_nodes
    }

    /// Number of edges.
    pub fn num_edges(&self) -> usize {
        self.src.len()
    }

    /// Source of every edge.
    pub fn src(&self) -> &[usize] {
        &self.src
    }

    /// Destination of every edge.
    pub fn dst(&self) -> &[usize] {
        &self.dst
    }

    /// Edge weights as an `[E, 1]` column (ones when the graph has none).
    pub fn weights(&self) -> Option<&ArrayD<T>> {
        self.weights.as_ref()
    }

    fn weight(&self, e: usize) -> T {
        self.weights.as_ref().map_or(T::one(), |w| w[[e, 0]])
    }

    /// Number of incoming edges of every node (multi-edges counted).
    pub fn in_degree(&self) -> &[usize] {
        self.in_degree.get_or_init(|| {
            let mut d = vec![0; self.num_nodes];
            self.dst.iter().for_each(|&v| d[v] += 1);
            d
        })
    }

    /// `S` with `S[v, u]` = number of edges `u -> v`: `S · X` sums incoming source rows.
    pub fn sum_matrix(&self) -> &SparseMatrix<T> {
        self.sum.get_or_init(|| {
            let n = self.num_nodes;
            csr_from_triples(n, n, &self.dst, &self.src, |_| T::one())
        })
    }

    /// `S` with rows divided by the in-degree: `S · X` averages incoming source rows
    /// (isolated nodes get a zero row).
    pub fn mean_matrix(&self) -> &SparseMatrix<T> {
        self.mean.get_or_init(|| {
            let n = self.num_nodes;
            let deg = self.in_degree();
            csr_from_triples(n, n, &self.dst, &self.src, |e| {
                T::one() / T::cst(deg[self.dst[e]] as f64)
            })
        })
    }

    /// `W` with `W[v, u]` = sum of the weights of the edges `u -> v`.
    pub fn weighted_sum_matrix(&self) -> &SparseMatrix<T> {
        self.wsum.get_or_init(|| {
            let n = self.num_nodes;
            csr_from_triples(n, n, &self.dst, &self.src, |e| self.weight(e))
        })
    }

    /// `W` with rows divided by the in-degree (mean of weighted messages).
    pub fn weighted_mean_matrix(&self) -> &SparseMatrix<T> {
        self.wmean.get_or_init(|| {
            let n = self.num_nodes;
            let deg = self.in_degree();
            csr_from_triples(n, n, &self.dst, &self.src, |e| {
                self.weight(e) / T::cst(deg[self.dst[e]] as f64)
            })
        })
    }
}

/// A graph prepared as constants for the layers; see the module documentation.
#[derive(Debug)]
pub struct GraphCtx<T: Float> {
    graph: Graph,
    edges: EdgeIndex<T>,
    self_loops: OnceLock<EdgeIndex<T>>,
    loop_fill: OnceLock<SelfLoopFill<T>>,
    gcn: [OnceLock<SparseMatrix<T>>; 4],
    cheb: [OnceLock<ChebLaplacian<T>>; 3],
    propagation: [OnceLock<Vec<T>>; 3],
    gcn_edges: [OnceLock<GcnEdges<T>>; 3],
    batch: Vec<usize>,
}

/// How the edge features of [`GraphCtx::edges_with_self_loops`] come from the graph's:
/// the kept (non-loop) edges' rows, then one row per node for its new self-loop, filled
/// from the features of the kept edges into that node (PyG's `add_self_loops` with a
/// `fill_value`). Constants, so that the fill is a differentiable product or gather on
/// the tape.
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

/// `L̂ = 2L / λ_max - I` for one normalisation, built for the first `λ_max` asked.
#[derive(Debug)]
struct ChebLaplacian<T: Element> {
    lambda_max: f64,
    /// Every edge's entry (self-loops dropped, duplicates summed) and the whole
    /// diagonal, zeros included, so that any `λ_max` fits the same structure.
    matrix: SparseMatrix<T>,
    /// Whether each stored entry lies on the diagonal.
    on_diagonal: Vec<bool>,
}

/// The rescaled Laplacian of [`GraphCtx::cheb_laplacian`]: the cached matrix, with
/// other values for its structure when `λ_max` is not the cached one.
#[derive(Debug)]
pub struct ScaledLaplacian<'c, T: Element> {
    /// The cached `L̂`'s structure (and values, when `values` is `None`).
    pub matrix: &'c SparseMatrix<T>,
    /// The nonzero values for the asked `λ_max`, in `matrix`'s order, when it differs
    /// from the cached one.
    pub values: Option<ArrayD<T>>,
}

/// PyG's `gcn_norm` edge list as a map from the graph's edges
/// ([`GraphCtx::gcn_edges`]), for a GCN whose edge weights are values on the tape.
#[derive(Debug)]
pub struct GcnEdges<T: Element> {
    /// Source of every listed edge.
    pub src: Vec<usize>,
    /// Destination of every listed edge.
    pub dst: Vec<usize>,
    /// The graph edge whose weight each listed edge carries; `None` for an added
    /// self-loop, which carries `fill`.
    pub from: Vec<Option<usize>>,
    /// The weight of an added self-loop (2 with `improved`, else 1).
    pub fill: f64,
    /// The structure (rows = destination, duplicates share an entry).
    pub matrix: SparseMatrix<T>,
    /// The stored entry of every listed edge, in `matrix`'s CSR order.
    pub position: Vec<usize>,
}

impl<T: Float> GcnEdges<T> {
    /// The structure of the core's [`Tape::sym_norm_values`] for this list: the
    /// normalised values (PyG's `gcn_norm`) of `matrix` from edge weights on the tape,
    /// or, unless `normalize`, the weights summed into the entries.
    ///
    /// [`Tape::sym_norm_values`]: shade_autodiff::tensor::Tape::sym_norm_values
    pub fn sym_norm(&self, normalize: bool) -> SymNorm<'_> {
        SymNorm {
            rows: &self.dst,
            cols: &self.src,
            from: &self.from,
            fill: self.fill,
            entry: &self.position,
            num_entries: self.matrix.nnz(),
            num_nodes: self.matrix.rows(),
            normalize,
        }
    }

    /// The listed edges' weights `wf` (`w(i)` of the graph edge each carries, `fill`
    /// for an added loop), the degrees `deg[i] = Σ_{dst = i} wf` (zeros unless
    /// `normalize`) and `deg^-1/2` (0 where the degree is 0, as PyG masks the
    /// infinity): the parts of PyG's `gcn_norm`.
    pub(crate) fn normalise(
        &self,
        w: impl Fn(usize) -> T,
        normalize: bool,
        num_nodes: usize,
    ) -> (Vec<T>, Vec<T>, Vec<T>) {
        let wf: Vec<T> = self
            .from
            .iter()
            .map(|f| f.map_or(T::cst(self.fill), &w))
            .collect();
        let mut deg = vec![T::zero(); num_nodes];
        if normalize {
            self.dst.iter().zip(&wf).for_each(|(&d, &x)| deg[d] += x);
        }
        let dis = deg
            .iter()
            .map(|&d| {
                if d == T::zero() {
                    T::zero()
                } else {
                    d.powf(T::cst(-0.5))
                }
            })
            .collect();
        (wf, deg, dis)
    }
}

impl<T: Float> GraphCtx<T> {
    /// Prepares `graph` (cloned; a clone shares the graph's caches). Only the edge
    /// index is converted now; everything else on first need.
    pub fn new(graph: &Graph) -> Self {
        let (src, dst) = graph.edge_index();
        let weights = graph
            .weights()
            .map(|w| w.iter().map(|&x| T::cst(x)).collect());
        let batch = graph
            .graph_indicator()
            .iter()
            .map(|&g| g as usize)
            .collect();
        GraphCtx {
            edges: EdgeIndex::new(
                graph.num_nodes(),
                src.iter().map(|&s| s as usize).collect(),
                dst.iter().map(|&d| d as usize).collect(),
                weights,
            ),
            graph: graph.clone(),
            self_loops: OnceLock::new(),
            loop_fill: OnceLock::new(),
            gcn: Default::default(),
            cheb: Default::default(),
            propagation: Default::default(),
            gcn_edges: Default::default(),
            batch,
        }
    }

    /// The underlying graph.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// Number of nodes.
    pub fn num_nodes(&self) -> usize {
        self.edges.num_nodes
    }

    /// Number of graphs (1 unless the graph is a batch).
    pub fn num_graphs(&self) -> usize {
        self.graph.num_graphs()
    }

    /// Graph id of every node (all zeros for a single graph).
    pub fn batch(&self) -> &[usize] {
        &self.batch
    }

    /// The graph's edges, in its order.
    pub fn edges(&self) -> &EdgeIndex<T> {
        &self.edges
    }

    /// The edges without self-loops, then one self-loop per node (weight 1): PyG's
    /// `remove_self_loops` + `add_self_loops`, used by attention layers.
    pub fn edges_with_self_loops(&self) -> &EdgeIndex<T> {
        self.self_loops.get_or_init(|| {
            let e = &self.edges;
            let n = e.num_nodes;
            let keep: Vec<usize> = (0..e.num_edges())
                .filter(|&i| e.src[i] != e.dst[i])
                .collect();
            let mut src: Vec<usize> = keep.iter().map(|&i| e.src[i]).collect();
            let mut dst: Vec<usize> = keep.iter().map(|&i| e.dst[i]).collect();
            src.extend(0..n);
            dst.extend(0..n);
            let weights = e.weights.as_ref().map(|_| {
                keep.iter()
                    .map(|&i| e.weight(i))
                    .chain(std::iter::repeat_n(T::one(), n))
                    .collect()
            });
            EdgeIndex::new(n, src, dst, weights)
        })
    }

    /// The constants that fill the edge features of the self-loops of
    /// [`GraphCtx::edges_with_self_loops`] (see [`SelfLoopFill`]). Built once.
    pub(crate) fn self_loop_fill(&self) -> &SelfLoopFill<T> {
        self.loop_fill.get_or_init(|| {
            let e = &self.edges;
            let (n, m) = (e.num_nodes, e.num_edges());
            let kept: Vec<usize> = (0..m).filter(|&i| e.src[i] != e.dst[i]).collect();
            let rows: Vec<usize> = kept.iter().map(|&i| e.dst[i]).collect();
            let mut count = vec![0usize; n];
            rows.iter().for_each(|&v| count[v] += 1);
            let sum = csr_from_triples(n, m, &rows, &kept, |_| T::one());
            let mean = csr_from_triples(n, m, &rows, &kept, |k| {
                T::one() / T::cst(count[rows[k]] as f64)
            });
            SelfLoopFill { kept, sum, mean }
        })
    }

    /// The GCN-normalised adjacency `D^-1/2 (A + I) D^-1/2` with PyG's `gcn_norm`
    /// options (`improved`: `A + 2I`; `add_self_loops`), rows = destination, weighted by
    /// the graph's edge weights. Built once per option set.
    pub fn gcn_adjacency(&self, improved: bool, add_self_loops: bool) -> &SparseMatrix<T> {
        let slot = usize::from(improved) * 2 + usize::from(add_self_loops);
        self.gcn[slot].get_or_init(|| {
            let m = self.graph.gcn_norm::<T>(GcnNorm {
                add_self_loops,
                improved,
                weighted: true,
            });
            let a = SparseMatrix::new(m);
            a.prepare_transpose();
            a
        })
    }

    /// ChebConv's rescaled Laplacian `L̂ = 2L / λ_max - I` (rows = destination), with
    /// PyG's `get_laplacian`: self-loops dropped, the degree `D` weighted and taken by
    /// source, `L = D - A` (`None`), `I - D^-1/2 A D^-1/2` (`Sym`) or `I - D^-1 A`
    /// (`Rw`). Built once per normalisation; a `λ_max` other than the first one asked
    /// rescales the cached values (`O(E)`) instead of rebuilding the matrix.
    pub fn cheb_laplacian(&self, norm: ChebNorm, lambda_max: f64) -> ScaledLaplacian<'_, T> {
        let slot = match norm {
            ChebNorm::None => 0,
            ChebNorm::Sym => 1,
            ChebNorm::Rw => 2,
        };
        let cached = self.cheb[slot].get_or_init(|| self.build_cheb(norm, lambda_max));
        let values = (cached.lambda_max != lambda_max).then(|| {
            // L̂' = (λ / λ')(L̂ + I) - I.
            let r = cached.lambda_max / lambda_max;
            let v: Array1<T> = cached
                .matrix
                .csr()
                .data()
                .iter()
                .zip(&cached.on_diagonal)
                .map(|(&x, &d)| {
                    let x = x.to_f64().unwrap_or(0.0);
                    T::cst(if d { r * (x + 1.0) - 1.0 } else { r * x })
                })
                .collect();
            v.into_dyn()
        });
        ScaledLaplacian {
            matrix: &cached.matrix,
            values,
        }
    }

    fn build_cheb(&self, norm: ChebNorm, lambda_max: f64) -> ChebLaplacian<T> {
        let e = &self.edges;
        let n = e.num_nodes;
        let keep: Vec<usize> = (0..e.num_edges())
            .filter(|&i| e.src[i] != e.dst[i])
            .collect();
        let mut deg = vec![0.0f64; n];
        for &i in &keep {
            deg[e.src[i]] += e.weight(i).to_f64().unwrap_or(0.0);
        }
        let pow = |d: f64, p: f64| if d == 0.0 { 0.0 } else { d.powf(p) };
        let scale = 2.0 / lambda_max;
        let mut rows: Vec<usize> = keep.iter().map(|&i| e.dst[i]).collect();
        let mut cols: Vec<usize> = keep.iter().map(|&i| e.src[i]).collect();
        let mut vals: Vec<f64> = keep
            .iter()
            .map(|&i| {
                let (s, w) = (e.src[i], e.weight(i).to_f64().unwrap_or(0.0));
                scale
                    * match norm {
                        ChebNorm::None => -w,
                        ChebNorm::Sym => -w * pow(deg[e.dst[i]], -0.5) * pow(deg[s], -0.5),
                        ChebNorm::Rw => -w * pow(deg[s], -1.0),
                    }
            })
            .collect();
        rows.extend(0..n);
        cols.extend(0..n);
        vals.extend((0..n).map(|i| {
            let l = if norm == ChebNorm::None { deg[i] } else { 1.0 };
            scale * l - 1.0
        }));
        let matrix = csr_from_triples(n, n, &rows, &cols, |k| T::cst(vals[k]));
        let m = matrix.csr();
        let on_diagonal = m
            .outer_iterator()
            .enumerate()
            .flat_map(|(i, row)| {
                row.indices()
                    .iter()
                    .map(move |&j| i == j)
                    .collect::<Vec<_>>()
            })
            .collect();
        matrix.prepare_transpose();
        ChebLaplacian {
            lambda_max,
            matrix,
            on_diagonal,
        }
    }

    /// The node count of every graph in the batch, as a `[num_graphs, 1]` array.
    pub fn graph_sizes(&self) -> Array2<T> {
        let mut c = Array2::zeros((self.num_graphs(), 1));
        self.batch.iter().for_each(|&g| c[[g, 0]] += T::one());
        c
    }

    /// A propagation matrix as the edge list it sums, the form edge dropout needs
    /// (APPNP's `dropout`): the list of [`GraphCtx::gcn_edges`] (with `normalize`,
    /// PyG's `gcn_norm` list: the non-loop edges in graph order, then one self-loop per
    /// node when `add_self_loops`, an existing loop keeping its weight; otherwise the
    /// graph's own edges) and the coefficient of every listed edge,
    /// `d(dst)^-1/2 · w · d(src)^-1/2` or the weight. Summed into their entries they
    /// give [`GraphCtx::gcn_adjacency`]`(false, add_self_loops)` or the weighted sum
    /// matrix up to rounding. Built once per option set.
    pub fn propagation_edges(&self, normalize: bool, add_self_loops: bool) -> (&GcnEdges<T>, &[T]) {
        let loops = normalize && add_self_loops;
        let slot = match (normalize, add_self_loops) {
            (true, true) => 0,
            (true, false) => 1,
            (false, _) => 2,
        };
        let edges = self.gcn_edges(false, loops);
        let coef = self.propagation[slot].get_or_init(|| {
            let (wf, _, dis) =
                edges.normalise(|i| self.edges.weight(i), normalize, self.num_nodes());
            if !normalize {
                return wf;
            }
            (0..wf.len())
                .map(|k| dis[edges.src[k]] * wf[k] * dis[edges.dst[k]])
                .collect()
        });
        (edges, coef)
    }

    /// The edge list PyG's `gcn_norm` normalises, as a map from the graph's edges:
    /// with `add_self_loops`, the non-loop edges in graph order, then one loop per node
    /// carrying the weight of the node's last existing loop or `fill` (PyG's
    /// `add_remaining_self_loops`); without, every edge as it is. Built once per option
    /// set; GCNConv with edge weights from the call's edge features normalises on the
    /// tape over it.
    pub fn gcn_edges(&self, improved: bool, add_self_loops: bool) -> &GcnEdges<T> {
        let slot = match (add_self_loops, improved) {
            (true, false) => 0,
            (true, true) => 1,
            (false, _) => 2,
        };
        self.gcn_edges[slot].get_or_init(|| {
            let e = &self.edges;
            let n = e.num_nodes;
            let (mut src, mut dst, mut from) = (Vec::new(), Vec::new(), Vec::new());
            if add_self_loops {
                let mut last_loop = vec![None; n];
                for i in 0..e.num_edges() {
                    if e.src[i] == e.dst[i] {
                        last_loop[e.src[i]] = Some(i);
                    } else {
                        src.push(e.src[i]);
                        dst.push(e.dst[i]);
                        from.push(Some(i));
                    }
                }
                src.extend(0..n);
                dst.extend(0..n);
                from.extend(last_loop);
            } else {
                src.clone_from(&e.src);
                dst.clone_from(&e.dst);
                from.extend((0..e.num_edges()).map(Some));
            }
            let matrix = csr_from_triples(n, n, &dst, &src, |_| T::one());
            let position = entry_positions(&matrix, &dst, &src);
            matrix.prepare_transpose();
            GcnEdges {
                src,
                dst,
                from,
                fill: if improved { 2.0 } else { 1.0 },
                matrix,
                position,
            }
        })
    }
}

/// Holds the graphs a program derives while it runs (the pooled graph of a
/// [`TopKPool`](crate::pool::TopKPool) in a [`Chain`](crate::layers::Chain)), so that
/// the layers after it can borrow them for the whole program, as they borrow the input
/// graph. [`apply`](crate::apply), [`TrainState::predict`](crate::train::TrainState::predict)
/// and [`single_train_step`](crate::train::single_train_step) make one per call; give
/// one to [`Inputs::with_arena`](crate::Inputs::with_arena) when calling
/// [`forward_model`](crate::forward_model) directly. Holds up to
/// [`GraphArena::CAPACITY`] graphs.
#[derive(Debug, Default)]
pub struct GraphArena<T: Float> {
    slots: [OnceLock<GraphCtx<T>>; GraphArena::<f64>::CAPACITY],
}

impl<T: Float> GraphArena<T> {
    /// How many derived graphs one program may hold (node-dropping poolings per
    /// forward pass).
    pub const CAPACITY: usize = 8;

    /// An empty arena.
    pub fn new() -> Self {
        GraphArena {
            slots: Default::default(),
        }
    }

    /// Keeps `g` for the arena's lifetime and lends it out; `None` when the arena is
    /// full.
    pub fn hold(&self, mut g: GraphCtx<T>) -> Option<&GraphCtx<T>> {
        for slot in &self.slots {
            match slot.set(g) {
                Ok(()) => return slot.get(),
                Err(back) => g = back,
            }
        }
        None
    }
}

impl<T: Float> From<&Graph> for GraphCtx<T> {
    fn from(g: &Graph) -> Self {
        GraphCtx::new(g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregation_matrices_count_multi_edges() {
        // 0->1 twice, 2->1, 1->1 (loop), node 3 isolated.
        let g = Graph::new(4, vec![0, 0, 2, 1], vec![1, 1, 1, 1]);
        let c = GraphCtx::<f64>::new(&g);
        let s = c.edges().sum_matrix().csr().to_dense();
        assert_eq!(s.row(1).to_vec(), vec![2.0, 1.0, 1.0, 0.0]);
        let m = c.edges().mean_matrix().csr().to_dense();
        assert_eq!(m.row(1).to_vec(), vec![0.5, 0.25, 0.25, 0.0]);
        assert_eq!(m.row(3).sum(), 0.0);
        let l = c.edges_with_self_loops();
        assert_eq!(l.num_edges(), 3 + 4);
        assert_eq!(l.in_degree(), &[1, 4, 1, 1]);
    }
}
