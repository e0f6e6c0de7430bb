//! Adversarial inputs for the tensor tape's dense operations (elementwise maps,
//! broadcasting, products, reductions, softmax, shape operations, the pair losses), in
//! `f32` and `f64`: shapes with zero-length axes, 0-d values and mismatched shapes,
//! row-major, column-major and strided arrays, values with NaN, infinities, huge and
//! tiny magnitudes. Per case (`exercise`): no panic; an error carries a crate code,
//! leaves the tape as it was and the tape then gives the bits of a fresh one; a result
//! has the shape the operation's contract gives (`expected`), the same bits on reused
//! (dirty) storage and in every mode, zero derivative when empty, values agreeing with
//! a scalar reference, and on finite inputs a gradient that agrees with finite
//! differences (`check_op`). `tensor_fuzz_index` does the same for the index, sparse,
//! coordinate-list, dropout and custom operations with this module's harness.

use crate::check::{KINK, away_from, cases, check_op, no_near_ties};
use ndarray::{ArrayD, Axis, IxDyn, ShapeBuilder, Slice};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use shade_autodiff::tensor::{self, Element, Tape, TapeBuffers, TensorArg, Var};
use shade_autodiff::{AdError, AdResult, Const, Duplicated};
use shade_test_support::close;
use shade_test_support::strategies::no_panic;

/// How an input is laid out in memory.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Lay {
    Row,
    Col,
    /// Every other element of the last axis of a wider array.
    Strided,
}

/// One input: its shape, layout and values (row-major order, as `f64`).
#[derive(Clone, Debug)]
pub(crate) struct In {
    pub(crate) shape: Vec<usize>,
    pub(crate) lay: Lay,
    pub(crate) vals: Vec<f64>,
}

/// Zeros of `shape` laid out as `lay`.
pub(crate) fn zeros_as<T: Element>(shape: &[usize], lay: Lay) -> ArrayD<T> {
    match (lay, shape.len()) {
        (Lay::Row, _) | (_, 0) => ArrayD::zeros(IxDyn(shape)),
        (Lay::Col, _) => ArrayD::zeros(IxDyn(shape).f()),
        (Lay::Strided, nd) => {
            let mut wide = shape.to_vec();
            wide[nd - 1] *= 2;
            let mut a = ArrayD::zeros(IxDyn(&wide));
            a.slice_axis_inplace(Axis(nd - 1), Slice::new(0, None, 2));
            a
        }
    }
}

impl In {
    pub(crate) fn build<T: Element>(&self) -> ArrayD<T> {
        let mut a = zeros_as(&self.shape, self.lay);
        let v = self.vals.iter().map(|&x| T::cst(x)).collect();
        a.assign(&ArrayD::from_shape_vec(IxDyn(&self.shape), v).expect("one value per entry"));
        a
    }
    pub(crate) fn zeros<T: Element>(&self) -> ArrayD<T> {
        zeros_as(&self.shape, self.lay)
    }
    pub(crate) fn finite(&self) -> bool {
        self.vals.iter().all(|v| v.abs() <= 2.0)
    }
}

/// A value: mostly moderate, else NaN, an infinity, a huge, tiny or subnormal number,
/// a signed zero.
pub(crate) fn value(clean: bool) -> BoxedStrategy<f64> {
    if clean {
        return (-2.0..2.0f64).boxed();
    }
    prop_oneof![
        6 => -2.0..2.0f64,
        1 => prop::sample::select(vec![
            f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e300, -1e300, 1e-300,
            f64::MAX, 5e-324, 0.0, -0.0, 1e30, -1e30,
        ]),
    ]
    .boxed()
}

fn lay() -> impl Strategy<Value = Lay> {
    prop_oneof![Just(Lay::Row), Just(Lay::Col), Just(Lay::Strided)]
}

pub(crate) fn input(shape: Vec<usize>, clean: bool) -> impl Strategy<Value = In> {
    let n: usize = shape.iter().product();
    (lay(), prop::collection::vec(value(clean), n)).prop_map(move |(lay, vals)| In {
        shape: shape.clone(),
        lay,
        vals,
    })
}

/// A shape of 0 to 3 axes of 0 to 3 entries.
pub(crate) fn shape() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(prop_oneof![1 => Just(0usize), 4 => 1..=3usize], 0..=3)
}

/// A second shape for `a`: the same, a matrix product's partner, a broadcast partner,
/// its transpose, or any.
fn partner(a: Vec<usize>) -> impl Strategy<Value = Vec<usize>> {
    let k = a.last().copied().unwrap_or(1);
    let mm = if a.len() == 3 {
        vec![a[0], k, 2]
    } else {
        vec![k, 3]
    };
    let bc: Vec<usize> = a
        .iter()
        .skip(1)
        .map(|&d| if d == 2 { 1 } else { d })
        .collect();
    let t: Vec<usize> = a.iter().rev().copied().collect();
    prop_oneof![3 => Just(a), 2 => Just(mm), 1 => Just(bc), 1 => Just(t), 2 => shape()]
}

/// An argument list entry: a constant or a tracked array.
pub(crate) enum Arg<'a, T: Element> {
    C(&'a ArrayD<T>),
    D(&'a ArrayD<T>, &'a mut ArrayD<T>),
}

/// Every array tracked, each with its shadow (an adjoint or a tangent).
fn tracked<'a, T: Element>(xs: &'a [ArrayD<T>], shadows: &'a mut [ArrayD<T>]) -> Vec<Arg<'a, T>> {
    xs.iter().zip(shadows).map(|(x, d)| Arg::D(x, d)).collect()
}

impl<'a, T: Element> TensorArg<'a, T> for Arg<'a, T> {
    type Handle = Var;
    fn register(self, tape: &mut Tape<'a, T>, pos: usize) -> AdResult<Var> {
        match self {
            Arg::C(x) => Const(x).register(tape, pos),
            Arg::D(x, dx) => Duplicated(x, dx).register(tape, pos),
        }
    }
}

fn same_bits<T: Element>(a: &ArrayD<T>, b: &ArrayD<T>) -> bool {
    a.shape() == b.shape()
        && a.iter().zip(b.iter()).all(|(x, y)| {
            let (x, y) = (x.to_f64().unwrap_or(0.0), y.to_f64().unwrap_or(0.0));
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
        })
}

/// Storage whose pool holds buffers full of NaN, as a previous call may leave it.
fn dirty<T: Element>() -> TapeBuffers<T> {
    let mut bufs = TapeBuffers::new();
    let nan: Vec<ArrayD<T>> = (0..48)
        .map(|n| ArrayD::from_elem(IxDyn(&[n]), T::nan()))
        .collect();
    let _ = tensor::value(
        &mut bufs,
        |t, h: Vec<Var>| {
            let mut last = t.scalar(T::nan());
            for x in h {
                let e = t.exp(x)?;
                last = t.neg(e)?;
            }
            Ok(last)
        },
        nan.iter().map(Arg::C).collect::<Vec<_>>(),
    );
    bufs
}

/// A valid program on any inputs, to check the tape after an error: `Σ x² + Σ y`.
fn valid<T: Element>(t: &mut Tape<'_, T>, h: &[Var]) -> AdResult<Var> {
    let mut acc = t.scalar(T::zero());
    for &x in h {
        let sq = t.mul(x, x)?;
        let s = t.sum(sq)?;
        acc = t.add(acc, s)?;
    }
    Ok(acc)
}

/// Reverse mode over `xs` (all tracked), seeded by ones: the gradients.
fn grads<T: Element, F>(
    bufs: &mut TapeBuffers<T>,
    xs: &[ArrayD<T>],
    ins: &[In],
    seed: &ArrayD<T>,
    f: &F,
) -> AdResult<Vec<ArrayD<T>>>
where
    F: for<'a> Fn(&mut Tape<'a, T>, &[Var]) -> AdResult<Var>,
{
    let mut gs: Vec<ArrayD<T>> = ins.iter().map(In::zeros).collect();
    let args = tracked(xs, &mut gs);
    tensor::pullback(bufs, |t, h| f(t, &h), args, seed)?;
    Ok(gs)
}

fn code_of(e: &AdError) -> Result<&'static str, TestCaseError> {
    let c = e.code();
    prop_assert!(
        c.starts_with("SHADE-E01") && !e.to_string().is_empty(),
        "uncoded error {e:?}"
    );
    Ok(c)
}

/// Runs `f` over `ins` in every mode and checks what holds for any operation (see the
/// module's header); returns its value or its error's code.
pub(crate) fn exercise<T: Element, F>(
    ins: &[In],
    f: F,
) -> Result<Result<ArrayD<T>, &'static str>, TestCaseError>
where
    F: for<'a> Fn(&mut Tape<'a, T>, &[Var]) -> AdResult<Var>,
{
    let xs: Vec<ArrayD<T>> = ins.iter().map(In::build).collect();
    let consts = || xs.iter().map(Arg::C).collect::<Vec<_>>();
    let y = no_panic("value", || {
        tensor::value(&mut TapeBuffers::new(), |t, h| f(t, &h), consts())
    })?;
    // Handles of another tape are refused, whatever else the call gets wrong.
    let stolen = std::cell::RefCell::new(Vec::new());
    let _ = tensor::value(
        &mut TapeBuffers::new(),
        |t, h| {
            *stolen.borrow_mut() = h.clone();
            Ok(t.scalar(T::zero()))
        },
        consts(),
    );
    let foreign = no_panic("foreign handles", || {
        tensor::value(
            &mut TapeBuffers::new(),
            |t, _| f(t, &stolen.borrow()),
            consts(),
        )
    })?;
    match foreign {
        Ok(_) => prop_assert!(false, "a handle of another tape was taken"),
        Err(e) => {
            code_of(&e)?;
        }
    }
    // Anomaly mode: the same value, or the coded report of a non-finite one.
    let mut watched = TapeBuffers::new();
    watched.set_anomaly(true);
    let yw = no_panic("anomaly mode", || {
        tensor::value(&mut watched, |t, h| f(t, &h), consts())
    })?;
    match (&y, &yw) {
        (Ok(y), Ok(yw)) => prop_assert!(
            // (A result that is its input, as dropout's in evaluation, is no operation.)
            same_bits(y, yw)
                && (y.iter().all(|v| v.is_finite()) || xs.iter().any(|x| same_bits(x, y))),
            "anomaly mode passed a non-finite value or changed one"
        ),
        (Ok(y), Err(e)) => prop_assert!(
            e.code() == "SHADE-E0170" && y.iter().any(|v| !v.is_finite()),
            "anomaly mode refused a finite value: {e}"
        ),
        (Err(a), Err(b)) => prop_assert_eq!(a.code(), b.code()),
        (Err(e), Ok(_)) => prop_assert!(false, "anomaly mode took what failed: {e}"),
    }
    if y.is_ok() {
        let mut gs: Vec<ArrayD<T>> = ins.iter().map(In::zeros).collect();
        let args = tracked(&xs, &mut gs);
        let r = no_panic("anomaly mode, reverse", || {
            tensor::gradient(
                &mut watched,
                |t, h| {
                    let y = f(t, &h)?;
                    t.sum(y)
                },
                args,
            )
        })?;
        if let Err(e) = r {
            prop_assert!(
                matches!(e.code(), "SHADE-E0170" | "SHADE-E0171"),
                "anomaly mode, reverse: {e}"
            );
        }
    }
    let y = match y {
        Err(e) => {
            let code = code_of(&e)?;
            // The failed operation leaves the tape as it was, and what follows it gives
            // the bits of a fresh tape; the same storage then serves again.
            let fresh_g = grads(
                &mut TapeBuffers::new(),
                &xs,
                ins,
                &ArrayD::from_elem(IxDyn(&[]), T::one()),
                &|t, h| valid(t, h),
            )
            .map_err(|e| TestCaseError::fail(format!("{e}")))?;
            let mut bufs = dirty();
            let seen = std::cell::Cell::new(None);
            let g = no_panic("after an error", || {
                grads(
                    &mut bufs,
                    &xs,
                    ins,
                    &ArrayD::from_elem(IxDyn(&[]), T::one()),
                    &|t, h| {
                        let n = t.len();
                        let r = f(t, h);
                        seen.set(Some((r.map(|_| ()).map_err(|e| e.code()), t.len() == n)));
                        valid(t, h)
                    },
                )
            })?;
            prop_assert_eq!(
                seen.get(),
                Some((Err(code), true)),
                "reverse mode: another outcome, or the tape grew"
            );
            let g = g.map_err(|e| TestCaseError::fail(format!("{e}")))?;
            for (a, b) in g.iter().zip(&fresh_g) {
                prop_assert!(
                    same_bits(a, b),
                    "gradient after an error differs from a fresh tape's"
                );
            }
            let again = no_panic("storage after an error", || {
                grads(
                    &mut bufs,
                    &xs,
                    ins,
                    &ArrayD::from_elem(IxDyn(&[]), T::one()),
                    &|t, h| valid(t, h),
                )
            })?;
            let again = again.map_err(|e| TestCaseError::fail(format!("{e}")))?;
            prop_assert!(again.iter().zip(&fresh_g).all(|(a, b)| same_bits(a, b)));
            // Forward mode: the same error, and the valid program's value and tangent.
            let fwd = |bufs: &mut TapeBuffers<T>, fail: bool| {
                let mut ts: Vec<ArrayD<T>> = ins.iter().map(In::zeros).collect();
                ts.iter_mut().for_each(|t| t.fill(T::one()));
                let args = tracked(&xs, &mut ts);
                let p = |t: &mut Tape<'_, T>, h: Vec<Var>| {
                    let n = t.len();
                    let r = if fail {
                        f(t, &h).map(|_| ()).map_err(|e| e.code())
                    } else {
                        Err(code)
                    };
                    seen.set(Some((r, t.len() == n)));
                    valid(t, &h)
                };
                tensor::pushforward(bufs, p, args)
            };
            let want = fwd(&mut TapeBuffers::new(), false)
                .map_err(|e| TestCaseError::fail(format!("{e}")))?;
            let got = no_panic("forward mode after an error", || fwd(&mut bufs, true))?;
            prop_assert_eq!(
                seen.get(),
                Some((Err(code), true)),
                "forward mode: another outcome, or the tape grew"
            );
            let got = got.map_err(|e| TestCaseError::fail(format!("{e}")))?;
            prop_assert!(
                same_bits(&got.0, &want.0) && same_bits(&got.1, &want.1),
                "forward mode after an error"
            );
            return Ok(Err(code));
        }
        Ok(y) => y,
    };
    let mut bufs = dirty();
    let y2 = no_panic("value on reused storage", || {
        tensor::value(&mut bufs, |t, h| f(t, &h), consts())
    })?;
    prop_assert!(
        y2.as_ref().is_ok_and(|y2| same_bits(&y, y2)),
        "reused storage changed the value"
    );
    let seed = ArrayD::from_elem(y.raw_dim(), T::one());
    let g0 = no_panic("pullback", || {
        grads(&mut TapeBuffers::new(), &xs, ins, &seed, &f)
    })?;
    let g0 = g0.map_err(|e| TestCaseError::fail(format!("pullback failed: {e}")))?;
    let g1 = no_panic("pullback on reused storage", || {
        grads(&mut bufs, &xs, ins, &seed, &f)
    })?;
    let g1 = g1.map_err(|e| TestCaseError::fail(format!("pullback failed: {e}")))?;
    for (((a, b), x), i) in g0.iter().zip(&g1).zip(&xs).zip(ins) {
        prop_assert!(same_bits(a, b), "reused storage changed a gradient");
        prop_assert_eq!(a.shape(), x.shape());
        if y.is_empty() || i.vals.is_empty() {
            prop_assert!(
                a.iter().all(|&v| v == T::zero()),
                "an empty value passed a gradient"
            );
        }
    }
    let mut ts: Vec<ArrayD<T>> = ins
        .iter()
        .map(|i| i.zeros::<T>().mapv(|_: T| T::cst(0.5)))
        .collect();
    let args = tracked(&xs, &mut ts);
    let fwd = no_panic("pushforward", || {
        tensor::pushforward(&mut bufs, |t, h| f(t, &h), args)
    })?;
    let (yf, dy) = fwd.map_err(|e| TestCaseError::fail(format!("pushforward failed: {e}")))?;
    prop_assert!(same_bits(&y, &yf), "forward mode changed the value");
    prop_assert_eq!(dy.shape(), y.shape());
    Ok(Ok(y))
}

/// A dense operation and its parameters.
#[derive(Clone, Debug)]
enum Op {
    Neg,
    Scale(f64),
    Exp,
    Ln,
    Sqrt,
    Powi(i32),
    Abs,
    Tanh,
    Sigmoid,
    Relu,
    Leaky(f64),
    Elu(f64),
    Gelu,
    Softplus,
    Clamp(f64, f64),
    Add,
    Sub,
    Mul,
    Div,
    Sum(Option<usize>),
    Mean(Option<usize>),
    Max(Option<usize>),
    Min(Option<usize>),
    Lse(usize),
    Norm,
    Softmax(usize),
    LogSoftmax(usize),
    Transpose,
    Reshape(Vec<usize>),
    Narrow(usize, usize, usize),
    Matmul,
    Linear(bool),
    GroupDot(usize),
    Concat(usize),
    Stack(usize),
    Mse,
    Bce,
}

fn axis() -> impl Strategy<Value = usize> {
    prop_oneof![4 => 0..3usize, 1 => Just(3usize), 1 => Just(usize::MAX)]
}

fn big() -> impl Strategy<Value = usize> {
    prop_oneof![4 => 0..4usize, 1 => prop::sample::select(vec![6usize, 1 << 40, isize::MAX as usize, usize::MAX])]
}

fn scalar() -> impl Strategy<Value = f64> {
    prop_oneof![4 => -2.0..2.0f64, 1 => Just(f64::NAN), 1 => Just(f64::INFINITY), 1 => Just(0.0)]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        prop::sample::select(vec![
            Op::Neg,
            Op::Exp,
            Op::Ln,
            Op::Sqrt,
            Op::Abs,
            Op::Tanh,
            Op::Sigmoid,
            Op::Relu,
            Op::Gelu,
            Op::Softplus,
            Op::Add,
            Op::Sub,
            Op::Mul,
            Op::Div,
            Op::Norm,
            Op::Transpose,
            Op::Matmul,
            Op::Mse,
            Op::Bce,
        ]),
        scalar().prop_map(Op::Scale),
        prop::sample::select(vec![0, 1, 2, 3, -1, -2]).prop_map(Op::Powi),
        scalar().prop_map(Op::Leaky),
        scalar().prop_map(Op::Elu),
        (scalar(), scalar()).prop_map(|(a, b)| Op::Clamp(a, b)),
        prop::option::of(axis()).prop_map(Op::Sum),
        prop::option::of(axis()).prop_map(Op::Mean),
        prop::option::of(axis()).prop_map(Op::Max),
        prop::option::of(axis()).prop_map(Op::Min),
        axis().prop_map(Op::Lse),
        axis().prop_map(Op::Softmax),
        axis().prop_map(Op::LogSoftmax),
        prop::collection::vec(big(), 0..=3).prop_map(Op::Reshape),
        (axis(), big(), big()).prop_map(|(a, s, l)| Op::Narrow(a, s, l)),
        any::<bool>().prop_map(Op::Linear),
        prop::sample::select(vec![0usize, 1, 2, 3]).prop_map(Op::GroupDot),
        axis().prop_map(Op::Concat),
        axis().prop_map(Op::Stack),
    ]
}

fn apply<T: Element>(op: &Op, t: &mut Tape<'_, T>, h: &[Var]) -> AdResult<Var> {
    let (a, b, c) = (h[0], h[1], h[2]);
    let k = T::cst;
    match op {
        Op::Neg => t.neg(a),
        Op::Scale(s) => t.scale(a, k(*s)),
        Op::Exp => t.exp(a),
        Op::Ln => t.ln(a),
        Op::Sqrt => t.sqrt(a),
        Op::Powi(n) => t.powi(a, *n),
        Op::Abs => t.abs(a),
        Op::Tanh => t.tanh(a),
        Op::Sigmoid => t.sigmoid(a),
        Op::Relu => t.relu(a),
        Op::Leaky(s) => t.leaky_relu(a, k(*s)),
        Op::Elu(s) => t.elu(a, k(*s)),
        Op::Gelu => t.gelu(a),
        Op::Softplus => t.softplus(a),
        Op::Clamp(lo, hi) => t.clamp(a, k(*lo), k(*hi)),
        Op::Add => t.add(a, b),
        Op::Sub => t.sub(a, b),
        Op::Mul => t.mul(a, b),
        Op::Div => t.div(a, b),
        Op::Sum(None) => t.sum(a),
        Op::Sum(Some(x)) => t.sum_axis(a, *x),
        Op::Mean(None) => t.mean(a),
        Op::Mean(Some(x)) => t.mean_axis(a, *x),
        Op::Max(None) => t.max(a),
        Op::Max(Some(x)) => t.max_axis(a, *x),
        Op::Min(None) => t.min(a),
        Op::Min(Some(x)) => t.min_axis(a, *x),
        Op::Lse(x) => t.logsumexp(a, *x),
        Op::Norm => t.norm(a),
        Op::Softmax(x) => t.softmax(a, *x),
        Op::LogSoftmax(x) => t.log_softmax(a, *x),
        Op::Transpose => t.transpose(a),
        Op::Reshape(s) => t.reshape(a, s),
        Op::Narrow(x, s, l) => t.narrow(a, *x, *s, *l),
        Op::Matmul => t.matmul(a, b),
        Op::Linear(bias) => t.linear(a, b, bias.then_some(c)),
        Op::GroupDot(g) => t.group_dot(a, b, *g),
        Op::Concat(x) => t.concat(&[a, b], *x),
        Op::Stack(x) => t.stack(&[a, b], *x),
        Op::Mse => t.mse(a, b),
        Op::Bce => t.bce_with_logits(a, b),
    }
}

/// NumPy's broadcast of two shapes.
fn broadcast(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let n = a.len().max(b.len());
    let at = |s: &[usize], i: usize| {
        if i + s.len() < n {
            1
        } else {
            s[i + s.len() - n]
        }
    };
    (0..n)
        .map(|i| match (at(a, i), at(b, i)) {
            (x, y) if x == y || y == 1 => Some(x),
            (1, y) => Some(y),
            _ => None,
        })
        .collect()
}

fn without(s: &[usize], ax: usize) -> Vec<usize> {
    let mut s = s.to_vec();
    s.remove(ax);
    s
}

/// The result's shape by the operation's contract, `None` where it is an error.
fn expected(op: &Op, a: &[usize], b: &[usize], c: &[usize]) -> Option<Vec<usize>> {
    let len: usize = a.iter().product();
    let nd = a.len();
    let reduce = |x: &Option<usize>, nonempty: bool| match x {
        None => (!nonempty || len > 0).then(Vec::new),
        Some(x) if *x < nd => (!nonempty || a[*x] > 0).then(|| without(a, *x)),
        _ => None,
    };
    match op {
        Op::Clamp(lo, hi) => (lo <= hi).then(|| a.to_vec()),
        Op::Add | Op::Sub | Op::Mul | Op::Div => broadcast(a, b),
        Op::Sum(x) => reduce(x, false),
        Op::Mean(x) | Op::Max(x) | Op::Min(x) => reduce(x, true),
        Op::Lse(x) => reduce(&Some(*x), true),
        Op::Norm => Some(vec![]),
        Op::Softmax(x) | Op::LogSoftmax(x) => (*x < nd).then(|| a.to_vec()),
        Op::Transpose => Some(a.iter().rev().copied().collect()),
        Op::Reshape(s) => {
            let p = s.iter().try_fold(1usize, |p, &d| p.checked_mul(d));
            (p == Some(len)
                && s.iter()
                    .filter(|&&d| d > 0)
                    .try_fold(1usize, |p, &d| p.checked_mul(d))
                    .is_some_and(|p| p <= isize::MAX as usize))
            .then(|| s.clone())
        }
        Op::Narrow(x, s, l) => {
            (*x < nd && s.checked_add(*l).is_some_and(|e| e <= a[*x])).then(|| {
                let mut r = a.to_vec();
                r[*x] = *l;
                r
            })
        }
        Op::Matmul => match (a, b) {
            ([m, k], [k2, n]) if k == k2 => Some(vec![*m, *n]),
            ([bt, m, k], [k2, n]) if k == k2 => Some(vec![*bt, *m, *n]),
            ([bt, m, k], [b2, k2, n]) if k == k2 && bt == b2 => Some(vec![*bt, *m, *n]),
            _ => None,
        },
        Op::Linear(bias) => match (a, b) {
            ([n, i], [o, i2]) if i == i2 && (!bias || c == [*o] || c == [1, *o]) => {
                Some(vec![*n, *o])
            }
            _ => None,
        },
        Op::GroupDot(g) => {
            let bl: usize = b.iter().product();
            (nd == 2 && a[1] == bl && *g > 0 && bl.is_multiple_of(*g)).then(|| vec![a[0], *g])
        }
        Op::Concat(x) => (nd == b.len() && *x < nd && (0..nd).all(|i| i == *x || a[i] == b[i]))
            .then(|| {
                let mut r = a.to_vec();
                r[*x] += b[*x];
                r
            }),
        Op::Stack(x) => (a == b && *x <= nd).then(|| {
            let mut r = a.to_vec();
            r.insert(*x, 2);
            r
        }),
        Op::Mse | Op::Bce => (a == b && len > 0).then(Vec::new),
        _ => Some(a.to_vec()),
    }
}

/// The scalar reference of an elementwise map (the library's formulas with `std`'s
/// functions), for the vectorised kernels' handling of every kind of value.
fn reference(op: &Op, x: f64) -> Option<f64> {
    let sig = |x: f64| 1.0 / (1.0 + (-x).exp());
    Some(match op {
        Op::Neg => -x,
        Op::Scale(c) => c * x,
        Op::Exp => x.exp(),
        Op::Ln => x.ln(),
        Op::Sqrt => x.sqrt(),
        Op::Powi(n) => x.powi(*n),
        Op::Abs => x.abs(),
        Op::Tanh => x.tanh(),
        Op::Sigmoid => sig(x),
        Op::Relu => x.max(0.0),
        Op::Elu(a) if x <= 0.0 => a * x.exp_m1(),
        Op::Elu(_) | Op::Leaky(_) if x > 0.0 => x,
        Op::Leaky(a) => a * x,
        Op::Softplus => x.max(0.0) + (-x.abs()).exp().ln_1p(),
        Op::Clamp(lo, hi) => {
            if x.is_nan() {
                x
            } else {
                x.max(*lo).min(*hi)
            }
        }
        _ => return None,
    })
}

/// Whether `got` is the reference `want` for a type of relative precision `eps`.
pub(crate) fn agrees(got: f64, want: f64, eps: f64) -> bool {
    match (got.is_finite(), want.is_finite()) {
        (true, true) => close(got, want, eps),
        _ => got == want || got.is_nan() && want.is_nan(),
    }
}

/// Whether finite differences can check `op` at `a`, `b`: smooth there and well
/// conditioned.
fn smooth(op: &Op, a: &In, b: &In) -> bool {
    let x = ArrayD::from_shape_vec(IxDyn(&a.shape), a.vals.clone()).expect("shape");
    let far = |lo: f64| a.vals.iter().all(|v| v.abs() > lo);
    match op {
        Op::Ln | Op::Sqrt | Op::Powi(-1 | -2) => far(0.2),
        Op::Abs | Op::Relu => away_from(&x, &[0.0]),
        Op::Leaky(s) | Op::Elu(s) => s.is_finite() && away_from(&x, &[0.0]),
        Op::Clamp(lo, hi) => lo.is_finite() && hi.is_finite() && away_from(&x, &[*lo, *hi]),
        Op::Max(ax) | Op::Min(ax) => no_near_ties(&x, *ax),
        Op::Div => b.vals.iter().all(|v| v.abs() > 0.2),
        Op::Norm => a.vals.iter().map(|v| v * v).sum::<f64>() > KINK,
        Op::Scale(s) => s.is_finite(),
        _ => true,
    }
}

fn case<T: Element>(op: &Op, ins: &[In], eps: f64, clean: bool) -> Result<(), TestCaseError> {
    let got = exercise::<T, _>(ins, |t, h| apply(op, t, h))?;
    let want = expected(op, &ins[0].shape, &ins[1].shape, &ins[2].shape);
    let y = match (got, want) {
        (Ok(y), Some(s)) => {
            prop_assert_eq!(y.shape(), &s[..], "{:?}: wrong shape", op);
            y
        }
        (Err(_), None) => return Ok(()),
        (got, want) => {
            let got = got.map(|y| y.shape().to_vec());
            return Err(TestCaseError::fail(format!(
                "{op:?} on {:?}, {:?}: {got:?}, expected {want:?}",
                ins[0].shape, ins[1].shape
            )));
        }
    };
    let (a, b) = (&ins[0], &ins[1]);
    let cast = |v: f64| T::cst(v).to_f64().unwrap_or(f64::NAN);
    let yv: Vec<f64> = y.iter().map(|v| v.to_f64().unwrap_or(f64::NAN)).collect();
    if reference(op, 0.5).is_some() {
        for (&x, &g) in a.vals.iter().zip(&yv) {
            let want = cast(reference(op, cast(x)).unwrap_or(f64::NAN));
            prop_assert!(
                agrees(g, want, eps),
                "{:?}({}) = {}, reference {}",
                op,
                x,
                g,
                want
            );
        }
    }
    let both = |f: fn(f64, f64) -> f64| -> Option<ArrayD<f64>> {
        let x = ArrayD::from_shape_vec(IxDyn(&a.shape), a.vals.iter().map(|&v| cast(v)).collect())
            .ok()?;
        let z = ArrayD::from_shape_vec(IxDyn(&b.shape), b.vals.iter().map(|&v| cast(v)).collect())
            .ok()?;
        let s = broadcast(&a.shape, &b.shape)?;
        let (x, z) = (
            x.broadcast(IxDyn(&s))?.to_owned(),
            z.broadcast(IxDyn(&s))?.to_owned(),
        );
        Some(
            ndarray::Zip::from(&x)
                .and(&z)
                .map_collect(|&x, &z| cast(f(x, z))),
        )
    };
    let bin = match op {
        Op::Add => both(|x, z| x + z),
        Op::Sub => both(|x, z| x - z),
        Op::Mul => both(|x, z| x * z),
        Op::Div => both(|x, z| x / z),
        _ => None,
    };
    if let Some(r) = bin {
        for (&g, &w) in yv.iter().zip(r.iter()) {
            prop_assert!(agrees(g, w, eps), "{:?}: {} against {}", op, g, w);
        }
    }
    if let (Op::Matmul, [m, k], [_, n]) = (op, &a.shape[..], &b.shape[..]) {
        for i in 0..*m {
            for j in 0..*n {
                let w: f64 = (0..*k)
                    .map(|q| cast(a.vals[i * k + q]) * cast(b.vals[q * n + j]))
                    .sum();
                let g = yv[i * n + j];
                prop_assert!(
                    !w.is_nan() || g.is_nan(),
                    "matmul lost a NaN at ({}, {}): {}",
                    i,
                    j,
                    g
                );
                if clean {
                    prop_assert!(
                        agrees(g, w, eps * 16.0),
                        "matmul ({}, {}): {} against {}",
                        i,
                        j,
                        g,
                        w
                    );
                }
            }
        }
    }
    if matches!(
        op,
        Op::Sum(None) | Op::Max(None) | Op::Min(None) | Op::Mean(None)
    ) && a.vals.iter().any(|v| v.is_nan())
    {
        prop_assert!(yv[0].is_nan(), "{:?} lost a NaN: {}", op, yv[0]);
    }
    if let Op::Lse(_) | Op::Softmax(_) | Op::LogSoftmax(_) = op {
        let nan_lane = a.vals.iter().any(|v| v.is_nan());
        prop_assert!(
            !nan_lane || yv.iter().any(|v| v.is_nan()),
            "{:?} lost a NaN: {:?}",
            op,
            yv
        );
    }
    Ok(())
}

fn dense_case() -> impl Strategy<Value = (Op, [In; 3], bool)> {
    (
        op(),
        shape(),
        any::<bool>(),
        prop::sample::select(vec![0usize, 1, 2, 3]),
    )
        .prop_flat_map(|(op, sa, clean, o)| {
            let sb = partner(sa.clone());
            (
                Just(op),
                Just(sa),
                sb,
                Just(clean),
                prop_oneof![Just(vec![o]), Just(vec![1, o]), shape()],
            )
        })
        .prop_flat_map(|(op, sa, sb, clean, sc)| {
            let sb = if matches!(op, Op::Linear(_)) && sa.len() == 2 && sb.len() == 2 {
                vec![sc.last().copied().unwrap_or(1), sa[1]]
            } else {
                sb
            };
            (
                Just(op),
                [input(sa, clean), input(sb, clean), input(sc, clean)],
                Just(clean),
            )
        })
}

proptest! {
    #![proptest_config(cases(64))]

    /// Every dense operation in both element types; finite differences on clean `f64`
    /// inputs, zero-size and non-contiguous ones included.
    #[test]
    fn dense_ops((op, ins, clean) in dense_case(), seed in any::<u64>()) {
        case::<f64>(&op, &ins, 1e-12, clean)?;
        case::<f32>(&op, &ins, 1e-5, clean)?;
        let ok = expected(&op, &ins[0].shape, &ins[1].shape, &ins[2].shape).is_some();
        if clean && ok && ins.iter().all(In::finite) && smooth(&op, &ins[0], &ins[1]) {
            let xs: Vec<ArrayD<f64>> = ins.iter().map(In::build).collect();
            let finite = tensor::value(&mut TapeBuffers::new(), |t, h| apply(&op, t, &h), xs.iter().map(Arg::C).collect::<Vec<_>>())
                .is_ok_and(|y| y.iter().all(|v| v.is_finite() && v.abs() < 1e6));
            if finite {
                check_op(&xs, seed, |t, h| apply(&op, t, h))?;
            }
        }
    }
}

/// Products past the small kernel (2^14 multiply-adds and more: the narrow kernels and
/// ndarray's), every layout, with one NaN or infinity placed in either operand or none.
#[derive(Clone, Debug)]
struct Big {
    m: usize,
    k: usize,
    n: usize,
    lays: [Lay; 3],
    special: Option<(bool, usize, f64)>,
    kind: u8,
}

fn big_product() -> impl Strategy<Value = Big> {
    (
        prop::sample::select(vec![1usize, 7, 64, 129, 300]),
        prop::sample::select(vec![1usize, 3, 16, 24]),
        prop::sample::select(vec![1usize, 2, 16, 33]),
        [lay(), lay(), lay()],
        prop::option::of((
            any::<bool>(),
            any::<usize>(),
            prop::sample::select(vec![f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0]),
        )),
        0..3u8,
    )
        .prop_map(|(m, k, n, lays, special, kind)| Big {
            m,
            k,
            n,
            lays,
            special,
            kind,
        })
}

impl Big {
    /// The operands (`a` `[m, k]`, `b` `[k, n]` or, for `linear`, `[n, k]`, a bias).
    fn inputs(&self) -> [In; 3] {
        let fill = |shape: Vec<usize>, lay: Lay, salt: usize| {
            let len: usize = shape.iter().product();
            let vals = (0..len)
                .map(|i| ((i * 7919 + salt * 104_729) % 997) as f64 / 249.0 - 2.0)
                .collect();
            In { shape, lay, vals }
        };
        let b = if self.kind == 1 {
            vec![self.n, self.k]
        } else {
            vec![self.k, self.n]
        };
        let mut ins = [
            fill(vec![self.m, self.k], self.lays[0], 1),
            fill(b, self.lays[1], 2),
            fill(vec![self.n], self.lays[2], 3),
        ];
        if let Some((left, at, v)) = self.special {
            let x = &mut ins[usize::from(!left)];
            let len = x.vals.len();
            x.vals[at % len] = v;
        }
        ins
    }

    fn run<T: Element>(&self, t: &mut Tape<'_, T>, h: &[Var]) -> AdResult<Var> {
        match self.kind {
            0 => t.matmul(h[0], h[1]),
            1 => t.linear(h[0], h[1], Some(h[2])),
            _ => {
                let a = t.stack(&[h[0], h[0]], 0)?;
                t.matmul(a, h[1])
            }
        }
    }
}

fn big_case<T: Element>(c: &Big, ins: &[In; 3], eps: f64) -> Result<(), TestCaseError> {
    let y = exercise::<T, _>(ins, |t, h| c.run(t, h))?;
    let y = y.map_err(|e| TestCaseError::fail(format!("{c:?}: {e}")))?;
    let cast = |v: f64| T::cst(v).to_f64().unwrap_or(f64::NAN);
    let (a, b) = (&ins[0].vals, &ins[1].vals);
    let (m, k, n) = (c.m, c.k, c.n);
    let yv: Vec<f64> = y.iter().map(|v| v.to_f64().unwrap_or(f64::NAN)).collect();
    prop_assert_eq!(yv.len(), m * n * if c.kind == 2 { 2 } else { 1 });
    for i in 0..m {
        for j in 0..n {
            let bq = |q: usize| {
                if c.kind == 1 {
                    b[j * k + q]
                } else {
                    b[q * n + j]
                }
            };
            let mut w: f64 = (0..k).map(|q| cast(a[i * k + q]) * cast(bq(q))).sum();
            if c.kind == 1 {
                w += cast(ins[2].vals[j]);
            }
            let g = yv[i * n + j];
            prop_assert!(
                agrees(g, w, eps * k as f64),
                "{:?} at ({}, {}): {} against {}",
                c,
                i,
                j,
                g,
                w
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(cases(32))]

    #[test]
    fn large_products(c in big_product(), seed in any::<u64>()) {
        let ins = c.inputs();
        big_case::<f64>(&c, &ins, 1e-12)?;
        big_case::<f32>(&c, &ins, 1e-5)?;
        if c.special.is_none() && c.m * c.k * c.n < 1 << 16 {
            let xs: Vec<ArrayD<f64>> = ins.iter().map(In::build).collect();
            check_op(&xs, seed, |t, h| c.run(t, h))?;
        }
    }
}
