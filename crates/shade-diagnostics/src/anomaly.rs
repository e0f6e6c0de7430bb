//! Anomaly mode, turned on for one call: the first tensor-layer operation that
//! produces NaN or an infinity, forward or backward, becomes a [`Diagnostic`] naming
//! the operation, the program line that called it, its inputs' ranges and a help line
//! specific to the operation where one applies.
//!
//! The checks live in the core (`TapeBuffers::set_anomaly`); this module switches them
//! on, restores the previous setting, and explains what they found.

use crate::render::{Coded, Diagnostic};
use shade_autodiff::AdError;
use shade_autodiff::tensor::{Element, TapeBuffers, ValueRange};

/// Runs `f` (which calls a tensor entry point such as `tensor::gradient` with `bufs`)
/// with anomaly mode on, and turns its error into a [`Diagnostic`].
///
/// Anomaly errors (`SHADE-E0170`, `SHADE-E0171`) carry the location of the offending
/// operation in the program; other errors get the caller's location.
#[track_caller]
pub fn detect_anomaly<T, R, E, F>(bufs: &mut TapeBuffers<T>, f: F) -> Result<R, Diagnostic>
where
    T: Element,
    E: Coded,
    F: FnOnce(&mut TapeBuffers<T>) -> Result<R, E>,
{
    let caller = std::panic::Location::caller();
    let before = bufs.anomaly();
    bufs.set_anomaly(true);
    let r = f(bufs);
    bufs.set_anomaly(before);
    r.map_err(|e| {
        let d = Diagnostic::from_error(&e);
        let d = if e.location().is_none() {
            d.at(caller)
        } else {
            d
        };
        refine(d, &e)
    })
}

/// The diagnostic of an anomaly error, with the operation-specific help (see
/// [`detect_anomaly`]); any other error as [`Diagnostic::from_error`] makes it.
#[track_caller]
pub fn anomaly_diagnostic(e: &AdError) -> Diagnostic {
    refine(Diagnostic::from_error(e), e)
}

fn refine<E: Coded + ?Sized>(d: Diagnostic, e: &E) -> Diagnostic {
    let notes = e.notes();
    let code = e.code();
    if code != "SHADE-E0170" && code != "SHADE-E0171" {
        return d;
    }
    // The op name is the first backquoted word of the message.
    let msg = e.message();
    let op = msg.split('`').nth(1).unwrap_or("").to_string();
    let backward = code == "SHADE-E0171";
    match op_help(&op, backward, &notes) {
        Some(h) => d.with_help(h),
        None => d,
    }
}

/// Help for the usual culprits, from the operation and the input ranges in the notes.
fn op_help(op: &str, backward: bool, notes: &[String]) -> Option<String> {
    let has_nan_input = notes
        .iter()
        .any(|n| n.contains("NaN") || n.contains("infinite"));
    if has_nan_input && !backward {
        return Some(format!(
            "an input of `{op}` already holds NaN or infinity: check the program's inputs with `shade_diagnostics::check_finite`"
        ));
    }
    Some(
        match (op, backward) {
            ("ln", false) => "`ln` is NaN below 0 and -inf at 0: keep its argument positive (e.g. `softplus`, or add an epsilon)",
            ("ln", true) => "the derivative of `ln` is 1/x, unbounded at 0: keep the argument away from 0 (add an epsilon)",
            ("sqrt", false) => "`sqrt` is NaN below 0: keep its argument non-negative (e.g. square or `relu` it first)",
            ("sqrt", true) => "the derivative of `sqrt` is infinite at 0: add a small epsilon under the root",
            ("div", _) => "a divisor is 0 (or the quotient overflows): add an epsilon to the divisor or mask those entries",
            ("exp", _) => "`exp` overflows above ~709 (f64) or ~88 (f32): subtract the maximum first (as `logsumexp` and `softmax` do)",
            ("powi", _) => "`powi` with a negative exponent is infinite at 0: keep the base away from 0",
            ("norm", true) => "the derivative of `norm` is undefined at the zero vector: add an epsilon or skip zero rows",
            ("matmul" | "spmm" | "dense_spmm" | "spmm_values", false) => {
                "the product overflowed: scale the inputs or the weights down (check the initialisation)"
            }
            _ => return None,
        }
        .to_string(),
    )
}

/// The range of an array's values (a convenience for reports and tests).
pub fn value_range<T: Element>(shape: &[usize], values: impl IntoIterator<Item = T>) -> ValueRange {
    ValueRange::of(
        shape,
        values.into_iter().map(|v| v.to_f64().unwrap_or(f64::NAN)),
    )
}
