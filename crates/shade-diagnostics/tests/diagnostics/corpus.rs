//! A corpus of broken user programs, each asserting the exact message the user sees
//! (golden files in `tests/diagnostics/corpus/golden/`, blessed with `SHADE_BLESS=1`
//! after review).
//!
//! Every program runs under `catch_unwind`: a panic is a failure. Together the programs
//! must produce every declared error code, except the few listed in [`EXEMPT`] with the
//! reason no runtime program can produce them, and the compile errors of the crates in
//! [`COMPILE_TIME`], whose goldens are compile-fail tests.

#[path = "corpus/autodiff.rs"]
mod autodiff;
#[path = "corpus/checks.rs"]
mod checks;
#[path = "corpus/gnn.rs"]
mod gnn;
#[path = "corpus/gnn_layers.rs"]
mod gnn_layers;
#[path = "corpus/graph.rs"]
mod graph;
#[path = "corpus/graphs.rs"]
mod graphs;
#[path = "corpus/harness.rs"]
mod harness;
#[path = "corpus/interface.rs"]
mod interface;
#[path = "corpus/io.rs"]
mod io;
#[path = "corpus/model.rs"]
mod model;
#[path = "corpus/readers.rs"]
mod readers;
#[path = "corpus/tape.rs"]
mod tape;
#[path = "corpus/training.rs"]
mod training;

use std::collections::BTreeSet;

/// Codes that no program can produce at run time, and why.
const EXEMPT: &[(&str, &str)] = &[
    (
        "SHADE-E0103",
        "a shadow aliasing its primal needs unsafe code (two live `&`/`&mut` to one buffer); the guard protects unsafe callers",
    ),
    (
        "SHADE-E0105",
        "activity/mode misuse is a compile error with our message (shade-autodiff's trybuild tests `tests/ui/scalar_active_in_forward.rs`); the runtime code is reserved",
    ),
    (
        "SHADE-E0120",
        "overflowing the scalar tape needs 2^32 records (tens of gigabytes)",
    ),
];

/// Crates whose codes are compile errors, which no program run can produce, and where
/// each code's golden message lives instead.
const COMPILE_TIME: &[(&str, &str)] = &[(
    "shade-autodiff-macros",
    "compile errors of `#[autodiff_reverse]` / `#[autodiff_forward]`: each code has a trybuild golden in crates/shade-autodiff-macros/tests/ui/, checked by that crate's test `every_code_has_a_golden_and_every_emitted_code_is_declared`",
)];

#[test]
fn corpus() {
    let programs: Vec<(&str, harness::Program)> = [
        autodiff::PROGRAMS,
        interface::PROGRAMS,
        graph::PROGRAMS,
        gnn::PROGRAMS,
        gnn_layers::PROGRAMS,
        checks::PROGRAMS,
        io::PROGRAMS,
        tape::PROGRAMS,
        graphs::PROGRAMS,
        model::PROGRAMS,
        training::PROGRAMS,
        readers::PROGRAMS,
    ]
    .concat();
    assert!(
        programs.len() >= 160,
        "the corpus needs at least 160 programs, found {}",
        programs.len()
    );
    let mut names = BTreeSet::new();
    let mut seen = BTreeSet::new();
    let mut failures = Vec::new();
    for (name, program) in programs {
        assert!(names.insert(name), "duplicate program name {name}");
        match harness::run(name, program) {
            Ok(codes) => seen.extend(codes),
            Err(msg) => failures.push(msg),
        }
    }
    for (krate, code) in shade_diagnostics::catalogue::declared_codes() {
        if COMPILE_TIME.iter().any(|(k, _)| *k == krate) {
            continue;
        }
        let exempt = EXEMPT.iter().any(|(c, _)| *c == code);
        if exempt && seen.contains(code) {
            failures.push(format!(
                "{code} is produced by the corpus: remove it from EXEMPT"
            ));
        }
        if !exempt && !seen.contains(code) {
            failures.push(format!("{code} ({krate}) is never produced by the corpus"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
