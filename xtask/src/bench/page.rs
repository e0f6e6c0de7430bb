//! The page of `cargo xtask bench --peers`: machine and method, summary, one section
//! per workload (floors, medians with min–max, ratio to the best peer, pairs of
//! variants, bandwidth, memory), the internal ratios and criterion's full table.

use std::fmt::Write as _;

use super::peers::{Cell, Install, Machine, Results};
use super::workloads::Workload;
use super::{Estimate, human, ratio_table};

#[derive(Clone, Copy)]
pub(super) struct Timings {
    pub(super) setup: f64,
    pub(super) build: f64,
    pub(super) measure: f64,
    pub(super) total: f64,
}

pub(super) struct Page<'a> {
    pub(super) machine: &'a Machine,
    pub(super) installs: &'a [Install],
    pub(super) workloads: &'a [&'a Workload],
    pub(super) threads: &'a [usize],
    pub(super) res: &'a Results,
    pub(super) estimates: &'a [Estimate],
    pub(super) shade_errors: &'a [String],
    pub(super) timing: Timings,
    pub(super) quick: bool,
    pub(super) date: String,
}

fn secs(s: f64) -> String {
    human(s * 1e9)
}

pub(super) fn cell_text(c: Option<&Cell>) -> String {
    match c {
        Some(Cell::Ok(t)) => format!("{} ({}–{})", secs(t.median), secs(t.min), secs(t.max)),
        Some(Cell::NotMeasured(why)) => format!("not measured: {why}"),
        None => "not measured: no result".into(),
    }
}

fn median(c: Option<&Cell>) -> Option<f64> {
    match c {
        Some(Cell::Ok(t)) => Some(t.median),
        _ => None,
    }
}

/// `who ÷ best peer` (`who` one of shade's implementations) for one variant at one
/// thread count.
pub(super) fn versus_best(res: &Results, w: &Workload, who: &str, v: &str, t: usize) -> String {
    let best = w
        .peers
        .iter()
        .filter_map(|p| median(res.cell(w.id, v, p, t)).map(|m| (m, *p)))
        .min_by(|a, b| a.0.total_cmp(&b.0));
    match (median(res.cell(w.id, v, who, t)), best) {
        (Some(s), Some((b, p))) => format!("{:.2} ({p})", s / b),
        _ => "–".into(),
    }
}

/// The cell of one of shade's implementations, with the reason where it does not run.
pub(super) fn shade_cell(res: &Results, w: &Workload, who: &str, v: &str, t: usize) -> String {
    if let Some((_, _, why)) = w
        .shade_missing
        .iter()
        .find(|(x, m, _)| *x == who && *m == v)
        && res.cell(w.id, v, who, t).is_none()
    {
        return format!("not measured: {why}");
    }
    cell_text(res.cell(w.id, v, who, t))
}

/// The rate per second of the machine floor `floors/<function>` on `threads` threads:
/// bytes for `copy`, multiply-adds for `fma-f32` and `fma-f64`. A peak, so the fastest
/// sample, and the best of the runs on `threads` threads or fewer (a program on `T`
/// threads may use fewer: a floor that another process on a core pulled below the
/// one-thread rate would not bound anything).
fn floor_rate(estimates: &[Estimate], function: &str, threads: usize) -> Option<f64> {
    estimates
        .iter()
        .filter(|e| e.group == "floors" && e.function == function)
        .filter(|e| {
            e.parameter
                .strip_prefix('t')
                .and_then(|t| t.parse::<usize>().ok())
                .is_some_and(|t| t <= threads)
        })
        .filter_map(|e| {
            let per_iteration = e.bytes.or(e.elements)?;
            let ns = e.spread.map_or(e.mean_ns, |s| s[0]);
            (ns > 0.0).then(|| per_iteration / (ns * 1e-9))
        })
        .max_by(f64::total_cmp)
}

/// The median time of one hand-off to the pool's sleeping threads (`floors/wake`), in
/// seconds, at `threads` threads.
fn wake_time(estimates: &[Estimate], threads: usize) -> Option<f64> {
    estimates
        .iter()
        .find(|e| {
            e.group == "floors" && e.function == "wake" && e.parameter == format!("t{threads}")
        })
        .map(|e| e.spread.map_or(e.mean_ns, |s| s[1]) * 1e-9)
}

/// Copy bandwidth in bytes per second on `threads` threads.
fn copy_bandwidth(estimates: &[Estimate], threads: usize) -> Option<f64> {
    floor_rate(estimates, "copy", threads)
}

/// The two floors of variant `v` at `threads` threads, in seconds: its multiply-adds at
/// the peak rate for the workload's precision, its bytes at the copy bandwidth.
fn floor_times(
    estimates: &[Estimate],
    w: &Workload,
    v: &str,
    threads: usize,
) -> (Option<f64>, Option<f64>) {
    let Some(f) = w.floors.iter().find(|f| f.variant == v) else {
        return (None, None);
    };
    let fma = format!("fma-{}", w.precision);
    (
        floor_rate(estimates, &fma, threads).map(|r| f.macs / r),
        copy_bandwidth(estimates, threads).map(|b| f.bytes / b),
    )
}

/// The floor of variant `v` at `threads` threads: the longer of its two floors.
fn floor_time(estimates: &[Estimate], w: &Workload, v: &str, threads: usize) -> Option<f64> {
    match floor_times(estimates, w, v, threads) {
        (Some(c), Some(m)) => Some(c.max(m)),
        (c, m) => c.or(m),
    }
}

/// `"1 thread: …, 2 threads: …"` of a floor's rates, or `"not measured"`.
fn rates(p: &Page<'_>, rate: impl Fn(usize) -> Option<String>) -> String {
    let all: Vec<String> = p
        .threads
        .iter()
        .filter_map(|&t| rate(t).map(|r| format!("{r} on {t} thread(s)")))
        .collect();
    if all.is_empty() {
        "not measured".into()
    } else {
        all.join(", ")
    }
}

/// `who ÷ floor` for one variant at one thread count.
fn versus_floor(p: &Page<'_>, w: &Workload, who: &str, v: &str, t: usize) -> String {
    match (
        median(p.res.cell(w.id, v, who, t)),
        floor_time(p.estimates, w, v, t),
    ) {
        (Some(s), Some(f)) if f > 0.0 => format!("{:.1}", s / f),
        _ => "–".into(),
    }
}

pub(super) fn render(p: &Page<'_>) -> String {
    let mut s = String::new();
    let m = p.machine;
    let _ = writeln!(
        s,
        "# Benchmarks: shade and its peers\n\n\
         Generated by `cargo xtask bench --peers` on {} in {:.1} minutes (Python environment \
         {:.0} s, build {:.0} s, measurements {:.0} s); do not edit by hand.{}\n",
        p.date,
        p.timing.total / 60.0,
        p.timing.setup,
        p.timing.build,
        p.timing.measure,
        if p.quick {
            " **Quick run (`--quick`): a check of the pipeline, not a measurement.**"
        } else {
            ""
        }
    );
    let _ = writeln!(s, "## Machine and method\n");
    let _ = writeln!(
        s,
        "- {} CPU(s): {}; {} memory; Linux {}; {}.",
        m.cores, m.cpu, m.memory, m.kernel, m.rustc
    );
    let mut libs: Vec<String> = p
        .installs
        .iter()
        .map(|i| {
            if i.ok {
                format!("{} {}", i.package, i.detail)
            } else {
                format!("{} (install failed: {})", i.package, i.detail)
            }
        })
        .collect();
    if libs.is_empty() {
        libs.push("none (the Python environment could not be set up)".into());
    }
    let _ = writeln!(
        s,
        "- Peers, installed by name into `target/peers-venv` by `benches/peers/setup.py`: {}.",
        libs.join(", ")
    );
    let _ = writeln!(
        s,
        "- Threads: every workload runs at {} thread(s), shade and peers in the same run, one \
         after the other. {} shade: `RAYON_NUM_THREADS`; PyTorch and PyG: \
         `torch.set_num_threads` and `OMP_NUM_THREADS`; JAX: at 1 thread XLA_FLAGS \
         `--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1`, otherwise the \
         pinning alone; SciPy's sparse product is single-threaded.",
        p.threads
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" and "),
        if m.taskset {
            "Each process is pinned with `taskset -c 0..T-1`."
        } else {
            "`taskset` was not found: processes were not pinned."
        }
    );
    let _ = writeln!(
        s,
        "- Statistics: median (min–max). shade: criterion's samples (each the mean of its \
         iterations; 1 s warm-up, 2 s measurement, at least 10 samples); peers: single timed \
         runs after warm-up runs (at least 10 runs and 2 s; the synthetic GCNs 3 runs at 100k \
         nodes and 2 at 1M, the large GMM 2, shade's too). `shade ÷ best peer` divides \
         medians: below 1, shade is faster.\n\
         - Floors: the multiply-adds and the bytes that must move, counted from the \
         workload, at this machine's rates measured in the same run (bench `floors`; the \
         fastest sample, at the thread count or fewer): the peak rate of fused \
         multiply-adds (independent chains in registers at the widest vectors, \
         `floors/fma-f32` and `fma-f64`: {}) and the copy bandwidth (`floors/copy`: {}). \
         A variant's floor is the longer of the two times; `shade ÷ floor` divides \
         shade's median by it (1 would be the machine's limit; the counted bytes are \
         those a kernel must touch, so a median can beat the memory floor where they come \
         from the caches). A split of a kernel over \
         threads also pays a hand-off: waking the pool's sleeping threads after 1 ms of \
         work on the calling thread took {} (`floors/wake`, median).\n",
        rates(p, |t| {
            let g = |f: &str| floor_rate(p.estimates, f, t).map(|r| r / 1e9);
            match (g("fma-f32"), g("fma-f64")) {
                (Some(a), Some(b)) => Some(format!("{a:.0} and {b:.0} G/s")),
                _ => None,
            }
        }),
        rates(p, |t| copy_bandwidth(p.estimates, t)
            .map(|b| format!("{:.1} GB/s", b / 1e9))),
        rates(p, |t| (t > 1)
            .then(|| wake_time(p.estimates, t).map(secs))
            .flatten()),
    );
    if !p.shade_errors.is_empty() {
        let _ = writeln!(
            s,
            "shade benches that failed in this run: {}.\n",
            p.shade_errors.join("; ")
        );
    }

    let _ = writeln!(
        s,
        "## Summary\n\n| workload | variant | threads | shade | best peer | shade ÷ best peer | shade ÷ floor |\n|---|---|---|---|---|---|---|"
    );
    for w in p.workloads {
        for v in w.variants {
            for &t in p.threads {
                let best = w
                    .peers
                    .iter()
                    .filter_map(|pe| median(p.res.cell(w.id, v, pe, t)).map(|x| (x, *pe)))
                    .min_by(|a, b| a.0.total_cmp(&b.0))
                    .map_or("–".into(), |(x, pe)| format!("{} ({pe})", secs(x)));
                for who in w.shade {
                    let shade =
                        median(p.res.cell(w.id, v, who, t)).map_or("not measured".into(), secs);
                    let name = if w.shade.len() > 1 { *who } else { "" };
                    let _ = writeln!(
                        s,
                        "| {} | {v} | {t} | {shade}{} | {best} | {} | {} |",
                        w.id,
                        if name.is_empty() {
                            String::new()
                        } else {
                            format!(" ({name})")
                        },
                        versus_best(p.res, w, who, v, t),
                        versus_floor(p, w, who, v, t)
                    );
                }
            }
        }
    }
    s.push('\n');

    for (i, w) in p.workloads.iter().enumerate() {
        render_workload(&mut s, i + 1, w, p);
    }

    let _ = writeln!(
        s,
        "## {}. The interface and sparse Jacobians (shade only)\n\n\
         `interface/gradient/n*`: a prepared `gradient` through `shade-interface` with \
         `AutoShade` (`interface-autoshade`), the direct core call (`direct-autodiff`) and a \
         generic closure-capturing path (`closure-generic`), each divided by the prepared core \
         call (`baseline`); work: 4 flops and 3 tape records per element. \
         `jacobian/sparse-vs-dense/n*`: a tridiagonal Jacobian by `AutoSparse` over forward \
         mode (3 colours) against dense chunked forward mode (`baseline`, n / 8 passes).\n",
        p.workloads.len() + 1
    );
    let internal: Vec<&Estimate> = p
        .estimates
        .iter()
        .filter(|e| e.group.starts_with("interface/") || e.group.starts_with("jacobian/"))
        .collect();
    s.push_str(&ratio_table_of(&internal));
    if !p.res.paired.is_empty() {
        s.push_str(
            "\n`interface/paired/*`: what the interface adds, measured interleaved \
             (adjacent blocks of the direct call and of the interface alternate, one ratio a \
             round; the median with its quartiles): the tape (`AutoShade` against \
             `Tape::gradient_into`) and a generated function (`Compiled(d_sin_loss {})`, \
             `Compiled(t_sin_loss {})` against the direct call; target ≤ 1.02).\n\n\
             | group | candidate ÷ reference | median (quartiles) | rounds | reference per call |\n\
             |---|---|---|---|---|\n",
        );
        for r in &p.res.paired {
            let _ = writeln!(
                s,
                "| {} | {} ÷ {} | {:.3} ({:.3}–{:.3}) | {:.0} | {} |",
                r.group,
                r.candidate,
                r.reference,
                r.median,
                r.q1,
                r.q3,
                r.rounds,
                human(r.reference_ns)
            );
        }
    }
    let _ = writeln!(s, "\n## All criterion estimates of this run\n");
    let all: Vec<&Estimate> = p.estimates.iter().collect();
    s.push_str(&ratio_table_of(&all));
    s
}

fn ratio_table_of(estimates: &[&Estimate]) -> String {
    let owned: Vec<Estimate> = estimates
        .iter()
        .map(|e| Estimate {
            group: e.group.clone(),
            function: e.function.clone(),
            parameter: e.parameter.clone(),
            mean_ns: e.mean_ns,
            throughput: e.throughput.clone(),
            bytes: e.bytes,
            elements: e.elements,
            spread: e.spread,
        })
        .collect();
    ratio_table(&owned)
}

fn render_workload(s: &mut String, n: usize, w: &Workload, p: &Page<'_>) {
    let _ = writeln!(s, "## {n}. {} (`{}`)\n\n{}\n", w.title, w.id, w.about);
    for f in w.floors {
        let times: Vec<String> = p
            .threads
            .iter()
            .filter_map(|&t| match floor_times(p.estimates, w, f.variant, t) {
                (Some(c), Some(m)) => Some(format!(
                    "{t} thread(s): {} of arithmetic, {} of memory",
                    secs(c),
                    secs(m)
                )),
                _ => None,
            })
            .collect();
        let times = if times.is_empty() {
            String::new()
        } else {
            format!(" ({})", times.join("; "))
        };
        let _ = writeln!(
            s,
            "- Floor of `{}`: {:.3} G multiply-adds ({}), {:.1} MB{times}.",
            f.variant,
            f.macs / 1e9,
            w.precision,
            f.bytes / 1e6
        );
    }
    for who in w.shade.iter().chain(w.peers) {
        if let Some(note) = p.res.notes.get(&(w.id.to_string(), who.to_string())) {
            let _ = writeln!(s, "- {who}: {note}.");
        }
    }
    s.push('\n');
    let _ = write!(s, "| variant | threads |");
    for who in w.shade.iter().chain(w.peers) {
        let _ = write!(s, " {who} |");
    }
    for who in w.shade {
        let _ = write!(s, " {who} ÷ best peer |");
    }
    for who in w.shade {
        let _ = write!(s, " {who} ÷ floor |");
    }
    let columns = 2 + 3 * w.shade.len() + w.peers.len();
    let _ = writeln!(s, "\n|{}", "---|".repeat(columns));
    for v in w.variants {
        for &t in p.threads {
            let _ = write!(s, "| {v} | {t} |");
            for who in w.shade {
                let _ = write!(s, " {} |", shade_cell(p.res, w, who, v, t));
            }
            for pe in w.peers {
                let _ = write!(s, " {} |", cell_text(p.res.cell(w.id, v, pe, t)));
            }
            for who in w.shade {
                let _ = write!(s, " {} |", versus_best(p.res, w, who, v, t));
            }
            for who in w.shade {
                let _ = write!(s, " {} |", versus_floor(p, w, who, v, t));
            }
            s.push('\n');
        }
    }
    s.push('\n');
    let everyone: Vec<&str> = w.shade.iter().chain(w.peers).copied().collect();
    if let Some((a, b)) = w.pair {
        let title = format!("`{a}` ÷ `{b}` (medians)");
        per_implementation(s, &title, &everyone, p.threads, |who, t| {
            match (
                median(p.res.cell(w.id, a, who, t)),
                median(p.res.cell(w.id, b, who, t)),
            ) {
                (Some(x), Some(y)) => format!("{:.2}", x / y),
                _ => "–".into(),
            }
        });
    }
    if let Some(bytes) = w.bandwidth_bytes {
        let v = w.variants[0];
        let title = format!(
            "`{v}` bandwidth (GB/s at the median; in brackets the fraction of the copy bandwidth \
             at the same thread count)"
        );
        per_implementation(s, &title, &everyone, p.threads, |who, t| {
            median(p.res.cell(w.id, v, who, t)).map_or("–".into(), |m| {
                let gbs = bytes / m / 1e9;
                match copy_bandwidth(p.estimates, t) {
                    Some(b) => format!("{gbs:.1} ({:.2})", gbs / (b / 1e9)),
                    None => format!("{gbs:.1}"),
                }
            })
        });
    }
    speed_up(s, w, p, &everyone);
    if !w.profile.is_empty() {
        let _ = writeln!(
            s,
            "Where shade's time goes (`perf record` of the bench on this machine while it was \
             shared, on the date named): {}\n",
            w.profile
        );
    }
    if w.memory {
        let title = "Peak resident memory, MiB (peak − base in brackets)";
        per_implementation(s, title, &everyone, p.threads, |who, t| {
            p.res
                .memory
                .get(&(w.id.to_string(), who.to_string(), t))
                .map_or("–".into(), |m| {
                    format!("{:.0} ({:.0})", m.peak, m.peak - m.base)
                })
        });
    }
}

/// What the most threads of the run gain over one: each implementation's one-thread
/// median divided by its many-thread one, per variant, and the same ratio of the floor
/// (what the run's measured rates gave the variant's mix of arithmetic and memory
/// traffic).
fn speed_up(s: &mut String, w: &Workload, p: &Page<'_>, everyone: &[&str]) {
    let Some(&many) = p.threads.iter().max() else {
        return;
    };
    if many < 2 || !p.threads.contains(&1) {
        return;
    }
    let _ = writeln!(
        s,
        "Speed-up on {many} threads (1-thread median ÷ {many}-thread median; `floor`: the \
         same ratio of the floor, what this run's measured rates gave the variant's count):\n\n| variant | {} | floor |\n|---|{}---|",
        everyone.join(" | "),
        "---|".repeat(everyone.len())
    );
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
        _ => "–".into(),
    };
    for v in w.variants {
        let _ = write!(s, "| {v} |");
        for who in everyone {
            let cell = |t| median(p.res.cell(w.id, v, who, t));
            let _ = write!(s, " {} |", ratio(cell(1), cell(many)));
        }
        let floor = |t| floor_time(p.estimates, w, v, t);
        let _ = writeln!(s, " {} |", ratio(floor(1), floor(many)));
    }
    s.push('\n');
}

/// A table with one row per thread count and one column per implementation.
fn per_implementation(
    s: &mut String,
    title: &str,
    everyone: &[&str],
    threads: &[usize],
    cell: impl Fn(&str, usize) -> String,
) {
    let _ = writeln!(
        s,
        "{title}:\n\n| threads | {} |\n|---|{}",
        everyone.join(" | "),
        "---|".repeat(everyone.len())
    );
    for &t in threads {
        let _ = write!(s, "| {t} |");
        for who in everyone {
            let _ = write!(s, " {} |", cell(who, t));
        }
        s.push('\n');
    }
    s.push('\n');
}

#[cfg(test)]
mod tests {
    use super::super::peers::{Cell, Machine, Results, Timing};
    use super::super::workloads::WORKLOADS;
    use super::*;

    /// A floor whose fastest sample took 0.1 s per iteration of `per` bytes (`copy`)
    /// or multiply-adds (`fma-*`): a rate of `10 · per` per second.
    fn floor(function: &str, threads: usize, per: f64) -> Estimate {
        let bytes = function == "copy";
        Estimate {
            group: "floors".into(),
            function: function.into(),
            parameter: format!("t{threads}"),
            mean_ns: 2e8,
            throughput: None,
            bytes: bytes.then_some(per),
            elements: (!bytes).then_some(per),
            spread: Some([1e8, 1.5e8, 3e8]),
        }
    }

    fn workload(id: &str) -> &'static Workload {
        WORKLOADS.iter().find(|w| w.id == id).unwrap()
    }

    fn estimates() -> Vec<Estimate> {
        vec![
            // 20 GB/s, 100 G f32 and 50 G f64 multiply-adds a second on one thread;
            // 30 GB/s and 200 G f32 on two (no f64 rate at two threads: the one-thread
            // rate stands).
            floor("copy", 1, 2e9),
            floor("fma-f32", 1, 1e10),
            floor("fma-f64", 1, 5e9),
            floor("copy", 2, 3e9),
            floor("fma-f32", 2, 2e10),
            Estimate {
                bytes: None,
                elements: None,
                spread: Some([7e4, 8e4, 9e4]),
                ..floor("wake", 2, 0.0)
            },
        ]
    }

    #[test]
    fn a_floor_is_the_longer_of_arithmetic_and_memory_at_the_runs_rates() {
        let e = estimates();
        let close = |a: Option<f64>, b: f64| {
            let a = a.unwrap();
            assert!((a - b).abs() <= 1e-9 * b, "{a} against {b}");
        };
        // spmm: 0.064 G multiply-adds (0.64 ms), 293.6 MB (14.68 ms): memory-bound.
        let spmm = workload("spmm");
        let (c, m) = floor_times(&e, spmm, "forward", 1);
        close(c, 0.064e9 / 1e11);
        close(m, 293.6e6 / 2e10);
        close(floor_time(&e, spmm, "forward", 1), 293.6e6 / 2e10);
        close(floor_time(&e, spmm, "forward", 2), 293.6e6 / 3e10);
        // 1M nodes: 20 G multiply-adds (0.2 s) against 3 GB (0.15 s): arithmetic.
        close(
            floor_time(&e, workload("synth_gcn_1m"), "step", 1),
            20e9 / 1e11,
        );
        // The large GMM is f64: its 13 G multiply-adds at the f64 rate.
        let gmm = workload("gmm_d64_k200_n10000");
        close(floor_time(&e, gmm, "gradient", 1), 13e9 / 5e10);
        // Without an f64 rate at two threads, the one-thread rate.
        close(floor_time(&e, gmm, "gradient", 2), 13e9 / 5e10);
        // A two-thread rate below the one-thread rate (a core taken by another
        // process) does not lower the floor's rate.
        let mut slow = estimates();
        slow.push(floor("fma-f64", 2, 1e9));
        close(floor_time(&slow, gmm, "gradient", 2), 13e9 / 5e10);
        // A variant without a floor, and a run without floors.
        assert_eq!(floor_time(&e, spmm, "reverse", 1), None);
        assert_eq!(floor_time(&[], spmm, "forward", 1), None);
    }

    #[test]
    fn the_page_divides_shades_median_by_the_floor() {
        let e = estimates();
        let mut res = Results::default();
        // Twice spmm's one-thread floor of 14.68 ms, and a peer at 4 times it.
        // shade at 1.6 times the speed on two threads (1.2 times the floor there).
        for (who, t, median) in [("shade", 1, 2.0), ("torch", 1, 4.0), ("shade", 2, 1.25)] {
            let median = median * 293.6e6 / 2e10;
            res.cells.insert(
                ("spmm".into(), "forward".into(), who.into(), t),
                Cell::Ok(Timing {
                    min: median,
                    median,
                    max: median,
                }),
            );
        }
        let machine = Machine {
            cores: 2,
            cpu: "test".into(),
            memory: "1 GiB".into(),
            kernel: "test".into(),
            rustc: "test".into(),
            taskset: true,
        };
        let workloads = [workload("spmm")];
        let page = render(&Page {
            machine: &machine,
            installs: &[],
            workloads: &workloads,
            threads: &[1, 2],
            res: &res,
            estimates: &e,
            shade_errors: &[],
            timing: Timings {
                setup: 0.0,
                build: 0.0,
                measure: 0.0,
                total: 0.0,
            },
            quick: false,
            date: "today".into(),
        });
        assert!(
            page.contains(
                "| spmm | forward | 1 | 29.36 ms | 58.72 ms (torch) | 0.50 (torch) | 2.0 |"
            ),
            "{page}"
        );
        // No peer at two threads: no ratio to the best peer.
        assert!(
            page.contains("| spmm | forward | 2 | 18.35 ms | – | – | 1.9 |"),
            "{page}"
        );
        // Two threads measured no f64 rate: the one-thread rate stands.
        assert!(
            page.contains(
                "`fma-f64`: 100 and 50 G/s on 1 thread(s), 200 and 50 G/s on 2 thread(s))"
            ),
            "{page}"
        );
        assert!(
            page.contains("1 ms of work on the calling thread took 80.00 µs on 2 thread(s)"),
            "{page}"
        );
        assert!(
            page.contains("20.0 GB/s on 1 thread(s), 30.0 GB/s on 2 thread(s)"),
            "{page}"
        );
        // torch has no 2-thread result; the floor's speed-up is that of the copy
        // bandwidth, 30 / 20 GB/s.
        assert!(
            page.contains("| variant | shade | torch | scipy | floor |\n|---|---|---|---|---|\n| forward | 1.60 | – | – | 1.50 |"),
            "{page}"
        );
        assert!(
            page.contains("1 thread(s): 640.00 µs of arithmetic, 14.68 ms of memory"),
            "{page}"
        );
    }
}
