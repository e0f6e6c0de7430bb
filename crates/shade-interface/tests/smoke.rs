//! Quick checks of every operator on AutoShade and AutoFiniteDiff.
use shade_autodiff::scalar::{Real, shade_fn};
use shade_interface::*;

fn f<S: Real>(x: &[S], w: &[f64], c: &[S]) -> S {
    (x[0] * x[1]).sin() * w[0] + x[1].powi(3) + c[0] * x[0]
}
fn g<S: Real>(y: &mut [S], x: &[S], w: &[f64]) {
    y[0] = x[0] * x[1] * w[0];
    y[1] = x[0].exp();
    y[2] = x[1] / (x[0] + 2.0);
}

#[test]
fn smoke() {
    let fv = shade_fn!(f(&[S], &[f64], &[S]));
    let w = [2.0];
    let cache = vec![0.5];
    let x = [0.3, 0.7];
    for b in [AutoShade::REVERSE, AutoShade::FORWARD] {
        let mut p = prepare_gradient(fv, &b, &x, (Constant(&w), Cache(&cache))).unwrap();
        let gr = p.gradient(&x, (Constant(&w), Cache(&cache))).unwrap();
        let fd = gradient(
            fv,
            &AutoFiniteDiff::CENTRAL,
            &x,
            (Constant(&w), Cache(&cache)),
        )
        .unwrap();
        println!("{}", p.explain());
        for (a, b) in gr.iter().zip(&fd) {
            assert!((a - b).abs() < 1e-7, "{gr:?} {fd:?}");
        }
        let h = hessian(fv, &b, &x, (Constant(&w), Cache(&cache))).unwrap();
        let hfd = hessian(
            fv,
            &AutoFiniteDiff::CENTRAL,
            &x,
            (Constant(&w), Cache(&cache)),
        )
        .unwrap();
        for (a, b) in h.iter().zip(&hfd) {
            assert!((a - b).abs() < 1e-5, "{h:?} {hfd:?}");
        }
        let gv = shade_fn!(g(&mut [S], &[S], &[f64]));
        let (y, j) = value_and_jacobian_inplace(gv, 3, &b, &x, (Constant(&w),)).unwrap();
        let (y2, j2) =
            value_and_jacobian_inplace(gv, 3, &AutoFiniteDiff::CENTRAL, &x, (Constant(&w),))
                .unwrap();
        assert_eq!(y, y2);
        for (a, b) in j.iter().zip(&j2) {
            assert!((a - b).abs() < 1e-7, "{j:?} {j2:?}");
        }
        let (_, pb) =
            value_and_pullback_inplace(gv, 3, &b, &x, &[1.0, 2.0, 3.0], (Constant(&w),)).unwrap();
        let (_, pb2) = value_and_pullback_inplace(
            gv,
            3,
            &AutoFiniteDiff::CENTRAL,
            &x,
            &[1.0, 2.0, 3.0],
            (Constant(&w),),
        )
        .unwrap();
        for (a, b) in pb.iter().zip(&pb2) {
            assert!((a - b).abs() < 1e-7, "{pb:?} {pb2:?}");
        }
        let mut pp = prepare_pushforward(fv, &b, &x, (Constant(&w), Cache(&cache))).unwrap();
        let batch = pp
            .pushforward_batch(
                &x,
                &[1.0, 0.0, 0.0, 1.0, 1.0, 1.0],
                (Constant(&w), Cache(&cache)),
            )
            .unwrap();
        assert!(
            (batch[0] - fd[0]).abs() < 1e-7
                && (batch[1] - fd[1]).abs() < 1e-7
                && (batch[2] - fd[0] - fd[1]).abs() < 1e-7,
            "{batch:?}"
        );
        println!("{}", pp.explain());
    }
}
