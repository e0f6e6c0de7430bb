//! [`ShadeCall`]: a tuple of contexts handed to the core's `autodiff` entry point, the
//! differentiated argument first, each context as its activity (`Constant` → `Const`,
//! `Cache` → `Duplicated` with a scratch shadow). No closure, no packing.

use crate::context::ShadeContext;
use shade_autodiff::scalar::{
    BatchTangent, CHUNK, Dual, DualVec, ForwardArgs, ReverseArgs, ScalarFn, Tangent, Tape,
    autodiff_with,
};
use shade_autodiff::{
    Active, AdResult, BatchDuplicated, Duplicated, Forward, ForwardWithPrimal, ReverseWithPrimal,
};

/// Contexts that can follow a slice argument `x` in a call of the core's `autodiff`.
///
/// Implemented for tuples of zero to three [`Constant`](crate::Constant) /
/// [`Cache`](crate::Cache) when the function's parameters accept the activities.
#[diagnostic::on_unimplemented(
    message = "the contexts `{Self}` do not match the parameters of `{F}` after `x`",
    label = "one context per trailing parameter, in order",
    note = "a `&C` parameter takes `Constant(&c)`; a `&[S]` parameter takes `Constant(&slice)` or `Cache(&buf)`; a `&mut [S]` parameter takes `Cache(&mut buf)`; an `S` parameter takes `Constant(x)`"
)]
pub trait ShadeCall<F: ScalarFn> {
    /// `ReverseWithPrimal` with seed `seed`: accumulates `seed ∇f` into `dx`, returns `f(x)`.
    fn reverse(
        &self,
        tape: &mut Tape<f64>,
        f: &F,
        seed: f64,
        x: &[f64],
        dx: &mut [f64],
        scratch: &mut [f64],
    ) -> AdResult<f64>;
    /// `ForwardWithPrimal` with tangent `t`: returns `(∇f·t, f(x))`.
    fn forward(
        &self,
        tape: &mut Tape<f64>,
        f: &F,
        x: &[f64],
        t: &mut [f64],
        scratch: &mut [f64],
    ) -> AdResult<(f64, f64)>;
    /// `Forward` with [`CHUNK`] tangents at once: returns `∇f·tᵢ`.
    fn forward_batch(
        &self,
        tape: &mut Tape<f64>,
        f: &F,
        x: &[f64],
        ts: [&mut [f64]; CHUNK],
    ) -> AdResult<[f64; CHUNK]>;
}

macro_rules! shade_call {
    ($($c:ident $s:ident $i:tt),*) => {
        impl<F: ScalarFn, $($c),*> ShadeCall<F> for ($($c,)*)
        where
            $($c: for<'s> ShadeContext<'s>,)*
            for<'s> (Duplicated<'s, [f64]>, $(<$c as ShadeContext<'s>>::Rev,)*): ReverseArgs<F::Kinds, f64>,
            for<'s> (Duplicated<'s, [f64]>, $(<$c as ShadeContext<'s>>::Fwd,)*): ForwardArgs<F::Kinds, Dual<f64>>,
            for<'s> (BatchDuplicated<'s, [f64], CHUNK>, $(<$c as ShadeContext<'s>>::Batch,)*): ForwardArgs<F::Kinds, DualVec<f64, CHUNK>>,
        {
            #[inline(always)]
            #[allow(unused_variables)]
            fn reverse(
                &self,
                tape: &mut Tape<f64>,
                f: &F,
                seed: f64,
                x: &[f64],
                dx: &mut [f64],
                scratch: &mut [f64],
            ) -> AdResult<f64> {
                scratch.fill(0.0);
                let rest = scratch;
                $(let ($s, rest) = rest.split_at_mut(self.$i.scratch_len());)*
                let _ = rest;
                let (_, y) = autodiff_with(
                    tape,
                    ReverseWithPrimal,
                    f,
                    Active(seed),
                    (Duplicated(x, dx), $(self.$i.rev($s),)*),
                )?;
                Ok(y)
            }

            #[inline(always)]
            #[allow(unused_variables)]
            fn forward(&self, tape: &mut Tape<f64>, f: &F, x: &[f64], t: &mut [f64], scratch: &mut [f64]) -> AdResult<(f64, f64)> {
                scratch.fill(0.0);
                let rest = scratch;
                $(let ($s, rest) = rest.split_at_mut(self.$i.scratch_len());)*
                let _ = rest;
                autodiff_with(tape, ForwardWithPrimal, f, Tangent, (Duplicated(x, t), $(self.$i.fwd($s),)*))
            }

            #[inline(always)]
            fn forward_batch(&self, tape: &mut Tape<f64>, f: &F, x: &[f64], ts: [&mut [f64]; CHUNK]) -> AdResult<[f64; CHUNK]> {
                autodiff_with(
                    tape,
                    Forward,
                    f,
                    BatchTangent::<CHUNK>,
                    (BatchDuplicated(x, ts), $(self.$i.batch(),)*),
                )
            }
        }
    };
}

shade_call!();
shade_call!(C0 s0 0);
shade_call!(C0 s0 0, C1 s1 1);
shade_call!(C0 s0 0, C1 s1 1, C2 s2 2);
