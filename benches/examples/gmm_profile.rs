//! Runs one function of the `compiled` bench `reps` times, for `perf stat` (cycles of
//! this process only, steadier than wall time on a busy machine) or `valgrind
//! --tool=callgrind` (instructions, independent of the load): `gmm_profile
//! {gmm|gmm-large|lstm|rosen} {primal|gradient} [reps] [n]`, and `gmm_profile sin-loss
//! {direct|interface|tangent-direct|tangent-interface} [reps] [n]` for the interface's
//! cost on a generated function (a prepared `gradient` of `Compiled(d_sin_loss {})`, a
//! prepared `pushforward` of `Compiled(t_sin_loss {})`, against the direct calls). The
//! gradients zero their shadow as the bench does (`compiled::zero`); compare two runs'
//! counts at two `reps` to take out the set-up.
use shade_autodiff::compiled::zero;
use shade_benches::gradbench::Lcg;
use shade_benches::gradbench::gmm::{GmmGradient, GmmProblem};
use shade_benches::gradbench::lstm::{d_lstm_objective, lstm_objective, lstm_problem};
use shade_benches::rosenbrock::{d_rosenbrock, rosenbrock};
use shade_benches::sin_loss::{d_sin_loss, t_sin_loss};
use shade_interface::{AutoShade, Compiled, Constant, prepare_gradient, prepare_pushforward};
use std::hint::black_box;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let (what, mode) = (a[1].as_str(), a[2].as_str());
    let reps: usize = a.get(3).and_then(|s| s.parse().ok()).unwrap_or(100);
    let grad = mode == "gradient";
    let mut r = Lcg::new(1);
    match what {
        "gmm" | "gmm-large" => {
            let (d, k, n) = if what == "gmm" {
                (10, 25, 1000)
            } else {
                (64, 200, 10_000)
            };
            let p = GmmProblem::random(d, k, n, &mut || r.next_f64());
            let mut g = GmmGradient::zeros(&p);
            for _ in 0..reps {
                if grad {
                    black_box(black_box(&p).gradient(&mut g));
                } else {
                    black_box(black_box(&p).objective());
                }
            }
        }
        "lstm" => {
            let (m, e, s, q) = lstm_problem(4, 4096, &mut || r.next_f64());
            let (mut dm, mut de) = (vec![0.0; m.len()], vec![0.0; e.len()]);
            for _ in 0..reps {
                if grad {
                    black_box(d_lstm_objective(
                        black_box(&m),
                        &mut dm,
                        &e,
                        &mut de,
                        &s,
                        &q,
                        4,
                        1.0,
                    ));
                } else {
                    black_box(lstm_objective(black_box(&m), &e, &s, &q, 4));
                }
            }
        }
        "sin-loss" => {
            let n: usize = a.get(4).and_then(|s| s.parse().ok()).unwrap_or(10);
            let x: Vec<f64> = (0..n).map(|i| 0.3 + 0.001 * (i % 97) as f64).collect();
            let w: Vec<f64> = (0..n).map(|i| 1.0 + 0.01 * (i % 13) as f64).collect();
            let ctx = (Constant(&w[..]),);
            let mut g = vec![0.0; n];
            let t: Vec<f64> = (0..n).map(|i| (i as f64).cos()).collect();
            let mut prep = prepare_gradient(Compiled(d_sin_loss {}), &AutoShade::REVERSE, &x, ctx)
                .expect("a valid preparation");
            let mut push =
                prepare_pushforward(Compiled(t_sin_loss {}), &AutoShade::FORWARD, &x, ctx)
                    .expect("a valid preparation");
            let (mut y, mut dy) = ([0.0], [0.0]);
            for _ in 0..reps {
                match mode {
                    "interface" => {
                        let v = prep.value_and_gradient_into(black_box(&x), ctx, &mut g);
                        black_box(v.expect("shapes as prepared"));
                    }
                    "direct" => {
                        zero(&mut g);
                        black_box(d_sin_loss(black_box(&x), &mut g, &w, 1.0));
                    }
                    "tangent-interface" => {
                        push.value_and_pushforward_into(black_box(&x), &t, ctx, &mut y, &mut dy)
                            .expect("shapes as prepared");
                        black_box((y, dy));
                    }
                    _ => {
                        black_box(t_sin_loss(black_box(&x), &t, &w));
                    }
                }
                black_box(&g);
            }
        }
        _ => {
            let n: usize = a.get(4).and_then(|s| s.parse().ok()).unwrap_or(1000);
            let x: Vec<f64> = (0..n).map(|i| 0.5 + 0.001 * (i % 100) as f64).collect();
            let mut g = vec![0.0; n];
            for _ in 0..reps {
                if grad {
                    zero(&mut g);
                    black_box(d_rosenbrock(black_box(&x), &mut g, 1.0));
                    black_box(&g);
                } else {
                    black_box(rosenbrock(black_box(&x)));
                }
            }
        }
    }
}
