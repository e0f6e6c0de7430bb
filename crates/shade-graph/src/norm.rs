//! Normalised adjacencies and Laplacians, computed in `f64` and handed out as sprs
//! CSR matrices with rows = destination, so `out = Â · X` aggregates incoming messages.
//!
//! The GCN normalisation follows PyTorch Geometric's `gcn_norm` exactly: only missing
//! self-loops are added (an existing loop keeps its weight), the fill value is 2 when
//! `improved`, degrees are weighted in-degrees, and the inverse square root of a zero
//! degree is 0 (isolated nodes get zero rows instead of NaN).

use rand::{RngExt, SeedableRng, rngs::StdRng};
use sprs::CsMat;

use crate::graph::{Graph, GraphFloat};

/// Options of the GCN normalisation `D^-1/2 (A + I) D^-1/2`.
#[derive(Debug, Clone, Copy, PartialEq)]
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

/// Edges and coefficients of a normalised operator, as plain arrays.
#[derive(Debug, Clone, PartialEq)]
pub struct NormEdges {
    /// Source of each entry.
    pub src: Vec<u32>,
    /// Destination of each entry.
    pub dst: Vec<u32>,
    /// Coefficient of each entry.
    pub weight: Vec<f64>,
}

fn inv_sqrt(d: f64) -> f64 {
    if d == 0.0 { 0.0 } else { d.powf(-0.5) }
}

impl Graph {
    /// PyG's `gcn_norm` as edge arrays: the graph's non-loop edges in their order, then
    /// one self-loop per node (if `add_self_loops`), each with its coefficient
    /// `d(dst)^-1/2 · w · d(src)^-1/2`.
    pub fn gcn_norm_edges(&self, opts: GcnNorm) -> NormEdges {
        let n = self.num_nodes;
        let w = |e: usize| if opts.weighted { self.weight(e) } else { 1.0 };
        let (mut src, mut dst, mut weight);
        if opts.add_self_loops {
            let fill = if opts.improved { 2.0 } else { 1.0 };
            let mut loop_w = vec![fill; n];
            let m = self.num_edges();
            src = Vec::with_capacity(m + n);
            dst = Vec::with_capacity(m + n);
            weight = Vec::with_capacity(m + n);
            for (e, (&s, &d)) in self.src.iter().zip(&self.dst).enumerate() {
                if s == d {
                    loop_w[s as usize] = w(e);
                } else {
                    src.push(s);
                    dst.push(d);
                    weight.push(w(e));
                }
            }
            src.extend(0..n as u32);
            dst.extend(0..n as u32);
            weight.extend_from_slice(&loop_w);
        } else {
            src = self.src.clone();
            dst = self.dst.clone();
            weight = (0..self.num_edges()).map(w).collect();
        }
        let mut deg = vec![0.0; n];
        for (&d, &x) in dst.iter().zip(&weight) {
            deg[d as usize] += x;
        }
        let dis: Vec<f64> = deg.into_iter().map(inv_sqrt).collect();
        for ((x, &s), &d) in weight.iter_mut().zip(&src).zip(&dst) {
            *x *= dis[s as usize] * dis[d as usize];
        }
        NormEdges { src, dst, weight }
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
        let NormEdges { src, dst, weight } = self.gcn_norm_edges(opts);
        self.with_new_edges(src, dst, Some(weight), crate::DataStore::default())
    }

    /// The GCN-normalised adjacency with options (rows = destination, duplicates summed).
    /// Built in one pass over the cached CSR by destination.
    pub fn gcn_norm<T: GraphFloat>(&self, opts: GcnNorm) -> CsMat<T> {
        let n = self.num_nodes;
        let w = |e: usize| if opts.weighted { self.weight(e) } else { 1.0 };
        let mut deg = vec![0.0; n];
        let mut loop_w = vec![if opts.improved { 2.0 } else { 1.0 }; n];
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
    pub fn gcn_adjacency<T: GraphFloat>(&self) -> &CsMat<T> {
        T::pick(&self.cache.gcn.0, &self.cache.gcn.1)
            .get_or_init(|| self.gcn_norm(GcnNorm::default()))
    }

    /// The random-walk (mean) normalised adjacency `D_in^-1 A`: entry `(v, u)` is
    /// `w(u -> v) / Σ_u' w(u' -> v)`, so each non-empty row sums to 1. No self-loops are
    /// added; a node without incoming edges has an empty row. Built once per float type.
    pub fn random_walk_adjacency<T: GraphFloat>(&self) -> &CsMat<T> {
        T::pick(&self.cache.rw.0, &self.cache.rw.1).get_or_init(|| {
            let deg = self.weighted_in_degree();
            self.row_matrix(true, false, None, |v, _, w| {
                T::from_f64(if deg[v] == 0.0 { 0.0 } else { w / deg[v] })
            })
        })
    }

    /// `a·L + b·I` for `L = I - D^-1/2 A D^-1/2`: self-loops of the graph are dropped,
    /// degrees are weighted in-degrees (zero degree → 0), every node gets an explicit
    /// diagonal entry `a + b`.
    fn scaled_laplacian_matrix<T: GraphFloat>(&self, a: f64, b: f64) -> CsMat<T> {
        let mut deg = vec![0.0; self.num_nodes];
        for (e, (&s, &d)) in self.src.iter().zip(&self.dst).enumerate() {
            if s != d {
                deg[d as usize] += self.weight(e);
            }
        }
        let dis: Vec<f64> = deg.into_iter().map(inv_sqrt).collect();
        let diag = |_: usize| a + b;
        self.row_matrix(true, true, Some(&diag), |v, u, w| {
            T::from_f64(-a * dis[v] * w * dis[u])
        })
    }

    /// The symmetric normalised Laplacian `L = I - D^-1/2 A D^-1/2` (self-loops of the
    /// graph ignored, rows = destination).
    pub fn normalized_laplacian<T: GraphFloat>(&self) -> CsMat<T> {
        self.scaled_laplacian_matrix(1.0, 0.0)
    }

    /// The scaled Laplacian of ChebConv, `2 L / λ_max - I`. Every diagonal entry is kept
    /// explicitly (it is 0 for `λ_max = 2`). `lambda_max` must be positive and finite;
    /// otherwise the default 2.0 is used.
    pub fn scaled_laplacian<T: GraphFloat>(&self, lambda_max: f64) -> CsMat<T> {
        let l = if lambda_max.is_finite() && lambda_max > 0.0 {
            lambda_max
        } else {
            2.0
        };
        self.scaled_laplacian_matrix(2.0 / l, -1.0)
    }

    /// The scaled Laplacian with PyG's default `λ_max = 2`, built once per float type.
    pub fn cheb_laplacian<T: GraphFloat>(&self) -> &CsMat<T> {
        T::pick(&self.cache.cheb.0, &self.cache.cheb.1).get_or_init(|| self.scaled_laplacian(2.0))
    }

    /// Largest eigenvalue of the normalised Laplacian, estimated by 64 power iterations
    /// from a seeded random start (a slight underestimate at worst; exact for the
    /// graphs in the tests). Meaningful for undirected graphs. Built once.
    pub fn lambda_max(&self) -> f64 {
        *self.cache.lambda_max.get_or_init(|| {
            let n = self.num_nodes;
            if n == 0 {
                return 2.0;
            }
            let l = self.normalized_laplacian::<f64>();
            let mut rng = StdRng::seed_from_u64(0x5ade);
            let mut x: Vec<f64> = (0..n).map(|_| rng.random::<f64>() - 0.5).collect();
            let mut lambda = 0.0;
            for _ in 0..64 {
                let norm = x.iter().map(|v| v * v).sum::<f64>().sqrt();
                if norm == 0.0 {
                    break;
                }
                x.iter_mut().for_each(|v| *v /= norm);
                let y = spmv(&l, &x);
                lambda = x.iter().zip(&y).map(|(a, b)| a * b).sum();
                x = y;
            }
            lambda
        })
    }
}

/// `y = A x` for a CSR matrix.
pub(crate) fn spmv(a: &CsMat<f64>, x: &[f64]) -> Vec<f64> {
    a.outer_iterator()
        .map(|row| row.iter().map(|(j, v)| v * x[j]).sum())
        .collect()
}
