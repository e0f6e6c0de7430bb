//! Training: [`TrainState`] (parameters, model state, optimiser state, RNG, reusable
//! tape storage) and [`single_train_step`], which takes a backend marker from
//! shade-interface, like Lux's `single_train_step`.
//!
//! The step goes through the interface: [`loss_and_gradient`] hands the model and the
//! loss to a tensor operator of shade-interface ([`Workspace::value_and_gradient_into`])
//! as one program whose differentiated argument is the parameter store (one argument,
//! every array `Duplicated`) and whose contexts are borrowed (the inputs with their
//! graph, the targets, the features). Any tensor backend of the interface trains:
//!
//! - `AutoShade::REVERSE`: the native core, called directly (the core's
//!   `tensor::gradient` with the parameters as `Duplicated` arguments and the graph as
//!   constants); `AutoShade::FORWARD` runs one forward pass per parameter scalar.
//! - [`AutoFiniteDiff`](shade_interface::AutoFiniteDiff): differences over every
//!   parameter scalar, for checking small models end to end (two forward passes per
//!   scalar, central).
//!
//! Every evaluation of the program starts from the step's model state and the step's
//! random stream, so every backend sees the same dropout masks and the state moves on
//! once (from the last evaluation, at the parameters themselves).
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
//! // The loss, the gradients and the train state after the update, as Lux returns them.
//! let (loss0, step) = (first.loss, first.state.step);
//! assert_eq!(step, 1);
//! assert!(first.grads.values().iter().any(|g| g.iter().any(|v| *v != 0.0)));
//! let mut last = loss0;
//! for _ in 0..30 {
//!     last = single_train_step(&AutoShade::REVERSE, &model, cross_entropy, &data, &mut ts)?.loss;
//! }
//! assert!(last < loss0);
//! # Ok::<(), shade_gnn::GnnError>(())
//! ```

use crate::ctx::{Float, GraphArena};
use crate::error::{GnnError, GnnResult};
use crate::layer::{
    Env, ErrorCarry, Features, Input, Inputs, Layer, apply_in, forward_sublayer, in_user_terms,
};
use crate::optim::{OptState, Optimiser};
use crate::params::{ParamVars, Params, State, StateScope};
use ndarray::ArrayD;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use shade_autodiff::tensor::{Tape, Var};
use shade_autodiff::{AdError, AdResult};
use shade_interface::tensor::{TensorBackend, Workspace};
use shade_interface::{Backend, Constant, InterfaceError};

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
    /// The interface's storage of the step's gradient (tape buffers, perturbed
    /// copies), reused by every step and by [`TrainState::predict`].
    work: Workspace<T, [ArrayD<T>]>,
}

impl<T: Float> TrainState<T> {
    /// Initialises the model's parameters and state from `seed` and the optimiser's
    /// buffers. Errors if the optimiser's settings are invalid (`SHADE-E0404`).
    ///
    /// A model whose parameters would share a name (two layers of a container under
    /// one name) is refused with `SHADE-E0411`.
    pub fn new<L: Layer<T> + ?Sized>(model: &L, opt: Optimiser, seed: u64) -> GnnResult<Self> {
        let mut rng = StdRng::seed_from_u64(seed);
        let (params, state) = model.init(&mut rng);
        Self::from_params(params, state, opt, rng)
    }

    /// A train state from given parameters and state (e.g. loaded from a file).
    ///
    /// Errors: invalid optimiser settings (`SHADE-E0404`), two parameters of one name
    /// (`SHADE-E0411`).
    pub fn from_params(
        params: Params<T>,
        state: State<T>,
        opt: Optimiser,
        rng: StdRng,
    ) -> GnnResult<Self> {
        opt.validate()?;
        if let Some(name) = params.first_duplicate() {
            return Err(GnnError::DuplicateName {
                what: "parameters",
                name: name.to_string(),
            });
        }
        Ok(TrainState {
            grads: params.zeros_like(),
            opt_state: opt.init(&params),
            params,
            state,
            opt,
            rng,
            step: 0,
            work: Workspace::new(),
        })
    }

    /// Replaces the parameters with `params` (e.g. a checkpoint), which must have the
    /// model's names and shapes (in any order: they are put in the model's). The
    /// optimiser's buffers are kept.
    ///
    /// Errors: `SHADE-E0412` listing the names missing and the names the model does
    /// not have; `SHADE-E0402` for a parameter of another shape. The train state is
    /// unchanged on error.
    pub fn load_params(&mut self, params: Params<T>) -> GnnResult<()> {
        check_conforms("the loaded parameters", &params, &self.grads)?;
        self.params = reorder(params, &self.grads);
        Ok(())
    }

    /// Turns anomaly mode on or off for the steps (and predictions) of this train
    /// state: the first operation whose result or adjoint is NaN or infinite stops the
    /// step with `SHADE-E0170` / `SHADE-E0171`, naming the operation and its line in
    /// the model (the core's `TapeBuffers::set_anomaly`). Off by default.
    pub fn set_anomaly(&mut self, on: bool) {
        self.work.buffers_mut().set_anomaly(on);
    }

    /// Whether anomaly mode is on.
    pub fn anomaly(&self) -> bool {
        self.work.buffers().anomaly()
    }

    /// Checks that the parameters still fit the gradients and the optimiser's buffers
    /// (the public fields may have been replaced): same names and shapes. Parameters
    /// with the right names in another order are put back in the model's order.
    fn check_stores(&mut self) -> GnnResult<()> {
        if self.params.names() != self.grads.names() {
            check_conforms("the parameters", &self.params, &self.grads)?;
            self.params = reorder(std::mem::take(&mut self.params), &self.grads);
        }
        for ((name, p), g) in self.params.iter().zip(self.grads.values()) {
            if p.shape() != g.shape() {
                return Err(GnnError::ParamShape {
                    name: name.to_string(),
                    expected: g.shape().to_vec(),
                    found: p.shape().to_vec(),
                });
            }
        }
        Ok(())
    }

    /// Number of buffers the reusable tape storage holds (for tests of steady-state
    /// memory).
    pub fn pooled_buffers(&self) -> usize {
        self.work.buffers().pooled_buffers()
    }

    /// What the last step's gradient ran: the backend, native or generic path, the
    /// engine's entry point (shade-interface's report), if a step was taken.
    pub fn explain(&self) -> Option<shade_interface::Report> {
        self.work.explain()
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
        apply_in(
            self.work.buffers_mut(),
            model,
            inputs,
            p,
            st,
            false,
            &mut rng,
        )
        .map(|r| r.0)
    }
}

/// Checks that `store` has exactly `reference`'s names and shapes, in any order
/// (`SHADE-E0412` listing the differences, `SHADE-E0402` for a shape).
fn check_conforms<T: Float>(what: &str, store: &Params<T>, reference: &Params<T>) -> GnnResult<()> {
    let (missing, unexpected) = crate::optim::differences(reference.names(), store.names());
    if !missing.is_empty() || !unexpected.is_empty() || store.len() != reference.len() {
        return Err(GnnError::StoreMismatch {
            what: what.into(),
            missing,
            unexpected,
        });
    }
    for (name, r) in reference.iter() {
        let found = store
            .get(name)
            .map(|a| a.shape().to_vec())
            .unwrap_or_default();
        if found != r.shape() {
            return Err(GnnError::ParamShape {
                name: name.to_string(),
                expected: r.shape().to_vec(),
                found,
            });
        }
    }
    Ok(())
}

/// `store` (checked by [`check_conforms`]) in `reference`'s order.
fn reorder<T: Float>(mut store: Params<T>, reference: &Params<T>) -> Params<T> {
    let mut out = Params::new();
    for name in reference.names() {
        if let Some(i) = store.position(name) {
            let (n, v) = store.swap_remove(i);
            out.push(n, v);
        }
    }
    out
}

/// The data of a step: model inputs and targets.
#[derive(Debug)]
pub struct Data<'d, T: Float, D: ?Sized> {
    /// Graph, features, edge features.
    pub inputs: Inputs<'d, T>,
    /// What the loss compares the output with.
    pub target: &'d D,
}

/// Whether a forward pass trains (dropout drawn from a stream seeded by `seed`, model
/// state such as BatchNorm's running statistics updated) or evaluates (no dropout,
/// running statistics used, state unchanged).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Training mode, dropout masks drawn from a stream seeded by `seed`.
    Train {
        /// The seed of the dropout stream (every evaluation of the program uses it, so
        /// every backend sees the same masks).
        seed: u64,
    },
    /// Evaluation mode: no dropout, running statistics.
    Eval,
}

/// What [`single_train_step`] returns, as Lux's `single_train_step` does: the loss,
/// the gradients, and the train state after the update.
#[derive(Debug)]
pub struct StepOutput<'s, T: Float> {
    /// The loss before the update.
    pub loss: T,
    /// The gradient of the loss at the parameters before the update.
    pub grads: &'s Params<T>,
    /// The train state after the update (parameters, model state, optimiser state,
    /// step count).
    pub state: &'s TrainState<T>,
}

/// What [`value_and_gradient`] returns.
#[derive(Debug, Clone)]
pub struct Gradient<T: Float> {
    /// The loss.
    pub loss: T,
    /// Its gradient with respect to every parameter.
    pub grads: Params<T>,
    /// The model state after the forward pass (moved on in training mode, unchanged in
    /// evaluation mode).
    pub state: State<T>,
}

/// The loss and its gradient with respect to every parameter, without an optimiser
/// (Lux's `compute_gradients`), in training or evaluation mode ([`Mode::Eval`]: no
/// dropout, the gradient of the loss the model is evaluated with).
///
/// Runs through shade-interface's tensor operators as [`single_train_step`] does; the
/// storage is made for this call (a [`TrainState`] keeps it between steps).
///
/// ```
/// use shade_gnn::layers::{Activation, Chain, Dropout, GCNConv};
/// use shade_gnn::loss::{NodeTargets, cross_entropy};
/// use shade_gnn::train::{Data, Mode, value_and_gradient};
/// use shade_gnn::{Features, GraphCtx, Inputs, Layer};
/// use shade_interface::{AutoFiniteDiff, AutoShade};
///
/// let ds = shade_graph::csbm(30, 2, 4, 6.0, 2.0, 0)?;
/// let ctx = GraphCtx::<f64>::new(&ds.graph);
/// let x = Features::dense(ds.features.mapv(f64::from));
/// let y = NodeTargets { labels: ds.labels.clone(), nodes: (0..30).collect() };
/// let model = Chain::new()
///     .add("conv", GCNConv::new(4, 3))
///     .add("act", Activation::Tanh)
///     .add("drop", Dropout::new(0.5))
///     .add("out", GCNConv::new(3, 2));
/// let (params, state) = model.init(&mut <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(1));
/// let data = Data { inputs: Inputs::new(&ctx, &x), target: &y };
/// // Evaluation mode: no dropout, so central differences agree with the native gradient.
/// let g = value_and_gradient(&AutoShade::REVERSE, &model, cross_entropy, &data, &params, &state, Mode::Eval)?;
/// let fd = value_and_gradient(&AutoFiniteDiff::CENTRAL, &model, cross_entropy, &data, &params, &state, Mode::Eval)?;
/// assert!((g.loss - fd.loss).abs() < 1e-12);
/// for (a, b) in g.grads.values().iter().zip(fd.grads.values()) {
///     assert!(a.iter().zip(b.iter()).all(|(u, v)| (u - v).abs() < 1e-6));
/// }
/// # Ok::<(), shade_gnn::GnnError>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub fn value_and_gradient<T, B, L, D, F>(
    backend: &B,
    model: &L,
    loss: F,
    data: &Data<'_, T, D>,
    params: &Params<T>,
    state: &State<T>,
    mode: Mode,
) -> GnnResult<Gradient<T>>
where
    T: Float,
    B: TensorBackend,
    L: Layer<T> + ?Sized,
    D: ?Sized,
    F: for<'a> Fn(&mut Tape<'a, T>, Var, &'a D) -> AdResult<Var>,
{
    data.inputs.validate()?;
    let mut out = Gradient {
        loss: T::zero(),
        grads: params.zeros_like(),
        state: state.clone(),
    };
    let mut work = Workspace::new();
    let at = Step {
        params,
        grads: &mut out.grads,
        state: &mut out.state,
        work: &mut work,
    };
    out.loss = gradient_at(backend, model, &loss, data, at, mode)?;
    Ok(out)
}

/// The loss in training mode and its gradient with respect to every parameter (written
/// into `ts.grads`, overwriting it), computed by `backend` through shade-interface's
/// tensor operators; the model state moves on as in one forward pass. This is
/// [`single_train_step`] without the optimiser update.
///
/// Errors as [`single_train_step`]'s; an invalid backend setting (a finite-difference
/// step that is not positive) is `SHADE-E0404`.
pub fn loss_and_gradient<T, B, L, D, F>(
    backend: &B,
    model: &L,
    loss: &F,
    data: &Data<'_, T, D>,
    ts: &mut TrainState<T>,
) -> GnnResult<T>
where
    T: Float,
    B: TensorBackend,
    L: Layer<T> + ?Sized,
    D: ?Sized,
    F: for<'a> Fn(&mut Tape<'a, T>, Var, &'a D) -> AdResult<Var>,
{
    ts.check_stores()?;
    // The step's random stream, seeded from the train state's stream: every backend
    // (and every evaluation of a finite-difference backend) sees the same masks.
    let seed = ts.rng.next_u64();
    let TrainState {
        params,
        grads,
        state,
        work,
        ..
    } = ts;
    let at = Step {
        params,
        grads,
        state,
        work,
    };
    gradient_at(backend, model, loss, data, at, Mode::Train { seed })
}

/// Where a gradient is taken and where it goes.
struct Step<'s, T: Float> {
    params: &'s Params<T>,
    grads: &'s mut Params<T>,
    state: &'s mut State<T>,
    work: &'s mut Workspace<T, [ArrayD<T>]>,
}

/// The loss and its gradient at `at.params` in `mode`, through the interface.
fn gradient_at<T, B, L, D, F>(
    backend: &B,
    model: &L,
    loss: &F,
    data: &Data<'_, T, D>,
    at: Step<'_, T>,
    mode: Mode,
) -> GnnResult<T>
where
    T: Float,
    B: TensorBackend,
    L: Layer<T> + ?Sized,
    D: ?Sized,
    F: for<'a> Fn(&mut Tape<'a, T>, Var, &'a D) -> AdResult<Var>,
{
    let (training, seed) = match mode {
        Mode::Train { seed } => (true, seed),
        Mode::Eval => (false, 0),
    };
    let arena = GraphArena::new();
    let inputs = data.inputs.or_arena(&arena);
    let dense_x = match inputs.x {
        Features::Dense(x) => Some(&**x),
        Features::Sparse(_) => None,
    };
    let ctx = (
        Constant(&inputs),
        Constant(data.target),
        Constant(dense_x),
        Constant(inputs.edge_attr),
    );
    let Step {
        params,
        grads,
        state,
        work,
    } = at;
    let names = params.names();
    let start = state.clone();
    let carry = ErrorCarry::new();
    let r = work.value_and_gradient_into(
        |t, (p, &(inputs, target, x, edge_attr))| {
            state.clone_from(&start);
            let mut rng = StdRng::seed_from_u64(seed);
            let x = match (inputs.x, x) {
                (Features::Sparse(s), _) => Input::Sparse(s),
                (Features::Dense(_), Some(x)) => Input::Dense(x),
                (Features::Dense(_), None) => {
                    return Err(AdError::InvalidArgument {
                        op: "single_train_step",
                        what: "dense features without their tape value".into(),
                    });
                }
            };
            let mut env = Env {
                graph: inputs.graph,
                edge_attr,
                training,
                rng: &mut rng,
                arena: inputs.arena,
            };
            let y = carry.lift(forward_sublayer(
                model,
                t,
                &mut env,
                x,
                ParamVars::new(names, &p),
                StateScope::new(state),
            ))?;
            loss(t, y, target)
        },
        backend,
        params.values(),
        ctx,
        grads.values_mut(),
    );
    match r {
        Ok(v) => Ok(v),
        // A GNN error carried out of the program comes back as it was raised.
        Err(InterfaceError::Core(e)) => carry
            .land(Err(e))
            .map_err(|e| in_user_terms(model, params, e)),
        Err(e) => Err(interface_error(backend, e)),
    }
}

/// An error of the interface in the GNN crate's terms: the core's errors keep their
/// codes; a backend setting is a setting of the step.
fn interface_error<B: Backend>(backend: &B, e: InterfaceError) -> GnnError {
    match e {
        InterfaceError::Core(e) => GnnError::Ad(e),
        InterfaceError::ShapeMismatch {
            argument,
            expected,
            found,
            ..
        } => GnnError::DataMismatch {
            what: format!("the parameter store and its {argument}"),
            expected: format!("{expected:?}"),
            found: format!("{found:?}"),
        },
        e => GnnError::setting("backend", backend.name(), &e.to_string()),
    }
}

/// One training step: loss and gradient with `backend` (training mode), then one
/// optimiser update. Returns the loss before the update, the gradients and the train
/// state after the update ([`StepOutput`]), as Lux's `single_train_step`.
///
/// Errors: the data do not fit the graph (`SHADE-E0405`), an error of the model or the
/// loss (the core's codes), a non-finite loss or gradient (`SHADE-E0406`; the
/// parameters are left unchanged).
pub fn single_train_step<'s, T, B, L, D, F>(
    backend: &B,
    model: &L,
    loss: F,
    data: &Data<'_, T, D>,
    ts: &'s mut TrainState<T>,
) -> GnnResult<StepOutput<'s, T>>
where
    T: Float,
    B: TensorBackend,
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
    Ok(StepOutput {
        loss: v,
        grads: &ts.grads,
        state: ts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layers::{Activation, Chain, Dense, Dropout, GCNConv};
    use crate::loss::{NodeTargets, cross_entropy};
    use crate::testing::{random_features, random_graph};
    use crate::{Features, GraphCtx, apply};
    use shade_interface::{AutoFiniteDiff, AutoShade};

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
                .unwrap()
                .loss;
            let lb = single_train_step(
                &AutoFiniteDiff::CENTRAL,
                &model,
                cross_entropy,
                &data,
                &mut b,
            )
            .unwrap()
            .loss;
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
    fn forward_mode_and_reports_go_through_the_interface() {
        let g = random_graph(6, 12, 3);
        let ctx = GraphCtx::new(&g);
        let x = Features::dense(random_features(7, 3, 4));
        let y = NodeTargets {
            labels: (0..7).map(|i| i % 3).collect(),
            nodes: vec![1, 2, 4, 6],
        };
        let data = Data {
            inputs: Inputs::new(&ctx, &x),
            target: &y,
        };
        let model = small();
        let opt = Optimiser::adam(0.01);
        let (mut a, mut b) = (
            TrainState::new(&model, opt.clone(), 9).unwrap(),
            TrainState::new(&model, opt, 9).unwrap(),
        );
        assert!(a.explain().is_none());
        for _ in 0..2 {
            let la = single_train_step(&AutoShade::REVERSE, &model, cross_entropy, &data, &mut a)
                .unwrap()
                .loss;
            let lb = single_train_step(&AutoShade::FORWARD, &model, cross_entropy, &data, &mut b)
                .unwrap()
                .loss;
            assert!((la - lb).abs() < 1e-12, "{la} vs {lb}");
            for ((n, ga), gb) in a.grads.iter().zip(b.grads.values()) {
                for (u, v) in ga.iter().zip(gb.iter()) {
                    assert!((u - v).abs() < 1e-10 * (1.0 + u.abs()), "{n}: {u} vs {v}");
                }
            }
        }
        let (ra, rb) = (a.explain().unwrap(), b.explain().unwrap());
        assert_eq!((ra.backend.as_str(), ra.calls), ("AutoShade(reverse)", 1));
        assert!(ra.detail.contains("tensor::gradient"), "{ra}");
        let n: usize = a.params.values().iter().map(|p| p.len()).sum();
        assert_eq!((rb.backend.as_str(), rb.calls), ("AutoShade(forward)", n));
        // A finite-difference step of the wrong sign is a setting of the step.
        let bad = AutoFiniteDiff {
            rel_step: Some(-1.0),
            ..AutoFiniteDiff::CENTRAL
        };
        let e = single_train_step(&bad, &model, cross_entropy, &data, &mut a).unwrap_err();
        assert_eq!(e.code(), "SHADE-E0404", "{e}");
    }

    fn data_of<'d>(
        ctx: &'d GraphCtx<f64>,
        x: &'d Features<f64>,
        y: &'d NodeTargets,
    ) -> Data<'d, f64, NodeTargets> {
        Data {
            inputs: Inputs::new(ctx, x),
            target: y,
        }
    }

    #[test]
    fn a_step_returns_the_loss_the_gradients_and_the_new_state() {
        let g = random_graph(8, 16, 4);
        let ctx = GraphCtx::new(&g);
        let x = Features::dense(random_features(9, 3, 1));
        let y = NodeTargets {
            labels: (0..9).map(|i| i % 3).collect(),
            nodes: vec![0, 1, 4, 7],
        };
        let data = data_of(&ctx, &x, &y);
        let model = small();
        let mut ts = TrainState::new(&model, Optimiser::sgd(0.1), 2).unwrap();
        // The gradient the step will take: the same parameters, state and dropout seed
        // (the step's seed is the next draw of the train state's stream).
        let seed = TrainState::new(&model, Optimiser::sgd(0.1), 2)
            .unwrap()
            .rng
            .next_u64();
        let want = value_and_gradient(
            &AutoShade::REVERSE,
            &model,
            cross_entropy,
            &data,
            &ts.params,
            &ts.state,
            Mode::Train { seed },
        )
        .unwrap();
        let before = ts.params.clone();
        let out =
            single_train_step(&AutoShade::REVERSE, &model, cross_entropy, &data, &mut ts).unwrap();
        assert_eq!(out.loss, want.loss);
        assert_eq!(out.grads, &want.grads);
        assert_eq!(out.state.step, 1);
        // Plain SGD: the new parameters are the old ones minus 0.1 times the gradients.
        for ((p, q), g) in out
            .state
            .params
            .values()
            .iter()
            .zip(before.values())
            .zip(want.grads.values())
        {
            for ((a, b), d) in p.iter().zip(q.iter()).zip(g.iter()) {
                assert!((a - (b - 0.1 * d)).abs() < 1e-15);
            }
        }
    }

    #[test]
    fn gradients_in_evaluation_mode_have_no_dropout() {
        let g = random_graph(8, 16, 1);
        let ctx = GraphCtx::new(&g);
        let x = Features::dense(random_features(9, 3, 2));
        let y = NodeTargets {
            labels: (0..9).map(|i| i % 3).collect(),
            nodes: vec![0, 2, 3, 5, 8],
        };
        let data = data_of(&ctx, &x, &y);
        let model = small();
        // The same model without its dropout layer: the same parameters.
        let plain = Chain::new()
            .add("conv1", GCNConv::new(3, 4))
            .add("act", Activation::Elu(1.0))
            .add("out", Dense::new(4, 3));
        let (params, state) = model.init(&mut StdRng::seed_from_u64(3));
        let native = |model: &Chain<f64>, mode| {
            value_and_gradient(
                &AutoShade::REVERSE,
                model,
                cross_entropy,
                &data,
                &params,
                &state,
                mode,
            )
            .unwrap()
        };
        let eval = native(&model, Mode::Eval);
        let no_dropout = native(&plain, Mode::Train { seed: 7 });
        assert_eq!(eval.loss, no_dropout.loss);
        assert_eq!(eval.grads, no_dropout.grads);
        let train = native(&model, Mode::Train { seed: 7 });
        assert_ne!(train.grads, eval.grads);
        // Central differences of the evaluation-mode loss agree.
        let fd = value_and_gradient(
            &AutoFiniteDiff::CENTRAL,
            &model,
            cross_entropy,
            &data,
            &params,
            &state,
            Mode::Eval,
        )
        .unwrap();
        for ((n, a), b) in eval.grads.iter().zip(fd.grads.values()) {
            for (u, v) in a.iter().zip(b.iter()) {
                assert!((u - v).abs() < 1e-7 + 1e-5 * u.abs(), "{n}: {u} vs {v}");
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
        // The pool keeps no more buffers than one step takes: the storage settles within
        // a few steps (as best fit sorts the buffers to the requests) and then stays.
        assert!(counts[5..].iter().all(|&n| n == counts[5]), "{counts:?}");
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
        assert_eq!(e.code(), "SHADE-E0410", "{e}");
        assert_eq!(
            e.to_string(),
            "conv1: input has 2 features per node but `conv1.lin.weight` expects 3"
        );
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
