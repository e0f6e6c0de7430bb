//! Custom tensor rules: an operation with user-written forward, reverse and forward-mode
//! rules, registered on the tape like a built-in one.
//!
//! ```
//! use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD, Array1};
//! use shade_autodiff::{AdResult, Duplicated};
//! use shade_autodiff::tensor::{self, TapeBuffers, TensorRule};
//!
//! /// `x ↦ x³`, with its rules written by hand.
//! struct Cube;
//! impl TensorRule<f64> for Cube {
//!     fn name(&self) -> &'static str { "cube" }
//!     fn forward(&self, x: &[ArrayViewD<'_, f64>]) -> AdResult<ArrayD<f64>> {
//!         Ok(x[0].mapv(|v| v * v * v))
//!     }
//!     fn vjp(&self, x: &[ArrayViewD<'_, f64>], _y: ArrayViewD<'_, f64>, g: ArrayViewD<'_, f64>,
//!            _input: usize, mut dx: ArrayViewMutD<'_, f64>) {
//!         dx.zip_mut_with(&(&g * &x[0].mapv(|v| 3.0 * v * v)), |d, &c| *d += c);
//!     }
//!     fn jvp(&self, x: &[ArrayViewD<'_, f64>], _y: ArrayViewD<'_, f64>,
//!            t: &[Option<ArrayViewD<'_, f64>>], mut ty: ArrayViewMutD<'_, f64>) {
//!         if let Some(t) = &t[0] { ty.assign(&(t * &x[0].mapv(|v| 3.0 * v * v))); }
//!     }
//! }
//!
//! let x = Array1::from(vec![1.0, 2.0]);
//! let mut dx = Array1::zeros(2);
//! let mut bufs = TapeBuffers::new();
//! let y = tensor::gradient(&mut bufs, |t, (x,)| {
//!     let c = t.custom(Cube, &[x])?;
//!     t.sum(c)
//! }, (Duplicated(&x, &mut dx),))?;
//! assert_eq!(y, 9.0);
//! assert_eq!(dx.to_vec(), vec![3.0, 12.0]);
//! # Ok::<(), shade_autodiff::AdError>(())
//! ```

use super::tape::{Bwd, Op, Tan};
use super::{Element, Tape, Var};
#[cfg(doc)]
use crate::error::AdError;
use crate::error::AdResult;
use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD};
use smallvec::SmallVec;

/// An operation with hand-written rules (like EnzymeRules / ChainRules).
///
/// Rules are `Send + Sync` (they are recorded on the tape, and reusable tape storage,
/// `TapeBuffers`, moves between threads with whatever owns it, e.g. a GNN train state).
pub trait TensorRule<T: Element>: Send + Sync {
    /// The operation's name, used in messages.
    fn name(&self) -> &'static str;

    /// Computes the output from the inputs; check their shapes here and return a coded
    /// error (e.g. [`AdError::ShapeMismatch`]) when they do not fit.
    fn forward(&self, inputs: &[ArrayViewD<'_, T>]) -> AdResult<ArrayD<T>>;

    /// Reverse rule: accumulates (`+=`) the adjoint of input number `input` into
    /// `grad_input`, given the output `output` and its adjoint `grad_output`. Called
    /// once per tracked input.
    fn vjp(
        &self,
        inputs: &[ArrayViewD<'_, T>],
        output: ArrayViewD<'_, T>,
        grad_output: ArrayViewD<'_, T>,
        input: usize,
        grad_input: ArrayViewMutD<'_, T>,
    );

    /// Forward rule: writes the output's tangent into `tangent_output` (zeroed), given
    /// the inputs' tangents (`None` for constants).
    fn jvp(
        &self,
        inputs: &[ArrayViewD<'_, T>],
        output: ArrayViewD<'_, T>,
        tangents: &[Option<ArrayViewD<'_, T>>],
        tangent_output: ArrayViewMutD<'_, T>,
    );
}

/// Backward record of a custom operation.
pub(crate) struct Rec<'a, T: Element> {
    rule: Box<dyn TensorRule<T> + 'a>,
    inputs: SmallVec<[usize; 4]>,
}

impl<T: Element> core::fmt::Debug for Rec<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Custom")
            .field("rule", &self.rule.name())
            .field("inputs", &self.inputs)
            .finish()
    }
}

impl<T: Element> Rec<'_, T> {
    pub(crate) fn name(&self) -> &'static str {
        self.rule.name()
    }

    pub(crate) fn inputs(&self) -> SmallVec<[usize; 4]> {
        self.inputs.clone()
    }

    pub(crate) fn backward(&self, me: usize, g: ArrayViewD<'_, T>, bw: &mut Bwd<'_, '_, T>) {
        let views: SmallVec<[ArrayViewD<'_, T>; 4]> =
            self.inputs.iter().map(|&j| bw.vals[j].view()).collect();
        let y = bw.vals[me].view();
        for (pos, &j) in self.inputs.iter().enumerate() {
            if let Some(gj) = bw.gs.acc(j, views[pos].shape()) {
                self.rule.vjp(&views, y.view(), g.view(), pos, gj);
            }
        }
    }
}

impl<'a, T: Element> Tape<'a, T> {
    /// Applies a user rule to `inputs`. A zero-sized rule (a unit struct) costs no
    /// allocation.
    ///
    /// Errors: [`AdError::ForeignValue`] for a handle from another tape, and whatever
    /// the rule's `forward` returns.
    #[track_caller]
    pub fn custom<R: TensorRule<T> + 'a>(&mut self, rule: R, inputs: &[Var]) -> AdResult<Var> {
        let ins: SmallVec<[usize; 4]> = inputs
            .iter()
            .map(|&v| self.index(v))
            .collect::<AdResult<_>>()?;
        let views: SmallVec<[ArrayViewD<'_, T>; 4]> =
            ins.iter().map(|&j| self.vals[j].view()).collect();
        let y = rule.forward(&views)?;
        let y = if y.is_standard_layout() {
            y
        } else {
            y.as_standard_layout().into_owned()
        };
        let tracked = ins.iter().any(|&j| self.tracked[j]);
        let mut tan = Tan::None;
        if self.forward() && tracked {
            let ts: SmallVec<[Option<ArrayViewD<'_, T>>; 4]> =
                ins.iter().map(|&j| self.tans[j].view()).collect();
            let mut t = self.pool.zeros(y.shape());
            rule.jvp(&views, y.view(), &ts, t.view_mut());
            tan = Tan::Own(t);
        }
        drop(views);
        let rec = Rec {
            rule: Box::new(rule),
            inputs: ins,
        };
        Ok(self.push(y, tracked, Op::Custom(rec), tan))
    }
}
