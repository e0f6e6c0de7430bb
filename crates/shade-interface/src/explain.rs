//! [`Report`]: what a prepared operator does, the answer to "did the interface change
//! what my engine sees?".

use crate::context::ContextPassing;
use core::fmt;

/// Which path a prepared operator runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PathKind {
    /// The native core is called directly with the user's function.
    Native,
    /// A generic path evaluates the function's instantiations (finite differences,
    /// third-party number types).
    Generic,
}

/// What a prepared operator does: backend, path, contexts, batch size, memory.
///
/// ```
/// use shade_interface::{AutoShade, Constant, PathKind, prepare_gradient};
/// use shade_autodiff::scalar::{Real, shade_fn};
///
/// fn f<S: Real>(x: &[S], w: &[f64]) -> S { S::dot(x, &x[..]) * w[0] }
/// let p = [2.0];
/// let prep = prepare_gradient(shade_fn!(f(&[S], &[f64])), &AutoShade::REVERSE, &[1.0, 2.0], (Constant(&p),))?;
/// let r = prep.explain();
/// assert_eq!(r.path, PathKind::Native);
/// assert!(r.to_string().contains("contexts: [Constant -> Const]"));
/// # Ok::<(), shade_interface::InterfaceError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// The operator (`"gradient"`, ...).
    pub operator: &'static str,
    /// The backend's name.
    pub backend: String,
    /// Native specialisation or generic fallback.
    pub path: PathKind,
    /// The engine entry point and how often it runs per call.
    pub detail: String,
    /// How each context reaches the engine, in order.
    pub contexts: Vec<ContextPassing>,
    /// Tangents (or seeds) propagated together per engine call.
    pub batch: usize,
    /// Engine evaluations per operator call.
    pub calls: usize,
    /// Records on the tape after the warm-up call (reverse mode).
    pub tape_records: Option<usize>,
    /// Bytes reserved by the prepared object (tapes, arenas, scratch buffers).
    pub reserved_bytes: usize,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = match self.path {
            PathKind::Native => "native",
            PathKind::Generic => "generic",
        };
        writeln!(f, "operator: {}", self.operator)?;
        writeln!(f, "backend: {}", self.backend)?;
        writeln!(f, "path: {path} ({})", self.detail)?;
        write!(f, "contexts: [")?;
        for (i, c) in self.contexts.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{c}")?;
        }
        writeln!(f, "]")?;
        writeln!(
            f,
            "batch size: {}, engine calls per call: {}",
            self.batch, self.calls
        )?;
        let kib = self.reserved_bytes as f64 / 1024.0;
        match self.tape_records {
            Some(r) => write!(f, "tape: {r} records, {kib:.1} KiB reserved"),
            None => write!(f, "buffers: {kib:.1} KiB reserved"),
        }
    }
}
