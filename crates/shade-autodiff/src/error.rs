//! The AD core's errors, each with a stable code.
//!
//! Codes `SHADE-E0100`..`SHADE-E0199` belong to this crate. A code, once published,
//! keeps its meaning; new variants take new codes.

/// A shape as it appears in messages.
pub type Shape = Vec<usize>;

/// The range of an array's values, as anomaly mode reports it for the inputs of the
/// operation that produced NaN or an infinity.
#[derive(Debug, Clone, PartialEq)]
pub struct ValueRange {
    /// The array's shape.
    pub shape: Shape,
    /// Smallest finite value (NaN when no value is finite).
    pub min: f64,
    /// Largest finite value (NaN when no value is finite).
    pub max: f64,
    /// Number of NaN values.
    pub nan: usize,
    /// Number of infinite values.
    pub inf: usize,
}

impl ValueRange {
    /// The range of `values` (an array of the given shape, in any order).
    pub fn of(shape: &[usize], values: impl IntoIterator<Item = f64>) -> Self {
        let (mut min, mut max, mut nan, mut inf) = (f64::INFINITY, f64::NEG_INFINITY, 0, 0);
        for v in values {
            if v.is_nan() {
                nan += 1;
            } else if v.is_infinite() {
                inf += 1;
            } else {
                min = min.min(v);
                max = max.max(v);
            }
        }
        if min > max {
            (min, max) = (f64::NAN, f64::NAN);
        }
        ValueRange {
            shape: shape.to_vec(),
            min,
            max,
            nan,
            inf,
        }
    }
}

/// A number in messages: plain when moderate, scientific when tiny or huge.
struct Num(f64);

impl core::fmt::Display for Num {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let a = self.0.abs();
        if a == 0.0 || (1e-4..1e6).contains(&a) {
            write!(f, "{}", self.0)
        } else {
            write!(f, "{:e}", self.0)
        }
    }
}

impl core::fmt::Display for ValueRange {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "shape {:?}", self.shape)?;
        if self.min.is_nan() {
            write!(f, " with no finite value")?;
        } else {
            write!(f, " in [{}, {}]", Num(self.min), Num(self.max))?;
        }
        if self.nan > 0 {
            write!(f, ", {} NaN", self.nan)?;
        }
        if self.inf > 0 {
            write!(f, ", {} infinite", self.inf)?;
        }
        Ok(())
    }
}

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
    /// A tracked value was read as plain numbers while the tape recorded (the tensor
    /// tape's [`Tape::value`](crate::tensor::Tape::value), the scalar layer's
    /// [`Real::value`](crate::scalar::Real::value) on a recorded `Var`): numbers
    /// computed from them are constants to the derivative, so the gradient through
    /// them would be silently zero.
    #[error(
        "{what} was read as plain numbers while recording ({mode}), at {location}: numbers computed from it carry no derivative"
    )]
    TrackedValueRead {
        /// Where the program read the value.
        location: &'static core::panic::Location<'static>,
        /// What was read, e.g. `a tracked tensor of shape [2, 3]`.
        what: String,
        /// The mode that was recording.
        mode: &'static str,
    },
    /// A custom rule's reverse (or forward) rule gave an adjoint (or tangent) of
    /// another shape than the array it belongs to.
    #[error(
        "custom rule `{rule}` gave {what} of shape {found:?}, but that array has shape {expected:?}"
    )]
    RuleShape {
        /// The rule's name.
        rule: &'static str,
        /// What it gave, e.g. `the adjoint of input 1`.
        what: String,
        /// The array's shape.
        expected: Shape,
        /// The shape the rule gave.
        found: Shape,
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
    /// An in-place function left its last outputs unwritten: it writes fewer outputs
    /// than it was called with.
    #[error(
        "the in-place function was called with {outputs} outputs but wrote only the first {written}"
    )]
    OutputsNotWritten {
        /// The output length it was called with (`m`).
        outputs: usize,
        /// One past the last output it wrote.
        written: usize,
    },
    /// The function panicked when it was probed with the output length given; most
    /// often it indexes past `y` because it writes more outputs than that.
    #[error("the function panicked when called with {outputs} outputs: {message}")]
    FunctionPanicked {
        /// The output length it was called with (`m`).
        outputs: usize,
        /// The panic's message.
        message: String,
    },
    /// A function returning its outputs (`-> Vec<S>`) returned another number of them
    /// than its first evaluation (or than the output buffer `y` handed to a prepared
    /// form holds): its output length depends on the values of `x` or of the contexts.
    #[error(
        "the function returned {found} outputs, but {expected} were expected (its output length at the first evaluation, or the length of `y`)"
    )]
    OutputLength {
        /// The output length expected (the first evaluation's, or `y.len()`).
        expected: usize,
        /// The length it returned.
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
    /// Anomaly mode: an operation's result holds NaN or an infinity.
    #[error("`{op}` produced {what} at element {position} of its result in the forward pass")]
    NonFiniteForward {
        /// The operation.
        op: &'static str,
        /// `NaN`, `inf` or `-inf`.
        what: &'static str,
        /// Flat (row-major) position of the first such element.
        position: usize,
        /// Where the program called the operation.
        location: Option<&'static core::panic::Location<'static>>,
        /// The ranges of the operation's inputs.
        inputs: Vec<ValueRange>,
    },
    /// Anomaly mode: an operation's reverse rule wrote NaN or an infinity into the
    /// adjoint of one of its inputs.
    #[error(
        "the reverse rule of `{op}` produced {what} in the adjoint of its input {input} in the backward pass"
    )]
    NonFiniteBackward {
        /// The operation.
        op: &'static str,
        /// `NaN`, `inf` or `-inf`.
        what: &'static str,
        /// Which of the operation's inputs (0-based).
        input: usize,
        /// Where the program called the operation.
        location: Option<&'static core::panic::Location<'static>>,
        /// The ranges of the operation's inputs.
        inputs: Vec<ValueRange>,
        /// The range of the adjoint the rule received (boxed: keeps the error small).
        adjoint: Box<ValueRange>,
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
            AdError::TrackedValueRead { .. } => "SHADE-E0115",
            AdError::RuleShape { .. } => "SHADE-E0116",
            AdError::TapeOverflow { .. } => "SHADE-E0120",
            AdError::BufferLength { .. } => "SHADE-E0121",
            AdError::OutputsNotWritten { .. } => "SHADE-E0130",
            AdError::FunctionPanicked { .. } => "SHADE-E0131",
            AdError::OutputLength { .. } => "SHADE-E0132",
            AdError::RankMismatch { .. } => "SHADE-E0140",
            AdError::NonFiniteForward { .. } => "SHADE-E0170",
            AdError::NonFiniteBackward { .. } => "SHADE-E0171",
        }
    }

    /// Every code this enum can return, in order, so that catalogues can be checked
    /// for completeness.
    pub const CODES: &'static [&'static str] = &[
        "SHADE-E0101",
        "SHADE-E0102",
        "SHADE-E0103",
        "SHADE-E0104",
        "SHADE-E0105",
        "SHADE-E0110",
        "SHADE-E0111",
        "SHADE-E0112",
        "SHADE-E0113",
        "SHADE-E0114",
        "SHADE-E0115",
        "SHADE-E0116",
        "SHADE-E0120",
        "SHADE-E0121",
        "SHADE-E0130",
        "SHADE-E0131",
        "SHADE-E0132",
        "SHADE-E0140",
        "SHADE-E0170",
        "SHADE-E0171",
    ];

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
            AdError::TrackedValueRead { .. } => {
                "compute with the tracked value itself (the tape's operations, `Real` arithmetic) so the derivative flows; \
                 to read the numbers on purpose cut them from the derivative first, `let d = t.detach(x)?; t.value(d)?` \
                 on the tensor tape or `x.detach().value()` in the scalar layer (PyTorch's `.detach()`, JAX's `stop_gradient`)"
                    .into()
            }
            AdError::RuleShape { .. } => {
                "make the rule's `vjp` give each input's adjoint in that input's shape (and `jvp` the tangent in the output's), \
                 e.g. sum a broadcast axis back with `sum_axis`"
                    .into()
            }
            AdError::TapeOverflow { .. } => {
                "split the computation (e.g. differentiate a sum term by term, accumulating into the same shadow)"
                    .into()
            }
            AdError::BufferLength { .. } => {
                "allocate the output with the documented length (e.g. rows × columns for a Jacobian)".into()
            }
            AdError::OutputsNotWritten { written, .. } => format!(
                "make `y` as long as the outputs the function writes ({written}), or make it write every output (`y[i] = S::zero()` for a zero one); a function returning `Vec<S>` (`shade_fn!(f(&[S]) -> Vec<S>)`) needs no length"
            ),
            AdError::FunctionPanicked { .. } => {
                "if it indexes past `y`, make `y` as long as the outputs it writes (or return them as a `Vec<S>`, `shade_fn!(f(&[S]) -> Vec<S>)`, whose length is inferred); otherwise fix the panic at the location printed above".into()
            }
            AdError::OutputLength { expected, .. } => format!(
                "return {expected} outputs at every evaluation: an output length must not depend on the values of `x` or of the contexts (prepare again, or call the unprepared operator, for another length)"
            ),
            AdError::RankMismatch { .. } => {
                "reshape the value first, e.g. `tape.reshape(x, &[rows, cols])`".into()
            }
            AdError::NonFiniteForward { .. } => {
                "check the inputs' ranges against the operation's domain (e.g. `ln` of values <= 0, `div` by 0, `exp` of large values)"
                    .into()
            }
            AdError::NonFiniteBackward { .. } => {
                "the derivative is unbounded at these inputs (e.g. `sqrt` at 0, `ln` near 0); keep the inputs away from the singularity"
                    .into()
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
            AdError::TrackedValueRead {
                location: core::panic::Location::caller(),
                what: "a tracked tensor of shape [2]".into(),
                mode: "reverse mode",
            },
            AdError::RuleShape {
                rule: "cube",
                what: "the adjoint of input 0".into(),
                expected: vec![2],
                found: vec![3],
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
            AdError::OutputsNotWritten {
                outputs: 3,
                written: 2,
            },
            AdError::FunctionPanicked {
                outputs: 1,
                message: "index out of bounds".into(),
            },
            AdError::OutputLength {
                expected: 2,
                found: 3,
            },
            AdError::RankMismatch {
                op: "matmul",
                expected: 2,
                shape: vec![3],
            },
            AdError::NonFiniteForward {
                op: "ln",
                what: "NaN",
                position: 0,
                location: None,
                inputs: vec![ValueRange::of(&[2], [-1.0, 2.0])],
            },
            AdError::NonFiniteBackward {
                op: "sqrt",
                what: "inf",
                input: 0,
                location: None,
                inputs: vec![ValueRange::of(&[1], [0.0])],
                adjoint: Box::new(ValueRange::of(&[1], [1.0])),
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
        assert_eq!(codes, AdError::CODES);
        assert_eq!(
            ValueRange::of(&[3], [f64::NAN, -1.0, 2.0]).to_string(),
            "shape [3] in [-1, 2], 1 NaN"
        );
        assert_eq!(
            all[5].to_string(),
            "`add` cannot combine shapes [2, 3] and [4]"
        );
    }
}
