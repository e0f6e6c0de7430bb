//! Shared helpers for shade's criterion benches: problem generators and work counts.
//!
//! The benches themselves live in `benches/benches/`; `cargo xtask bench` runs them
//! and writes `docs/benchmarks.md` from criterion's estimates. [`peer_data`] generates
//! the data that the peer scripts in `benches/peers/` generate identically, and
//! [`gradbench`] is the GradBench tool behind the `shade-gradbench` binary.

pub mod gradbench;
pub mod measure;
pub mod peer_data;
pub mod rosenbrock;
pub mod sin_loss;
pub mod small;

use ndarray::Array2;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use shade_autodiff::tensor::SparseMatrix;

/// Builds rayon's global pool with the calling thread as one of its workers
/// (`ThreadPoolBuilder::use_current_thread`; `RAYON_NUM_THREADS` threads, else one per
/// core), once per process, before the first kernel runs. The tensor layer's splits then
/// cost a work-stealing `join` instead of a hand-off and a sleep of the calling thread
/// (see `shade_autodiff`'s small-op rule): Cora's GAT step with dense features on two
/// threads went from 14.3 ms to 10.1 ms. Every bench that runs the tensor layer calls
/// it first; a pool already built (by an earlier call) is kept.
pub fn pool() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Only fails if the global pool already exists, which then serves as it is.
        let _ = rayon::ThreadPoolBuilder::new()
            .use_current_thread()
            .build_global();
    });
}

fn below(rng: &mut StdRng, n: usize) -> usize {
    ((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * n as f64) as usize % n.max(1)
}

fn unit(rng: &mut StdRng) -> f32 {
    ((rng.next_u64() >> 40) as f32 / (1u32 << 24) as f32) * 2.0 - 1.0
}

/// A dense `rows × cols` matrix with entries in `[-1, 1)`, from a fixed seed.
pub fn random_dense(rows: usize, cols: usize, seed: u64) -> Array2<f32> {
    let mut rng = StdRng::seed_from_u64(seed);
    Array2::from_shape_simple_fn((rows, cols), || unit(&mut rng))
}

/// Bytes moved by `A · X` for CSR `A` and `f` dense columns: indices and values of `A`,
/// one dense row read per nonzero, and the output written.
pub fn spmm_bytes(a: &SparseMatrix<f32>, f: usize) -> u64 {
    let nnz = a.nnz() as u64;
    let e = std::mem::size_of::<f32>() as u64;
    let idx = std::mem::size_of::<usize>() as u64;
    nnz * (idx + e) + nnz * f as u64 * e + (a.rows() * f) as u64 * e
}

/// A Cora-sized node-classification problem (random graph, fixed seed): the constants
/// of one GCN training step.
#[derive(Debug)]
pub struct CoraLike {
    /// Symmetrically normalised adjacency with self loops, `D^-1/2 (A + I) D^-1/2`.
    pub adj: SparseMatrix<f32>,
    /// Sparse bag-of-words features, row-normalised.
    pub features: SparseMatrix<f32>,
    /// A class per node.
    pub labels: Vec<usize>,
    /// The training nodes.
    pub train: Vec<usize>,
    /// Number of classes.
    pub classes: usize,
}

impl CoraLike {
    /// 2708 nodes, 10556 directed edges (5278 undirected pairs) plus self loops, 1433
    /// features with 49216 nonzeros, 7 classes, 140 training nodes.
    pub fn new(seed: u64) -> Self {
        Self::with_sizes(2708, 5278, 1433, 49216, 7, 140, seed)
    }

    /// A problem of the given sizes.
    pub fn with_sizes(
        nodes: usize,
        pairs: usize,
        feats: usize,
        feat_nnz: usize,
        classes: usize,
        train: usize,
        seed: u64,
    ) -> Self {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut edges = std::collections::BTreeSet::new();
        while edges.len() < 2 * pairs {
            let (u, v) = (below(&mut rng, nodes), below(&mut rng, nodes));
            if u != v && !edges.contains(&(u, v)) {
                edges.insert((u, v));
                edges.insert((v, u));
            }
        }
        for i in 0..nodes {
            edges.insert((i, i));
        }
        let mut deg = vec![0f32; nodes];
        edges.iter().for_each(|&(u, _)| deg[u] += 1.0);
        let mut indptr = vec![0usize; nodes + 1];
        let mut indices = Vec::with_capacity(edges.len());
        let mut data = Vec::with_capacity(edges.len());
        for &(u, v) in &edges {
            indptr[u + 1] += 1;
            indices.push(v);
            data.push(1.0 / (deg[u] * deg[v]).sqrt());
        }
        for i in 0..nodes {
            indptr[i + 1] += indptr[i];
        }
        let adj =
            SparseMatrix::try_from_csr((nodes, nodes), indptr, indices, data).expect("valid CSR");
        let per_row = feat_nnz / nodes;
        let extra = feat_nnz % nodes;
        let mut ip = vec![0usize];
        let mut ind = Vec::with_capacity(feat_nnz);
        let mut val = Vec::with_capacity(feat_nnz);
        let mut row = std::collections::BTreeSet::new();
        for r in 0..nodes {
            row.clear();
            let want = per_row + usize::from(r < extra);
            while row.len() < want {
                row.insert(below(&mut rng, feats));
            }
            ind.extend(row.iter().copied());
            val.extend(row.iter().map(|_| 1.0 / want as f32));
            ip.push(ind.len());
        }
        let features = SparseMatrix::try_from_csr((nodes, feats), ip, ind, val).expect("valid CSR");
        let labels = (0..nodes).map(|_| below(&mut rng, classes)).collect();
        CoraLike {
            adj,
            features,
            labels,
            train: (0..train).collect(),
            classes,
        }
    }
}
