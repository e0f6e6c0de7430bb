//! The prepared per-graph context: a [`Graph`] turned once into the tensor layer's
//! constants.
//!
//! Nothing graph-structural is computed inside a differentiated program. A
//! [`GraphCtx`] shares the graph's structure (an [`Arc`]; its derived structures are
//! shared with the original; its `u32` edge lists are the one copy of the edges), and
//! converts on first need (then keeps) what shade-graph derives from it, as
//! tensor-layer constants, in a cache keyed by what each entry is (the layers gather
//! and scatter along the graph's own `u32` edge lists, which the tensor layer's index
//! operations take as they are):
//!
//! - the normalised adjacency for a [`GcnNorm`] (PyG's `gcn_norm` with those options;
//!   PyG's `cached=True` semantics: one normalisation per graph and option set),
//! - its normalised edge list ([`NormEdgeList`]) on that matrix's entries,
//! - the rescaled Laplacian for a [`LaplacianNorm`] and `λ_max`,
//! - the edge set with self-loops (and the constants that fill their edge features),
//!   and the batch vector of a batched graph.
//!
//! The context knows no layer: layers ask for the structure they need by its options.
//! Build one context per graph and reuse it for every step.

mod edges;

pub(crate) use edges::SelfLoopFill;
pub use edges::{EdgeIndex, NormEdgeList};

use crate::error::GnnWarning;
use ndarray::{Array1, Array2, ArrayD};
use shade_autodiff::tensor::{Element, SparseMatrix};
use shade_graph::{GcnNorm, Graph, GraphError, GraphFloat, GraphResult, LaplacianNorm};
use std::sync::{Arc, Mutex, OnceLock};

/// The float types of shade-gnn: `f32` and `f64` (the tensor layer's [`Element`] that
/// the graph crate can also produce).
pub trait Float: Element + GraphFloat {}
impl<T: Element + GraphFloat> Float for T {}

/// A cache of values keyed by what they are built from: one slot per possible key,
/// each filled on first use (so that a value, once built, is lent out for the
/// context's lifetime).
#[derive(Debug)]
struct Memo<K, V> {
    slots: Vec<(K, OnceLock<V>)>,
}

impl<K: Copy + PartialEq + core::fmt::Debug, V> Memo<K, V> {
    /// A cache for the given keys (every key a caller can ask for).
    fn new(keys: impl IntoIterator<Item = K>) -> Self {
        Memo {
            slots: keys.into_iter().map(|k| (k, OnceLock::new())).collect(),
        }
    }

    /// The value of `key`, built by `init` on first need.
    fn get_or_init(&self, key: K, init: impl FnOnce() -> V) -> &V {
        let (_, slot) = self
            .slots
            .iter()
            .find(|(k, _)| *k == key)
            .unwrap_or_else(|| unreachable!("the cache has a slot for every key, not {key:?}"));
        slot.get_or_init(init)
    }
}

/// Every [`GcnNorm`] (the options are three flags).
fn every_gcn_norm() -> impl Iterator<Item = GcnNorm> {
    let flags = [false, true];
    flags.into_iter().flat_map(move |add_self_loops| {
        flags.into_iter().flat_map(move |improved| {
            flags.into_iter().map(move |weighted| GcnNorm {
                add_self_loops,
                improved,
                weighted,
            })
        })
    })
}

/// A graph prepared as constants for the layers; see the module documentation.
#[derive(Debug)]
pub struct GraphCtx<T: Float> {
    graph: Arc<Graph>,
    edges: EdgeIndex<T>,
    self_loops: OnceLock<EdgeIndex<T>>,
    loop_fill: OnceLock<SelfLoopFill<T>>,
    adjacency: Memo<GcnNorm, SparseMatrix<T>>,
    norm_edges: Memo<GcnNorm, NormEdgeList<T>>,
    laplacian: Memo<LaplacianNorm, ScaledCache<T>>,
    warnings: Mutex<Vec<GnnWarning>>,
}

/// `L̂ = 2L / λ_max - I` for one normalisation, built for the first `λ_max` asked.
#[derive(Debug)]
struct ScaledCache<T: Element> {
    lambda_max: f64,
    /// Every edge's entry (self-loops dropped, duplicates summed) and the whole
    /// diagonal, zeros included, so that any `λ_max` fits the same structure.
    matrix: SparseMatrix<T>,
    /// Whether each stored entry lies on the diagonal.
    on_diagonal: Vec<bool>,
}

/// The rescaled Laplacian of [`GraphCtx::scaled_laplacian`]: the cached matrix, with
/// other values for its structure when `λ_max` is not the cached one.
#[derive(Debug)]
pub struct ScaledLaplacian<'c, T: Element> {
    /// The cached `L̂`'s structure (and values, when `values` is `None`).
    pub matrix: &'c SparseMatrix<T>,
    /// The nonzero values for the asked `λ_max`, in `matrix`'s order, when it differs
    /// from the cached one.
    pub values: Option<ArrayD<T>>,
}

impl<T: Float> GraphCtx<T> {
    /// Prepares `graph`: keeps its structure (edges, weights, batch layout) without its
    /// node, edge and graph data ([`Graph::structure`], which shares the graph's
    /// derived structures). Nothing is converted now; everything on first need. [`GraphCtx::shared`] keeps a graph already behind an [`Arc`]
    /// without any copy.
    pub fn new(graph: &Graph) -> Self {
        Self::shared(Arc::new(graph.structure()))
    }

    /// Prepares the graph behind `graph`, sharing it.
    pub fn shared(graph: Arc<Graph>) -> Self {
        let edges = EdgeIndex::of(Arc::clone(&graph));
        GraphCtx {
            graph,
            edges,
            self_loops: OnceLock::new(),
            loop_fill: OnceLock::new(),
            adjacency: Memo::new(every_gcn_norm()),
            norm_edges: Memo::new(every_gcn_norm()),
            laplacian: Memo::new(LaplacianNorm::ALL),
            warnings: Mutex::new(Vec::new()),
        }
    }

    /// What the layers' use of this graph found probably not meant (e.g. a GCN
    /// normalisation without self-loops over nodes without incoming edges,
    /// `SHADE-W0401`), each once, in the order found. The computation went on; show
    /// them to the user (shade-diagnostics renders them as warnings).
    pub fn warnings(&self) -> Vec<GnnWarning> {
        self.warnings
            .lock()
            .map(|w| w.clone())
            .unwrap_or_else(|p| p.into_inner().clone())
    }

    fn warn(&self, w: GnnWarning) {
        let mut held = self.warnings.lock().unwrap_or_else(|p| p.into_inner());
        if !held.contains(&w) {
            held.push(w);
        }
    }

    /// The underlying graph (its structure).
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

    /// Graph id of every node (all zeros for a single graph): the graph's own `u32`
    /// indicator ([`Graph::graph_indicator`](shade_graph::Graph::graph_indicator), built
    /// once and cached by the graph), no copy; the tensor layer's index operations take it
    /// as it is.
    pub fn batch(&self) -> &[u32] {
        self.graph.graph_indicator()
    }

    /// The graph's edges, in its order.
    pub fn edges(&self) -> &EdgeIndex<T> {
        &self.edges
    }

    /// The edges without self-loops, then one self-loop per node (weight 1): PyG's
    /// `remove_self_loops` + `add_self_loops`, shade-graph's transforms of the same
    /// names. Built once.
    pub fn edges_with_self_loops(&self) -> &EdgeIndex<T> {
        self.self_loops.get_or_init(|| {
            let g = self
                .graph
                .remove_self_loops()
                .add_self_loops(1.0)
                .unwrap_or_else(|_| unreachable!("the fill 1 is finite"));
            EdgeIndex::of(Arc::new(g))
        })
    }

    /// The constants that fill the edge features of the self-loops of
    /// [`GraphCtx::edges_with_self_loops`] (see [`SelfLoopFill`]). Built once.
    pub(crate) fn self_loop_fill(&self) -> &SelfLoopFill<T> {
        self.loop_fill
            .get_or_init(|| SelfLoopFill::new(&self.edges))
    }

    /// The normalised adjacency `D^-1/2 (A + I) D^-1/2` with PyG's `gcn_norm` options
    /// (`improved`: `A + 2I`; `add_self_loops`; `weighted`: the graph's edge weights),
    /// rows = destination, from shade-graph's [`Graph::gcn_norm`]. Built once per
    /// option set.
    pub fn normalized_adjacency(&self, opts: GcnNorm) -> &SparseMatrix<T> {
        self.adjacency.get_or_init(opts, || {
            if !opts.add_self_loops {
                let deg = self.graph.in_degree();
                let isolated: Vec<usize> = (0..deg.len()).filter(|&v| deg[v] == 0).collect();
                if !isolated.is_empty() {
                    self.warn(GnnWarning::IsolatedWithoutSelfLoops {
                        isolated: isolated.len(),
                        num_nodes: deg.len(),
                        first: isolated.into_iter().take(8).collect(),
                    });
                }
            }
            let a = SparseMatrix::new(self.graph.gcn_norm::<T>(opts));
            a.prepare_transpose();
            a
        })
    }

    /// The edge list of [`GraphCtx::normalized_adjacency`]`(opts)` (shade-graph's
    /// [`Graph::gcn_norm_edges`]: with `add_self_loops`, the non-loop edges in graph
    /// order, then one loop per node carrying the weight of the node's last existing
    /// loop or the fill value; without, every edge as it is), with each edge's weight,
    /// coefficient and stored entry in that matrix: for changing the matrix's values
    /// per call (edge dropout) or on the tape (edge weights from edge features, through
    /// [`NormEdgeList::sym_norm`]). Built once per option set.
    pub fn normalized_edges(&self, opts: GcnNorm) -> &NormEdgeList<T> {
        self.norm_edges.get_or_init(opts, || {
            let list = self.graph.gcn_norm_edges(opts);
            let w = |e: usize| {
                if opts.weighted {
                    self.graph.weight(e)
                } else {
                    1.0
                }
            };
            let weights = list
                .edge
                .iter()
                .map(|f| T::cst(f.map_or(opts.fill(), w)))
                .collect();
            NormEdgeList::new(list, opts.fill(), weights, self.normalized_adjacency(opts))
        })
    }

    /// The rescaled Laplacian `L̂ = 2L / λ_max - I` (rows = destination) of shade-graph's
    /// [`Graph::scaled_laplacian`] (PyG's `get_laplacian` with `norm` and ChebConv's
    /// rescaling: self-loops dropped, the degree weighted and taken by source). Built
    /// once per normalisation; a `λ_max` other than the first one asked rescales the
    /// cached values (`O(E)`) instead of rebuilding the matrix.
    ///
    /// Errors with `SHADE-E0320` unless `lambda_max` is positive and finite.
    pub fn scaled_laplacian(
        &self,
        norm: LaplacianNorm,
        lambda_max: f64,
    ) -> GraphResult<ScaledLaplacian<'_, T>> {
        // Checked before the cache, so that a bad value is refused every time (and the
        // matrix is built from a valid one).
        if !(lambda_max.is_finite() && lambda_max > 0.0) {
            return Err(GraphError::InvalidParameter {
                name: "lambda_max",
                value: lambda_max.to_string(),
                expected: "a finite value > 0".into(),
            });
        }
        let cached = self.laplacian.get_or_init(norm, || {
            let m = self
                .graph
                .scaled_laplacian::<T>(norm, lambda_max)
                .unwrap_or_else(|_| unreachable!("lambda_max checked above"));
            let on_diagonal = m
                .outer_iterator()
                .enumerate()
                .flat_map(|(i, row)| {
                    row.indices()
                        .iter()
                        .map(move |&j| i == j as usize)
                        .collect::<Vec<_>>()
                })
                .collect();
            let matrix = SparseMatrix::new(m);
            matrix.prepare_transpose();
            ScaledCache {
                lambda_max,
                matrix,
                on_diagonal,
            }
        });
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
        Ok(ScaledLaplacian {
            matrix: &cached.matrix,
            values,
        })
    }

    /// The node count of every graph in the batch, as a `[num_graphs, 1]` array.
    pub fn graph_sizes(&self) -> Array2<T> {
        let mut c = Array2::zeros((self.num_graphs(), 1));
        self.batch()
            .iter()
            .for_each(|&g| c[[g as usize, 0]] += T::one());
        c
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

impl<T: Float> From<Arc<Graph>> for GraphCtx<T> {
    fn from(g: Arc<Graph>) -> Self {
        GraphCtx::shared(g)
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

    /// The context shares the graph's structure and derived structures, not its data,
    /// and an `Arc` is kept as it is.
    #[test]
    fn shares_the_graph_without_its_data() {
        let g = Graph::new(3, vec![0, 1], vec![1, 2])
            .with_node_data("x", ndarray::Array2::<f32>::zeros((3, 64)))
            .unwrap();
        let c = GraphCtx::<f64>::new(&g);
        assert!(c.graph().node_data().is_empty());
        assert!(std::ptr::eq(c.graph().csr_by_dst(), g.csr_by_dst()));
        let a = Arc::new(g);
        let c = GraphCtx::<f64>::shared(Arc::clone(&a));
        assert!(std::ptr::eq(c.graph(), &*a));
    }

    /// The edge lists the layers gather and scatter along are the graph's own `u32`
    /// slices, not a copy (a `usize` copy was 16 bytes per edge).
    #[test]
    fn edge_lists_are_the_graphs_own_u32_slices() {
        let a = Arc::new(Graph::new(3, vec![0, 1, 2], vec![1, 2, 0]));
        let c = GraphCtx::<f64>::shared(Arc::clone(&a));
        let e = c.edges();
        assert!(std::ptr::eq(e.src(), a.src()));
        assert!(std::ptr::eq(e.dst(), a.dst()));
        assert_eq!(e.edge_index_u32(), (e.src(), e.dst()));
        assert_eq!(e.src(), &[0, 1, 2]);
        // The batch vector is the graph's own indicator too, for a single graph and a
        // batch of two.
        assert!(std::ptr::eq(c.batch(), a.graph_indicator()));
        assert_eq!(c.batch(), &[0, 0, 0]);
        let two = Arc::new(Graph::batch(&[(*a).clone(), (*a).clone()]).expect("a batch of two"));
        let c = GraphCtx::<f64>::shared(Arc::clone(&two));
        assert!(std::ptr::eq(c.batch(), two.graph_indicator()));
        assert_eq!(c.batch(), &[0, 0, 0, 1, 1, 1]);
        assert_eq!(c.graph_sizes().column(0).to_vec(), vec![3.0, 3.0]);
    }

    /// Each cached structure is built once per key and is shade-graph's: the
    /// normalised adjacency, its edge list (whose entries sum to it), the Laplacian.
    #[test]
    fn caches_by_key_and_matches_shade_graph() {
        let g = crate::testing::random_graph(6, 14, 3);
        let ne = g.num_edges();
        let g = g
            .with_weights((0..ne).map(|e| 0.3 + 0.2 * e as f64).collect())
            .unwrap();
        let c = GraphCtx::<f64>::new(&g);
        for opts in every_gcn_norm() {
            let a = c.normalized_adjacency(opts);
            assert!(std::ptr::eq(a, c.normalized_adjacency(opts)), "{opts:?}");
            assert_eq!(a.csr().to_dense(), g.gcn_norm::<f64>(opts).to_dense());
            let list = c.normalized_edges(opts);
            let mut v = vec![0.0; list.nnz];
            for (k, &p) in list.position.iter().enumerate() {
                v[p] += list.coef[k];
            }
            for (x, y) in v.iter().zip(a.csr().data()) {
                assert!((x - y).abs() < 1e-12, "{opts:?}: {x} vs {y}");
            }
        }
        for norm in LaplacianNorm::ALL {
            let l = c.scaled_laplacian(norm, 2.0).unwrap();
            assert!(l.values.is_none());
            let want = g.scaled_laplacian::<f64>(norm, 2.0).unwrap().to_dense();
            assert_eq!(l.matrix.csr().to_dense(), want);
        }
        assert_eq!(
            c.scaled_laplacian(LaplacianNorm::Sym, 0.0)
                .unwrap_err()
                .code(),
            "SHADE-E0320"
        );
    }
}
