//! Sampling for mini-batches and link prediction: layer-wise neighbour sampling,
//! negative edges, and a random edge split. Everything is seeded.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use rand::{RngExt, SeedableRng, rngs::StdRng, seq::SliceRandom};

use crate::data::DataStore;
use crate::error::{GraphError, GraphResult};
use crate::graph::{Graph, check_nodes};
use crate::transform::select_sparse_rows;

/// Layer-wise neighbour sampling (GraphSAGE / PyG `NeighborLoader`): from the seeds,
/// each layer draws up to `fanouts[l]` incoming edges per frontier node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeighborSampler {
    /// Edges drawn per node and layer, outermost (seed) layer first; `usize::MAX` = all
    /// (each once, even with replacement).
    pub fanouts: Vec<usize>,
    /// Draw with replacement (an edge may be drawn several times).
    pub replace: bool,
}

/// A sampled computation subgraph.
#[derive(Debug, Clone, PartialEq)]
pub struct SampledSubgraph {
    /// The sampled edges over the sampled nodes, renumbered (node `i` is `nodes[i]`),
    /// with node, edge and sparse-feature rows carried along.
    pub graph: Graph,
    /// Original ids of the sampled nodes: the seeds first, in order, then the others in
    /// discovery order.
    pub nodes: Vec<u32>,
    /// Original id of every sampled edge.
    pub edge_ids: Vec<u32>,
    /// Number of seeds (the first nodes).
    pub num_seeds: usize,
}

impl NeighborSampler {
    /// A sampler with these fan-outs, without replacement.
    pub fn new(fanouts: Vec<usize>) -> Self {
        NeighborSampler {
            fanouts,
            replace: false,
        }
    }

    /// Samples the computation graph of `seeds` (duplicates are merged).
    ///
    /// ```
    /// use shade_graph::{NeighborSampler, csbm};
    /// let ds = csbm(500, 2, 4, 10.0, 1.0, 0)?;
    /// let s = NeighborSampler::new(vec![5, 3]).sample(&ds.graph, &[0, 1, 2], 42)?;
    /// assert_eq!(&s.nodes[..3], &[0, 1, 2]);
    /// assert!(s.graph.num_edges() <= 3 * 5 + 15 * 3);
    /// # Ok::<(), shade_graph::GraphError>(())
    /// ```
    ///
    /// A fan-out of 0 would draw nothing in its layer and beyond (an empty subgraph
    /// without a word): it is refused with `SHADE-E0320`.
    pub fn sample(&self, g: &Graph, seeds: &[u32], seed: u64) -> GraphResult<SampledSubgraph> {
        if let Some(l) = self.fanouts.iter().position(|&f| f == 0) {
            return Err(GraphError::InvalidParameter {
                name: "fanouts",
                value: format!("{:?}", self.fanouts),
                expected: format!(
                    "at least 1 neighbour per node in every layer (layer {l} has 0; usize::MAX takes all)"
                ),
            });
        }
        check_nodes("seeds", seeds, g.num_nodes())?;
        let mut rng = StdRng::seed_from_u64(seed);
        let csr = g.csr_by_dst();
        let mut index: HashMap<u32, u32> = HashMap::new();
        let mut nodes = Vec::new();
        for &s in seeds {
            index.entry(s).or_insert_with(|| {
                nodes.push(s);
                nodes.len() as u32 - 1
            });
        }
        let num_seeds = nodes.len();
        let mut frontier = nodes.clone();
        let mut edge_ids = Vec::new();
        let mut picks: Vec<usize> = Vec::new();
        for &fanout in &self.fanouts {
            let mut next = Vec::new();
            for &v in &frontier {
                let (nb, ids) = csr.row(v as usize);
                picks.clear();
                if nb.is_empty() {
                    continue;
                } else if fanout >= nb.len() && (!self.replace || fanout == usize::MAX) {
                    picks.extend(0..nb.len());
                } else if self.replace {
                    picks.extend((0..fanout).map(|_| rng.random_range(0..nb.len())));
                } else {
                    picks.extend(rand::seq::index::sample(&mut rng, nb.len(), fanout).iter());
                    picks.sort_unstable();
                }
                for &k in &picks {
                    edge_ids.push(ids[k]);
                    let u = nb[k];
                    index.entry(u).or_insert_with(|| {
                        nodes.push(u);
                        next.push(u);
                        nodes.len() as u32 - 1
                    });
                }
            }
            frontier = next;
        }
        let ids: Vec<usize> = edge_ids.iter().map(|&e| e as usize).collect();
        let mut sub = g.select_edges(&ids);
        sub.src.iter_mut().for_each(|s| *s = index[s]);
        sub.dst.iter_mut().for_each(|d| *d = index[d]);
        let rows: Vec<usize> = nodes.iter().map(|&v| v as usize).collect();
        sub.num_nodes = nodes.len();
        sub.node_ptr = vec![0, nodes.len()];
        sub.node_data = g.node_data.map(|a| a.select_rows(&rows));
        sub.sparse_features = g
            .sparse_features
            .as_ref()
            .map(|x| select_sparse_rows(x, &rows));
        if g.num_graphs() > 1 {
            sub.graph_data = DataStore::default();
        }
        sub.cache = Arc::default();
        Ok(SampledSubgraph {
            graph: sub,
            nodes,
            edge_ids,
            num_seeds,
        })
    }
}

fn pair_key(u: u32, v: u32) -> u64 {
    ((u as u64) << 32) | v as u64
}

/// `num` distinct ordered pairs `(u, v)`, `u != v`, that are not edges of `g` (nor in
/// `exclude`), drawn uniformly. `SHADE-E0321` if fewer exist.
pub fn negative_edges(g: &Graph, num: usize, seed: u64) -> GraphResult<Vec<(u32, u32)>> {
    negative_edges_excluding(g, num, &HashSet::new(), seed)
}

fn negative_edges_excluding(
    g: &Graph,
    num: usize,
    exclude: &HashSet<u64>,
    seed: u64,
) -> GraphResult<Vec<(u32, u32)>> {
    let n = g.num_nodes() as u64;
    let mut taken: HashSet<u64> = exclude.clone();
    taken.extend(
        g.src()
            .iter()
            .zip(g.dst())
            .filter(|(s, d)| s != d)
            .map(|(&s, &d)| pair_key(s, d)),
    );
    let total = n.saturating_mul(n.saturating_sub(1));
    let available = total.saturating_sub(taken.len() as u64);
    if (num as u64) > available {
        return Err(GraphError::NotEnough {
            what: "negative edges".into(),
            requested: num,
            available: available as usize,
        });
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(num);
    if (num as u64 + taken.len() as u64) * 2 > total {
        // Dense: enumerate the non-edges (few in number) and shuffle.
        let mut all: Vec<(u32, u32)> = (0..n as u32)
            .flat_map(|u| (0..n as u32).map(move |v| (u, v)))
            .filter(|&(u, v)| u != v && !taken.contains(&pair_key(u, v)))
            .collect();
        all.shuffle(&mut rng);
        all.truncate(num);
        return Ok(all);
    }
    while out.len() < num {
        let u = rng.random_range(0..n as u32);
        let v = rng.random_range(0..n as u32);
        if u != v && taken.insert(pair_key(u, v)) {
            out.push((u, v));
        }
    }
    Ok(out)
}

/// Positive and negative edges of a link-prediction split.
#[derive(Debug, Clone, PartialEq)]
pub struct EdgeSplit {
    /// The graph for message passing: the training edges only (data carried along).
    pub train_graph: Graph,
    /// Training edges.
    pub train_pos: Vec<(u32, u32)>,
    /// Validation edges.
    pub val_pos: Vec<(u32, u32)>,
    /// Validation non-edges (as many as `val_pos`).
    pub val_neg: Vec<(u32, u32)>,
    /// Test edges.
    pub test_pos: Vec<(u32, u32)>,
    /// Test non-edges (as many as `test_pos`, disjoint from `val_neg`).
    pub test_neg: Vec<(u32, u32)>,
}

/// Splits the edges at random into train/validation/test (PyG's `RandomLinkSplit`).
/// With `undirected`, a pair `{u, v}` is one unit: its edges in both directions stay
/// together in the training graph and it is reported once as `(min, max)`. Self-loops
/// never go to validation or test. `SHADE-E0320` for fractions outside `[0, 1]` or
/// summing above 1.
pub fn random_edge_split(
    g: &Graph,
    val_frac: f64,
    test_frac: f64,
    undirected: bool,
    seed: u64,
) -> GraphResult<EdgeSplit> {
    for (name, f) in [("val_frac", val_frac), ("test_frac", test_frac)] {
        if !(0.0..=1.0).contains(&f) {
            return Err(GraphError::param(name, f, "a fraction in [0, 1]"));
        }
    }
    if val_frac + test_frac > 1.0 {
        return Err(GraphError::param(
            "val_frac + test_frac",
            val_frac + test_frac,
            "at most 1",
        ));
    }
    let key = |e: usize| {
        let (s, d) = (g.src()[e], g.dst()[e]);
        if undirected {
            (s.min(d), s.max(d))
        } else {
            (s, d)
        }
    };
    let mut units: Vec<(u32, u32)> = (0..g.num_edges())
        .filter(|&e| g.src()[e] != g.dst()[e])
        .map(key)
        .collect();
    units.sort_unstable();
    units.dedup();
    let mut rng = StdRng::seed_from_u64(seed);
    units.shuffle(&mut rng);
    let nv = (val_frac * units.len() as f64).round() as usize;
    let nt = ((test_frac * units.len() as f64).round() as usize).min(units.len() - nv);
    let val_pos = units[..nv].to_vec();
    let test_pos = units[nv..nv + nt].to_vec();
    let held: HashSet<(u32, u32)> = units[..nv + nt].iter().copied().collect();
    let keep: Vec<usize> = (0..g.num_edges())
        .filter(|&e| !held.contains(&key(e)))
        .collect();
    let train_graph = g.edge_subgraph(&keep)?;
    let mut train_pos = units[nv + nt..].to_vec();
    train_pos.sort_unstable();
    // Negatives: never an edge in either direction when undirected.
    let mut exclude = HashSet::new();
    if undirected {
        exclude.extend(g.src().iter().zip(g.dst()).map(|(&s, &d)| pair_key(d, s)));
    }
    let neg = negative_edges_excluding(g, nv + nt, &exclude, rng.random())?;
    let (val_neg, test_neg) = (neg[..nv].to_vec(), neg[nv..].to_vec());
    Ok(EdgeSplit {
        train_graph,
        train_pos,
        val_pos,
        val_neg,
        test_pos,
        test_neg,
    })
}
