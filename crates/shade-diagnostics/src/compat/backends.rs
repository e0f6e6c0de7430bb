//! Backend × operator: each of shade-interface's eight operators, run by each backend
//! of the published support table on a small seeded case, against central differences
//! of the function itself; plus the tensor-program gradient.

use super::Cell;
use crate::gradcheck::{GradcheckOptions, GradcheckReport, Order};
use core::borrow::Borrow;
use ndarray::{Array2, array};
use shade_autodiff::scalar::{Real, shade_fn};
use shade_autodiff::tensor::{self, Tape, TapeBuffers, Var};
use shade_autodiff::{AdResult, Const};
use shade_interface::ops::{
    DerivativeBackend, GradientBackend, HessianBackend, HvpBackend, JacobianBackend,
    PullbackBackend, PushforwardBackend, SecondDerivativeBackend,
};
use shade_interface::tensor::TensorBackend;
use shade_interface::{
    AutoFiniteDiff, AutoNumDual, AutoShade, AutoSparse, Backend, Constant, DerivativeMatrix,
    OneArg, Operator, SecondOrder, Support, TwoArg,
};

fn scalar_fn<S: Real>(x: &[S]) -> S {
    x[0] * x[1].sin() + (x[2] * 0.3).exp() * x[0] * x[0] + x[1] * x[2]
}

fn univariate<S: Real>(x: S) -> S {
    x.sin() * (x * 0.5).exp() + x.powi(3) / 3.0
}

fn vector_fn<S: Real>(y: &mut [S], x: &[S]) {
    y[0] = x[0] * x[1] + x[2].sin();
    y[1] = x[0].exp() - x[1] * x[2] * x[2];
}

shade_fn!(Fs = scalar_fn(&[S]));
shade_fn!(Fu = univariate(S));
shade_fn!(Fv = vector_fn(&mut [S], &[S]));

const X: [f64; 3] = [0.4, -0.7, 0.9];
const X1: f64 = 0.6;
const T: [f64; 3] = [0.3, -1.1, 0.5];
const DY: [f64; 2] = [0.8, -0.4];
const H1: f64 = 1e-6;
const H2: f64 = 1e-4;

fn fs(x: &[f64]) -> f64 {
    scalar_fn(x)
}

fn fv(x: &[f64]) -> [f64; 2] {
    let mut y = [0.0; 2];
    vector_fn(&mut y, x);
    y
}

fn shifted(x: &[f64], moves: &[(usize, f64)]) -> Vec<f64> {
    let mut v = x.to_vec();
    for &(i, d) in moves {
        v[i] += d;
    }
    v
}

/// Central-difference gradient of `fs`.
fn num_gradient() -> Vec<f64> {
    (0..3)
        .map(|i| (fs(&shifted(&X, &[(i, H1)])) - fs(&shifted(&X, &[(i, -H1)]))) / (2.0 * H1))
        .collect()
}

/// Central-difference Jacobian of `fv`, row-major `2 × 3`.
fn num_jacobian() -> Vec<f64> {
    let mut j = vec![0.0; 6];
    for i in 0..3 {
        let (p, m) = (fv(&shifted(&X, &[(i, H1)])), fv(&shifted(&X, &[(i, -H1)])));
        for r in 0..2 {
            j[r * 3 + i] = (p[r] - m[r]) / (2.0 * H1);
        }
    }
    j
}

/// Four-point second differences of `fs`, row-major `3 × 3`.
fn num_hessian() -> Vec<f64> {
    let mut h = vec![0.0; 9];
    for i in 0..3 {
        for j in 0..3 {
            let f = |a: f64, b: f64| fs(&shifted(&X, &[(i, a), (j, b)]));
            h[i * 3 + j] = (f(H2, H2) - f(H2, -H2) - f(-H2, H2) + f(-H2, -H2)) / (4.0 * H2 * H2);
        }
    }
    h
}

fn compare(analytic: &[f64], numeric: &[f64], order: Order) -> Cell {
    let opts = GradcheckOptions::f64();
    let mut rep = GradcheckReport::new(order, numeric.len(), &opts);
    if analytic.len() != numeric.len() {
        return Cell::Fail(f64::INFINITY);
    }
    for (k, (&a, &n)) in analytic.iter().zip(numeric).enumerate() {
        rep.add(0, vec![k], a, n);
    }
    Cell::from_report(Ok(rep))
}

fn outcome(r: shade_interface::InterfaceResult<Vec<f64>>, numeric: &[f64], order: Order) -> Cell {
    match r {
        Ok(a) => compare(&a, numeric, order),
        Err(e) => Cell::Error(e.code()),
    }
}

fn derivative<B: DerivativeBackend<OneArg<Fu>, ()>>(b: &B) -> Cell {
    let n = (univariate(X1 + H1) - univariate(X1 - H1)) / (2.0 * H1);
    outcome(
        shade_interface::derivative(Fu, b, X1, ()).map(|d| vec![d]),
        &[n],
        Order::First,
    )
}

fn second_derivative<B: SecondDerivativeBackend<Fu, ()>>(b: &B) -> Cell {
    let n = (univariate(X1 + H2) - 2.0 * univariate(X1) + univariate(X1 - H2)) / (H2 * H2);
    outcome(
        shade_interface::second_derivative(Fu, b, X1, ()).map(|d| vec![d]),
        &[n],
        Order::Second,
    )
}

fn gradient<B: GradientBackend<Fs, ()>>(b: &B) -> Cell {
    outcome(
        shade_interface::gradient(Fs, b, &X, ()),
        &num_gradient(),
        Order::First,
    )
}

fn jacobian<B: JacobianBackend<TwoArg<Fv>, ()>>(b: &B) -> Cell {
    outcome(
        shade_interface::value_and_jacobian_inplace(Fv, &mut [0.0; 2], b, &X, ())
            .map(|j| j.borrow().to_row_major()),
        &num_jacobian(),
        Order::First,
    )
}

fn hessian<B: HessianBackend<Fs, ()>>(b: &B) -> Cell {
    outcome(
        shade_interface::hessian(Fs, b, &X, ()).map(|h| h.borrow().to_row_major()),
        &num_hessian(),
        Order::Second,
    )
}

fn pushforward<B: PushforwardBackend<TwoArg<Fv>, ()>>(b: &B) -> Cell {
    let j = num_jacobian();
    let n: Vec<f64> = (0..2)
        .map(|r| (0..3).map(|i| j[r * 3 + i] * T[i]).sum())
        .collect();
    outcome(
        shade_interface::value_and_pushforward_inplace(Fv, &mut [0.0; 2], b, &X, &T, ()),
        &n,
        Order::First,
    )
}

fn pullback<B: PullbackBackend<TwoArg<Fv>, ()>>(b: &B) -> Cell {
    let j = num_jacobian();
    let n: Vec<f64> = (0..3)
        .map(|i| (0..2).map(|r| j[r * 3 + i] * DY[r]).sum())
        .collect();
    outcome(
        shade_interface::value_and_pullback_inplace(Fv, &mut [0.0; 2], b, &X, &DY, ()),
        &n,
        Order::First,
    )
}

fn hvp<B: HvpBackend<Fs, ()>>(b: &B) -> Cell {
    let h = num_hessian();
    let n: Vec<f64> = (0..3)
        .map(|i| (0..3).map(|j| h[i * 3 + j] * T[j]).sum())
        .collect();
    outcome(shade_interface::hvp(Fs, b, &X, &T, ()), &n, Order::Second)
}

/// The tensor program `sum(tanh(x · w))`.
fn tensor_body(t: &mut Tape<'_, f64>, w: Var, x: Var) -> AdResult<Var> {
    let h = t.matmul(x, w)?;
    let h = t.tanh(h)?;
    t.sum(h)
}

fn tensor_gradient<B: TensorBackend>(b: &B) -> Cell {
    let x = array![[1.0, -0.5], [0.25, 2.0], [-1.0, 0.5]];
    let w = array![[0.3, -0.2, 0.1], [0.05, 0.4, -0.3]];
    let program = |t: &mut Tape<'_, f64>, (w, &(x,)): (Var, &(Var,))| tensor_body(t, w, x);
    let value = |w: &Array2<f64>| -> f64 {
        let mut bufs = TapeBuffers::new();
        tensor::value(
            &mut bufs,
            |t, (w, x)| tensor_body(t, w, x),
            (Const(w), Const(&x)),
        )
        .ok()
        .and_then(|y| y.iter().next().copied())
        .unwrap_or(f64::NAN)
    };
    let mut numeric = Vec::new();
    for k in 0..w.len() {
        let (r, c) = (k / 3, k % 3);
        let (mut wp, mut wm) = (w.clone(), w.clone());
        wp[[r, c]] += H1;
        wm[[r, c]] -= H1;
        numeric.push((value(&wp) - value(&wm)) / (2.0 * H1));
    }
    match shade_interface::tensor::gradient(program, b, &w, (Constant(&x),)) {
        Ok(g) => compare(
            &g.iter().copied().collect::<Vec<_>>(),
            &numeric,
            Order::First,
        ),
        Err(e) => Cell::Error(e.code()),
    }
}

/// One row: the backend, a cell per operator of [`Operator::ALL`], then the tensor
/// program cell.
#[derive(Clone, Debug, PartialEq)]
pub struct BackendRow {
    /// The backend's name.
    pub backend: String,
    /// One cell per operator of `Operator::ALL`, then tensor programs.
    pub cells: Vec<Cell>,
}

macro_rules! run {
    (derivative, $b:expr) => {
        derivative($b)
    };
    (second_derivative, $b:expr) => {
        second_derivative($b)
    };
    (gradient, $b:expr) => {
        gradient($b)
    };
    (jacobian, $b:expr) => {
        jacobian($b)
    };
    (hessian, $b:expr) => {
        hessian($b)
    };
    (pushforward, $b:expr) => {
        pushforward($b)
    };
    (pullback, $b:expr) => {
        pullback($b)
    };
    (hvp, $b:expr) => {
        hvp($b)
    };
    (tensor, $b:expr) => {
        tensor_gradient($b)
    };
}

/// Runs the listed operators; the others are `Unsupported` when the backend declares
/// them so, `NotChecked` otherwise.
macro_rules! row {
    ($b:expr; $($op:ident),*) => {{
        let b = $b;
        let mut cells: Vec<Option<Cell>> = vec![None; 9];
        $(
            let k = column(stringify!($op));
            cells[k] = Some(run!($op, &b));
        )*
        finish(&b, cells)
    }};
}

fn column(op: &str) -> usize {
    Operator::ALL
        .iter()
        .position(|o| o.name() == op)
        .unwrap_or(Operator::ALL.len())
}

fn finish<B: Backend>(b: &B, cells: Vec<Option<Cell>>) -> BackendRow {
    let declared: Vec<Support> = Operator::ALL
        .iter()
        .map(|&op| b.supports(op))
        .chain([b.supports_tensor()])
        .collect();
    let cells = cells
        .into_iter()
        .zip(declared)
        .map(|(c, d)| match (c, d) {
            (Some(c), _) => c,
            (None, Support::No) => Cell::Unsupported,
            (None, _) => Cell::NotChecked,
        })
        .collect();
    BackendRow {
        backend: b.name(),
        cells,
    }
}

/// Every backend of the published support table × every operator, each cell run.
pub fn backend_table() -> Vec<BackendRow> {
    vec![
        row!(AutoShade::REVERSE; derivative, second_derivative, gradient, jacobian, hessian, pushforward, pullback, hvp, tensor),
        row!(AutoShade::FORWARD; derivative, second_derivative, gradient, jacobian, hessian, pushforward, pullback, hvp, tensor),
        row!(AutoFiniteDiff::CENTRAL; derivative, second_derivative, gradient, jacobian, hessian, pushforward, pullback, hvp, tensor),
        row!(AutoFiniteDiff::FORWARD; derivative, second_derivative, gradient, jacobian, hessian, pushforward, pullback, hvp, tensor),
        row!(AutoNumDual; derivative, second_derivative, gradient, jacobian, hessian, pushforward, pullback, hvp),
        row!(SecondOrder { outer: AutoShade::FORWARD, inner: AutoShade::REVERSE }; hessian, hvp),
        row!(SecondOrder { outer: AutoFiniteDiff::CENTRAL, inner: AutoShade::REVERSE }; hessian, hvp),
        row!(AutoSparse { inner: AutoShade::FORWARD }; jacobian, hessian),
        row!(AutoSparse { inner: AutoFiniteDiff::CENTRAL }; jacobian, hessian),
    ]
}
