//! A warm call of a prepared tensor program allocates nothing: the tape's node
//! storage and every value, adjoint and scratch buffer come from `TapeBuffers`.

use ndarray::{Array1, Array2};
use rand::SeedableRng;
use rand::rngs::StdRng;
use shade_autodiff::tensor::{self, Rows, SparseMatrix, TapeBuffers};
use shade_autodiff::{Const, Duplicated};
use shade_test_support::alloc::count_allocations as counted;

#[test]
fn warm_calls_allocate_nothing() {
    let n = 6;
    let mut tri = sprs::TriMatI::<_, u32>::new((n, n));
    for i in 0..n {
        tri.add_triplet(i, i, 0.5);
        tri.add_triplet(i, (i + 1) % n, 0.25);
    }
    let a = SparseMatrix::new(tri.to_csr());
    let x = Array2::from_shape_fn((n, 4), |(i, j)| (i * 4 + j) as f64 * 0.1 - 1.0);
    let w = Array2::from_shape_fn((4, 3), |(i, j)| (i + j) as f64 * 0.2 - 0.3);
    let b = Array1::from_vec(vec![0.1, -0.2, 0.3]);
    let labels: Vec<usize> = (0..n).map(|i| i % 3).collect();
    let train: Vec<usize> = vec![0, 2, 3];
    let dst: Vec<usize> = (0..n).map(|i| (i * 2) % n).collect();
    let mut dw = Array2::zeros((4, 3));
    let mut db = Array1::zeros(3);
    let mut bufs = TapeBuffers::new();
    let mut rng = StdRng::seed_from_u64(1);
    a.prepare_transpose();

    let run = |dw: &mut Array2<f64>,
               db: &mut Array1<f64>,
               rng: &mut StdRng,
               bufs: &mut TapeBuffers<f64>| {
        tensor::gradient(
            bufs,
            |t, (w, b, x, a, y, tr, d)| {
                let h = t.matmul(x, w)?;
                let h = t.spmm(a, h)?;
                let h = t.add(h, b)?;
                let h = t.relu(h)?;
                let h = t.dropout(h, 0.5, rng, true)?;
                let s = t.segment_softmax(h, d, 6)?;
                let m = t.scatter_max(s, d, 6)?;
                let g = t.index_select(m, d)?;
                let h = t.add(h, g)?;
                let h = t.sub(h, b)?;
                let l = t.log_softmax(h, 1)?;
                let ce = t.nll(l, y, Rows::Index(tr))?;
                let r = t.sum_axis(h, 0)?;
                let r = t.norm(r)?;
                let tot = t.add(ce, r)?;
                t.mean(tot)
            },
            (
                Duplicated(&w, dw),
                Duplicated(&b, db),
                Const(&x),
                Const(&a),
                Const(&labels[..]),
                Const(&train[..]),
                Const(&dst[..]),
            ),
        )
        .unwrap()
    };
    run(&mut dw, &mut db, &mut rng, &mut bufs);
    run(&mut dw, &mut db, &mut rng, &mut bufs);
    let (y, allocs) = counted(|| run(&mut dw, &mut db, &mut rng, &mut bufs));
    assert!(y.is_finite());
    assert_eq!(allocs, 0, "a warm call allocated {allocs} times");
    assert!(bufs.pooled_buffers() > 0);
}

/// `x ↦ 2x` through the custom-rule mechanism: its output is a fresh array each call.
struct Double;

impl tensor::TensorRule<f64> for Double {
    fn name(&self) -> &'static str {
        "double"
    }
    fn forward(
        &self,
        x: &[ndarray::ArrayViewD<'_, f64>],
    ) -> shade_autodiff::AdResult<ndarray::ArrayD<f64>> {
        Ok(x[0].mapv(|v| 2.0 * v))
    }
    fn vjp(
        &self,
        _x: &[ndarray::ArrayViewD<'_, f64>],
        _y: ndarray::ArrayViewD<'_, f64>,
        g: ndarray::ArrayViewD<'_, f64>,
        _input: usize,
        mut dx: tensor::RuleSlot<'_, f64>,
    ) -> shade_autodiff::AdResult<()> {
        dx.view_mut().zip_mut_with(&g, |d, &g| *d += 2.0 * g);
        Ok(())
    }
    fn jvp(
        &self,
        _x: &[ndarray::ArrayViewD<'_, f64>],
        _y: ndarray::ArrayViewD<'_, f64>,
        t: &[Option<ndarray::ArrayViewD<'_, f64>>],
        mut ty: tensor::RuleSlot<'_, f64>,
    ) -> shade_autodiff::AdResult<()> {
        if let Some(t) = &t[0] {
            ty.view_mut().zip_mut_with(t, |o, &t| *o = 2.0 * t);
        }
        Ok(())
    }
}

#[test]
fn custom_outputs_do_not_grow_the_pool() {
    let x = Array2::from_shape_fn((20, 7), |(i, j)| (i as f64) - 0.3 * j as f64);
    let mut dx = Array2::zeros((20, 7));
    let mut bufs = TapeBuffers::new();
    let mut counts = Vec::new();
    for _ in 0..50 {
        dx.fill(0.0);
        let y = tensor::gradient(
            &mut bufs,
            |t, (x,)| {
                let a = t.custom(Double, &[x])?;
                let b = t.custom(Double, &[a])?;
                let c = t.relu(b)?;
                let d = t.custom(Double, &[c])?;
                t.sum(d)
            },
            (Duplicated(&x, &mut dx),),
        )
        .unwrap();
        let want: f64 = x.iter().map(|&v| 8.0 * v.max(0.0)).sum();
        assert!((y - want).abs() < 1e-9);
        let dwant = x.mapv(|v| if v > 0.0 { 8.0 } else { 0.0 });
        assert_eq!(dx, dwant);
        counts.push(bufs.pooled_buffers());
    }
    // The first call starts from an empty pool; from the second on the pool holds the
    // same buffers (the custom outputs, which enter from outside, are never kept).
    assert!(counts[1..].iter().all(|&n| n == counts[1]), "{counts:?}");
    assert!(counts[1] > 0);
}

/// `sum(tanh(x · w) ⊙ 2)`'s gradient with respect to `w` for an `n × k` input.
fn small_program(bufs: &mut TapeBuffers<f64>, n: usize, k: usize) -> f64 {
    let x = Array2::from_shape_fn((n, k), |(i, j)| ((i * k + j) % 7) as f64 * 0.1 - 0.3);
    let w = Array2::from_shape_fn((k, 3), |(i, j)| (i + j) as f64 * 0.05);
    let mut dw = Array2::zeros((k, 3));
    tensor::gradient(
        bufs,
        |t, (w, x)| {
            let h = t.matmul(x, w)?;
            let h = t.tanh(h)?;
            let h = t.scale(h, 2.0)?;
            t.sum(h)
        },
        (Duplicated(&w, &mut dw), Const(&x)),
    )
    .unwrap()
}

#[test]
fn the_pool_keeps_at_rest_what_the_last_call_needed() {
    let mut bufs = TapeBuffers::new();
    small_program(&mut bufs, 2000, 50);
    small_program(&mut bufs, 2000, 50);
    let large = bufs.pooled_bytes();
    // Every value of the large call is 2000 × 3 or larger: 48 kB a buffer.
    assert!(large >= 3 * 2000 * 3 * 8, "{large}");
    small_program(&mut bufs, 10, 4);
    let small = bufs.pooled_bytes();
    // The large buffers fit no request of the small call (size classes) and are dropped
    // at its end; what is left is the small call's few hundred bytes.
    assert!(
        small > 0 && small < 4096,
        "{small} bytes held after the small call"
    );
    let (_, allocs) = counted(|| small_program(&mut bufs, 10, 4));
    // The inputs and the gradient array of the program are allocated by the caller.
    assert!(allocs <= 3, "a warm call allocated {allocs} times");
    assert_eq!(bufs.pooled_bytes(), small);
}

/// A two-layer GCN's constants and parameters over `n` nodes, hidden width `h`, `c`
/// classes.
struct Gcn {
    a: SparseMatrix<f64>,
    x: Array2<f64>,
    labels: Vec<usize>,
    w1: Array2<f64>,
    b1: Array1<f64>,
    w2: Array2<f64>,
    b2: Array1<f64>,
    grads: (Array2<f64>, Array1<f64>, Array2<f64>, Array1<f64>),
}

impl Gcn {
    fn new(n: usize, h: usize, c: usize) -> Self {
        let mut tri = sprs::TriMatI::<_, u32>::new((n, n));
        for i in 0..n {
            tri.add_triplet(i, i, 0.5);
            tri.add_triplet(i, (i + 7) % n, 0.25);
            tri.add_triplet((i + 7) % n, i, 0.25);
        }
        Gcn {
            a: SparseMatrix::new(tri.to_csr()),
            x: Array2::from_shape_fn((n, 8), |(i, j)| ((i * 8 + j) % 11) as f64 * 0.1 - 0.5),
            labels: (0..n).map(|i| i % c).collect(),
            w1: Array2::from_shape_fn((8, h), |(i, j)| (i + j) as f64 * 0.01 - 0.05),
            b1: Array1::from_shape_fn(h, |j| j as f64 * 0.01),
            w2: Array2::from_shape_fn((h, c), |(i, j)| (i * c + j) as f64 * 0.01 - 0.1),
            b2: Array1::zeros(c),
            grads: (
                Array2::zeros((8, h)),
                Array1::zeros(h),
                Array2::zeros((h, c)),
                Array1::zeros(c),
            ),
        }
    }

    /// One step (`Â·(X·W₁) + b₁`, relu, `Â·(H·W₂) + b₂`, cross-entropy): the loss.
    fn step(&mut self, bufs: &mut TapeBuffers<f64>) -> f64 {
        let (dw1, db1, dw2, db2) = &mut self.grads;
        tensor::gradient(
            bufs,
            |t, (w1, b1, w2, b2, x, a, y)| {
                let xw = t.matmul(x, w1)?;
                let z = t.spmm_bias(a, xw, b1)?;
                let r = t.relu(z)?;
                let rw = t.matmul(r, w2)?;
                let z = t.spmm_bias(a, rw, b2)?;
                t.cross_entropy(z, y, Rows::All)
            },
            (
                Duplicated(&self.w1, dw1),
                Duplicated(&self.b1, db1),
                Duplicated(&self.w2, dw2),
                Duplicated(&self.b2, db2),
                Const(&self.x),
                Const(&self.a),
                Const(&self.labels[..]),
            ),
        )
        .unwrap()
    }
}

/// At rest the pool holds one step's buffers, the same after every step: three of
/// `[n, h]` (`X·W₁`, the pre-activation, relu's output; the adjoints of the sweep reuse
/// the first two, freed before it starts, and relu's once passed) and a few of
/// `[n, c]`, not the five `[n, h]` of a tape that keeps every value until the sweep
/// reaches it.
#[test]
fn a_gcn_step_holds_one_steps_buffers() {
    let (n, h, c) = (1000, 16, 4);
    let mut gcn = Gcn::new(n, h, c);
    let mut bufs = TapeBuffers::new();
    let mut held = Vec::new();
    for _ in 0..6 {
        assert!(gcn.step(&mut bufs).is_finite());
        held.push(bufs.pooled_bytes());
    }
    assert!(held.iter().all(|&b| b == held[0]), "{held:?}");
    let wide = n * h * 8;
    let narrow = n * c * 8;
    assert!(held[0] >= 3 * wide, "{held:?}");
    assert!(
        held[0] <= 3 * wide + 4 * narrow + 16 * 1024,
        "{} bytes held: {} buffers of [n, h]",
        held[0],
        held[0] as f64 / wide as f64
    );
    // Below the sizes where the kernels split over threads, a warm step allocates
    // nothing.
    let (mut small, mut bufs) = (Gcn::new(100, h, c), TapeBuffers::new());
    small.step(&mut bufs);
    small.step(&mut bufs);
    let (_, allocs) = counted(|| small.step(&mut bufs));
    assert_eq!(allocs, 0, "a warm step allocated {allocs} times");
}
