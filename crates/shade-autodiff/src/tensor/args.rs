//! Activity-annotated arguments of a tensor program and the handles they become.
//!
//! | argument | handle in the program |
//! |---|---|
//! | `Const(&array)` | [`Var`], a constant (borrowed, never copied) |
//! | `Duplicated(&array, &mut shadow)` | [`Var`], tracked |
//! | `DuplicatedNoNeed(&array, &mut shadow)` | [`Var`], tracked |
//! | `Const(&SparseMatrix)` | `&SparseMatrix` |
//! | `Const(&[usize])` / `Const(&[u32])` / `Const(&[bool])` | the slice |
//!
//! Tuples of up to eight arguments, arrays `[A; N]` and `Vec<A>` of arguments are
//! argument lists.

use super::tape::{Grad, Tan, TapeMode};
use super::{Element, SparseMatrix, Tape, Var};
use crate::activity::{Const, Duplicated, DuplicatedNoNeed};
use crate::error::{AdError, AdResult};
use ndarray::{Array, ArrayBase, Data, Dimension};

/// One annotated argument of a tensor program.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tensor-program argument",
    label = "annotate it: `Const(&array)`, `Duplicated(&array, &mut shadow)`, `Const(&sparse)` or `Const(&indices[..])`",
    note = "tensor programs take ndarray arrays, `SparseMatrix` and index slices"
)]
pub trait TensorArg<'a, T: Element> {
    /// What the program receives for this argument.
    type Handle;
    /// Registers the argument on the tape; `pos` is its position in the list (for errors).
    fn register(self, tape: &mut Tape<'a, T>, pos: usize) -> AdResult<Self::Handle>;
}

/// A list of annotated arguments.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a list of tensor-program arguments",
    label = "pass a tuple such as `(Duplicated(&w, &mut dw), Const(&x))` (one argument: `(Const(&x),)`)"
)]
pub trait TensorArgs<'a, T: Element> {
    /// What the program receives.
    type Handles;
    /// Registers every argument on the tape.
    fn register(self, tape: &mut Tape<'a, T>) -> AdResult<Self::Handles>;
}

impl<'a, T, S, D> TensorArg<'a, T> for Const<&'a ArrayBase<S, D>>
where
    T: Element,
    S: Data<Elem = T>,
    D: Dimension,
{
    type Handle = Var;
    fn register(self, tape: &mut Tape<'a, T>, _pos: usize) -> AdResult<Var> {
        Ok(tape.leaf(self.0.view().into_dyn(), false, Grad::None, Tan::None))
    }
}

fn dup<'a, T: Element, D: Dimension>(
    tape: &mut Tape<'a, T>,
    pos: usize,
    x: &'a Array<T, D>,
    dx: &'a mut Array<T, D>,
) -> AdResult<Var> {
    if x.shape() != dx.shape() {
        return Err(AdError::ShadowShape {
            arg: pos,
            expected: x.shape().to_vec(),
            found: dx.shape().to_vec(),
        });
    }
    if !x.is_empty() && std::ptr::eq(x.as_ptr(), dx.as_ptr()) {
        return Err(AdError::ShadowAliasesPrimal { arg: pos });
    }
    let v = x.view().into_dyn();
    Ok(match tape.mode {
        TapeMode::Primal => tape.leaf(v, false, Grad::None, Tan::None),
        TapeMode::Forward => {
            let t: &'a Array<T, D> = dx;
            tape.leaf(v, true, Grad::None, Tan::Borrowed(t.view().into_dyn()))
        }
        TapeMode::Reverse => tape.leaf(
            v,
            true,
            Grad::Shadow {
                view: dx.view_mut().into_dyn(),
                deferred: None,
            },
            Tan::None,
        ),
    })
}

impl<'a, T: Element, D: Dimension> TensorArg<'a, T> for Duplicated<'a, Array<T, D>> {
    type Handle = Var;
    fn register(self, tape: &mut Tape<'a, T>, pos: usize) -> AdResult<Var> {
        dup(tape, pos, self.0, self.1)
    }
}

impl<'a, T: Element, D: Dimension> TensorArg<'a, T> for DuplicatedNoNeed<'a, Array<T, D>> {
    type Handle = Var;
    fn register(self, tape: &mut Tape<'a, T>, pos: usize) -> AdResult<Var> {
        dup(tape, pos, self.0, self.1)
    }
}

impl<'a, T: Element> TensorArg<'a, T> for Const<&'a SparseMatrix<T>> {
    type Handle = &'a SparseMatrix<T>;
    fn register(self, _tape: &mut Tape<'a, T>, _pos: usize) -> AdResult<Self::Handle> {
        Ok(self.0)
    }
}

impl<'a, T: Element> TensorArg<'a, T> for Const<&'a [usize]> {
    type Handle = &'a [usize];
    fn register(self, _tape: &mut Tape<'a, T>, _pos: usize) -> AdResult<Self::Handle> {
        Ok(self.0)
    }
}

impl<'a, T: Element> TensorArg<'a, T> for Const<&'a [u32]> {
    type Handle = &'a [u32];
    fn register(self, _tape: &mut Tape<'a, T>, _pos: usize) -> AdResult<Self::Handle> {
        Ok(self.0)
    }
}

impl<'a, T: Element> TensorArg<'a, T> for Const<&'a [bool]> {
    type Handle = &'a [bool];
    fn register(self, _tape: &mut Tape<'a, T>, _pos: usize) -> AdResult<Self::Handle> {
        Ok(self.0)
    }
}

macro_rules! tuples {
    ($( ($($n:tt $A:ident),+) )+) => {$(
        impl<'a, T: Element, $($A: TensorArg<'a, T>),+> TensorArgs<'a, T> for ($($A,)+) {
            type Handles = ($($A::Handle,)+);
            fn register(self, tape: &mut Tape<'a, T>) -> AdResult<Self::Handles> {
                Ok(($(self.$n.register(tape, $n)?,)+))
            }
        }
    )+};
}

tuples! {
    (0 A0)
    (0 A0, 1 A1)
    (0 A0, 1 A1, 2 A2)
    (0 A0, 1 A1, 2 A2, 3 A3)
    (0 A0, 1 A1, 2 A2, 3 A3, 4 A4)
    (0 A0, 1 A1, 2 A2, 3 A3, 4 A4, 5 A5)
    (0 A0, 1 A1, 2 A2, 3 A3, 4 A4, 5 A5, 6 A6)
    (0 A0, 1 A1, 2 A2, 3 A3, 4 A4, 5 A5, 6 A6, 7 A7)
}

impl<'a, T: Element, A: TensorArg<'a, T>, const N: usize> TensorArgs<'a, T> for [A; N] {
    type Handles = [A::Handle; N];
    fn register(self, tape: &mut Tape<'a, T>) -> AdResult<Self::Handles> {
        let mut err = None;
        let mut pos = 0;
        let hs = self.map(|a| {
            pos += 1;
            if err.is_some() {
                return None;
            }
            match a.register(tape, pos - 1) {
                Ok(h) => Some(h),
                Err(e) => {
                    err = Some(e);
                    None
                }
            }
        });
        if let Some(e) = err {
            return Err(e);
        }
        Ok(hs.map(|h| h.expect("registered without error")))
    }
}

/// Allocates the vector of handles.
impl<'a, T: Element, A: TensorArg<'a, T>> TensorArgs<'a, T> for Vec<A> {
    type Handles = Vec<A::Handle>;
    fn register(self, tape: &mut Tape<'a, T>) -> AdResult<Self::Handles> {
        self.into_iter()
            .enumerate()
            .map(|(i, a)| a.register(tape, i))
            .collect()
    }
}
