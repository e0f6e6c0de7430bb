//! The corpus harness: runs a broken program under `catch_unwind`, renders what the
//! user sees, and compares it with a golden file (`SHADE_BLESS=1` writes it).

use shade_autodiff::AdError;
use shade_diagnostics::check::Findings;
use shade_diagnostics::{Diagnostic, render_all};
use shade_graph::GraphError;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;

/// Everything a broken program reported.
pub(crate) struct Seen(pub(crate) Vec<Diagnostic>);

impl From<Diagnostic> for Seen {
    fn from(d: Diagnostic) -> Self {
        Seen(vec![d])
    }
}

impl From<Findings> for Seen {
    fn from(f: Findings) -> Self {
        Seen(f.errors.into_iter().chain(f.warnings).collect())
    }
}

impl From<AdError> for Seen {
    #[track_caller]
    fn from(e: AdError) -> Self {
        Seen(vec![Diagnostic::from_error(&e)])
    }
}

impl From<shade_interface::InterfaceError> for Seen {
    #[track_caller]
    fn from(e: shade_interface::InterfaceError) -> Self {
        Seen(vec![Diagnostic::from_error(&e)])
    }
}

impl From<shade_gnn::GnnError> for Seen {
    #[track_caller]
    fn from(e: shade_gnn::GnnError) -> Self {
        Seen(vec![Diagnostic::from_error(&e)])
    }
}

impl From<GraphError> for Seen {
    #[track_caller]
    fn from(e: GraphError) -> Self {
        Seen(vec![Diagnostic::from_error(&e)])
    }
}

/// A broken user program: it must end in `Err` with what the user is shown.
pub(crate) type Program = fn() -> Result<(), Seen>;

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/diagnostics/corpus/golden")
        .join(format!("{name}.txt"))
}

/// Runs one program; returns the codes it produced, or why the case fails.
pub(crate) fn run(name: &str, program: Program) -> Result<Vec<&'static str>, String> {
    let seen = match catch_unwind(AssertUnwindSafe(program)) {
        Err(_) => {
            return Err(format!(
                "{name}: the program panicked (a panic on user input is a bug)"
            ));
        }
        Ok(Ok(())) => {
            return Err(format!(
                "{name}: the program succeeded, but it is broken on purpose"
            ));
        }
        Ok(Err(seen)) => seen,
    };
    if seen.0.is_empty() {
        return Err(format!("{name}: no diagnostic"));
    }
    let text = render_all(&seen.0);
    let path = golden(name);
    if std::env::var_os("SHADE_BLESS").is_some() {
        std::fs::write(&path, &text).map_err(|e| format!("{name}: cannot write {path:?}: {e}"))?;
    } else {
        let expected = std::fs::read_to_string(&path).unwrap_or_default();
        if expected != text {
            return Err(format!(
                "{name}: the message differs from tests/diagnostics/corpus/golden/{name}.txt \
                 (bless with SHADE_BLESS=1 after review)\n--- expected\n{expected}\n--- found\n{text}"
            ));
        }
    }
    Ok(seen.0.iter().map(|d| d.code).collect())
}
