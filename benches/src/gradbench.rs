//! [GradBench](https://github.com/gradbench/gradbench)'s twelve evals written with shade,
//! and the GradBench tool that serves them ([`tool`], behind the `shade-gradbench`
//! binary).
//!
//! # One module per eval, two engines
//!
//! `gradbench/<eval>.rs` holds the eval's mathematics in plain Rust, depending on
//! `std` and `shade_autodiff` only (no JSON, nothing of the tool), in the two forms the
//! two engines differentiate:
//!
//! - a plain `f64` function carrying `#[autodiff_reverse]` / `#[autodiff_forward]`:
//!   the compile-time engine (`--engine macro`) calls its generated derivative, and the
//!   function itself is that engine's primal;
//! - a function generic over [`Real`](shade_autodiff::scalar::Real) (suffix `_tape`):
//!   shade's run-time scalar layer (`--engine tape`) evaluates it at `f64` for the
//!   primal and at `Var` / `Dual` / `DualVec` (and their nestings) for the derivatives.
//!
//! The two forms are the same formula written twice, because the compile-time engine
//! differentiates `f64` code and the tape needs the generic one; each module has a test
//! that they agree (values and derivatives). Where the compile-time subset cannot
//! express a function (a second derivative, nested derivatives), the module has the
//! tape form only and the tool says so ([`tool::MODULES`]).
//!
//! `gmm.rs`, `kmeans.rs`, `lse.rs` and `lstm.rs` are also compiled into
//! `shade-autodiff-macros`' tests (by `#[path]`), which is why these files refer to
//! nothing outside themselves but `std` and `shade_autodiff`.
//!
//! The tool's side of each eval (reading the eval's JSON input, choosing the function
//! for the engine, writing the output, and the tests of each derivative against
//! central differences) is `gradbench/tool/<eval>.rs`.

// Index loops are the form the compile-time engine differentiates (iterator adaptors
// are outside its subset); the argument lists are GradBench's.
#![allow(clippy::needless_range_loop, clippy::too_many_arguments)]

pub mod ba;
pub mod det;
pub mod gmm;
pub mod hello;
pub mod ht;
pub mod kmeans;
pub mod llsq;
pub mod lse;
pub mod lstm;
pub mod ode;
pub mod optimise;
pub mod particle;
pub mod saddle;
pub mod tool;

/// A small deterministic generator (uniform in `[0, 1)`), so problems are
/// reproducible without a random-number crate in the objectives.
#[derive(Clone, Debug)]
pub struct Lcg(u64);

impl Lcg {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Lcg(seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407))
    }

    /// The next number in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    /// `n` numbers in `[lo, hi)`.
    pub fn vec(&mut self, n: usize, lo: f64, hi: f64) -> Vec<f64> {
        (0..n).map(|_| lo + (hi - lo) * self.next_f64()).collect()
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! Central finite differences and GradBench's closeness measure for the evals'
    //! derivative tests.

    /// `∂f/∂x` by central differences with step `h · max(1, |x_i|)`.
    pub(crate) fn central_gradient(f: impl Fn(&[f64]) -> f64, x: &[f64], h: f64) -> Vec<f64> {
        let mut xp = x.to_vec();
        (0..x.len())
            .map(|i| {
                let step = h * x[i].abs().max(1.0);
                xp[i] = x[i] + step;
                let up = f(&xp);
                xp[i] = x[i] - step;
                let down = f(&xp);
                xp[i] = x[i];
                (up - down) / (2.0 * step)
            })
            .collect()
    }

    /// The Jacobian (row-major, `m × n`) of `f: ℝⁿ → ℝᵐ` by central differences.
    pub(crate) fn central_jacobian(f: impl Fn(&[f64]) -> Vec<f64>, x: &[f64], h: f64) -> Vec<f64> {
        let m = f(x).len();
        let n = x.len();
        let mut jac = vec![0.0; m * n];
        let mut xp = x.to_vec();
        for j in 0..n {
            let step = h * x[j].abs().max(1.0);
            xp[j] = x[j] + step;
            let up = f(&xp);
            xp[j] = x[j] - step;
            let down = f(&xp);
            xp[j] = x[j];
            for i in 0..m {
                jac[i * n + j] = (up[i] - down[i]) / (2.0 * step);
            }
        }
        jac
    }

    /// Asserts `|a - b| <= tol · max(1, |a| + |b|)` entry by entry (GradBench's measure).
    #[track_caller]
    pub(crate) fn assert_close(what: &str, got: &[f64], want: &[f64], tol: f64) {
        assert_eq!(got.len(), want.len(), "{what}: lengths");
        for (i, (a, b)) in got.iter().zip(want).enumerate() {
            let scale = (a.abs() + b.abs()).max(1.0);
            assert!(
                (a - b).abs() <= tol * scale,
                "{what}[{i}]: got {a}, want {b} (tolerance {tol})"
            );
        }
    }

    /// A reproducible uniform stream in `[0, 1)` (splitmix64).
    pub(crate) fn uniform(seed: u64, n: usize) -> Vec<f64> {
        (0..n as u64)
            .map(|i| crate::peer_data::unit_f64(seed, i))
            .collect()
    }
}
