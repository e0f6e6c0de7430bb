//! The generated pages under `docs/` are what the code produces now.
//!
//! Fails when a committed page differs; `SHADE_BLESS=1 cargo test -p shade-diagnostics
//! --test diagnostics generated::` (or `cargo xtask compat`) rewrites them.

use std::path::PathBuf;

fn docs(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs")
        .join(name)
}

/// Compares `page` with the committed file, or writes it when blessing.
fn check_page(name: &str, page: &str) {
    let path = docs(name);
    if std::env::var_os("SHADE_BLESS").is_some() {
        std::fs::write(&path, page).unwrap_or_else(|e| panic!("cannot write {path:?}: {e}"));
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != page {
        let line = committed
            .lines()
            .zip(page.lines())
            .position(|(a, b)| a != b)
            .map_or(
                committed.lines().count().min(page.lines().count()) + 1,
                |p| p + 1,
            );
        panic!(
            "docs/{name} is out of date (first difference at line {line}); \
             run `cargo xtask compat` (or SHADE_BLESS=1 cargo test -p shade-diagnostics --test diagnostics generated::) and commit it"
        );
    }
}

#[test]
fn errors_md_is_current() {
    check_page("errors.md", &shade_diagnostics::render_errors_md());
}

#[test]
fn compatibility_md_is_current() {
    check_page(
        "compatibility.md",
        &shade_diagnostics::render_compatibility_md(),
    );
}

/// `[workspace.dependencies]` of the root manifest: name -> version requirement.
fn workspace_versions() -> std::collections::BTreeMap<String, String> {
    let manifest = std::fs::read_to_string(docs("../Cargo.toml")).expect("the root Cargo.toml");
    let section = manifest
        .split("[workspace.dependencies]")
        .nth(1)
        .and_then(|s| s.split("\n[").next())
        .expect("a [workspace.dependencies] section");
    section
        .lines()
        .filter_map(|l| {
            let (name, rest) = l.split_once(" = ")?;
            // `name = "0.17"` or `name = { ..., version = "0.11.6", ... }`.
            let value = rest.split_once("version = ").map_or(rest, |(_, v)| v);
            Some((
                name.trim().to_string(),
                value.split('"').nth(1)?.to_string(),
            ))
        })
        .collect()
}

/// Every crate README's "Re-exported dependencies" table names exactly the crates its
/// `lib.rs` re-exports (`pub use name;` or `pub use other::name;`), each with the
/// major.minor version that the workspace manifest requires.
#[test]
fn readmes_name_the_reexported_versions() {
    let versions = workspace_versions();
    for krate in [
        "shade",
        "shade-autodiff",
        "shade-diagnostics",
        "shade-gnn",
        "shade-graph",
        "shade-interface",
    ] {
        let dir = docs("../crates").join(krate);
        let readme = std::fs::read_to_string(dir.join("README.md"))
            .unwrap_or_else(|e| panic!("crates/{krate}/README.md: {e}"));
        let table = readme
            .split("## Re-exported dependencies")
            .nth(1)
            .unwrap_or_else(|| panic!("crates/{krate}/README.md has no re-export table"));
        let mut listed: Vec<String> = Vec::new();
        for row in table.lines().filter(|l| l.starts_with("| `")) {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            let name = cells[1].trim_matches('`');
            let want = versions
                .get(name)
                .unwrap_or_else(|| panic!("{krate}: `{name}` is not a workspace dependency"));
            let major_minor: String = want.split('.').take(2).collect::<Vec<_>>().join(".");
            assert_eq!(
                cells[2], major_minor,
                "crates/{krate}/README.md: `{name}` is {want} in Cargo.toml"
            );
            listed.push(name.replace('-', "_"));
        }
        let lib = std::fs::read_to_string(dir.join("src/lib.rs")).expect("lib.rs");
        let mut exported: Vec<String> = lib
            .lines()
            .filter_map(|l| l.strip_prefix("pub use ")?.strip_suffix(';'))
            .filter(|p| !p.contains(['{', ' ']))
            .map(|p| p.rsplit("::").next().unwrap_or(p).to_string())
            .filter(|p| versions.contains_key(&p.replace('_', "-")))
            .collect();
        listed.sort();
        exported.sort();
        assert_eq!(
            listed, exported,
            "crates/{krate}: README table vs `pub use <crate>;` lines of lib.rs"
        );
    }
}
