//! The workloads of `cargo xtask bench --peers`: data, model, peers, floors. The same
//! data, sizes and model on every side; the peer scripts in `benches/peers/` implement
//! the workloads named here (a test checks that each named script mentions its ids).

/// Multiply-adds and bytes that one run of a variant cannot avoid.
pub(super) struct Floor {
    pub(super) variant: &'static str,
    pub(super) macs: f64,
    pub(super) bytes: f64,
}

/// One workload: the same data, sizes and model on every side.
pub(super) struct Workload {
    pub(super) id: &'static str,
    pub(super) title: &'static str,
    pub(super) about: &'static str,
    /// The criterion bench target holding `peers/<id>/...`.
    pub(super) bench: &'static str,
    pub(super) variants: &'static [&'static str],
    pub(super) peers: &'static [&'static str],
    pub(super) floors: &'static [Floor],
    /// shade's implementations measured on this workload: `shade` (criterion function
    /// `<variant>`) and, where the compile-time engine applies, `shade-compiled`
    /// (criterion function `compiled-<variant>`).
    pub(super) shade: &'static [&'static str],
    /// `(implementation, variant, why)`: what shade does not run, and why.
    pub(super) shade_missing: &'static [(&'static str, &'static str, &'static str)],
    /// Whether peak resident memory is compared (one process per workload and side).
    pub(super) memory: bool,
    /// The element type of the arithmetic, `"f32"` or `"f64"`: its multiply-adds are
    /// timed at the peak rate `floors/fma-<precision>`.
    pub(super) precision: &'static str,
    /// `(a, b)`: the ratio `a ÷ b` is shown for every implementation.
    pub(super) pair: Option<(&'static str, &'static str)>,
    /// Bytes one run moves (shown as GB/s and as a fraction of the copy bandwidth).
    pub(super) bandwidth_bytes: Option<f64>,
    /// Where shade's time goes, from `perf record` of the bench (empty: not profiled).
    pub(super) profile: &'static str,
}

const M: f64 = 1e6;

/// shade's one implementation of a workload (the tensor layer or the tape).
const SHADE: &[&str] = &["shade"];

/// Both engines: the run-time tape (`shade`) and the compile-time engine
/// (`shade-compiled`).
const BOTH_ENGINES: &[&str] = &["shade", "shade-compiled"];

pub(super) const WORKLOADS: &[Workload] = &[
    Workload {
        id: "cora_gcn",
        title: "Cora, 2-layer GCN: training step and inference",
        about: "Real Cora (2,708 nodes, 10,556 edges, 1,433 features, 7 classes, 140 training \
                nodes), GCN 1433 → 16 → 7 with relu and dropout 0.5 on the hidden layer, \
                cross-entropy, Adam (lr 0.01, weight decay 5e-4 on the first layer), f32. \
                shade: shade-gnn's `single_train_step` with sparse features; PyG: \
                `GCNConv(cached=True)` with dense features; JAX: jit, `segment_sum`, optax \
                Adam, dense features. `step` = forward + backward + Adam; `infer` = forward \
                in evaluation mode. `step-dense` / `infer-dense`: shade on the same features \
                held dense (`Features::dense`, a 2708 × 1433 array), as the peers hold them \
                (the peers' columns repeat their `step` / `infer`).",
        bench: "gnn_step",
        variants: &["step", "infer", "step-dense", "infer-dense"],
        peers: &["pyg", "jax"],
        floors: &[
            Floor {
                variant: "step",
                macs: 3.0 * M,
                bytes: 2.0 * M,
            },
            Floor {
                variant: "infer",
                macs: 1.4 * M,
                bytes: 1.0 * M,
            },
            // `X·W₁` (2708 × 1433 × 16 = 62.1 M) forward and `Xᵀ·G` backward, `X`
            // (15.5 MB) read by each.
            Floor {
                variant: "step-dense",
                macs: 126.0 * M,
                bytes: 33.0 * M,
            },
            Floor {
                variant: "infer-dense",
                macs: 63.0 * M,
                bytes: 16.5 * M,
            },
        ],
        shade: SHADE,
        shade_missing: &[],
        memory: false,
        precision: "f32",
        pair: Some(("step", "infer")),
        bandwidth_bytes: None,
        profile: "2026-12-02, `step-dense`, 1 thread (`perf record -e cpu-clock`): the reverse \
                  sweep's `Xᵀ·G` (2708 × 1433 × 16) 40 %, the forward `X·W₁` 30 % (both in the \
                  narrow-product kernel, `tensor/matmul/skinny.rs`, each at 40–49 G \
                  multiply-adds per second when timed alone, reading `X` at 10–12 GB/s on one \
                  core); the finiteness check of the features now runs once while they do not \
                  change (`shade_gnn::Checked`). `step` (sparse features, 98.7 % of Cora's \
                  features are zeros), 2026-12-07, 1 thread (`perf record` of `small_profile \
                  cora-step`, Intel Xeon with AVX-512; each kernel also timed alone): the \
                  sparse row kernel 57 % (`X·W₁ᵀ` ~72 µs and `Xᵀ·G` ~64 µs, 49 216 nonzeros \
                  × 16 each; the four `Â` products of 13 264 nonzeros × 16 or 7 ~40 µs each, \
                  short rows, where a C model of the same loop runs 11–17 µs hot in cache), \
                  `H·W₂` and `G·W₂` 7 % (~20 µs each), `Hᵀ·G` 4 %, Adam 4 %, the weight's \
                  transposes 3 %. This session's gains, the same bits: arrays on a 64-byte \
                  line (a 16-wide row per nonzero then loads one line, not two), the tail \
                  strip's padded rows prepared once per product (the 7-wide `Â` product 49 \
                  -> 31 µs alone), rows of the narrow products as subslices (no view per \
                  tile), one vector store per row of the 7-wide output layer, Adam in 16 \
                  lanes. Measured no faster: two rows in lockstep (482 against 479 µs a \
                  step), prefetching the dense rows of small operands (534 against 438 µs), \
                  copying a dense operand onto a line per product. No kernel of the step \
                  reaches the split threshold (2^20), so 2 threads run it on one.",
    },
    Workload {
        id: "cora_gat",
        title: "Cora, 2-layer GAT (8 heads × 8): training step and inference",
        about: "Real Cora as above, GAT 1433 → 8 heads × 8 (elu, dropout 0.6 on features \
                and attention) → 7 (one head, averaged), Adam (lr 0.005, weight decay 5e-4), \
                f32. PyG: `GATConv(heads=8, dropout=0.6)`, dense features. `step-dense` / \
                `infer-dense`: shade on dense features too (the peer's columns repeat its \
                `step` / `infer`).",
        bench: "gnn_step",
        variants: &["step", "infer", "step-dense", "infer-dense"],
        peers: &["pyg"],
        floors: &[
            Floor {
                variant: "step",
                macs: 12.0 * M,
                bytes: 5.0 * M,
            },
            Floor {
                variant: "infer",
                macs: 4.5 * M,
                bytes: 2.0 * M,
            },
            // `X·W₁` (2708 × 1433 × 64 = 248 M) forward and `Xᵀ·G` backward.
            Floor {
                variant: "step-dense",
                macs: 505.0 * M,
                bytes: 36.0 * M,
            },
            Floor {
                variant: "infer-dense",
                macs: 253.0 * M,
                bytes: 17.5 * M,
            },
        ],
        shade: SHADE,
        shade_missing: &[],
        memory: false,
        precision: "f32",
        pair: Some(("step", "infer")),
        bandwidth_bytes: None,
        profile: "2026-12-02, `step-dense`, 1 thread (`perf record -e cpu-clock`), after the \
                  attention kernels' rework: `Xᵀ·G` 36 %, `X·W₁` 30 % (2708 × 1433 × 64, the \
                  narrow-product kernel), `memset` 2.7 %; the attention path (COO product \
                  forward and backward 5 %, segment softmax 2 %, the per-head dots 3 %, \
                  dropout 1 %) about 11 % in all; libm's `expm1f` (4.5 % before, the ELU) is \
                  gone, vectorised. `step` (sparse features), callgrind: 58 M instructions \
                  a step, from 89 M. The attention kernels run on one thread; two threads \
                  gained little over one in this session's runs (a loaded machine).",
    },
    Workload {
        id: "policy",
        title: "The founding policy model: one gradient",
        about: "Random directed graph, n = 100, each ordered pair an edge with p = 0.2 (2,001 \
                edges, identical on every side), 2 features per node; GCNConv 2 → 50, tanh, \
                GCNConv 50 → 50, relu, Dense 50 → 100, sigmoid; loss = mean of the outputs; \
                gradient with respect to every parameter, no optimiser; f32. PyTorch \
                (`torch`): the same model with a dense 100 × 100 normalised adjacency.",
        bench: "policy",
        variants: &["gradient"],
        peers: &["pyg", "torch", "jax"],
        floors: &[Floor {
            variant: "gradient",
            macs: 2.7 * M,
            bytes: 0.2 * M,
        }],
        shade: SHADE,
        shade_missing: &[],
        memory: false,
        precision: "f32",
        pair: None,
        bandwidth_bytes: None,
        profile: "2026-12-07, 1 thread (`perf record --call-graph dwarf`, Intel Xeon with \
                  AVX-512): the narrow-product kernel's `A·B` 37 % (its register tiles 21 %, at \
                  about 65 % of the multiply-add units' rate, the rest packing `B` and storing \
                  tiles) and `Aᵀ·G` 15 %, the sparse row kernel 14 %, the activations 11 %, \
                  the tape's own work (pool, views, records) most of the rest. No kernel of \
                  this model is large enough to split, and handing the weights' gradients to \
                  the second thread as tasks measured no faster (`tensor/par.rs`), so 2 \
                  threads run as 1. What would close it: fewer, fused operations (bias and \
                  activation in the product's store).",
    },
    Workload {
        id: "synth_gcn_100k",
        title: "Synthetic graph, 100k nodes / 1M edges: GCN 128 → 64 → 16 training step",
        about: "Random edges (identical on every side), dense features 128 per node, labels \
                in 16 classes, GCN 128 → 64 → 16 with relu, no dropout, cross-entropy over \
                every node, Adam (lr 0.01), f32. `torch`: the adjacency as \
                `torch.sparse_csr_tensor`. Peak resident memory is read from the process \
                (`/proc/self/status` VmHWM), one process per side and size; `base` is the \
                resident size before the data were built (for the peers: after importing \
                the library, ~250-500 MB of it), so `peak − base` is what the workload \
                itself needs.",
        bench: "synth_gcn",
        variants: &["step"],
        peers: &["torch", "pyg", "jax"],
        floors: &[Floor {
            variant: "step",
            macs: 2.0e3 * M,
            bytes: 300.0 * M,
        }],
        shade: SHADE,
        shade_missing: &[],
        memory: true,
        precision: "f32",
        pair: None,
        bandwidth_bytes: None,
        profile: "2026-12-02, 1 thread (`perf record -e cpu-clock` of `gcn_large 100000 \
                  1000000 8 1`, set-up included): the sparse products `Â·H` and `Âᵀ·G` 42 %, \
                  the narrow dense products 22 % (`nn` 14 %, `tn` 9 %) and their copies \
                  (`memmove`) 4 %, the elementwise and dropout reverse rules 6 %, page faults \
                  2 %, the bias column sums 1.6 % (memory-bound: `G` read once); `memset` \
                  3.1 % → 0.6 %: `linear`'s output and a fresh `dx` are written by the \
                  product (`β = 0`) instead of zero-filled first. What would close it: bias \
                  and relu fused into the sparse product (one `[N, 64]` buffer and pass \
                  fewer), a vectorised `expf` in the cross-entropy.",
    },
    Workload {
        id: "synth_gcn_1m",
        title: "Synthetic graph, 1M nodes / 10M edges: GCN 128 → 64 → 16 training step",
        about: "As above, ten times larger.",
        bench: "synth_gcn",
        variants: &["step"],
        peers: &["torch", "pyg", "jax"],
        floors: &[Floor {
            variant: "step",
            macs: 2.0e4 * M,
            bytes: 3.0e3 * M,
        }],
        shade: SHADE,
        shade_missing: &[],
        memory: true,
        precision: "f32",
        pair: None,
        bandwidth_bytes: None,
        profile: "as for 100k (same kernels, ten times the data).",
    },
    Workload {
        id: "spmm",
        title: "CSR × dense: 100k × 100k with 1M nonzeros times 100k × 64 (f32)",
        about: "The same CSR matrix on every side (10 random columns per row, repeats \
                merged: 999,951 nonzeros). shade: `SparseMatrix::mul_dense_into` (rayon \
                row blocks); `torch`: `torch.mm(sparse_csr, dense)`; SciPy: `csr_matrix @ \
                ndarray` (single-threaded). GB/s counts the bytes that must move: index (8 \
                B) and value (4 B) per nonzero, one dense row (256 B) per nonzero, the \
                output written (25.6 MB).",
        bench: "spmm",
        variants: &["forward"],
        peers: &["torch", "scipy"],
        floors: &[Floor {
            variant: "forward",
            macs: 64.0 * M,
            bytes: 293.6 * M,
        }],
        shade: SHADE,
        shade_missing: &[],
        memory: false,
        precision: "f32",
        pair: None,
        bandwidth_bytes: Some(293_599_412.0),
        profile: "2026-12-01, 1 thread (`perf record -g`): 91 % in the CSR row kernel \
                  (`csr_rows_avx512`), the rest the page faults of the bench's own set-up. \
                  The kernel gathers one 256-byte row of the dense operand per nonzero in \
                  random order: about 12 GB/s, torch's rate, against 18 GB/s for a copy, \
                  so the gathers' latency bounds it, not the arithmetic. The kernel already \
                  prefetches the rows 32 nonzeros ahead (this operand is 25.6 MB). What \
                  might close the last 4 % at 1 thread (at 2 threads shade is ahead): two \
                  output rows interleaved per core for more gathers in flight, a tuned \
                  prefetch distance, and `u32` column indices (4 bytes less per nonzero).",
    },
    Workload {
        id: "gmm_d10_k25_n1000",
        title: "GMM objective and gradient, d = 10, k = 25, n = 1000",
        about: "GradBench's Gaussian mixture log posterior with a Wishart prior (the `gmm` \
                eval's corrected form of ADBench's objective), f64, the same data and \
                parameters on every side (`GmmProblem::random` from `Lcg::new(1)`, \
                reproduced in `common.py`, whose self-test pins the objective's value on a \
                small problem). `shade`: the generic `Real` function at `f64` and its \
                reverse-mode gradient on a warm `Tape`; `shade-compiled`: the plain `f64` \
                function and the derivative `#[autodiff_reverse]` generates from it (both \
                in `benches/src/gradbench/gmm.rs`, one thread whatever `T`); JAX: jit of \
                the vectorised objective and of its `grad`; PyTorch: the vectorised \
                objective and `backward`.",
        bench: "gmm",
        variants: &["objective", "gradient"],
        peers: &["jax", "torch"],
        floors: &[
            Floor {
                variant: "objective",
                macs: 1.6 * M,
                bytes: 0.1 * M,
            },
            Floor {
                variant: "gradient",
                macs: 4.9 * M,
                bytes: 0.2 * M,
            },
        ],
        shade: BOTH_ENGINES,
        shade_missing: &[],
        memory: false,
        precision: "f64",
        pair: Some(("gradient", "objective")),
        bandwidth_bytes: None,
        profile: "2026-12-01, `shade` (tape), gradient: 780 k records per call (66 MB of tape); \
                  recording the `Real::dot` of each row of `Q (x − μ)` 45 %, the reverse \
                  sweep 30 %, the objective's own records (the centred points) 15 % \
                  (`perf record` of `examples/gmm_ratio`, which also times recording and \
                  sweep apart: 29 ms and 10 ms). `shade-compiled`: gradient ÷ objective \
                  3.4 by CPU time (`perf stat -e task-clock` of `examples/gmm_profile`: \
                  1.0 ms and 3.4 ms per call), 92 % of it in the generated derivative (the \
                  per-point forward and reverse sweeps, inlined into one function) and 4 % \
                  in `exp`. The objective itself is where JAX leads (2×): it batches the \
                  points of a component into one matrix product, where shade runs the \
                  triangular rows of 1 to 10 terms point by point. What would close it: \
                  the compile-time form with the points of a component batched (SIMD \
                  across points) for objective and gradient; for the tape, one fused \
                  record per triangular quadratic form instead of a `dot` per row.",
    },
    Workload {
        id: "gmm_d64_k200_n10000",
        title: "GMM objective and gradient, d = 64, k = 200, n = 10⁴",
        about: "As above at ADBench's large size (the peers hold n × k × d intermediates of \
                1 GB each). shade: the compile-time engine only (bench `gmm_large`), timed \
                as the peers time this workload: one warm-up call, then two timed calls.",
        bench: "gmm_large",
        variants: &["objective", "gradient"],
        peers: &["jax", "torch"],
        floors: &[
            Floor {
                variant: "objective",
                macs: 4.3e3 * M,
                bytes: 5.0 * M,
            },
            Floor {
                variant: "gradient",
                macs: 1.3e4 * M,
                bytes: 10.0 * M,
            },
        ],
        shade: BOTH_ENGINES,
        shade_missing: &[
            (
                "shade",
                "gradient",
                "the run-time tape would record every product of Q (x − μ): about 20 GB \
                 at this size; see `shade-compiled`",
            ),
            (
                "shade",
                "objective",
                "not run: its gradient is not measured (see `shade-compiled`)",
            ),
        ],
        memory: false,
        precision: "f64",
        pair: Some(("gradient", "objective")),
        bandwidth_bytes: None,
        profile: "2026-12-01, `shade-compiled` runs on one thread whatever `T` (the plain `f64` function \
                  and its generated derivative, point by point), where the peers' 2-thread \
                  rows use both cores; the derivative's workspace is about 20 MB (one \
                  point's intermediates at a time). The time is spent as at the small size: \
                  the per-point triangular products `Q (x − μ)` of 1 to 63 terms, where JAX \
                  batches a component's points into one matrix product. The gradient costs \
                  1.7× the objective (the peers 3.4–5.7×), so the gap is the objective's. \
                  What would close it: the points split over threads (each thread its own \
                  shadow, summed at the end) and a component's points batched so that the \
                  triangular products vectorise across points.",
    },
];

/// Criterion benches with internal ratios (no peers), run once.
pub(super) const INTERNAL_BENCHES: &[&str] = &["interface", "sparse_jacobian"];
