//! `cargo xtask`: the project's maintenance commands, built on `std::process` only.
//!
//! - `cargo xtask ci`: fmt, clippy, test, doc, deny, bench build, in that order,
//!   stopping at the first failure with a summary. It needs cargo-deny and MPI
//!   (OpenMPI's `mpirun` and `mpicc`: `--all-features` builds shade-gnn's `mpi` feature,
//!   whose tests run `mpirun -np 2`); `.ci/run` installs both on a fresh machine.
//! - `cargo xtask bench [FILTER]`: runs the criterion benches and writes
//!   `docs/benchmarks.md` from their estimates; `cargo xtask bench --peers` runs the
//!   peer-comparison benches and the peer scripts (`benches/peers/`) at 1 and 2 threads
//!   and writes the comparison page instead (not part of `ci`).
//! - `cargo xtask fuzz [--cases N] [--all]`: runs the gradient property tests (every
//!   derivative against finite differences, see `GRADIENT_TESTS`) with many more cases
//!   in release; `--all` runs every property test of the workspace. Not part of `ci`.
//! - `cargo xtask compat`: regenerates `docs/errors.md`, `docs/compatibility.md` (the
//!   compatibility matrix is computed by really running each cell), `docs/backends.md`
//!   and `docs/compiled.md` (the compile-time engine, its examples checked);
//!   `ci`'s test step fails when one of them is stale.
//!
//! The tidy tests (`tidy.rs`: crate dependency directions, `//!` headers, file length)
//! are this crate's unit tests, so `cargo test` runs them.

mod bench;
#[cfg(test)]
mod tidy;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

const USAGE: &str = "\
usage: cargo xtask <command>

commands:
  ci                 fmt, clippy, test, doc, deny, bench build (stops at the first failure)
  bench [FILTER]     run the criterion benches and write docs/benchmarks.md
  bench --peers      run shade and its peers (PyG, PyTorch, JAX, SciPy) at 1 and 2
                     threads and write the comparison docs/benchmarks.md
                     (`--quick`: short runs, for checking the pipeline)
  fuzz [--cases N] [--all]
                     run the gradient property tests with N cases each (default 10000);
                     --all: every property test of the workspace
  compat             regenerate docs/errors.md, compatibility.md, backends.md, compiled.md
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("bench") => bench::run(&args[1..]),
        Some("fuzz") => fuzz(&args[1..]),
        Some("compat") => compat(),
        Some("-h" | "--help" | "help") => {
            print!("{USAGE}");
            Ok(())
        }
        other => {
            eprint!(
                "error: unknown command {}\n\n{USAGE}",
                other.map_or("(none)".to_string(), |o| format!("`{o}`"))
            );
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root (the parent of this crate's folder).
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_path_buf()
}

/// A `cargo` command run from the workspace root.
pub(crate) fn cargo(args: &[&str]) -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.args(args).current_dir(root());
    cmd
}

struct Step {
    name: &'static str,
    cmd: Command,
}

/// A `ci` step: `cargo args` without incremental compilation (unless the caller's
/// `CARGO_INCREMENTAL` says otherwise). `ci` builds every workspace crate once, from a
/// fresh clone on the CI machine: the incremental caches are written and never read,
/// which costs compile time and disk.
fn step(name: &'static str, args: &[&str]) -> Step {
    let mut cmd = cargo(args);
    if std::env::var_os("CARGO_INCREMENTAL").is_none() {
        cmd.env("CARGO_INCREMENTAL", "0");
    }
    Step { name, cmd }
}

fn ci() -> Result<(), String> {
    let mut steps = vec![
        step("fmt", &["fmt", "--all", "--", "--check"]),
        step(
            "clippy",
            &[
                "clippy",
                "--workspace",
                "--all-targets",
                "--all-features",
                "--",
                "-D",
                "warnings",
            ],
        ),
        step("test", &["test", "--workspace", "--all-features"]),
    ];
    let mut doc = step(
        "doc",
        &["doc", "--workspace", "--no-deps", "--all-features"],
    );
    doc.cmd.env("RUSTDOCFLAGS", "-D warnings");
    steps.push(doc);
    if has_cargo_deny() {
        println!(
            "note: `cargo deny check advisories` is skipped: it needs the advisory database, \
             which this machine cannot download; licences, bans and sources are checked"
        );
        steps.push(step(
            "deny",
            &["deny", "check", "licenses", "bans", "sources"],
        ));
    } else {
        return Err(
            "cargo-deny is not installed: run `cargo install cargo-deny --locked` \
                    (`.ci/run` does this on a fresh machine)"
                .into(),
        );
    }
    if !has_mpi() {
        return Err(
            "MPI is not installed: the `mpi` feature (built by `--all-features`) and its \
             `mpirun -np 2` tests need it; run `apt-get install openmpi-bin libopenmpi-dev \
             libclang-dev` (`.ci/run` does this on a fresh machine)"
                .into(),
        );
    }
    // The benches must keep building, but a release build (`cargo bench --no-run`)
    // compiled the whole workspace and its dependencies a second time, and so did
    // `cargo build --benches` (measured: every workspace crate again, 196 s of 550 on a
    // warm tree). Built by `cargo test` (`--no-run`: criterion's benches are not run),
    // they reuse every library the test step built and add only the bench targets'
    // codegen and links.
    steps.push(step(
        "bench build",
        &[
            "test",
            "--workspace",
            "--all-features",
            "--benches",
            "--no-run",
        ],
    ));

    let total = Instant::now();
    let mut done: Vec<(&str, f64)> = Vec::new();
    for Step { name, mut cmd } in steps {
        println!("\n==> xtask ci: {name}");
        let start = Instant::now();
        let status = cmd
            .status()
            .map_err(|e| format!("could not start `{name}`: {e}"))?;
        let secs = start.elapsed().as_secs_f64();
        if !status.success() {
            summary(&done, Some((name, secs)), total.elapsed().as_secs_f64());
            return Err(format!("step `{name}` failed ({status})"));
        }
        done.push((name, secs));
    }
    summary(&done, None, total.elapsed().as_secs_f64());
    Ok(())
}

/// Whether `mpirun` and `mpicc` (OpenMPI's or MPICH's) are on the PATH.
fn has_mpi() -> bool {
    ["mpirun", "mpicc"].iter().all(|tool| {
        Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

fn summary(done: &[(&str, f64)], failed: Option<(&str, f64)>, total: f64) {
    println!("\nxtask ci summary:");
    for (name, secs) in done {
        println!("  ok      {name:<12} {secs:>7.1} s");
    }
    if let Some((name, secs)) = failed {
        println!("  FAILED  {name:<12} {secs:>7.1} s   (later steps not run)");
    }
    println!("  total   {:<12} {total:>7.1} s", "");
}

/// The tests that regenerate each generated page and compare it with the committed
/// one. `cargo test --workspace` (the `test` step of `ci`) runs them, so `ci` fails
/// when a page is stale; with `SHADE_BLESS=1` they write the pages instead.
const GENERATED_TESTS: &[&[&str]] = &[
    &[
        "test",
        "-p",
        "shade-diagnostics",
        "--all-features",
        "--test",
        "diagnostics",
        "generated::",
    ],
    &[
        "test",
        "-p",
        "shade-interface",
        "--all-features",
        "--test",
        "interface",
        "docs::",
    ],
    &[
        "test",
        "-p",
        "shade-autodiff-macros",
        "--test",
        "macros",
        "docs::",
    ],
];

/// Rewrites the generated pages: `docs/errors.md`, `docs/compatibility.md` (each cell
/// really run), `docs/backends.md` and `docs/compiled.md`.
fn compat() -> Result<(), String> {
    println!(
        "==> xtask compat: writing docs/errors.md, docs/compatibility.md, docs/backends.md, docs/compiled.md"
    );
    for args in GENERATED_TESTS {
        let status = cargo(args)
            .env("SHADE_BLESS", "1")
            .status()
            .map_err(|e| format!("could not start cargo: {e}"))?;
        if !status.success() {
            return Err(format!("`cargo {}` failed ({status})", args.join(" ")));
        }
    }
    Ok(())
}

fn has_cargo_deny() -> bool {
    cargo(&["deny", "--version"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The gradient property tests: every derivative against finite differences (and
/// forward against reverse mode), in the core (tensor and scalar layers, the
/// compile-time engine), through the interface (every backend × operator, tensor
/// programs), in `gradcheck`, and every GNN layer's gradient check.
/// Each entry: the test target, and the name filter (empty: every test).
const GRADIENT_TESTS: &[(&[&str], &str)] = &[
    (&["-p", "shade-autodiff", "--test", "autodiff"], ""),
    (
        &["-p", "shade-autodiff-macros", "--test", "macros"],
        "subset::",
    ),
    (&["-p", "shade-interface", "--test", "interface"], ""),
    (
        &["-p", "shade-diagnostics", "--test", "diagnostics"],
        "gradcheck::",
    ),
    (&["-p", "shade-gnn", "--lib"], "gradient"),
];

fn fuzz(args: &[String]) -> Result<(), String> {
    let mut cases: u32 = 10_000;
    let mut all = false;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--cases" => {
                let value = rest.next().ok_or("`--cases` needs a number")?;
                cases = value
                    .parse()
                    .map_err(|_| format!("`--cases` needs a positive number, got `{value}`"))?;
            }
            "--all" => all = true,
            other => return Err(format!("unknown option `{other}` for `fuzz`")),
        }
    }
    let runs: &[(&[&str], &str)] = if all {
        &[(&["--workspace"], "")]
    } else {
        GRADIENT_TESTS
    };
    let what = if all {
        "every property test"
    } else {
        "the gradient property tests"
    };
    println!("==> xtask fuzz: {what} with PROPTEST_CASES={cases} (release build)");
    let total = Instant::now();
    let mut failed = Vec::new();
    for &(select, filter) in runs {
        let mut args = vec!["test", "--release", "--all-features"];
        args.extend_from_slice(select);
        if !filter.is_empty() {
            args.extend_from_slice(&["--", filter]);
        }
        println!("\n==> cargo {}", args.join(" "));
        let start = Instant::now();
        let status = cargo(&args)
            .env("PROPTEST_CASES", cases.to_string())
            // Rejections (inputs discarded near kinks) allowed in proportion to the
            // cases: proptest's fixed 1024 aborts a long run of a sound property.
            .env("PROPTEST_MAX_GLOBAL_REJECTS", cases.max(1024).to_string())
            .env(
                "PROPTEST_MAX_LOCAL_REJECTS",
                cases.saturating_mul(64).max(65536).to_string(),
            )
            .status()
            .map_err(|e| format!("could not start cargo: {e}"))?;
        println!("    {:.1} s", start.elapsed().as_secs_f64());
        if !status.success() {
            // Every step runs: one report names every failing one.
            failed.push(format!("cargo {}", args.join(" ")));
        }
    }
    let secs = total.elapsed().as_secs_f64();
    if !failed.is_empty() {
        return Err(format!(
            "property tests failed in {secs:.1} s:\n  {}",
            failed.join("\n  ")
        ));
    }
    println!("\nxtask fuzz: {what}, {cases} cases each: 0 failures in {secs:.1} s");
    Ok(())
}
