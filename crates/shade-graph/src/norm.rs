//! Normalised adjacencies and Laplacians, the one home of the degree conventions: each
//! computed in `f64` as PyTorch Geometric does it, and handed out as edge arrays
//! ([`NormEdges`]) or sprs CSR matrices with rows = destination, so `out = Â · X`
//! aggregates incoming messages.
//!
//! - GCN normalisation ([`Graph::gcn_norm`], [`Graph::gcn_norm_edges`]) is PyG's
//!   `gcn_norm`: only missing self-loops are added (an existing loop keeps its weight,
//!   the last one if there are several), the fill value is 2 when `improved`, degrees
//!   are weighted **in**-degrees (summed by destination, PyG's `col` for the default
//!   flow), and the inverse square root of a zero degree is 0 (isolated nodes get zero
//!   rows instead of NaN).
//! - Laplacians ([`Graph::laplacian`], [`Graph::laplacian_edges`],
//!   [`Graph::scaled_laplacian`]) are PyG's `get_laplacian` and ChebConv's rescaling:
//!   self-loops removed first, degrees are weighted **out**-degrees (summed by source,
//!   PyG's `row`), `L = D - A` ([`LaplacianNorm::None`]), `I - D^-1/2 A D^-1/2`
//!   (`Sym`) or `I - D^-1 A` (`Rw`), a zero degree giving 0, and every node its
//!   diagonal entry. [`Graph::lambda_max`] is PyG's `LaplacianLambdaMax` for the same
//!   Laplacian.
//!
//! On an undirected graph in- and out-degrees agree; on a directed one the two
//! families differ exactly as PyG's do.

use crate::graph::CsMat32;
use rand::{RngExt, SeedableRng, rngs::StdRng};

use crate::error::{GraphError, GraphResult};
use crate::graph::{Graph, GraphFloat};

/// Options of the GCN normalisation `D^-1/2 (A + I) D^-1/2`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GcnNorm {
    /// Add the missing self-loops (PyG's `add_remaining_self_loops`). Default `true`.
    pub add_self_loops: bool,
    /// Use 2 instead of 1 as the weight of added self-loops (`A + 2I`). Default `false`.
    pub improved: bool,
    /// Use the graph's edge weights (ones otherwise). Default `true`.
    pub weighted: bool,
}

impl Default for GcnNorm {
    fn default() -> Self {
        GcnNorm {
            add_self_loops: true,
            improved: false,
            weighted: true,
        }
    }
}

impl GcnNorm {
    /// The weight of an added self-loop: 2 when `improved`, else 1.
    pub fn fill(&self) -> f64 {
        if self.improved { 2.0 } else { 1.0 }
    }
}

/// The normalisation of a graph Laplacian (PyG's `get_laplacian(normalization=...)`).
/// The default is `Sym`, ChebConv's (PyG's `get_laplacian` itself defaults to `None`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum LaplacianNorm {
    /// `L = D - A`.
    None,
    /// `L = I - D^-1/2 A D^-1/2`.
    #[default]
    Sym,
    /// `L = I - D^-1 A`.
    Rw,
}

impl LaplacianNorm {
    /// Every normalisation, in declaration order.
    pub const ALL: [LaplacianNorm; 3] =
        [LaplacianNorm::None, LaplacianNorm::Sym, LaplacianNorm::Rw];
}

/// Edges and coefficients of a normalised operator, as plain arrays: entry `k` is
/// `src[k] -> dst[k]` with coefficient `weight[k]` (entry `(dst, src)` of the matrix).
#[derive(Debug, Clone, PartialEq)]
pub struct NormEdges {
    /// Source of each entry.
    pub src: Vec<u32>,
    /// Destination of each entry.
    pub dst: Vec<u32>,
    /// Coefficient of each entry.
    pub weight: Vec<f64>,
    /// The graph edge each entry comes from (`None` for an entry the normalisation
    /// added: a self-loop of the GCN normalisation, a diagonal entry of a Laplacian).
    pub edge: Vec<Option<usize>>,
}

fn inv_sqrt(d: f64) -> f64 {
    if d == 0.0 { 0.0 } else { d.powf(-0.5) }
}

fn inv(d: f64) -> f64 {
    if d == 0.0 { 0.0 } else { 1.0 / d }
}

impl Graph {
    /// PyG's `gcn_norm` as edge arrays: with `add_self_loops`, the graph's non-loop
    /// edges in their order, then one self-loop per node (carrying the weight of the
    /// node's last existing loop, or the fill value); without, every edge as it is.
    /// Each entry's coefficient is `d(src)^-1/2 · w · d(dst)^-1/2` with `d` the
    /// weighted in-degree over the listed entries.
    pub fn gcn_norm_edges(&self, opts: GcnNorm) -> NormEdges {
        let n = self.num_nodes;
        let w = |e: usize| if opts.weighted { self.weight(e) } else { 1.0 };
        let m = self.num_edges();
        let cap = m + if opts.add_self_loops { n } else { 0 };
        let mut out = NormEdges {
            src: Vec::with_capacity(cap),
            dst: Vec::with_capacity(cap),
            weight: Vec::with_capacity(cap),
            edge: Vec::with_capacity(cap),
        };
        if opts.add_self_loops {
            let mut last_loop = vec![None; n];
            for (e, (&s, &d)) in self.src.iter().zip(&self.dst).enumerate() {
                if s == d {
                    last_loop[s as usize] = Some(e);
                } else {
                    out.src.push(s);
                    out.dst.push(d);
                    out.weight.push(w(e));
                    out.edge.push(Some(e));
                }
            }
            out.src.extend(0..n as u32);
            out.dst.extend(0..n as u32);
            out.weight
                .extend(last_loop.iter().map(|l| l.map_or(opts.fill(), w)));
            out.edge.extend(last_loop);
        } else {
            out.src.clone_from(&self.src);
            out.dst.clone_from(&self.dst);
            out.weight.extend((0..m).map(w));
            out.edge.extend((0..m).map(Some));
        }
        let mut deg = vec![0.0; n];
        for (&d, &x) in out.dst.iter().zip(&out.weight) {
            deg[d as usize] += x;
        }
        let dis: Vec<f64> = deg.into_iter().map(inv_sqrt).collect();
        for ((x, &s), &d) in out.weight.iter_mut().zip(&out.src).zip(&out.dst) {
            *x *= dis[s as usize] * dis[d as usize];
        }
        out
    }

    /// The graph whose edges are [`gcn_norm_edges`](Self::gcn_norm_edges)' with their
    /// coefficients as weights (PyG's `T.GCNNorm`): node and graph data are kept, edge
    /// data are dropped (the added self-loops have none). Aggregating with these
    /// weights unchanged (shade-gnn's `GCNConv { normalize: false, .. }`) is GCN with
    /// the whole graph's degrees, also on sampled subgraphs, so a mini-batch GCN with
    /// full fan-out reproduces the full-batch one.
    ///
    /// ```
    /// use shade_graph::{Graph, GcnNorm};
    /// let g = Graph::from_edges(3, &[(0, 1), (1, 0), (2, 1)])?;
    /// let n = g.gcn_normalized(GcnNorm::default());
    /// assert_eq!(n.num_edges(), 3 + 3); // the edges and a self-loop per node
    /// // Node 1 has in-degree 2 + its loop: the loop's coefficient is 1/3.
    /// assert!((n.weight(4) - 1.0 / 3.0).abs() < 1e-15);
    /// # Ok::<(), shade_graph::GraphError>(())
    /// ```
    pub fn gcn_normalized(&self, opts: GcnNorm) -> Graph {
        let NormEdges {
            src, dst, weight, ..
        } = self.gcn_norm_edges(opts);
        self.with_new_edges(src, dst, Some(weight), crate::DataStore::default())
    }

    /// The GCN-normalised adjacency with options (rows = destination, duplicates summed):
    /// the matrix of [`Graph::gcn_norm_edges`]. Built in one pass over the cached CSR by
    /// destination; with `add_self_loops` every diagonal entry is stored.
    pub fn gcn_norm<T: GraphFloat>(&self, opts: GcnNorm) -> CsMat32<T> {
        let n = self.num_nodes;
        let w = |e: usize| if opts.weighted { self.weight(e) } else { 1.0 };
        let mut deg = vec![0.0; n];
        let mut loop_w = vec![opts.fill(); n];
        for (e, (&s, &d)) in self.src.iter().zip(&self.dst).enumerate() {
            if opts.add_self_loops && s == d {
                loop_w[s as usize] = w(e); // the last loop wins, as in PyG
            } else {
                deg[d as usize] += w(e);
            }
        }
        if opts.add_self_loops {
            deg.iter_mut().zip(&loop_w).for_each(|(d, l)| *d += l);
        }
        let dis: Vec<f64> = deg.into_iter().map(inv_sqrt).collect();
        let diag = |v: usize| dis[v] * loop_w[v] * dis[v];
        let diag = opts
            .add_self_loops
            .then_some(&diag as &dyn Fn(usize) -> f64);
        // The coefficients are read at random (by source): keep them in T so that the
        // f32 table takes half the cache.
        let dis_t: Vec<T> = dis.iter().map(|&x| T::from_f64(x)).collect();
        self.row_matrix(opts.weighted, opts.add_self_loops, diag, |v, u, s| {
            dis_t[v] * T::from_f64(s) * dis_t[u]
        })
    }

    /// The default GCN-normalised adjacency `D^-1/2 (A + I) D^-1/2` (weighted, missing
    /// self-loops added with weight 1), built once per float type.
    pub fn gcn_adjacency<T: GraphFloat>(&self) -> &CsMat32<T> {
        T::pick(&self.cache.gcn.0, &self.cache.gcn.1)
            .get_or_init(|| self.gcn_norm(GcnNorm::default()))
    }

    /// The random-walk (mean) normalised adjacency `D_in^-1 A`: entry `(v, u)` is
    /// `w(u -> v) / Σ_u' w(u' -> v)`, so each non-empty row sums to 1. No self-loops are
    /// added; a node without incoming edges has an empty row. Built once per float type.
    pub fn random_walk_adjacency<T: GraphFloat>(&self) -> &CsMat32<T> {
        T::pick(&self.cache.rw.0, &self.cache.rw.1).get_or_init(|| {
            let deg = self.weighted_in_degree();
            self.row_matrix(true, false, None, |v, _, w| {
                T::from_f64(if deg[v] == 0.0 { 0.0 } else { w / deg[v] })
            })
        })
    }

    /// The matrix of the mean aggregation (rows = destination, multi-edges summed):
    /// entry `(v, u)` is `Σ w(u -> v) / in_degree(v)`, with `w = 1` unless `weighted`
    /// (and the graph has weights) and the in-degree counting edges (each multi-edge and
    /// self-loop once), so `M · X` is the mean of the messages into each node, PyG's
    /// `aggr = "mean"` over (weighted) messages. A node without incoming edges has an
    /// empty row. Unlike [`Graph::random_walk_adjacency`], the weights do not enter the
    /// degree.
    pub fn mean_adjacency_matrix<T: GraphFloat>(&self, weighted: bool) -> CsMat32<T> {
        let deg = self.in_degree();
        self.row_matrix(weighted, false, None, |v, _, w| {
            T::from_f64(w / deg[v] as f64)
        })
    }

    /// The weighted out-degrees without self-loops: the degree of PyG's
    /// `get_laplacian` (`scatter(edge_weight, row)` after `remove_self_loops`).
    fn laplacian_degree(&self) -> Vec<f64> {
        let mut deg = vec![0.0; self.num_nodes];
        for (e, (&s, &d)) in self.src.iter().zip(&self.dst).enumerate() {
            if s != d {
                deg[s as usize] += self.weight(e);
            }
        }
        deg
    }

    /// The coefficient `c` of an edge `s -> d` of weight `w` in `A_norm` (the Laplacian
    /// holds `-c`), and every node's diagonal entry, for the degrees `deg`.
    fn laplacian_parts(
        norm: LaplacianNorm,
        deg: &[f64],
    ) -> (
        impl Fn(usize, usize, f64) -> f64 + '_,
        impl Fn(usize) -> f64 + '_,
    ) {
        let coef = move |s: usize, d: usize, w: f64| match norm {
            LaplacianNorm::None => w,
            LaplacianNorm::Sym => inv_sqrt(deg[s]) * w * inv_sqrt(deg[d]),
            LaplacianNorm::Rw => inv(deg[s]) * w,
        };
        let diag = move |v: usize| match norm {
            LaplacianNorm::None => deg[v],
            LaplacianNorm::Sym | LaplacianNorm::Rw => 1.0,
        };
        (coef, diag)
    }

    /// PyG's `get_laplacian` as edge arrays: the graph's non-loop edges in their order
    /// with their entry `-c` of `L` (`c = w` for `None`, `d(src)^-1/2 w d(dst)^-1/2`
    /// for `Sym`, `w / d(src)` for `Rw`, with `d` the weighted out-degree and a zero
    /// degree giving 0), then one diagonal entry per node (`d` for `None`, 1 otherwise).
    pub fn laplacian_edges(&self, norm: LaplacianNorm) -> NormEdges {
        let n = self.num_nodes;
        let deg = self.laplacian_degree();
        let (coef, diag) = Self::laplacian_parts(norm, &deg);
        let mut out = NormEdges {
            src: Vec::new(),
            dst: Vec::new(),
            weight: Vec::new(),
            edge: Vec::new(),
        };
        for (e, (&s, &d)) in self.src.iter().zip(&self.dst).enumerate() {
            if s != d {
                out.src.push(s);
                out.dst.push(d);
                out.weight
                    .push(-coef(s as usize, d as usize, self.weight(e)));
                out.edge.push(Some(e));
            }
        }
        out.src.extend(0..n as u32);
        out.dst.extend(0..n as u32);
        out.weight.extend((0..n).map(&diag));
        out.edge.extend(std::iter::repeat_n(None, n));
        out
    }

    /// `a · L + b · I` for the Laplacian of `norm`, rows = destination, multi-edges
    /// summed, self-loops of the graph dropped, every diagonal entry stored.
    fn laplacian_matrix<T: GraphFloat>(&self, norm: LaplacianNorm, a: f64, b: f64) -> CsMat32<T> {
        let deg = self.laplacian_degree();
        let (coef, diag) = Self::laplacian_parts(norm, &deg);
        let diag = |v: usize| a * diag(v) + b;
        self.row_matrix(true, true, Some(&diag), |v, u, w| {
            T::from_f64(-a * coef(u, v, w))
        })
    }

    /// The Laplacian of [`Graph::laplacian_edges`] as a matrix (rows = destination,
    /// duplicates summed, every diagonal entry stored).
    pub fn laplacian<T: GraphFloat>(&self, norm: LaplacianNorm) -> CsMat32<T> {
        self.laplacian_matrix(norm, 1.0, 0.0)
    }

    /// ChebConv's rescaled Laplacian `L̂ = 2L / λ_max - I` for the Laplacian of `norm`
    /// (PyG's `ChebConv.__norm__`): rows = destination, every diagonal entry stored
    /// (it is 0 for `Sym` and `λ_max = 2`).
    ///
    /// Errors with [`GraphError::InvalidParameter`] unless `lambda_max` is positive and
    /// finite.
    pub fn scaled_laplacian<T: GraphFloat>(
        &self,
        norm: LaplacianNorm,
        lambda_max: f64,
    ) -> GraphResult<CsMat32<T>> {
        if !(lambda_max.is_finite() && lambda_max > 0.0) {
            return Err(GraphError::InvalidParameter {
                name: "lambda_max",
                value: lambda_max.to_string(),
                expected: "a finite value > 0".into(),
            });
        }
        Ok(self.laplacian_matrix(norm, 2.0 / lambda_max, -1.0))
    }

    /// The largest eigenvalue (in magnitude) of the Laplacian of `norm`: PyG's
    /// `LaplacianLambdaMax(normalization)`, what ChebConv's `lambda_max` should be for
    /// `None` and `Rw`. Computed by power iteration from a seeded random start until
    /// the Rayleigh quotient settles (relative change below 1e-12, at most 10 000
    /// steps), so an estimate within rounding for an undirected graph; for a directed
    /// graph, whose Laplacian may have complex eigenvalues, the dominant real one.
    /// A graph without nodes has no eigenvalue; it gets 2, ChebConv's default. Built once
    /// per normalisation.
    pub fn lambda_max(&self, norm: LaplacianNorm) -> f64 {
        *self.cache.lambda_max.get(norm).get_or_init(|| {
            let n = self.num_nodes;
            if n == 0 {
                return 2.0;
            }
            let l = self.laplacian::<f64>(norm);
            let mut rng = StdRng::seed_from_u64(0x5ade);
            let mut x: Vec<f64> = (0..n).map(|_| rng.random::<f64>() - 0.5).collect();
            let mut lambda = 0.0;
            for _ in 0..10_000 {
                let norm2 = x.iter().map(|v| v * v).sum::<f64>().sqrt();
                if norm2 == 0.0 {
                    break;
                }
                x.iter_mut().for_each(|v| *v /= norm2);
                let y = spmv(&l, &x);
                let next: f64 = x.iter().zip(&y).map(|(a, b)| a * b).sum();
                let done = (next - lambda).abs() <= 1e-12 * next.abs().max(1.0);
                lambda = next;
                x = y;
                if done {
                    break;
                }
            }
            lambda.abs()
        })
    }
}

/// `y = A x` for a CSR matrix.
pub(crate) fn spmv(a: &CsMat32<f64>, x: &[f64]) -> Vec<f64> {
    a.outer_iterator()
        .map(|row| row.iter().map(|(j, v)| v * x[j]).sum())
        .collect()
}
