//! What the attention layers share: the options of the graph-attention pair
//! ([`AttentionOptions`]) and the builder methods of the options every attention layer
//! has, the start of a forward pass (the option check, the edge features of a layer
//! with `edge_dim` checked against it, the edge set with or without self-loops and the
//! edge features of the added loops, [`FillValue`]), and the tail after the per-edge,
//! per-head logits: edge softmax → dropout → weighted sum of the messages → heads
//! concatenated or averaged → skip connection → bias.
//!
//! `GATConv` and `GATv2Conv` use all of it, `TransformerConv` the builders, the start
//! (without self-loops) and the aggregation, `ResGatedGraphConv` the edge features.

use super::blocks::{bad_option, no_edge_features};
use crate::ctx::{EdgeIndex, Float, GraphCtx};
use crate::error::{GnnError, GnnResult};
use crate::init;
use crate::layer::{Env, Input};
use crate::message::{propagate_weighted, weighted_sum};
use crate::params::{ParamVars, Params};
use ndarray::Array2;
use rand::rngs::StdRng;
use shade_autodiff::AdResult;
use shade_autodiff::tensor::{Tape, Var};

/// The edge features of the self-loops that an attention layer adds (PyG's
/// `fill_value`), computed from the features of the edges into each node after
/// existing self-loops are removed.
///
/// A node without such edges gets zeros from `Mean`, `Add`, `Max` and `Min` (as PyG's
/// scatter). The fill is part of the differentiated program: gradients reach the
/// edge features through it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum FillValue {
    /// The mean of the incoming edges' features (PyG's default, `"mean"`).
    #[default]
    Mean,
    /// Their sum (`"add"`).
    Add,
    /// Their column-wise maximum (`"max"`).
    Max,
    /// Their column-wise minimum (`"min"`).
    Min,
    /// This value in every column (a `float` `fill_value`).
    Const(f64),
}

/// The options that [`GATConv`](super::GATConv) and [`GATv2Conv`](super::GATv2Conv)
/// share, with PyG's defaults (`heads = 1`, `concat = true`, `negative_slope = 0.2`,
/// `dropout = 0`, `add_self_loops = true`, `edge_dim = None`, `fill_value = Mean`,
/// `bias = true`, `residual = false`). Both layers have a builder method for each.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AttentionOptions {
    /// Number of heads (`H`).
    pub heads: usize,
    /// Concatenate the heads (`[N, H·C]`) or average them (`[N, C]`).
    pub concat: bool,
    /// Slope of the LeakyReLU in the scores.
    pub negative_slope: f64,
    /// Dropout probability on the attention coefficients (in training).
    pub dropout: f64,
    /// Replace self-loops by one per node.
    pub add_self_loops: bool,
    /// Width of the edge features, if the attention reads them.
    pub edge_dim: Option<usize>,
    /// The edge features of the added self-loops (with `edge_dim` and `add_self_loops`).
    pub fill_value: FillValue,
    /// Add a bias (for GATv2Conv also the biases of `lin_l` / `lin_r`).
    pub bias: bool,
    /// Add a learned skip connection `x · resᵀ` (PyG's `residual`).
    pub residual: bool,
}

impl Default for AttentionOptions {
    fn default() -> Self {
        AttentionOptions {
            heads: 1,
            concat: true,
            negative_slope: 0.2,
            dropout: 0.0,
            add_self_loops: true,
            edge_dim: None,
            fill_value: FillValue::Mean,
            bias: true,
            residual: false,
        }
    }
}

impl AttentionOptions {
    /// The parameters after the layer's own, in PyG's order: with `edge_dim = D`,
    /// `lin_edge.weight` `[H·C, D]` (and, when `att_edge`, `att_edge` `[1, H, C]`),
    /// with `residual` `res.weight` `[out, in]`, with `bias` `bias` `[out]` (zeros);
    /// Glorot otherwise.
    pub(crate) fn push_tail<T: Float>(
        &self,
        p: &mut Params<T>,
        rng: &mut StdRng,
        (i, c): (usize, usize),
        att_edge: bool,
    ) {
        let h = self.heads;
        if let Some(d) = self.edge_dim {
            p.push(
                "lin_edge.weight",
                init::glorot_uniform(rng, &[h * c, d], d, h * c),
            );
            if att_edge {
                p.push("att_edge", init::glorot_uniform(rng, &[1, h, c], h, c));
            }
        }
        let o = if self.concat { h * c } else { c };
        if self.residual {
            p.push("res.weight", init::glorot_uniform(rng, &[o, i], i, o));
        }
        if self.bias {
            p.push("bias", init::zeros(&[o]));
        }
    }

    /// The start of the forward pass: the graph (`layer` names the caller for
    /// [`GnnError::NoGraph`]), the option check, the edge features checked against
    /// `edge_dim`, and the edge set (with self-loops, their features filled, if
    /// `add_self_loops`).
    #[allow(clippy::type_complexity)]
    pub(crate) fn begin<'a, T: Float>(
        &self,
        t: &mut Tape<'a, T>,
        env: &Env<'a, '_, T>,
        layer: &'static str,
    ) -> GnnResult<(&'a EdgeIndex<T>, Option<Var>)> {
        let loops = self.add_self_loops.then_some(self.fill_value);
        begin(
            t,
            env,
            layer,
            (self.heads, self.dropout, self.edge_dim),
            loops,
        )
    }

    /// The tail (see the module documentation) in PyG's order: the aggregation of
    /// `msgs` over `edges` with `logits` into `channels` per head, then with `residual`
    /// the skip connection `x · resᵀ`, then with `bias` the bias.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn finish<'a, T: Float>(
        &self,
        t: &mut Tape<'a, T>,
        env: &mut Env<'a, '_, T>,
        (x, p): (Input<'a, T>, &ParamVars<'_>),
        edges: &'a EdgeIndex<T>,
        logits: Var,
        msgs: Messages,
        channels: usize,
    ) -> GnnResult<Var> {
        let tail = Attention {
            heads: self.heads,
            channels,
            concat: self.concat,
            dropout: self.dropout,
        };
        let mut y = tail.aggregate(t, env, edges, logits, msgs)?;
        if self.residual {
            let res = x.linear(t, p.param("res.weight")?)?;
            y = t.add(y, res)?;
        }
        if self.bias {
            y = t.add(y, p.get("bias")?)?;
        }
        Ok(y)
    }
}

/// Writes builder methods (inside an `impl` block) that each set one option and return
/// the layer, from a table of `doc, name(parameter: type) => field = value;` rows: the
/// attention layers have ten such setters, and written out each repeated the same four
/// lines.
macro_rules! option_setters {
    ($($(#[$doc:meta])* $name:ident($v:ident: $t:ty) => $($field:ident).+ = $val:expr;)*) => {
        $(
            $(#[$doc])*
            pub fn $name(mut self, $v: $t) -> Self {
                self.$($field).+ = $val;
                self
            }
        )*
    };
}

/// The builder methods of the options every attention layer has (`heads`, `concat`,
/// `dropout`, `edge_dim`) and its output width, for a layer whose options are its own
/// fields or (`$ty, $field`) the fields of its field `$field`; with `gat` also those of
/// the rest of [`AttentionOptions`].
macro_rules! attention_builders {
    ($ty:ty $(, $o:ident)?) => {
        impl $ty {
            $crate::layers::attention::option_setters! {
                /// Sets the number of heads.
                with_heads(heads: usize) => $($o.)? heads = heads;
                /// Sets whether the heads are concatenated (else averaged).
                with_concat(concat: bool) => $($o.)? concat = concat;
                /// Sets the dropout probability on the attention coefficients.
                with_dropout(p: f64) => $($o.)? dropout = p;
                /// Reads edge features of width `d`.
                with_edge_dim(d: usize) => $($o.)? edge_dim = Some(d);
            }

            /// The output width: `heads · out_channels` concatenated, else
            /// `out_channels`.
            pub fn out_width(&self) -> usize {
                if self.$($o.)?concat {
                    self.$($o.)?heads * self.out_channels
                } else {
                    self.out_channels
                }
            }
        }
    };
    (gat $ty:ty) => {
        attention_builders!($ty, options);

        impl $ty {
            $crate::layers::attention::option_setters! {
                /// Sets the slope of the LeakyReLU in the scores.
                with_negative_slope(slope: f64) => options.negative_slope = slope;
                /// Sets whether existing self-loops are replaced by one per node.
                with_add_self_loops(add: bool) => options.add_self_loops = add;
                /// Sets how the edge features of the added self-loops are filled.
                with_fill_value(fill: $crate::layers::FillValue) => options.fill_value = fill;
                /// Sets whether a bias is added.
                with_bias(bias: bool) => options.bias = bias;
                /// Sets whether a learned skip connection is added (PyG's `residual`).
                with_residual(residual: bool) => options.residual = residual;
            }
        }
    };
}
pub(crate) use {attention_builders, option_setters};

/// The start of an attention layer's forward pass (see [`AttentionOptions::begin`]):
/// `(heads, dropout, edge_dim)` are checked and read, `loops` adds self-loops with
/// that fill of their edge features.
pub(crate) fn begin<'a, T: Float>(
    t: &mut Tape<'a, T>,
    env: &Env<'a, '_, T>,
    layer: &'static str,
    (heads, dropout, edge_dim): (usize, f64, Option<usize>),
    loops: Option<FillValue>,
) -> GnnResult<(&'a EdgeIndex<T>, Option<Var>)> {
    let g = env.graph(layer)?;
    check_heads(heads, dropout)?;
    let e = edge_features(t, env, edge_dim, g.edges().num_edges())?;
    Ok(attention_edges(
        t,
        g,
        loops.is_some(),
        e,
        loops.unwrap_or_default(),
    )?)
}

/// Errors with [`GnnError::InvalidSetting`] unless `heads >= 1` and `0 <= dropout < 1`.
pub(crate) fn check_heads(heads: usize, dropout: f64) -> GnnResult<()> {
    if heads == 0 {
        return Err(bad_option("heads", heads, "at least 1"));
    }
    if !(0.0..1.0).contains(&dropout) {
        return Err(bad_option("dropout", dropout, "a value in [0, 1)"));
    }
    Ok(())
}

/// The edge features a layer with `edge_dim` reads, as `[E, edge_dim]` in the graph's
/// edge order (`[E]` is read as `[E, 1]`); `None` when the layer has no `edge_dim`
/// (edge features of the call are then ignored, as by PyG's attention layers).
///
/// Errors: [`GnnError::DataMismatch`] when the call has no edge features;
/// [`GnnError::InputShape`] with the expected `[E, edge_dim]` and the given shape when
/// they differ.
pub(crate) fn edge_features<T: Float>(
    t: &mut Tape<'_, T>,
    env: &Env<'_, '_, T>,
    edge_dim: Option<usize>,
    num_edges: usize,
) -> GnnResult<Option<Var>> {
    let Some(d) = edge_dim else {
        return Ok(None);
    };
    let e = env.edge_attr.ok_or_else(|| {
        no_edge_features(format!(
            "`[{num_edges}, {d}]` (edge_dim = {d}; or build the layer without edge_dim)"
        ))
    })?;
    let shape = t.shape(e)?.to_vec();
    let e = if shape.len() == 1 {
        t.reshape(e, &[shape[0], 1])?
    } else {
        e
    };
    let found = t.shape(e)?;
    if found != [num_edges, d] {
        return Err(GnnError::InputShape {
            what: "the edge feature array".into(),
            found: format!("shape {shape:?}"),
            param: None,
            expected: format!("[{num_edges}, {d}] (one row per edge, edge_dim = {d} columns)"),
        });
    }
    Ok(Some(e))
}

/// The edge set of an attention layer: the graph's edges, or (with `add_self_loops`)
/// [`GraphCtx::edges_with_self_loops`], with the edge features `e` (`[E, D]`, graph
/// order) carried over to it: the kept edges' rows, then each node's loop filled by
/// `fill` from the kept edges into it.
pub(crate) fn attention_edges<'a, T: Float>(
    t: &mut Tape<'a, T>,
    g: &'a GraphCtx<T>,
    add_self_loops: bool,
    e: Option<Var>,
    fill: FillValue,
) -> AdResult<(&'a EdgeIndex<T>, Option<Var>)> {
    if !add_self_loops {
        return Ok((g.edges(), e));
    }
    let edges = g.edges_with_self_loops();
    let Some(e) = e else {
        return Ok((edges, None));
    };
    let f = g.self_loop_fill();
    let kept = t.index_select(e, &f.kept)?;
    let n = g.num_nodes();
    let into = &edges.dst()[..f.kept.len()];
    let loops = match fill {
        FillValue::Mean => t.spmm(&f.mean, e)?,
        FillValue::Add => t.spmm(&f.sum, e)?,
        FillValue::Max => t.scatter_max(kept, into, n)?,
        FillValue::Min => {
            let neg = t.neg(kept)?;
            let m = t.scatter_max(neg, into, n)?;
            t.neg(m)?
        }
        FillValue::Const(c) => {
            let d = t.shape(e)?[1];
            t.constant(&Array2::from_elem((n, d), T::cst(c)))
        }
    };
    Ok((edges, Some(t.concat(&[kept, loops], 0)?)))
}

/// The messages that the attention coefficients weight.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Messages {
    /// `x_j`: node values `[N, H·C]`, gathered by source inside the weighted sum.
    Nodes(Var),
    /// Per-edge messages `[E, H, C]`.
    Edges(Var),
}

/// The tail of an attention layer (see the module documentation).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Attention {
    /// `H`.
    pub(crate) heads: usize,
    /// `C`, the width per head.
    pub(crate) channels: usize,
    /// Concatenate the heads (`[N, H·C]`) or average them (`[N, C]`).
    pub(crate) concat: bool,
    /// Dropout probability on the coefficients, in training.
    pub(crate) dropout: f64,
}

impl Attention {
    /// `out_i = Σ_{e: dst_e = i} α_e m_e` per head with `α = softmax(logits)` (`[E, H]`)
    /// over the edges into each node and dropout in training, the heads concatenated or
    /// averaged.
    pub(crate) fn aggregate<'a, T: Float>(
        &self,
        t: &mut Tape<'a, T>,
        env: &mut Env<'a, '_, T>,
        edges: &'a EdgeIndex<T>,
        logits: Var,
        msgs: Messages,
    ) -> GnnResult<Var> {
        let (n, h, c) = (edges.num_nodes(), self.heads, self.channels);
        let alpha = t.segment_softmax(logits, edges.dst(), n)?;
        let alpha = t.dropout(alpha, self.dropout, env.rng, env.training)?;
        let single = self.concat || h == 1;
        Ok(match msgs {
            Messages::Nodes(x) => {
                let out = propagate_weighted(t, edges, alpha, x)?;
                if single {
                    out
                } else {
                    let o3 = t.reshape(out, &[n, h, c])?;
                    t.mean_axis(o3, 1)?
                }
            }
            Messages::Edges(m) => {
                let out = weighted_sum(t, edges, alpha, m)?;
                if single {
                    t.reshape(out, &[n, h * c])?
                } else {
                    t.mean_axis(out, 1)?
                }
            }
        })
    }
}

/// Calls `check` with every option set on which GATConv and GATv2Conv are checked
/// against their dense references, and the graph and features of the check (edge
/// features where the set has `edge_dim`): heads concatenated and averaged, with and
/// without self-loops, with the skip connection, and with edge features under every
/// fill of the added loops.
#[cfg(test)]
pub(crate) fn for_each_reference_case(
    mut check: impl FnMut(AttentionOptions, super::blocks::reference::Case<'_>),
) {
    use crate::testing::{random_features, random_graph};
    let g = random_graph(7, 15, 2);
    let x = random_features(8, 3, 3);
    let e = random_features(g.num_edges(), 2, 5);
    let o = AttentionOptions::default();
    let heads = |heads, concat| AttentionOptions { heads, concat, ..o };
    let edges = |fill_value, add_self_loops| AttentionOptions {
        edge_dim: Some(2),
        fill_value,
        add_self_loops,
        ..heads(3, true)
    };
    let mut cases = vec![
        heads(3, true),
        heads(2, false),
        AttentionOptions {
            add_self_loops: false,
            ..o
        },
        AttentionOptions {
            residual: true,
            ..heads(3, true)
        },
        AttentionOptions {
            residual: true,
            ..heads(2, false)
        },
        edges(FillValue::Mean, false),
        AttentionOptions {
            edge_dim: Some(2),
            ..heads(2, false)
        },
    ];
    for fill in [
        FillValue::Mean,
        FillValue::Add,
        FillValue::Max,
        FillValue::Min,
        FillValue::Const(0.7),
    ] {
        cases.push(edges(fill, true));
    }
    for options in cases {
        check(options, (&g, &x, options.edge_dim.map(|_| &e)));
    }
}

/// The gradient checks of an attention layer (`layer` builds it from the options):
/// heads concatenated and averaged, without self-loops, with the skip connection,
/// with edge features (of width 2) under the fill by mean, max and min, and with
/// attention dropout in training; every parameter, the input and the edge features
/// against central differences.
#[cfg(test)]
pub(crate) fn check_gradient_cases<L: crate::Layer<f64>>(
    (g, x): (&shade_graph::Graph, &Array2<f64>),
    layer: impl Fn(AttentionOptions) -> L,
) -> Result<(), String> {
    let two = AttentionOptions {
        heads: 2,
        ..AttentionOptions::default()
    };
    let e = AttentionOptions {
        edge_dim: Some(2),
        ..two
    };
    let averaged = |o: AttentionOptions| AttentionOptions { concat: false, ..o };
    let cases = [
        two,
        AttentionOptions {
            add_self_loops: false,
            ..averaged(two)
        },
        AttentionOptions {
            residual: true,
            ..averaged(two)
        },
        AttentionOptions {
            dropout: 0.4,
            ..two
        },
        e,
        AttentionOptions {
            fill_value: FillValue::Max,
            ..averaged(e)
        },
        AttentionOptions {
            fill_value: FillValue::Min,
            ..averaged(e)
        },
        AttentionOptions { dropout: 0.4, ..e },
    ];
    for options in cases {
        let check = crate::testing::GradCheck::new(Some(g), x).in_training(options.dropout > 0.0);
        let check = match options.edge_dim {
            Some(d) => check.with_edge_features(d),
            None => check,
        };
        check.run(&layer(options))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layers::{GATConv, GATv2Conv, ResGatedGraphConv, TransformerConv};
    use crate::testing::{
        arb_graph_and_features, check_array_gradient, proptest_config, random_features,
    };
    use crate::{Arg, Features, Inputs, Layer, apply, forward_model};
    use ndarray::{ArrayD, IxDyn, array};
    use proptest::prelude::*;
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};
    use shade_autodiff::tensor::{self, TapeBuffers};
    use shade_autodiff::{Const, Duplicated};
    use shade_graph::Graph;

    /// The edge features over the attention edge set, from graph-order features `e`.
    fn filled(g: &GraphCtx<f64>, e: &ArrayD<f64>, fill: FillValue) -> ArrayD<f64> {
        tensor::value(
            &mut TapeBuffers::new(),
            |t, (e,)| {
                Ok(attention_edges(t, g, true, Some(e), fill)?
                    .1
                    .expect("given"))
            },
            (Const(e),),
        )
        .unwrap()
    }

    /// Node 1 receives 0 -> 1 twice and 2 -> 1, and has a self-loop whose features
    /// (100) must be dropped; node 0 receives 1 -> 0; nodes 2 and 3 receive nothing.
    #[test]
    fn self_loops_get_the_fill_of_their_incoming_edges() {
        let g = Graph::new(4, vec![0, 1, 0, 2, 1], vec![1, 1, 1, 1, 0]);
        let ctx = GraphCtx::<f64>::new(&g);
        let e = array![
            [1.0, -2.0],
            [100.0, 100.0],
            [3.0, 4.0],
            [2.0, 1.0],
            [5.0, 6.0]
        ]
        .into_dyn();
        let l = ctx.edges_with_self_loops();
        assert_eq!(l.src(), &[0, 0, 2, 1, 0, 1, 2, 3]);
        assert_eq!(l.dst(), &[1, 1, 1, 0, 0, 1, 2, 3]);
        let kept = array![[1.0, -2.0], [3.0, 4.0], [2.0, 1.0], [5.0, 6.0]];
        for (fill, loops) in [
            (
                FillValue::Mean,
                array![[5.0, 6.0], [2.0, 1.0], [0.0, 0.0], [0.0, 0.0]],
            ),
            (
                FillValue::Add,
                array![[5.0, 6.0], [6.0, 3.0], [0.0, 0.0], [0.0, 0.0]],
            ),
            (
                FillValue::Max,
                array![[5.0, 6.0], [3.0, 4.0], [0.0, 0.0], [0.0, 0.0]],
            ),
            (
                FillValue::Min,
                array![[5.0, 6.0], [1.0, -2.0], [0.0, 0.0], [0.0, 0.0]],
            ),
            (FillValue::Const(0.5), Array2::from_elem((4, 2), 0.5)),
        ] {
            let want = ndarray::concatenate![ndarray::Axis(0), kept, loops].into_dyn();
            assert_eq!(filled(&ctx, &e, fill), want, "{fill:?}");
        }
        // Without self-loops added, the features pass through unchanged.
        let same = tensor::value(
            &mut TapeBuffers::new(),
            |t, (v,)| {
                Ok(attention_edges(t, &ctx, false, Some(v), FillValue::Mean)?
                    .1
                    .expect("given"))
            },
            (Const(&e),),
        )
        .unwrap();
        assert_eq!(same, e);
    }

    /// A layer's output with edge features `e`, and its error if any.
    fn run<L: Layer<f64>>(
        layer: &L,
        g: &Graph,
        e: Option<&ArrayD<f64>>,
    ) -> crate::GnnResult<ArrayD<f64>> {
        let ctx = GraphCtx::<f64>::new(g);
        let x = Features::dense(random_features(g.num_nodes(), 3, 1));
        let mut rng = StdRng::seed_from_u64(2);
        let (p, st) = layer.init(&mut rng);
        let mut inputs = Inputs::new(&ctx, &x);
        if let Some(e) = e {
            inputs = inputs.with_edge_attr(e);
        }
        Ok(apply(layer, &inputs, &p, &st, false, &mut rng)?.0)
    }

    /// One of the layers with an `edge_dim`, by name (`3 -> 2`, edge width `d`).
    fn edge_layer(name: &str, d: usize) -> Box<dyn Layer<f64>> {
        match name {
            "GATConv" => Box::new(GATConv::new(3, 2).with_edge_dim(d)),
            "GATv2Conv" => Box::new(GATv2Conv::new(3, 2).with_edge_dim(d)),
            "TransformerConv" => Box::new(TransformerConv::new(3, 2).with_edge_dim(d)),
            _ => Box::new(ResGatedGraphConv::new(3, 2).with_edge_dim(d)),
        }
    }

    /// Missing edge features and features of another width than `edge_dim` are coded
    /// errors naming the widths; `[E]` is read as `[E, 1]`; without `edge_dim` edge
    /// features are ignored.
    #[test]
    fn edge_feature_widths_are_checked() {
        let g = crate::testing::random_graph(4, 6, 1);
        let ne = g.num_edges();
        let e3 = random_features(ne, 3, 2).into_dyn();
        let e1 = random_features(ne, 1, 3).into_dyn();
        let flat = e1.clone().into_shape_with_order(IxDyn(&[ne])).unwrap();
        for name in [
            "GATConv",
            "GATv2Conv",
            "TransformerConv",
            "ResGatedGraphConv",
        ] {
            let layer = edge_layer(name, 2);
            let err = run(&layer, &g, None).unwrap_err();
            assert_eq!(err.code(), "SHADE-E0405", "{err}");
            assert_eq!(
                err.to_string(),
                format!(
                    "{name}: edge features: expected `[{ne}, 2]` (edge_dim = 2; or build the \
                     layer without edge_dim), found none (give them with `Inputs::with_edge_attr`)"
                )
            );
            let err = run(&layer, &g, Some(&e3)).unwrap_err();
            assert_eq!(err.code(), "SHADE-E0410", "{err}");
            assert_eq!(
                err.to_string(),
                format!(
                    "{name}: the edge feature array has shape [{ne}, 3] but the layer expects \
                     [{ne}, 2] (one row per edge, edge_dim = 2 columns)"
                )
            );
            // `[E]` is one feature per edge.
            let layer = edge_layer(name, 1);
            assert_eq!(
                run(&layer, &g, Some(&flat)).unwrap(),
                run(&layer, &g, Some(&e1)).unwrap()
            );
        }
        // Without edge_dim, the features of the call do not matter.
        let plain = GATConv::new(3, 2);
        assert_eq!(
            run(&plain, &g, Some(&e3)).unwrap(),
            run(&plain, &g, None).unwrap()
        );
    }

    /// `sum(R ⊙ filled(e))` and its gradient with respect to `e`.
    fn fill_loss<'a>(
        bufs: &'a mut TapeBuffers<f64>,
        g: &'a GraphCtx<f64>,
        (e, r): (&'a ArrayD<f64>, &'a ArrayD<f64>),
        fill: FillValue,
        de: Option<&'a mut ArrayD<f64>>,
    ) -> f64 {
        let program = |t: &mut Tape<'a, f64>, (e, r): (Var, Var)| {
            let f = attention_edges(t, g, true, Some(e), fill)?
                .1
                .expect("given");
            let m = t.mul(f, r)?;
            t.sum(m)
        };
        match de {
            Some(de) => tensor::gradient(bufs, program, (Duplicated(e, de), Const(r))).unwrap(),
            None => tensor::value(bufs, program, (Const(e), Const(r)))
                .unwrap()
                .iter()
                .sum(),
        }
    }

    /// The loss of `layer` weighted by `r` at edge features `e`, with the gradient with
    /// respect to `e` (tracked; parameters and features constant).
    fn layer_loss<'a, L: Layer<f64> + ?Sized>(
        bufs: &'a mut TapeBuffers<f64>,
        layer: &L,
        (g, x): (&'a GraphCtx<f64>, &'a Features<f64>),
        (p, r): (&'a crate::Params<f64>, &'a ArrayD<f64>),
        e: &'a ArrayD<f64>,
        de: Option<&'a mut ArrayD<f64>>,
    ) -> f64 {
        let inputs = Inputs::new(g, x).with_edge_attr(e);
        let Features::Dense(xd) = x else {
            unreachable!("dense features")
        };
        let mut args: Vec<Arg<'_, f64>> = p.values().iter().map(Arg::Const).collect();
        args.push(Arg::Const(xd));
        let want = de.is_some();
        args.push(match de {
            Some(de) => Arg::Dup(e, de),
            None => Arg::Const(e),
        });
        let mut st = crate::State::new();
        let mut rng = StdRng::seed_from_u64(0);
        let program = |t: &mut Tape<'a, f64>, h: Vec<Var>| {
            let y = forward_model(t, layer, p.names(), &h, &inputs, &mut st, false, &mut rng);
            let y = y.expect("the layer runs");
            let rv = t.constant(r);
            let m = t.mul(y, rv)?;
            t.sum(m)
        };
        if want {
            tensor::gradient(bufs, program, args).unwrap()
        } else {
            tensor::value(bufs, program, args).unwrap().iter().sum()
        }
    }

    /// Central differences of `f` at `e` against the gradient `de`
    /// ([`check_array_gradient`]: along random directions, entry by entry on a
    /// disagreement).
    fn compare(
        e: &ArrayD<f64>,
        de: &ArrayD<f64>,
        f: impl Fn(&ArrayD<f64>) -> f64,
    ) -> Result<(), TestCaseError> {
        check_array_gradient(e, de, f)
            .map_err(|err| TestCaseError::fail(format!("edge features, {err}")))
    }

    proptest! {
        #![proptest_config(proptest_config(24))]
        /// The fill of the self-loops' edge features is differentiable: its gradient
        /// with respect to the edge features matches central differences, every fill.
        #[test]
        fn fill_gradient_matches_finite_differences((g, _x) in arb_graph_and_features(6, 10, 1)) {
            let ctx = GraphCtx::<f64>::new(&g);
            let e = random_features(g.num_edges(), 2, 4).into_dyn();
            let rows = ctx.edges_with_self_loops().num_edges();
            let mut rng = StdRng::seed_from_u64(9);
            let r = ArrayD::from_shape_simple_fn(IxDyn(&[rows, 2]), || rng.random::<f64>() - 0.5);
            for fill in [FillValue::Mean, FillValue::Add, FillValue::Max, FillValue::Min, FillValue::Const(0.3)] {
                let mut de = ArrayD::zeros(e.raw_dim());
                fill_loss(&mut TapeBuffers::new(), &ctx, (&e, &r), fill, Some(&mut de));
                compare(&e, &de, |e| fill_loss(&mut TapeBuffers::new(), &ctx, (e, &r), fill, None))?;
            }
        }

        /// Each layer's gradient with respect to tracked edge features (through the
        /// self-loop fill where the layer adds loops) matches central differences.
        #[test]
        fn layer_gradient_in_the_edge_features((g, x) in arb_graph_and_features(6, 10, 3)) {
            let ctx = GraphCtx::<f64>::new(&g);
            let e = random_features(g.num_edges(), 2, 5).into_dyn();
            let x = Features::dense(x);
            let layers: Vec<Box<dyn Layer<f64>>> = vec![
                Box::new(GATConv::new(3, 2).with_heads(2).with_edge_dim(2)),
                Box::new(GATConv::new(3, 2).with_edge_dim(2).with_fill_value(FillValue::Max)),
                Box::new(GATv2Conv::new(3, 2).with_heads(2).with_edge_dim(2)),
                Box::new(TransformerConv::new(3, 2).with_heads(2).with_edge_dim(2)),
                Box::new(ResGatedGraphConv::new(3, 2).with_edge_dim(2)),
            ];
            for layer in &layers {
                let mut rng = StdRng::seed_from_u64(1);
                let (p, _) = layer.init(&mut rng);
                let y = apply(layer, &Inputs::new(&ctx, &x).with_edge_attr(&e), &p, &crate::State::new(), false, &mut rng).unwrap().0;
                let r = ArrayD::from_shape_simple_fn(y.raw_dim(), || rng.random::<f64>() - 0.5);
                let mut de = ArrayD::zeros(e.raw_dim());
                layer_loss(&mut TapeBuffers::new(), layer.as_ref(), (&ctx, &x), (&p, &r), &e, Some(&mut de));
                compare(&e, &de, |e| layer_loss(&mut TapeBuffers::new(), layer.as_ref(), (&ctx, &x), (&p, &r), e, None))
                    .map_err(|err| TestCaseError::fail(format!("{}: {err}", layer.name())))?;
            }
        }
    }
}
