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
/// use shade_interface::{Real, shade_fn};
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

/// How a backend's contexts reach its engine, for a [`Spec`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Passing {
    /// Native: `Constant` as `Const`; a `Cache` as `Duplicated` with a scratch shadow
    /// (`true`, reverse `autodiff` calls) or as `Const` (`false`).
    Native { cache_duplicated: bool },
    /// Generic: every context converted to the backend's number type.
    Generic,
}

/// The report spec of a prepared operator: what a backend says about the path it runs
/// (entry point, how contexts reach it, batch, calls); the preparation adds what it
/// knows (operator, shapes, contexts, buffers) to make the [`Report`]. Opaque: the
/// backends of this crate make it.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    /// The engine entry point and how often it runs per call.
    pub(crate) detail: String,
    /// How the contexts reach the engine.
    pub(crate) passing: Passing,
    /// Tangents (or seeds) propagated together per engine call.
    pub(crate) batch: usize,
    /// Engine evaluations per operator call.
    pub(crate) calls: usize,
}

impl Spec {
    /// A native spec with one tangent per engine call and caches passed as `Const`.
    pub(crate) fn native(detail: impl Into<String>, calls: usize) -> Self {
        Spec {
            detail: detail.into(),
            passing: Passing::Native {
                cache_duplicated: false,
            },
            batch: 1,
            calls,
        }
    }

    /// A generic spec: `calls` evaluations of the function's instantiations.
    pub(crate) fn generic(detail: impl Into<String>, calls: usize) -> Self {
        Spec {
            detail: detail.into(),
            passing: Passing::Generic,
            batch: 1,
            calls,
        }
    }

    /// With caches passed as `Duplicated` (scratch shadows).
    pub(crate) fn caches_duplicated(mut self) -> Self {
        self.passing = Passing::Native {
            cache_duplicated: true,
        };
        self
    }

    /// With `batch` tangents per engine call.
    pub(crate) fn batch(mut self, batch: usize) -> Self {
        self.batch = batch;
        self
    }

    /// The report of backend `backend` for the preparation `meta`.
    pub(crate) fn report(
        self,
        backend: &impl crate::Backend,
        meta: &crate::Meta,
        tape_records: Option<usize>,
        reserved_bytes: usize,
    ) -> Report {
        let contexts = match self.passing {
            Passing::Native { cache_duplicated } => meta.ctx.passing(
                |n| {
                    if cache_duplicated {
                        ContextPassing::CacheAsDuplicated {
                            scratch_bytes: 8 * n,
                        }
                    } else {
                        ContextPassing::CacheAsConst
                    }
                },
                [
                    ContextPassing::ConstantAsConst,
                    ContextPassing::ConstantOrCacheAsConst,
                ],
            ),
            Passing::Generic => meta.ctx.passing(
                |_| ContextPassing::CacheConverted,
                [
                    ContextPassing::ConstantConverted,
                    ContextPassing::ConstantOrCacheUntouched,
                ],
            ),
        };
        Report {
            operator: meta.operator.name(),
            backend: backend.name(),
            path: match self.passing {
                Passing::Native { .. } => PathKind::Native,
                Passing::Generic => PathKind::Generic,
            },
            detail: self.detail,
            contexts,
            batch: self.batch,
            calls: self.calls,
            tape_records,
            reserved_bytes,
        }
    }
}
