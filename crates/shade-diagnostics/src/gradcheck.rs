//! gradcheck and gradgradcheck: derivatives from a backend against a reference
//! (central finite differences by default), with PyTorch-like tolerances per
//! precision, naming the worst entries and, where it can, the operation to suspect.
//!
//! An entry passes when `|analytic - numeric| <= atol + rtol · |numeric|`.
//!
//! - [`gradcheck`]: any gradient (a closure: a backend, a hand-written derivative)
//!   against central differences of the function's values.
//! - [`gradcheck_fn`] / [`gradgradcheck`]: a scalar-layer function ([`shade_fn!`]),
//!   first and second order (Hessian-vector products against differences of gradients).
//! - [`gradcheck_tensor`]: a tensor program's parameters ([`TensorProgram`]); all
//!   coordinates for small parameter sets, a seeded random subset for large ones; on
//!   failure the program is re-run in anomaly mode to name a NaN-producing operation,
//!   and kinks (one-sided differences that disagree) are pointed out.
//!
//! [`shade_fn!`]: shade_autodiff::shade_fn
//!
//! ```
//! use shade_autodiff::scalar::{Real, shade_fn};
//! use shade_diagnostics::{GradcheckOptions, gradcheck_fn};
//!
//! fn f<S: Real>(x: &[S]) -> S { x[0].sin() * x[1].exp() }
//! let report = gradcheck_fn(shade_fn!(f(&[S])), &[0.3, -0.2], (), &GradcheckOptions::f64())?;
//! assert!(report.passed());
//! assert_eq!(report.checked, 2);
//! # Ok::<(), shade_diagnostics::Diagnostic>(())
//! ```

use crate::anomaly::detect_anomaly;
use crate::render::{Coded, Diagnostic};
use ndarray::ArrayD;
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::index::sample;
use shade_autodiff::scalar::{ConstArgs, Join, Kinds, ScalarFn, Slice, hvp, value_and_gradient};
use shade_autodiff::tensor::{self, Element, Tape, TapeBuffers, Var};
use shade_autodiff::{AdResult, Duplicated};
use std::fmt::Write as _;

/// Tolerances, step and sampling of a check.
#[derive(Clone, Debug, PartialEq)]
pub struct GradcheckOptions {
    /// Absolute tolerance.
    pub atol: f64,
    /// Relative tolerance (times `|numeric|`).
    pub rtol: f64,
    /// Finite-difference step.
    pub eps: f64,
    /// Check every coordinate up to this many; above it, a seeded random subset of
    /// this size.
    pub max_coords: usize,
    /// Seed of the subset.
    pub seed: u64,
    /// How many of the worst entries the report keeps.
    pub worst: usize,
}

impl GradcheckOptions {
    /// For `f64`: `atol = 1e-5`, `rtol = 1e-3`, `eps = 1e-6` (PyTorch's defaults).
    pub fn f64() -> Self {
        GradcheckOptions {
            atol: 1e-5,
            rtol: 1e-3,
            eps: 1e-6,
            max_coords: 256,
            seed: 0,
            worst: 3,
        }
    }

    /// For `f32`: `atol = 1e-2`, `rtol = 1e-2`, `eps = 1e-2` (differences in single
    /// precision lose about half the digits).
    pub fn f32() -> Self {
        GradcheckOptions {
            atol: 1e-2,
            rtol: 1e-2,
            eps: 1e-2,
            ..Self::f64()
        }
    }

    /// The options for element type `T` (by its size).
    pub fn for_element<T: Element>() -> Self {
        if std::mem::size_of::<T>() == 4 {
            Self::f32()
        } else {
            Self::f64()
        }
    }

    /// Whether `analytic` is close enough to `numeric`.
    pub fn close(&self, analytic: f64, numeric: f64) -> bool {
        (analytic - numeric).abs() <= self.atol + self.rtol * numeric.abs()
    }
}

impl Default for GradcheckOptions {
    fn default() -> Self {
        Self::f64()
    }
}

/// First or second order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Gradients.
    First,
    /// Hessian-vector products.
    Second,
}

/// One compared entry.
#[derive(Clone, Debug, PartialEq)]
pub struct Mismatch {
    /// The parameter (array) it belongs to, for multi-parameter checks.
    pub param: usize,
    /// Its index within the parameter.
    pub index: Vec<usize>,
    /// The backend's value.
    pub analytic: f64,
    /// The reference value.
    pub numeric: f64,
    /// `|analytic - numeric|`.
    pub error: f64,
}

/// What a check found.
#[derive(Clone, Debug, PartialEq)]
pub struct GradcheckReport {
    /// First or second order.
    pub order: Order,
    /// Entries compared.
    pub checked: usize,
    /// Entries that exist (all coordinates of all parameters).
    pub total: usize,
    /// Entries outside the tolerance.
    pub failures: usize,
    /// The worst entries, largest error relative to its tolerance first.
    pub worst: Vec<Mismatch>,
    /// The operation to suspect, or another hint, when one is known.
    pub suspect: Option<String>,
    /// What the derivatives were compared with (`finite differences`, or a backend).
    pub reference: String,
    /// The options used.
    pub options: GradcheckOptions,
}

impl GradcheckReport {
    pub(crate) fn new(order: Order, total: usize, options: &GradcheckOptions) -> Self {
        GradcheckReport {
            order,
            checked: 0,
            total,
            failures: 0,
            worst: Vec::new(),
            suspect: None,
            reference: "finite differences".into(),
            options: options.clone(),
        }
    }

    pub(crate) fn add(&mut self, param: usize, index: Vec<usize>, analytic: f64, numeric: f64) {
        self.checked += 1;
        let o = &self.options;
        let ok = o.close(analytic, numeric) && analytic.is_finite() == numeric.is_finite();
        if ok {
            return;
        }
        self.failures += 1;
        let error = (analytic - numeric).abs();
        self.worst.push(Mismatch {
            param,
            index,
            analytic,
            numeric,
            error: if error.is_nan() { f64::INFINITY } else { error },
        });
        let key = |m: &Mismatch| m.error / (o.atol + o.rtol * m.numeric.abs());
        self.worst.sort_by(|a, b| {
            key(b)
                .partial_cmp(&key(a))
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        self.worst.truncate(o.worst.max(1));
    }

    /// Whether every compared entry is within the tolerance.
    pub fn passed(&self) -> bool {
        self.failures == 0
    }

    /// The failure as a diagnostic (`SHADE-E0500` first order, `SHADE-E0501` second),
    /// or `None` when the check passed.
    #[track_caller]
    pub fn to_diagnostic(&self) -> Option<Diagnostic> {
        if self.passed() {
            return None;
        }
        let (code, what, help) = match self.order {
            Order::First => (
                "SHADE-E0500",
                "gradient check failed",
                "check the reverse rules of the operations involved (custom rules first); at a kink (relu/abs/max at 0) move the point",
            ),
            Order::Second => (
                "SHADE-E0501",
                "second-order check (Hessian-vector products) failed",
                "write custom rules' derivatives with `Real` operations on their arguments (not `.value()`), so they can be differentiated again",
            ),
        };
        let o = &self.options;
        let mut d = Diagnostic::error(
            code,
            format!(
                "{what}: {} of {} checked entries differ from {}",
                self.failures, self.checked, self.reference
            ),
        )
        .here()
        .with_note(format!(
            "tolerance: |analytic - numeric| <= {:e} + {:e} * |numeric| (step {:e})",
            o.atol, o.rtol, o.eps
        ));
        for m in &self.worst {
            let mut s = String::new();
            if self.worst.iter().any(|w| w.param != 0) {
                let _ = write!(s, "parameter {} ", m.param);
            }
            let _ = write!(
                s,
                "index {:?}: analytic {}, numeric {}, error {}",
                m.index,
                fmt_num(m.analytic),
                fmt_num(m.numeric),
                fmt_num(m.error)
            );
            d = d.with_note(s);
        }
        if let Some(s) = &self.suspect {
            d = d.with_note(s.clone());
        }
        Some(d.with_help(help))
    }

    /// `Ok(self)` when passed, the diagnostic otherwise.
    #[track_caller]
    pub fn into_result(self) -> Result<Self, Diagnostic> {
        match self.to_diagnostic() {
            None => Ok(self),
            Some(d) => Err(d),
        }
    }
}

fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 || (1e-4..1e6).contains(&a) {
        format!("{v:.6}")
    } else {
        format!("{v:.6e}")
    }
}

/// The coordinates to check: all of `0..n` when `n <= max`, else a sorted seeded
/// random subset of `max`.
fn coords(n: usize, o: &GradcheckOptions) -> Vec<usize> {
    if n <= o.max_coords {
        (0..n).collect()
    } else {
        let mut rng = StdRng::seed_from_u64(o.seed);
        let mut v = sample(&mut rng, n, o.max_coords).into_vec();
        v.sort_unstable();
        v
    }
}

/// Compares `gradient(x)` (any backend) with central differences of `f` at `x`.
///
/// Errors from `f` or `gradient` come back as diagnostics; a mismatch is a failed
/// report (see [`GradcheckReport::into_result`]).
#[track_caller]
pub fn gradcheck<E: Coded>(
    f: impl Fn(&[f64]) -> Result<f64, E>,
    gradient: impl FnOnce(&[f64]) -> Result<Vec<f64>, E>,
    x: &[f64],
    options: &GradcheckOptions,
) -> Result<GradcheckReport, Diagnostic> {
    let conv = |e: E| Diagnostic::from_error(&e);
    let g = gradient(x).map_err(conv)?;
    let mut rep = GradcheckReport::new(Order::First, x.len(), options);
    if g.len() != x.len() {
        return Err(Diagnostic::error(
            "SHADE-E0500",
            format!(
                "the gradient has {} entries, but the input has {}",
                g.len(),
                x.len()
            ),
        )
        .here());
    }
    let mut xp = x.to_vec();
    for i in coords(x.len(), options) {
        let h = options.eps;
        xp[i] = x[i] + h;
        let fp = f(&xp).map_err(conv)?;
        xp[i] = x[i] - h;
        let fm = f(&xp).map_err(conv)?;
        xp[i] = x[i];
        rep.add(0, vec![i], g[i], (fp - fm) / (2.0 * h));
    }
    if !rep.passed() {
        rep.suspect = kink_hint(&rep, |i, s| {
            let mut xp = x.to_vec();
            xp[i] += s;
            f(&xp).ok()
        });
    }
    Ok(rep)
}

/// Points out a kink at the worst entry: one-sided differences that disagree.
fn kink_hint(rep: &GradcheckReport, f: impl Fn(usize, f64) -> Option<f64>) -> Option<String> {
    let m = rep.worst.first()?;
    if rep.worst.iter().any(|w| w.param != m.param) || m.index.len() != 1 {
        return None;
    }
    let i = m.index[0];
    let h = rep.options.eps;
    let (f0, fp, fm) = (f(i, 0.0)?, f(i, h)?, f(i, -h)?);
    let (right, left) = ((fp - f0) / h, (f0 - fm) / h);
    if !rep.options.close(right, left) {
        Some(format!(
            "the function has a kink at index [{i}]: one-sided differences {} (right) and {} (left) disagree",
            fmt_num(right),
            fmt_num(left)
        ))
    } else {
        None
    }
}

/// [`gradcheck`] for a scalar-layer function (reverse mode) with trailing constants.
#[track_caller]
pub fn gradcheck_fn<F, C>(
    f: F,
    x: &[f64],
    consts: C,
    options: &GradcheckOptions,
) -> Result<GradcheckReport, Diagnostic>
where
    F: ScalarFn + Copy,
    F::Kinds: Join<Slice>,
    C: ConstArgs<<F::Kinds as Kinds>::Tail>,
{
    gradcheck(
        |x| value_and_gradient(f, x, &consts).map(|(v, _)| v),
        |x| value_and_gradient(f, x, &consts).map(|(_, g)| g),
        x,
        options,
    )
}

/// Second order: Hessian-vector products `H·eᵢ` (forward over reverse) against central
/// differences of the reverse-mode gradient, column by column (a seeded subset of
/// columns for large inputs). Failures are `SHADE-E0501`.
#[track_caller]
pub fn gradgradcheck<F, C>(
    f: F,
    x: &[f64],
    consts: C,
    options: &GradcheckOptions,
) -> Result<GradcheckReport, Diagnostic>
where
    F: ScalarFn + Copy,
    F::Kinds: Join<Slice>,
    C: ConstArgs<<F::Kinds as Kinds>::Tail>,
{
    let n = x.len();
    let conv = |e: shade_autodiff::AdError| Diagnostic::from_error(&e);
    let mut rep = GradcheckReport::new(Order::Second, n * n, options);
    let mut xp = x.to_vec();
    let mut e = vec![0.0; n];
    for j in coords(n, options) {
        e[j] = 1.0;
        let hv = hvp(f, x, &e, &consts).map_err(conv)?;
        e[j] = 0.0;
        let h = options.eps;
        xp[j] = x[j] + h;
        let (_, gp) = value_and_gradient(f, &xp, &consts).map_err(conv)?;
        xp[j] = x[j] - h;
        let (_, gm) = value_and_gradient(f, &xp, &consts).map_err(conv)?;
        xp[j] = x[j];
        for i in 0..n {
            rep.add(0, vec![i, j], hv[i], (gp[i] - gm[i]) / (2.0 * h));
        }
    }
    Ok(rep)
}

/// A tensor program with parameters: the model whose gradient [`gradcheck_tensor`]
/// checks. Constants (features, graph matrices, labels) live in the implementing
/// value and are borrowed for the tape's lifetime.
///
/// Closures `for<'a> Fn(&mut Tape<'a, T>, &[Var]) -> AdResult<Var>` are programs too
/// (they can add dense constants with `Tape::constant`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tensor program",
    label = "expected a closure `|t: &mut Tape<'_, T>, params: &[Var]| -> AdResult<Var>` or a type implementing `TensorProgram`",
    note = "a program that borrows sparse matrices or index arrays implements `TensorProgram` on a struct holding them: `fn run<'a>(&'a self, tape: &mut Tape<'a, T>, params: &[Var])`"
)]
pub trait TensorProgram<T: Element> {
    /// Builds the scalar result (a loss) from the parameters' handles, in order.
    fn run<'a>(&'a self, tape: &mut Tape<'a, T>, params: &[Var]) -> AdResult<Var>;
}

impl<T: Element, F> TensorProgram<T> for F
where
    F: for<'a> Fn(&mut Tape<'a, T>, &[Var]) -> AdResult<Var>,
{
    fn run<'a>(&'a self, tape: &mut Tape<'a, T>, params: &[Var]) -> AdResult<Var> {
        self(tape, params)
    }
}

fn tensor_loss<T: Element, P: TensorProgram<T> + ?Sized>(
    program: &P,
    params: &[ArrayD<T>],
) -> AdResult<f64> {
    let mut bufs = TapeBuffers::new();
    let args: Vec<shade_autodiff::Const<&ArrayD<T>>> =
        params.iter().map(shade_autodiff::Const).collect();
    let y = tensor::value(&mut bufs, |t, hs| program.run(t, &hs), args)?;
    if y.len() != 1 {
        return Err(shade_autodiff::AdError::NonScalarReturn { len: y.len() });
    }
    Ok(y.iter()
        .next()
        .map_or(f64::NAN, |v| v.to_f64().unwrap_or(f64::NAN)))
}

/// Checks the reverse-mode gradient of a tensor program with respect to all its
/// parameters against central differences (in `f64` arithmetic on the loss values).
///
/// Every coordinate is checked when the parameters hold at most
/// `options.max_coords` numbers; otherwise a seeded random subset of that size. On
/// failure, the program is re-run in anomaly mode: an operation producing NaN/Inf is
/// named in the report.
#[track_caller]
pub fn gradcheck_tensor<T: Element, P: TensorProgram<T> + ?Sized>(
    program: &P,
    params: &[ArrayD<T>],
    options: &GradcheckOptions,
) -> Result<GradcheckReport, Diagnostic> {
    let conv = |e: shade_autodiff::AdError| Diagnostic::from_error(&e);
    let mut grads: Vec<ArrayD<T>> = params.iter().map(|p| ArrayD::zeros(p.raw_dim())).collect();
    {
        let mut bufs = TapeBuffers::new();
        let args: Vec<_> = params
            .iter()
            .zip(grads.iter_mut())
            .map(|(p, g)| Duplicated(p, g))
            .collect();
        tensor::gradient(&mut bufs, |t, hs| program.run(t, &hs), args).map_err(conv)?;
    }
    let sizes: Vec<usize> = params.iter().map(|p| p.len()).collect();
    let total: usize = sizes.iter().sum();
    let mut rep = GradcheckReport::new(Order::First, total, options);
    let mut work: Vec<ArrayD<T>> = params.to_vec();
    let h = T::cst(options.eps);
    for flat in coords(total, options) {
        let (mut k, mut i) = (0, flat);
        while i >= sizes[k] {
            i -= sizes[k];
            k += 1;
        }
        let orig = params[k].as_slice_memory_order().map(|s| s[i]);
        let Some(orig) = orig else { continue };
        let set = |w: &mut Vec<ArrayD<T>>, v: T| {
            if let Some(s) = w[k].as_slice_memory_order_mut() {
                s[i] = v;
            }
        };
        set(&mut work, orig + h);
        let xp = (orig + h).to_f64().unwrap_or(f64::NAN);
        let fp = tensor_loss(program, &work).map_err(conv)?;
        set(&mut work, orig - h);
        let xm = (orig - h).to_f64().unwrap_or(f64::NAN);
        let fm = tensor_loss(program, &work).map_err(conv)?;
        set(&mut work, orig);
        let numeric = (fp - fm) / (xp - xm);
        let analytic = grads[k]
            .as_slice_memory_order()
            .map_or(f64::NAN, |s| s[i].to_f64().unwrap_or(f64::NAN));
        let index = unravel(i, params[k].shape());
        rep.add(k, index, analytic, numeric);
    }
    if !rep.passed() {
        rep.suspect = tensor_suspect(program, params);
    }
    Ok(rep)
}

/// Forward mode: checks `∂f/∂pᵢ` from pushforwards (tangent `eᵢ`) of a tensor program
/// against central differences, on the same coordinates as [`gradcheck_tensor`].
#[track_caller]
pub fn gradcheck_tensor_forward<T: Element, P: TensorProgram<T> + ?Sized>(
    program: &P,
    params: &[ArrayD<T>],
    options: &GradcheckOptions,
) -> Result<GradcheckReport, Diagnostic> {
    let conv = |e: shade_autodiff::AdError| Diagnostic::from_error(&e);
    let sizes: Vec<usize> = params.iter().map(|p| p.len()).collect();
    let total: usize = sizes.iter().sum();
    let mut rep = GradcheckReport::new(Order::First, total, options);
    let mut work: Vec<ArrayD<T>> = params.to_vec();
    let mut tans: Vec<ArrayD<T>> = params.iter().map(|p| ArrayD::zeros(p.raw_dim())).collect();
    let h = T::cst(options.eps);
    let mut bufs = TapeBuffers::new();
    for flat in coords(total, options) {
        let (mut k, mut i) = (0, flat);
        while i >= sizes[k] {
            i -= sizes[k];
            k += 1;
        }
        let Some(orig) = params[k].as_slice_memory_order().map(|s| s[i]) else {
            continue;
        };
        let set = |w: &mut Vec<ArrayD<T>>, v: T| {
            if let Some(s) = w[k].as_slice_memory_order_mut() {
                s[i] = v;
            }
        };
        set(&mut tans, T::one());
        let analytic = {
            let args: Vec<_> = params
                .iter()
                .zip(tans.iter_mut())
                .map(|(p, t)| Duplicated(p, t))
                .collect();
            let (_, dy) =
                tensor::pushforward(&mut bufs, |t, hs| program.run(t, &hs), args).map_err(conv)?;
            if dy.len() != 1 {
                return Err(conv(shade_autodiff::AdError::NonScalarReturn {
                    len: dy.len(),
                }));
            }
            dy.iter()
                .next()
                .map_or(f64::NAN, |v| v.to_f64().unwrap_or(f64::NAN))
        };
        set(&mut tans, T::zero());
        set(&mut work, orig + h);
        let xp = (orig + h).to_f64().unwrap_or(f64::NAN);
        let fp = tensor_loss(program, &work).map_err(conv)?;
        set(&mut work, orig - h);
        let xm = (orig - h).to_f64().unwrap_or(f64::NAN);
        let fm = tensor_loss(program, &work).map_err(conv)?;
        set(&mut work, orig);
        rep.add(
            k,
            unravel(i, params[k].shape()),
            analytic,
            (fp - fm) / (xp - xm),
        );
    }
    Ok(rep)
}

/// Row-major multi-index of flat position `i`.
fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for (k, &d) in shape.iter().enumerate().rev() {
        if d > 0 {
            idx[k] = i % d;
            i /= d;
        }
    }
    idx
}

/// Re-runs the program in anomaly mode; names the first NaN/Inf-producing operation.
fn tensor_suspect<T: Element, P: TensorProgram<T> + ?Sized>(
    program: &P,
    params: &[ArrayD<T>],
) -> Option<String> {
    let mut grads: Vec<ArrayD<T>> = params.iter().map(|p| ArrayD::zeros(p.raw_dim())).collect();
    let mut bufs = TapeBuffers::new();
    let args: Vec<_> = params
        .iter()
        .zip(grads.iter_mut())
        .map(|(p, g)| Duplicated(p, g))
        .collect();
    let r = detect_anomaly(&mut bufs, |b| {
        tensor::gradient(b, |t, hs| program.run(t, &hs), args)
    });
    match r {
        Err(d) => Some(format!(
            "suspect: {}{}",
            d.message,
            d.location
                .map(|l| format!(" (at {}:{})", l.file(), l.line()))
                .unwrap_or_default()
        )),
        Ok(_) => Some(
            "anomaly mode found no NaN/Inf: suspect a custom rule (`Tape::custom`) or a kink of relu/abs/max at these values"
                .into(),
        ),
    }
}
