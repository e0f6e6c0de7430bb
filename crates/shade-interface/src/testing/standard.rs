//! The standard scenario sets: scalar → scalar, scalar → vector, vector → scalar,
//! vector → vector and matrix → matrix (flattened), one- and two-argument forms, with
//! [`Constant`] and [`Cache`] contexts; every reference derivative written by hand.
//!
//! Each builder takes the evaluation point; the preparation point is derived from it
//! (same shape, other values). Vector inputs may have 1 to 16 entries.

use super::{
    GradScenario, JacScenario, Reference, ScalarInplaceScenario, ScalarScenario, Scenario,
    VecScenario,
};
use crate::backend::Backend;
use crate::context::{Cache, Constant};
use shade_autodiff::scalar::{Real, shade_fn};

/// Most entries of a standard vector input.
pub const MAX_N: usize = 16;

static WEIGHTS: [f64; MAX_N] = [
    1.0, -0.5, 2.0, 0.25, -1.5, 0.75, 1.25, -2.0, 0.5, 1.5, -0.25, 1.75, -0.75, 0.1, 2.5, -1.25,
];
static SCALAR_C: [f64; 2] = [1.3, 0.7];
static CACHE: [f64; 3] = [0.25, -1.0, 2.0];
static P: [f64; 1] = [1.5];

/// The constant context of the standard scenarios.
pub type K = Constant<&'static [f64]>;
/// The cache context of the standard scenarios.
pub type CacheK = Cache<&'static [f64]>;

/// `c₀ sin x + x³ + c₁ e^{x/2}`.
pub fn scalar_scalar_fn<S: Real>(x: S, c: &[f64]) -> S {
    x.sin() * c[0] + x.powi(3) + (x * 0.5).exp() * c[1]
}

/// `y = [sin x, c₀ x², c₁ eˣ]`.
pub fn scalar_vector_fn<S: Real>(y: &mut [S], x: S, c: &[f64]) {
    y[0] = x.sin();
    y[1] = x * x * c[0];
    y[2] = x.exp() * c[1];
}

/// `cache₀ + Σ wᵢ sin xᵢ + ½ (Σ xᵢ)²` (the cache is read, never differentiated).
pub fn vector_scalar_ctx_fn<S: Real>(x: &[S], w: &[f64], cache: &[S]) -> S {
    let mut acc = cache[0];
    let mut s = S::zero();
    for (i, &xi) in x.iter().enumerate() {
        acc += xi.sin() * w[i];
        s += xi;
    }
    acc + s * s * 0.5
}

/// `Σ xᵢ e^{xᵢ} + x₀ x_{n-1}`.
pub fn vector_scalar_fn<S: Real>(x: &[S]) -> S {
    let n = x.len();
    x.iter().map(|&xi| xi * xi.exp()).sum::<S>() + x[0] * x[n - 1]
}

/// `yᵢ = p₀ xᵢ x_{(i+1) mod n} + cos xᵢ`.
pub fn vector_vector_fn<S: Real>(y: &mut [S], x: &[S], p: &[f64]) {
    let n = x.len();
    for i in 0..n {
        y[i] = x[i] * x[(i + 1) % n] * p[0] + x[i].cos();
    }
}

/// [`vector_vector_fn`] returning its outputs (one-argument form, `m` inferred).
pub fn vector_vector_out_fn<S: Real>(x: &[S], p: &[f64]) -> Vec<S> {
    let mut y = vec![S::cst(0.0); x.len()];
    vector_vector_fn(&mut y, x, p);
    y
}

/// `Y = X Xᵀ` for `X` 2 × 3 (row-major in, row-major out).
pub fn matrix_matrix_fn<S: Real>(y: &mut [S], x: &[S]) {
    for i in 0..2 {
        for j in 0..2 {
            y[i * 2 + j] = S::dot(&x[i * 3..i * 3 + 3], &x[j * 3..j * 3 + 3]);
        }
    }
}

#[allow(missing_docs)]
mod fns {
    use super::*;
    shade_fn!(pub ScalarScalar = scalar_scalar_fn(S, &[f64]));
    shade_fn!(pub ScalarVector = scalar_vector_fn(&mut [S], S, &[f64]));
    shade_fn!(pub VectorScalarCtx = vector_scalar_ctx_fn(&[S], &[f64], &[S]));
    shade_fn!(pub VectorScalar = vector_scalar_fn(&[S]));
    shade_fn!(pub VectorVector = vector_vector_fn(&mut [S], &[S], &[f64]));
    shade_fn!(pub VectorVectorOut = vector_vector_out_fn(&[S], &[f64]) -> Vec<S>);
    shade_fn!(pub MatrixMatrix = matrix_matrix_fn(&mut [S], &[S]));
}
pub use fns::{
    MatrixMatrix, ScalarScalar, ScalarVector, VectorScalar, VectorScalarCtx, VectorVector,
    VectorVectorOut,
};

fn prep_point(x: &[f64]) -> Vec<f64> {
    x.iter().map(|v| 0.5 * v + 0.3).collect()
}

/// Scalar → scalar, one-argument, one `Constant`.
pub fn scalar_scalar(x: f64) -> ScalarScenario<ScalarScalar, (K,)> {
    let c = &SCALAR_C;
    let e = (0.5 * x).exp();
    ScalarScenario {
        name: "scalar->scalar (Constant)".into(),
        f: ScalarScalar,
        x,
        prep_x: 0.5 * x + 0.3,
        ctx: (Constant(&SCALAR_C[..]),),
        reference: Reference {
            y: vec![scalar_scalar_fn(x, c)],
            jacobian: vec![c[0] * x.cos() + 3.0 * x * x + 0.5 * c[1] * e],
            hessian: vec![-c[0] * x.sin() + 6.0 * x + 0.25 * c[1] * e],
        },
    }
}

/// Scalar → vector (3 outputs), two-argument, one `Constant`.
pub fn scalar_vector(x: f64) -> ScalarInplaceScenario<ScalarVector, (K,)> {
    let c = &SCALAR_C;
    ScalarInplaceScenario {
        name: "scalar->vector, two-argument (Constant)".into(),
        f: ScalarVector,
        m: 3,
        x,
        prep_x: 0.5 * x + 0.3,
        ctx: (Constant(&SCALAR_C[..]),),
        reference: Reference {
            y: vec![x.sin(), c[0] * x * x, c[1] * x.exp()],
            jacobian: vec![x.cos(), 2.0 * c[0] * x, c[1] * x.exp()],
            hessian: Vec::new(),
        },
    }
}

/// Vector → scalar, one-argument, a `Constant` and a `Cache`.
///
/// # Panics
/// If `x` is empty or longer than [`MAX_N`] (a misuse of the harness).
pub fn vector_scalar_ctx(x: &[f64]) -> GradScenario<VectorScalarCtx, (K, CacheK)> {
    assert!(
        (1..=MAX_N).contains(&x.len()),
        "standard vector inputs have 1 to {MAX_N} entries"
    );
    let n = x.len();
    let s: f64 = x.iter().sum();
    let w = &WEIGHTS;
    let mut hess = vec![1.0; n * n];
    for i in 0..n {
        hess[i * n + i] -= w[i] * x[i].sin();
    }
    GradScenario {
        name: format!("vector->scalar (Constant, Cache), n = {n}"),
        f: VectorScalarCtx,
        x: x.to_vec(),
        prep_x: prep_point(x),
        ctx: (Constant(&WEIGHTS[..]), Cache(&CACHE[..])),
        reference: Reference {
            y: vec![vector_scalar_ctx_fn(x, w, &CACHE)],
            jacobian: (0..n).map(|i| w[i] * x[i].cos() + s).collect(),
            hessian: hess,
        },
    }
}

/// Vector → scalar, one-argument, no context.
///
/// # Panics
/// If `x` is empty or longer than [`MAX_N`].
pub fn vector_scalar(x: &[f64]) -> GradScenario<VectorScalar, ()> {
    assert!(
        (1..=MAX_N).contains(&x.len()),
        "standard vector inputs have 1 to {MAX_N} entries"
    );
    let n = x.len();
    let mut g: Vec<f64> = x.iter().map(|v| v.exp() * (1.0 + v)).collect();
    let mut h = vec![0.0; n * n];
    for i in 0..n {
        h[i * n + i] = x[i].exp() * (2.0 + x[i]);
    }
    g[0] += x[n - 1];
    g[n - 1] += x[0];
    h[n - 1] += 1.0;
    h[(n - 1) * n] += 1.0;
    GradScenario {
        name: format!("vector->scalar, n = {n}"),
        f: VectorScalar,
        x: x.to_vec(),
        prep_x: prep_point(x),
        ctx: (),
        reference: Reference {
            y: vec![vector_scalar_fn(x)],
            jacobian: g,
            hessian: h,
        },
    }
}

/// Vector → vector, two-argument, one `Constant`.
///
/// # Panics
/// If `x` is empty.
pub fn vector_vector(x: &[f64]) -> JacScenario<VectorVector, (K,)> {
    assert!(
        !x.is_empty(),
        "standard vector inputs have at least one entry"
    );
    let n = x.len();
    let p = P[0];
    let mut y = vec![0.0; n];
    vector_vector_fn(&mut y, x, &P);
    let mut j = vec![0.0; n * n];
    for i in 0..n {
        let k = (i + 1) % n;
        j[i * n + i] += p * x[k] - x[i].sin();
        j[i * n + k] += p * x[i];
    }
    JacScenario {
        name: format!("vector->vector, two-argument (Constant), n = {n}"),
        f: VectorVector,
        m: n,
        x: x.to_vec(),
        prep_x: prep_point(x),
        ctx: (Constant(&P[..]),),
        reference: Reference {
            y,
            jacobian: j,
            hessian: Vec::new(),
        },
    }
}

/// Vector → vector, one-argument returning `Vec<S>` (its output length inferred), one
/// `Constant`: [`vector_vector`]'s function and reference.
///
/// # Panics
/// If `x` is empty.
pub fn vector_vector_out(x: &[f64]) -> VecScenario<VectorVectorOut, (K,)> {
    let s = vector_vector(x);
    VecScenario {
        name: format!(
            "vector->vector, one-argument returning Vec (Constant), n = {}",
            x.len()
        ),
        f: VectorVectorOut,
        x: s.x,
        prep_x: s.prep_x,
        ctx: s.ctx,
        reference: s.reference,
    }
}

/// Matrix (2 × 3) → matrix (2 × 2) `X Xᵀ`, flattened, two-argument; `X` cycles
/// through `x`.
///
/// # Panics
/// If `x` is empty.
pub fn matrix_matrix(x: &[f64]) -> JacScenario<MatrixMatrix, ()> {
    assert!(!x.is_empty(), "standard inputs have at least one entry");
    let xm: Vec<f64> = (0..6)
        .map(|k| x[k % x.len()] * (1.0 + 0.1 * k as f64))
        .collect();
    let mut y = vec![0.0; 4];
    matrix_matrix_fn(&mut y, &xm);
    // ∂(X Xᵀ)_{ij} / ∂X_{ak} = δ_{ia} X_{jk} + δ_{ja} X_{ik}
    let mut j = vec![0.0; 4 * 6];
    for i in 0..2 {
        for jj in 0..2 {
            for k in 0..3 {
                j[(i * 2 + jj) * 6 + i * 3 + k] += xm[jj * 3 + k];
                j[(i * 2 + jj) * 6 + jj * 3 + k] += xm[i * 3 + k];
            }
        }
    }
    JacScenario {
        name: "matrix->matrix X Xᵀ, two-argument".into(),
        f: MatrixMatrix,
        m: 4,
        prep_x: prep_point(&xm),
        x: xm,
        ctx: (),
        reference: Reference {
            y,
            jacobian: j,
            hessian: Vec::new(),
        },
    }
}

/// Every standard scenario at vector point `x` (1 to [`MAX_N`] entries) and scalar
/// point `s`.
pub fn scenarios<B: Backend + 'static>(x: &[f64], s: f64) -> Vec<Box<dyn Scenario<B>>>
where
    ScalarScenario<ScalarScalar, (K,)>: Scenario<B>,
    ScalarInplaceScenario<ScalarVector, (K,)>: Scenario<B>,
    GradScenario<VectorScalarCtx, (K, CacheK)>: Scenario<B>,
    GradScenario<VectorScalar, ()>: Scenario<B>,
    JacScenario<VectorVector, (K,)>: Scenario<B>,
    VecScenario<VectorVectorOut, (K,)>: Scenario<B>,
    JacScenario<MatrixMatrix, ()>: Scenario<B>,
{
    vec![
        Box::new(scalar_scalar(s)),
        Box::new(scalar_vector(s)),
        Box::new(vector_scalar_ctx(x)),
        Box::new(vector_scalar(x)),
        Box::new(vector_vector(x)),
        Box::new(vector_vector_out(x)),
        Box::new(matrix_matrix(x)),
    ]
}
