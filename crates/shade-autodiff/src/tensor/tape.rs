//! The tape: node storage, the buffer pool, the reverse sweep.
//!
//! Nodes are stored column-wise (`vals`, `tracked`, `tans`, `grads`, `ops`) so a rule
//! can read its inputs' values while it accumulates into their adjoints. Every owned
//! array comes from a [`Pool`] of released buffers and goes back to it, so the second
//! call of the same program allocates nothing.

use super::reduce;
use super::{Element, broadcast, coo, custom, dropout, elementwise, index, linear, loss, matmul};
use super::{shape, softmax, sparse};
use crate::error::{AdError, AdResult, ValueRange};
use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD, IxDyn, ShapeBuilder};
use smallvec::SmallVec;
use std::panic::Location;
use std::sync::atomic::{AtomicU32, Ordering};

mod pool;
pub(crate) use pool::Pool;

/// A handle to a value on a [`Tape`]: cheap to copy, valid only on the tape that made it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Var {
    tape: u32,
    index: u32,
}

impl Var {
    /// Position of the value on its tape.
    pub fn index(self) -> usize {
        self.index as usize
    }
}

#[track_caller]
pub(crate) fn wrap<T>(shape: &[usize], v: Vec<T>) -> ArrayD<T> {
    // The length is the shape's product by construction.
    ArrayD::from_shape_vec(IxDyn(shape), v).expect("pool buffer has the shape's length")
}

/// A node's primal value.
#[derive(Debug)]
pub(crate) enum Val<'a, T> {
    Borrowed(ArrayViewD<'a, T>),
    Own(ArrayD<T>),
    /// A value that no reverse rule reads, returned to the pool before the sweep: its
    /// shape stays (rules size adjoints by it), its numbers read as one broadcast zero.
    Dropped {
        shape: SmallVec<[usize; 4]>,
        zero: [T; 1],
    },
    Freed,
}

impl<T> Val<'_, T> {
    pub(crate) fn view(&self) -> ArrayViewD<'_, T> {
        match self {
            Val::Borrowed(v) => v.view(),
            Val::Own(a) => a.view(),
            Val::Dropped { shape, zero } => {
                let strides = IxDyn(&SmallVec::<[usize; 4]>::from_elem(0, shape.len()));
                ArrayViewD::from_shape(IxDyn(shape).strides(strides), zero)
                    .expect("a zero-strided view of one element fits any shape")
            }
            Val::Freed => ArrayViewD::from_shape(IxDyn(&[0]), &[]).expect("empty view"),
        }
    }
}

/// A node's tangent (forward mode).
#[derive(Debug, Default)]
pub(crate) enum Tan<'a, T> {
    #[default]
    None,
    Borrowed(ArrayViewD<'a, T>),
    Own(ArrayD<T>),
}

impl<T> Tan<'_, T> {
    pub(crate) fn view(&self) -> Option<ArrayViewD<'_, T>> {
        match self {
            Tan::None => None,
            Tan::Borrowed(v) => Some(v.view()),
            Tan::Own(a) => Some(a.view()),
        }
    }
}

/// A node's adjoint (reverse mode).
#[derive(Debug, Default)]
pub(crate) enum Grad<'a, T> {
    #[default]
    None,
    Own(ArrayD<T>),
    /// The caller's shadow of a `Duplicated` input; when it is not in standard layout
    /// the adjoint accumulates in `deferred` and is added to it after the sweep.
    Shadow {
        view: ArrayViewMutD<'a, T>,
        deferred: Option<ArrayD<T>>,
    },
}

/// The backward record of one node.
#[derive(Debug)]
pub(crate) enum Op<'a, T: Element> {
    Leaf,
    Unary(elementwise::Rec<T>),
    Binary(broadcast::Rec),
    Matmul(matmul::Rec),
    Linear(linear::Rec),
    GroupDot(matmul::GroupRec),
    Coo(coo::Rec<'a, T>),
    Shape(shape::Rec),
    Reduce(reduce::Rec),
    Softmax(softmax::Rec),
    Loss(loss::Rec<'a, T>),
    Index(index::Rec<'a, T>),
    Sparse(sparse::Rec<'a, T>),
    Dropout(dropout::Rec<T>),
    Custom(custom::Rec<'a, T>),
}

impl<T: Element> Op<'_, T> {
    fn backward(&self, me: usize, g: ArrayViewD<'_, T>, b: &mut Bwd<'_, '_, T>) {
        match self {
            Op::Leaf => {}
            Op::Unary(r) => r.backward(me, g, b),
            Op::Binary(r) => r.backward(me, g, b),
            Op::Matmul(r) => r.backward(me, g, b),
            Op::Linear(r) => r.backward(me, g, b),
            Op::GroupDot(r) => r.backward(me, g, b),
            Op::Coo(r) => r.backward(me, g, b),
            Op::Shape(r) => r.backward(me, g, b),
            Op::Reduce(r) => r.backward(me, g, b),
            Op::Softmax(r) => r.backward(me, g, b),
            Op::Loss(r) => r.backward(me, g, b),
            Op::Index(r) => r.backward(me, g, b),
            Op::Sparse(r) => r.backward(me, g, b),
            Op::Dropout(r) => r.backward(me, g, b),
            Op::Custom(r) => r.backward(me, g, b),
        }
    }

    /// The operation's name, for anomaly reports.
    fn name(&self) -> &'static str {
        match self {
            Op::Leaf => "input",
            Op::Unary(r) => r.name(),
            Op::Binary(r) => r.name(),
            Op::Matmul(_) => "matmul",
            Op::Linear(_) => "linear",
            Op::GroupDot(_) => "group_dot",
            Op::Coo(r) => r.name(),
            Op::Shape(r) => r.name(),
            Op::Reduce(r) => r.name(),
            Op::Softmax(r) => r.name(),
            Op::Loss(r) => r.name(),
            Op::Index(r) => r.name(),
            Op::Sparse(r) => r.name(),
            Op::Dropout(_) => "dropout",
            Op::Custom(r) => r.name(),
        }
    }

    /// The nodes the operation reads (its differentiable operands).
    fn inputs(&self) -> SmallVec<[usize; 4]> {
        match self {
            Op::Leaf => SmallVec::new(),
            Op::Unary(r) => r.inputs(),
            Op::Binary(r) => r.inputs(),
            Op::Matmul(r) => r.inputs(),
            Op::Linear(r) => r.inputs(),
            Op::GroupDot(r) => r.inputs(),
            Op::Coo(r) => r.inputs(),
            Op::Shape(r) => r.inputs(),
            Op::Reduce(r) => r.inputs(),
            Op::Softmax(r) => r.inputs(),
            Op::Loss(r) => r.inputs(),
            Op::Index(r) => r.inputs(),
            Op::Sparse(r) => r.inputs(),
            Op::Dropout(r) => r.inputs(),
            Op::Custom(r) => r.inputs(),
        }
    }

    /// The nodes whose values (numbers, not just shapes) the reverse rule of node `me`
    /// reads. Rules that do not say read every input and their own result.
    fn value_reads(&self, me: usize, tracked: &[bool]) -> SmallVec<[usize; 4]> {
        match self {
            Op::Leaf => SmallVec::new(),
            Op::Unary(r) => r.value_reads(me),
            Op::Binary(r) => r.value_reads(),
            Op::Matmul(r) => r.value_reads(tracked),
            Op::Linear(r) => r.value_reads(tracked),
            Op::Sparse(r) => r.value_reads(tracked),
            _ => {
                let mut v = self.inputs();
                v.push(me);
                v
            }
        }
    }

    fn release(self, pool: &mut Pool<T>) {
        match self {
            Op::Reduce(r) => r.release(pool),
            Op::Loss(r) => r.release(pool),
            Op::Index(r) => r.release(pool),
            Op::Dropout(r) => r.release(pool),
            Op::Coo(r) => r.release(pool),
            _ => {}
        }
    }
}

/// What a backward rule sees: its inputs' values and a sink for their adjoints.
pub(crate) struct Bwd<'s, 'a, T: Element> {
    pub(crate) vals: &'s [Val<'a, T>],
    pub(crate) gs: Sink<'s, 'a, T>,
    /// An error a rule ran into (a custom rule's wrongly shaped adjoint); the entry
    /// point returns it after the sweep.
    pub(crate) err: Option<AdError>,
}

/// Adjoint storage, handed out lazily per input.
pub(crate) struct Sink<'s, 'a, T: Element> {
    grads: &'s mut [Grad<'a, T>],
    tracked: &'s [bool],
    pub(crate) pool: &'s mut Pool<T>,
}

impl<T: Element> Sink<'_, '_, T> {
    /// The adjoint of node `j` (standard layout, created as zeros on first use), or
    /// `None` when `j` is a constant.
    pub(crate) fn acc(&mut self, j: usize, shape: &[usize]) -> Option<ArrayViewMutD<'_, T>> {
        if !self.tracked[j] {
            return None;
        }
        let slot = &mut self.grads[j];
        if matches!(slot, Grad::None) {
            *slot = Grad::Own(self.pool.zeros(shape));
        }
        match slot {
            Grad::Own(a) => Some(a.view_mut()),
            Grad::Shadow { view, deferred } => {
                if view.is_standard_layout() {
                    Some(view.view_mut())
                } else {
                    let d = deferred.get_or_insert_with(|| self.pool.zeros(shape));
                    Some(d.view_mut())
                }
            }
            Grad::None => None,
        }
    }

    /// As [`Sink::acc`], and whether this call created the adjoint: then its contents
    /// are unspecified (a recycled buffer, not zero-filled) and the caller must write
    /// every element, as `0 + v` (the bits of accumulating `v` into zeros, `-0`
    /// included).
    pub(crate) fn acc_or_fresh(
        &mut self,
        j: usize,
        shape: &[usize],
    ) -> Option<(ArrayViewMutD<'_, T>, bool)> {
        let fresh = self.tracked[j] && matches!(self.grads[j], Grad::None);
        if fresh {
            self.grads[j] = Grad::Own(self.pool.overwritten(shape));
        }
        self.acc(j, shape).map(|a| (a, fresh))
    }

    /// Whether node `j` wants an adjoint.
    pub(crate) fn wants(&self, j: usize) -> bool {
        self.tracked[j]
    }
}

/// How the tape is being run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TapeMode {
    /// Values only; nothing is tracked.
    Primal,
    /// Records backward rules for tracked values.
    Reverse,
    /// Computes tangents eagerly for tracked values.
    Forward,
}

impl TapeMode {
    /// How messages call the mode.
    fn name(self) -> &'static str {
        match self {
            TapeMode::Primal => "an evaluation",
            TapeMode::Reverse => "reverse mode",
            TapeMode::Forward => "forward mode",
        }
    }
}

/// Reusable storage for tensor programs: keep one per program and pass it to every
/// call, so that warm calls allocate nothing.
#[derive(Debug)]
pub struct TapeBuffers<T: Element> {
    pool: Pool<T>,
    vals: Vec<Val<'static, T>>,
    tracked: Vec<bool>,
    tans: Vec<Tan<'static, T>>,
    grads: Vec<Grad<'static, T>>,
    ops: Vec<Op<'static, T>>,
    locs: Vec<Option<&'static Location<'static>>>,
    /// Which values the reverse rules read (scratch of the sweep).
    read: Vec<bool>,
    anomaly: bool,
}

impl<T: Element> Default for TapeBuffers<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Element> TapeBuffers<T> {
    /// Empty storage; the first call sizes it.
    pub fn new() -> Self {
        TapeBuffers {
            pool: Pool::default(),
            vals: Vec::new(),
            tracked: Vec::new(),
            tans: Vec::new(),
            grads: Vec::new(),
            ops: Vec::new(),
            locs: Vec::new(),
            read: Vec::new(),
            anomaly: false,
        }
    }

    /// Turns anomaly mode on or off for the calls that use these buffers.
    ///
    /// In anomaly mode every operation's result (and, in forward mode, its tangent) is
    /// checked for NaN and infinities as it is computed, and every adjoint a reverse
    /// rule writes is checked during the reverse sweep. The first operation that
    /// produces a non-finite value makes the entry point return
    /// [`AdError::NonFiniteForward`] or [`AdError::NonFiniteBackward`], naming the
    /// operation, the place in the program that called it, and the ranges of its
    /// inputs. Off by default: then the checks cost one branch per operation.
    pub fn set_anomaly(&mut self, on: bool) {
        self.anomaly = on;
    }

    /// Whether anomaly mode is on.
    pub fn anomaly(&self) -> bool {
        self.anomaly
    }

    /// Number of element buffers held for reuse.
    pub fn pooled_buffers(&self) -> usize {
        self.pool.len()
    }

    /// Bytes of the buffers held for reuse (at rest: what one call of the program
    /// needs).
    pub fn pooled_bytes(&self) -> usize {
        self.pool.bytes()
    }
}

/// Reuses a vector's allocation for an element type of the same layout (the
/// standard library collects a mapped `IntoIter` in place).
fn recycle<X, Y>(mut v: Vec<X>) -> Vec<Y> {
    v.clear();
    v.into_iter()
        .map(|_| unreachable!("the vector is empty"))
        .collect()
}

static NEXT_TAPE: AtomicU32 = AtomicU32::new(1);

/// One call's record of array operations.
///
/// Made by the entry points ([`gradient`](super::gradient),
/// [`pushforward`](super::pushforward), ...) and handed to the program; every
/// operation is a method returning a new [`Var`].
pub struct Tape<'a, T: Element> {
    id: u32,
    pub(crate) mode: TapeMode,
    pub(crate) vals: Vec<Val<'a, T>>,
    pub(crate) tracked: Vec<bool>,
    pub(crate) tans: Vec<Tan<'a, T>>,
    pub(crate) grads: Vec<Grad<'a, T>>,
    pub(crate) ops: Vec<Op<'a, T>>,
    pub(crate) pool: Pool<T>,
    /// Anomaly mode: check every result and adjoint.
    anomaly: bool,
    /// Call site of each node's operation (anomaly mode only).
    locs: Vec<Option<&'static Location<'static>>>,
    /// The first non-finite value found (anomaly mode), or the first error a reverse
    /// rule ran into: the entry point returns it.
    pending_err: Option<AdError>,
    bufs: &'a mut TapeBuffers<T>,
}

impl<T: Element> core::fmt::Debug for Tape<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Tape")
            .field("mode", &self.mode)
            .field("len", &self.vals.len())
            .finish()
    }
}

impl<'a, T: Element> Tape<'a, T> {
    pub(crate) fn new(bufs: &'a mut TapeBuffers<T>, mode: TapeMode) -> Self {
        Tape {
            id: NEXT_TAPE.fetch_add(1, Ordering::Relaxed),
            mode,
            vals: recycle(std::mem::take(&mut bufs.vals)),
            tracked: std::mem::take(&mut bufs.tracked),
            tans: recycle(std::mem::take(&mut bufs.tans)),
            grads: recycle(std::mem::take(&mut bufs.grads)),
            ops: recycle(std::mem::take(&mut bufs.ops)),
            pool: std::mem::take(&mut bufs.pool),
            anomaly: bufs.anomaly,
            locs: std::mem::take(&mut bufs.locs),
            pending_err: None,
            bufs,
        }
    }

    /// The first anomaly (anomaly mode) or reverse-rule error found so far, as an error.
    pub(crate) fn pending_result(&mut self) -> AdResult<()> {
        match self.pending_err.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The ranges of the given nodes' values.
    fn ranges(&self, nodes: &[usize]) -> Vec<ValueRange> {
        nodes
            .iter()
            .map(|&j| {
                let v = self.vals[j].view();
                ValueRange::of(v.shape(), v.iter().map(|x| x.to_f64().unwrap_or(f64::NAN)))
            })
            .collect()
    }

    /// Anomaly mode: checks a new result (and tangent) before it is stored.
    #[cold]
    fn check_forward(
        &mut self,
        val: &ArrayD<T>,
        tan: &Tan<'a, T>,
        op: &Op<'a, T>,
        loc: &'static Location<'static>,
    ) {
        self.locs.push(Some(loc));
        if self.pending_err.is_some() {
            return;
        }
        let found = first_non_finite(val.iter()).or_else(|| match tan {
            Tan::Own(t) if self.forward() => first_non_finite(t.iter()),
            _ => None,
        });
        if let Some((position, what)) = found {
            let inputs = self.ranges(&op.inputs());
            self.pending_err = Some(AdError::NonFiniteForward {
                op: op.name(),
                what,
                position,
                location: Some(loc),
                inputs,
            });
        }
    }

    /// Anomaly mode: checks the adjoints that the reverse rule of node `i` wrote.
    #[cold]
    fn check_backward(&mut self, i: usize, op: &Op<'a, T>, g: &ArrayD<T>) {
        if self.pending_err.is_some() {
            return;
        }
        let inputs = op.inputs();
        for (k, &j) in inputs.iter().enumerate() {
            if !self.tracked[j] {
                continue;
            }
            let found = match &self.grads[j] {
                Grad::Own(a) => first_non_finite(a.iter()),
                Grad::Shadow {
                    deferred: Some(d), ..
                } => first_non_finite(d.iter()),
                Grad::Shadow { view, .. } => first_non_finite(view.iter()),
                Grad::None => None,
            };
            if let Some((_, what)) = found {
                let ranges = self.ranges(&inputs);
                self.pending_err = Some(AdError::NonFiniteBackward {
                    op: op.name(),
                    what,
                    input: k,
                    location: self.locs.get(i).copied().flatten(),
                    inputs: ranges,
                    adjoint: Box::new(ValueRange::of(
                        g.shape(),
                        g.iter().map(|x| x.to_f64().unwrap_or(f64::NAN)),
                    )),
                });
                return;
            }
        }
    }

    /// Number of values on the tape.
    pub fn len(&self) -> usize {
        self.vals.len()
    }

    /// Whether the tape holds no values.
    pub fn is_empty(&self) -> bool {
        self.vals.is_empty()
    }

    /// The position of `v`, or [`AdError::ForeignValue`].
    pub(crate) fn index(&self, v: Var) -> AdResult<usize> {
        let i = v.index as usize;
        if v.tape != self.id || i >= self.vals.len() {
            return Err(AdError::ForeignValue {
                index: i,
                len: self.vals.len(),
            });
        }
        Ok(i)
    }

    /// The shape of `v`.
    pub fn shape(&self, v: Var) -> AdResult<&[usize]> {
        let i = self.index(v)?;
        Ok(match &self.vals[i] {
            Val::Borrowed(a) => a.shape(),
            Val::Own(a) => a.shape(),
            Val::Dropped { shape, .. } => shape,
            Val::Freed => &[],
        })
    }

    /// The current value of `v` as plain numbers.
    ///
    /// Allowed for constants (values that depend on no differentiated argument, every
    /// value of [`value`](super::value)'s evaluation). Refused for a tracked value
    /// while the tape records ([`AdError::TrackedValueRead`], naming this call's
    /// location): numbers read out of a tracked value and fed back into the program
    /// are constants to the derivative, so the gradient through them would be
    /// silently zero. Compute with the tape's operations instead (they carry the
    /// derivative), or cut the value from the derivative on purpose with
    /// [`Tape::detach`] and read that (PyTorch's `x.detach()`, JAX's `stop_gradient`).
    /// The entry points' results are plain arrays, free to read after the recording.
    ///
    /// ```
    /// use ndarray::{array, Array1};
    /// use shade_autodiff::Duplicated;
    /// use shade_autodiff::tensor::{self, TapeBuffers};
    ///
    /// let x = array![1.0, -2.0];
    /// let mut dx = Array1::zeros(2);
    /// let e = tensor::gradient(&mut TapeBuffers::new(), |t, (x,)| {
    ///     let _numbers = t.value(x)?; // a tracked value: refused
    ///     t.sum(x)
    /// }, (Duplicated(&x, &mut dx),)).unwrap_err();
    /// assert_eq!(e.code(), "SHADE-E0115");
    ///
    /// // Detached on purpose: the numbers are a constant, and say so.
    /// let y = tensor::gradient(&mut TapeBuffers::new(), |t, (x,)| {
    ///     let d = t.detach(x)?;
    ///     let largest = t.value(d)?.fold(f64::MIN, |m, &v| m.max(v));
    ///     let s = t.sum(x)?;
    ///     t.scale(s, largest)
    /// }, (Duplicated(&x, &mut dx),))?;
    /// assert_eq!((y, dx.to_vec()), (-1.0, vec![1.0, 1.0]));
    /// # Ok::<(), shade_autodiff::AdError>(())
    /// ```
    #[track_caller]
    pub fn value(&self, v: Var) -> AdResult<ArrayViewD<'_, T>> {
        let i = self.index(v)?;
        if self.tracked[i] {
            return Err(AdError::TrackedValueRead {
                location: Location::caller(),
                what: format!(
                    "a tracked tensor of shape {:?}",
                    self.vals[i].view().shape()
                ),
                mode: self.mode.name(),
            });
        }
        Ok(self.vals[i].view())
    }

    /// `v` cut from the derivative: a constant with `v`'s value, whose numbers
    /// [`Tape::value`] reads (PyTorch's `x.detach()`, JAX's `jax.lax.stop_gradient`).
    /// Nothing flows back through it: the derivative of what is computed from it is
    /// zero by request. A constant is returned as it is; a tracked value is copied
    /// into tape storage.
    #[track_caller]
    pub fn detach(&mut self, v: Var) -> AdResult<Var> {
        let i = self.index(v)?;
        if !self.tracked[i] {
            return Ok(v);
        }
        let view = self.vals[i].view();
        let shape: SmallVec<[usize; 4]> = view.shape().into();
        let mut out = self.pool.vec(view.len());
        out.extend(view.iter().copied());
        let out = wrap(&shape, out);
        Ok(self.push(out, false, Op::Leaf, Tan::None))
    }

    /// Whether `v` depends on a differentiated argument.
    pub fn is_tracked(&self, v: Var) -> AdResult<bool> {
        let i = self.index(v)?;
        Ok(self.tracked[i])
    }

    /// Adds a constant array to the tape (its values are copied into tape storage).
    pub fn constant<S, D>(&mut self, a: &ndarray::ArrayBase<S, D>) -> Var
    where
        S: ndarray::Data<Elem = T>,
        D: ndarray::Dimension,
    {
        let out = self.pool.collect(a.shape(), a.iter().copied());
        self.push(out, false, Op::Leaf, Tan::None)
    }

    /// Adds a constant scalar (a 0-d array) to the tape.
    pub fn scalar(&mut self, x: T) -> Var {
        let out = self.pool.collect(&[], std::iter::once(x));
        self.push(out, false, Op::Leaf, Tan::None)
    }

    /// Adds a leaf that borrows its value.
    pub(crate) fn leaf(
        &mut self,
        v: ArrayViewD<'a, T>,
        tracked: bool,
        grad: Grad<'a, T>,
        tan: Tan<'a, T>,
    ) -> Var {
        let index = self.vals.len() as u32;
        self.vals.push(Val::Borrowed(v));
        self.tracked.push(tracked);
        self.tans.push(tan);
        self.grads.push(grad);
        self.ops.push(Op::Leaf);
        if self.anomaly {
            self.locs.push(None);
        }
        Var {
            tape: self.id,
            index,
        }
    }

    /// Whether backward records are kept.
    pub(crate) fn recording(&self) -> bool {
        self.mode == TapeMode::Reverse
    }

    /// Whether tangents are propagated.
    pub(crate) fn forward(&self) -> bool {
        self.mode == TapeMode::Forward
    }

    /// Appends an owned result. `op` is stored only when recording and tracked.
    ///
    /// `#[track_caller]` (as every public operation and the helpers between them and
    /// this function): in anomaly mode the caller's location is the user's call site.
    #[track_caller]
    pub(crate) fn push(
        &mut self,
        val: ArrayD<T>,
        tracked: bool,
        op: Op<'a, T>,
        tan: Tan<'a, T>,
    ) -> Var {
        if self.anomaly {
            self.check_forward(&val, &tan, &op, Location::caller());
        }
        let index = self.vals.len() as u32;
        self.vals.push(Val::Own(val));
        self.tracked.push(tracked);
        if let Tan::Own(t) = tan {
            if self.forward() && tracked {
                self.tans.push(Tan::Own(t));
            } else {
                self.pool.give(t);
                self.tans.push(Tan::None);
            }
        } else {
            self.tans.push(tan);
        }
        self.grads.push(Grad::None);
        if self.recording() && tracked {
            self.ops.push(op);
        } else {
            op.release(&mut self.pool);
            self.ops.push(Op::Leaf);
        }
        Var {
            tape: self.id,
            index,
        }
    }

    /// Returns to the pool, before the sweep, every owned value that no recorded
    /// reverse rule reads (`out`'s is kept): the intermediate results of sums, sparse
    /// products and maps whose derivative comes from their output, so that the sweep's
    /// adjoints reuse their buffers instead of adding to them.
    fn drop_unread(&mut self, out: usize) {
        let mut read = std::mem::take(&mut self.bufs.read);
        read.clear();
        read.resize(self.vals.len(), false);
        read[out] = true;
        for (i, op) in self.ops.iter().enumerate().take(out + 1) {
            for j in op.value_reads(i, &self.tracked) {
                read[j] = true;
            }
        }
        for (v, _) in self.vals.iter_mut().zip(&read).filter(|(_, r)| !**r) {
            if let Val::Own(a) = v {
                let shape = a.shape().into();
                let Val::Own(a) = std::mem::replace(
                    v,
                    Val::Dropped {
                        shape,
                        zero: [T::zero()],
                    },
                ) else {
                    unreachable!("matched as owned just above")
                };
                self.pool.give(a);
            }
        }
        self.bufs.read = read;
    }

    /// Runs the reverse sweep from node `out`, seeded by `seed`.
    pub(crate) fn backward(&mut self, out: usize, seed: impl FnOnce(ArrayViewMutD<'_, T>)) {
        if !self.tracked[out] {
            return;
        }
        {
            let shape = self.vals[out].view().shape().to_vec();
            let mut sink = Sink {
                grads: &mut self.grads,
                tracked: &self.tracked,
                pool: &mut self.pool,
            };
            if let Some(g) = sink.acc(out, &shape) {
                seed(g);
            }
        }
        if !self.anomaly {
            // Anomaly reports show the inputs' ranges: keep every value there.
            self.drop_unread(out);
        }
        for i in (0..=out).rev() {
            let op = std::mem::replace(&mut self.ops[i], Op::Leaf);
            if matches!(op, Op::Leaf) {
                continue;
            }
            let g = match std::mem::take(&mut self.grads[i]) {
                Grad::Own(g) => Some(g),
                _ => None,
            };
            if let Some(g) = &g {
                let (before, _) = self.vals.split_at(i + 1);
                let mut b = Bwd {
                    vals: before,
                    gs: Sink {
                        grads: &mut self.grads,
                        tracked: &self.tracked,
                        pool: &mut self.pool,
                    },
                    err: None,
                };
                op.backward(i, g.view(), &mut b);
                if let Some(e) = b.err {
                    self.pending_err.get_or_insert(e);
                }
                if self.anomaly {
                    self.check_backward(i, &op, g);
                }
            }
            op.release(&mut self.pool);
            if let Some(g) = g {
                self.pool.give(g);
            }
            if let Val::Own(v) = std::mem::replace(&mut self.vals[i], Val::Freed) {
                self.pool.give(v);
            }
        }
        for g in self.grads.iter_mut() {
            if let Grad::Shadow { view, deferred } = g
                && let Some(d) = deferred.take()
            {
                *view += &d;
                self.pool.give(d);
            }
        }
    }
}

impl<T: Element> Drop for Tape<'_, T> {
    fn drop(&mut self) {
        for v in self.vals.drain(..) {
            if let Val::Own(a) = v {
                self.pool.give(a);
            }
        }
        for t in self.tans.drain(..) {
            if let Tan::Own(a) = t {
                self.pool.give(a);
            }
        }
        for g in self.grads.drain(..) {
            match g {
                Grad::Own(a) => self.pool.give(a),
                Grad::Shadow {
                    deferred: Some(a), ..
                } => self.pool.give(a),
                _ => {}
            }
        }
        for op in self.ops.drain(..) {
            op.release(&mut self.pool);
        }
        self.tracked.clear();
        self.pool.trim();
        self.bufs.vals = recycle(std::mem::take(&mut self.vals));
        self.bufs.tans = recycle(std::mem::take(&mut self.tans));
        self.bufs.grads = recycle(std::mem::take(&mut self.grads));
        self.bufs.ops = recycle(std::mem::take(&mut self.ops));
        self.bufs.tracked = std::mem::take(&mut self.tracked);
        self.bufs.pool = std::mem::take(&mut self.pool);
        self.locs.clear();
        self.bufs.locs = std::mem::take(&mut self.locs);
    }
}

/// Position and kind (`NaN`, `inf`, `-inf`) of the first non-finite element.
fn first_non_finite<'x, T: Element>(
    it: impl Iterator<Item = &'x T>,
) -> Option<(usize, &'static str)> {
    it.enumerate().find_map(|(p, &v)| {
        if v.is_nan() {
            Some((p, "NaN"))
        } else if v.is_infinite() {
            Some((p, if v > T::zero() { "inf" } else { "-inf" }))
        } else {
            None
        }
    })
}
