//! The native path: every operator of [`AutoShade`](crate::AutoShade) calls `shade-autodiff` directly with
//! the user's function value and the contexts as activities.
//!
//! | operator | core entry point |
//! |---|---|
//! | gradient (reverse) | `autodiff_with(ReverseWithPrimal, f, Active(1.0), (Duplicated(x, g), ctx...))` |
//! | gradient (forward) | `autodiff_with(Forward, f, BatchTangent::<8>, (BatchDuplicated(x, seeds), ctx...))` |
//! | derivative | `Tape::derivative` (forward, `Dual<f64>`) |
//! | second_derivative | `Tape::second_derivative` (forward over forward) |
//! | jacobian (two-argument) | `Tape::jacobian_reverse_into` / `Tape::jacobian_forward_into` |
//! | pushforward | `autodiff_with(ForwardWithPrimal, ..)` / `Tape::pushforward_into` |
//! | pullback | `autodiff_with(ReverseWithPrimal, f, Active(dy), ..)` / `Tape::pullback_into` |
//! | hessian, hvp | `Tape::<DualVec<f64, 8>>::hessian_batch_into` / `Tape::<Dual<f64>>::hvp_into` (forward over reverse) |
//! | batched pushforward, pullback, hvp (two-argument) | `Tape::pushforward_batch_into` (4 or 8 tangents per evaluation), `Tape::pullback_batch_into` (one recording), `Tape::hvp_batch_into` |
//! | gradient, jacobian, pushforward, pullback of a [`Compiled`](crate::Compiled) function | the generated derivative itself (`compiled.rs`) |
//!
//! `forms.rs` holds what depends on the function form (one helper trait per kind of
//! input, each implemented once per form with every bound the core's entry points
//! need, and the report spec); `impls.rs` the operator traits of `AutoShade<M>`, each
//! one line over a helper.

mod call;
mod compiled;
mod forms;
mod impls;
pub(crate) mod tensor;

pub use call::ShadeCall;
pub use compiled::Engine;
pub use forms::{NativeForm, NativeGradient, NativeHessian, NativeScalar, NativeVec, VecCall};

use crate::explain::{Report, Spec};
use crate::prep::Meta;
use bumpalo::Bump;
use shade_autodiff::scalar::{CHUNK, Dual, DualVec, Tape};

/// The prepared state of an `AutoShade` operator: the core's tapes and the scratch
/// buffers made at preparation.
#[derive(Debug, Default)]
pub struct ShadeState {
    pub(crate) tape: Tape<f64>,
    pub(crate) dtape: Tape<Dual<f64>>,
    /// Forward over reverse with 4 and with [`CHUNK`] directions (batched HVPs).
    pub(crate) hv4: Tape<DualVec<f64, 4>>,
    pub(crate) hv8: Tape<DualVec<f64, CHUNK>>,
    /// Whether a two-argument function's output length was checked (once, by the first
    /// call: the warm-up at preparation).
    pub(crate) probed: bool,
    /// Scratch shadows of the caches, one after the other.
    pub(crate) scratch: Vec<f64>,
    /// `CHUNK` seed buffers of length `n` (forward chunks), or one tangent.
    pub(crate) seeds: Vec<f64>,
    /// A gradient (reverse-mode pushforward, forward-mode pullback).
    pub(crate) tmp: Vec<f64>,
    /// Outputs of a two-argument function of a scalar, as dual numbers.
    pub(crate) duals: Vec<Dual<f64>>,
    /// Arena for contexts converted to `f64`.
    pub(crate) bump: Bump,
}

impl ShadeState {
    pub(crate) fn new(meta: &Meta) -> Self {
        ShadeState {
            scratch: vec![0.0; meta.ctx.cache_len()],
            ..ShadeState::default()
        }
    }

    /// Bytes reserved by the tapes, arenas and scratch buffers.
    pub(crate) fn reserved(&self) -> usize {
        self.tape.footprint_bytes()
            + self.dtape.footprint_bytes()
            + self.hv4.footprint_bytes()
            + self.hv8.footprint_bytes()
            + 8 * (self.scratch.capacity() + self.seeds.capacity() + self.tmp.capacity())
            + 16 * self.duals.capacity()
            + self.bump.allocated_bytes()
    }

    /// The report of `backend` for the preparation `meta`, given the operator's spec.
    pub(crate) fn report(&self, backend: &impl crate::Backend, meta: &Meta, spec: Spec) -> Report {
        let records = self
            .tape
            .len()
            .max(self.dtape.len())
            .max(self.hv4.len())
            .max(self.hv8.len());
        spec.report(
            backend,
            meta,
            (records > 0).then_some(records),
            self.reserved(),
        )
    }
}

/// Forward-mode chunks for `n` inputs.
pub(crate) fn chunks(n: usize) -> usize {
    n.div_ceil(CHUNK)
}
