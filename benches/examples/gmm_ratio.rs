//! Same-run GMM ratio of the tape (GradBench's GMM, d=10, k=25, n=1000): alternate
//! objective and gradient calls, take minima; then recording and sweep apart.
//! `cargo run --release -p shade-benches --example gmm_ratio [reps]`
use shade_autodiff::scalar::Tape;
use shade_benches::gradbench::Lcg;
use shade_benches::gradbench::gmm::{GmmProblem, gmm_gradient_tape, gmm_objective_tape};
use std::hint::black_box;
use std::time::Instant;

fn main() {
    let reps: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse().unwrap())
        .unwrap_or(200);
    let mut r = Lcg::new(1);
    let data = GmmProblem::random(10, 25, 1000, &mut || r.next_f64());
    let params = data.params();
    let mut tape = Tape::new();
    let mut g = vec![0.0; params.len()];
    gmm_gradient_tape(&mut tape, &params, &data, &mut g).unwrap();
    println!(
        "records {} footprint {} MB",
        tape.len(),
        tape.footprint_bytes() / 1_000_000
    );
    let (mut to, mut tg) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..reps {
        let t0 = Instant::now();
        black_box(gmm_objective_tape(black_box(&params[..]), black_box(&data)));
        let t1 = Instant::now();
        gmm_gradient_tape(&mut tape, black_box(&params), &data, &mut g).unwrap();
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
            gmm_objective_tape(black_box(&xs[..]), black_box(&data))
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
