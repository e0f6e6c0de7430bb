//! Global add / mean / max pooling over the graphs of a batch.

use crate::ctx::{Float, GraphCtx};
use crate::error::GnnResult;
use crate::layer::{Env, Input, Layer};
use crate::layers::blocks::rows_per_node;
use crate::message::Aggr;
use crate::params::{ParamVars, Params, State, StateScope};
use rand::rngs::StdRng;
use shade_autodiff::tensor::{Tape, Var};

fn check_rows<T: Float>(t: &Tape<'_, T>, ctx: &GraphCtx<T>, x: Var) -> GnnResult<()> {
    let s = t.shape(x)?;
    if s.first() != Some(&ctx.num_nodes()) {
        return Err(rows_per_node(s, ctx.num_nodes()));
    }
    Ok(())
}

/// `out[g] = Σ_{v in graph g} x_v`: `[num_graphs, F]`.
///
/// Errors with [`GnnError::InputShape`](crate::GnnError::InputShape) when `x` does not have one row per node.
pub fn global_add_pool<'a, T: Float>(
    t: &mut Tape<'a, T>,
    ctx: &'a GraphCtx<T>,
    x: Var,
) -> GnnResult<Var> {
    check_rows(t, ctx, x)?;
    Ok(t.scatter_add(x, ctx.batch(), ctx.num_graphs())?)
}

/// `out[g]` = mean of the rows of graph `g` (zeros for an empty graph).
///
/// Errors with [`GnnError::InputShape`](crate::GnnError::InputShape) when `x` does not have one row per node.
pub fn global_mean_pool<'a, T: Float>(
    t: &mut Tape<'a, T>,
    ctx: &'a GraphCtx<T>,
    x: Var,
) -> GnnResult<Var> {
    check_rows(t, ctx, x)?;
    Ok(t.scatter_mean(x, ctx.batch(), ctx.num_graphs())?)
}

/// `out[g]` = column-wise maximum of the rows of graph `g` (zeros for an empty graph).
///
/// Errors with [`GnnError::InputShape`](crate::GnnError::InputShape) when `x` does not have one row per node.
pub fn global_max_pool<'a, T: Float>(
    t: &mut Tape<'a, T>,
    ctx: &'a GraphCtx<T>,
    x: Var,
) -> GnnResult<Var> {
    check_rows(t, ctx, x)?;
    Ok(t.scatter_max(x, ctx.batch(), ctx.num_graphs())?)
}

/// Global pooling as a layer (no parameters): sum, mean or max over each graph of
/// the batch (`Min` gives the column-wise minimum).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GlobalPool {
    /// How the rows of a graph are combined.
    pub aggr: Aggr,
}

impl GlobalPool {
    /// A readout with the given aggregation.
    pub fn new(aggr: Aggr) -> Self {
        GlobalPool { aggr }
    }
}

impl<T: Float> Layer<T> for GlobalPool {
    fn name(&self) -> &'static str {
        "GlobalPool"
    }

    fn init(&self, _rng: &mut StdRng) -> (Params<T>, State<T>) {
        (Params::new(), State::new())
    }

    fn forward<'a>(
        &self,
        t: &mut Tape<'a, T>,
        env: &mut Env<'a, '_, T>,
        x: Input<'a, T>,
        _p: ParamVars<'_>,
        _st: StateScope<'_, T>,
    ) -> GnnResult<Var> {
        let g = env.graph("GlobalPool")?;
        let x = x.dense(t)?;
        match self.aggr {
            Aggr::Sum => global_add_pool(t, g, x),
            Aggr::Mean => global_mean_pool(t, g, x),
            Aggr::Max => global_max_pool(t, g, x),
            Aggr::Min => {
                let n = t.neg(x)?;
                let m = global_max_pool(t, g, n)?;
                Ok(t.neg(m)?)
            }
        }
    }

    fn is_graph_layer(&self) -> bool {
        true
    }
    fn is_readout(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{arb_batch, batch3};
    use super::*;
    use crate::testing::{assert_close, check_layer_gradient, layer_output, proptest_config};
    use ndarray::Array2;
    use proptest::prelude::*;
    use shade_autodiff::tensor::{self, TapeBuffers};

    #[test]
    fn matches_dense_reference() {
        let (g, x) = batch3();
        let ind = g.graph_indicator().to_vec();
        for aggr in [Aggr::Sum, Aggr::Mean, Aggr::Max, Aggr::Min] {
            let (y, _) = layer_output(&GlobalPool::new(aggr), Some(&g), &x, 0);
            let mut r = Array2::zeros((3, 3));
            for gid in 0..3 {
                let rows: Vec<usize> = (0..g.num_nodes())
                    .filter(|&v| ind[v] as usize == gid)
                    .collect();
                for c in 0..3 {
                    let vals = rows.iter().map(|&v| x[[v, c]]);
                    r[[gid, c]] = match aggr {
                        Aggr::Sum => vals.sum(),
                        Aggr::Mean => vals.sum::<f64>() / rows.len() as f64,
                        Aggr::Max => vals.fold(f64::NEG_INFINITY, f64::max),
                        Aggr::Min => vals.fold(f64::INFINITY, f64::min),
                    };
                }
            }
            assert_close(&y, &r, 1e-12);
        }
    }

    #[test]
    fn wrong_row_count_is_a_coded_error() {
        let (g, _) = batch3();
        let ctx = GraphCtx::<f64>::new(&g);
        let x = Array2::<f64>::zeros((2, 3));
        let carry = crate::ErrorCarry::new();
        let err = carry
            .land(tensor::value(
                &mut TapeBuffers::new(),
                |t, (x,)| carry.lift(global_add_pool(t, &ctx, x)),
                (shade_autodiff::Const(&x),),
            ))
            .unwrap_err();
        assert_eq!(err.code(), "SHADE-E0410");
        assert_eq!(
            err.to_string(),
            "input has 2 rows but the layer expects one row per node of the graph, [13, features]"
        );
    }

    proptest! {
        #![proptest_config(proptest_config(24))]
        #[test]
        fn gradient_matches_finite_differences((g, x) in arb_batch(3)) {
            for aggr in [Aggr::Sum, Aggr::Mean, Aggr::Max, Aggr::Min] {
                check_layer_gradient(&GlobalPool::new(aggr), Some(&g), &x).map_err(TestCaseError::fail)?;
            }
        }
    }
}
