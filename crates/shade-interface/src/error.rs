//! The interface's errors, each with a stable code `SHADE-E02xx`.
//!
//! Errors of the AD core pass through unchanged as [`InterfaceError::Core`] and keep
//! their own code (`SHADE-E01xx`), so the user always sees the code of the root cause.

use shade_autodiff::{AdError, Shape};

/// What went wrong in the interface, with the values that matter.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum InterfaceError {
    /// An argument of a prepared call has another shape than at preparation.
    #[error(
        "`{operator}`: {argument} has shape {found:?}, but the operator was prepared for {expected:?}"
    )]
    ShapeMismatch {
        /// The operator (`"gradient"`, ...).
        operator: &'static str,
        /// Which argument (`"x"`, `"dx"`, `"context 1"`, `"output"`, ...).
        argument: &'static str,
        /// The shape fixed at preparation.
        expected: Shape,
        /// The shape given.
        found: Shape,
    },
    /// The backend cannot run this operator (or this combination of backends).
    #[error("backend `{backend}` cannot compute `{operator}`: {reason}")]
    Unsupported {
        /// The backend's name.
        backend: String,
        /// The operator.
        operator: &'static str,
        /// Why, in a few words.
        reason: &'static str,
        /// The backends that can.
        capable: &'static str,
    },
    /// A backend setting is out of range (e.g. a finite-difference step that is not
    /// positive and finite).
    #[error("backend `{backend}`: setting `{setting}` = {value} is invalid ({what})")]
    InvalidSetting {
        /// The backend's name.
        backend: &'static str,
        /// The setting.
        setting: &'static str,
        /// The value given.
        value: f64,
        /// What a valid value is.
        what: &'static str,
    },
    /// The prepared object was made with another number of tangents than given.
    #[error("`{operator}`: {found} values cannot be split into tangents of length {len}")]
    BatchShape {
        /// The operator.
        operator: &'static str,
        /// Length of one tangent.
        len: usize,
        /// Length of the stacked tangents given.
        found: usize,
    },
    /// A sparse Jacobian or Hessian buffer does not have the pattern the operator was
    /// prepared for (`AutoSparse`).
    #[error(
        "`{operator}`: {argument} is a {}×{} matrix with {} stored entries, but the operator was prepared for the {}×{} pattern with {} nonzeros",
        found.0, found.1, found.2, expected.0, expected.1, expected.2
    )]
    SparsityMismatch {
        /// The operator.
        operator: &'static str,
        /// Which argument.
        argument: &'static str,
        /// Rows, columns and nonzeros of the prepared pattern.
        expected: (usize, usize, usize),
        /// Rows, columns and stored entries of the matrix given.
        found: (usize, usize, usize),
    },
    /// An error of the AD core, with its own code.
    #[error(transparent)]
    Core(#[from] AdError),
}

/// Result with an [`InterfaceError`].
pub type InterfaceResult<T> = Result<T, InterfaceError>;

impl InterfaceError {
    /// Every code this crate's own variants return, in order (core errors keep their
    /// `SHADE-E01xx` codes), so that catalogues can be checked for completeness.
    pub const CODES: &'static [&'static str] = &[
        "SHADE-E0201",
        "SHADE-E0202",
        "SHADE-E0203",
        "SHADE-E0204",
        "SHADE-E0205",
    ];

    /// The stable code, e.g. `"SHADE-E0201"`; a core error keeps its `SHADE-E01xx` code.
    pub fn code(&self) -> &'static str {
        match self {
            InterfaceError::ShapeMismatch { .. } => "SHADE-E0201",
            InterfaceError::Unsupported { .. } => "SHADE-E0202",
            InterfaceError::InvalidSetting { .. } => "SHADE-E0203",
            InterfaceError::BatchShape { .. } => "SHADE-E0204",
            InterfaceError::SparsityMismatch { .. } => "SHADE-E0205",
            InterfaceError::Core(e) => e.code(),
        }
    }

    /// One line that says what to do about this error.
    pub fn help(&self) -> String {
        match self {
            InterfaceError::ShapeMismatch { .. } => {
                "prepare the operator again for the new shape (`prepare_*`), or pass arguments of the prepared shape".into()
            }
            InterfaceError::Unsupported { capable, .. } => format!("use one of: {capable}"),
            InterfaceError::InvalidSetting { .. } => {
                "use a positive, finite step, or `None` for the default".into()
            }
            InterfaceError::BatchShape { .. } => {
                "stack the tangents one after the other; the total length must be a multiple of one tangent's".into()
            }
            InterfaceError::SparsityMismatch { .. } => {
                "pass a matrix made by this preparation (`prep.new_jacobian()`, `prep.new_hessian()`, or a result of `prep.jacobian(..)`); a pattern detected elsewhere may differ".into()
            }
            InterfaceError::Core(e) => e.help(),
        }
    }

    /// `ShapeMismatch` for a one-dimensional argument.
    pub(crate) fn len(
        operator: &'static str,
        argument: &'static str,
        expected: usize,
        found: usize,
    ) -> Self {
        InterfaceError::ShapeMismatch {
            operator,
            argument,
            expected: vec![expected],
            found: vec![found],
        }
    }
}

/// Checks a one-dimensional length.
#[inline]
pub(crate) fn check_len(
    operator: &'static str,
    argument: &'static str,
    expected: usize,
    found: usize,
) -> InterfaceResult<()> {
    if expected == found {
        Ok(())
    } else {
        Err(InterfaceError::len(operator, argument, expected, found))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_core_codes_pass_through() {
        let all = [
            InterfaceError::len("gradient", "x", 3, 4),
            InterfaceError::Unsupported {
                backend: "b".into(),
                operator: "hvp",
                reason: "r",
                capable: "AutoShade",
            },
            InterfaceError::InvalidSetting {
                backend: "AutoFiniteDiff",
                setting: "rel_step",
                value: -1.0,
                what: "positive",
            },
            InterfaceError::BatchShape {
                operator: "pushforward",
                len: 3,
                found: 4,
            },
            InterfaceError::SparsityMismatch {
                operator: "jacobian",
                argument: "jacobian",
                expected: (3, 3, 7),
                found: (3, 3, 9),
            },
        ];
        let mut codes: Vec<_> = all.iter().map(InterfaceError::code).collect();
        assert!(
            codes
                .iter()
                .all(|c| c.len() == 11 && c.starts_with("SHADE-E02"))
        );
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), all.len());
        assert_eq!(codes, InterfaceError::CODES);
        assert_eq!(
            all[0].to_string(),
            "`gradient`: x has shape [4], but the operator was prepared for [3]"
        );
        assert_eq!(all[1].help(), "use one of: AutoShade");
        let core = InterfaceError::from(AdError::ShadowAliasesPrimal { arg: 0 });
        assert_eq!(core.code(), "SHADE-E0103");
    }
}
