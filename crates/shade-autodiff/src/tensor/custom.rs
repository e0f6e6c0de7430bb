//! Custom tensor rules: an operation with user-written forward, reverse and forward-mode
//! rules, registered on the tape like a built-in one.
//!
//! ```
//! use ndarray::{ArrayD, ArrayViewD, Array1};
//! use shade_autodiff::{AdResult, Duplicated};
//! use shade_autodiff::tensor::{self, RuleSlot, TapeBuffers, TensorRule};
//!
//! /// `x ↦ x³`, with its rules written by hand.
//! struct Cube;
//! impl TensorRule<f64> for Cube {
//!     fn name(&self) -> &'static str { "cube" }
//!     fn forward(&self, x: &[ArrayViewD<'_, f64>]) -> AdResult<ArrayD<f64>> {
//!         Ok(x[0].mapv(|v| v * v * v))
//!     }
//!     fn vjp(&self, x: &[ArrayViewD<'_, f64>], _y: ArrayViewD<'_, f64>, g: ArrayViewD<'_, f64>,
//!            _input: usize, mut dx: RuleSlot<'_, f64>) -> AdResult<()> {
//!         dx.add(&(&g * &x[0].mapv(|v| 3.0 * v * v)))
//!     }
//!     fn jvp(&self, x: &[ArrayViewD<'_, f64>], _y: ArrayViewD<'_, f64>,
//!            t: &[Option<ArrayViewD<'_, f64>>], mut ty: RuleSlot<'_, f64>) -> AdResult<()> {
//!         match &t[0] {
//!             Some(t) => ty.assign(&(t * &x[0].mapv(|v| 3.0 * v * v))),
//!             None => Ok(()),
//!         }
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
//!
//! A rule gives its results through a [`RuleSlot`], which checks their shapes: an
//! adjoint of the wrong shape is [`AdError::RuleShape`] naming the rule (returned by
//! the entry point after the sweep), never a panic inside ndarray.

use super::tape::{Bwd, Op, Tan};
use super::{Element, Tape, Var};
use crate::error::{AdError, AdResult};
use ndarray::{ArrayBase, ArrayD, ArrayViewD, ArrayViewMutD, Data, Dimension};
use smallvec::SmallVec;

/// Where a custom rule writes one result: the adjoint of one input (in
/// [`TensorRule::vjp`]) or the output's tangent (in [`TensorRule::jvp`]). It has that
/// array's shape; [`RuleSlot::add`] and [`RuleSlot::assign`] check what the rule gives
/// against it ([`AdError::RuleShape`], naming the rule and the array, instead of a
/// panic inside ndarray).
#[derive(Debug)]
pub struct RuleSlot<'v, T> {
    view: ArrayViewMutD<'v, T>,
    rule: &'static str,
    /// The input whose adjoint this is; `None` for the output's tangent.
    input: Option<usize>,
}

impl<'v, T: Element> RuleSlot<'v, T> {
    pub(crate) fn new(
        view: ArrayViewMutD<'v, T>,
        rule: &'static str,
        input: Option<usize>,
    ) -> Self {
        RuleSlot { view, rule, input }
    }

    /// The shape the result must have.
    pub fn shape(&self) -> &[usize] {
        self.view.shape()
    }

    fn check(&self, found: &[usize]) -> AdResult<()> {
        if found == self.view.shape() {
            return Ok(());
        }
        Err(AdError::RuleShape {
            rule: self.rule,
            what: match self.input {
                Some(k) => format!("the adjoint of input {k}"),
                None => "the tangent of its output".into(),
            },
            expected: self.view.shape().to_vec(),
            found: found.to_vec(),
        })
    }

    /// Adds `a` (`+=`, as reverse rules accumulate), which must have the slot's shape.
    pub fn add<S: Data<Elem = T>, D: Dimension>(&mut self, a: &ArrayBase<S, D>) -> AdResult<()> {
        self.check(a.shape())?;
        let a = a.view().into_dyn();
        self.view.zip_mut_with(&a, |d, &v| *d += v);
        Ok(())
    }

    /// Writes `a`, which must have the slot's shape.
    pub fn assign<S: Data<Elem = T>, D: Dimension>(&mut self, a: &ArrayBase<S, D>) -> AdResult<()> {
        self.check(a.shape())?;
        self.view.assign(&a.view().into_dyn());
        Ok(())
    }

    /// The slot as a mutable view, for a rule that writes element by element (reverse
    /// rules add to what is there).
    pub fn view_mut(&mut self) -> ArrayViewMutD<'_, T> {
        self.view.view_mut()
    }
}

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

    /// Reverse rule: accumulates (`+=`, [`RuleSlot::add`]) the adjoint of input number
    /// `input` into `grad_input`, given the output `output` and its adjoint
    /// `grad_output`. Called once per tracked input. An error (e.g. the slot's
    /// [`AdError::RuleShape`]) is returned by the entry point after the sweep.
    fn vjp(
        &self,
        inputs: &[ArrayViewD<'_, T>],
        output: ArrayViewD<'_, T>,
        grad_output: ArrayViewD<'_, T>,
        input: usize,
        grad_input: RuleSlot<'_, T>,
    ) -> AdResult<()>;

    /// Forward rule: writes the output's tangent into `tangent_output` (zeroed,
    /// [`RuleSlot::assign`]), given the inputs' tangents (`None` for constants).
    fn jvp(
        &self,
        inputs: &[ArrayViewD<'_, T>],
        output: ArrayViewD<'_, T>,
        tangents: &[Option<ArrayViewD<'_, T>>],
        tangent_output: RuleSlot<'_, T>,
    ) -> AdResult<()>;
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
        let name = self.rule.name();
        for (pos, &j) in self.inputs.iter().enumerate() {
            if let Some(gj) = bw.gs.acc(j, views[pos].shape()) {
                let slot = RuleSlot::new(gj, name, Some(pos));
                if let Err(e) = self.rule.vjp(&views, y.view(), g.view(), pos, slot) {
                    bw.err.get_or_insert(e);
                }
            }
        }
    }
}

impl<'a, T: Element> Tape<'a, T> {
    /// Applies a user rule to `inputs`. A zero-sized rule (a unit struct) costs no
    /// allocation.
    ///
    /// Errors: [`AdError::ForeignValue`] for a handle from another tape, whatever the
    /// rule's `forward` (and in forward mode its `jvp`) returns, and
    /// [`AdError::RuleShape`] for a tangent of another shape than the output's.
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
            let r = rule.jvp(
                &views,
                y.view(),
                &ts,
                RuleSlot::new(t.view_mut(), rule.name(), None),
            );
            if let Err(e) = r {
                self.pool.give(t);
                self.pool.give(y);
                return Err(e);
            }
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
