//! Graph neural networks on shade's AD core: message passing, layers, parameters and
//! state, optimisers, losses and training.
//!
//! The design follows Lux: a layer value holds only its configuration; parameters and
//! state live in explicit, named stores ([`Params`], [`State`]) that
//! [`Layer::init`] creates from a seeded RNG; a forward call takes the graph, the
//! input, the parameters and the state. A graph enters a program only as constants,
//! prepared once in a [`GraphCtx`] (normalised adjacency, index arrays, aggregation
//! matrices), never computed inside the differentiated closure; the parameters enter
//! the AD core as `Duplicated` arguments.
//!
//! - [`Layer`], [`Input`] (dense value or constant sparse matrix), [`Env`] (graph, edge
//!   features, training flag, RNG), [`apply`] (Lux's `apply`).
//! - [`message`]: `apply_edges`, `aggregate`, `propagate` (fused sparse × dense for
//!   sum/mean of copied messages), attention aggregation.
//! - [`layers`]: `Dense`, `Chain`, activations, `Dropout`, `GCNConv`, ...
//! - [`init`]: Glorot / Kaiming initialisers. `testing` (feature `testing`): random
//!   graphs, gradient checks against finite differences, dense references.
//! - [`optim`]: SGD (momentum, Nesterov), Adam, AdamW, per-parameter weight decay,
//!   gradient-norm clipping. [`loss`]: cross-entropy / NLL on a node set, MSE, BCE
//!   with logits, accuracy, ROC AUC.
//! - [`train`]: `TrainState` and `single_train_step` with a backend marker
//!   (`AutoShade`, native; `AutoFiniteDiff`, for checking), returning the loss, the
//!   gradients and the new state (`StepOutput`, as Lux); `value_and_gradient(backend,
//!   model, loss, data, params, state, mode)` without an optimiser, in training or
//!   evaluation mode (`Mode::Eval`: no dropout).
//! - [`save_safetensors`] / [`load_safetensors`]: parameters in the safetensors format
//!   (PyTorch, candle and burn read it); [`save_model_safetensors`] /
//!   [`load_model_safetensors`]: parameters and state as one PyTorch `state_dict`.
//! - [`minibatch`]: mini-batch training over shade-graph's `NeighborLoader` (seed
//!   batches of sampled subgraphs, loss on the seeds) and `DataLoader` (lists of
//!   graphs), prepared on the loaders' worker threads.
//! - [`distributed`]: data-parallel training (gradients averaged over ranks before
//!   the optimiser step; checkpoints from rank 0; failures named by rank), over MPI
//!   (feature `mpi`) or ranks as threads.
//! - [`models`]: the two-layer GCN / GAT / SAGE / GIN node classifiers and the
//!   full-batch training protocol with validation-based model selection.
//! - [`report`]: progress line and SVG training curve.
//! - [`pool`]: global add/mean/max pooling over a batch, attention pooling, TopK
//!   pooling (returns the pooled graph) and Set2Set.
//!
//! Errors are [`GnnError`]s with codes `SHADE-E04xx` (errors of the core and of the
//! graph crate pass through with their own codes). An error raised inside a layer
//! names the layer's path in the model ([`GnnError::InLayer`], e.g. ``conv1: input
//! has 1433 features per node but `conv1.lin.weight` expects 16``); [`ErrorCarry`]
//! carries them out of a tensor program, whose closure returns the core's result type.
//!
//! # Adding a layer
//!
//! A layer is a configuration struct implementing [`Layer`] in its own file
//! `src/layers/<name>.rs`, re-exported from `src/layers.rs`:
//!
//! 1. **`init`** returns the parameters under local, PyTorch/PyG-style names and
//!    layouts (`lin.weight` `[out, in]`, `bias` `[out]`), drawn with [`init`]'s
//!    initialisers from the given RNG, and the initial state (usually empty). A
//!    [`Chain`](layers::Chain) prefixes them with the layer's name.
//! 2. **`forward`** records the computation on the tape: read parameters with
//!    `p.get("bias")?` (or `p.param("lin.weight")?` for a weight that
//!    [`Input::linear`] multiplies, so that its shape errors name it), the graph
//!    with `env.graph("MyConv")?`, edge sets with
//!    `ctx.edges()` / `ctx.edges_with_self_loops()`; transform with
//!    [`Input::linear`] (which also handles sparse input) and aggregate with
//!    [`message`]'s functions. Return coded errors ([`GnnResult`]: `?` on a tape
//!    operation wraps the core's error), never panic; call a sublayer through
//!    [`forward_sublayer`], so that its errors name its path in the model.
//!    Nothing structural (self-loops, degrees, normalisation) may be computed
//!    here: add a cached builder to [`GraphCtx`] / [`EdgeIndex`] instead.
//!    Edge features arrive as `env.edge_attr` (`[E, D]`, graph edge order); a batch
//!    of graphs is described by `ctx.batch()` / `ctx.num_graphs()` (pooling). Every
//!    derivative rule lives in the core's tensor layer (`t.add` of a bias row,
//!    `t.relu`, `t.group_dot` for per-head scores, `t.coo_spmm` for attention
//!    aggregation, `t.sym_norm_values` for GCN normalisation over edge weights on
//!    the tape); a layer that needs a new differentiable operation adds it there,
//!    with its three rules and a gradient check.
//! 3. **`is_graph_layer`** returns `true` if the layer reads the graph.
//! 4. **Tests** in the same file: a proptest gradient check over random small graphs
//!    with isolated nodes, self-loops and multi-edges
//!    (`testing::arb_graph_and_features`, `testing::check_layer_gradient`), and
//!    the output against an independent dense computation written from the layer's
//!    definition with plain loops (`testing::layer_output`,
//!    `testing::dense_adjacency`, `testing::assert_close`). Use
//!    `testing::proptest_config(cases)` so that `PROPTEST_CASES` can raise the count;
//!    `testing::GradCheck` checks edge features and training mode too.
//!
//! ```
//! use rand::rngs::StdRng;
//! use shade_autodiff::tensor::{Tape, Var};
//! use shade_gnn::{init, Env, Float, GnnResult, Input, Layer, ParamVars, Params, State, StateScope};
//! use shade_gnn::message::{propagate, Aggr, Message};
//!
//! /// `x'_i = W · max_{j -> i} x_j` (a toy layer).
//! struct MaxConv { inp: usize, out: usize }
//!
//! impl<T: Float> Layer<T> for MaxConv {
//!     fn name(&self) -> &'static str { "MaxConv" }
//!     fn init(&self, rng: &mut StdRng) -> (Params<T>, State<T>) {
//!         let w = init::glorot_uniform(rng, &[self.out, self.inp], self.inp, self.out);
//!         (Params::new().with("weight", w), State::new())
//!     }
//!     fn forward<'a>(&self, t: &mut Tape<'a, T>, env: &mut Env<'a, '_, T>, x: Input<'a, T>,
//!                    p: ParamVars<'_>, _st: StateScope<'_, T>) -> GnnResult<Var> {
//!         let g = env.graph("MaxConv")?;
//!         let x = x.dense(t)?;
//!         let m = propagate(t, g.edges(), x, Message::CopySrc, Aggr::Max)?;
//!         Input::Dense(m).linear(t, p.param("weight")?)
//!     }
//!     fn is_graph_layer(&self) -> bool { true }
//! }
//!
//! let g = shade_graph::Graph::try_new(3, vec![0, 1], vec![1, 2])?;
//! let x = ndarray::array![[1.0, -1.0], [2.0, 0.5], [0.0, 3.0]];
//! let layer = MaxConv { inp: 2, out: 3 };
//! let ctx = shade_gnn::GraphCtx::<f64>::new(&g);
//! let feats = shade_gnn::Features::dense(x.clone());
//! let mut rng = rand::SeedableRng::seed_from_u64(0);
//! let (p, st) = layer.init(&mut rng);
//! let (y, _) = shade_gnn::apply(&layer, &shade_gnn::Inputs::new(&ctx, &feats), &p, &st, false, &mut rng)?;
//! // Node 0 has no incoming edge; node 2 receives node 1's row: W · [2, 0.5].
//! let w = p.get("weight").unwrap();
//! assert_eq!(y[[0, 0]], 0.0);
//! assert!((y[[2, 1]] - (2.0 * w[[1, 0]] + 0.5 * w[[1, 1]])).abs() < 1e-12);
//! // With the `testing` feature: the gradient against finite differences.
//! # #[cfg(feature = "testing")]
//! shade_gnn::testing::check_layer_gradient(&layer, Some(&g), &x).unwrap();
//! # Ok::<(), shade_gnn::GnnError>(())
//! ```

mod checked;
mod ctx;
pub mod distributed;
mod error;
pub mod init;
mod layer;
pub mod layers;
pub mod loss;
pub mod message;
pub mod minibatch;
pub mod models;
pub mod optim;
mod params;
pub mod pool;
pub mod report;
mod safetensors;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod train;

pub use checked::Checked;
pub use ctx::{EdgeIndex, Float, GraphArena, GraphCtx, NormEdgeList, ScaledLaplacian};
pub use error::{GnnError, GnnResult, GnnWarning};
pub use layer::{
    Arg, Env, ErrorCarry, Features, Input, Inputs, Layer, apply, forward_model, forward_sublayer,
    model_args,
};
pub use params::{Param, ParamVars, Params, State, StateScope, Store};
pub use safetensors::{
    from_safetensors_bytes, load_model_safetensors, load_safetensors, model_from_safetensors_bytes,
    model_to_safetensors_bytes, save_model_safetensors, save_safetensors, to_safetensors_bytes,
};

// Public dependencies whose types appear in this crate's API, re-exported so that one
// dependency is enough (versions: README.md, "Re-exported dependencies").
/// The array crate of parameters, features and outputs.
pub use ndarray;
/// The RNG crate: [`Layer::init`] takes a `rand::rngs::StdRng`.
pub use rand;
/// The AD core: the tensor layer's `Tape` and `Var` that layers and losses record on.
pub use shade_autodiff;
/// Graphs, generators, readers and splits ([`GraphCtx::new`] takes a `shade_graph::Graph`).
pub use shade_graph;
/// The differentiation interface: the backend markers that
/// [`train::single_train_step`] takes (`AutoShade`, `AutoFiniteDiff`).
pub use shade_interface;
/// The sparse-matrix crate: [`Features::sparse_from_f32`] takes an `sprs::CsMat`.
pub use sprs;
