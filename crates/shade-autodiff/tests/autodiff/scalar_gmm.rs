//! GradBench's GMM objective (the `gmm` bench's and the GradBench tool's, written once
//! in `benches/src/gradbench/gmm.rs` against `Real`): the tape's reverse-mode gradient
//! matches central differences on a small problem, and forward mode agrees with it.
//! (The module's own tests, which compare it with the compile-time form, run here too.)

#[path = "../../../../benches/src/gradbench/gmm.rs"]
#[allow(dead_code, unreachable_pub)]
mod gmm;
#[path = "../../../../benches/src/gradbench/support.rs"]
#[allow(dead_code, unreachable_pub)]
mod support;

use gmm::{GmmProblem, GmmTape, gmm_objective_tape};
use shade_autodiff::scalar::{Tangent, autodiff, gradient};
use shade_autodiff::{Const, Duplicated, Forward};
use support::Lcg;

#[test]
fn gmm_gradient_matches_central_differences() {
    let mut r = Lcg::new(7);
    let mut data = GmmProblem::random(3, 2, 5, &mut || r.next_f64());
    data.m = 2;
    let params = data.params();
    assert_eq!(params.len(), 2 + 6 + 6 + 6);
    let g = gradient(GmmTape, &params, (Const(&data),)).unwrap();
    let fd = support::central_gradient(|p| gmm_objective_tape(p, &data), &params, 1e-6);
    support::assert_close("gradient", &g, &fd, 1e-6);
    // Forward mode along a direction = gradient · direction.
    let dir: Vec<f64> = (0..params.len()).map(|i| (i as f64 * 0.37).sin()).collect();
    let mut t = dir.clone();
    let d = autodiff(
        Forward,
        GmmTape,
        Tangent,
        (Duplicated(&params[..], &mut t[..]), Const(&data)),
    )
    .unwrap();
    let want: f64 = g.iter().zip(&dir).map(|(a, b)| a * b).sum();
    support::assert_close("tangent", &[d], &[want], 1e-10);
}
