//! The one check every row uses: the generated reverse gradient against the tape's,
//! the generated forward tangents against the reverse gradient, both against central
//! differences, and the primal value returned by the derivative.

/// `|a - b| ≤ tol · max(1, |a|, |b|)`.
pub(crate) fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * 1f64.max(a.abs()).max(b.abs())
}

/// Central differences of `f` at `x`.
pub(crate) fn central(f: &dyn Fn(&[f64]) -> f64, x: &[f64]) -> Vec<f64> {
    let mut g = vec![0.0; x.len()];
    let mut xp = x.to_vec();
    for k in 0..x.len() {
        let h = 1e-6 * 1f64.max(x[k].abs());
        xp[k] = x[k] + h;
        let fp = f(&xp);
        xp[k] = x[k] - h;
        let fm = f(&xp);
        xp[k] = x[k];
        g[k] = (fp - fm) / (2.0 * h);
    }
    g
}

/// `(f(x), ∂f/∂x · t)` of a row.
pub(crate) type Tangent<'a> = &'a dyn Fn(&[f64], &[f64]) -> (f64, f64);

/// The functions of one row.
pub(crate) struct Row<'a> {
    pub(crate) name: &'a str,
    pub(crate) primal: &'a dyn Fn(&[f64]) -> f64,
    /// `d_f(x, dx, seed = 1) -> f(x)` (accumulating into `dx`).
    pub(crate) reverse: &'a dyn Fn(&[f64], &mut [f64]) -> f64,
    /// `(f(x), ∂f/∂x · t)`.
    pub(crate) forward: Tangent<'a>,
    /// The tape's gradient.
    pub(crate) tape: &'a dyn Fn(&[f64]) -> Vec<f64>,
}

/// Checks a row at `x`; `fd_tol` is the tolerance against central differences.
pub(crate) fn check(row: &Row<'_>, x: &[f64], fd_tol: f64) -> Result<(), String> {
    let n = x.len();
    let y = (row.primal)(x);
    let mut g = vec![0.0; n];
    let yr = (row.reverse)(x, &mut g);
    // Deferred terms may add in another order: equal to rounding.
    if !(close(yr, y, 1e-14) || y.is_nan() && yr.is_nan()) {
        return Err(format!("{}: reverse returned {yr}, primal {y}", row.name));
    }
    let tape = (row.tape)(x);
    let fd = central(row.primal, x);
    for k in 0..n {
        if !close(g[k], tape[k], 1e-10) {
            return Err(format!(
                "{}: ∂/∂x[{k}] reverse {} vs tape {} at {x:?}",
                row.name, g[k], tape[k]
            ));
        }
        let mut t = vec![0.0; n];
        t[k] = 1.0;
        let (yf, d) = (row.forward)(x, &t);
        if yf.to_bits() != y.to_bits() {
            return Err(format!("{}: forward returned {yf}, primal {y}", row.name));
        }
        if !close(d, g[k], 1e-10) {
            return Err(format!(
                "{}: ∂/∂x[{k}] forward {d} vs reverse {} at {x:?}",
                row.name, g[k]
            ));
        }
        if !close(fd[k], g[k], fd_tol) {
            return Err(format!(
                "{}: ∂/∂x[{k}] differences {} vs reverse {} at {x:?}",
                row.name, fd[k], g[k]
            ));
        }
    }
    // Shadows accumulate: a second call adds the same gradient.
    let mut g2 = g.clone();
    (row.reverse)(x, &mut g2);
    for k in 0..n {
        if !close(g2[k], 2.0 * g[k], 1e-12) {
            return Err(format!(
                "{}: the shadow did not accumulate at {k}",
                row.name
            ));
        }
    }
    Ok(())
}

/// A row for functions `f(x: &[f64]) -> f64` with generated `d_f`, `t_f` and a
/// generic twin `g`.
#[macro_export]
macro_rules! row {
    ($name:literal, $f:ident, $d:ident, $t:ident, $g:ident) => {
        $crate::check::Row {
            name: $name,
            primal: &|x| $f(x),
            reverse: &|x, dx| $d(x, dx, 1.0),
            forward: &|x, t| $t(x, t),
            tape: &|x| {
                shade_autodiff::scalar::gradient(shade_autodiff::scalar::shade_fn!($g(&[S])), x, ())
                    .expect("tape gradient")
            },
        }
    };
}

/// Writes a row function twice: as plain `f64` code carrying the attributes, and as a
/// generic twin over `Real` (`S` is `f64` in the first).
#[macro_export]
macro_rules! twin {
    ($(#[$a:meta])* fn $f:ident / $g:ident ($x:ident) { $($body:tt)* }) => {
        $(#[$a])*
        fn $f($x: &[f64]) -> f64 {
            $($body)*
        }
        fn $g<S: shade_autodiff::scalar::Real>($x: &[S]) -> S {
            $($body)*
        }
    };
}
