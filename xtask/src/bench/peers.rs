//! `cargo xtask bench --peers`: shade against PyTorch Geometric, PyTorch, JAX and SciPy
//! on the same workloads, at 1 and 2 threads, in one run; writes `docs/benchmarks.md`.
//!
//! 1. `benches/peers/setup.py` creates `target/peers-venv` and installs the peer
//!    libraries by name (one JSON line per package).
//! 2. The benches are built once; then, for each thread count `T`, the machine's floors
//!    are measured (bench `floors`: copy bandwidth and peak multiply-add rates on `T`
//!    threads), and each workload runs its shade bench (criterion, filter
//!    `^peers/<workload>/`, `RAYON_NUM_THREADS=T`)
//!    and right after it each peer script (`peer_<name>.py --workload W --threads T`),
//!    every process pinned with `taskset -c 0..T-1`. Criterion's results go to
//!    `target/peers/criterion` (cleared first, so nothing stale is read); the peers'
//!    JSON lines and shade's own lines (peak memory; the large GMM's timings, which a
//!    bench outside criterion writes) to `target/peers/results.jsonl`; logs to
//!    `target/peers/logs/`.
//! 3. The page: machine facts, method, a summary, one section per workload (its floor,
//!    medians with min–max, the ratio to the best peer, memory, bandwidth), the
//!    interface and sparse-Jacobian ratios, and criterion's full table. A peer that
//!    could not be installed or failed shows "not measured" and the reason.
//!
//! `--quick` shortens every measurement (a check of the pipeline, not a result);
//! `SHADE_PEERS_WORKLOADS=a,b` restricts the run to some workloads.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::json::{Value, parse_object};
use super::page::{Page, Timings, render};
use super::workloads::{INTERNAL_BENCHES, WORKLOADS, Workload};
use super::{Estimate, collect};
use crate::root;

/// Longest a single process may take.
const PROCESS_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// A measured timing, in seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Timing {
    pub(super) min: f64,
    pub(super) median: f64,
    pub(super) max: f64,
}

/// What one implementation gave for one variant at one thread count.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Cell {
    Ok(Timing),
    NotMeasured(String),
}

/// Peak and base resident memory in MiB.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Memory {
    pub(super) peak: f64,
    pub(super) base: f64,
}

/// One interleaved A/B ratio of an internal bench (`"kind":"paired"`, written by
/// `shade_benches::measure::report_paired`).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct PairedRatio {
    pub(super) group: String,
    pub(super) reference: String,
    pub(super) candidate: String,
    pub(super) median: f64,
    pub(super) q1: f64,
    pub(super) q3: f64,
    pub(super) rounds: f64,
    pub(super) reference_ns: f64,
}

/// Everything measured, keyed by (workload, variant, implementation, threads).
#[derive(Default)]
pub(super) struct Results {
    pub(super) cells: BTreeMap<(String, String, String, usize), Cell>,
    pub(super) memory: BTreeMap<(String, String, usize), Memory>,
    pub(super) versions: BTreeMap<String, String>,
    pub(super) notes: BTreeMap<(String, String), String>,
    pub(super) paired: Vec<PairedRatio>,
}

impl Results {
    pub(super) fn cell(&self, w: &str, v: &str, who: &str, t: usize) -> Option<&Cell> {
        self.cells
            .get(&(w.to_string(), v.to_string(), who.to_string(), t))
    }

    /// The peers hold their features dense: a peer's `<v>` is also its `<v>-dense`,
    /// the variant where shade runs on dense features too.
    fn dense_from_plain(&mut self, w: &Workload, peer: &str, threads: usize) {
        for v in w.variants {
            let Some(plain) = v.strip_suffix("-dense") else {
                continue;
            };
            if self.cell(w.id, v, peer, threads).is_none()
                && let Some(c) = self.cell(w.id, plain, peer, threads).cloned()
            {
                self.cells
                    .insert((w.id.into(), v.to_string(), peer.into(), threads), c);
            }
        }
    }

    /// Reads one output line of a peer script or of shade's memory report.
    fn add_line(&mut self, line: &str) {
        let Some(fields) = parse_object(line) else {
            return;
        };
        let get = |k: &str| fields.iter().find(|(n, _)| n == k).map(|(_, v)| v);
        let text = |k: &str| match get(k) {
            Some(Value::Str(s)) => Some(s.clone()),
            _ => None,
        };
        let num = |k: &str| match get(k) {
            Some(Value::Num(x)) => Some(*x),
            _ => None,
        };
        if text("kind").as_deref() == Some("paired") {
            if let (Some(group), Some(reference), Some(candidate)) =
                (text("group"), text("reference"), text("candidate"))
                && let (Some(median), Some(q1), Some(q3), Some(rounds), Some(reference_ns)) = (
                    num("median"),
                    num("q1"),
                    num("q3"),
                    num("rounds"),
                    num("reference_ns"),
                )
            {
                self.paired.push(PairedRatio {
                    group,
                    reference,
                    candidate,
                    median,
                    q1,
                    q3,
                    rounds,
                    reference_ns,
                });
            }
            return;
        }
        let (Some(kind), Some(w), Some(who), Some(t)) =
            (text("kind"), text("workload"), text("peer"), num("threads"))
        else {
            return;
        };
        let t = t as usize;
        let variant = text("variant").unwrap_or_default();
        if let (Some(peak), Some(base)) = (num("peak_rss_mib"), num("base_rss_mib")) {
            self.memory
                .insert((w.clone(), who.clone(), t), Memory { peak, base });
        }
        if kind != "result" {
            return;
        }
        if let Some(v) = text("version").filter(|v| !v.is_empty()) {
            self.versions.insert(who.clone(), v);
        }
        if let Some(n) = text("note").filter(|n| !n.is_empty()) {
            self.notes.insert((w.clone(), who.clone()), n);
        }
        let cell = match (
            text("status").as_deref(),
            num("min_s"),
            num("median_s"),
            num("max_s"),
        ) {
            (Some("ok"), Some(min), Some(median), Some(max)) => {
                Cell::Ok(Timing { min, median, max })
            }
            _ => Cell::NotMeasured(text("reason").unwrap_or_else(|| "no timing reported".into())),
        };
        self.cells.insert((w, variant, who, t), cell);
    }

    /// Shade's cells from criterion's estimates: `peers/<workload>/<variant>/t<n>` is
    /// `shade`'s, `peers/<workload>/compiled-<variant>/t<n>` `shade-compiled`'s.
    fn add_estimates(&mut self, estimates: &[Estimate]) {
        for e in estimates {
            let (Some(w), Some(t)) = (
                e.group.strip_prefix("peers/"),
                e.parameter
                    .strip_prefix('t')
                    .and_then(|t| t.parse::<usize>().ok()),
            ) else {
                continue;
            };
            let [min, median, max] = e.spread.unwrap_or([e.mean_ns; 3]);
            let cell = Cell::Ok(Timing {
                min: min * 1e-9,
                median: median * 1e-9,
                max: max * 1e-9,
            });
            let (who, variant) = match e.function.strip_prefix("compiled-") {
                Some(v) => ("shade-compiled", v),
                None => ("shade", e.function.as_str()),
            };
            self.cells
                .insert((w.to_string(), variant.into(), who.into(), t), cell);
        }
    }
}

/// Facts about the machine, for the page's header.
pub(super) struct Machine {
    pub(super) cores: usize,
    pub(super) cpu: String,
    pub(super) memory: String,
    pub(super) kernel: String,
    pub(super) rustc: String,
    pub(super) taskset: bool,
}

impl Machine {
    fn probe() -> Machine {
        let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split(':').nth(1))
            .map_or("unknown CPU".into(), |s| s.trim().to_string());
        let memory = fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| {
                let kib: f64 = m.lines().next()?.split_whitespace().nth(1)?.parse().ok()?;
                Some(format!("{:.1} GiB", kib / 1024.0 / 1024.0))
            })
            .unwrap_or_else(|| "unknown".into());
        Machine {
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cpu,
            memory,
            kernel: fs::read_to_string("/proc/sys/kernel/osrelease")
                .map_or("unknown".into(), |s| s.trim().to_string()),
            rustc: output_of(Command::new("rustc").arg("--version")).unwrap_or_default(),
            taskset: output_of(Command::new("taskset").arg("--version")).is_some(),
        }
    }
}

fn output_of(cmd: &mut Command) -> Option<String> {
    let out = cmd.stderr(Stdio::null()).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The current UTC date and time (`YYYY-MM-DD HH:MM UTC`), from the system clock.
fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days to civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60
    )
}

/// Runs `cmd` with stdout and stderr to files, killing it after `timeout`. Returns
/// whether it succeeded and, if not, why.
fn run_logged(mut cmd: Command, out: &Path, err: &Path, timeout: Duration) -> Result<(), String> {
    let stdout = File::create(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let stderr = File::create(err).map_err(|e| format!("cannot create {}: {e}", err.display()))?;
    let mut child = cmd
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .map_err(|e| format!("could not start {:?}: {e}", cmd.get_program()))?;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => {
                let tail = fs::read_to_string(err).unwrap_or_default();
                let last = tail
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("");
                return Err(format!("exited with {status}: {}", last.trim()));
            }
            Ok(None) if start.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("timed out after {} s", timeout.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(100)),
            Err(e) => return Err(format!("wait failed: {e}")),
        }
    }
}

/// `program args...`, pinned to CPUs `0..threads` when `taskset` exists.
fn pinned(taskset: bool, threads: usize, program: &str, args: &[&str]) -> Command {
    if taskset {
        let cpus = (0..threads)
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(",");
        let mut cmd = Command::new("taskset");
        cmd.args(["-c", &cpus, program]).args(args);
        cmd
    } else {
        let mut cmd = Command::new(program);
        cmd.args(args);
        cmd
    }
}

struct Run {
    root: PathBuf,
    out: PathBuf,
    logs: PathBuf,
    results: PathBuf,
    machine: Machine,
    quick: bool,
    cargo: String,
}

impl Run {
    fn cargo_bench(
        &self,
        threads: usize,
        bench: &str,
        filter: &str,
        label: &str,
    ) -> Result<(), String> {
        let mut args = vec![
            "bench",
            "-p",
            "shade-benches",
            "--bench",
            bench,
            "--",
            filter,
        ];
        if self.quick {
            args.extend(["--warm-up-time", "0.3", "--measurement-time", "0.5"]);
        } else {
            args.extend(["--warm-up-time", "1", "--measurement-time", "2"]);
        }
        let mut cmd = pinned(self.machine.taskset, threads, &self.cargo, &args);
        cmd.current_dir(&self.root)
            .env("RAYON_NUM_THREADS", threads.to_string())
            .env("CRITERION_HOME", self.out.join("criterion"))
            .env("SHADE_PEERS_OUT", &self.results);
        if self.quick {
            cmd.env("SHADE_PEERS_QUICK", "1");
        }
        let log = self.logs.join(format!("shade-{label}-t{threads}"));
        run_logged(
            cmd,
            &log.with_extension("out"),
            &log.with_extension("err"),
            PROCESS_TIMEOUT,
        )
    }

    /// Runs the benches of `bench` matching `filter` at `threads` threads, printing its
    /// time; a failure is kept in `errors` for the page.
    fn whole_bench(&self, threads: usize, bench: &str, filter: &str, errors: &mut Vec<String>) {
        print!("==> [t{threads}] {bench} ... ");
        let s = Instant::now();
        let r = self.cargo_bench(threads, bench, filter, bench);
        println!(
            "{:.0} s{}",
            s.elapsed().as_secs_f64(),
            r.as_ref()
                .err()
                .map_or(String::new(), |e| format!(" FAILED: {e}"))
        );
        if let Err(e) = r {
            errors.push(format!("{bench} (t{threads}): {e}"));
        }
    }

    /// Runs one peer script on one workload; its result lines go to `results`.
    fn peer(&self, python: &Path, peer: &str, w: &Workload, threads: usize, res: &mut Results) {
        let script = self
            .root
            .join("benches/peers")
            .join(format!("peer_{peer}.py"));
        let t = threads.to_string();
        let py = python.to_string_lossy();
        let args = [
            &*script.to_string_lossy(),
            "--workload",
            w.id,
            "--threads",
            &t,
        ];
        let mut cmd = pinned(self.machine.taskset, threads, &py, &args);
        for var in ["OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"] {
            cmd.env(var, &t);
        }
        if self.quick {
            cmd.env("SHADE_PEERS_QUICK", "1");
        }
        let log = self.logs.join(format!("{peer}-{}-t{threads}", w.id));
        let (out, err) = (log.with_extension("out"), log.with_extension("err"));
        let status = run_logged(cmd, &out, &err, PROCESS_TIMEOUT);
        let text = fs::read_to_string(&out).unwrap_or_default();
        let mut appended = String::new();
        for line in text.lines().filter(|l| l.starts_with('{')) {
            res.add_line(line);
            appended.push_str(line);
            appended.push('\n');
        }
        append(&self.results, &appended);
        res.dense_from_plain(w, peer, threads);
        for v in w.variants {
            if res.cell(w.id, v, peer, threads).is_none() {
                let why = match &status {
                    Err(e) => format!("the script failed: {e}"),
                    Ok(()) => "the script reported no timing".into(),
                };
                res.cells.insert(
                    (w.id.into(), v.to_string(), peer.into(), threads),
                    Cell::NotMeasured(why),
                );
            }
        }
    }
}

fn append(path: &Path, text: &str) {
    use std::io::Write as _;
    if let Ok(mut f) = fs::OpenOptions::new().create(true).append(true).open(path) {
        let _ = f.write_all(text.as_bytes());
    }
}

/// One package line of `setup.py`.
pub(super) struct Install {
    pub(super) package: String,
    pub(super) ok: bool,
    pub(super) detail: String,
}

fn setup_venv(run: &Run, venv: &Path) -> (Vec<Install>, Option<String>) {
    let script = run.root.join("benches/peers/setup.py");
    let mut cmd = Command::new("python3");
    cmd.arg(&script).arg(venv);
    let log = run.logs.join("setup");
    let status = run_logged(
        cmd,
        &log.with_extension("out"),
        &log.with_extension("err"),
        PROCESS_TIMEOUT,
    );
    let text = fs::read_to_string(log.with_extension("out")).unwrap_or_default();
    let installs = text
        .lines()
        .filter_map(parse_object)
        .map(|f| {
            let s = |k: &str| {
                f.iter()
                    .find(|(n, _)| n == k)
                    .and_then(|(_, v)| match v {
                        Value::Str(s) => Some(s.clone()),
                        _ => None,
                    })
                    .unwrap_or_default()
            };
            let ok = s("status") == "ok";
            Install {
                package: s("package"),
                ok,
                detail: if ok { s("version") } else { s("reason") },
            }
        })
        .collect();
    (installs, status.err())
}

pub(crate) fn run(quick: bool) -> Result<(), String> {
    let started = Instant::now();
    let root = root();
    let out = root.join("target").join("peers");
    let _ = fs::remove_dir_all(&out);
    let logs = out.join("logs");
    fs::create_dir_all(&logs).map_err(|e| format!("cannot create {}: {e}", logs.display()))?;
    let run = Run {
        results: out.join("results.jsonl"),
        root: root.clone(),
        out,
        logs,
        machine: Machine::probe(),
        quick,
        cargo: std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()),
    };
    let only: Option<Vec<String>> = std::env::var("SHADE_PEERS_WORKLOADS")
        .ok()
        .map(|s| s.split(',').map(|w| w.trim().to_string()).collect());
    let workloads: Vec<&Workload> = WORKLOADS
        .iter()
        .filter(|w| only.as_ref().is_none_or(|o| o.iter().any(|x| x == w.id)))
        .collect();
    if !run.machine.taskset {
        println!("warning: `taskset` not found: processes are not pinned to CPUs");
    }

    println!("==> xtask bench --peers: Python environment (target/peers-venv)");
    let t = Instant::now();
    let venv = root.join("target").join("peers-venv");
    let (installs, setup_error) = setup_venv(&run, &venv);
    for i in &installs {
        println!(
            "    {:<16} {}",
            i.package,
            if i.ok { &i.detail } else { "FAILED" }
        );
    }
    let python = venv.join("bin").join("python");
    let python_ok = python.exists();
    let setup_secs = t.elapsed().as_secs_f64();

    println!("==> building the benches");
    let t = Instant::now();
    let status = crate::cargo(&["bench", "-p", "shade-benches", "--no-run"])
        .status()
        .map_err(|e| format!("could not start cargo: {e}"))?;
    if !status.success() {
        return Err(format!("the benches do not build ({status})"));
    }
    let build_secs = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let mut res = Results::default();
    let mut shade_errors: Vec<String> = Vec::new();
    let thread_counts: Vec<usize> = [1, 2]
        .into_iter()
        .filter(|&n| n <= run.machine.cores)
        .collect();
    for &threads in &thread_counts {
        // The machine's floors at this thread count, before the workloads they bound.
        run.whole_bench(threads, "floors", "^floors/", &mut shade_errors);
        if threads == 1 {
            for bench in INTERNAL_BENCHES {
                run.whole_bench(1, bench, "", &mut shade_errors);
            }
        }
        for w in &workloads {
            print!("==> [t{threads}] {}: shade", w.id);
            let s = Instant::now();
            if let Err(e) = run.cargo_bench(threads, w.bench, &format!("^peers/{}/", w.id), w.id) {
                shade_errors.push(format!("{} (t{threads}): {e}", w.id));
                print!(" FAILED");
            }
            print!(" {:.0} s", s.elapsed().as_secs_f64());
            for peer in w.peers {
                let s = Instant::now();
                if python_ok {
                    run.peer(&python, peer, w, threads, &mut res);
                } else {
                    let why = setup_error
                        .clone()
                        .unwrap_or_else(|| "the Python environment could not be created".into());
                    for v in w.variants {
                        res.cells.insert(
                            (w.id.into(), v.to_string(), peer.to_string(), threads),
                            Cell::NotMeasured(why.clone()),
                        );
                    }
                }
                print!(", {peer} {:.0} s", s.elapsed().as_secs_f64());
            }
            println!();
        }
    }
    let measure_secs = t.elapsed().as_secs_f64();

    let criterion = run.out.join("criterion");
    let mut estimates = Vec::new();
    collect(&criterion, &criterion, &mut estimates)?;
    estimates.sort_by(|a, b| {
        (&a.group, &a.parameter, &a.function).cmp(&(&b.group, &b.parameter, &b.function))
    });
    res.add_estimates(&estimates);
    // shade's own lines: peak memory (synth_gcn), the timings of the benches that do
    // not go through criterion (gmm_large) and the interleaved ratios (interface).
    for line in fs::read_to_string(&run.results).unwrap_or_default().lines() {
        if line.contains("\"kind\":\"memory\"")
            || line.contains("\"kind\":\"paired\"")
            || line.contains("\"peer\":\"shade")
        {
            res.add_line(line);
        }
    }
    let timing = Timings {
        setup: setup_secs,
        build: build_secs,
        measure: measure_secs,
        total: started.elapsed().as_secs_f64(),
    };
    let page = render(&Page {
        machine: &run.machine,
        installs: &installs,
        workloads: &workloads,
        threads: &thread_counts,
        res: &res,
        estimates: &estimates,
        shade_errors: &shade_errors,
        timing,
        quick,
        date: utc_now(),
    });
    let path = root.join("docs").join("benchmarks.md");
    fs::write(&path, page).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    println!(
        "wrote {} in {:.1} min (environment {:.0} s, build {:.0} s, measurements {:.0} s)",
        path.display(),
        timing.total / 60.0,
        timing.setup,
        timing.build,
        timing.measure
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::page::{cell_text, shade_cell, versus_best};
    use super::*;

    #[test]
    fn a_peers_plain_variant_stands_for_its_dense_one() {
        let w = WORKLOADS.iter().find(|w| w.id == "cora_gcn").unwrap();
        let mut r = Results::default();
        let t = Cell::Ok(Timing {
            min: 1.0,
            median: 2.0,
            max: 3.0,
        });
        let key = |v: &str| ("cora_gcn".to_string(), v.to_string(), "jax".to_string(), 2);
        r.cells.insert(key("step"), t.clone());
        // A variant the peer measured itself is kept.
        let own = Cell::NotMeasured("own".into());
        r.cells.insert(key("infer-dense"), own.clone());
        r.dense_from_plain(w, "jax", 2);
        assert_eq!(r.cell("cora_gcn", "step-dense", "jax", 2), Some(&t));
        assert_eq!(r.cell("cora_gcn", "infer-dense", "jax", 2), Some(&own));
        assert_eq!(r.cell("cora_gcn", "step-dense", "jax", 1), None);
    }

    #[test]
    fn peer_lines_become_cells_and_failures_keep_their_reason() {
        let mut r = Results::default();
        r.add_line(
            r#"{"kind": "result", "workload": "spmm", "peer": "torch", "threads": 1, "variant": "forward", "status": "ok", "runs": 20, "min_s": 0.01, "median_s": 0.02, "max_s": 0.03, "version": "torch 2"}"#,
        );
        r.add_line(
            r#"{"kind": "result", "workload": "spmm", "peer": "scipy", "threads": 1, "variant": "forward", "status": "not measured", "reason": "ModuleNotFoundError: scipy"}"#,
        );
        r.add_line(r#"{"kind":"memory","workload":"synth_gcn_1m","variant":"step","peer":"shade","threads":2,"peak_rss_mib":900.5,"base_rss_mib":4.0}"#);
        r.add_line(r#"{"kind":"result","workload":"gmm_d64_k200_n10000","peer":"shade-compiled","threads":1,"variant":"gradient","status":"ok","runs":2,"min_s":9.5,"median_s":10.0,"max_s":10.0}"#);
        r.add_line("not json");
        assert_eq!(
            r.cell("spmm", "forward", "torch", 1),
            Some(&Cell::Ok(Timing {
                min: 0.01,
                median: 0.02,
                max: 0.03
            }))
        );
        assert_eq!(
            cell_text(r.cell("spmm", "forward", "scipy", 1)),
            "not measured: ModuleNotFoundError: scipy"
        );
        assert_eq!(
            r.memory[&("synth_gcn_1m".into(), "shade".into(), 2)].peak,
            900.5
        );
        assert_eq!(r.versions["torch"], "torch 2");
        assert_eq!(
            cell_text(r.cell("gmm_d64_k200_n10000", "gradient", "shade-compiled", 1)),
            "10.000 s (9.500 s–10.000 s)"
        );
    }

    #[test]
    fn paired_lines_are_kept_and_incomplete_ones_dropped() {
        let mut r = Results::default();
        r.add_line(
            r#"{"kind":"paired","group":"interface/paired/compiled-gradient/n10","reference":"direct","candidate":"interface","median":1.004,"q1":0.998,"q3":1.011,"rounds":2001,"calls_per_block":64,"reference_ns":41.5}"#,
        );
        r.add_line(r#"{"kind":"paired","group":"g","reference":"direct","candidate":"interface","median":1.0}"#);
        assert_eq!(r.paired.len(), 1);
        let p = &r.paired[0];
        assert_eq!(p.group, "interface/paired/compiled-gradient/n10");
        assert_eq!(
            (p.median, p.q1, p.q3, p.rounds),
            (1.004, 0.998, 1.011, 2001.0)
        );
        assert_eq!(p.reference_ns, 41.5);
        assert!(r.cells.is_empty() && r.memory.is_empty());
    }

    #[test]
    fn shade_cells_come_from_criterion_ids_and_ratios_use_the_best_peer() {
        let e = |group: &str, function: &str, parameter: &str, spread| Estimate {
            group: group.into(),
            function: function.into(),
            parameter: parameter.into(),
            mean_ns: 0.0,
            throughput: None,
            bytes: None,
            elements: None,
            spread: Some(spread),
        };
        let mut r = Results::default();
        r.add_estimates(&[
            e("peers/spmm", "forward", "t1", [9e6, 10e6, 12e6]),
            e("spmm", "forward", "", [1.0, 1.0, 1.0]),
            e(
                "peers/gmm_d64_k200_n10000",
                "compiled-gradient",
                "t1",
                [4e9, 5e9, 6e9],
            ),
        ]);
        for (peer, med) in [("torch", 0.04), ("scipy", 0.02)] {
            r.cells.insert(
                ("spmm".into(), "forward".into(), peer.into(), 1),
                Cell::Ok(Timing {
                    min: med,
                    median: med,
                    max: med,
                }),
            );
        }
        let w = &WORKLOADS.iter().find(|w| w.id == "spmm").unwrap();
        assert_eq!(versus_best(&r, w, "shade", "forward", 1), "0.50 (scipy)");
        assert_eq!(r.cells.len(), 4);
        let large = WORKLOADS
            .iter()
            .find(|w| w.id == "gmm_d64_k200_n10000")
            .unwrap();
        assert!(
            shade_cell(&r, large, "shade", "gradient", 1)
                .starts_with("not measured: the run-time tape")
        );
        assert_eq!(
            shade_cell(&r, large, "shade-compiled", "gradient", 1),
            "5.000 s (4.000 s–6.000 s)"
        );
    }

    #[test]
    fn every_workload_names_its_peer_scripts_and_a_floor_per_variant() {
        let scripts = root().join("benches").join("peers");
        for w in WORKLOADS {
            for p in w.peers {
                let script = scripts.join(format!("peer_{p}.py"));
                let text = fs::read_to_string(&script).unwrap();
                assert!(
                    text.contains(&format!("\"{}\"", w.id)),
                    "{p} lacks {}",
                    w.id
                );
            }
            for v in w.variants {
                assert!(w.floors.iter().any(|f| f.variant == *v), "{}: {v}", w.id);
            }
        }
    }

    #[test]
    fn dates_are_civil_utc() {
        let d = utc_now();
        assert_eq!(d.len(), "2026-12-01 10:00 UTC".len(), "{d}");
        assert!(d.starts_with("20"), "{d}");
    }
}
