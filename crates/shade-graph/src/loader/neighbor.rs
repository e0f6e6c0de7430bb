//! [`NeighborLoader`]: seed-node batches of one graph, each a sampled computation
//! subgraph with the seeds first.

use std::sync::Arc;

use super::{Batches, Order};
use crate::error::{GraphError, GraphResult};
use crate::graph::{Graph, check_nodes};
use crate::sample::{NeighborSampler, SampledSubgraph, Scratch};

/// PyG's `NeighborLoader`: the input nodes in batches of `batch_size` seeds, each
/// batch the computation subgraph sampled around its seeds ([`NeighborSampler`]:
/// `num_neighbors[h]` incoming edges per node at hop `h`, `-1` = all, without
/// replacement unless [`replace`](Self::replace)), relabelled with the seeds first.
/// Node data (features, labels), edge data and sparse features travel with the
/// subgraph; a model's outputs and loss are taken over its first
/// [`num_seeds`](SampledSubgraph::num_seeds) rows.
///
/// Defaults as PyG's: every node is an input node, batches of 1, no shuffling, the
/// last batch kept. Each epoch's batches are prepared on a worker thread
/// ([`epoch`](Self::epoch)); [`batch`](Self::batch) computes one batch on the calling
/// thread, identical to the one the iterator yields. See the [module
/// documentation](crate::loader) for epochs, shards and errors.
///
/// Building the loader validates everything (`SHADE-E0320` for a fan-out of 0, a
/// batch size of 0, an invalid shard; `SHADE-E0302` for an input node outside the
/// graph; `SHADE-E0321` for an empty input set; duplicated input nodes are refused
/// with `SHADE-E0320`, since a seed must be in one batch per epoch), so iterating
/// cannot fail.
#[derive(Debug, Clone)]
pub struct NeighborLoader {
    graph: Arc<Graph>,
    sampler: NeighborSampler,
    input_nodes: Arc<Vec<u32>>,
    order: Order,
}

impl NeighborLoader {
    /// A loader over every node of `graph` with PyG's `num_neighbors` per hop.
    pub fn new(graph: impl Into<Arc<Graph>>, num_neighbors: &[i64]) -> GraphResult<Self> {
        let graph = graph.into();
        let sampler = NeighborSampler::from_num_neighbors(num_neighbors)?;
        let input_nodes = Arc::new((0..graph.num_nodes() as u32).collect::<Vec<_>>());
        if input_nodes.is_empty() {
            return Err(no_input_nodes());
        }
        Ok(NeighborLoader {
            graph,
            sampler,
            input_nodes,
            order: Order::default(),
        })
    }

    /// The seed nodes (PyG's `input_nodes`, e.g. the training nodes), in this order
    /// when not shuffled.
    pub fn input_nodes(mut self, nodes: &[u32]) -> GraphResult<Self> {
        check_nodes("input_nodes", nodes, self.graph.num_nodes())?;
        if nodes.is_empty() {
            return Err(no_input_nodes());
        }
        let mut first = vec![u32::MAX; self.graph.num_nodes()];
        for (i, &v) in nodes.iter().enumerate() {
            let f = &mut first[v as usize];
            if *f != u32::MAX {
                return Err(GraphError::InvalidParameter {
                    name: "input_nodes",
                    value: format!("node {v} at positions {f} and {i}"),
                    expected: "each node once (a seed belongs to one batch per epoch)".into(),
                });
            }
            *f = i as u32;
        }
        self.input_nodes = Arc::new(nodes.to_vec());
        Ok(self)
    }

    order_setters!("seeds");

    /// Sample with replacement.
    pub fn replace(mut self, on: bool) -> Self {
        self.sampler.replace = on;
        self
    }

    /// The graph sampled from.
    pub fn graph(&self) -> &Arc<Graph> {
        &self.graph
    }

    /// The sampler (fan-outs, replacement).
    pub fn sampler(&self) -> &NeighborSampler {
        &self.sampler
    }

    /// Batches (steps) per epoch, the same on every rank.
    pub fn len(&self) -> usize {
        self.order.num_batches(self.input_nodes.len())
    }

    /// Whether an epoch has no batch (`drop_last` with fewer input nodes than one
    /// global batch).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The seeds of batch `index` of `epoch` on this rank (empty past the end).
    pub fn seeds(&self, epoch: u64, index: usize) -> Vec<u32> {
        let perm = self.order.permutation(self.input_nodes.len(), epoch);
        self.seeds_in(&perm, index)
    }

    fn seeds_in(&self, perm: &[usize], index: usize) -> Vec<u32> {
        self.order
            .slice(perm, index)
            .iter()
            .map(|&i| self.input_nodes[i])
            .collect()
    }

    /// Batch `index` of `epoch` on this rank, computed on the calling thread: the batch
    /// [`epoch`](Self::epoch) yields at that position. `SHADE-E0320` past the end.
    pub fn batch(&self, epoch: u64, index: usize) -> GraphResult<SampledSubgraph> {
        if index >= self.len() {
            return Err(GraphError::param(
                "batch index",
                index,
                &format!("below the number of batches per epoch ({})", self.len()),
            ));
        }
        let seeds = self.seeds(epoch, index);
        let mut rng = self.order.batch_stream(epoch, index);
        Ok(self
            .sampler
            .sample_with(&self.graph, &seeds, &mut rng, &mut Scratch::default()))
    }

    /// The batches of `epoch`, prepared on a worker thread.
    pub fn epoch(&self, epoch: u64) -> Batches<SampledSubgraph> {
        self.epoch_map(epoch, |sub| sub)
    }

    /// The batches of `epoch`, each passed through `prepare` on the worker thread too
    /// (e.g. to turn the subgraph into a model's inputs while the current batch
    /// trains).
    pub fn epoch_map<R, F>(&self, epoch: u64, mut prepare: F) -> Batches<R>
    where
        R: Send + 'static,
        F: FnMut(SampledSubgraph) -> R + Send + 'static,
    {
        let me = self.clone();
        let mut scratch = Scratch::default();
        let mut perm = None;
        Batches::spawn(self.len(), self.order.prefetch, move |index| {
            let perm =
                perm.get_or_insert_with(|| me.order.permutation(me.input_nodes.len(), epoch));
            let seeds = me.seeds_in(perm, index);
            let mut rng = me.order.batch_stream(epoch, index);
            Ok(prepare(me.sampler.sample_with(
                &me.graph,
                &seeds,
                &mut rng,
                &mut scratch,
            )))
        })
    }
}

fn no_input_nodes() -> GraphError {
    GraphError::NotEnough {
        what: "input nodes for a NeighborLoader".into(),
        requested: 1,
        available: 0,
    }
}
