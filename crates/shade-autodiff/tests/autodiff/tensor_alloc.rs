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
    let mut tri = sprs::TriMat::new((n, n));
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
