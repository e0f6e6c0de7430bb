//! Runs the GMM gradient (d=10, k=25, n=1000) `reps` times, for profiling.
use shade_benches::gradbench::Lcg;
use shade_benches::gradbench::gmm::{GmmGradient, GmmProblem};
fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let mut r = Lcg::new(1);
    let p = GmmProblem::random(10, 25, 1000, &mut || r.next_f64());
    let mut g = GmmGradient::zeros(&p);
    for _ in 0..300 {
        if mode == "primal" {
            std::hint::black_box(std::hint::black_box(&p).objective());
        } else {
            g.clear();
            std::hint::black_box(p.gradient(&mut g));
        }
    }
}
