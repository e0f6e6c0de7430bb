//! Property tests of the graph invariants: transforms, batching, degrees, caches and
//! the GCN normalisation against a dense reference.

use ndarray::{Array1, Array2};
use proptest::prelude::*;
use shade_graph::{GcnNorm, Graph, Reduce};
use sprs::CsMat;

/// A random small graph: self-loops and multi-edges allowed, weights optional, one
/// edge-data and one node-data array.
fn small_graph() -> impl Strategy<Value = Graph> {
    (1usize..10)
        .prop_flat_map(|n| {
            let edges = prop::collection::vec((0..n as u32, 0..n as u32, 0.1f64..3.0), 0..30);
            (Just(n), edges, any::<bool>())
        })
        .prop_map(|(n, edges, weighted)| {
            let src = edges.iter().map(|e| e.0).collect();
            let dst = edges.iter().map(|e| e.1).collect();
            let mut g = Graph::try_new(n, src, dst).unwrap();
            if weighted {
                g = g.with_weights(edges.iter().map(|e| e.2).collect()).unwrap();
            }
            let m = g.num_edges();
            g.set_edge_data("e", Array1::from_iter((0..m).map(|i| i as f64)))
                .unwrap();
            g.set_node_data(
                "x",
                Array2::from_shape_fn((n, 2), |(i, j)| (i * 2 + j) as f32),
            )
            .unwrap();
            g
        })
}

/// The same graph with explicit weights (1 where it had none), so that merging
/// duplicates adds them up.
fn weighted(g: Graph) -> Graph {
    let w = (0..g.num_edges()).map(|e| g.weight(e)).collect();
    g.with_weights(w).unwrap()
}

fn dense(a: &CsMat<f64>) -> Array2<f64> {
    a.to_dense()
}

/// PyG's gcn_norm written densely: M[dst, src] = Σ w over non-loop edges, diagonal =
/// the last existing loop's weight or the fill value, deg = row sums, Â = D^-½ M D^-½.
fn dense_gcn(g: &Graph, improved: bool) -> Array2<f64> {
    let n = g.num_nodes();
    let mut m = Array2::<f64>::zeros((n, n));
    let mut diag = vec![if improved { 2.0 } else { 1.0 }; n];
    for e in 0..g.num_edges() {
        let (s, d) = (g.src()[e] as usize, g.dst()[e] as usize);
        if s == d {
            diag[s] = g.weight(e);
        } else {
            m[[d, s]] += g.weight(e);
        }
    }
    for i in 0..n {
        m[[i, i]] = diag[i];
    }
    let deg: Vec<f64> = (0..n).map(|i| m.row(i).sum()).collect();
    let dis: Vec<f64> = deg
        .iter()
        .map(|&d| if d == 0.0 { 0.0 } else { 1.0 / d.sqrt() })
        .collect();
    Array2::from_shape_fn((n, n), |(i, j)| dis[i] * m[[i, j]] * dis[j])
}

fn close(a: &Array2<f64>, b: &Array2<f64>) -> bool {
    a.shape() == b.shape()
        && a.iter()
            .zip(b)
            .all(|(x, y)| (x - y).abs() <= 1e-12 * (1.0 + y.abs()))
}

proptest! {
    #[test]
    fn add_remaining_self_loops_is_idempotent(g in small_graph(), fill in 0.5f64..2.5) {
        let once = g.add_remaining_self_loops(fill).unwrap();
        let twice = once.add_remaining_self_loops(fill).unwrap();
        prop_assert_eq!(&once, &twice);
        // Exactly one loop per node, and the non-loop edges untouched.
        let loops = (0..once.num_edges()).filter(|&e| once.src()[e] == once.dst()[e]).count();
        prop_assert_eq!(loops, g.num_nodes());
        let (a, b) = (once.remove_self_loops(), g.remove_self_loops());
        prop_assert_eq!(a.edge_index(), b.edge_index());
        prop_assert!((0..a.num_edges()).all(|e| a.weight(e) == b.weight(e)));
    }

    #[test]
    fn to_bidirected_is_symmetric(g in small_graph()) {
        let b = g.to_bidirected();
        prop_assert!(b.is_bidirected());
        prop_assert!(!b.has_multi_edges());
        let a = dense(&b.adjacency_matrix::<f64>(true));
        prop_assert!(close(&a, &a.t().to_owned()));
        // The structure is the union of both directions.
        let u = dense(&g.adjacency_matrix::<f64>(false));
        let ab = dense(&b.adjacency_matrix::<f64>(false));
        prop_assert_eq!(ab, (&u + &u.t()).mapv(|x| if x > 0.0 { 1.0 } else { 0.0 }));
    }

    #[test]
    fn to_undirected_sum_matches_dense(g in small_graph().prop_map(weighted)) {
        let a = dense(&g.adjacency_matrix::<f64>(true));
        let u = dense(&g.to_undirected(Reduce::Sum).adjacency_matrix::<f64>(true));
        prop_assert!(close(&u, &(&a + &a.t())));
    }

    #[test]
    fn batch_then_unbatch_is_identity(gs in prop::collection::vec(small_graph(), 0..5)) {
        // Batching needs one weighting convention; give every graph weights.
        let gs: Vec<Graph> = gs.into_iter().map(weighted).collect();
        let b = Graph::batch(&gs).unwrap();
        prop_assert_eq!(b.num_graphs(), gs.len());
        prop_assert_eq!(b.num_nodes(), gs.iter().map(Graph::num_nodes).sum::<usize>());
        let back = b.unbatch().unwrap();
        prop_assert_eq!(&back, &gs);
        for (i, g) in gs.iter().enumerate() {
            prop_assert_eq!(&b.get_graph(i).unwrap(), g);
        }
    }

    #[test]
    fn degrees_sum_to_edge_count(g in small_graph()) {
        prop_assert_eq!(g.in_degree().iter().sum::<usize>(), g.num_edges());
        prop_assert_eq!(g.out_degree().iter().sum::<usize>(), g.num_edges());
        let total: f64 = (0..g.num_edges()).map(|e| g.weight(e)).sum();
        prop_assert!((g.weighted_in_degree().iter().sum::<f64>() - total).abs() < 1e-9);
        prop_assert!((g.weighted_out_degree().iter().sum::<f64>() - total).abs() < 1e-9);
    }

    #[test]
    fn gcn_norm_matches_dense_reference(g in small_graph(), improved in any::<bool>()) {
        let opts = GcnNorm { improved, ..GcnNorm::default() };
        let a = dense(&g.gcn_norm::<f64>(opts));
        prop_assert!(close(&a, &dense_gcn(&g, improved)), "{a:?}\nvs\n{:?}", dense_gcn(&g, improved));
        if !improved {
            prop_assert!(close(&dense(g.gcn_adjacency::<f64>()), &a));
            let a32 = g.gcn_adjacency::<f32>().to_dense().mapv(f64::from);
            prop_assert!(a32.iter().zip(&a).all(|(x, y)| (x - y).abs() < 1e-6));
        }
    }

    #[test]
    fn gcn_norm_without_self_loops_matches_dense(g in small_graph()) {
        let n = g.num_nodes();
        let m = dense(&g.adjacency_matrix::<f64>(true));
        let dis: Vec<f64> = (0..n).map(|i| m.row(i).sum()).map(|d| if d == 0.0 { 0.0 } else { 1.0 / d.sqrt() }).collect();
        let expect = Array2::from_shape_fn((n, n), |(i, j)| dis[i] * m[[i, j]] * dis[j]);
        let opts = GcnNorm { add_self_loops: false, ..GcnNorm::default() };
        prop_assert!(close(&dense(&g.gcn_norm::<f64>(opts)), &expect));
    }

    #[test]
    fn csr_caches_agree_with_coo(g in small_graph()) {
        let mut coo: Vec<(u32, u32, u32)> =
            (0..g.num_edges()).map(|e| (g.dst()[e], g.src()[e], e as u32)).collect();
        coo.sort_unstable();
        let c = g.csr_by_dst();
        let mut from_csr = Vec::new();
        for v in 0..g.num_nodes() {
            let (nb, ids) = c.row(v);
            for (&u, &e) in nb.iter().zip(ids) {
                from_csr.push((v as u32, u, e));
            }
        }
        prop_assert_eq!(&from_csr, &coo); // also checks the within-row order
        let c = g.csr_by_src();
        let mut coo: Vec<_> = (0..g.num_edges()).map(|e| (g.src()[e], g.dst()[e], e as u32)).collect();
        coo.sort_unstable();
        let from_csr: Vec<_> = (0..g.num_nodes())
            .flat_map(|u| { let (nb, ids) = c.row(u); nb.iter().zip(ids).map(move |(&v, &e)| (u as u32, v, e)).collect::<Vec<_>>() })
            .collect();
        prop_assert_eq!(from_csr, coo);
        prop_assert_eq!(g.in_degree().to_vec(), g.csr_by_dst().indptr.windows(2).map(|w| w[1] - w[0]).collect::<Vec<_>>());
    }

    #[test]
    fn coalesce_preserves_the_weighted_adjacency(g in small_graph().prop_map(weighted)) {
        let c = g.coalesce(Reduce::Sum);
        prop_assert!(!c.has_multi_edges());
        prop_assert!(close(&dense(&c.adjacency_matrix::<f64>(true)), &dense(&g.adjacency_matrix::<f64>(true))));
        // Edge data are summed like the weights: total preserved.
        let sum = |g: &Graph| g.edge_data().get("e").unwrap().as_f64().unwrap().sum();
        prop_assert!((sum(&c) - sum(&g)).abs() < 1e-9);
    }

    #[test]
    fn random_walk_rows_sum_to_one(g in small_graph()) {
        let a = dense(g.random_walk_adjacency::<f64>());
        for (v, row) in a.rows().into_iter().enumerate() {
            let expect = if g.in_degree()[v] > 0 { 1.0 } else { 0.0 };
            prop_assert!((row.sum() - expect).abs() < 1e-12);
        }
    }

    #[test]
    fn scaled_laplacian_matches_dense(g in small_graph(), lambda in 0.5f64..3.0) {
        let n = g.num_nodes();
        let a = dense(&g.remove_self_loops().adjacency_matrix::<f64>(true));
        let deg: Vec<f64> = (0..n).map(|i| a.row(i).sum()).collect();
        let dis: Vec<f64> = deg.iter().map(|&d| if d == 0.0 { 0.0 } else { 1.0 / d.sqrt() }).collect();
        let l = Array2::from_shape_fn((n, n), |(i, j)| f64::from(u8::from(i == j)) - dis[i] * a[[i, j]] * dis[j]);
        prop_assert!(close(&dense(&g.normalized_laplacian::<f64>()), &l));
        let s = &l * (2.0 / lambda) - Array2::<f64>::eye(n);
        prop_assert!(close(&dense(&g.scaled_laplacian::<f64>(lambda)), &s));
    }

    #[test]
    fn induced_subgraph_keeps_exactly_the_inner_edges(g in small_graph(), mask in prop::collection::vec(any::<bool>(), 10)) {
        let nodes: Vec<u32> = (0..g.num_nodes() as u32).filter(|&v| mask[v as usize]).collect();
        let s = g.induced_subgraph(&nodes).unwrap();
        let inner = (0..g.num_edges()).filter(|&e| mask[g.src()[e] as usize] && mask[g.dst()[e] as usize]).count();
        prop_assert_eq!(s.num_edges(), inner);
        prop_assert_eq!(s.node_data().get("x").unwrap().shape(), &[nodes.len(), 2][..]);
        let r = g.remove_nodes(&(0..g.num_nodes() as u32).filter(|&v| !mask[v as usize]).collect::<Vec<_>>()).unwrap();
        prop_assert_eq!(r, s);
    }
}
