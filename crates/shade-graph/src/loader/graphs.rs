//! [`DataLoader`]: batches of a list of graphs, each one block-diagonal graph.

use std::sync::Arc;

use super::{Batches, Order};
use crate::error::{GraphError, GraphResult};
use crate::graph::Graph;

/// One batch of a [`DataLoader`]: the graphs batched into one ([`Graph::batch`]:
/// block-diagonal, data concatenated, `num_graphs` = the number of graphs) and their
/// positions in the loader's list (to pick their targets).
#[derive(Debug, Clone, PartialEq)]
pub struct GraphBatch {
    /// The batched graphs.
    pub graph: Graph,
    /// The position of each graph of the batch in the loader's list, in batch order.
    pub indices: Vec<usize>,
}

/// PyG's `DataLoader` over a list of graphs (graph classification and regression):
/// batches of `batch_size` graphs, each batched into one block-diagonal graph on a
/// worker thread while the previous batch trains. Defaults, epochs, shuffling and
/// shards as for [`NeighborLoader`](crate::NeighborLoader) (see the [module
/// documentation](crate::loader)).
///
/// Graphs whose data cannot be batched together (different names, types or trailing
/// shapes: `SHADE-E0311`) fail when their batch is prepared: the epoch yields that
/// error and ends.
///
/// ```
/// use shade_graph::{DataLoader, Graph};
/// let graphs: Vec<Graph> = (2..7).map(|n| Graph::from_edges(n, &[(0, 1)])).collect::<Result<_, _>>()?;
/// let loader = DataLoader::new(graphs)?.batch_size(2)?;
/// let sizes: Vec<usize> = loader.epoch(0).map(|b| b.map(|b| b.graph.num_graphs())).collect::<Result<_, _>>()?;
/// assert_eq!(sizes, [2, 2, 1]);
/// # Ok::<(), shade_graph::GraphError>(())
/// ```
#[derive(Debug, Clone)]
pub struct DataLoader {
    graphs: Arc<Vec<Graph>>,
    order: Order,
}

impl DataLoader {
    /// A loader over `graphs`; `SHADE-E0321` for an empty list.
    pub fn new(graphs: impl Into<Arc<Vec<Graph>>>) -> GraphResult<Self> {
        let graphs = graphs.into();
        if graphs.is_empty() {
            return Err(GraphError::NotEnough {
                what: "graphs for a DataLoader".into(),
                requested: 1,
                available: 0,
            });
        }
        Ok(DataLoader {
            graphs,
            order: Order::default(),
        })
    }

    order_setters!("graphs");

    /// The graphs.
    pub fn graphs(&self) -> &[Graph] {
        &self.graphs
    }

    /// Batches (steps) per epoch, the same on every rank.
    pub fn len(&self) -> usize {
        self.order.num_batches(self.graphs.len())
    }

    /// Whether an epoch has no batch.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Positions of the graphs of batch `index` of `epoch` on this rank.
    pub fn indices(&self, epoch: u64, index: usize) -> Vec<usize> {
        let perm = self.order.permutation(self.graphs.len(), epoch);
        self.order.slice(&perm, index).to_vec()
    }

    fn make(&self, indices: Vec<usize>) -> GraphResult<GraphBatch> {
        let picked: Vec<Graph> = indices.iter().map(|&i| self.graphs[i].clone()).collect();
        Ok(GraphBatch {
            graph: Graph::batch(&picked)?,
            indices,
        })
    }

    /// Batch `index` of `epoch` on this rank, on the calling thread (`SHADE-E0320` past
    /// the end).
    pub fn batch(&self, epoch: u64, index: usize) -> GraphResult<GraphBatch> {
        if index >= self.len() {
            return Err(GraphError::param(
                "batch index",
                index,
                &format!("below the number of batches per epoch ({})", self.len()),
            ));
        }
        self.make(self.indices(epoch, index))
    }

    /// The batches of `epoch`, prepared on a worker thread.
    pub fn epoch(&self, epoch: u64) -> Batches<GraphBatch> {
        self.epoch_map(epoch, |b| b)
    }

    /// The batches of `epoch`, each passed through `prepare` on the worker thread too.
    /// A rank's slice at the end of an epoch may be empty (see the [module
    /// documentation](crate::loader)): its batch is then a graph without nodes.
    pub fn epoch_map<R, F>(&self, epoch: u64, mut prepare: F) -> Batches<R>
    where
        R: Send + 'static,
        F: FnMut(GraphBatch) -> R + Send + 'static,
    {
        let me = self.clone();
        let perm = self.order.permutation(self.graphs.len(), epoch);
        Batches::spawn(self.len(), self.order.prefetch, move |index| {
            me.make(me.order.slice(&perm, index).to_vec())
                .map(&mut prepare)
        })
    }
}
