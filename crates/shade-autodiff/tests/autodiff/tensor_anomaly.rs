//! Anomaly mode of the tensor layer: the first operation that produces NaN or an
//! infinity, forward or backward, is named with the program's call site and the
//! ranges of its inputs; with the mode off the same programs run as before.

use ndarray::{Array1, array};
use shade_autodiff::tensor::{self, TapeBuffers, ValueRange};
use shade_autodiff::{AdError, Const, Duplicated};

#[test]
fn forward_nan_names_ln_and_its_call_site() {
    let x = array![-1.0, 2.0, 0.5];
    let mut dx = Array1::zeros(3);
    let mut bufs = TapeBuffers::new();
    bufs.set_anomaly(true);
    let mut line = 0;
    let err = tensor::gradient(
        &mut bufs,
        |t, (x,)| {
            let e = t.exp(x)?;
            line = line!() + 1;
            let l = t.ln(x)?;
            let s = t.add(l, e)?;
            t.sum(s)
        },
        (Duplicated(&x, &mut dx),),
    )
    .unwrap_err();
    let AdError::NonFiniteForward {
        op,
        what,
        position,
        location,
        inputs,
    } = &err
    else {
        panic!("expected a forward anomaly, got {err:?}");
    };
    assert_eq!((*op, *what, *position), ("ln", "NaN", 0));
    let loc = location.expect("call site recorded");
    assert_eq!(loc.line(), line);
    assert!(loc.file().ends_with("tensor_anomaly.rs"));
    assert_eq!(inputs, &vec![ValueRange::of(&[3], [-1.0, 2.0, 0.5])]);
    assert_eq!(err.code(), "SHADE-E0170");
    assert_eq!(
        err.to_string(),
        "`ln` produced NaN at element 0 of its result in the forward pass"
    );
    // The shadow is untouched: the sweep never ran.
    assert_eq!(dx, array![0.0, 0.0, 0.0]);
}

#[test]
fn backward_infinity_names_sqrt() {
    let x = array![0.0, 4.0];
    let mut dx = Array1::zeros(2);
    let mut bufs = TapeBuffers::new();
    bufs.set_anomaly(true);
    let mut line = 0;
    let err = tensor::gradient(
        &mut bufs,
        |t, (x,)| {
            line = line!() + 1;
            let s = t.sqrt(x)?;
            t.sum(s)
        },
        (Duplicated(&x, &mut dx),),
    )
    .unwrap_err();
    let AdError::NonFiniteBackward {
        op,
        what,
        input,
        location,
        inputs,
        adjoint,
    } = &err
    else {
        panic!("expected a backward anomaly, got {err:?}");
    };
    assert_eq!((*op, *what, *input), ("sqrt", "inf", 0));
    assert_eq!(location.map(|l| l.line()), Some(line));
    assert_eq!(inputs[0], ValueRange::of(&[2], [0.0, 4.0]));
    assert_eq!(**adjoint, ValueRange::of(&[2], [1.0, 1.0]));
    assert_eq!(err.code(), "SHADE-E0171");
}

#[test]
fn off_by_default_and_switchable() {
    let x = array![0.0, 4.0];
    let mut dx = Array1::zeros(2);
    let mut bufs = TapeBuffers::new();
    assert!(!bufs.anomaly());
    let prog = |t: &mut tensor::Tape<'_, f64>, (x,): (tensor::Var,)| {
        let s = t.sqrt(x)?;
        t.sum(s)
    };
    let y = tensor::gradient(&mut bufs, prog, (Duplicated(&x, &mut dx),)).unwrap();
    assert_eq!(y, 2.0);
    assert_eq!(dx[0], f64::INFINITY);
    assert_eq!(dx[1], 0.25);
    // On, then off again, with the same (warm) buffers.
    bufs.set_anomaly(true);
    let mut dx = Array1::zeros(2);
    let e = tensor::gradient(&mut bufs, prog, (Duplicated(&x, &mut dx),)).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0171");
    let x2 = array![1.0, 4.0];
    let mut dx = Array1::zeros(2);
    let y = tensor::gradient(&mut bufs, prog, (Duplicated(&x2, &mut dx),)).unwrap();
    assert_eq!((y, dx[0], dx[1]), (3.0, 0.5, 0.25));
    bufs.set_anomaly(false);
    let mut dx = Array1::zeros(2);
    assert!(tensor::gradient(&mut bufs, prog, (Duplicated(&x, &mut dx),)).is_ok());
}

#[test]
fn value_and_forward_mode_are_checked() {
    let a = array![[1.0, 2.0], [3.0, 4.0]];
    let z = array![[0.0, 1.0], [1.0, 0.0]];
    let mut bufs = TapeBuffers::new();
    bufs.set_anomaly(true);
    let err =
        tensor::value(&mut bufs, |t, (a, z)| t.div(a, z), (Const(&a), Const(&z))).unwrap_err();
    match &err {
        AdError::NonFiniteForward {
            op,
            what,
            position,
            inputs,
            ..
        } => {
            assert_eq!((*op, *what, *position), ("div", "inf", 0));
            assert_eq!(inputs.len(), 2);
            assert_eq!(inputs[1], ValueRange::of(&[2, 2], [0.0, 1.0, 1.0, 0.0]));
        }
        other => panic!("unexpected {other:?}"),
    }
    // Forward mode: the value of sqrt(0) is finite, its tangent is not.
    let x = array![0.0, 1.0];
    let mut tx = array![1.0, 1.0];
    let err = tensor::pushforward(&mut bufs, |t, (x,)| t.sqrt(x), (Duplicated(&x, &mut tx),))
        .unwrap_err();
    assert!(matches!(
        err,
        AdError::NonFiniteForward {
            op: "sqrt",
            what: "inf",
            position: 0,
            ..
        }
    ));
}

#[test]
fn only_the_first_anomaly_is_reported() {
    // `ln(-1)` is NaN, and everything after it too; the report names `ln`.
    let x = array![-1.0];
    let mut dx = Array1::zeros(1);
    let mut bufs = TapeBuffers::new();
    bufs.set_anomaly(true);
    let err = tensor::gradient(
        &mut bufs,
        |t, (x,)| {
            let l = t.ln(x)?;
            let e = t.exp(l)?;
            let s = t.tanh(e)?;
            t.sum(s)
        },
        (Duplicated(&x, &mut dx),),
    )
    .unwrap_err();
    assert!(matches!(err, AdError::NonFiniteForward { op: "ln", .. }));
}

#[test]
fn a_nan_input_is_caught_at_the_first_operation_that_reads_it() {
    let x = array![1.0, f64::NAN];
    let w = array![2.0, 3.0];
    let mut dw = Array1::zeros(2);
    let mut bufs = TapeBuffers::new();
    bufs.set_anomaly(true);
    let err = tensor::gradient(
        &mut bufs,
        |t, (w, x)| {
            let p = t.mul(w, x)?;
            t.sum(p)
        },
        (Duplicated(&w, &mut dw), Const(&x)),
    )
    .unwrap_err();
    match err {
        AdError::NonFiniteForward { op, inputs, .. } => {
            assert_eq!(op, "mul");
            assert_eq!(inputs[1].nan, 1);
            assert_eq!((inputs[1].min, inputs[1].max), (1.0, 1.0));
        }
        other => panic!("unexpected {other:?}"),
    }
}
