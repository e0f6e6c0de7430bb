//! The GMM objective of the `gmm` bench (ADBench's, written once against `Real`): its
//! reverse-mode gradient matches central differences on a small problem, and forward
//! mode agrees with it.

#[path = "../../../../benches/benches/gmm/objective.rs"]
#[allow(dead_code, unreachable_pub)]
mod objective;

use objective::{GmmData, gmm_objective, gmm_problem};
use shade_autodiff::scalar::{Tangent, autodiff, gradient, shade_fn};
use shade_autodiff::{Const, Duplicated, Forward};

shade_fn!(Gmm = gmm_objective(&[S], &GmmData));

#[test]
fn gmm_gradient_matches_central_differences() {
    let (params, data) = gmm_problem(3, 2, 5, 7);
    assert_eq!(params.len(), 2 + 6 + 12);
    let g = gradient(Gmm, &params, (Const(&data),)).unwrap();
    let mut worst = 0.0f64;
    for i in 0..params.len() {
        let h = 1e-6;
        let (mut p, mut m) = (params.clone(), params.clone());
        p[i] += h;
        m[i] -= h;
        let fd = (gmm_objective(&p, &data) - gmm_objective(&m, &data)) / (2.0 * h);
        worst = worst.max((g[i] - fd).abs() / (1.0 + fd.abs()));
    }
    assert!(worst < 1e-6, "worst relative difference {worst}");
    // Forward mode along a direction = gradient · direction.
    let dir: Vec<f64> = (0..params.len()).map(|i| (i as f64 * 0.37).sin()).collect();
    let mut t = dir.clone();
    let d = autodiff(
        Forward,
        Gmm,
        Tangent,
        (Duplicated(&params[..], &mut t[..]), Const(&data)),
    )
    .unwrap();
    let want: f64 = g.iter().zip(&dir).map(|(a, b)| a * b).sum();
    assert!((d - want).abs() < 1e-10 * (1.0 + want.abs()));
}
