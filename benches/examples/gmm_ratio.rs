//! Same-run GMM ratio: alternate objective and gradient calls, take minima.
use shade_autodiff::Const;
use shade_autodiff::scalar::{Tape, shade_fn};
use std::hint::black_box;
use std::time::Instant;

#[path = "../benches/gmm/objective.rs"]
#[allow(dead_code, unreachable_pub)]
mod objective;
use objective::{GmmData, gmm_objective, gmm_problem};

shade_fn!(Gmm = gmm_objective(&[S], &GmmData));

fn main() {
    let reps: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse().unwrap())
        .unwrap_or(200);
    let (params, data) = gmm_problem(10, 25, 1000, 1);
    let mut tape = Tape::new();
    let mut g = vec![0.0; params.len()];
    tape.gradient_into(&Gmm, &params, (Const(&data),), &mut g)
        .unwrap();
    println!(
        "records {} footprint {} MB",
        tape.len(),
        tape.footprint_bytes() / 1_000_000
    );
    let (mut to, mut tg) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..reps {
        let t0 = Instant::now();
        black_box(gmm_objective(black_box(&params[..]), black_box(&data)));
        let t1 = Instant::now();
        tape.gradient_into(&Gmm, black_box(&params), (Const(&data),), &mut g)
            .unwrap();
        black_box(&g);
        let t2 = Instant::now();
        to = to.min((t1 - t0).as_secs_f64());
        tg = tg.min((t2 - t1).as_secs_f64());
    }
    println!(
        "objective {:.3} ms gradient {:.3} ms ratio {:.2}",
        to * 1e3,
        tg * 1e3,
        tg / to
    );
    let (mut tr, mut ts) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..reps / 2 {
        tape.reset();
        let t0 = Instant::now();
        let y = {
            let t = tape.trace();
            let xs: Vec<_> = params.iter().map(|&v| t.var(v)).collect();
            gmm_objective(black_box(&xs[..]), black_box(&data))
                .id()
                .unwrap()
        };
        let t1 = Instant::now();
        black_box(tape.backward(y, 1.0).unwrap());
        let t2 = Instant::now();
        tr = tr.min((t1 - t0).as_secs_f64());
        ts = ts.min((t2 - t1).as_secs_f64());
    }
    println!("record {:.3} ms sweep {:.3} ms", tr * 1e3, ts * 1e3);
}
