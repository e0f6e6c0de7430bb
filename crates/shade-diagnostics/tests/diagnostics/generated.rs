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
