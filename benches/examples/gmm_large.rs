//! GradBench's large GMM (d=64, k=200, n=10⁴) through the compile-time engine: time of
//! the primal and of the gradient in the same process (interleaved, best of `reps`),
//! their ratio, and the memory: peak resident set after the primal and after the
//! gradient, and what the derivative keeps (its workspace).
//!
//! `cargo run --release -p shade-benches --example gmm_large [reps]`

use shade_benches::gradbench::Lcg;
use shade_benches::gradbench::gmm::{GmmGradient, GmmProblem};
use std::hint::black_box;
use std::time::Instant;

/// Peak resident set (`VmHWM`) in MB.
fn peak_mb() -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn main() {
    let reps: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let (d, k, n) = (64, 200, 10_000);
    let mut r = Lcg::new(1);
    let p = GmmProblem::random(d, k, n, &mut || r.next_f64());
    let mut g = GmmGradient::zeros(&p);
    let data_mb =
        (p.x.len() + 2 * (p.alpha.len() + p.mu.len() + p.q.len() + p.l.len())) as f64 * 8.0 / 1e6;
    let (mut tp, mut tg) = (f64::INFINITY, f64::INFINITY);
    let mut peak_primal = 0.0;
    for _ in 0..reps {
        let t0 = Instant::now();
        black_box(black_box(&p).objective());
        let t1 = Instant::now();
        peak_primal = peak_mb();
        g.clear();
        black_box(black_box(&p).gradient(&mut g));
        let t2 = Instant::now();
        tp = tp.min((t1 - t0).as_secs_f64());
        tg = tg.min((t2 - t1).as_secs_f64());
    }
    let peak_gradient = peak_mb();
    let ws = shade_autodiff::compiled::workspace_footprint_bytes() as f64 / 1e6;
    println!(
        "gmm d={d} k={k} n={n}: primal {tp:.3} s, gradient {tg:.3} s, ratio {:.2}",
        tg / tp
    );
    println!(
        "memory: inputs and gradient {data_mb:.1} MB; peak RSS after primal {peak_primal:.1} MB, \
         after gradient {peak_gradient:.1} MB; derivative workspace {ws:.2} MB \
         (k·d² = {:.2} MB of f64)",
        (k * d * d) as f64 * 8.0 / 1e6
    );
}
