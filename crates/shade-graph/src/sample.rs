//! Sampling for mini-batches and link prediction: layer-wise neighbour sampling (the
//! core of [`NeighborLoader`](crate::NeighborLoader)), negative edges, and a random
//! edge split. Everything is seeded.

use std::collections::HashSet;
use std::sync::Arc;

use rand::{RngExt, SeedableRng, rngs::StdRng, seq::SliceRandom};

use crate::data::DataStore;
use crate::error::{GraphError, GraphResult};
use crate::graph::{Graph, check_nodes};
use crate::transform::select_sparse_rows;

/// Layer-wise neighbour sampling (GraphSAGE / PyG's `NeighborSampler` behind
/// `NeighborLoader`): from the seeds, hop `h` draws up to `fanouts[h]` **incoming**
/// edges of every node first reached at hop `h - 1` (the seeds for hop 0), so messages
/// flow from the sampled neighbours towards the seeds. Without replacement (PyG's
/// default) a node with fewer in-edges than the fan-out keeps all of them.
///
/// A fan-out of 0 samples nothing, which is never what a model wants: it is refused
/// with `SHADE-E0320`, as is an empty list of fan-outs (PyG's `-1`, "all neighbours",
/// is `usize::MAX` here, [`NeighborSampler::from_num_neighbors`] takes PyG's list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeighborSampler {
    /// Edges drawn per node and hop, seed hop first; `usize::MAX` = all (each once,
    /// even with replacement).
    pub fanouts: Vec<usize>,
    /// Draw with replacement (an edge may be drawn several times).
    pub replace: bool,
}

/// A sampled computation subgraph (PyG's mini-batch of `NeighborLoader`).
#[derive(Debug, Clone, PartialEq)]
pub struct SampledSubgraph {
    /// The sampled edges over the sampled nodes, renumbered (node `i` is `nodes[i]`),
    /// with node, edge and sparse-feature rows carried along. Only sampled edges are
    /// present (PyG's `directed = True`), each once.
    pub graph: Graph,
    /// Original ids of the sampled nodes (PyG's `n_id`): the seeds first, in order,
    /// then the others in discovery order, hop by hop.
    pub nodes: Vec<u32>,
    /// Original id of every sampled edge (PyG's `e_id`), hop by hop.
    pub edge_ids: Vec<u32>,
    /// Number of seeds, the first nodes (PyG's `batch_size`): outputs and the loss
    /// are taken over rows `0..num_seeds`.
    pub num_seeds: usize,
    /// Nodes first reached at each hop, the seeds first (PyG's `num_sampled_nodes`;
    /// `fanouts.len() + 1` entries summing to `nodes.len()`).
    pub num_sampled_nodes: Vec<usize>,
    /// Edges sampled at each hop (PyG's `num_sampled_edges`; `fanouts.len()` entries
    /// summing to the edge count).
    pub num_sampled_edges: Vec<usize>,
}

impl SampledSubgraph {
    /// The original ids of the seeds.
    pub fn seeds(&self) -> &[u32] {
        &self.nodes[..self.num_seeds]
    }
}

/// Reusable working memory of the sampler: the global → local node map (one entry
/// per node of the graph, `u32::MAX` = not sampled; reset after each sample) and the
/// draws of one node.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    local: Vec<u32>,
    picks: Vec<usize>,
}

const UNSEEN: u32 = u32::MAX;

impl NeighborSampler {
    /// A sampler with these fan-outs, without replacement.
    pub fn new(fanouts: Vec<usize>) -> Self {
        NeighborSampler {
            fanouts,
            replace: false,
        }
    }

    /// A sampler from PyG's `num_neighbors` list: `-1` takes all neighbours, a positive
    /// count up to that many. `SHADE-E0320` for an empty list, 0, or a count below -1.
    ///
    /// ```
    /// use shade_graph::NeighborSampler;
    /// let s = NeighborSampler::from_num_neighbors(&[10, -1])?;
    /// assert_eq!(s.fanouts, vec![10, usize::MAX]);
    /// let e = NeighborSampler::from_num_neighbors(&[10, 0]).unwrap_err();
    /// assert_eq!(e.code(), "SHADE-E0320");
    /// # Ok::<(), shade_graph::GraphError>(())
    /// ```
    pub fn from_num_neighbors(num_neighbors: &[i64]) -> GraphResult<Self> {
        let fanouts = num_neighbors
            .iter()
            .enumerate()
            .map(|(h, &k)| match k {
                -1 => Ok(usize::MAX),
                k if k > 0 => Ok(usize::try_from(k).unwrap_or(usize::MAX)),
                k => Err(bad_fanout(h, &k.to_string())),
            })
            .collect::<GraphResult<Vec<_>>>()?;
        let s = NeighborSampler::new(fanouts);
        s.validate()?;
        Ok(s)
    }

    /// `SHADE-E0320` for an empty list of fan-outs or a fan-out of 0.
    pub fn validate(&self) -> GraphResult<()> {
        if self.fanouts.is_empty() {
            return Err(GraphError::param(
                "num_neighbors",
                "[]",
                "at least one hop (one fan-out per message-passing layer; -1 = all neighbours)",
            ));
        }
        match self.fanouts.iter().position(|&k| k == 0) {
            Some(h) => Err(bad_fanout(h, "0")),
            None => Ok(()),
        }
    }

    /// Samples the computation graph of `seeds` (duplicates are merged) with the
    /// random stream `seed`.
    ///
    /// Errors: `SHADE-E0320` for invalid fan-outs ([`validate`](Self::validate)),
    /// `SHADE-E0302` for a seed outside the graph.
    ///
    /// ```
    /// use shade_graph::{NeighborSampler, csbm};
    /// let ds = csbm(500, 2, 4, 10.0, 1.0, 0)?;
    /// let s = NeighborSampler::new(vec![5, 3]).sample(&ds.graph, &[0, 1, 2], 42)?;
    /// assert_eq!(s.seeds(), &[0, 1, 2]);
    /// assert!(s.graph.num_edges() <= 3 * 5 + 15 * 3);
    /// # Ok::<(), shade_graph::GraphError>(())
    /// ```
    ///
    /// A fan-out of 0 would draw nothing in its layer and beyond (an empty subgraph
    /// without a word): it is refused with `SHADE-E0320`.
    pub fn sample(&self, g: &Graph, seeds: &[u32], seed: u64) -> GraphResult<SampledSubgraph> {
        self.validate()?;
        check_nodes("seeds", seeds, g.num_nodes())?;
        let mut rng = StdRng::seed_from_u64(seed);
        Ok(self.sample_with(g, seeds, &mut rng, &mut Scratch::default()))
    }

    /// The sampling itself, on validated fan-outs and seeds, with reusable scratch.
    pub(crate) fn sample_with(
        &self,
        g: &Graph,
        seeds: &[u32],
        rng: &mut StdRng,
        scratch: &mut Scratch,
    ) -> SampledSubgraph {
        let csr = g.csr_by_dst();
        let Scratch { local, picks } = scratch;
        if local.len() != g.num_nodes() {
            *local = vec![UNSEEN; g.num_nodes()];
        }
        let mut nodes: Vec<u32> = Vec::with_capacity(seeds.len());
        for &s in seeds {
            if local[s as usize] == UNSEEN {
                local[s as usize] = nodes.len() as u32;
                nodes.push(s);
            }
        }
        let num_seeds = nodes.len();
        let mut num_sampled_nodes = vec![num_seeds];
        let mut num_sampled_edges = Vec::with_capacity(self.fanouts.len());
        let (mut src, mut dst, mut edge_ids) = (Vec::new(), Vec::new(), Vec::new());
        let mut frontier = 0..num_seeds;
        for &fanout in &self.fanouts {
            let edges_before = edge_ids.len();
            for i in frontier.clone() {
                let v = nodes[i];
                let (nb, ids) = csr.row(v as usize);
                draw(nb.len(), fanout, self.replace, rng, picks);
                for &k in picks.iter() {
                    let u = nb[k];
                    let slot = &mut local[u as usize];
                    if *slot == UNSEEN {
                        *slot = nodes.len() as u32;
                        nodes.push(u);
                    }
                    src.push(*slot);
                    dst.push(i as u32);
                    edge_ids.push(ids[k]);
                }
            }
            num_sampled_nodes.push(nodes.len() - frontier.end);
            num_sampled_edges.push(edge_ids.len() - edges_before);
            frontier = frontier.end..nodes.len();
        }
        for &v in &nodes {
            local[v as usize] = UNSEEN;
        }
        let ids: Vec<usize> = edge_ids.iter().map(|&e| e as usize).collect();
        let rows: Vec<usize> = nodes.iter().map(|&v| v as usize).collect();
        let graph = Graph {
            num_nodes: nodes.len(),
            src,
            dst,
            weights: g
                .weights
                .as_ref()
                .map(|w| ids.iter().map(|&e| w[e]).collect()),
            node_ptr: vec![0, nodes.len()],
            node_data: g.node_data.map(|a| a.select_rows(&rows)),
            edge_data: g.edge_data.map(|a| a.select_rows(&ids)),
            graph_data: if g.num_graphs() > 1 {
                DataStore::default()
            } else {
                g.graph_data.clone()
            },
            sparse_features: g
                .sparse_features
                .as_ref()
                .map(|x| select_sparse_rows(x, &rows)),
            cache: Arc::default(),
        };
        SampledSubgraph {
            graph,
            nodes,
            edge_ids,
            num_seeds,
            num_sampled_nodes,
            num_sampled_edges,
        }
    }
}

fn bad_fanout(hop: usize, value: &str) -> GraphError {
    GraphError::InvalidParameter {
        name: "num_neighbors",
        value: format!("{value} at hop {hop}"),
        expected: "a positive fan-out, or -1 for all neighbours (a fan-out of 0 samples no edge)"
            .into(),
    }
}

/// Positions (into a row of `deg` entries) of one node's draws, sorted: all of them
/// when the fan-out covers the row (without replacement) or is "all", `fanout` draws
/// with replacement, or `fanout` distinct ones (Floyd's algorithm; a linear membership
/// test is cheapest for the usual small fan-outs).
fn draw(deg: usize, fanout: usize, replace: bool, rng: &mut StdRng, picks: &mut Vec<usize>) {
    picks.clear();
    if deg == 0 {
        return;
    }
    if fanout == usize::MAX || (!replace && fanout >= deg) {
        picks.extend(0..deg);
        return;
    }
    if replace {
        picks.extend((0..fanout).map(|_| rng.random_range(0..deg)));
    } else if fanout <= 64 {
        for j in deg - fanout..deg {
            let t = rng.random_range(0..=j);
            picks.push(if picks.contains(&t) { j } else { t });
        }
    } else {
        picks.extend(rand::seq::index::sample(rng, deg, fanout).iter());
    }
    picks.sort_unstable();
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
