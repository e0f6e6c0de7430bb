//! Neighbour sampling, negative edges, edge and node splits, k-hop subgraphs.

use std::collections::HashSet;

use ndarray::Array1;
use proptest::prelude::*;
use shade_graph::{
    Graph, NeighborSampler, csbm, erdos_renyi, negative_edges, rand_graph, random_edge_split,
};

proptest! {
    // `cargo xtask fuzz --cases N` raises this through PROPTEST_CASES.
    #![proptest_config(shade_test_support::strategies::cases(64))]

    #[test]
    fn sampled_edges_are_real_and_respect_fanouts(n in 2usize..40, m in 0usize..200, f1 in 1usize..5, f2 in 1usize..4, replace in any::<bool>(), seed in any::<u64>()) {
        let mut g = rand_graph(n, m, seed).unwrap();
        g.set_node_data("id", Array1::from_iter((0..n).map(|v| v as i64))).unwrap();
        g.set_edge_data("eid", Array1::from_iter((0..m).map(|e| e as i64))).unwrap();
        let seeds: Vec<u32> = (0..(n as u32).min(3)).collect();
        let s = NeighborSampler { fanouts: vec![f1, f2], replace }.sample(&g, &seeds, seed).unwrap();
        prop_assert_eq!(&s.nodes[..s.num_seeds], &seeds[..]);
        prop_assert_eq!(s.graph.num_nodes(), s.nodes.len());
        // Every sampled edge maps back to the original edge, with its data.
        let eid = s.graph.edge_data().get("eid").unwrap().as_i64().unwrap();
        for i in 0..s.graph.num_edges() {
            let e = s.edge_ids[i] as usize;
            prop_assert_eq!(s.nodes[s.graph.src()[i] as usize], g.src()[e]);
            prop_assert_eq!(s.nodes[s.graph.dst()[i] as usize], g.dst()[e]);
            prop_assert_eq!(eid[i], e as i64);
        }
        let id = s.graph.node_data().get("id").unwrap().as_i64().unwrap();
        prop_assert!(s.nodes.iter().enumerate().all(|(i, &v)| id[i] == v as i64));
        // The first layer comes first: per seed exactly min(fanout, in-degree) edges
        // (the fanout itself with replacement), distinct without replacement.
        let expect: Vec<usize> = seeds.iter().map(|&v| {
            let deg = g.in_degree()[v as usize];
            if deg == 0 { 0 } else if replace { f1 } else { f1.min(deg) }
        }).collect();
        let l1: usize = expect.iter().sum();
        prop_assert!(s.graph.num_edges() >= l1);
        for (i, &want) in expect.iter().enumerate() {
            let mine: Vec<u32> = (0..l1).filter(|&k| s.graph.dst()[k] as usize == i).map(|k| s.edge_ids[k]).collect();
            prop_assert_eq!(mine.len(), want);
            if !replace {
                prop_assert_eq!(mine.iter().collect::<HashSet<_>>().len(), want);
            }
        }
        let again = NeighborSampler { fanouts: vec![f1, f2], replace }.sample(&g, &seeds, seed).unwrap();
        prop_assert_eq!(again, s);
    }
}

#[test]
fn full_fanout_takes_the_whole_k_hop_neighbourhood() {
    let g = erdos_renyi(60, 0.05, true, 4).unwrap();
    let s = NeighborSampler::new(vec![usize::MAX, usize::MAX])
        .sample(&g, &[0], 0)
        .unwrap();
    let k = g.k_hop_subgraph(&[0], 2).unwrap();
    let mut a = s.nodes.clone();
    a.sort_unstable();
    assert_eq!(a, k.nodes);
    // The edges of the first layer: every in-edge of node 0.
    let first: usize = g.in_degree()[0];
    assert!(s.graph.num_edges() >= first);
}

#[test]
fn k_hop_on_a_path_follows_edges_towards_the_seed() {
    let g = Graph::from_edges(5, &[(0, 1), (1, 2), (2, 3), (4, 3)]).unwrap();
    let k = g.k_hop_subgraph(&[3], 2).unwrap();
    assert_eq!(k.nodes, vec![1, 2, 3, 4]);
    assert_eq!(k.seed_index, vec![2]);
    assert_eq!(k.graph.edge_index(), (&[0u32, 1, 3][..], &[1u32, 2, 2][..]));
    assert_eq!(g.k_hop_subgraph(&[9], 1).unwrap_err().code(), "SHADE-E0302");
}

#[test]
fn negative_edges_are_non_edges() {
    let g = rand_graph(30, 200, 1).unwrap();
    let edges: HashSet<(u32, u32)> = g
        .src()
        .iter()
        .copied()
        .zip(g.dst().iter().copied())
        .collect();
    let neg = negative_edges(&g, 300, 2).unwrap();
    assert_eq!(neg.len(), 300);
    assert!(neg.iter().all(|&(u, v)| u != v && !edges.contains(&(u, v))));
    assert_eq!(neg.iter().collect::<HashSet<_>>().len(), 300);
    // Dense case: all remaining non-edges.
    let left = 30 * 29 - edges.iter().filter(|(u, v)| u != v).count();
    assert_eq!(negative_edges(&g, left, 3).unwrap().len(), left);
    assert_eq!(
        negative_edges(&g, left + 1, 3).unwrap_err().code(),
        "SHADE-E0321"
    );
}

#[test]
fn edge_split_partitions_the_pairs() {
    let ds = csbm(300, 2, 4, 8.0, 1.0, 5).unwrap();
    let g = &ds.graph;
    let s = random_edge_split(g, 0.1, 0.2, true, 9).unwrap();
    let pairs = g.num_edges() / 2;
    assert_eq!(
        s.train_pos.len() + s.val_pos.len() + s.test_pos.len(),
        pairs
    );
    assert_eq!(s.val_pos.len(), (0.1 * pairs as f64).round() as usize);
    let all: HashSet<_> = s
        .train_pos
        .iter()
        .chain(&s.val_pos)
        .chain(&s.test_pos)
        .collect();
    assert_eq!(all.len(), pairs);
    assert_eq!(s.train_graph.num_edges(), 2 * s.train_pos.len());
    assert!(s.train_graph.is_bidirected());
    let held: HashSet<(u32, u32)> = s.val_pos.iter().chain(&s.test_pos).copied().collect();
    let tg = &s.train_graph;
    assert!((0..tg.num_edges()).all(|e| {
        let (a, b) = (tg.src()[e], tg.dst()[e]);
        !held.contains(&(a.min(b), a.max(b)))
    }));
    let edges: HashSet<(u32, u32)> = g
        .src()
        .iter()
        .copied()
        .zip(g.dst().iter().copied())
        .collect();
    assert_eq!(
        (s.val_neg.len(), s.test_neg.len()),
        (s.val_pos.len(), s.test_pos.len())
    );
    assert!(
        s.val_neg
            .iter()
            .chain(&s.test_neg)
            .all(|&(u, v)| !edges.contains(&(u, v)) && !edges.contains(&(v, u)))
    );
    assert_eq!(
        random_edge_split(g, 0.7, 0.5, true, 0).unwrap_err().code(),
        "SHADE-E0320"
    );
}
