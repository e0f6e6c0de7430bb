//! Seeded random graph generators: uniform `(n, m)` graphs, Erdős–Rényi, stochastic
//! block models, the contextual SBM (the built-in learnable dataset), k-nearest-
//! neighbour and radius graphs over points, and Julia's `sprand`-style random matrix.

use ndarray::{Array2, ArrayView2};
use rand::{RngExt, SeedableRng, rngs::StdRng};

use crate::error::{GraphError, GraphResult};
use crate::graph::{Graph, check_num_nodes};

fn check_p(name: &'static str, p: f64) -> GraphResult<()> {
    if (0.0..=1.0).contains(&p) {
        Ok(())
    } else {
        Err(GraphError::param(name, p, "a probability in [0, 1]"))
    }
}

/// Calls `f(i)` for each `i` in `0..total` chosen independently with probability `p`,
/// in increasing order, in time proportional to the number chosen (geometric skips).
fn bernoulli_indices(total: u64, p: f64, rng: &mut StdRng, mut f: impl FnMut(u64)) {
    if p <= 0.0 || total == 0 {
        return;
    }
    if p >= 1.0 {
        (0..total).for_each(f);
        return;
    }
    let lq = (1.0 - p).ln();
    let mut i: u64 = 0;
    loop {
        let r: f64 = rng.random();
        let skip = ((1.0 - r).ln() / lq).floor();
        if !skip.is_finite() || skip >= (total - i) as f64 {
            return;
        }
        i += skip as u64;
        f(i);
        i += 1;
        if i >= total {
            return;
        }
    }
}

/// A standard normal sample (Box–Muller).
pub(crate) fn normal(rng: &mut StdRng) -> f64 {
    let u: f64 = 1.0 - rng.random::<f64>(); // (0, 1]
    let v: f64 = rng.random();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// `m` directed edges with endpoints drawn uniformly (no self-loops; repeated pairs
/// possible, rarely for sparse graphs). `SHADE-E0320` if `m > 0` and `n < 2`.
pub fn rand_graph(n: usize, m: usize, seed: u64) -> GraphResult<Graph> {
    check_num_nodes(n)?;
    if m > u32::MAX as usize {
        return Err(GraphError::TooLarge {
            what: "num_edges".into(),
            found: m as u64,
            max: u32::MAX as u64,
        });
    }
    if m > 0 && n < 2 {
        return Err(GraphError::param(
            "n",
            n,
            "at least 2 nodes to place an edge without self-loop",
        ));
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let (mut src, mut dst) = (Vec::with_capacity(m), Vec::with_capacity(m));
    for _ in 0..m {
        let s = rng.random_range(0..n as u32);
        // Uniform over the other n - 1 nodes.
        let mut d = rng.random_range(0..n as u32 - 1);
        if d >= s {
            d += 1;
        }
        src.push(s);
        dst.push(d);
    }
    Graph::try_new(n, src, dst)
}

/// Erdős–Rényi `G(n, p)`: each pair gets an edge with probability `p`, no self-loops.
/// Undirected graphs store both directions of every chosen pair.
pub fn erdos_renyi(n: usize, p: f64, directed: bool, seed: u64) -> GraphResult<Graph> {
    check_num_nodes(n)?;
    check_p("p", p)?;
    let mut rng = StdRng::seed_from_u64(seed);
    let (mut src, mut dst) = (Vec::new(), Vec::new());
    let nn = n as u64;
    if directed {
        // n ≤ u32::MAX, so n (n - 1) < 2^64.
        bernoulli_indices(nn * nn.saturating_sub(1), p, &mut rng, |k| {
            let u = k / (nn - 1);
            let mut v = k % (nn - 1);
            if v >= u {
                v += 1;
            }
            src.push(u as u32);
            dst.push(v as u32);
        });
    } else {
        sample_block(&mut rng, p, 0..n, 0..n, true, &mut src, &mut dst);
    }
    Graph::try_new(n, src, dst)
}

/// Samples undirected edges between node ranges `a` and `b` (both directions stored);
/// `same` means `a == b` and only pairs `u < v` are considered.
fn sample_block(
    rng: &mut StdRng,
    p: f64,
    a: std::ops::Range<usize>,
    b: std::ops::Range<usize>,
    same: bool,
    src: &mut Vec<u32>,
    dst: &mut Vec<u32>,
) {
    let (na, nb) = (a.len() as u64, b.len() as u64);
    let mut push = |u: u64, v: u64| {
        let (u, v) = ((a.start as u64 + u) as u32, (b.start as u64 + v) as u32);
        src.extend([u, v]);
        dst.extend([v, u]);
    };
    if same {
        // Pair index k runs over the strict upper triangle row by row; the row start
        // is advanced incrementally because k only grows.
        let (mut row, mut row_start) = (0u64, 0u64);
        bernoulli_indices(na * na.saturating_sub(1) / 2, p, rng, |k| {
            while k >= row_start + (na - 1 - row) {
                row_start += na - 1 - row;
                row += 1;
            }
            push(row, row + 1 + (k - row_start));
        });
    } else {
        bernoulli_indices(na * nb, p, rng, |k| push(k / nb, k % nb));
    }
}

/// Stochastic block model: blocks of `sizes` nodes (contiguous ids), an undirected
/// edge between blocks `a` and `b` with probability `probs[a][b]` (symmetric).
/// Returns the graph and each node's block.
pub fn stochastic_block_model(
    sizes: &[usize],
    probs: &[Vec<f64>],
    seed: u64,
) -> GraphResult<(Graph, Vec<usize>)> {
    let k = sizes.len();
    if probs.len() != k || probs.iter().any(|r| r.len() != k) {
        return Err(GraphError::param(
            "probs",
            format!("{} rows", probs.len()),
            &format!("a symmetric {k} x {k} matrix"),
        ));
    }
    for (a, row) in probs.iter().enumerate() {
        for (b, &p) in row.iter().enumerate() {
            check_p("probs", p)?;
            if p != probs[b][a] {
                return Err(GraphError::param(
                    "probs",
                    format!("[{a}][{b}] != [{b}][{a}]"),
                    "a symmetric matrix",
                ));
            }
        }
    }
    let n: usize = sizes.iter().sum();
    check_num_nodes(n)?;
    let mut start = vec![0usize];
    sizes
        .iter()
        .for_each(|s| start.push(start.last().expect("non-empty") + s));
    let mut rng = StdRng::seed_from_u64(seed);
    let (mut src, mut dst) = (Vec::new(), Vec::new());
    for a in 0..k {
        for b in a..k {
            sample_block(
                &mut rng,
                probs[a][b],
                start[a]..start[a + 1],
                start[b]..start[b + 1],
                a == b,
                &mut src,
                &mut dst,
            );
        }
    }
    let labels = (0..k)
        .flat_map(|c| std::iter::repeat_n(c, sizes[c]))
        .collect();
    Ok((Graph::try_new(n, src, dst)?, labels))
}

/// A contextual stochastic block model dataset: graph, dense features, labels.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntheticDataset {
    /// The undirected graph (both directions stored, no self-loops).
    pub graph: Graph,
    /// Node features `[num_nodes, num_features]`.
    pub features: Array2<f32>,
    /// Class of every node.
    pub labels: Vec<usize>,
    /// Number of classes.
    pub num_classes: usize,
}

/// Parameters of the contextual SBM (Deshpande et al., 2018, generalised to several
/// classes). Build with [`Csbm::new`], adjust fields, then [`generate`](Csbm::generate).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Csbm {
    /// Number of nodes.
    pub num_nodes: usize,
    /// Number of classes (communities), at least 2.
    pub num_classes: usize,
    /// Feature dimension.
    pub num_features: usize,
    /// Expected degree.
    pub avg_degree: f64,
    /// Expected fraction of a node's neighbours in its own class (edge homophily).
    pub homophily: f64,
    /// Distance of each class mean from the origin, in units of the noise's standard
    /// deviation (features are `signal · u_class + N(0, I)`, `u_class` random unit vectors).
    pub feature_signal: f64,
    /// Seed of everything random.
    pub seed: u64,
}

impl Csbm {
    /// Defaults: average degree 10, homophily 0.8, feature signal 1, seed 0.
    pub fn new(num_nodes: usize, num_classes: usize, num_features: usize) -> Csbm {
        Csbm {
            num_nodes,
            num_classes,
            num_features,
            avg_degree: 10.0,
            homophily: 0.8,
            feature_signal: 1.0,
            seed: 0,
        }
    }

    /// Draws the dataset. Classes are balanced and shuffled over node ids. Edge
    /// probabilities: `p_in = h·d·C/n`, `p_out = (1-h)·d·C/(n(C-1))` (capped at 1).
    pub fn generate(&self) -> GraphResult<SyntheticDataset> {
        let (n, c, f) = (self.num_nodes, self.num_classes, self.num_features);
        check_num_nodes(n)?;
        if c < 2 || c > n.max(2) {
            return Err(GraphError::param(
                "num_classes",
                c,
                "between 2 and num_nodes",
            ));
        }
        check_p("homophily", self.homophily)?;
        if !(self.avg_degree >= 0.0 && self.avg_degree.is_finite()) {
            return Err(GraphError::param(
                "avg_degree",
                self.avg_degree,
                "a finite degree >= 0",
            ));
        }
        if !self.feature_signal.is_finite() {
            return Err(GraphError::param(
                "feature_signal",
                self.feature_signal,
                "a finite number",
            ));
        }
        let mut rng = StdRng::seed_from_u64(self.seed);
        // Balanced classes over contiguous blocks, then a random relabelling of nodes.
        let sizes: Vec<usize> = (0..c).map(|k| n / c + usize::from(k < n % c)).collect();
        let (nf, cf) = (n as f64, c as f64);
        let p_in = (self.homophily * self.avg_degree * cf / nf).min(1.0);
        let p_out = ((1.0 - self.homophily) * self.avg_degree * cf / (nf * (cf - 1.0))).min(1.0);
        let probs: Vec<Vec<f64>> = (0..c)
            .map(|a| (0..c).map(|b| if a == b { p_in } else { p_out }).collect())
            .collect();
        let (g, block) = stochastic_block_model(&sizes, &probs, rng.random())?;
        let mut perm: Vec<u32> = (0..n as u32).collect();
        rand::seq::SliceRandom::shuffle(&mut perm[..], &mut rng);
        let src = g.src().iter().map(|&s| perm[s as usize]).collect();
        let dst = g.dst().iter().map(|&d| perm[d as usize]).collect();
        let graph = Graph::try_new(n, src, dst)?;
        let mut labels = vec![0usize; n];
        for (v, &b) in block.iter().enumerate() {
            labels[perm[v] as usize] = b;
        }
        let means: Vec<Vec<f64>> = (0..c)
            .map(|_| {
                let u: Vec<f64> = (0..f).map(|_| normal(&mut rng)).collect();
                let norm = u
                    .iter()
                    .map(|x| x * x)
                    .sum::<f64>()
                    .sqrt()
                    .max(f64::MIN_POSITIVE);
                u.into_iter()
                    .map(|x| self.feature_signal * x / norm)
                    .collect()
            })
            .collect();
        let features = Array2::from_shape_fn((n, f), |(v, j)| {
            (means[labels[v]][j] + normal(&mut rng)) as f32
        });
        Ok(SyntheticDataset {
            graph,
            features,
            labels,
            num_classes: c,
        })
    }
}

/// The contextual SBM with homophily 0.8: `signal` is the class means' distance from
/// the origin in noise standard deviations. A two-layer GCN separates the classes
/// well for `signal ≈ 1` and `avg_degree ≈ 10`.
///
/// ```
/// let ds = shade_graph::csbm(300, 3, 8, 10.0, 1.0, 42)?;
/// assert_eq!(ds.features.shape(), &[300, 8]);
/// assert!(ds.graph.is_bidirected());
/// assert_eq!(ds.num_classes, 3);
/// # Ok::<(), shade_graph::GraphError>(())
/// ```
pub fn csbm(
    n: usize,
    classes: usize,
    features: usize,
    avg_degree: f64,
    signal: f64,
    seed: u64,
) -> GraphResult<SyntheticDataset> {
    Csbm {
        avg_degree,
        feature_signal: signal,
        seed,
        ..Csbm::new(n, classes, features)
    }
    .generate()
}

fn check_points(points: &ArrayView2<'_, f64>) -> GraphResult<()> {
    check_num_nodes(points.nrows())?;
    match points.iter().position(|x| !x.is_finite()) {
        None => Ok(()),
        Some(p) => Err(GraphError::NonFinite {
            what: "points".into(),
            position: p,
            value: points.iter().nth(p).copied().unwrap_or(f64::NAN),
        }),
    }
}

fn sq_dist(points: &ArrayView2<'_, f64>, i: usize, j: usize) -> f64 {
    points
        .row(i)
        .iter()
        .zip(points.row(j))
        .map(|(a, b)| (a - b) * (a - b))
        .sum()
}

/// For every point `i` (a row of `points`), edges `j -> i` from its `k` nearest points
/// (Euclidean; ties broken by index; fewer if there are fewer points), as PyG's
/// `knn_graph`. `self_loops` counts a point as its own neighbour. Brute force, O(n²).
pub fn knn_graph(points: ArrayView2<'_, f64>, k: usize, self_loops: bool) -> GraphResult<Graph> {
    check_points(&points)?;
    let n = points.nrows();
    let (mut src, mut dst) = (Vec::new(), Vec::new());
    let mut cand: Vec<(f64, u32)> = Vec::with_capacity(n);
    for i in 0..n {
        cand.clear();
        cand.extend(
            (0..n)
                .filter(|&j| self_loops || j != i)
                .map(|j| (sq_dist(&points, i, j), j as u32)),
        );
        let kk = k.min(cand.len());
        if kk == 0 {
            continue;
        }
        cand.select_nth_unstable_by(kk - 1, |a, b| a.partial_cmp(b).expect("finite"));
        let mut near = cand[..kk].to_vec();
        near.sort_unstable_by(|a, b| a.partial_cmp(b).expect("finite"));
        for (_, j) in near {
            src.push(j);
            dst.push(i as u32);
        }
    }
    Graph::try_new(n, src, dst)
}

/// Edges `j -> i` between points at Euclidean distance at most `r`, keeping at most
/// `max_neighbors` nearest per point (all if `None`). Brute force, O(n²).
pub fn radius_graph(
    points: ArrayView2<'_, f64>,
    r: f64,
    self_loops: bool,
    max_neighbors: Option<usize>,
) -> GraphResult<Graph> {
    check_points(&points)?;
    if r.is_nan() || r < 0.0 {
        return Err(GraphError::param("r", r, "a radius >= 0"));
    }
    let n = points.nrows();
    let (mut src, mut dst) = (Vec::new(), Vec::new());
    for i in 0..n {
        let mut near: Vec<(f64, u32)> = (0..n)
            .filter(|&j| self_loops || j != i)
            .map(|j| (sq_dist(&points, i, j), j as u32))
            .filter(|&(d, _)| d <= r * r)
            .collect();
        near.sort_unstable_by(|a, b| a.partial_cmp(b).expect("finite"));
        near.truncate(max_neighbors.unwrap_or(usize::MAX));
        for (_, j) in near {
            src.push(j);
            dst.push(i as u32);
        }
    }
    Graph::try_new(n, src, dst)
}

/// Julia's `sprand(n, n, p)` read as an adjacency matrix: each of the `n²` entries
/// (diagonal included) is an edge `row -> col` with probability `p`, weighted by a
/// uniform value in `[0, 1)`. Edges come in row-major order.
pub fn sprand(n: usize, p: f64, seed: u64) -> GraphResult<Graph> {
    check_num_nodes(n)?;
    check_p("p", p)?;
    let mut rng = StdRng::seed_from_u64(seed);
    let (mut src, mut dst, mut pos) = (Vec::new(), Vec::new(), Vec::new());
    let nn = n as u64;
    let total = nn.checked_mul(nn).ok_or(GraphError::TooLarge {
        what: "sprand n".into(),
        found: nn,
        max: u32::MAX as u64,
    })?;
    bernoulli_indices(total, p, &mut rng, |k| pos.push(k));
    for k in pos {
        src.push((k / nn) as u32);
        dst.push((k % nn) as u32);
    }
    let w = (0..src.len()).map(|_| rng.random::<f64>()).collect();
    Graph::try_new(n, src, dst)?.with_weights(w)
}
