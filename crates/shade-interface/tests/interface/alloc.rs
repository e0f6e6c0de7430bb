//! Prepared `AutoShade` calls allocate nothing: gradient, jacobian, pushforward and
//! pullback (`_into` variants, both modes, both function forms, with contexts).

use shade_autodiff::scalar::{Real, shade_fn};
use shade_interface::*;
use shade_test_support::alloc::allocations;

fn loss<S: Real>(x: &[S], w: &[f64], cache: &[S]) -> S {
    let mut acc = cache[0];
    for (i, &xi) in x.iter().enumerate() {
        acc += (xi * w[i % w.len()]).sin() * xi;
    }
    acc + S::dot(x, x)
}

fn field<S: Real>(y: &mut [S], x: &[S], w: &[f64]) {
    let n = x.len();
    for i in 0..y.len() {
        y[i] = x[i % n] * x[(i + 1) % n] * w[0] + x[i % n].exp();
    }
}

#[test]
fn prepared_autoshade_calls_do_not_allocate() {
    // The counter counts.
    assert!(allocations(|| drop(std::hint::black_box(vec![1u8; 3]))) > 0);
    // Small and large enough to need several arena chunks.
    for (n, m) in [(50, 7), (2000, 20)] {
        check(AutoShade::REVERSE, n, m);
        check(AutoShade::FORWARD, n, m);
    }
}

fn check<M: ShadeMode>(backend: AutoShade<M>, n: usize, m: usize) {
    let f = shade_fn!(loss(&[S], &[f64], &[S]));
    let g2 = shade_fn!(field(&mut [S], &[S], &[f64]));
    let x: Vec<f64> = (0..n).map(|i| 0.1 * i as f64 - 2.0).collect();
    let x2: Vec<f64> = x.iter().map(|v| v * 0.5).collect();
    let w = [0.5, 1.5, -0.25];
    let cache = [1.0; 4];
    let dx: Vec<f64> = (0..n).map(|i| (i as f64).cos()).collect();
    let dy: Vec<f64> = (0..m).map(|i| (i as f64).sin()).collect();
    let (mut g, mut j, mut j1, mut y, mut t, mut t1, mut b) = (
        vec![0.0; n],
        vec![0.0; m * n],
        vec![0.0; n],
        vec![0.0; m],
        vec![0.0; m],
        [0.0],
        vec![0.0; 3],
    );
    {
        let name = backend.name();
        let ctx = (Constant(&w[..]), Cache(&cache[..]));
        let mut pg = prepare_gradient(f, &backend, &x2, ctx).unwrap();
        let mut pj = prepare_jacobian_inplace(g2, &y, &backend, &x2, (Constant(&w[..]),)).unwrap();
        let mut pj1 = prepare_jacobian(f, &backend, &x2, ctx).unwrap();
        let mut pf = prepare_pushforward(f, &backend, &x2, ctx).unwrap();
        let mut pf2 =
            prepare_pushforward_inplace(g2, &y, &backend, &x2, (Constant(&w[..]),)).unwrap();
        let mut pb = prepare_pullback(f, &backend, &x2, ctx).unwrap();
        let mut pb2 = prepare_pullback_inplace(g2, &y, &backend, &x2, (Constant(&w[..]),)).unwrap();
        let dxs: Vec<f64> = dx.iter().chain(&dx).chain(&dx).copied().collect();
        let count = allocations(|| {
            for _ in 0..3 {
                pg.gradient_into(&x, ctx, &mut g).unwrap();
                pg.value_and_gradient_into(&x, ctx, &mut g).unwrap();
                pj.value_and_jacobian_into(&x, (Constant(&w[..]),), &mut y, &mut j)
                    .unwrap();
                pj.jacobian_into(&x, (Constant(&w[..]),), &mut j).unwrap();
                pj1.jacobian_into(&x, ctx, &mut j1).unwrap();
                pf.pushforward_into(&x, &dx, ctx, &mut t1).unwrap();
                pf.value_and_pushforward_batch_into(&x, &dxs, ctx, &mut [0.0], &mut b)
                    .unwrap();
                pf2.value_and_pushforward_into(&x, &dx, (Constant(&w[..]),), &mut y, &mut t)
                    .unwrap();
                pb.pullback_into(&x, &[2.0], ctx, &mut g).unwrap();
                pb2.value_and_pullback_into(&x, &dy, (Constant(&w[..]),), &mut y, &mut g)
                    .unwrap();
            }
        });
        assert_eq!(
            count, 0,
            "{name}, n = {n}: prepared calls allocated {count} times"
        );
        // The results are real: the forward and reverse Jacobians agree, and the
        // gradient is the one-argument Jacobian.
        assert_eq!(g.len(), n);
        assert!(
            j.iter().all(|v| v.is_finite())
                && j1
                    .iter()
                    .zip(&pg.gradient(&x, ctx).unwrap())
                    .all(|(a, b)| (a - b).abs() < 1e-12)
        );
    }
}

/// `sum(tanh(X · W))`.
fn tensor_loss<'t>(
    t: &mut shade_autodiff::tensor::Tape<'t, f64>,
    (w, &(x,)): (
        shade_autodiff::tensor::Var,
        &'t (shade_autodiff::tensor::Var,),
    ),
) -> shade_autodiff::AdResult<shade_autodiff::tensor::Var> {
    let h = t.matmul(x, w)?;
    let h = t.tanh(h)?;
    t.sum(h)
}

#[test]
fn prepared_tensor_calls_do_not_allocate() {
    use ndarray::{Array2, ArrayD, IxDyn};
    let x = Array2::from_shape_fn((30, 8), |(i, j)| ((i * 8 + j) as f64).sin());
    let w = Array2::from_shape_fn((8, 5), |(i, j)| 0.1 * (i as f64 - j as f64));
    let ctx = (Constant(&x),);
    let mut pg = tensor::prepare_gradient(tensor_loss, &AutoShade::REVERSE, &w, ctx).unwrap();
    let mut pb = tensor::prepare_pullback(tensor_loss, &AutoShade::REVERSE, &w, ctx).unwrap();
    let mut pf = tensor::prepare_pushforward(tensor_loss, &AutoShade::FORWARD, &w, ctx).unwrap();
    let (mut g, mut dx) = (Array2::zeros((8, 5)), Array2::zeros((8, 5)));
    let dy = ArrayD::from_elem(IxDyn(&[]), 2.0);
    let (mut y, mut t) = (ArrayD::zeros(IxDyn(&[])), ArrayD::zeros(IxDyn(&[])));
    let count = allocations(|| {
        for _ in 0..3 {
            pg.value_and_gradient_into(&w, ctx, &mut g).unwrap();
            pb.pullback_into(&w, &dy, ctx, &mut dx).unwrap();
            pf.value_and_pushforward_into(&w, &w, ctx, &mut y, &mut t)
                .unwrap();
        }
    });
    assert_eq!(count, 0, "prepared tensor calls allocated {count} times");
    // pullback with seed 2 is twice the gradient; the pushforward along w is <∇f, w>.
    assert!(dx.iter().zip(&g).all(|(a, b)| (a - 2.0 * b).abs() < 1e-12));
    let dot: f64 = g.iter().zip(&w).map(|(a, b)| a * b).sum();
    assert!((t.iter().next().unwrap() - dot).abs() < 1e-12);
}
