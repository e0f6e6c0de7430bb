//! Tidy tests: invariants of the tree that a reviewer would otherwise check by hand,
//! run by `cargo test` as the xtask crate's unit tests (so `cargo xtask ci` runs them,
//! with no test binary of their own).
//!
//! - Crate dependency directions: every `crates/*/Cargo.toml`'s normal dependencies on
//!   shade crates are exactly the list in `docs/ARCHITECTURE.md` ("Dependency list"),
//!   that list keeps the founders' directions ([`ALLOWED`]), and each such dependency
//!   is really imported by the crate's `src/`; every listed crate is in the picture
//!   above the list. xtask itself depends on nothing.
//! - Every `.rs` file starts with a `//!` header.
//! - No `.rs` file is longer than [`MAX_LINES`] lines (exceptions in [`LONG_FILES`],
//!   each with its reason).
//!
//! Error codes are checked where they live, not here: shade-diagnostics' catalogue unit
//! tests (every declared code has an explanation and every explanation a code), its
//! corpus test (every code is produced by a broken program, three exemptions with their
//! reasons) and its generated-page test (`docs/errors.md` is current).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The dependency directions of the founders' design: each crate may depend only on
/// those listed for it (normal dependencies; dev-dependencies may go anywhere cargo
/// allows). A crate in `crates/` that is missing here fails the test: its place in the
/// house is decided here first.
const ALLOWED: &[(&str, &[&str])] = &[
    ("shade-autodiff", &["shade-autodiff-macros"]),
    ("shade-autodiff-macros", &[]),
    ("shade-graph", &[]),
    ("shade-interface", &["shade-autodiff"]),
    (
        "shade-gnn",
        &["shade-autodiff", "shade-interface", "shade-graph"],
    ),
    (
        "shade-diagnostics",
        &[
            "shade-autodiff",
            "shade-interface",
            "shade-graph",
            "shade-gnn",
        ],
    ),
    (
        "shade",
        &[
            "shade-autodiff",
            "shade-autodiff-macros",
            "shade-interface",
            "shade-graph",
            "shade-gnn",
            "shade-diagnostics",
        ],
    ),
    // A dev-dependency of the others only: no crate may depend on it normally.
    ("shade-test-support", &[]),
];

/// The longest a source file may be before it is split (STYLE: "split past ~1000").
const MAX_LINES: usize = 1000;

/// Files allowed past [`MAX_LINES`], each with the reason (none today).
const LONG_FILES: &[(&str, &str)] = &[];

/// Folders whose `.rs` files need no `//!` header, and why.
const NO_HEADER: &[(&str, &str)] = &[(
    "tests/ui",
    "trybuild cases: inputs to the compiler whose line numbers are blessed in the \
     `.stderr` beside them; the test that runs them says what each misuses",
)];

fn root() -> PathBuf {
    crate::root()
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// `crates/<dir>` → (package name, folder), sorted by name.
fn workspace_crates(root: &Path) -> BTreeMap<String, PathBuf> {
    let mut crates = BTreeMap::new();
    for entry in fs::read_dir(root.join("crates")).expect("crates/ exists") {
        let dir = entry.expect("a readable folder entry").path();
        let manifest = dir.join("Cargo.toml");
        if !manifest.is_file() {
            continue;
        }
        let name = package_name(&read(&manifest))
            .unwrap_or_else(|| panic!("{} has no [package] name", manifest.display()));
        crates.insert(name, dir);
    }
    crates
}

fn package_name(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package && let Some(value) = line.strip_prefix("name") {
            let value = value.trim_start().strip_prefix('=')?.trim();
            return Some(value.trim_matches('"').to_string());
        }
    }
    None
}

/// The shade crates among a manifest's normal dependencies (`[dependencies]`,
/// `[target.*.dependencies]`, `[dependencies.<name>]` tables, renames by `package =`).
fn shade_dependencies(manifest: &str) -> BTreeSet<String> {
    let mut deps = BTreeSet::new();
    let mut in_deps = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            let header = line.trim_matches(|c| c == '[' || c == ']').trim();
            in_deps = header == "dependencies"
                || (header.starts_with("target.") && header.ends_with(".dependencies"));
            if let Some(name) = header.strip_prefix("dependencies.") {
                deps.insert(name.trim().to_string());
            }
            continue;
        }
        if !in_deps || line.starts_with('#') || !line.contains('=') {
            continue;
        }
        let (key, value) = line.split_once('=').expect("the line contains `=`");
        let mut name = key
            .trim()
            .split('.')
            .next()
            .unwrap_or("")
            .trim()
            .to_string();
        if let Some(rest) = value.split("package").nth(1)
            && let Some(renamed) = rest.split('"').nth(1)
        {
            name = renamed.to_string();
        }
        deps.insert(name);
    }
    deps.retain(|d| d == "shade" || d.starts_with("shade-"));
    deps
}

/// The list under "### Dependency list" in `docs/ARCHITECTURE.md`: the first fenced
/// block after that heading, one crate a line, its dependencies after it (`-`: none).
fn documented_dependencies(architecture: &str) -> BTreeMap<String, BTreeSet<String>> {
    let after = architecture
        .split_once("### Dependency list")
        .expect("docs/ARCHITECTURE.md has a `### Dependency list` section")
        .1;
    let block = after
        .split("```")
        .nth(1)
        .expect("the dependency list is a fenced block");
    let mut list = BTreeMap::new();
    for line in block.lines().skip(1).filter(|l| !l.trim().is_empty()) {
        let mut words = line.split_whitespace();
        let krate = words.next().expect("a non-empty line").to_string();
        let deps = words.filter(|w| *w != "-").map(str::to_string).collect();
        assert!(
            list.insert(krate.clone(), deps).is_none(),
            "{krate} is listed twice in docs/ARCHITECTURE.md's dependency list"
        );
    }
    list
}

/// Whether `src/` of `dir` names the crate `dep` (as `dep_with_underscores`).
fn imports(dir: &Path, dep: &str) -> bool {
    let ident = dep.replace('-', "_");
    rust_files(&dir.join("src"))
        .iter()
        .any(|f| read(f).contains(&ident))
}

/// Every `.rs` file below `dir`, skipping build output and hidden folders.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("a readable folder entry").path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    stack.push(path);
                }
            } else if name.ends_with(".rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The project's `.rs` files, as paths relative to the workspace root.
fn project_files(root: &Path) -> Vec<String> {
    ["crates", "xtask", "benches"]
        .iter()
        .flat_map(|top| rust_files(&root.join(top)))
        .map(|p| {
            p.strip_prefix(root)
                .expect("below the root")
                .to_string_lossy()
                .replace('\\', "/")
        })
        .collect()
}

/// What is wrong with the crates' dependencies, one line a finding.
fn dependency_findings(
    crates: &BTreeMap<String, PathBuf>,
    manifests: &BTreeMap<String, String>,
    documented: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<String> {
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut findings = Vec::new();
    // The documented list keeps the founders' directions. It may name a crate the
    // founders planned that is not in the workspace yet (shade-autodiff-macros, being
    // added): rows and entries naming an absent crate are checked once it exists.
    for (krate, deps) in documented {
        let Some(ok) = allowed.get(krate.as_str()) else {
            findings.push(format!(
                "docs/ARCHITECTURE.md lists `{krate}`, which the design does not know: \
                 add it to ALLOWED in xtask/src/tidy.rs with its directions"
            ));
            continue;
        };
        for dep in deps {
            if !ok.contains(&dep.as_str()) {
                findings.push(format!(
                    "docs/ARCHITECTURE.md lets `{krate}` depend on `{dep}`, against the \
                     design's directions (allowed: {ok:?})"
                ));
            }
        }
    }
    for (krate, dir) in crates {
        let Some(listed) = documented.get(krate) else {
            findings.push(format!(
                "`{krate}` (crates/{}) is missing from docs/ARCHITECTURE.md's dependency list",
                dir.file_name().unwrap_or_default().to_string_lossy()
            ));
            continue;
        };
        let listed: BTreeSet<String> = listed
            .iter()
            .filter(|d| crates.contains_key(*d))
            .cloned()
            .collect();
        let actual = shade_dependencies(&manifests[krate]);
        for dep in actual.difference(&listed) {
            findings.push(format!(
                "`{krate}` depends on `{dep}`, which docs/ARCHITECTURE.md's dependency list \
                 does not show"
            ));
        }
        for dep in listed.difference(&actual) {
            findings.push(format!(
                "docs/ARCHITECTURE.md says `{krate}` depends on `{dep}`, but its Cargo.toml \
                 does not"
            ));
        }
        for dep in actual.intersection(&listed) {
            if !imports(dir, dep) {
                findings.push(format!(
                    "`{krate}` depends on `{dep}` but its src/ never names `{}`",
                    dep.replace('-', "_")
                ));
            }
        }
    }
    findings
}

/// Crates of the dependency list missing from the picture (the first fenced block of
/// `docs/ARCHITECTURE.md`); shade-test-support, a dev-dependency only, is outside it.
fn diagram_findings(
    architecture: &str,
    documented: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<String> {
    let picture = architecture.split("```").nth(1).unwrap_or("");
    documented
        .keys()
        .filter(|k| *k != "shade-test-support")
        .filter(|k| {
            !picture
                .split(|c: char| !(c.is_alphanumeric() || c == '-'))
                .any(|w| w == k.as_str())
        })
        .map(|k| format!("`{k}` is in the dependency list but not in the picture above it"))
        .collect()
}

fn header_findings(root: &Path, files: &[String]) -> Vec<String> {
    files
        .iter()
        .filter(|f| {
            !NO_HEADER
                .iter()
                .any(|(dir, _)| f.contains(&format!("/{dir}/")))
        })
        .filter(|f| {
            let text = read(&root.join(f));
            let first = text.lines().map(str::trim).find(|l| !l.is_empty());
            !first.is_some_and(|l| l.starts_with("//!"))
        })
        .map(|f| format!("{f} does not start with a `//!` header saying what it holds"))
        .collect()
}

fn length_findings(root: &Path, files: &[String]) -> Vec<String> {
    let mut findings = Vec::new();
    for f in files {
        let lines = read(&root.join(f)).lines().count();
        let excepted = LONG_FILES.iter().any(|(path, _)| path == f);
        if lines > MAX_LINES && !excepted {
            findings.push(format!(
                "{f} has {lines} lines (more than {MAX_LINES}): split it by what its parts hold"
            ));
        }
        if lines <= MAX_LINES && excepted {
            findings.push(format!(
                "{f} is back under {MAX_LINES} lines: remove it from LONG_FILES"
            ));
        }
    }
    findings
}

fn report(what: &str, findings: &[String]) {
    assert!(
        findings.is_empty(),
        "tidy: {what}:\n  {}",
        findings.join("\n  ")
    );
}

#[test]
fn crate_dependencies_follow_the_documented_directions() {
    let root = root();
    let crates = workspace_crates(&root);
    let manifests = crates
        .iter()
        .map(|(name, dir)| (name.clone(), read(&dir.join("Cargo.toml"))))
        .collect();
    let architecture = read(&root.join("docs/ARCHITECTURE.md"));
    let documented = documented_dependencies(&architecture);
    let mut findings = dependency_findings(&crates, &manifests, &documented);
    findings.extend(diagram_findings(&architecture, &documented));
    report("crate dependencies", &findings);
}

#[test]
fn xtask_depends_on_nothing() {
    let manifest = read(&root().join("xtask/Cargo.toml"));
    let sections: Vec<&str> = manifest
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with('[') && l.contains("dependencies"))
        .collect();
    report(
        "xtask is built on std only",
        &sections
            .iter()
            .map(|s| format!("xtask/Cargo.toml has a {s} section"))
            .collect::<Vec<_>>(),
    );
}

#[test]
fn every_rust_file_starts_with_a_header() {
    let root = root();
    report(
        "`//!` headers",
        &header_findings(&root, &project_files(&root)),
    );
}

#[test]
fn no_rust_file_is_too_long() {
    let root = root();
    report(
        "file length",
        &length_findings(&root, &project_files(&root)),
    );
}

/// The checks themselves, on small made-up inputs: each finds what it must.
mod checks {
    use super::*;

    #[test]
    fn manifests_are_read_for_normal_shade_dependencies_only() {
        let manifest = r#"
[package]
name = "shade-gnn"

[dependencies]
shade-autodiff.workspace = true
shade-graph = { workspace = true, optional = true }
graph2 = { package = "shade-interface", version = "0.1" }
ndarray.workspace = true

[target.'cfg(unix)'.dependencies]
shade-diagnostics = "0.1"

[dependencies.shade]
workspace = true

[dev-dependencies]
shade-test-support.workspace = true
"#;
        assert_eq!(package_name(manifest).as_deref(), Some("shade-gnn"));
        let deps: Vec<_> = shade_dependencies(manifest).into_iter().collect();
        assert_eq!(
            deps,
            [
                "shade",
                "shade-autodiff",
                "shade-diagnostics",
                "shade-graph",
                "shade-interface"
            ]
        );
    }

    #[test]
    fn a_wrong_direction_or_an_undocumented_edge_is_found() {
        let dir = root().join("crates/shade-graph");
        let crates: BTreeMap<String, PathBuf> = [
            ("shade-graph".to_string(), dir.clone()),
            (
                "shade-autodiff".to_string(),
                root().join("crates/shade-autodiff"),
            ),
        ]
        .into();
        let manifests: BTreeMap<String, String> = [
            (
                "shade-graph".to_string(),
                "[dependencies]\nshade-autodiff.workspace = true\n".to_string(),
            ),
            ("shade-autodiff".to_string(), String::new()),
        ]
        .into();
        let documented = documented_dependencies(
            "### Dependency list\n\n```text\nshade-graph  shade-autodiff\nshade-autodiff  -\n```\n",
        );
        let findings = dependency_findings(&crates, &manifests, &documented);
        assert!(
            findings
                .iter()
                .any(|f| f.contains("against the design's directions")),
            "{findings:?}"
        );
        assert!(
            findings
                .iter()
                .any(|f| f.contains("never names `shade_autodiff`")),
            "{findings:?}"
        );
        let documented = documented_dependencies(
            "### Dependency list\n\n```text\nshade-graph  -\nshade-autodiff  -\n```\n",
        );
        let findings = dependency_findings(&crates, &manifests, &documented);
        assert!(
            findings.iter().any(|f| f.contains("does not show")),
            "{findings:?}"
        );
    }
}
