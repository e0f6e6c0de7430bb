//! Message passing: [`apply_edges`] (per-edge messages), [`aggregate`] (sum, mean, max,
//! min into the destination nodes), [`aggregate_attention`] (softmax over the incoming
//! edges, then a weighted sum), and [`propagate`] (both).
//!
//! Edges are `src[e] -> dst[e]` of an [`EdgeIndex`]; messages flow from source to
//! destination, as in PyG's default `flow="source_to_target"` (`x_j` is the source,
//! `x_i` the target). Messages are `[E, ...]` values in the edge order; aggregation
//! produces `[N, ...]`, and nodes without incoming edges receive zeros.
//!
//! Sum and mean aggregation of copied or weighted-copied source rows take the fused
//! sparse × dense path ([`Tape::spmm`] with the edge set's cached aggregation matrix)
//! instead of gathering `E` rows and scattering them back.
//!
//! ```
//! use shade_autodiff::tensor::{self, TapeBuffers};
//! use shade_autodiff::Const;
//! use shade_gnn::{GraphCtx, message::{propagate, Aggr, Message}};
//! let g = shade_graph::Graph::try_new(3, vec![0, 1, 2], vec![1, 2, 1])?;
//! let ctx = GraphCtx::<f64>::new(&g);
//! let x = ndarray::array![[1.0], [10.0], [100.0]];
//! let y = tensor::value(&mut TapeBuffers::new(), |t, (x,)| {
//!     propagate(t, ctx.edges(), x, Message::CopySrc, Aggr::Mean)
//! }, (Const(&x),))?;
//! assert_eq!(y.into_raw_vec_and_offset().0, vec![0.0, 50.5, 10.0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::ctx::{EdgeIndex, Float};
use shade_autodiff::tensor::{Element, Tape, Var};
use shade_autodiff::{AdError, AdResult};

/// How incoming messages are combined.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Aggr {
    /// Sum.
    #[default]
    Sum,
    /// Mean (0 for nodes without incoming edges).
    Mean,
    /// Column-wise maximum (0 for nodes without incoming edges).
    Max,
    /// Column-wise minimum (0 for nodes without incoming edges).
    Min,
}

/// A built-in message function, or the messages of a user-written one.
#[derive(Clone, Copy, Debug)]
pub enum Message {
    /// `x_j`: the source row.
    CopySrc,
    /// `x_i`: the destination row.
    CopyDst,
    /// `w_e · x_j` with the edge set's constant weights (ones when it has none).
    WeightedSrc,
    /// `e_e ⊙ x_j` with tracked or constant edge values `[E, 1]`, `[E]` or `[E, F]`.
    EdgeMulSrc(Var),
    /// `x_j - x_i`.
    SrcMinusDst,
    /// `⟨x_j, x_i⟩` as an `[E, 1]` value.
    Dot,
    /// Precomputed messages `[E, ...]` (e.g. from [`apply_edges_with`]).
    Given(Var),
}

/// Gathers the source row of every edge: `[E, ...]`.
pub fn gather_src<'a, T: Float>(
    t: &mut Tape<'a, T>,
    edges: &'a EdgeIndex<T>,
    x: Var,
) -> AdResult<Var> {
    t.index_select(x, edges.src())
}

/// Gathers the destination row of every edge: `[E, ...]`.
pub fn gather_dst<'a, T: Float>(
    t: &mut Tape<'a, T>,
    edges: &'a EdgeIndex<T>,
    x: Var,
) -> AdResult<Var> {
    t.index_select(x, edges.dst())
}

fn as_column<T: Element>(t: &mut Tape<'_, T>, e: Var) -> AdResult<Var> {
    let s = t.shape(e)?.to_vec();
    if s.len() == 1 {
        t.reshape(e, &[s[0], 1])
    } else {
        Ok(e)
    }
}

/// The per-edge messages of a built-in message function on node values `x` (`[N, F]`).
pub fn apply_edges<'a, T: Float>(
    t: &mut Tape<'a, T>,
    edges: &'a EdgeIndex<T>,
    msg: Message,
    x: Var,
) -> AdResult<Var> {
    match msg {
        Message::CopySrc => gather_src(t, edges, x),
        Message::CopyDst => gather_dst(t, edges, x),
        Message::WeightedSrc => {
            let xj = gather_src(t, edges, x)?;
            match edges.weights() {
                Some(w) => {
                    let w = t.constant(w);
                    t.mul(xj, w)
                }
                None => Ok(xj),
            }
        }
        Message::EdgeMulSrc(e) => {
            let xj = gather_src(t, edges, x)?;
            let e = as_column(t, e)?;
            t.mul(xj, e)
        }
        Message::SrcMinusDst => {
            let xj = gather_src(t, edges, x)?;
            let xi = gather_dst(t, edges, x)?;
            t.sub(xj, xi)
        }
        Message::Dot => {
            let xj = gather_src(t, edges, x)?;
            let xi = gather_dst(t, edges, x)?;
            let p = t.mul(xj, xi)?;
            let s = t.sum_axis(p, 1)?;
            as_column(t, s)
        }
        Message::Given(m) => Ok(m),
    }
}

/// What a user-written message function receives for every edge at once.
#[derive(Clone, Copy, Debug)]
pub struct EdgeInputs {
    /// `x_i`: destination rows `[E, ...]`.
    pub x_i: Var,
    /// `x_j`: source rows `[E, ...]`.
    pub x_j: Var,
    /// Edge features `[E, D]`, if given.
    pub edge_attr: Option<Var>,
}

/// Per-edge messages of a user-written function `f(x_i, x_j, e)` (PyG's `message`):
/// gathers destination rows of `x_dst` and source rows of `x_src`, then calls `f`.
///
/// The function must return one row per edge; otherwise the error is
/// [`AdError::ShapeMismatch`].
pub fn apply_edges_with<'a, T: Float, F>(
    t: &mut Tape<'a, T>,
    edges: &'a EdgeIndex<T>,
    x_src: Var,
    x_dst: Var,
    edge_attr: Option<Var>,
    f: F,
) -> AdResult<Var>
where
    F: FnOnce(&mut Tape<'a, T>, EdgeInputs) -> AdResult<Var>,
{
    let x_j = gather_src(t, edges, x_src)?;
    let x_i = gather_dst(t, edges, x_dst)?;
    let m = f(
        t,
        EdgeInputs {
            x_i,
            x_j,
            edge_attr,
        },
    )?;
    let s = t.shape(m)?;
    if s.first() != Some(&edges.num_edges()) {
        return Err(AdError::ShapeMismatch {
            op: "apply_edges_with",
            left: vec![edges.num_edges()],
            right: s.to_vec(),
        });
    }
    Ok(m)
}

/// Aggregates per-edge messages `[E, ...]` into the destination nodes: `[N, ...]`.
pub fn aggregate<'a, T: Float>(
    t: &mut Tape<'a, T>,
    edges: &'a EdgeIndex<T>,
    msgs: Var,
    aggr: Aggr,
) -> AdResult<Var> {
    let (dst, n) = (edges.dst(), edges.num_nodes());
    match aggr {
        Aggr::Sum => t.scatter_add(msgs, dst, n),
        Aggr::Mean => t.scatter_mean(msgs, dst, n),
        Aggr::Max => t.scatter_max(msgs, dst, n),
        Aggr::Min => {
            let neg = t.neg(msgs)?;
            let m = t.scatter_max(neg, dst, n)?;
            t.neg(m)
        }
    }
}

/// Attention aggregation: `out[v] = Σ_{e: dst[e] = v} α_e · msg_e` with
/// `α = softmax(scores)` over the edges into each node, per head.
///
/// `scores` is `[E, H]`, `msgs` is `[E, H, C]` (or `[E, C]` with `H = 1`); the result
/// is `[N, H, C]` (or `[N, C]`). Returns the attention coefficients too.
pub fn aggregate_attention<'a, T: Float>(
    t: &mut Tape<'a, T>,
    edges: &'a EdgeIndex<T>,
    scores: Var,
    msgs: Var,
) -> AdResult<(Var, Var)> {
    let alpha = t.segment_softmax(scores, edges.dst(), edges.num_nodes())?;
    let out = weighted_sum(t, edges, alpha, msgs)?;
    Ok((out, alpha))
}

/// `out[v] = Σ_{e: dst[e] = v} α_e · msg_e` for given coefficients `α` (`[E, H]`) and
/// messages (`[E, H, C]`, or `[E, C]` with `H = 1`).
pub fn weighted_sum<'a, T: Float>(
    t: &mut Tape<'a, T>,
    edges: &'a EdgeIndex<T>,
    alpha: Var,
    msgs: Var,
) -> AdResult<Var> {
    let ms = t.shape(msgs)?.to_vec();
    let a = t.shape(alpha)?.to_vec();
    let a3 = match (ms.len(), a.len()) {
        (3, 2) => t.reshape(alpha, &[a[0], a[1], 1])?,
        (2, 1) => t.reshape(alpha, &[a[0], 1])?,
        (2, 2) if a[1] == 1 => alpha,
        _ => {
            return Err(AdError::ShapeMismatch {
                op: "aggregate_attention",
                left: a,
                right: ms,
            });
        }
    };
    let w = t.mul(msgs, a3)?;
    t.scatter_add(w, edges.dst(), edges.num_nodes())
}

/// `out[v, h, :] = Σ_{e: dst_e = v} α[e, h] · x[src_e, h, :]` for node values `x`
/// `[N, H·C]` (heads side by side) and per-edge, per-head coefficients `α` `[E, H]`
/// (e.g. from [`Tape::segment_softmax`]): attention aggregation in one pass, without
/// the `[E, H·C]` messages. Result `[N, H·C]`.
pub fn propagate_weighted<'a, T: crate::Float>(
    t: &mut Tape<'a, T>,
    edges: &'a EdgeIndex<T>,
    alpha: Var,
    x: Var,
) -> AdResult<Var> {
    t.coo_spmm(edges.dst(), edges.src(), edges.num_nodes(), alpha, x)
}

/// Messages then aggregation. Sum and mean of [`Message::CopySrc`] and
/// [`Message::WeightedSrc`] run as one sparse × dense product.
pub fn propagate<'a, T: Float>(
    t: &mut Tape<'a, T>,
    edges: &'a EdgeIndex<T>,
    x: Var,
    msg: Message,
    aggr: Aggr,
) -> AdResult<Var> {
    let fused = match (msg, aggr) {
        (Message::CopySrc, Aggr::Sum) => Some(edges.sum_matrix()),
        (Message::CopySrc, Aggr::Mean) => Some(edges.mean_matrix()),
        (Message::WeightedSrc, Aggr::Sum) => Some(edges.weighted_sum_matrix()),
        (Message::WeightedSrc, Aggr::Mean) => Some(edges.weighted_mean_matrix()),
        _ => None,
    };
    if let Some(a) = fused {
        return t.spmm(a, x);
    }
    let m = apply_edges(t, edges, msg, x)?;
    aggregate(t, edges, m, aggr)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::GraphCtx;
    use crate::testing::{
        arb_graph_and_features, check_array_gradient, proptest_config, random_features,
        random_graph,
    };
    use ndarray::{Array2, ArrayD, Ix2};
    use proptest::prelude::*;
    use shade_autodiff::tensor::{self, TapeBuffers};
    use shade_autodiff::{Const, Duplicated};
    use shade_graph::Graph;

    /// Aggregation from the definition, with plain loops over the edge list.
    fn reference(g: &Graph, x: &Array2<f64>, msg: &str, aggr: Aggr) -> Array2<f64> {
        let (n, f) = x.dim();
        let m: Vec<(usize, Vec<f64>)> = (0..g.num_edges())
            .map(|e| {
                let (j, i) = (g.src()[e] as usize, g.dst()[e] as usize);
                let row: Vec<f64> = match msg {
                    "copy" => x.row(j).to_vec(),
                    "weighted" => x.row(j).iter().map(|v| v * g.weight(e)).collect(),
                    "diff" => (0..f).map(|c| x[[j, c]] - x[[i, c]]).collect(),
                    "dot" => vec![(0..f).map(|c| x[[j, c]] * x[[i, c]]).sum()],
                    _ => unreachable!(),
                };
                (i, row)
            })
            .collect();
        let w = m.first().map_or(f, |r| r.1.len());
        let mut out = Array2::zeros((n, w));
        for v in 0..n {
            let rows: Vec<&Vec<f64>> = m.iter().filter(|r| r.0 == v).map(|r| &r.1).collect();
            if rows.is_empty() {
                continue;
            }
            for c in 0..w {
                let vals = rows.iter().map(|r| r[c]);
                out[[v, c]] = match aggr {
                    Aggr::Sum => vals.sum(),
                    Aggr::Mean => vals.sum::<f64>() / rows.len() as f64,
                    Aggr::Max => vals.fold(f64::NEG_INFINITY, f64::max),
                    Aggr::Min => vals.fold(f64::INFINITY, f64::min),
                };
            }
        }
        out
    }

    fn run(g: &Graph, x: &Array2<f64>, msg: &str, aggr: Aggr) -> Array2<f64> {
        let ctx = GraphCtx::<f64>::new(g);
        let y = tensor::value(
            &mut TapeBuffers::new(),
            |t, (xv,)| {
                let m = match msg {
                    "copy" => Message::CopySrc,
                    "weighted" => Message::WeightedSrc,
                    "diff" => Message::SrcMinusDst,
                    _ => Message::Dot,
                };
                propagate(t, ctx.edges(), xv, m, aggr)
            },
            (Const(x),),
        )
        .unwrap();
        y.into_dimensionality::<Ix2>().unwrap()
    }

    #[test]
    fn every_message_and_aggregation_matches_the_definition() {
        let g = random_graph(8, 20, 11)
            .with_weights((0..22).map(|e| 0.5 + e as f64 * 0.1).collect())
            .unwrap();
        let x = random_features(9, 3, 12);
        for msg in ["copy", "weighted", "diff", "dot"] {
            for aggr in [Aggr::Sum, Aggr::Mean, Aggr::Max, Aggr::Min] {
                let y = run(&g, &x, msg, aggr);
                crate::testing::assert_close(&y, &reference(&g, &x, msg, aggr), 1e-12);
            }
        }
    }

    #[test]
    fn attention_and_user_messages() {
        // Node 1 receives from 0 and 2; scores 0 and ln 3 give weights 1/4 and 3/4.
        let g = Graph::new(3, vec![0, 2], vec![1, 1]);
        let ctx = GraphCtx::<f64>::new(&g);
        let x = ndarray::array![[4.0], [0.0], [8.0]];
        let s = ndarray::array![[0.0], [3f64.ln()]];
        let y = tensor::value(
            &mut TapeBuffers::new(),
            |t, (x, s)| {
                let m = gather_src(t, ctx.edges(), x)?;
                Ok(aggregate_attention(t, ctx.edges(), s, m)?.0)
            },
            (Const(&x), Const(&s)),
        )
        .unwrap();
        assert!((y[[1, 0]] - 7.0).abs() < 1e-12 && y[[0, 0]] == 0.0);
        // A user message x_j * x_i + e, summed.
        let e = ndarray::array![[1.0], [2.0]];
        let y = tensor::value(
            &mut TapeBuffers::new(),
            |t, (x, e)| {
                let m = apply_edges_with(t, ctx.edges(), x, x, Some(e), |t, ei| {
                    let p = t.mul(ei.x_j, ei.x_i)?;
                    t.add(p, ei.edge_attr.expect("given"))
                })?;
                aggregate(t, ctx.edges(), m, Aggr::Sum)
            },
            (Const(&x), Const(&e)),
        )
        .unwrap();
        assert_eq!(y[[1, 0]], 3.0);
        // A message with the wrong number of rows is a coded error.
        let err = tensor::value(
            &mut TapeBuffers::new(),
            |t, (x,)| apply_edges_with(t, ctx.edges(), x, x, None, |_, _| Ok(x)),
            (Const(&x),),
        )
        .unwrap_err();
        assert_eq!(err.code(), "SHADE-E0110", "{err}");
    }

    /// `sum(y²) + sum(y)` for `y = propagate(...)` in the `k`-th configuration.
    fn case<'a>(
        t: &mut shade_autodiff::tensor::Tape<'a, f64>,
        edges: &'a crate::EdgeIndex<f64>,
        x: shade_autodiff::tensor::Var,
        e: shade_autodiff::tensor::Var,
        k: usize,
    ) -> shade_autodiff::AdResult<shade_autodiff::tensor::Var> {
        let (msg, aggr) = match k {
            0 => (Message::CopySrc, Aggr::Sum),
            1 => (Message::CopySrc, Aggr::Mean),
            2 => (Message::CopySrc, Aggr::Max),
            3 => (Message::CopySrc, Aggr::Min),
            4 => (Message::EdgeMulSrc(e), Aggr::Sum),
            5 => (Message::SrcMinusDst, Aggr::Mean),
            6 => (Message::Dot, Aggr::Sum),
            7 => (Message::CopyDst, Aggr::Max),
            _ => (Message::WeightedSrc, Aggr::Mean),
        };
        let y = propagate(t, edges, x, msg, aggr)?;
        let y2 = t.mul(y, y)?;
        let s = t.sum(y2)?;
        let s1 = t.sum(y)?;
        t.add(s, s1)
    }

    proptest! {
        #![proptest_config(proptest_config(64))]
        /// Gradients of every path (fused and gathered, every aggregation) against
        /// central differences; the edge values of `EdgeMulSrc` are tracked too.
        #[test]
        fn gradients_match_finite_differences((g, x) in arb_graph_and_features(6, 10, 2)) {
            let ctx = GraphCtx::<f64>::new(&g);
            let ne = g.num_edges();
            let ev: ArrayD<f64> = ArrayD::from_shape_fn(ndarray::IxDyn(&[ne, 1]), |i| 0.3 + 0.1 * i[0] as f64);
            let x = x.into_dyn();
            for k in 0..9 {
                let f = |x: &ArrayD<f64>, e: &ArrayD<f64>, grad: Option<(&mut ArrayD<f64>, &mut ArrayD<f64>)>| {
                    let mut bufs = TapeBuffers::new();
                    match grad {
                        Some((dx, de)) => tensor::gradient(&mut bufs, |t, (x, e)| case(t, ctx.edges(), x, e, k), (Duplicated(x, dx), Duplicated(e, de))),
                        None => tensor::value(&mut bufs, |t, (x, e)| case(t, ctx.edges(), x, e, k), (Const(x), Const(e))).map(|v| v.iter().sum()),
                    }
                };
                let (mut dx, mut de) = (ArrayD::zeros(x.raw_dim()), ArrayD::zeros(ev.raw_dim()));
                f(&x, &ev, Some((&mut dx, &mut de))).unwrap();
                // Kink-aware (a max or min with a tie, e.g. over repeated edges, has
                // one-sided slopes only): the features, then the edge values.
                check_array_gradient(&x, &dx, |x| f(x, &ev, None).unwrap())
                    .map_err(|e| TestCaseError::fail(format!("case {k}, features: {e}")))?;
                check_array_gradient(&ev, &de, |e| f(&x, e, None).unwrap())
                    .map_err(|e| TestCaseError::fail(format!("case {k}, edge values: {e}")))?;
            }
        }
    }
}
