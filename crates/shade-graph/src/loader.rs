//! Mini-batch loaders: [`NeighborLoader`] (seed-node batches of a large graph, each a
//! sampled computation subgraph, PyG's `NeighborLoader`) and [`DataLoader`] (batches of
//! a list of graphs, PyG's `DataLoader`). Both are iterators whose next batch is
//! prepared on a worker thread while the current one trains.
//!
//! What they share (the [`Order`] of items):
//!
//! - **Epochs are explicit.** `loader.epoch(e)` yields the batches of epoch `e`; with
//!   `shuffle(true)` the items are permuted by a stream seeded from `(seed, e)`, so a
//!   run is reproducible and any epoch can be replayed (a restarted job continues
//!   where its checkpoint says). Every item is in exactly one batch per epoch; the
//!   last batch is smaller unless `drop_last(true)` drops it.
//! - **Shards for data parallelism.** `shard(rank, world)` makes each global batch
//!   `world × batch_size` consecutive items of the epoch's order, of which rank `r`
//!   takes the `r`-th `batch_size` slice. Every rank therefore takes the same number of
//!   steps, and the union of the ranks' batches of a step is the batch a single
//!   process with `batch_size × world` would see. At the end of an epoch a rank's slice
//!   may be short or empty (fewer items than `world × batch_size` left); a trainer
//!   weights each rank's gradient by its item count.
//! - **A worker thread per epoch iterator**, handing batches over a bounded channel
//!   (`prefetch` batches ahead, default 2). Dropping the iterator stops and joins the
//!   worker. An error while preparing a batch (e.g. graphs whose data cannot be
//!   batched) is yielded as that batch's `Err` and ends the epoch. A panic of the
//!   worker (a bug: every input is validated when the loader is built) is resumed on
//!   the consuming thread.
//!
//! ```
//! use shade_graph::{NeighborLoader, csbm, split_per_class};
//! let ds = csbm(2_000, 2, 8, 10.0, 1.0, 0)?;
//! let split = split_per_class(&ds.labels, 2, 200, 100, 100, 0)?;
//! let loader = NeighborLoader::new(ds.graph.clone(), &[10, 5])?
//!     .input_nodes(&split.train)?
//!     .batch_size(64)?
//!     .shuffle(true)
//!     .seed(7);
//! assert_eq!(loader.len(), 7); // 400 seeds in batches of 64
//! let mut seen = 0;
//! for batch in loader.epoch(0) {
//!     let batch = batch?;
//!     // Outputs and the loss are taken over the first `num_seeds` rows.
//!     seen += batch.num_seeds;
//!     assert!(batch.graph.num_nodes() >= batch.num_seeds);
//! }
//! assert_eq!(seen, 400);
//! # Ok::<(), shade_graph::GraphError>(())
//! ```
//!
//! GCN's symmetric normalisation reads degrees, which on a sampled subgraph are the
//! subgraph's (as in PyG). To reproduce full-batch GCN exactly on batches with full
//! fan-out (`-1` per hop), normalise once on the whole graph
//! ([`Graph::gcn_normalized`](crate::Graph::gcn_normalized): the graph's edges and a
//! self-loop per node, with their coefficients as weights) and aggregate with those
//! weights unchanged (shade-gnn's `GCNConv { normalize: false, .. }`).

/// The batching setters both loaders share (they hold an `order: Order`), documented
/// with the loader's item name (`seeds`, `graphs`).
macro_rules! order_setters {
    ($items:literal) => {
        #[doc = concat!("The ", $items, " per batch (per rank when sharded); `SHADE-E0320` for 0.")]
        pub fn batch_size(mut self, n: usize) -> GraphResult<Self> {
            Order::check_batch_size(n)?;
            self.order.batch_size = n;
            Ok(self)
        }

        #[doc = concat!("Permute the ", $items, " at every epoch (seeded by [`seed`](Self::seed) and the epoch).")]
        pub fn shuffle(mut self, on: bool) -> Self {
            self.order.shuffle = on;
            self
        }

        /// The seed of the permutations and of the sampling (default 0).
        pub fn seed(mut self, seed: u64) -> Self {
            self.order.seed = seed;
            self
        }

        /// Drop the last batch when it is incomplete.
        pub fn drop_last(mut self, on: bool) -> Self {
            self.order.drop_last = on;
            self
        }

        /// Batches prepared ahead by the worker thread (default 2); `SHADE-E0320` for 0.
        pub fn prefetch(mut self, n: usize) -> GraphResult<Self> {
            Order::check_prefetch(n)?;
            self.order.prefetch = n;
            Ok(self)
        }

        /// Rank `rank` of `world` ranks takes its slice of every global batch (see the
        /// [module documentation](crate::loader)); `SHADE-E0320` unless `rank < world`.
        pub fn shard(mut self, rank: usize, world: usize) -> GraphResult<Self> {
            Order::check_shard(rank, world)?;
            self.order.rank = rank;
            self.order.world = world;
            Ok(self)
        }

        /// The batching settings.
        pub fn order(&self) -> &Order {
            &self.order
        }
    };
}

mod graphs;
mod neighbor;
mod prefetch;

pub use graphs::{DataLoader, GraphBatch};
pub use neighbor::NeighborLoader;
pub use prefetch::Batches;

use crate::error::{GraphError, GraphResult};
use rand::{SeedableRng, rngs::StdRng, seq::SliceRandom};

/// How items are grouped into batches: batch size, shuffling, seed, the incomplete
/// last batch, prefetch depth and the shard of this rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Order {
    /// Items per batch (per rank when sharded).
    pub batch_size: usize,
    /// Permute the items at every epoch.
    pub shuffle: bool,
    /// Seed of the permutations and of the sampling streams.
    pub seed: u64,
    /// Drop the last global batch when it is incomplete.
    pub drop_last: bool,
    /// This process's rank.
    pub rank: usize,
    /// Number of ranks sharing the items.
    pub world: usize,
    /// Batches prepared ahead by the worker thread.
    pub prefetch: usize,
}

impl Default for Order {
    /// PyG's defaults: batches of 1, in order, the last one kept; one rank; two batches
    /// prepared ahead.
    fn default() -> Self {
        Order {
            batch_size: 1,
            shuffle: false,
            seed: 0,
            drop_last: false,
            rank: 0,
            world: 1,
            prefetch: 2,
        }
    }
}

/// splitmix64's finaliser: decorrelates seeds built from small counters.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A seed from several parts (seed, epoch, batch, rank, ...).
pub(crate) fn seed_of(parts: &[u64]) -> u64 {
    parts.iter().fold(0x5eed_u64, |h, &p| {
        mix(h ^ mix(p.wrapping_add(0x9e37_79b9_7f4a_7c15)))
    })
}

impl Order {
    pub(crate) fn check_batch_size(n: usize) -> GraphResult<()> {
        if n == 0 {
            return Err(GraphError::param(
                "batch_size",
                0,
                "at least 1 item per batch",
            ));
        }
        Ok(())
    }

    pub(crate) fn check_shard(rank: usize, world: usize) -> GraphResult<()> {
        if world == 0 {
            return Err(GraphError::param("world", 0, "at least 1 rank"));
        }
        if rank >= world {
            return Err(GraphError::InvalidParameter {
                name: "rank",
                value: rank.to_string(),
                expected: format!("below the number of ranks ({world}); ranks count from 0"),
            });
        }
        Ok(())
    }

    pub(crate) fn check_prefetch(n: usize) -> GraphResult<()> {
        if n == 0 {
            return Err(GraphError::param(
                "prefetch",
                0,
                "at least 1 batch prepared ahead",
            ));
        }
        Ok(())
    }

    /// Items of one global batch (all ranks' batches of one step).
    fn global(&self) -> usize {
        self.batch_size * self.world
    }

    /// Batches (steps) per epoch over `items` items; the same on every rank.
    pub fn num_batches(&self, items: usize) -> usize {
        if self.drop_last {
            items / self.global()
        } else {
            items.div_ceil(self.global())
        }
    }

    /// The order of the items in `epoch`: a permutation seeded from `(seed, epoch)`
    /// when shuffling, the identity otherwise.
    pub fn permutation(&self, items: usize, epoch: u64) -> Vec<usize> {
        let mut p: Vec<usize> = (0..items).collect();
        if self.shuffle {
            p.shuffle(&mut StdRng::seed_from_u64(seed_of(&[self.seed, epoch])));
        }
        p
    }

    /// This rank's slice of batch `index` in the order `perm` (possibly empty at the
    /// end of an epoch).
    pub fn slice<'p>(&self, perm: &'p [usize], index: usize) -> &'p [usize] {
        let lo = (index * self.global() + self.rank * self.batch_size).min(perm.len());
        let hi = (lo + self.batch_size).min(perm.len());
        &perm[lo..hi]
    }

    /// The random stream of batch `index` of `epoch` on this rank.
    pub(crate) fn batch_stream(&self, epoch: u64, index: usize) -> StdRng {
        StdRng::seed_from_u64(seed_of(&[
            self.seed,
            epoch,
            index as u64,
            self.rank as u64,
            1,
        ]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_every_global_batch() {
        let order = Order {
            batch_size: 3,
            shuffle: true,
            seed: 4,
            ..Order::default()
        };
        let perm = order.permutation(10, 2);
        let mut sorted = perm.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..10).collect::<Vec<_>>());
        assert_ne!(perm, order.permutation(10, 3), "epochs differ");
        let shard = |rank| Order {
            rank,
            world: 2,
            ..order
        };
        assert_eq!(shard(0).num_batches(10), 2);
        let mut all = Vec::new();
        for b in 0..2 {
            all.extend_from_slice(shard(0).slice(&perm, b));
            all.extend_from_slice(shard(1).slice(&perm, b));
        }
        assert_eq!(all, perm);
        // 10 items in global batches of 6: the second is 4 items, 3 + 1.
        assert_eq!(shard(1).slice(&perm, 1).len(), 1);
        let dropped = Order {
            drop_last: true,
            ..shard(0)
        };
        assert_eq!(dropped.num_batches(10), 1);
    }
}
