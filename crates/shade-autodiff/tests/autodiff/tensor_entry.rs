//! The tensor layer's entry points: activities, accumulation, coded errors.

use ndarray::{Array1, Array2, ArrayD, array};
use shade_autodiff::tensor::{self, TapeBuffers, Var};
use shade_autodiff::{Const, Duplicated, DuplicatedNoNeed};

#[test]
fn gradient_accumulates_and_returns_the_primal() {
    let x = array![1.0, 2.0, 3.0];
    let mut dx = Array1::from_elem(3, 10.0);
    let mut bufs = TapeBuffers::new();
    let y = tensor::gradient(
        &mut bufs,
        |t, (x,)| {
            let s = t.mul(x, x)?;
            t.sum(s)
        },
        (Duplicated(&x, &mut dx),),
    )
    .unwrap();
    assert_eq!(y, 14.0);
    assert_eq!(dx, array![12.0, 14.0, 16.0]);
}

#[test]
fn shadow_in_another_layout_receives_the_same_gradient() {
    let w = array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
    let mut dw_std = Array2::<f64>::zeros((2, 3));
    // A Fortran-order shadow: the adjoint is accumulated aside and added at the end.
    let mut dw_f = Array2::zeros((3, 2)).reversed_axes();
    let mut bufs = TapeBuffers::new();
    for dw in [&mut dw_std, &mut dw_f] {
        tensor::gradient(
            &mut bufs,
            |t, (w,)| {
                let e = t.exp(w)?;
                let s = t.sum_axis(e, 1)?;
                let l = t.ln(s)?;
                t.sum(l)
            },
            (Duplicated(&w, dw),),
        )
        .unwrap();
    }
    assert_eq!(dw_std, dw_f);
    assert!((dw_std.row(0).sum() - 1.0).abs() < 1e-14);
}

#[test]
fn pushforward_reads_shadows_as_tangents() {
    let x = array![[1.0, 2.0], [3.0, 4.0]];
    let mut tx = array![[1.0, 0.0], [0.0, 1.0]];
    let w = array![[0.5], [0.25]];
    let mut bufs = TapeBuffers::new();
    let (y, dy) = tensor::pushforward(
        &mut bufs,
        |t, (x, w)| t.matmul(x, w),
        (DuplicatedNoNeed(&x, &mut tx), Const(&w)),
    )
    .unwrap();
    assert_eq!(y, array![[1.0], [2.5]].into_dyn());
    assert_eq!(dy, array![[0.5], [0.25]].into_dyn());
    let mut yo = ArrayD::zeros(vec![2, 1]);
    let mut dyo = ArrayD::zeros(vec![2, 1]);
    tensor::pushforward_into(
        &mut bufs,
        |t, (x, w)| t.matmul(x, w),
        (Duplicated(&x, &mut tx), Const(&w)),
        &mut yo,
        &mut dyo,
    )
    .unwrap();
    assert_eq!((yo, dyo), (y, dy));
    let mut wrong = ArrayD::zeros(vec![2]);
    let e = tensor::pushforward_into(
        &mut bufs,
        |t, (x, w)| t.matmul(x, w),
        (Duplicated(&x, &mut tx), Const(&w)),
        &mut wrong,
        &mut ArrayD::zeros(vec![2, 1]),
    )
    .unwrap_err();
    assert_eq!(e.code(), "SHADE-E0110");
}

#[test]
fn constant_only_programs_leave_shadows_alone() {
    let x = array![1.0f32, 2.0];
    let c = array![3.0f32, 4.0];
    let mut dx = Array1::zeros(2);
    let mut bufs = TapeBuffers::new();
    let y = tensor::gradient(
        &mut bufs,
        |t, (_x, c)| {
            let e = t.exp(c)?;
            t.sum(e)
        },
        (Duplicated(&x, &mut dx), Const(&c)),
    )
    .unwrap();
    assert!((y - (3f32.exp() + 4f32.exp())).abs() < 1e-3);
    assert_eq!(dx, array![0.0f32, 0.0]);
}

#[test]
fn activity_and_shape_errors_are_coded() {
    let x = array![1.0, 2.0];
    let mut bad = Array1::zeros(3);
    let mut bufs = TapeBuffers::new();
    let e =
        tensor::gradient(&mut bufs, |t, (x,)| t.sum(x), (Duplicated(&x, &mut bad),)).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0102");
    assert_eq!(
        e.to_string(),
        "shadow of argument 0 has shape [3], but its primal has shape [2]"
    );

    let mut dx = Array1::zeros(2);
    let e =
        tensor::gradient(&mut bufs, |t, (x,)| t.exp(x), (Duplicated(&x, &mut dx),)).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0104");

    let mut stolen: Option<Var> = None;
    let _ = tensor::value(
        &mut bufs,
        |t, (x,)| {
            stolen = Some(x);
            t.sum(x)
        },
        (Const(&x),),
    );
    let e =
        tensor::value(&mut bufs, |t, (x,)| t.add(x, stolen.unwrap()), (Const(&x),)).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0113");

    let seed = array![1.0];
    let e = tensor::pullback(
        &mut bufs,
        |t, (x,)| t.exp(x),
        (Duplicated(&x, &mut dx),),
        &seed,
    )
    .unwrap_err();
    assert_eq!(e.code(), "SHADE-E0110");
}

#[test]
fn pullback_matches_gradient_of_weighted_sum() {
    let x = array![[0.5, -1.0], [2.0, 0.1]];
    let seed = array![[1.0, 2.0], [3.0, 4.0]];
    let mut d1 = Array2::zeros((2, 2));
    let mut d2 = Array2::zeros((2, 2));
    let mut bufs = TapeBuffers::new();
    tensor::pullback(
        &mut bufs,
        |t, (x,)| t.tanh(x),
        (Duplicated(&x, &mut d1),),
        &seed,
    )
    .unwrap();
    tensor::gradient(
        &mut bufs,
        |t, (x, s)| {
            let h = t.tanh(x)?;
            let p = t.mul(h, s)?;
            t.sum(p)
        },
        (Duplicated(&x, &mut d2), Const(&seed)),
    )
    .unwrap();
    assert_eq!(d1, d2);
}
