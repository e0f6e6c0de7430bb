//! Gradient checks for matmul, shape operations, reductions and softmax.

use crate::check::{arr, cases, check_op, mat, no_near_ties};
use ndarray::ArrayD;
use proptest::prelude::*;

fn matmul_pair() -> impl Strategy<Value = (ArrayD<f64>, ArrayD<f64>)> {
    (1..5usize, 1..5usize, 1..5usize)
        .prop_flat_map(|(m, k, n)| (arr(vec![m, k], -2.0, 2.0), arr(vec![k, n], -2.0, 2.0)))
}

fn batched_pair() -> impl Strategy<Value = (ArrayD<f64>, ArrayD<f64>)> {
    (1..3usize, 1..4usize, 1..4usize, 1..4usize, any::<bool>()).prop_flat_map(
        |(b, m, k, n, shared)| {
            let bs = if shared { vec![k, n] } else { vec![b, k, n] };
            (arr(vec![b, m, k], -2.0, 2.0), arr(bs, -2.0, 2.0))
        },
    )
}

/// `x` `[N, in]`, `w` `[out, in]` and a bias `[out]` or `[1, out]`.
fn linear_args() -> impl Strategy<Value = (ArrayD<f64>, ArrayD<f64>, ArrayD<f64>)> {
    (1..6usize, 1..5usize, 1..6usize, any::<bool>()).prop_flat_map(|(n, i, o, row)| {
        let bs = if row { vec![1, o] } else { vec![o] };
        (
            arr(vec![n, i], -2.0, 2.0),
            arr(vec![o, i], -2.0, 2.0),
            arr(bs, -2.0, 2.0),
        )
    })
}

/// A value with 1 to 3 axes of size 1..4, and an axis of it.
fn with_axis() -> impl Strategy<Value = (ArrayD<f64>, usize)> {
    prop::collection::vec(1..4usize, 1..=3).prop_flat_map(|s| {
        let nd = s.len();
        (arr(s, -3.0, 3.0), 0..nd)
    })
}

proptest! {
    #![proptest_config(cases(64))]

    #[test]
    fn matmul((a, b) in matmul_pair(), seed in any::<u64>()) {
        check_op(&[a, b], seed, |t, v| t.matmul(v[0], v[1]))?;
    }

    #[test]
    fn matmul_batched((a, b) in batched_pair(), seed in any::<u64>()) {
        check_op(&[a, b], seed, |t, v| t.matmul(v[0], v[1]))?;
    }

    #[test]
    fn linear_with_bias((x, w, b) in linear_args(), seed in any::<u64>()) {
        check_op(&[x, w, b], seed, |t, v| t.linear(v[0], v[1], Some(v[2])))?;
    }

    #[test]
    fn linear_without_bias((x, w, _) in linear_args(), seed in any::<u64>()) {
        check_op(&[x, w], seed, |t, v| t.linear(v[0], v[1], None))?;
    }

    #[test]
    fn transpose((a, _) in with_axis(), seed in any::<u64>()) {
        check_op(&[a], seed, |t, v| t.transpose(v[0]))?;
    }

    #[test]
    fn reshape(a in mat(4), seed in any::<u64>()) {
        let n = a.len();
        check_op(&[a], seed, move |t, v| t.reshape(v[0], &[1, n, 1]))?;
    }

    #[test]
    fn narrow((a, ax) in with_axis(), s in 0..3usize, seed in any::<u64>()) {
        let n = a.shape()[ax];
        let start = s.min(n);
        let len = (n - start).min(2);
        check_op(&[a], seed, move |t, v| t.narrow(v[0], ax, start, len))?;
    }

    #[test]
    fn concat((a, ax) in with_axis(), extra in 0..3usize, seed in any::<u64>()) {
        let mut s = a.shape().to_vec();
        s[ax] = extra;
        let b = a.mapv(|x| x * 0.5 + 1.0);
        let c = ArrayD::from_shape_fn(s, |i| ndarray::Dimension::slice(&i).iter().sum::<usize>() as f64 * 0.3 - 0.2);
        check_op(&[a, b, c], seed, move |t, v| t.concat(&[v[0], v[1], v[2], v[0]], ax))?;
    }

    #[test]
    fn stack((a, ax) in with_axis(), seed in any::<u64>()) {
        let b = a.mapv(|x| x.sin());
        let axis = ax + 1;
        check_op(&[a, b], seed, move |t, v| t.stack(&[v[0], v[1], v[0]], axis))?;
    }

    #[test]
    fn sum_all((a, _) in with_axis(), seed in any::<u64>()) {
        check_op(&[a], seed, |t, v| t.sum(v[0]))?;
    }

    #[test]
    fn sum_axis((a, ax) in with_axis(), seed in any::<u64>()) {
        check_op(&[a], seed, move |t, v| t.sum_axis(v[0], ax))?;
    }

    #[test]
    fn mean_all((a, _) in with_axis(), seed in any::<u64>()) {
        check_op(&[a], seed, |t, v| t.mean(v[0]))?;
    }

    #[test]
    fn mean_axis((a, ax) in with_axis(), seed in any::<u64>()) {
        check_op(&[a], seed, move |t, v| t.mean_axis(v[0], ax))?;
    }

    #[test]
    fn max_all((a, _) in with_axis(), seed in any::<u64>()) {
        prop_assume!(no_near_ties(&a, None));
        check_op(&[a], seed, |t, v| t.max(v[0]))?;
    }

    #[test]
    fn max_axis((a, ax) in with_axis(), seed in any::<u64>()) {
        prop_assume!(no_near_ties(&a, Some(ax)));
        check_op(&[a], seed, move |t, v| t.max_axis(v[0], ax))?;
    }

    #[test]
    fn min_all((a, _) in with_axis(), seed in any::<u64>()) {
        prop_assume!(no_near_ties(&a, None));
        check_op(&[a], seed, |t, v| t.min(v[0]))?;
    }

    #[test]
    fn min_axis((a, ax) in with_axis(), seed in any::<u64>()) {
        prop_assume!(no_near_ties(&a, Some(ax)));
        check_op(&[a], seed, move |t, v| t.min_axis(v[0], ax))?;
    }

    #[test]
    fn logsumexp((a, ax) in with_axis(), seed in any::<u64>()) {
        check_op(&[a], seed, move |t, v| t.logsumexp(v[0], ax))?;
    }

    #[test]
    fn norm((a, _) in with_axis(), seed in any::<u64>()) {
        check_op(&[a], seed, |t, v| t.norm(v[0]))?;
    }

    #[test]
    fn softmax((a, ax) in with_axis(), seed in any::<u64>()) {
        check_op(&[a], seed, move |t, v| t.softmax(v[0], ax))?;
    }

    #[test]
    fn log_softmax((a, ax) in with_axis(), seed in any::<u64>()) {
        check_op(&[a], seed, move |t, v| t.log_softmax(v[0], ax))?;
    }
}

#[test]
fn values_match_dense_references() {
    use ndarray::{Array2, array};
    use shade_autodiff::Const;
    use shade_autodiff::tensor::{self, TapeBuffers};
    let a = array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
    let b = array![[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]];
    let mut bufs = TapeBuffers::new();
    let c = tensor::value(
        &mut bufs,
        |t, (a, b)| t.matmul(a, b),
        (Const(&a), Const(&b)),
    )
    .unwrap();
    assert_eq!(c, a.dot(&b).into_dyn());
    let m = tensor::value(&mut bufs, |t, (a,)| t.max_axis(a, 1), (Const(&a),)).unwrap();
    assert_eq!(m.as_slice().unwrap(), &[3.0, 6.0]);
    let s = tensor::value(&mut bufs, |t, (a,)| t.softmax(a, 1), (Const(&a),)).unwrap();
    let e: Array2<f64> = a.mapv(f64::exp);
    let z = e.sum_axis(ndarray::Axis(1)).insert_axis(ndarray::Axis(1));
    assert!((s - (e / z).into_dyn()).iter().all(|d| d.abs() < 1e-15));
    let l = tensor::value(&mut bufs, |t, (a,)| t.logsumexp(a, 0), (Const(&a),)).unwrap();
    assert!((l[[0]] - (1f64.exp() + 4f64.exp()).ln()).abs() < 1e-14);
}

#[test]
fn max_ties_send_the_adjoint_to_the_first() {
    use ndarray::{Array1, array};
    use shade_autodiff::Duplicated;
    use shade_autodiff::tensor::{self, TapeBuffers};
    let a = array![1.0, 3.0, 3.0, 2.0];
    let mut da = Array1::zeros(4);
    let mut bufs = TapeBuffers::new();
    let y = tensor::gradient(&mut bufs, |t, (a,)| t.max(a), (Duplicated(&a, &mut da),)).unwrap();
    assert_eq!(y, 3.0);
    assert_eq!(da, array![0.0, 1.0, 0.0, 0.0]);
}

#[test]
fn shape_errors_are_coded() {
    use ndarray::Array2;
    use shade_autodiff::Const;
    use shade_autodiff::tensor::{self, TapeBuffers};
    let a = Array2::<f64>::zeros((2, 3));
    let mut bufs = TapeBuffers::new();
    let e = tensor::value(&mut bufs, |t, (a,)| t.matmul(a, a), (Const(&a),)).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0110");
    assert_eq!(
        e.to_string(),
        "`matmul` cannot combine shapes [2, 3] and [2, 3]"
    );
    let e = tensor::value(&mut bufs, |t, (a,)| t.sum_axis(a, 2), (Const(&a),)).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0112");
    let e = tensor::value(&mut bufs, |t, (a,)| t.reshape(a, &[5]), (Const(&a),)).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0110");
    let e = tensor::value(&mut bufs, |t, (a,)| t.narrow(a, 1, 2, 2), (Const(&a),)).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0114");
    let z = Array2::<f64>::zeros((0, 3));
    let e = tensor::value(&mut bufs, |t, (z,)| t.max(z), (Const(&z),)).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0114");
}

/// `linear` is `x · wᵀ + b` by its parts, below and above the small-product size (the
/// weight read by its strides on both paths), in `f32`; and its shape errors name
/// both shapes.
#[test]
fn linear_equals_matmul_of_the_transpose_plus_bias() {
    use shade_autodiff::Const;
    use shade_autodiff::tensor::{self, TapeBuffers};
    for (n, i, o) in [(3, 2, 5), (100, 50, 100), (7, 64, 40)] {
        let x = ArrayD::from_shape_fn(ndarray::IxDyn(&[n, i]), |d| {
            ((d[0] * 7 + d[1] * 3) % 11) as f32 * 0.1 - 0.5
        });
        let w = ArrayD::from_shape_fn(ndarray::IxDyn(&[o, i]), |d| {
            ((d[0] * 5 + d[1]) % 13) as f32 * 0.05 - 0.3
        });
        let b = ArrayD::from_shape_fn(ndarray::IxDyn(&[o]), |d| d[0] as f32 * 0.25);
        let mut bufs = TapeBuffers::new();
        let fused = tensor::value(
            &mut bufs,
            |t, (x, w, b)| t.linear(x, w, Some(b)),
            (Const(&x), Const(&w), Const(&b)),
        )
        .unwrap();
        let parts = tensor::value(
            &mut bufs,
            |t, (x, w, b)| {
                let wt = t.transpose(w)?;
                let y = t.matmul(x, wt)?;
                t.add(y, b)
            },
            (Const(&x), Const(&w), Const(&b)),
        )
        .unwrap();
        let err = (&fused - &parts).iter().fold(0.0f32, |e, d| e.max(d.abs()));
        assert!(err <= 1e-5, "{n}×{i}×{o}: {err}");
    }
    let (x, w) = (
        ArrayD::<f64>::zeros(ndarray::IxDyn(&[2, 3])),
        ArrayD::<f64>::zeros(ndarray::IxDyn(&[4, 2])),
    );
    let mut bufs = TapeBuffers::new();
    let e = tensor::value(
        &mut bufs,
        |t, (x, w)| t.linear(x, w, None),
        (Const(&x), Const(&w)),
    )
    .unwrap_err();
    assert_eq!(e.code(), "SHADE-E0110");
    assert!(
        e.to_string().contains("[2, 3]") && e.to_string().contains("[4, 2]"),
        "{e}"
    );
    let (w, b) = (
        ArrayD::<f64>::zeros(ndarray::IxDyn(&[4, 3])),
        ArrayD::<f64>::zeros(ndarray::IxDyn(&[3])),
    );
    let e = tensor::value(
        &mut bufs,
        |t, (x, w, b)| t.linear(x, w, Some(b)),
        (Const(&x), Const(&w), Const(&b)),
    )
    .unwrap_err();
    assert_eq!(e.code(), "SHADE-E0110");
}

/// `linear` on inputs a user gets wrong or leaves empty: a 1-D `x` and a 3-D `w` are
/// coded shape errors naming the shapes, no panic; zero rows and zero outputs give
/// empty results of the right shape, and their gradients are empty or zero.
#[test]
fn linear_refuses_wrong_ranks_and_takes_empty_inputs() {
    use shade_autodiff::tensor::{self, TapeBuffers};
    use shade_autodiff::{Const, Duplicated};
    let mut bufs = TapeBuffers::new();
    let z = |s: &[usize]| ArrayD::<f64>::zeros(ndarray::IxDyn(s));
    for (x, w) in [(z(&[3]), z(&[4, 3])), (z(&[2, 3]), z(&[4, 3, 1]))] {
        let e = tensor::value(
            &mut bufs,
            |t, (x, w)| t.linear(x, w, None),
            (Const(&x), Const(&w)),
        )
        .unwrap_err();
        assert_eq!(e.code(), "SHADE-E0110", "{e}");
        let (xs, ws) = (format!("{:?}", x.shape()), format!("{:?}", w.shape()));
        assert!(
            e.to_string().contains(&xs) && e.to_string().contains(&ws),
            "{e}"
        );
    }
    for (n, o) in [(0, 4), (2, 0)] {
        let (x, w, b) = (
            z(&[n, 3]),
            z(&[o, 3]),
            ArrayD::from_elem(ndarray::IxDyn(&[o]), 1.0),
        );
        let y = tensor::value(
            &mut bufs,
            |t, (x, w, b)| t.linear(x, w, Some(b)),
            (Const(&x), Const(&w), Const(&b)),
        )
        .unwrap();
        assert_eq!(y.shape(), &[n, o]);
        let (mut dw, mut db) = (z(&[o, 3]), z(&[o]));
        tensor::gradient(
            &mut bufs,
            |t, (x, w, b)| {
                let y = t.linear(x, w, Some(b))?;
                t.sum(y)
            },
            (Const(&x), Duplicated(&w, &mut dw), Duplicated(&b, &mut db)),
        )
        .unwrap();
        assert!(dw.iter().all(|v| *v == 0.0));
        assert!(db.iter().all(|v| *v == n as f64));
    }
}
