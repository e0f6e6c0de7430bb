//! The mini-batch loaders: `NeighborLoader` (seeds once per epoch, relabelling, edges
//! of the graph, full fan-out = the whole in-neighbourhood, shards) and `DataLoader`
//! (graphs once per epoch, errors travel to the consumer), and their worker threads.

use std::collections::HashSet;

use ndarray::{Array1, Array2};
use proptest::prelude::*;
use shade_graph::{DataLoader, Graph, NeighborLoader, NeighborSampler, rand_graph};

fn with_ids(mut g: Graph) -> Graph {
    let (n, m) = (g.num_nodes(), g.num_edges());
    g.set_node_data("id", Array1::from_iter((0..n).map(|v| v as i64)))
        .unwrap();
    g.set_edge_data("eid", Array1::from_iter((0..m).map(|e| e as i64)))
        .unwrap();
    g
}

proptest! {
    // `cargo xtask fuzz --cases N` raises this through PROPTEST_CASES.
    #![proptest_config(shade_test_support::strategies::cases(48))]

    #[test]
    fn every_seed_once_per_epoch_and_subgraphs_are_consistent(
        n in 2usize..60, m in 0usize..240, k in 1usize..20, batch in 1usize..9,
        f1 in prop_oneof![Just(-1i64), 1i64..4], f2 in prop_oneof![Just(-1i64), 1i64..3],
        shuffle in any::<bool>(), replace in any::<bool>(), seed in any::<u64>(), epoch in 0u64..4,
    ) {
        let g = with_ids(rand_graph(n, m, seed).unwrap());
        let input: Vec<u32> = (0..n as u32).rev().step_by(2).take(k).collect();
        let loader = NeighborLoader::new(g.clone(), &[f1, f2]).unwrap()
            .input_nodes(&input).unwrap()
            .batch_size(batch).unwrap()
            .shuffle(shuffle).replace(replace).seed(seed);
        prop_assert_eq!(loader.len(), input.len().div_ceil(batch));
        let edges: HashSet<(u32, u32)> = g.src().iter().copied().zip(g.dst().iter().copied()).collect();
        let mut seen = Vec::new();
        for (b, sub) in loader.epoch(epoch).enumerate() {
            let sub = sub.unwrap();
            // The iterator's batch is the synchronous one.
            prop_assert_eq!(&sub, &loader.batch(epoch, b).unwrap());
            prop_assert_eq!(sub.seeds(), &loader.seeds(epoch, b)[..]);
            prop_assert!(sub.num_seeds >= 1 && sub.num_seeds <= batch);
            seen.extend_from_slice(sub.seeds());
            let sg = &sub.graph;
            prop_assert_eq!(sg.num_nodes(), sub.nodes.len());
            prop_assert_eq!(sub.num_sampled_nodes.iter().sum::<usize>(), sub.nodes.len());
            prop_assert_eq!(sub.num_sampled_edges.iter().sum::<usize>(), sg.num_edges());
            prop_assert_eq!(sub.num_sampled_nodes[0], sub.num_seeds);
            // Relabelling: local node i is nodes[i], with its data row; distinct nodes.
            let id = sg.node_data().get("id").unwrap().as_i64().unwrap();
            for (i, &v) in sub.nodes.iter().enumerate() {
                prop_assert_eq!(id[i], v as i64);
            }
            prop_assert_eq!(sub.nodes.iter().collect::<HashSet<_>>().len(), sub.nodes.len());
            // Every edge is an edge of the graph (the one its id names), with its data.
            let eid = sg.edge_data().get("eid").unwrap().as_i64().unwrap();
            for e in 0..sg.num_edges() {
                let (s, d) = (sub.nodes[sg.src()[e] as usize], sub.nodes[sg.dst()[e] as usize]);
                prop_assert!(edges.contains(&(s, d)));
                let orig = sub.edge_ids[e] as usize;
                prop_assert_eq!((g.src()[orig], g.dst()[orig]), (s, d));
                prop_assert_eq!(eid[e], orig as i64);
            }
            // Hop 0 is the seeds' in-edges: `min(fanout, in-degree)` distinct edges
            // per seed without replacement.
            let hop0 = sub.num_sampled_edges[0];
            for (i, &v) in sub.seeds().iter().enumerate() {
                let mine: Vec<u32> = (0..hop0).filter(|&e| sg.dst()[e] as usize == i).map(|e| sub.edge_ids[e]).collect();
                let deg = g.in_degree()[v as usize];
                let want = match (f1, replace) {
                    (-1, _) => deg,
                    (f, false) => deg.min(f as usize),
                    (f, true) => if deg == 0 { 0 } else { f as usize },
                };
                prop_assert_eq!(mine.len(), want);
                if !replace {
                    prop_assert_eq!(mine.iter().collect::<HashSet<_>>().len(), want);
                }
            }
        }
        // Every seed exactly once.
        let mut a = seen.clone();
        a.sort_unstable();
        let mut b = input.clone();
        b.sort_unstable();
        prop_assert_eq!(a, b);
        if !shuffle {
            prop_assert_eq!(seen, input);
        }
    }

    #[test]
    fn shards_split_the_single_process_batches(
        n in 2usize..50, m in 0usize..200, batch in 1usize..6, world in 1usize..4, seed in any::<u64>(),
    ) {
        let g = rand_graph(n, m, seed).unwrap();
        let whole = NeighborLoader::new(g.clone(), &[-1]).unwrap()
            .batch_size(batch * world).unwrap().shuffle(true).seed(seed);
        let shards: Vec<NeighborLoader> = (0..world)
            .map(|r| whole.clone().batch_size(batch).unwrap().shard(r, world).unwrap())
            .collect();
        for s in &shards {
            prop_assert_eq!(s.len(), whole.len());
        }
        for b in 0..whole.len() {
            let union: Vec<u32> = shards.iter().flat_map(|s| s.seeds(1, b)).collect();
            prop_assert_eq!(union, whole.seeds(1, b));
        }
    }
}

#[test]
fn full_fanout_keeps_every_in_edge_of_the_inner_hops() {
    // With -1 per hop, every node reached before the last hop has all its in-edges:
    // what makes a mini-batch of an L-layer model exact for its seeds.
    let g = rand_graph(80, 400, 3).unwrap();
    let loader = NeighborLoader::new(g.clone(), &[-1, -1])
        .unwrap()
        .batch_size(5)
        .unwrap();
    let sub = loader.batch(0, 2).unwrap();
    let inner = sub.num_sampled_nodes[0] + sub.num_sampled_nodes[1];
    for (i, &v) in sub.nodes[..inner].iter().enumerate() {
        let got: Vec<u32> = (0..sub.graph.num_edges())
            .filter(|&e| sub.graph.dst()[e] as usize == i)
            .map(|e| sub.edge_ids[e])
            .collect();
        let mut want: Vec<u32> = (0..g.num_edges() as u32)
            .filter(|&e| g.dst()[e as usize] == v)
            .collect();
        let mut got = got;
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want, "node {v}");
    }
    // The outermost nodes have no in-edges in the subgraph.
    assert!(sub.graph.dst().iter().all(|&d| (d as usize) < inner));
}

#[test]
fn degenerate_settings_are_coded_errors() {
    let g = rand_graph(10, 30, 0).unwrap();
    let code = |r: Result<NeighborLoader, shade_graph::GraphError>| r.unwrap_err().code();
    // Issue 14's class: a fan-out of 0 used to give an empty subgraph without a word.
    assert_eq!(
        code(NeighborLoader::new(g.clone(), &[10, 0])),
        "SHADE-E0320"
    );
    let e = NeighborLoader::new(g.clone(), &[0]).unwrap_err();
    assert!(e.to_string().contains("0 at hop 0"), "{e}");
    assert_eq!(code(NeighborLoader::new(g.clone(), &[])), "SHADE-E0320");
    assert_eq!(code(NeighborLoader::new(g.clone(), &[-2])), "SHADE-E0320");
    assert_eq!(
        NeighborSampler::new(vec![3, 0])
            .sample(&g, &[1], 0)
            .unwrap_err()
            .code(),
        "SHADE-E0320"
    );
    let l = || NeighborLoader::new(g.clone(), &[2]).unwrap();
    assert_eq!(code(l().batch_size(0)), "SHADE-E0320");
    assert_eq!(code(l().prefetch(0)), "SHADE-E0320");
    assert_eq!(code(l().shard(2, 2)), "SHADE-E0320");
    assert_eq!(code(l().shard(0, 0)), "SHADE-E0320");
    assert_eq!(code(l().input_nodes(&[1, 10])), "SHADE-E0302");
    assert_eq!(code(l().input_nodes(&[])), "SHADE-E0321");
    let e = l().input_nodes(&[1, 4, 1]).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0320");
    assert!(e.to_string().contains("node 1 at positions 0 and 2"), "{e}");
    assert_eq!(
        code(NeighborLoader::new(Graph::empty(0).unwrap(), &[2])),
        "SHADE-E0321"
    );
    assert_eq!(l().batch(0, 10).unwrap_err().code(), "SHADE-E0320");
    // drop_last with fewer seeds than a batch: an empty epoch, documented.
    let few = l().batch_size(20).unwrap().drop_last(true);
    assert!(few.is_empty());
    assert_eq!(few.epoch(0).count(), 0);
}

#[test]
fn sharded_tail_batches_may_be_empty() {
    let g = rand_graph(5, 10, 0).unwrap();
    // 5 seeds, 2 ranks × 2: the second step holds one seed, on rank 0.
    let rank1 = NeighborLoader::new(g, &[-1])
        .unwrap()
        .batch_size(2)
        .unwrap()
        .shard(1, 2)
        .unwrap();
    assert_eq!(rank1.len(), 2);
    let last = rank1.batch(0, 1).unwrap();
    assert_eq!(last.num_seeds, 0);
    assert_eq!(last.graph.num_nodes(), 0);
    assert_eq!(last.graph.num_edges(), 0);
}

#[test]
fn dropping_an_epoch_early_stops_its_worker() {
    let g = rand_graph(2_000, 20_000, 1).unwrap();
    let loader = NeighborLoader::new(g, &[5, 5])
        .unwrap()
        .batch_size(4)
        .unwrap()
        .prefetch(1)
        .unwrap();
    for _ in 0..20 {
        let mut it = loader.epoch(0);
        assert!(it.next().unwrap().is_ok());
        // The worker is blocked on the full channel; the drop must unblock and join it.
        drop(it);
    }
}

#[test]
fn sparse_features_and_weights_travel_with_the_subgraph() {
    let mut g = Graph::from_edges(4, &[(0, 1), (2, 1), (3, 2)])
        .unwrap()
        .with_weights(vec![0.5, 2.0, 3.0])
        .unwrap();
    let x = sprs::CsMat::new(
        (4, 3),
        vec![0, 1, 2, 2, 3],
        vec![0, 2, 1],
        vec![1.0f32, 2.0, 3.0],
    );
    g.set_sparse_node_features(x).unwrap();
    let sub = NeighborLoader::new(g, &[-1, -1])
        .unwrap()
        .input_nodes(&[1])
        .unwrap()
        .batch(0, 0)
        .unwrap();
    assert_eq!(sub.nodes, vec![1, 0, 2, 3]);
    assert_eq!(sub.graph.weights().unwrap(), &[0.5, 2.0, 3.0]);
    let xs = sub.graph.sparse_node_features().unwrap().to_dense();
    assert_eq!(xs.row(0).to_vec(), vec![0.0, 0.0, 2.0]);
    assert_eq!(xs.row(1).to_vec(), vec![1.0, 0.0, 0.0]);
    assert_eq!(xs.row(3).to_vec(), vec![0.0, 3.0, 0.0]);
}

fn small_graphs(count: usize, width: usize) -> Vec<Graph> {
    (0..count)
        .map(|i| {
            let n = 2 + i % 4;
            let edges: Vec<(u32, u32)> = (0..n as u32 - 1).map(|v| (v, v + 1)).collect();
            Graph::from_edges(n, &edges)
                .unwrap()
                .with_node_data(
                    "x",
                    Array2::<f32>::from_elem((n, width), i as f32).into_dyn(),
                )
                .unwrap()
        })
        .collect()
}

#[test]
fn data_loader_batches_every_graph_once_per_epoch() {
    let graphs = small_graphs(11, 3);
    let loader = DataLoader::new(graphs.clone())
        .unwrap()
        .batch_size(4)
        .unwrap()
        .shuffle(true)
        .seed(9);
    assert_eq!(loader.len(), 3);
    let mut seen = Vec::new();
    for (b, batch) in loader.epoch(5).enumerate() {
        let batch = batch.unwrap();
        assert_eq!(batch, loader.batch(5, b).unwrap());
        assert_eq!(batch.graph.num_graphs(), batch.indices.len());
        // Each graph of the batch is the listed one, data included.
        for (k, &i) in batch.indices.iter().enumerate() {
            assert_eq!(batch.graph.get_graph(k).unwrap(), graphs[i]);
        }
        seen.extend(batch.indices);
    }
    seen.sort_unstable();
    assert_eq!(seen, (0..11).collect::<Vec<_>>());
    assert_ne!(loader.indices(5, 0), loader.indices(6, 0));
    assert_eq!(
        DataLoader::new(Vec::new()).unwrap_err().code(),
        "SHADE-E0321"
    );
}

#[test]
fn data_loader_errors_travel_to_the_consumer_and_end_the_epoch() {
    let mut graphs = small_graphs(6, 3);
    graphs[4] = small_graphs(5, 2).remove(4); // a feature width of 2 among 3s
    let loader = DataLoader::new(graphs).unwrap().batch_size(2).unwrap();
    let got: Vec<_> = loader.epoch(0).collect();
    assert_eq!(got.len(), 3);
    assert!(got[0].is_ok() && got[1].is_ok());
    let e = got[2].as_ref().unwrap_err();
    assert_eq!(e.code(), "SHADE-E0311");
    assert!(
        e.to_string()
            .contains("graph 0 has f32 [2, 2], graph 1 has f32 [3, 3]"),
        "{e}"
    );
}
