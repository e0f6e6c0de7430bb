//! `Chain`: layers applied in sequence, each under its own name.

use crate::ctx::Float;
use crate::error::{GnnError, GnnResult};
use crate::layer::{Env, Input, Layer, forward_sublayer};
use crate::params::{ParamVars, Params, State, StateScope};
use rand::rngs::StdRng;
use shade_autodiff::tensor::{Tape, Var};

/// Layers applied in order. Each child's parameters are stored under its name
/// (`conv1.lin.weight`); children added with [`Chain::push`] are named by position
/// (`"0"`, `"1"`, ... as in PyTorch's `nn.Sequential`). The graph is used by graph
/// layers only; other layers see plain tensors.
///
/// ```
/// use shade_gnn::layers::{Activation, Chain, Dense, GCNConv};
/// let model = Chain::<f32>::new()
///     .add("conv1", GCNConv::new(2, 50))
///     .add("act1", Activation::Tanh)
///     .add("conv2", GCNConv::new(50, 50))
///     .add("act2", Activation::Relu)
///     .add("dense", Dense::new(50, 100).with_activation(Activation::Sigmoid));
/// assert_eq!(model.len(), 5);
/// ```
///
/// Two layers under one name would share their parameters' names (the second would
/// read the first's weights and get no gradient of its own): [`Chain::try_add`]
/// refuses the name (`SHADE-E0411`), and a chain built with [`Chain::add`] refuses to
/// run ([`Layer::forward`], and so `TrainState::new`'s first step or `apply`) with the
/// same error.
///
/// ```
/// use shade_gnn::layers::{Chain, GCNConv};
/// let e = Chain::<f64>::new()
///     .add("conv", GCNConv::new(3, 4))
///     .try_add("conv", GCNConv::new(4, 4))
///     .unwrap_err();
/// assert_eq!(e.code(), "SHADE-E0411");
/// ```
pub struct Chain<T: Float> {
    layers: Vec<(String, Box<dyn Layer<T>>)>,
    /// The first name that is not usable (repeated, empty or dotted), refused when
    /// the chain runs.
    bad_name: Option<String>,
}

impl<T: Float> std::fmt::Debug for Chain<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.layers.iter().map(|(n, l)| (n, l.name())))
            .finish()
    }
}

impl<T: Float> Default for Chain<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Float> Chain<T> {
    /// An empty chain (the identity).
    pub fn new() -> Self {
        Chain {
            layers: Vec::new(),
            bad_name: None,
        }
    }

    /// Appends a layer under `name` (unique in the chain, not empty, without `.`).
    /// A name that breaks the rule is refused when the chain runs; [`Chain::try_add`]
    /// refuses it at once.
    pub fn add(mut self, name: impl Into<String>, layer: impl Layer<T> + 'static) -> Self {
        let name = name.into();
        if self.bad_name.is_none() && !self.usable(&name) {
            self.bad_name = Some(name.clone());
        }
        self.layers.push((name, Box::new(layer)));
        self
    }

    /// [`Chain::add`], refusing a repeated name (`SHADE-E0411`) or an empty or dotted
    /// one (`SHADE-E0404`) at once.
    pub fn try_add(
        self,
        name: impl Into<String>,
        layer: impl Layer<T> + 'static,
    ) -> GnnResult<Self> {
        let name = name.into();
        if self.usable(&name) {
            Ok(self.add(name, layer))
        } else {
            Err(name_error(&name))
        }
    }

    /// Whether `name` can name a new layer: not empty, no `.`, not taken.
    fn usable(&self, name: &str) -> bool {
        !name.is_empty() && !name.contains('.') && self.layers.iter().all(|(n, _)| n != name)
    }

    /// Appends a layer named by its position.
    pub fn push(self, layer: impl Layer<T> + 'static) -> Self {
        let name = self.layers.len().to_string();
        self.add(name, layer)
    }

    /// Number of layers.
    pub fn len(&self) -> usize {
        self.layers.len()
    }

    /// Whether the chain is empty.
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// The layers' names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.layers.iter().map(|(n, _)| n.as_str())
    }
}

/// The error for an unusable layer name (the chain's path is added on the way out).
fn name_error(name: &str) -> GnnError {
    if name.is_empty() || name.contains('.') {
        GnnError::setting(
            "layer name",
            format!("{name:?}"),
            "a non-empty name without `.` (dots separate the parts of a parameter's path)",
        )
    } else {
        GnnError::DuplicateName {
            what: "layers",
            name: name.to_string(),
        }
    }
}

/// `path.name`, or `name` at the root.
fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

impl<T: Float> Layer<T> for Chain<T> {
    fn name(&self) -> &'static str {
        "Chain"
    }

    fn init(&self, rng: &mut StdRng) -> (Params<T>, State<T>) {
        let (mut p, mut s) = (Params::new(), State::new());
        for (name, l) in &self.layers {
            let (lp, ls) = l.init(rng);
            p.extend_prefixed(name, lp);
            s.extend_prefixed(name, ls);
        }
        (p, s)
    }

    fn forward<'a>(
        &self,
        t: &mut Tape<'a, T>,
        env: &mut Env<'a, '_, T>,
        x: Input<'a, T>,
        p: ParamVars<'_>,
        mut st: StateScope<'_, T>,
    ) -> GnnResult<Var> {
        if let Some(name) = &self.bad_name {
            return Err(name_error(name));
        }
        let mut h = x;
        let mut pooled: Option<&str> = None;
        let mut readout: Option<&str> = None;
        for (name, l) in &self.layers {
            // With an arena the pooling hands the pooled graph on; without, the layers
            // after it would read the input graph.
            let (lp, ls) = (p.scope(name), st.scope(name));
            if let Some(pool) = pooled.filter(|_| l.is_graph_layer() && env.arena.is_none()) {
                let e = GnnError::NoGraph {
                    layer: l.name(),
                    after_pooling: Some(join(&p.path(), pool)),
                };
                return Err(e.in_layer(lp.path(), l.name()));
            }
            if let Some(r) = readout.filter(|_| l.is_graph_layer()) {
                let e = GnnError::AfterReadout {
                    readout: join(&p.path(), r),
                };
                return Err(e.in_layer(lp.path(), l.name()));
            }
            if l.drops_nodes() {
                pooled = Some(name);
            }
            if l.is_readout() {
                readout = Some(name);
            }
            let y = if l.is_graph_layer() {
                forward_sublayer(l, t, env, h, lp, ls)?
            } else {
                // Plain layers see no graph.
                env.without_graph(|env| forward_sublayer(l, t, env, h, lp, ls))?
            };
            h = Input::Dense(y);
        }
        Ok(h.dense(t)?)
    }

    fn is_graph_layer(&self) -> bool {
        self.layers.iter().any(|(_, l)| l.is_graph_layer())
    }

    fn drops_nodes(&self) -> bool {
        self.layers.iter().any(|(_, l)| l.drops_nodes())
    }

    fn is_readout(&self) -> bool {
        self.layers.iter().any(|(_, l)| l.is_readout())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layers::{Activation, Dense, Dropout, GCNConv};
    use crate::testing::{
        GradCheck, arb_graph_and_features, check_layer_gradient, layer_output, proptest_config,
        random_features, random_graph,
    };
    use proptest::prelude::*;

    fn users_model(i: usize, h: usize, o: usize) -> Chain<f64> {
        Chain::new()
            .add("conv1", GCNConv::new(i, h))
            .add("act1", Activation::Tanh)
            .add("conv2", GCNConv::new(h, h))
            .add("act2", Activation::Relu)
            .add(
                "dense",
                Dense::new(h, o).with_activation(Activation::Sigmoid),
            )
    }

    #[test]
    fn names_and_composition() {
        let m = users_model(2, 3, 4);
        let mut rng = rand::SeedableRng::seed_from_u64(0);
        let (p, s) = Layer::<f64>::init(&m, &mut rng);
        assert_eq!(
            p.names(),
            [
                "conv1.lin.weight",
                "conv1.bias",
                "conv2.lin.weight",
                "conv2.bias",
                "dense.weight",
                "dense.bias"
            ]
        );
        assert!(s.is_empty() && Layer::<f64>::is_graph_layer(&m));
        // The chain equals its layers applied one after the other.
        let g = random_graph(6, 9, 1);
        let x = random_features(7, 2, 2);
        let (y, p) = layer_output(&m, Some(&g), &x, 3);
        let mut rng2 = rand::SeedableRng::seed_from_u64(3);
        let (p1, _) = Layer::<f64>::init(&GCNConv::new(2, 3), &mut rng2);
        assert_eq!(p1.get("lin.weight"), p.get("conv1.lin.weight"));
        let ctx = crate::GraphCtx::new(&g);
        let step = |l: &dyn Layer<f64>, prefix: &str, x: ndarray::ArrayD<f64>| {
            let mut lp = Params::new();
            for (n, v) in p.iter() {
                if let Some(r) = n.strip_prefix(prefix) {
                    lp.push(&r[1..], v.clone());
                }
            }
            let f = crate::Features::Dense(x.into());
            crate::apply(
                l,
                &crate::Inputs::new(&ctx, &f),
                &lp,
                &State::new(),
                false,
                &mut rand::SeedableRng::seed_from_u64(0),
            )
            .unwrap()
            .0
        };
        let h = step(&GCNConv::new(2, 3), "conv1", x.clone().into_dyn()).mapv(f64::tanh);
        let h = step(&GCNConv::new(3, 3), "conv2", h).mapv(|v| v.max(0.0));
        let r = step(
            &Dense::new(3, 4).with_activation(Activation::Sigmoid),
            "dense",
            h,
        );
        crate::testing::assert_close(&y, &r.into_dimensionality().unwrap(), 1e-14);
    }

    #[test]
    fn dropout_in_training_is_checked_with_a_fixed_stream() {
        let g = random_graph(5, 8, 4);
        let x = random_features(6, 2, 5);
        let m = Chain::new()
            .push(GCNConv::new(2, 4))
            .push(Dropout::new(0.5))
            .push(Dense::new(4, 2));
        let mut c = GradCheck::new(Some(&g), &x);
        c.training = true;
        c.run(&m).unwrap();
    }

    /// Graph layers after a node-dropping pooling need the pooled graph: with a
    /// `GraphArena` (the entry points make one) they get it; a direct `forward_model`
    /// call without one is refused with a coded error that says what to do.
    #[test]
    fn graph_layers_after_topk_pooling_need_an_arena() {
        use crate::pool::TopKPool;
        use crate::{Features, GraphArena, GraphCtx, Inputs, forward_model, model_args};
        use shade_autodiff::tensor::{self, TapeBuffers};
        let g = random_graph(6, 12, 2);
        let x = random_features(7, 3, 3);
        let model = Chain::new()
            .add("conv1", GCNConv::new(3, 4))
            .add("pool", TopKPool::new(4, 0.5))
            .add("conv2", GCNConv::new(4, 2));
        let ctx = GraphCtx::<f64>::new(&g);
        let f = Features::dense(x.clone());
        let mut rng = rand::SeedableRng::seed_from_u64(0);
        let (p, st) = model.init(&mut rng);
        let run = |inputs: &Inputs<'_, f64>| {
            let mut st = st.clone();
            let mut rng = rand::SeedableRng::seed_from_u64(0);
            let carry = crate::ErrorCarry::new();
            carry.land(tensor::value(
                &mut TapeBuffers::new(),
                |t, h: Vec<Var>| {
                    carry.lift(forward_model(
                        t,
                        &model,
                        p.names(),
                        &h,
                        inputs,
                        &mut st,
                        false,
                        &mut rng,
                    ))
                },
                model_args(&p, None, inputs, None, None),
            ))
        };
        let err = run(&Inputs::new(&ctx, &f)).unwrap_err();
        assert_eq!(err.code(), "SHADE-E0409");
        assert_eq!(
            err.to_string(),
            "conv2: the layer reads the graph, but the call has no graph for it: layer `pool` \
             before it dropped nodes, and the pooled graph has nowhere to live"
        );
        assert!(err.help().contains("Inputs::with_arena"), "{}", err.help());
        let arena = GraphArena::new();
        let y = run(&Inputs::new(&ctx, &f).with_arena(&arena)).unwrap();
        assert_eq!(y.shape(), &[4, 2]);
        assert_eq!(y, layer_output(&model, Some(&g), &x, 0).0.into_dyn());
    }

    /// Every layer with an input weight, run in a chain under the name `c` on features
    /// of the wrong width, says so in the user's terms: the path, the width found, the
    /// weight's full name and the width it expects.
    #[test]
    fn every_layer_names_its_path_and_weight_on_a_width_mismatch() {
        use crate::layers::{
            ChebConv, GATConv, GATv2Conv, GINConv, GraphConv, ResGatedGraphConv, SAGEConv, SGConv,
            TAGConv, TransformerConv,
        };
        use crate::pool::TopKPool;
        use crate::{Features, GraphCtx, Inputs, apply};
        let g = random_graph(5, 8, 1);
        let ctx = GraphCtx::<f64>::new(&g);
        let x = Features::dense(random_features(6, 5, 2));
        let cases: Vec<(Box<dyn Layer<f64>>, &str)> = vec![
            (Box::new(Dense::new(3, 2)), "c.weight"),
            (Box::new(GCNConv::new(3, 2)), "c.lin.weight"),
            (Box::new(GCNConv::new(3, 8)), "c.lin.weight"),
            (Box::new(GATConv::new(3, 2)), "c.lin.weight"),
            (Box::new(GATv2Conv::new(3, 2)), "c.lin_l.weight"),
            (Box::new(SAGEConv::new(3, 2)), "c.lin_l.weight"),
            (Box::new(GraphConv::new(3, 2)), "c.lin_rel.weight"),
            (Box::new(ChebConv::new(3, 2, 2)), "c.lins.0.weight"),
            (Box::new(SGConv::new(3, 2)), "c.lin.weight"),
            (Box::new(TAGConv::new(3, 2)), "c.lins.0.weight"),
            (Box::new(ResGatedGraphConv::new(3, 2)), "c.lin_key.weight"),
            (Box::new(TransformerConv::new(3, 2)), "c.lin_query.weight"),
            (Box::new(TopKPool::new(3, 0.5)), "c.weight"),
            (
                Box::new(GINConv::new(Chain::new().add("0", Dense::new(3, 2)))),
                "c.nn.0.weight",
            ),
        ];
        for (layer, weight) in cases {
            let name = layer.name();
            let model = Chain::new().add("c", layer);
            let mut rng = rand::SeedableRng::seed_from_u64(0);
            let (p, st) = model.init(&mut rng);
            let err =
                apply(&model, &Inputs::new(&ctx, &x), &p, &st, false, &mut rng).expect_err(name);
            assert_eq!(err.code(), "SHADE-E0410", "{name}: {err}");
            // The sublayer `nn.0` is a layer of its own; the other weights are the layer's.
            let path = if weight.starts_with("c.nn.") {
                "c.nn.0"
            } else {
                "c"
            };
            assert_eq!(
                err.to_string(),
                format!("{path}: input has 5 features per node but `{weight}` expects 3"),
                "{name}"
            );
        }
    }

    /// Every layer and pool of the crate, for the error checks that hold for all of
    /// them: a small instance for three input features (edge features of width 2
    /// where the layer reads them).
    fn every_layer() -> Vec<Box<dyn Layer<f64>>> {
        use crate::layers::{
            AGNNConv, APPNP, BatchNorm, CGConv, ChebConv, EdgeConv, GATConv, GATv2Conv, GINConv,
            GINEConv, GatedGraphConv, GraphConv, LayerNorm, LayerNormMode, NNConv,
            ResGatedGraphConv, SAGEConv, SGConv, TAGConv, TransformerConv,
        };
        use crate::message::Aggr;
        use crate::pool::{GlobalAttentionPool, GlobalPool, Set2Set, TopKPool};
        let dense = |i, o| Chain::new().add("0", Dense::new(i, o));
        vec![
            Box::new(Dense::new(3, 2)),
            Box::new(Activation::Relu),
            Box::new(Dropout::new(0.5)),
            Box::new(LayerNorm::new(3)),
            Box::new(LayerNorm::new(3).with_mode(LayerNormMode::Graph)),
            Box::new(BatchNorm::new(3)),
            Box::new(GCNConv::new(3, 2)),
            Box::new(GATConv::new(3, 2).with_edge_dim(2)),
            Box::new(GATv2Conv::new(3, 2).with_edge_dim(2)),
            Box::new(SAGEConv::new(3, 2)),
            Box::new(GINConv::new(dense(3, 2))),
            Box::new(GINEConv::new(dense(3, 2)).with_edge_dim(2, 3)),
            Box::new(GraphConv::new(3, 2)),
            Box::new(ChebConv::new(3, 2, 2)),
            Box::new(SGConv::new(3, 2)),
            Box::new(TAGConv::new(3, 2)),
            Box::new(APPNP::new(2, 0.1)),
            Box::new(EdgeConv::new(dense(6, 2))),
            Box::new(ResGatedGraphConv::new(3, 2)),
            Box::new(GatedGraphConv::new(3, 2)),
            Box::new(TransformerConv::new(3, 2).with_edge_dim(2)),
            Box::new(NNConv::new(3, 2, dense(2, 6))),
            Box::new(CGConv::new(3, 2)),
            Box::new(AGNNConv::new()),
            Box::new(GlobalPool::new(Aggr::Sum)),
            Box::new(GlobalAttentionPool::new(dense(3, 1))),
            Box::new(Set2Set::new(3, 2)),
            Box::new(TopKPool::new(3, 0.5)),
        ]
    }

    /// Every layer, run in a chain under the name `c`: without a graph (a graph
    /// layer), and with its parameters missing (a layer with parameters), the error
    /// has the GNN crate's code and names the path `c` (or that of the sublayer that
    /// reads the parameter, `c.nn.0`) and the parameter's full name.
    #[test]
    fn every_layer_names_its_path_without_a_graph_or_a_parameter() {
        use crate::{Features, GraphCtx, Inputs, apply};
        let g = random_graph(5, 8, 1);
        let ctx = GraphCtx::<f64>::new(&g);
        let x = Features::dense(random_features(g.num_nodes(), 3, 2));
        let e = random_features(g.num_edges(), 2, 3).into_dyn();
        let with_graph = Inputs::new(&ctx, &x).with_edge_attr(&e);
        let (mut graph_layers, mut with_params) = (0, 0);
        for layer in every_layer() {
            let name = layer.name();
            let is_graph = layer.is_graph_layer();
            let model = Chain::new().add("c", layer);
            let mut rng = rand::SeedableRng::seed_from_u64(0);
            let (p, st) = model.init(&mut rng);
            // The layer itself runs.
            apply(&model, &with_graph, &p, &st, false, &mut rng)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            if is_graph {
                graph_layers += 1;
                let err = apply(&model, &Inputs::without_graph(&x), &p, &st, false, &mut rng)
                    .expect_err(name);
                assert_eq!(err.code(), "SHADE-E0409", "{name}: {err}");
                assert_eq!(
                    err.to_string(),
                    "c: the layer reads the graph, but the call has no graph",
                    "{name}"
                );
            }
            if !p.is_empty() {
                with_params += 1;
                let err = apply(&model, &with_graph, &Params::new(), &st, false, &mut rng)
                    .expect_err(name);
                assert_eq!(err.code(), "SHADE-E0401", "{name}: {err}");
                // `{path}: parameter `{full name}` is missing from the store`, the path
                // that of the layer or of its sublayer that reads the parameter.
                let msg = err.to_string();
                let (path, missing) = msg
                    .strip_suffix("` is missing from the store")
                    .and_then(|m| m.split_once(": parameter `"))
                    .unwrap_or_else(|| panic!("{name}: {msg}"));
                assert!(path == "c" || path.starts_with("c."), "{name}: {msg}");
                assert!(missing.starts_with(&format!("{path}.")), "{name}: {msg}");
                assert!(p.names().iter().any(|n| n == missing), "{name}: {msg}");
            }
        }
        assert_eq!((graph_layers, with_params), (23, 24));
    }

    proptest! {
        #![proptest_config(proptest_config(24))]
        #[test]
        fn users_model_gradient((g, x) in arb_graph_and_features(6, 12, 2)) {
            check_layer_gradient(&users_model(2, 3, 2), Some(&g), &x).map_err(TestCaseError::fail)?;
        }
    }
}
