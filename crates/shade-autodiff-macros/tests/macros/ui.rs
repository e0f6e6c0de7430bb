//! Constructs outside the subset are compile errors with our own message (naming the
//! construct, at its span, with the fallback): each case in `tests/ui/` has its
//! blessed `.stderr` (`TRYBUILD=overwrite` re-blesses, reviewed in the diff). Every
//! error carries a code of `shade_autodiff::compiled::CODES`, and every code has a
//! golden here.

use std::collections::BTreeSet;
use std::path::Path;

#[test]
fn unsupported_constructs_fail_with_our_message() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}

/// The `SHADE-E01xx` codes named in the files of `dir` with extension `ext`.
fn codes_in(dir: &Path, ext: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d)
            .expect("a readable directory")
            .flatten()
        {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == ext) {
                let text = std::fs::read_to_string(&p).expect("a text file");
                for (i, _) in text.match_indices("SHADE-E01") {
                    out.insert(text[i..i + 11].to_string());
                }
            }
        }
    }
    out
}

#[test]
fn every_code_has_a_golden_and_every_emitted_code_is_declared() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let declared: BTreeSet<String> = shade_autodiff::compiled::CODES
        .iter()
        .map(|c| c.to_string())
        .collect();
    let golden = codes_in(&root.join("tests/ui"), "stderr");
    assert_eq!(
        golden, declared,
        "codes in tests/ui/*.stderr vs compiled::CODES"
    );
    // The generated code may also panic with a run-time code of the core (a shadow's
    // length: `SHADE-E0101`).
    let runtime: BTreeSet<String> = shade_autodiff::AdError::CODES
        .iter()
        .map(|c| c.to_string())
        .collect();
    let emitted = codes_in(&root.join("src"), "rs");
    let undeclared: Vec<_> = emitted
        .iter()
        .filter(|c| !declared.contains(*c) && !runtime.contains(*c))
        .collect();
    assert!(
        undeclared.is_empty(),
        "the macro emits undeclared codes {undeclared:?}"
    );
}
