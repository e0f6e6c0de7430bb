//! The AD core's errors, each with a stable code.
//!
//! Codes `SHADE-E0100`..`SHADE-E0199` belong to this crate. A code, once published,
//! keeps its meaning; new variants take new codes.

/// A shape as it appears in messages.
pub type Shape = Vec<usize>;

/// What went wrong while differentiating, with the values that matter.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AdError {
    /// A shadow's length differs from its primal's.
    #[error("shadow of argument {arg} has length {found}, but its primal has length {expected}")]
    ShadowLength {
        /// Position of the argument in the argument tuple.
        arg: usize,
        /// The primal's length.
        expected: usize,
        /// The shadow's length.
        found: usize,
    },
    /// A shadow's shape differs from its primal's.
    #[error("shadow of argument {arg} has shape {found:?}, but its primal has shape {expected:?}")]
    ShadowShape {
        /// Position of the argument in the argument tuple.
        arg: usize,
        /// The primal's shape.
        expected: Shape,
        /// The shadow's shape.
        found: Shape,
    },
    /// A shadow occupies the same memory as its primal.
    #[error("shadow of argument {arg} aliases its primal")]
    ShadowAliasesPrimal {
        /// Position of the argument in the argument tuple.
        arg: usize,
    },
    /// Reverse mode was asked for the gradient of a function that returns several values.
    #[error("reverse mode needs a scalar result to seed, but the function returns {len} values")]
    NonScalarReturn {
        /// Number of values the function returns.
        len: usize,
    },
    /// An activity was used with a mode in which it has no meaning.
    #[error("activity `{activity}` makes no sense in {mode} mode")]
    ActivityForMode {
        /// The activity's name (`Active`, `Duplicated`, ...).
        activity: &'static str,
        /// The mode's name.
        mode: &'static str,
    },
    /// Two operands of an operation have incompatible shapes.
    #[error("`{op}` cannot combine shapes {left:?} and {right:?}")]
    ShapeMismatch {
        /// The operation.
        op: &'static str,
        /// Shape of the first operand.
        left: Shape,
        /// Shape of the second operand.
        right: Shape,
    },
    /// An index array points outside the indexed dimension.
    #[error(
        "`{op}` index {index} at position {position} is out of range for a dimension of size {bound}"
    )]
    IndexOutOfRange {
        /// The operation.
        op: &'static str,
        /// Position of the offending entry in the index array.
        position: usize,
        /// The offending index.
        index: usize,
        /// Size of the indexed dimension.
        bound: usize,
    },
    /// An axis argument exceeds the tensor's number of dimensions.
    #[error("`{op}` axis {axis} is out of range for a tensor with {ndim} dimensions")]
    AxisOutOfRange {
        /// The operation.
        op: &'static str,
        /// The requested axis.
        axis: usize,
        /// The tensor's number of dimensions.
        ndim: usize,
    },
    /// A value handle belongs to another tape, or to a tape that was reset.
    #[error("value handle {index} does not belong to this tape (it holds {len} values)")]
    ForeignValue {
        /// The handle's index.
        index: usize,
        /// Number of values on the tape.
        len: usize,
    },
    /// An operation's argument is outside its domain in a way that has no derivative.
    #[error("`{op}`: {what}")]
    InvalidArgument {
        /// The operation.
        op: &'static str,
        /// What is wrong, in a few words.
        what: String,
    },
    /// A reverse-mode recording outgrew the tape's 32-bit index space.
    #[error("the tape outgrew its index space: {records} records, at most {limit} fit")]
    TapeOverflow {
        /// Records (or operand slots) the recording needed.
        records: usize,
        /// The most one recording can hold.
        limit: usize,
    },
    /// An output buffer handed to a scalar-layer operator has the wrong length.
    #[error("`{op}` needs an output buffer of length {expected}, but got one of length {found}")]
    BufferLength {
        /// The operator.
        op: &'static str,
        /// The length it needs.
        expected: usize,
        /// The length it got.
        found: usize,
    },
    /// An operation needs a value with a given number of axes.
    #[error("`{op}` needs a value with {expected} axes, but got shape {shape:?}")]
    RankMismatch {
        /// The operation.
        op: &'static str,
        /// The number of axes the operation needs.
        expected: usize,
        /// The value's shape.
        shape: Shape,
    },
}

/// Result with an [`AdError`].
pub type AdResult<T> = Result<T, AdError>;

impl AdError {
    /// The stable code of this error, e.g. `"SHADE-E0101"`.
    pub fn code(&self) -> &'static str {
        match self {
            AdError::ShadowLength { .. } => "SHADE-E0101",
            AdError::ShadowShape { .. } => "SHADE-E0102",
            AdError::ShadowAliasesPrimal { .. } => "SHADE-E0103",
            AdError::NonScalarReturn { .. } => "SHADE-E0104",
            AdError::ActivityForMode { .. } => "SHADE-E0105",
            AdError::ShapeMismatch { .. } => "SHADE-E0110",
            AdError::IndexOutOfRange { .. } => "SHADE-E0111",
            AdError::AxisOutOfRange { .. } => "SHADE-E0112",
            AdError::ForeignValue { .. } => "SHADE-E0113",
            AdError::InvalidArgument { .. } => "SHADE-E0114",
            AdError::TapeOverflow { .. } => "SHADE-E0120",
            AdError::BufferLength { .. } => "SHADE-E0121",
            AdError::RankMismatch { .. } => "SHADE-E0140",
        }
    }

    /// One line that says what to do about this error.
    pub fn help(&self) -> String {
        match self {
            AdError::ShadowLength { .. } | AdError::ShadowShape { .. } => {
                "allocate the shadow with the primal's shape, e.g. `vec![0.0; x.len()]`".into()
            }
            AdError::ShadowAliasesPrimal { .. } => {
                "give the shadow its own buffer; the engine writes to it while reading the primal"
                    .into()
            }
            AdError::NonScalarReturn { .. } => {
                "use forward mode or a Jacobian for vector results, or reduce the result to a scalar"
                    .into()
            }
            AdError::ActivityForMode { .. } => {
                "in forward mode pass tangents with `Duplicated`; `Active` is for reverse mode".into()
            }
            AdError::ShapeMismatch { .. } => {
                "check the operands' shapes; broadcasting aligns trailing axes of size 1 or equal size"
                    .into()
            }
            AdError::IndexOutOfRange { .. } => {
                "every index must be smaller than the size of the dimension it selects from".into()
            }
            AdError::AxisOutOfRange { .. } => "axes count from 0 to ndim - 1".into(),
            AdError::ForeignValue { .. } => {
                "use values only with the tape that created them, and not after `reset`".into()
            }
            AdError::InvalidArgument { .. } => "see the operation's documentation for its domain".into(),
            AdError::TapeOverflow { .. } => {
                "split the computation (e.g. differentiate a sum term by term, accumulating into the same shadow)"
                    .into()
            }
            AdError::BufferLength { .. } => {
                "allocate the output with the documented length (e.g. rows × columns for a Jacobian)".into()
            }
            AdError::RankMismatch { .. } => {
                "reshape the value first, e.g. `tape.reshape(x, &[rows, cols])`".into()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_well_formed() {
        let all = [
            AdError::ShadowLength {
                arg: 0,
                expected: 1,
                found: 2,
            },
            AdError::ShadowShape {
                arg: 0,
                expected: vec![1],
                found: vec![2],
            },
            AdError::ShadowAliasesPrimal { arg: 0 },
            AdError::NonScalarReturn { len: 3 },
            AdError::ActivityForMode {
                activity: "Active",
                mode: "forward",
            },
            AdError::ShapeMismatch {
                op: "add",
                left: vec![2, 3],
                right: vec![4],
            },
            AdError::IndexOutOfRange {
                op: "gather",
                position: 1,
                index: 9,
                bound: 3,
            },
            AdError::AxisOutOfRange {
                op: "sum",
                axis: 2,
                ndim: 2,
            },
            AdError::ForeignValue { index: 4, len: 2 },
            AdError::InvalidArgument {
                op: "powi",
                what: "x".into(),
            },
            AdError::TapeOverflow {
                records: 5,
                limit: 4,
            },
            AdError::BufferLength {
                op: "hessian",
                expected: 4,
                found: 3,
            },
            AdError::RankMismatch {
                op: "matmul",
                expected: 2,
                shape: vec![3],
            },
        ];
        let mut codes: Vec<_> = all.iter().map(AdError::code).collect();
        assert!(
            codes
                .iter()
                .all(|c| c.len() == 11 && c.starts_with("SHADE-E01"))
        );
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), all.len());
        assert_eq!(
            all[5].to_string(),
            "`add` cannot combine shapes [2, 3] and [4]"
        );
    }
}
