//! Pooling over the graphs of a batch: [`global_add_pool`], [`global_mean_pool`],
//! [`global_max_pool`] (and the layer [`GlobalPool`]), [`GlobalAttentionPool`],
//! [`TopKPool`] and [`Set2Set`].
//!
//! The batch is the graph's `graph_indicator` (prepared as [`GraphCtx::batch`]); every
//! readout returns one row per graph, `[num_graphs, ...]`, and a graph without nodes
//! reads out zeros. [`TopKPool`] returns the pooled graph: which nodes survive is a
//! constant computed from the scores' values, while the gating of the kept features by
//! their scores stays differentiable.
//!
//! | pooling | file | parameters (local names) | options (PyG's defaults) |
//! |---|---|---|---|
//! | [`GlobalPool`], [`global_add_pool`], [`global_mean_pool`], [`global_max_pool`] | `global.rs` | none | the aggregation |
//! | [`GlobalAttentionPool`] | `attention.rs` | `gate_nn.*`, `nn.*` (if given) | the two networks |
//! | [`TopKPool`] | `topk.rs` | `weight [1, in]` | `ratio` ([`Ratio::Fraction`] `0.5` or [`Ratio::Count`]), `min_score` (none; softmax scores), `multiplier` (1), `nonlinearity` (tanh) |
//! | [`Set2Set`] | `set2set.rs` | `lstm.weight_ih_l0`, `lstm.weight_hh_l0`, `lstm.bias_ih_l0`, `lstm.bias_hh_l0` | `processing_steps` |
//!
//! ```
//! use rand::{SeedableRng, rngs::StdRng};
//! use shade_gnn::{apply, Features, GraphCtx, Inputs, Layer};
//! use shade_gnn::message::Aggr;
//! use shade_gnn::pool::GlobalPool;
//! let a = shade_graph::Graph::try_new(2, vec![0], vec![1])?;
//! let b = shade_graph::Graph::try_new(1, vec![], vec![])?;
//! let batch = shade_graph::Graph::batch(&[a, b])?;
//! let ctx = GraphCtx::<f64>::new(&batch);
//! let x = Features::dense(ndarray::array![[1.0], [3.0], [5.0]]);
//! let mut rng = StdRng::seed_from_u64(0);
//! let pool = GlobalPool::new(Aggr::Mean);
//! let (p, st) = Layer::<f64>::init(&pool, &mut rng);
//! let (y, _) = apply(&pool, &Inputs::new(&ctx, &x), &p, &st, false, &mut rng)?;
//! assert_eq!(y.into_raw_vec_and_offset().0, vec![2.0, 5.0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#[cfg(doc)]
use crate::GraphCtx;

mod attention;
mod global;
mod set2set;
mod topk;

pub use attention::GlobalAttentionPool;
pub use global::{GlobalPool, global_add_pool, global_max_pool, global_mean_pool};
pub use set2set::Set2Set;
pub use topk::{Ratio, TopKOutput, TopKPool};

#[cfg(test)]
mod test_util {
    use ndarray::Array2;
    use proptest::prelude::*;
    use shade_graph::Graph;

    /// Two random graphs (isolated nodes, self-loops, multi-edges) as one batch, with
    /// `[N, f]` features.
    pub(crate) fn arb_batch(f: usize) -> impl Strategy<Value = (Graph, Array2<f64>)> {
        (
            crate::testing::arb_graph(4, 6),
            crate::testing::arb_graph(4, 6),
            any::<u64>(),
        )
            .prop_map(move |(a, b, seed)| {
                let g = Graph::batch(&[a, b]).expect("two graphs");
                let x = crate::testing::random_features(g.num_nodes(), f, seed);
                (g, x)
            })
    }

    /// A fixed batch of three graphs (the middle one isolated nodes only).
    pub(crate) fn batch3() -> (Graph, Array2<f64>) {
        let a = crate::testing::random_graph(4, 7, 1);
        let b = Graph::new(2, vec![], vec![]);
        let c = crate::testing::random_graph(5, 9, 2);
        let g = Graph::batch(&[a, b, c]).expect("three graphs");
        let x = crate::testing::random_features(g.num_nodes(), 3, 3);
        (g, x)
    }
}
