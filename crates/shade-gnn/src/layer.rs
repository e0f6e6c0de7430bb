//! The [`Layer`] trait (Lux-style explicit parameters and state), the input of a layer
//! ([`Input`]: a tracked dense value or a constant sparse matrix), the environment of a
//! forward call ([`Env`]), model inputs ([`Features`], [`Inputs`]) and [`apply`], the
//! forward pass outside any differentiation.

use crate::checked::Checked;
use crate::ctx::{Float, GraphArena, GraphCtx};
use crate::error::{GnnError, GnnResult};
use crate::params::{Param, ParamVars, Params, State, StateScope};
use ndarray::{Array2, ArrayD};
use rand::rngs::StdRng;
use shade_autodiff::tensor::{self, SparseMatrix, Tape, TapeBuffers, TensorArg, Var};
use shade_autodiff::{AdError, AdResult, Const, Duplicated};
use shade_graph::CsMat32;

/// The input of a layer: a dense value on the tape, or a constant sparse matrix (e.g.
/// bag-of-words node features, 98.7% zeros on Cora) that a layer multiplies with its
/// weight through the sparse × dense kernel.
#[derive(Clone, Copy, Debug)]
pub enum Input<'a, T> {
    /// A dense `[N, F]` value (tracked or constant).
    Dense(Var),
    /// A constant sparse `[N, F]` matrix.
    Sparse(&'a SparseMatrix<T>),
}

impl<T> From<Var> for Input<'_, T> {
    fn from(v: Var) -> Self {
        Input::Dense(v)
    }
}

impl<'a, T: Float> Input<'a, T> {
    /// `X · Wᵀ` for a weight `w` of PyTorch's layout `[out, in]`: one sparse × dense
    /// product for sparse input. Pass the weight as [`ParamVars::param`] gives it, so
    /// that a shape error names it.
    ///
    /// Errors with [`GnnError::InputShape`] (the input's width, the weight's name and
    /// its `in`) when the input width is not the weight's `in`.
    pub fn linear<'w>(self, t: &mut Tape<'a, T>, w: impl Into<Param<'w>>) -> GnnResult<Var> {
        self.affine(t, w, None)
    }

    /// `X · Wᵀ + b` (`b` of `out` values, or none): [`Input::linear`] with the bias
    /// written into the product's rows (the core's `Tape::linear` for dense input, the
    /// weight read through its strides; a sparse × dense product and a broadcast sum for
    /// sparse input).
    ///
    /// Errors as [`Input::linear`]; a bias of another length is the core's shape error.
    pub fn affine<'w>(
        self,
        t: &mut Tape<'a, T>,
        w: impl Into<Param<'w>>,
        b: Option<Var>,
    ) -> GnnResult<Var> {
        let w = w.into();
        let ws = t.shape(w.var)?;
        let rows_of = |t: &Tape<'a, T>| -> AdResult<Vec<usize>> {
            Ok(match self {
                Input::Dense(x) => t.shape(x)?.to_vec(),
                Input::Sparse(x) => vec![x.rows(), x.cols()],
            })
        };
        if ws.len() != 2 || self.width(t)? != Some(ws[1]) {
            let xs = rows_of(t)?;
            let found = match xs.as_slice() {
                [_, f] => format!("{f} features per node"),
                s => format!("shape {s:?} (a layer input is [nodes, features])"),
            };
            let expected = match *ws {
                [_, i] => i.to_string(),
                ref s => format!("a 2-D [out, in] weight, but it has shape {s:?}"),
            };
            return Err(GnnError::InputShape {
                what: "input".into(),
                found,
                param: w.name.map(str::to_string),
                expected,
            });
        }
        Ok(match self {
            Input::Dense(x) => t.linear(x, w.var, b)?,
            Input::Sparse(x) => {
                // `X · Wᵀ` with the weight read as it is stored (no transposed copy on
                // the tape).
                let y = t.spmm_t(x, w.var)?;
                match b {
                    Some(b) => t.add(y, b)?,
                    None => y,
                }
            }
        })
    }

    /// The width of a 2-D input (`None` for another rank).
    fn width(&self, t: &Tape<'a, T>) -> AdResult<Option<usize>> {
        Ok(match self {
            Input::Dense(x) => match t.shape(*x)? {
                [_, f] => Some(*f),
                _ => None,
            },
            Input::Sparse(x) => Some(x.cols()),
        })
    }

    /// The input as a dense value (a sparse matrix is copied into a dense constant;
    /// layers that can should use [`Input::linear`] first instead).
    pub fn dense(self, t: &mut Tape<'a, T>) -> AdResult<Var> {
        match self {
            Input::Dense(x) => Ok(x),
            Input::Sparse(x) => Ok(t.constant(&x.csr().to_dense())),
        }
    }

    /// Number of rows (nodes).
    pub fn rows(&self, t: &Tape<'a, T>) -> AdResult<usize> {
        match self {
            Input::Dense(x) => Ok(t.shape(*x)?.first().copied().unwrap_or(0)),
            Input::Sparse(x) => Ok(x.rows()),
        }
    }

    /// Number of columns (features).
    pub fn cols(&self, t: &Tape<'a, T>) -> AdResult<usize> {
        match self {
            Input::Dense(x) => Ok(t.shape(*x)?.get(1).copied().unwrap_or(1)),
            Input::Sparse(x) => Ok(x.cols()),
        }
    }
}

/// What a forward call sees besides its input and parameters.
#[derive(Debug)]
pub struct Env<'a, 'r, T: Float> {
    /// The prepared graph (absent for graph-free models such as an MLP decoder).
    pub graph: Option<&'a GraphCtx<T>>,
    /// Edge features `[E, D]` on the tape, in the graph's edge order, if the data have any.
    pub edge_attr: Option<Var>,
    /// Training mode (dropout active, BatchNorm uses and updates batch statistics).
    pub training: bool,
    /// The random source of dropout and the like.
    pub rng: &'r mut StdRng,
    /// Where graphs derived during the program (pooled graphs) are kept, if the caller
    /// gave one (see [`GraphArena`]).
    pub arena: Option<&'a GraphArena<T>>,
}

impl<'a, T: Float> Env<'a, '_, T> {
    /// Runs `f` with the graph hidden and restores it afterwards: how a graph layer
    /// calls a plain sublayer (an MLP) that must not read the graph, as a
    /// [`Chain`](crate::layers::Chain) calls its plain layers.
    pub fn without_graph<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let graph = self.graph.take();
        let r = f(self);
        self.graph = graph;
        r
    }

    /// The graph, or [`GnnError::NoGraph`] naming `layer` (the caller's type, e.g.
    /// `GCNConv`) when there is none.
    pub fn graph(&self, layer: &'static str) -> GnnResult<&'a GraphCtx<T>> {
        self.graph.ok_or(GnnError::NoGraph {
            layer,
            after_pooling: None,
        })
    }
}

/// A layer (or a whole model) with explicit parameters and state.
///
/// The layer value holds only its configuration (sizes and options). [`Layer::init`]
/// draws fresh parameters and the initial state; [`Layer::forward`] records the
/// layer's computation on a tape, reading its parameters as tape handles (they enter
/// the AD core as `Duplicated` arguments) and its state by local name. See the crate
/// documentation for a worked example of a new layer.
///
/// Layers are `Send + Sync` (a configuration holds no tape and no cell), so a model
/// (a [`Chain`](crate::layers::Chain) of boxed layers too) can be shared by threads
/// that serve predictions while another trains.
pub trait Layer<T: Float>: Send + Sync {
    /// The layer's type name for messages, e.g. `"GCNConv"`.
    fn name(&self) -> &'static str;

    /// Fresh parameters and initial state, with local names (`weight`, `bias`, ...).
    fn init(&self, rng: &mut StdRng) -> (Params<T>, State<T>);

    /// Records the forward computation on `t` and returns the output handle.
    ///
    /// `p` holds this layer's parameters by local name, `st` its state (writable: in
    /// training a layer may update running statistics in place). Errors are the GNN
    /// crate's (`?` on a tape operation wraps the core's error); a container calls its
    /// children through [`forward_sublayer`], which names the child's path in them.
    fn forward<'a>(
        &self,
        t: &mut Tape<'a, T>,
        env: &mut Env<'a, '_, T>,
        x: Input<'a, T>,
        p: ParamVars<'_>,
        st: StateScope<'_, T>,
    ) -> GnnResult<Var>;

    /// Whether the layer reads the graph (a [`Chain`](crate::layers::Chain) reports the
    /// graph layers it holds).
    fn is_graph_layer(&self) -> bool {
        false
    }

    /// Whether the output's rows are a subset of the graph's nodes (a node-dropping
    /// pooling such as [`TopKPool`](crate::pool::TopKPool)): graph layers after it
    /// would need the pooled graph, which a [`Chain`](crate::layers::Chain) does not
    /// have, so the chain refuses them with a coded error.
    fn drops_nodes(&self) -> bool {
        false
    }

    /// Whether the layer is a graph-level readout (global pooling): its output has one
    /// row per graph, so a node-level graph layer after it is refused by a
    /// [`Chain`](crate::layers::Chain) with a coded error.
    fn is_readout(&self) -> bool {
        false
    }
}

impl<T: Float, L: Layer<T> + ?Sized> Layer<T> for Box<L> {
    fn name(&self) -> &'static str {
        (**self).name()
    }
    fn init(&self, rng: &mut StdRng) -> (Params<T>, State<T>) {
        (**self).init(rng)
    }
    fn forward<'a>(
        &self,
        t: &mut Tape<'a, T>,
        env: &mut Env<'a, '_, T>,
        x: Input<'a, T>,
        p: ParamVars<'_>,
        st: StateScope<'_, T>,
    ) -> GnnResult<Var> {
        (**self).forward(t, env, x, p, st)
    }
    fn is_graph_layer(&self) -> bool {
        (**self).is_graph_layer()
    }
    fn drops_nodes(&self) -> bool {
        (**self).drops_nodes()
    }
    fn is_readout(&self) -> bool {
        (**self).is_readout()
    }
}

/// Calls `layer` as a part of the calling layer (a child of a container, a layer's own
/// sublayer such as GIN's `nn`) with the views `p` and `st` narrowed to it
/// ([`ParamVars::scope`]): an error it returns names its path (`conv1`, `conv1.nn.0`)
/// and type ([`GnnError::InLayer`]), unless a layer further in already did.
///
/// A graph layer's input must have one row per node of the graph it reads: another
/// row count is refused here, in the user's terms (`SHADE-E0410`), before any
/// operation of the layer runs into it.
pub fn forward_sublayer<'a, T: Float, L: Layer<T> + ?Sized>(
    layer: &L,
    t: &mut Tape<'a, T>,
    env: &mut Env<'a, '_, T>,
    x: Input<'a, T>,
    p: ParamVars<'_>,
    st: StateScope<'_, T>,
) -> GnnResult<Var> {
    let named = |e: GnnError| e.in_layer(p.path(), layer.name());
    if let Some(g) = env.graph.filter(|_| layer.is_graph_layer()) {
        let shape = match x {
            Input::Dense(v) => t.shape(v)?.to_vec(),
            Input::Sparse(s) => vec![s.rows(), s.cols()],
        };
        if shape.len() != 2 || shape[0] != g.num_nodes() {
            return Err(named(crate::layers::blocks::rows_per_node(
                &shape,
                g.num_nodes(),
            )));
        }
    }
    layer.forward(t, env, x, p, st).map_err(named)
}

/// Carries the GNN crate's errors out of a tensor program, whose closure returns the
/// core's [`AdResult`]: [`ErrorCarry::lift`] inside the closure, [`ErrorCarry::land`]
/// on the entry point's result.
///
/// ```
/// use shade_autodiff::tensor::{self, TapeBuffers};
/// use shade_gnn::{ErrorCarry, GnnError, GnnResult};
/// let x = ndarray::arr1(&[1.0, 2.0]);
/// let model = |_: &mut tensor::Tape<'_, f64>| -> GnnResult<tensor::Var> {
///     Err(GnnError::NoGraph { layer: "GCNConv", after_pooling: None })
/// };
/// let carry = ErrorCarry::new();
/// let r = tensor::value(
///     &mut TapeBuffers::new(),
///     |t, (_x,)| carry.lift(model(t)),
///     (shade_autodiff::Const(&x),),
/// );
/// assert_eq!(carry.land(r).unwrap_err().code(), "SHADE-E0409");
/// ```
#[derive(Debug, Default)]
pub struct ErrorCarry {
    held: std::cell::RefCell<Option<GnnError>>,
}

/// What [`ErrorCarry::lift`] hands the core in place of an error it holds.
const CARRIED: &str = "a shade-gnn error (carried past the tensor layer)";

impl ErrorCarry {
    /// Holds nothing yet.
    pub fn new() -> Self {
        ErrorCarry::default()
    }

    /// A result for the core: the core's own errors pass as they are, any other is
    /// kept here (the core sees a stand-in that stops the program).
    pub fn lift<V>(&self, r: GnnResult<V>) -> AdResult<V> {
        r.map_err(|e| match e {
            GnnError::Ad(e) => e,
            e => {
                self.held.borrow_mut().get_or_insert(e);
                AdError::InvalidArgument {
                    op: "model",
                    what: CARRIED.into(),
                }
            }
        })
    }

    /// The entry point's result as a GNN result: the kept error in place of its
    /// stand-in, the core's errors wrapped ([`GnnError::Ad`]).
    pub fn land<V>(&self, r: AdResult<V>) -> GnnResult<V> {
        match r {
            Ok(v) => Ok(v),
            Err(e) => Err(match (&e, self.held.borrow_mut().take()) {
                (AdError::InvalidArgument { op: "model", what }, Some(held)) if what == CARRIED => {
                    held
                }
                _ => GnnError::Ad(e),
            }),
        }
    }
}

/// Node features: dense `[N, F]`, or a constant sparse matrix.
///
/// Each holds its array in a [`Checked`], so that [`Inputs::validate`] reads the values
/// once, not on every step (a training loop over constant features); a mutable access
/// to the array clears the record and the next validation reads them again.
#[derive(Debug)]
pub enum Features<T: Float> {
    /// Dense features.
    Dense(Checked<ArrayD<T>>),
    /// Sparse features (CSR), used through the sparse × dense kernel.
    Sparse(Checked<SparseMatrix<T>>),
}

impl<T: Float> Features<T> {
    /// Dense features from a 2-D array.
    pub fn dense(x: Array2<T>) -> Self {
        Features::Dense(x.into_dyn().into())
    }

    /// Sparse features from an `f32` CSR (or CSC) matrix (as the npz reader returns
    /// them), converted to `T`; the transpose the reverse rule needs is built now.
    pub fn sparse_from_f32(x: &CsMat32<f32>) -> Self {
        // One copy: the values mapped into a matrix of the same structure (a CSC one is
        // turned into CSR by `SparseMatrix::new`).
        let s = SparseMatrix::new(x.map(|&v| T::cst(f64::from(v))));
        s.prepare_transpose();
        Features::Sparse(s.into())
    }

    /// Input dropout on the (constant) features: a copy with every stored value zeroed
    /// with probability `p` and the rest scaled by `1 / (1 - p)` (for sparse features
    /// only the stored nonzeros are drawn, as Kipf & Welling's sparse dropout). The
    /// features are constants, so this runs outside the differentiated program.
    ///
    /// Errors with [`GnnError::InvalidSetting`] unless `0 <= p < 1`.
    pub fn dropout(&self, p: f64, rng: &mut StdRng) -> GnnResult<Features<T>> {
        if !(0.0..1.0).contains(&p) {
            return Err(GnnError::setting("dropout", p, "a value in [0, 1)"));
        }
        // The core's in-place dropout, the same mask as the tape's (one draw from `rng`).
        let drop = |v: &mut [T], rng: &mut StdRng| {
            shade_autodiff::tensor::dropout_in_place(v, p, rng).map_err(GnnError::from)
        };
        Ok(match self {
            Features::Dense(x) => {
                let mut y = x.as_standard_layout().into_owned();
                drop(y.as_slice_mut().expect("standard layout"), rng)?;
                Features::Dense(y.into())
            }
            Features::Sparse(x) => {
                let m = x.csr();
                let (ip, ind) = (m.indptr().raw_storage().to_vec(), m.indices().to_vec());
                let mut data = m.data().to_vec();
                drop(&mut data, rng)?;
                let s = SparseMatrix::new(CsMat32::new((m.rows(), m.cols()), ip, ind, data));
                s.prepare_transpose();
                Features::Sparse(s.into())
            }
        })
    }

    /// Number of rows (nodes).
    pub fn rows(&self) -> usize {
        match self {
            Features::Dense(x) => x.shape().first().copied().unwrap_or(0),
            Features::Sparse(x) => x.rows(),
        }
    }

    /// Number of feature columns.
    pub fn cols(&self) -> usize {
        match self {
            Features::Dense(x) => x.shape().get(1).copied().unwrap_or(1),
            Features::Sparse(x) => x.cols(),
        }
    }
}

/// The inputs of a model call: graph, node features and optional edge features.
#[derive(Clone, Copy, Debug)]
pub struct Inputs<'d, T: Float> {
    /// The prepared graph, if the model has graph layers.
    pub graph: Option<&'d GraphCtx<T>>,
    /// Node features.
    pub x: &'d Features<T>,
    /// Edge features `[E, D]`, in the graph's edge order.
    pub edge_attr: Option<&'d ArrayD<T>>,
    /// Where graphs derived during the program are kept ([`GraphArena`]); the entry
    /// points make one per call when this is `None`.
    pub arena: Option<&'d GraphArena<T>>,
}

impl<'d, T: Float> Inputs<'d, T> {
    /// Node features on a graph.
    pub fn new(graph: &'d GraphCtx<T>, x: &'d Features<T>) -> Self {
        Inputs {
            graph: Some(graph),
            x,
            edge_attr: None,
            arena: None,
        }
    }

    /// Features without a graph (for graph-free models).
    pub fn without_graph(x: &'d Features<T>) -> Self {
        Inputs {
            graph: None,
            x,
            edge_attr: None,
            arena: None,
        }
    }

    /// Adds edge features.
    pub fn with_edge_attr(mut self, e: &'d ArrayD<T>) -> Self {
        self.edge_attr = Some(e);
        self
    }

    /// Keeps the graphs derived during the program in `arena`.
    pub fn with_arena(mut self, arena: &'d GraphArena<T>) -> Self {
        self.arena = Some(arena);
        self
    }

    /// These inputs with `arena` unless they already name one (for the entry points,
    /// which make an arena per call).
    pub fn or_arena<'s>(&self, arena: &'s GraphArena<T>) -> Inputs<'s, T>
    where
        'd: 's,
    {
        Inputs {
            arena: Some(self.arena.unwrap_or(arena)),
            ..*self
        }
    }

    /// Checks the inputs: feature rows = nodes (features of shape `[F, N]` are named
    /// as transposed, `SHADE-E0414`), edge rows = edges (`SHADE-E0405`), and every
    /// feature value finite (`SHADE-E0413`, naming the array and the first bad entry).
    /// The node features' values are read once while they do not change ([`Checked`]).
    pub fn validate(&self) -> GnnResult<()> {
        match self.x {
            Features::Dense(x) => x.check_once(|x| first_non_finite("node features", x.view()))?,
            Features::Sparse(x) => x.check_once(|x| {
                let m = x.csr();
                match m.data().iter().position(|v| !v.is_finite()) {
                    // The stored entry `k` lies in the row whose range holds it.
                    Some(k) => {
                        let ip = m.indptr();
                        let ip = ip.raw_storage();
                        let r = ip.partition_point(|&o| o <= k).saturating_sub(1);
                        Err(GnnError::NonFiniteInput {
                            what: "node features".into(),
                            index: vec![r, m.indices()[k] as usize],
                            value: m.data()[k].to_f64().unwrap_or(f64::NAN),
                        })
                    }
                    None => Ok(()),
                }
            })?,
        }
        if let Some(e) = self.edge_attr {
            first_non_finite("edge features", e.view())?;
        }
        if let Some(g) = self.graph {
            let n = g.num_nodes();
            if self.x.rows() != n && self.x.cols() == n {
                return Err(GnnError::Transposed {
                    what: "node features".into(),
                    found: vec![self.x.rows(), self.x.cols()],
                    nodes: n,
                });
            }
            if self.x.rows() != g.num_nodes() {
                return Err(GnnError::DataMismatch {
                    what: "rows of the node features".into(),
                    expected: format!("{} (the number of nodes)", g.num_nodes()),
                    found: self.x.rows().to_string(),
                });
            }
            if let Some(e) = self.edge_attr
                && e.shape().first() != Some(&g.edges().num_edges())
            {
                return Err(GnnError::DataMismatch {
                    what: "rows of the edge features".into(),
                    expected: format!("{} (the number of edges)", g.edges().num_edges()),
                    found: format!("{:?}", e.shape()),
                });
            }
        }
        Ok(())
    }
}

/// [`GnnError::NonFiniteInput`] for the first NaN or infinity of `a`, named `what`.
fn first_non_finite<T: Float>(what: &str, a: ndarray::ArrayViewD<'_, T>) -> GnnResult<()> {
    let found = match a.as_slice_memory_order() {
        // Fast path: one pass over the memory, in blocks checked without a branch per
        // value (the check vectorises; an early exit per value would not); the index
        // is recovered only on failure.
        Some(s) if a.is_standard_layout() => {
            const BLOCK: usize = 1024;
            s.chunks(BLOCK)
                .position(|b| b.iter().fold(false, |bad, v| bad | !v.is_finite()))
                .and_then(|blk| {
                    let b = &s[blk * BLOCK..];
                    b.iter()
                        .position(|v| !v.is_finite())
                        .map(|i| blk * BLOCK + i)
                })
        }
        _ => a.iter().position(|v| !v.is_finite()),
    };
    let Some(flat) = found else {
        return Ok(());
    };
    let mut index = vec![0; a.ndim()];
    let mut rest = flat;
    for (k, &d) in a.shape().iter().enumerate().rev() {
        index[k] = rest % d.max(1);
        rest /= d.max(1);
    }
    let value = a[ndarray::IxDyn(&index)].to_f64().unwrap_or(f64::NAN);
    Err(GnnError::NonFiniteInput {
        what: what.into(),
        index,
        value,
    })
}

/// One annotated array argument of a model call: a constant, or a tracked value with
/// its shadow. The tape handles come back in the order of the list.
#[derive(Debug)]
pub enum Arg<'a, T> {
    /// A constant.
    Const(&'a ArrayD<T>),
    /// A tracked value and its shadow (reverse mode accumulates into it).
    Dup(&'a ArrayD<T>, &'a mut ArrayD<T>),
}

impl<'a, T: Float> TensorArg<'a, T> for Arg<'a, T> {
    type Handle = Var;
    fn register(self, tape: &mut Tape<'a, T>, pos: usize) -> AdResult<Var> {
        match self {
            Arg::Const(x) => Const(x).register(tape, pos),
            Arg::Dup(x, dx) => Duplicated(x, dx).register(tape, pos),
        }
    }
}

/// The argument list of a model call: every parameter (`Duplicated` when `grads` is
/// given, constant otherwise), then the dense features (tracked when `dx` is given),
/// then the edge features (tracked when `de` is given: gradients with respect to edge
/// features or edge weights, e.g. for explanations).
pub fn model_args<'a, T: Float>(
    params: &'a Params<T>,
    grads: Option<&'a mut Params<T>>,
    inputs: &Inputs<'a, T>,
    dx: Option<&'a mut ArrayD<T>>,
    de: Option<&'a mut ArrayD<T>>,
) -> Vec<Arg<'a, T>> {
    let mut args: Vec<Arg<'a, T>> = Vec::with_capacity(params.len() + 2);
    match grads {
        Some(g) => args.extend(
            params
                .values()
                .iter()
                .zip(g.values_mut().iter_mut())
                .map(|(p, d)| Arg::Dup(p, d)),
        ),
        None => args.extend(params.values().iter().map(Arg::Const)),
    }
    if let Features::Dense(x) = inputs.x {
        args.push(match dx {
            Some(d) => Arg::Dup(x, d),
            None => Arg::Const(x),
        });
    }
    if let Some(e) = inputs.edge_attr {
        args.push(match de {
            Some(d) => Arg::Dup(e, d),
            None => Arg::Const(e),
        });
    }
    args
}

/// Runs `model` on a tape whose handles came from [`model_args`]: splits them into
/// parameters, features and edge features, and calls the model's forward. An error
/// names the layer it arose in (the model's type for the model's own).
#[allow(clippy::too_many_arguments)]
pub fn forward_model<'a, T: Float, L: Layer<T> + ?Sized>(
    t: &mut Tape<'a, T>,
    model: &L,
    names: &[String],
    handles: &[Var],
    inputs: &Inputs<'a, T>,
    state: &mut State<T>,
    training: bool,
    rng: &mut StdRng,
) -> GnnResult<Var> {
    let np = names.len();
    let (pv, rest) = handles.split_at(np.min(handles.len()));
    let mut rest = rest.iter().copied();
    let x = match inputs.x {
        Features::Dense(_) => Input::Dense(rest.next().ok_or(AdError::InvalidArgument {
            op: "forward_model",
            what: "missing feature handle".into(),
        })?),
        Features::Sparse(s) => Input::Sparse(s),
    };
    let edge_attr = inputs.edge_attr.and_then(|_| rest.next());
    let mut env = Env {
        graph: inputs.graph,
        edge_attr,
        training,
        rng,
        arena: inputs.arena,
    };
    forward_sublayer(
        model,
        t,
        &mut env,
        x,
        ParamVars::new(names, pv),
        StateScope::new(state),
    )
}

/// An error of `model` run with `params`, in the user's terms: a shape that a layer's
/// operations could not combine (the core's `SHADE-E0110` / `SHADE-E0140`) most often
/// comes from a parameter of another shape than the model's own. When a parameter's
/// shape differs from what the model's `init` gives, that is the error
/// (`SHADE-E0402`, naming the parameter and both shapes, in the layer it belongs to).
/// Only error paths pay for the model's `init`.
pub(crate) fn in_user_terms<T: Float, L: Layer<T> + ?Sized>(
    model: &L,
    params: &Params<T>,
    e: GnnError,
) -> GnnError {
    if !matches!(
        e.innermost(),
        GnnError::Ad(AdError::ShapeMismatch { .. } | AdError::RankMismatch { .. })
    ) {
        return e;
    }
    let (reference, _) = model.init(&mut rand::SeedableRng::seed_from_u64(0));
    let Some((name, expected, found)) = reference.iter().find_map(|(n, r)| {
        let a = params.get(n)?;
        (a.shape() != r.shape()).then(|| (n.to_string(), r.shape().to_vec(), a.shape().to_vec()))
    }) else {
        return e;
    };
    let shape = GnnError::ParamShape {
        name: name.clone(),
        expected,
        found,
    };
    match e {
        GnnError::InLayer { path, layer, .. } if name.starts_with(&format!("{path}.")) => {
            shape.in_layer(path, layer)
        }
        _ => shape,
    }
}

/// Lux's `apply`: the model's output on `inputs` with `params`, and the new state.
/// No derivative is taken.
///
/// ```
/// use rand::{SeedableRng, rngs::StdRng};
/// use shade_gnn::{apply, Features, GraphCtx, Inputs, Layer};
/// use shade_gnn::layers::GCNConv;
/// let g = shade_graph::Graph::try_new(3, vec![0, 1], vec![1, 2])?;
/// let ctx = GraphCtx::<f64>::new(&g);
/// let x = Features::dense(ndarray::Array2::ones((3, 2)));
/// let conv = GCNConv::new(2, 4);
/// let mut rng = StdRng::seed_from_u64(0);
/// let (p, st) = conv.init(&mut rng);
/// let (y, _st) = apply(&conv, &Inputs::new(&ctx, &x), &p, &st, false, &mut rng)?;
/// assert_eq!(y.shape(), &[3, 4]);
/// # Ok::<(), shade_gnn::GnnError>(())
/// ```
///
/// The parameters are the caller's: each one the model has must have the shape the
/// model's `init` gives it (`SHADE-E0402`), so that a store saved from a model of
/// other sizes is refused instead of run as that other model. (A missing parameter is
/// named by the layer that reads it, `SHADE-E0401`.)
pub fn apply<T: Float, L: Layer<T> + ?Sized>(
    model: &L,
    inputs: &Inputs<'_, T>,
    params: &Params<T>,
    state: &State<T>,
    training: bool,
    rng: &mut StdRng,
) -> GnnResult<(ArrayD<T>, State<T>)> {
    let (reference, _) = model.init(&mut rand::SeedableRng::seed_from_u64(0));
    for (name, r) in reference.iter() {
        if let Some(a) = params.get(name)
            && a.shape() != r.shape()
        {
            return Err(GnnError::ParamShape {
                name: name.to_string(),
                expected: r.shape().to_vec(),
                found: a.shape().to_vec(),
            });
        }
    }
    apply_in(
        &mut TapeBuffers::new(),
        model,
        inputs,
        params,
        state,
        training,
        rng,
    )
}

/// [`apply`] on reusable tape storage (what [`TrainState::predict`] runs on, so that
/// an evaluation per epoch allocates nothing once warm).
///
/// [`TrainState::predict`]: crate::train::TrainState::predict
pub(crate) fn apply_in<T: Float, L: Layer<T> + ?Sized>(
    bufs: &mut TapeBuffers<T>,
    model: &L,
    inputs: &Inputs<'_, T>,
    params: &Params<T>,
    state: &State<T>,
    training: bool,
    rng: &mut StdRng,
) -> GnnResult<(ArrayD<T>, State<T>)> {
    inputs.validate()?;
    let arena = GraphArena::new();
    let inputs = &inputs.or_arena(&arena);
    let mut st = state.clone();
    let names = params.names();
    let args = model_args(params, None, inputs, None, None);
    let carry = ErrorCarry::new();
    let y = carry
        .land(tensor::value(
            bufs,
            |t, h: Vec<Var>| {
                carry.lift(forward_model(
                    t, model, names, &h, inputs, &mut st, training, rng,
                ))
            },
            args,
        ))
        .map_err(|e| in_user_terms(model, params, e))?;
    Ok((y, st))
}
