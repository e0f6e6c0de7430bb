//! Broken programs against the interface (codes `SHADE-E02xx`).

use super::harness::{Program, Seen};
use shade_autodiff::scalar::{Real, shade_fn};
use shade_diagnostics::backends::check_backend;
use shade_interface::sprs::CsMat;
use shade_interface::{
    AutoFiniteDiff, AutoShade, AutoSparse, Constant, Operator, SecondOrder, gradient,
    prepare_gradient, prepare_jacobian, prepare_jacobian_inplace, prepare_pushforward,
};

pub(crate) const PROGRAMS: &[(&str, Program)] = &[
    (
        "interface_prepared_for_another_shape",
        prepared_for_another_shape,
    ),
    ("interface_reverse_over_reverse", reverse_over_reverse),
    ("interface_negative_step", negative_step),
    ("interface_batch_tangents", batch_tangents),
    (
        "interface_sparse_backend_for_gradient",
        sparse_backend_for_gradient,
    ),
    (
        "interface_sparse_jacobian_of_another_pattern",
        sparse_jacobian_of_another_pattern,
    ),
    (
        "interface_inplace_outputs_not_written",
        inplace_outputs_not_written,
    ),
    ("interface_output_length_changed", output_length_changed),
];

fn loss<S: Real>(x: &[S], w: &[f64]) -> S {
    x.iter().zip(w).map(|(&xi, &wi)| (xi - wi).powi(2)).sum()
}

fn prepared_for_another_shape() -> Result<(), Seen> {
    // Prepared once for 3 parameters, then reused after the model grew to 4.
    let f = shade_fn!(loss(&[S], &[f64]));
    let w = [0.5; 4];
    let mut prep = prepare_gradient(f, &AutoShade::REVERSE, &[0.0; 3], (Constant(&w[..3]),))?;
    prep.gradient(&[1.0, 2.0, 3.0, 4.0], (Constant(&w[..]),))?;
    Ok(())
}

fn reverse_over_reverse() -> Result<(), Seen> {
    // Chosen at run time, asked before differentiating: `hessian(f, &b, ..)` itself
    // does not compile for this pair (the core nests forward over reverse only).
    let b = SecondOrder {
        outer: AutoShade::REVERSE,
        inner: AutoShade::REVERSE,
    };
    check_backend(&b, Operator::Hessian).into_result()?;
    Ok(())
}

fn negative_step() -> Result<(), Seen> {
    let f = shade_fn!(loss(&[S], &[f64]));
    let w = [0.5; 2];
    let fd = AutoFiniteDiff {
        rel_step: Some(-1e-6),
        ..AutoFiniteDiff::CENTRAL
    };
    gradient(f, &fd, &[1.0, 2.0], (Constant(&w[..]),))?;
    Ok(())
}

fn batch_tangents() -> Result<(), Seen> {
    let f = shade_fn!(loss(&[S], &[f64]));
    let w = [0.5; 3];
    let x = [1.0, 2.0, 3.0];
    let mut prep = prepare_pushforward(f, &AutoShade::FORWARD, &x, (Constant(&w[..]),))?;
    // Two tangents of length 3 are 6 numbers; one was cut short.
    prep.pushforward_batch(&x, &[1.0, 0.0, 0.0, 0.0, 1.0], (Constant(&w[..]),))?;
    Ok(())
}

fn sparse_backend_for_gradient() -> Result<(), Seen> {
    // Asked before differentiating: AutoSparse computes Jacobians and Hessians only.
    let b = AutoSparse {
        inner: AutoShade::FORWARD,
    };
    check_backend(&b, Operator::Gradient).into_result()?;
    Ok(())
}

/// `yᵢ = xᵢ² + x_{i+1}`: a bidiagonal Jacobian.
fn bidiagonal<S: Real>(y: &mut [S], x: &[S]) {
    let n = x.len();
    for i in 0..n {
        y[i] = x[i] * x[i];
        if i + 1 < n {
            y[i] += x[i + 1];
        }
    }
}

fn sparse_jacobian_of_another_pattern() -> Result<(), Seen> {
    let f = shade_fn!(bidiagonal(&mut [S], &[S]));
    let x = [0.5; 4];
    let b = AutoSparse {
        inner: AutoShade::FORWARD,
    };
    let mut prep = prepare_jacobian_inplace(f, &[0.0; 4], &b, &x, ())?;
    // A diagonal buffer for a bidiagonal Jacobian.
    let mut j = CsMat::<f64>::eye(4);
    prep.jacobian_into(&x, (), &mut j)?;
    Ok(())
}

fn inplace_outputs_not_written() -> Result<(), Seen> {
    // A buffer of four outputs, the function writes three.
    let f = shade_fn!(bidiagonal(&mut [S], &[S]));
    prepare_jacobian_inplace(f, &[0.0; 4], &AutoShade::REVERSE, &[0.5; 3], ())?;
    Ok(())
}

/// The detections of a peak finder: one output per sample above the threshold.
fn above<S: Real>(x: &[S], threshold: &f64) -> Vec<S> {
    x.iter()
        .filter(|v| **v > S::cst(*threshold))
        .map(|&v| v * v)
        .collect()
}

fn output_length_changed() -> Result<(), Seen> {
    // Prepared where two samples pass the threshold, called where three do.
    let f = shade_fn!(above(&[S], &f64) -> Vec<S>);
    let mut prep = prepare_jacobian(f, &AutoShade::FORWARD, &[0.9, 0.1, 0.8], (Constant(&0.5),))?;
    prep.jacobian(&[0.9, 0.7, 0.8], (Constant(&0.5),))?;
    Ok(())
}
