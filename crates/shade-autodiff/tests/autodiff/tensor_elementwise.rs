//! Gradient checks (reverse = forward = finite differences) for the elementwise and
//! broadcasting operations of the tensor layer.

use crate::check::{arr, away_from, cases, check_op, mat};
use ndarray::ArrayD;
use proptest::prelude::*;

/// Shapes that broadcast together, including the edge cases: size-1 axes on either
/// side, missing leading axes, 0-d scalars, empty axes.
fn broadcast_pair() -> impl Strategy<Value = (ArrayD<f64>, ArrayD<f64>)> {
    let shapes = prop_oneof![
        Just((vec![3, 4], vec![3, 4])),
        Just((vec![3, 4], vec![4])),
        Just((vec![3, 1], vec![1, 4])),
        Just((vec![2, 3, 4], vec![3, 1])),
        Just((vec![1], vec![2, 3])),
        Just((vec![], vec![2, 2])),
        Just((vec![2, 2], vec![])),
        Just((vec![0, 3], vec![3])),
        Just((vec![2, 1, 3], vec![2, 4, 1])),
        (1..4usize, 1..4usize).prop_map(|(a, b)| (vec![a, b], vec![a, 1])),
    ];
    shapes.prop_flat_map(|(a, b)| (arr(a, -2.0, 2.0), arr(b, 0.5, 2.0)))
}

macro_rules! unary_tests {
    ($($name:ident: $lo:expr, $hi:expr, |$t:ident, $x:ident| $body:expr;)*) => {
        proptest! {
            #![proptest_config(cases(64))]
            $(
                #[test]
                fn $name(x in (1..4usize, 1..5usize).prop_flat_map(|(r, c)| arr(vec![r, c], $lo, $hi)), seed in any::<u64>()) {
                    // Away from the kinks of relu, abs, leaky_relu (0) and clamp.
                    prop_assume!(away_from(&x, &[0.0, -0.5, 0.7]));
                    check_op(&[x], seed, |$t, v| { let $x = v[0]; $body })?;
                }
            )*
        }
    };
}

unary_tests! {
    neg: -2.0, 2.0, |t, x| t.neg(x);
    scale: -2.0, 2.0, |t, x| t.scale(x, -1.5);
    exp: -2.0, 2.0, |t, x| t.exp(x);
    ln: 0.2, 3.0, |t, x| t.ln(x);
    sqrt: 0.2, 3.0, |t, x| t.sqrt(x);
    powi3: -2.0, 2.0, |t, x| t.powi(x, 3);
    powi_neg: 0.5, 2.0, |t, x| t.powi(x, -2);
    powi0: -2.0, 2.0, |t, x| t.powi(x, 0);
    abs: -2.0, 2.0, |t, x| t.abs(x);
    tanh: -3.0, 3.0, |t, x| t.tanh(x);
    sigmoid: -30.0, 30.0, |t, x| t.sigmoid(x);
    relu: -2.0, 2.0, |t, x| t.relu(x);
    leaky_relu: -2.0, 2.0, |t, x| t.leaky_relu(x, 0.1);
    elu: -2.0, 2.0, |t, x| t.elu(x, 1.3);
    gelu: -4.0, 4.0, |t, x| t.gelu(x);
    softplus: -30.0, 30.0, |t, x| t.softplus(x);
    clamp: -2.0, 2.0, |t, x| t.clamp(x, -0.5, 0.7);
}

proptest! {
    #![proptest_config(cases(64))]

    #[test]
    fn add((a, b) in broadcast_pair(), seed in any::<u64>()) {
        check_op(&[a, b], seed, |t, v| t.add(v[0], v[1]))?;
    }

    #[test]
    fn sub((a, b) in broadcast_pair(), seed in any::<u64>()) {
        check_op(&[a, b], seed, |t, v| t.sub(v[0], v[1]))?;
    }

    #[test]
    fn mul((a, b) in broadcast_pair(), seed in any::<u64>()) {
        check_op(&[a, b], seed, |t, v| t.mul(v[0], v[1]))?;
    }

    #[test]
    fn div((a, b) in broadcast_pair(), seed in any::<u64>()) {
        check_op(&[a, b], seed, |t, v| t.div(v[0], v[1]))?;
    }

    #[test]
    fn same_value_twice(a in mat(4), seed in any::<u64>()) {
        // x * x: both operands are one node; adjoints add up.
        check_op(&[a], seed, |t, v| t.mul(v[0], v[0]))?;
    }

    #[test]
    fn composite(a in mat(4), seed in any::<u64>()) {
        check_op(&[a], seed, |t, v| {
            let e = t.tanh(v[0])?;
            let s = t.sigmoid(v[0])?;
            let p = t.mul(e, s)?;
            let q = t.sub(p, v[0])?;
            t.gelu(q)
        })?;
    }
}

#[test]
fn sigmoid_softplus_stay_finite_at_extremes() {
    use ndarray::array;
    use shade_autodiff::Const;
    use shade_autodiff::tensor::{self, TapeBuffers};
    let x = array![-800.0f64, 800.0].into_dyn();
    let mut b = TapeBuffers::new();
    let s = tensor::value(&mut b, |t, (x,)| t.sigmoid(x), (Const(&x),)).unwrap();
    assert_eq!(s.as_slice().unwrap(), &[0.0, 1.0]);
    let p = tensor::value(&mut b, |t, (x,)| t.softplus(x), (Const(&x),)).unwrap();
    assert_eq!(p.as_slice().unwrap(), &[0.0, 800.0]);
}

#[test]
fn broadcast_mismatch_names_both_shapes() {
    use ndarray::{Array1, Array2};
    use shade_autodiff::Const;
    use shade_autodiff::tensor::{self, TapeBuffers};
    let a = Array2::<f64>::zeros((2, 3));
    let b = Array1::<f64>::zeros(4);
    let mut bufs = TapeBuffers::new();
    let e = tensor::value(&mut bufs, |t, (a, b)| t.add(a, b), (Const(&a), Const(&b))).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0110");
    assert_eq!(e.to_string(), "`add` cannot combine shapes [2, 3] and [4]");
}
