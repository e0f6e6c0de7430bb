//! Training: [`TrainState`] (parameters, model state, optimiser state, RNG, reusable
//! tape storage) and [`single_train_step`], which takes a backend marker from
//! shade-interface, like Lux's `single_train_step`.
//!
//! - [`AutoShade`]: the native core, called directly ([`tensor::gradient`] with the
//!   parameters as `Duplicated` arguments and the graph as constants).
//! - [`AutoFiniteDiff`]: central differences over every parameter scalar, for
//!   checking small models end to end (two forward passes per scalar).
//!
//! ```
//! use shade_gnn::{GraphCtx, Features, Inputs};
//! use shade_gnn::layers::{Chain, GCNConv, Activation};
//! use shade_gnn::loss::{cross_entropy, NodeTargets};
//! use shade_gnn::optim::Optimiser;
//! use shade_gnn::train::{single_train_step, Data, TrainState};
//! use shade_interface::AutoShade;
//!
//! let ds = shade_graph::csbm(60, 2, 4, 6.0, 2.0, 0)?;
//! let ctx = GraphCtx::<f64>::new(&ds.graph);
//! let x = Features::dense(ds.features.mapv(f64::from));
//! let y = NodeTargets { labels: ds.labels.clone(), nodes: (0..60).collect() };
//! let model = Chain::new()
//!     .add("conv1", GCNConv::new(4, 8))
//!     .add("act", Activation::Relu)
//!     .add("conv2", GCNConv::new(8, 2));
//! let mut ts = TrainState::new(&model, Optimiser::adam(0.05), 0)?;
//! let data = Data { inputs: Inputs::new(&ctx, &x), target: &y };
//! let first = single_train_step(&AutoShade::REVERSE, &model, cross_entropy, &data, &mut ts)?;
//! let mut last = first;
//! for _ in 0..30 {
//!     last = single_train_step(&AutoShade::REVERSE, &model, cross_entropy, &data, &mut ts)?;
//! }
//! assert!(last < first);
//! # Ok::<(), shade_gnn::GnnError>(())
//! ```

use crate::ctx::{Float, GraphArena};
use crate::error::{GnnError, GnnResult};
use crate::layer::{Inputs, Layer, apply_in, forward_model, model_args};
use crate::optim::{OptState, Optimiser};
use crate::params::{Params, State};
use ndarray::ArrayD;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use shade_autodiff::AdResult;
use shade_autodiff::tensor::{self, Tape, TapeBuffers, Var};
use shade_interface::{AutoFiniteDiff, AutoShade, Backend};

/// Everything that changes during training.
#[derive(Debug)]
pub struct TrainState<T: Float> {
    /// The parameters.
    pub params: Params<T>,
    /// The model state (e.g. BatchNorm running statistics).
    pub state: State<T>,
    /// The gradient of the last step.
    pub grads: Params<T>,
    /// The optimiser.
    pub opt: Optimiser,
    /// The optimiser's buffers.
    pub opt_state: OptState<T>,
    /// The random stream of dropout.
    pub rng: StdRng,
    /// Steps taken.
    pub step: u64,
    bufs: TapeBuffers<T>,
}

impl<T: Float> TrainState<T> {
    /// Initialises the model's parameters and state from `seed` and the optimiser's
    /// buffers. Errors if the optimiser's settings are invalid (`SHADE-E0404`).
    pub fn new<L: Layer<T> + ?Sized>(model: &L, opt: Optimiser, seed: u64) -> GnnResult<Self> {
        let mut rng = StdRng::seed_from_u64(seed);
        let (params, state) = model.init(&mut rng);
        Self::from_params(params, state, opt, rng)
    }

    /// A train state from given parameters and state (e.g. loaded from a file).
    pub fn from_params(
        params: Params<T>,
        state: State<T>,
        opt: Optimiser,
        rng: StdRng,
    ) -> GnnResult<Self> {
        opt.validate()?;
        Ok(TrainState {
            grads: params.zeros_like(),
            opt_state: opt.init(&params),
            params,
            state,
            opt,
            rng,
            step: 0,
            bufs: TapeBuffers::new(),
        })
    }

    /// Number of buffers the reusable tape storage holds (for tests of steady-state
    /// memory).
    pub fn pooled_buffers(&self) -> usize {
        self.bufs.pooled_buffers()
    }

    /// The model's output in evaluation mode (no dropout, running statistics).
    pub fn predict<L: Layer<T> + ?Sized>(
        &mut self,
        model: &L,
        inputs: &Inputs<'_, T>,
    ) -> GnnResult<ArrayD<T>> {
        // Evaluation draws nothing; a fixed stream keeps the training stream untouched.
        // The step's tape buffers are reused.
        let mut rng = StdRng::seed_from_u64(0);
        let (p, st) = (&self.params, &self.state);
        apply_in(&mut self.bufs, model, inputs, p, st, false, &mut rng).map(|r| r.0)
    }
}

/// The data of a step: model inputs and targets.
#[derive(Debug)]
pub struct Data<'d, T: Float, D: ?Sized> {
    /// Graph, features, edge features.
    pub inputs: Inputs<'d, T>,
    /// What the loss compares the output with.
    pub target: &'d D,
}

/// A backend for [`single_train_step`]: computes the loss and its gradient with
/// respect to every parameter (into `ts.grads`), in training mode.
pub trait TrainBackend: Backend {
    /// Returns the loss and writes the gradient into `ts.grads` (overwriting it).
    fn loss_and_gradient<T, L, D, F>(
        &self,
        model: &L,
        loss: &F,
        data: &Data<'_, T, D>,
        ts: &mut TrainState<T>,
    ) -> GnnResult<T>
    where
        T: Float,
        L: Layer<T> + ?Sized,
        D: ?Sized,
        F: for<'a> Fn(&mut Tape<'a, T>, Var, &'a D) -> AdResult<Var>;
}

impl TrainBackend for AutoShade {
    fn loss_and_gradient<T, L, D, F>(
        &self,
        model: &L,
        loss: &F,
        data: &Data<'_, T, D>,
        ts: &mut TrainState<T>,
    ) -> GnnResult<T>
    where
        T: Float,
        L: Layer<T> + ?Sized,
        D: ?Sized,
        F: for<'a> Fn(&mut Tape<'a, T>, Var, &'a D) -> AdResult<Var>,
    {
        ts.grads.fill_zero();
        let names = ts.params.names();
        let mut step_rng = step_stream(&mut ts.rng);
        let (state, rng) = (&mut ts.state, &mut step_rng);
        let arena = GraphArena::new();
        let inputs = &data.inputs.or_arena(&arena);
        let args = model_args(&ts.params, Some(&mut ts.grads), inputs, None, None);
        let v = tensor::gradient(
            &mut ts.bufs,
            |t, h: Vec<Var>| {
                let y = forward_model(t, model, names, &h, inputs, state, true, rng)?;
                loss(t, y, data.target)
            },
            args,
        )?;
        Ok(v)
    }
}

/// The random stream of one step: seeded from the train state's stream, so that every
/// backend sees the same dropout masks for the same train state.
fn step_stream(rng: &mut StdRng) -> StdRng {
    StdRng::seed_from_u64(rng.next_u64())
}

/// One loss evaluation in training mode with a given random stream and a copy of the
/// state (finite differences must not move the state).
fn eval_loss<T, L, D, F>(
    bufs: &mut TapeBuffers<T>,
    model: &L,
    loss: &F,
    data: &Data<'_, T, D>,
    params: &Params<T>,
    state: &mut State<T>,
    rng: &mut StdRng,
) -> GnnResult<T>
where
    T: Float,
    L: Layer<T> + ?Sized,
    D: ?Sized,
    F: for<'a> Fn(&mut Tape<'a, T>, Var, &'a D) -> AdResult<Var>,
{
    let names = params.names();
    let arena = GraphArena::new();
    let inputs = &data.inputs.or_arena(&arena);
    let args = model_args(params, None, inputs, None, None);
    let v = tensor::value(
        bufs,
        |t, h: Vec<Var>| {
            let y = forward_model(t, model, names, &h, inputs, state, true, rng)?;
            loss(t, y, data.target)
        },
        args,
    )?;
    Ok(v.iter().next().copied().unwrap_or_else(T::nan))
}

impl TrainBackend for AutoFiniteDiff {
    fn loss_and_gradient<T, L, D, F>(
        &self,
        model: &L,
        loss: &F,
        data: &Data<'_, T, D>,
        ts: &mut TrainState<T>,
    ) -> GnnResult<T>
    where
        T: Float,
        L: Layer<T> + ?Sized,
        D: ?Sized,
        F: for<'a> Fn(&mut Tape<'a, T>, Var, &'a D) -> AdResult<Var>,
    {
        self.validate()
            .map_err(|e| GnnError::setting("backend", self.name(), &e.to_string()))?;
        let rel = self.first_rel_step();
        let seed = ts.rng.next_u64(); // as `step_stream`: the same masks as the native path
        let mut p = ts.params.clone();
        for k in 0..p.len() {
            for j in 0..p.values()[k].len() {
                let v0 = p.values()[k].as_slice().expect("standard layout")[j];
                let x0 = v0.to_f64().unwrap_or(0.0);
                let h = rel * x0.abs().max(1.0) + self.abs_step;
                let mut at = |x: f64, p: &mut Params<T>| {
                    p.values_mut()[k].as_slice_mut().expect("standard layout")[j] = T::cst(x);
                    let mut st = ts.state.clone();
                    let mut rng = StdRng::seed_from_u64(seed);
                    eval_loss(&mut ts.bufs, model, loss, data, p, &mut st, &mut rng)
                        .map(|v| v.to_f64().unwrap_or(f64::NAN))
                };
                let d = match self.kind {
                    shade_interface::FdKind::Central => {
                        let up = at(x0 + h, &mut p)?;
                        let down = at(x0 - h, &mut p)?;
                        (up - down) / (2.0 * h)
                    }
                    shade_interface::FdKind::Forward => {
                        let up = at(x0 + h, &mut p)?;
                        let mid = at(x0, &mut p)?;
                        (up - mid) / h
                    }
                };
                p.values_mut()[k].as_slice_mut().expect("standard layout")[j] = v0;
                ts.grads.values_mut()[k]
                    .as_slice_mut()
                    .expect("standard layout")[j] = T::cst(d);
            }
        }
        // The step's own evaluation: the state moves on.
        eval_loss(
            &mut ts.bufs,
            model,
            loss,
            data,
            &ts.params,
            &mut ts.state,
            &mut StdRng::seed_from_u64(seed),
        )
    }
}

/// The loss in training mode and its gradient with respect to every parameter
/// (written into `ts.grads`, overwriting it), computed by `backend`; the model state
/// moves on as in one forward pass. This is [`single_train_step`] without the
/// optimiser update (a data-parallel step averages the gradients in between).
pub fn loss_and_gradient<T, B, L, D, F>(
    backend: &B,
    model: &L,
    loss: &F,
    data: &Data<'_, T, D>,
    ts: &mut TrainState<T>,
) -> GnnResult<T>
where
    T: Float,
    B: TrainBackend,
    L: Layer<T> + ?Sized,
    D: ?Sized,
    F: for<'a> Fn(&mut Tape<'a, T>, Var, &'a D) -> AdResult<Var>,
{
    backend.loss_and_gradient(model, loss, data, ts)
}

/// One training step: loss and gradient with `backend` (training mode), then one
/// optimiser update. Returns the loss before the update.
///
/// Errors: the data do not fit the graph (`SHADE-E0405`), an error of the model or the
/// loss (the core's codes), a non-finite loss or gradient (`SHADE-E0406`; the
/// parameters are left unchanged).
pub fn single_train_step<T, B, L, D, F>(
    backend: &B,
    model: &L,
    loss: F,
    data: &Data<'_, T, D>,
    ts: &mut TrainState<T>,
) -> GnnResult<T>
where
    T: Float,
    B: TrainBackend,
    L: Layer<T> + ?Sized,
    D: ?Sized,
    F: for<'a> Fn(&mut Tape<'a, T>, Var, &'a D) -> AdResult<Var>,
{
    data.inputs.validate()?;
    let v = loss_and_gradient(backend, model, &loss, data, ts)?;
    if !v.is_finite() {
        return Err(GnnError::NonFinite {
            what: "loss".into(),
            value: v.to_f64().unwrap_or(f64::NAN),
        });
    }
    ts.opt
        .step(&mut ts.params, &mut ts.grads, &mut ts.opt_state)?;
    ts.step += 1;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layers::{Activation, Chain, Dense, Dropout, GCNConv};
    use crate::loss::{NodeTargets, cross_entropy};
    use crate::testing::{random_features, random_graph};
    use crate::{Features, GraphCtx, apply};

    fn small() -> Chain<f64> {
        Chain::new()
            .add("conv1", GCNConv::new(3, 4))
            .add("act", Activation::Elu(1.0))
            .add("drop", Dropout::new(0.3))
            .add("out", Dense::new(4, 3))
    }

    #[test]
    fn native_and_finite_difference_backends_agree_end_to_end() {
        let g = random_graph(8, 16, 1);
        let ctx = GraphCtx::new(&g);
        let x = Features::dense(random_features(9, 3, 2));
        let y = NodeTargets {
            labels: (0..9).map(|i| i % 3).collect(),
            nodes: vec![0, 2, 3, 5, 8],
        };
        let data = Data {
            inputs: Inputs::new(&ctx, &x),
            target: &y,
        };
        let model = small();
        let opt = Optimiser::sgd_momentum(0.1, 0.9, true).weight_decay_for("conv1.", 0.01);
        let mut a = TrainState::new(&model, opt.clone(), 5).unwrap();
        let mut b = TrainState::new(&model, opt, 5).unwrap();
        for _ in 0..3 {
            let la = single_train_step(&AutoShade::REVERSE, &model, cross_entropy, &data, &mut a)
                .unwrap();
            let lb = single_train_step(
                &AutoFiniteDiff::CENTRAL,
                &model,
                cross_entropy,
                &data,
                &mut b,
            )
            .unwrap();
            // Same dropout masks, so the same loss; gradients within FD accuracy.
            assert!((la - lb).abs() < 1e-8, "{la} vs {lb}");
            for ((n, ga), gb) in a.grads.iter().zip(b.grads.values()) {
                for (u, v) in ga.iter().zip(gb.iter()) {
                    assert!((u - v).abs() < 1e-7 + 1e-5 * u.abs(), "{n}: {u} vs {v}");
                }
            }
        }
    }

    #[test]
    fn tape_storage_stays_bounded() {
        let g = random_graph(30, 80, 1);
        let ctx = GraphCtx::new(&g);
        let x = Features::dense(random_features(31, 3, 2));
        let y = NodeTargets {
            labels: (0..31).map(|i| i % 3).collect(),
            nodes: (0..31).collect(),
        };
        let data = Data {
            inputs: Inputs::new(&ctx, &x),
            target: &y,
        };
        let model = small();
        let mut ts = TrainState::new(&model, Optimiser::adam(0.01), 0).unwrap();
        let mut counts = Vec::new();
        for _ in 0..300 {
            single_train_step(&AutoShade::REVERSE, &model, cross_entropy, &data, &mut ts).unwrap();
            // An evaluation per step, as the training loops do, on the same storage.
            let p = ts.predict(&model, &data.inputs).unwrap();
            counts.push(ts.pooled_buffers());
            assert_eq!(p, ts.predict(&model, &data.inputs).unwrap());
        }
        // Custom-rule outputs return to the pool, which keeps no more buffers than one
        // step takes: the storage is constant from the second step on.
        assert!(counts[1..].iter().all(|&n| n == counts[1]), "{counts:?}");
        // The prediction on reused storage is `apply`'s.
        let mut rng = StdRng::seed_from_u64(0);
        let (want, _) =
            apply(&model, &data.inputs, &ts.params, &ts.state, false, &mut rng).unwrap();
        assert_eq!(ts.predict(&model, &data.inputs).unwrap(), want);
    }

    #[test]
    fn errors_are_coded() {
        let g = random_graph(4, 6, 1);
        let ctx = GraphCtx::new(&g);
        let model = small();
        let y = NodeTargets {
            labels: vec![0; 5],
            nodes: vec![0],
        };
        // Wrong number of feature rows.
        let x = Features::dense(random_features(3, 3, 2));
        let mut ts = TrainState::new(&model, Optimiser::adam(0.01), 0).unwrap();
        let data = Data {
            inputs: Inputs::new(&ctx, &x),
            target: &y,
        };
        let e = single_train_step(&AutoShade::REVERSE, &model, cross_entropy, &data, &mut ts)
            .unwrap_err();
        assert_eq!(e.code(), "SHADE-E0405", "{e}");
        // Wrong feature width: the core's shape error, parameters untouched.
        let x = Features::dense(random_features(5, 2, 2));
        let before = ts.params.clone();
        let data = Data {
            inputs: Inputs::new(&ctx, &x),
            target: &y,
        };
        let e = single_train_step(&AutoShade::REVERSE, &model, cross_entropy, &data, &mut ts)
            .unwrap_err();
        assert_eq!(e.code(), "SHADE-E0110", "{e}");
        assert!(e.to_string().contains("linear"), "{e}");
        assert_eq!(ts.params, before);
        // A label out of range.
        let x = Features::dense(random_features(5, 3, 2));
        let bad = NodeTargets {
            labels: vec![7; 5],
            nodes: vec![1],
        };
        let data = Data {
            inputs: Inputs::new(&ctx, &x),
            target: &bad,
        };
        let e = single_train_step(&AutoShade::REVERSE, &model, cross_entropy, &data, &mut ts)
            .unwrap_err();
        assert!(e.code().starts_with("SHADE-E01"), "{e}");
        // Invalid optimiser.
        assert_eq!(
            TrainState::new(&model, Optimiser::adam(0.0), 0)
                .unwrap_err()
                .code(),
            "SHADE-E0404"
        );
    }
}
