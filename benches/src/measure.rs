//! What the peer-comparison benches share: the thread count they run with (so that a
//! bench id names it), the peak memory of the process, and the JSON lines written where
//! `cargo xtask bench --peers` reads them.

use std::io::Write as _;

/// The number of threads of rayon's global pool (`RAYON_NUM_THREADS` if set, else
/// one per CPU): the bench parameter `t<threads>` of every `peers/...` bench.
pub fn threads() -> usize {
    rayon::current_num_threads()
}

/// The bench parameter naming the thread count, e.g. `t2`.
pub fn threads_label() -> String {
    format!("t{}", threads())
}

/// A field of `/proc/self/status` in KiB (`VmHWM:` is the peak resident set size,
/// `VmRSS:` the current one); `None` where the file does not exist.
pub fn status_kib(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Appends one JSON line with this process's peak and base resident set size (MiB) for
/// `workload`/`variant` to the file named by `SHADE_PEERS_OUT` (set by
/// `cargo xtask bench --peers`), and prints it on stderr in any case. `base_kib` is the
/// resident size before the workload's data were built.
pub fn report_memory(workload: &str, variant: &str, base_kib: u64) {
    let peak = status_kib("VmHWM:").unwrap_or(0);
    append_line(&format!(
        "{{\"kind\":\"memory\",\"workload\":\"{workload}\",\"variant\":\"{variant}\",\
         \"peer\":\"shade\",\"threads\":{},\"peak_rss_mib\":{:.1},\"base_rss_mib\":{:.1}}}",
        threads(),
        peak as f64 / 1024.0,
        base_kib as f64 / 1024.0
    ));
}

/// Prints one JSON line (the schema of `benches/peers/README.md`) on stderr and appends
/// it to the file named by `SHADE_PEERS_OUT`, where `cargo xtask bench --peers` reads
/// shade's lines.
pub fn append_line(line: &str) {
    eprintln!("{line}");
    if let Some(path) = std::env::var_os("SHADE_PEERS_OUT") {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path);
        match file {
            Ok(mut f) => {
                let _ = writeln!(f, "{line}");
            }
            Err(e) => eprintln!("warning: cannot append to {}: {e}", path.to_string_lossy()),
        }
    }
}

/// The result of [`paired_ratio`]: the candidate's time over the reference's, one ratio
/// per round of two adjacent blocks, summarised by its quartiles.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Paired {
    /// The median of the per-round ratios (candidate ÷ reference).
    pub median: f64,
    /// The first quartile of the per-round ratios.
    pub q1: f64,
    /// The third quartile of the per-round ratios.
    pub q3: f64,
    /// How many rounds were measured.
    pub rounds: usize,
    /// Calls of each function in one block.
    pub calls_per_block: u64,
    /// The reference's median time per call, in nanoseconds.
    pub reference_ns: f64,
}

/// Times a block of `calls` calls of `f`, in seconds.
fn block_secs(f: &mut impl FnMut(), calls: u64) -> f64 {
    let t = std::time::Instant::now();
    for _ in 0..calls {
        f();
    }
    t.elapsed().as_secs_f64()
}

/// The `q`-quantile (0 ≤ q ≤ 1) of sorted, non-empty `v`, by linear interpolation.
fn quantile(v: &[f64], q: f64) -> f64 {
    let pos = q * (v.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
}

/// An interleaved A/B measurement of what `candidate` costs relative to `reference`:
/// blocks of the same number of calls (at least 200 µs a block) alternate, the order
/// swapped every round (reference first, then candidate first), and each round gives
/// one ratio of the two adjacent blocks. Drift of the machine (frequency, other load)
/// moves both blocks of a round alike, so the median of the ratios is far steadier than
/// two means measured one after the other, as criterion measures them. Runs for
/// `budget` after a warm-up of a tenth of it, and at least 21 rounds.
///
/// ```
/// use shade_benches::measure::paired_ratio;
/// let p = paired_ratio(|| { std::hint::black_box(1 + 1); }, || { std::hint::black_box(2 + 2); },
///     std::time::Duration::from_millis(20));
/// assert!(p.rounds >= 21 && p.q1 <= p.median && p.median <= p.q3);
/// ```
pub fn paired_ratio(
    mut reference: impl FnMut(),
    mut candidate: impl FnMut(),
    budget: std::time::Duration,
) -> Paired {
    let mut calls = 1u64;
    while block_secs(&mut reference, calls) < 2e-4 && calls < 1 << 40 {
        calls *= 2;
    }
    let warm = std::time::Instant::now();
    while warm.elapsed() < budget / 10 {
        block_secs(&mut reference, calls);
        block_secs(&mut candidate, calls);
    }
    let (mut ratios, mut refs) = (Vec::new(), Vec::new());
    let start = std::time::Instant::now();
    while start.elapsed() < budget || ratios.len() < 21 {
        let (r, c) = if ratios.len() % 2 == 0 {
            let r = block_secs(&mut reference, calls);
            (r, block_secs(&mut candidate, calls))
        } else {
            let c = block_secs(&mut candidate, calls);
            (block_secs(&mut reference, calls), c)
        };
        ratios.push(c / r);
        refs.push(r);
    }
    ratios.sort_by(f64::total_cmp);
    refs.sort_by(f64::total_cmp);
    Paired {
        median: quantile(&ratios, 0.5),
        q1: quantile(&ratios, 0.25),
        q3: quantile(&ratios, 0.75),
        rounds: ratios.len(),
        calls_per_block: calls,
        reference_ns: quantile(&refs, 0.5) / calls as f64 * 1e9,
    }
}

/// Prints one paired measurement (a table row on stdout) and appends its JSON line
/// (`"kind":"paired"`) where `cargo xtask bench --peers` reads it.
pub fn report_paired(group: &str, reference: &str, candidate: &str, p: &Paired) {
    println!(
        "{group:<44} {candidate} / {reference}: {:.4} (quartiles {:.4}–{:.4}, {} rounds of {} calls, \
         reference {:.1} ns a call)",
        p.median, p.q1, p.q3, p.rounds, p.calls_per_block, p.reference_ns
    );
    append_line(&format!(
        "{{\"kind\":\"paired\",\"group\":\"{group}\",\"reference\":\"{reference}\",\
         \"candidate\":\"{candidate}\",\"median\":{:.6},\"q1\":{:.6},\"q3\":{:.6},\
         \"rounds\":{},\"calls_per_block\":{},\"reference_ns\":{:.3}}}",
        p.median, p.q1, p.q3, p.rounds, p.calls_per_block, p.reference_ns
    ));
}

/// Criterion's options that take a value (skipped when looking for the filter).
const VALUED_OPTIONS: &[&str] = &[
    "--warm-up-time",
    "--measurement-time",
    "--sample-size",
    "--nresamples",
    "--noise-threshold",
    "--confidence-level",
    "--significance-level",
    "--save-baseline",
    "--baseline",
    "--load-baseline",
    "--color",
    "--output-format",
    "--plotting-backend",
    "--profile-time",
    "--format",
];

/// Runs `f` with a time budget in a bench binary that also runs criterion's groups,
/// when the invocation asks for `name`: under `cargo bench` (criterion's `--bench`
/// flag) with no filter, an empty one, or a filter that is a prefix of `name` or starts
/// with it. The budget is 3 s, or 0.3 s when `SHADE_PEERS_QUICK` is set (`cargo xtask
/// bench --quick`). Under `cargo test --benches` (no `--bench`) `f` is not run.
pub fn run_named(name: &str, f: impl FnOnce(std::time::Duration)) {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "--bench") {
        return;
    }
    let mut filter = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if VALUED_OPTIONS.contains(&a.as_str()) {
            it.next();
        } else if !a.starts_with('-') {
            filter = Some(a.as_str());
            break;
        }
    }
    let wanted = match filter {
        None | Some("") => true,
        Some(f) => name.starts_with(f) || f.starts_with(name),
    };
    if wanted {
        let quick = std::env::var_os("SHADE_PEERS_QUICK").is_some();
        f(std::time::Duration::from_millis(if quick {
            300
        } else {
            3000
        }))
    }
}
