//! GradBench's GMM at ADBench's large size (d = 64, k = 200, n = 10⁴) through the
//! compile-time engine: the plain `f64` objective and its generated gradient, timed as
//! the peer scripts time this workload (one warm-up call, then two timed calls, each a
//! few seconds: criterion's minimum of ten samples would add minutes to `cargo xtask
//! bench --peers`), with the memory the derivative keeps. The run-time tape is not
//! measured here: it would record every product of `Q (x − μ)`, about 20 GB.
//!
//! `cargo bench -p shade-benches --bench gmm_large` prints the times, their
//! ratio and the memory (a filter argument that does not select
//! `peers/gmm_d64_k200_n10000/` skips it, as criterion would); under `cargo xtask bench --peers` (which sets
//! `SHADE_PEERS_OUT`) it also appends one result line per variant for
//! `peers/gmm_d64_k200_n10000` as implementation `shade-compiled`, and with
//! `SHADE_PEERS_QUICK` set it times one call after the warm-up.

use shade_benches::gradbench::Lcg;
use shade_benches::gradbench::gmm::{GmmGradient, GmmProblem};
use shade_benches::measure::{append_line, status_kib, threads};
use std::hint::black_box;
use std::time::Instant;

const WORKLOAD: &str = "gmm_d64_k200_n10000";
const SIZE: (usize, usize, usize) = (64, 200, 10_000);

/// Seconds of one warm-up call and then `runs` timed calls, sorted.
fn time(runs: usize, mut f: impl FnMut()) -> Vec<f64> {
    f();
    let mut t: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t
}

/// Whether a criterion-style filter among `args` (the first argument that is not a
/// flag, before any flag with a value; `^` anchors it at the start) selects this bench's
/// ids, `peers/gmm_d64_k200_n10000/{objective,gradient}`. No filter selects it.
fn selected(args: &[String]) -> bool {
    let filter = args
        .iter()
        .take_while(|a| !a.starts_with("--") || *a == "--bench")
        .find(|a| !a.starts_with('-'));
    let id = format!("peers/{WORKLOAD}/");
    match filter {
        None => true,
        Some(f) => match f.strip_prefix('^') {
            Some(prefix) => id.starts_with(prefix) || prefix.starts_with(&id),
            None => id.contains(f.as_str()) || f.starts_with(&id),
        },
    }
}

/// One result line; `note` is shown on the page (the objective's value, which the peers
/// print too).
fn report(variant: &str, t: &[f64], note: &str) {
    let line = format!(
        "{{\"kind\":\"result\",\"workload\":\"{WORKLOAD}\",\"peer\":\"shade-compiled\",\
         \"threads\":{},\"variant\":\"{variant}\",\"status\":\"ok\",\"runs\":{},\
         \"min_s\":{:.6},\"median_s\":{:.6},\"max_s\":{:.6},\"note\":\"{note}\"}}",
        threads(),
        t.len(),
        t[0],
        t[t.len() / 2],
        t[t.len() - 1]
    );
    append_line(&line);
}

fn main() {
    if !selected(&std::env::args().skip(1).collect::<Vec<_>>()) {
        return;
    }
    let runs = if std::env::var_os("SHADE_PEERS_QUICK").is_some() {
        1
    } else {
        2
    };
    let (d, k, n) = SIZE;
    let mut r = Lcg::new(1);
    let p = GmmProblem::random(d, k, n, &mut || r.next_f64());
    let mut g = GmmGradient::zeros(&p);
    let objective = time(runs, || {
        black_box(black_box(&p).objective());
    });
    let after_objective = status_kib("VmHWM:").unwrap_or(0);
    let gradient = time(runs, || {
        g.clear();
        black_box(black_box(&p).gradient(&mut g));
    });
    let after_gradient = status_kib("VmHWM:").unwrap_or(0);
    let value = p.objective();
    report("objective", &objective, &format!("value {value:.12e}"));
    report("gradient", &gradient, "");
    println!(
        "gmm d={d} k={k} n={n}, compile-time engine, {runs} timed run(s) after one warm-up: \
         objective {:.3} s, gradient {:.3} s (medians), ratio {:.2}",
        objective[objective.len() / 2],
        gradient[gradient.len() / 2],
        gradient[gradient.len() / 2] / objective[objective.len() / 2]
    );
    println!(
        "memory: peak resident set after the objective {:.1} MiB, after the gradient {:.1} \
         MiB; the derivative's workspace {:.2} MB (k·d² f64 = {:.2} MB)",
        after_objective as f64 / 1024.0,
        after_gradient as f64 / 1024.0,
        shade_autodiff::compiled::workspace_footprint_bytes() as f64 / 1e6,
        (k * d * d) as f64 * 8.0 / 1e6
    );
}
