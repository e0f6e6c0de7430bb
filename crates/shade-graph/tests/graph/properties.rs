//! Property tests of the graph invariants: transforms, batching, degrees, caches, and
//! the normalisations (GCN, Laplacians) against dense references written from PyTorch
//! Geometric's `gcn_norm`, `get_laplacian` and `ChebConv` on directed graphs with
//! self-loops, multi-edges and isolated nodes (where the in- and out-degree
//! conventions of the two families differ).

use ndarray::{Array1, Array2};
use proptest::prelude::*;
use shade_graph::CsMat32;
use shade_graph::{GcnNorm, Graph, LaplacianNorm, Reduce};

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

fn dense(a: &CsMat32<f64>) -> Array2<f64> {
    a.to_dense()
}

/// PyG's gcn_norm written densely: with `add_self_loops`, M[dst, src] = Σ w over the
/// non-loop edges and the diagonal the last existing loop's weight or the fill value
/// (2 when `improved`); without, M[dst, src] = Σ w over every edge; w = 1 unless
/// `weighted`; deg = row sums (in-degrees), Â = D^-½ M D^-½ with 0 for a zero degree.
fn dense_gcn(g: &Graph, opts: GcnNorm) -> Array2<f64> {
    let n = g.num_nodes();
    let w = |e: usize| if opts.weighted { g.weight(e) } else { 1.0 };
    let mut m = Array2::<f64>::zeros((n, n));
    let mut diag = vec![if opts.improved { 2.0 } else { 1.0 }; n];
    for e in 0..g.num_edges() {
        let (s, d) = (g.src()[e] as usize, g.dst()[e] as usize);
        if opts.add_self_loops && s == d {
            diag[s] = w(e);
        } else {
            m[[d, s]] += w(e);
        }
    }
    if opts.add_self_loops {
        for i in 0..n {
            m[[i, i]] = diag[i];
        }
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

    /// The aggregation matrices: `A[dst, src]` sums the (weighted) messages, and the
    /// mean matrix divides each row by the node's number of incoming edges.
    #[test]
    fn aggregation_matrices_match_dense(g in small_graph(), weighted in any::<bool>()) {
        let n = g.num_nodes();
        let mut sum = Array2::<f64>::zeros((n, n));
        let mut count = vec![0.0; n];
        for e in 0..g.num_edges() {
            let (s, d) = (g.src()[e] as usize, g.dst()[e] as usize);
            sum[[d, s]] += if weighted { g.weight(e) } else { 1.0 };
            count[d] += 1.0;
        }
        let mean = Array2::from_shape_fn((n, n), |(i, j)| if count[i] == 0.0 { 0.0 } else { sum[[i, j]] / count[i] });
        prop_assert!(close(&dense(&g.adjacency_matrix::<f64>(weighted)), &sum));
        prop_assert!(close(&dense(&g.mean_adjacency_matrix::<f64>(weighted)), &mean));
    }

    #[test]
    fn gcn_norm_matches_dense_reference(
        g in small_graph(),
        (improved, add_self_loops, weighted) in any::<(bool, bool, bool)>(),
    ) {
        let opts = GcnNorm { improved, add_self_loops, weighted };
        let a = dense(&g.gcn_norm::<f64>(opts));
        prop_assert!(close(&a, &dense_gcn(&g, opts)), "{a:?}\nvs\n{:?}", dense_gcn(&g, opts));
        if opts == GcnNorm::default() {
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

    /// PyG's `get_laplacian` and ChebConv's `2L/λ - I`, written densely: self-loops
    /// removed, `deg = scatter(w, row)` (row = source: the out-degree, the column sums
    /// of `A[dst, src]`), `L = D - A`, `I - D^-1/2 A D^-1/2` or `I - D^-1 A` with
    /// `A_norm[dst, src] = deg_inv[src] · w` for `rw`; a zero degree gives 0.
    #[test]
    fn laplacians_match_pyg_dense(g in small_graph(), lambda in 0.5f64..3.0) {
        let n = g.num_nodes();
        let a = dense(&g.remove_self_loops().adjacency_matrix::<f64>(true));
        let deg: Vec<f64> = (0..n).map(|j| a.column(j).sum()).collect();
        let p = |d: f64, e: f64| if d == 0.0 { 0.0 } else { d.powf(e) };
        let eye = Array2::<f64>::eye(n);
        for norm in LaplacianNorm::ALL {
            let l = match norm {
                LaplacianNorm::None => Array2::from_diag(&Array1::from(deg.clone())) - &a,
                LaplacianNorm::Sym => &eye - &Array2::from_shape_fn((n, n), |(i, j)| p(deg[i], -0.5) * a[[i, j]] * p(deg[j], -0.5)),
                LaplacianNorm::Rw => &eye - &Array2::from_shape_fn((n, n), |(i, j)| a[[i, j]] * p(deg[j], -1.0)),
            };
            prop_assert!(close(&dense(&g.laplacian::<f64>(norm)), &l), "{norm:?}");
            let s = &l * (2.0 / lambda) - &eye;
            prop_assert!(close(&dense(&g.scaled_laplacian::<f64>(norm, lambda).unwrap()), &s), "{norm:?}");
            // The edge-array form sums to the matrix and names the graph edge of every
            // off-diagonal entry.
            let e = g.laplacian_edges(norm);
            let mut m = Array2::<f64>::zeros((n, n));
            for k in 0..e.src.len() {
                m[[e.dst[k] as usize, e.src[k] as usize]] += e.weight[k];
                match e.edge[k] {
                    Some(i) => prop_assert!(g.src()[i] == e.src[k] && g.dst()[i] == e.dst[k] && e.src[k] != e.dst[k]),
                    None => prop_assert_eq!(e.src[k], e.dst[k]),
                }
            }
            prop_assert!(close(&m, &l), "{norm:?}");
        }
        // Every diagonal entry is stored (a structure any λ fits).
        let s = g.scaled_laplacian::<f64>(LaplacianNorm::Sym, 2.0).unwrap();
        prop_assert!((0..n).all(|i| s.get(i, i).is_some()));
        prop_assert!(g.scaled_laplacian::<f64>(LaplacianNorm::Sym, 0.0).is_err());
        prop_assert!(g.scaled_laplacian::<f64>(LaplacianNorm::Sym, f64::NAN).is_err());
    }

    /// The GCN edge list: its entries sum to the matrix, each names the graph edge whose
    /// weight it carries (an added loop none), and the degrees are by destination.
    #[test]
    fn gcn_norm_edges_match_the_matrix(g in small_graph(), improved in any::<bool>(), loops in any::<bool>()) {
        let n = g.num_nodes();
        let opts = GcnNorm { improved, add_self_loops: loops, ..GcnNorm::default() };
        let e = g.gcn_norm_edges(opts);
        let mut m = Array2::<f64>::zeros((n, n));
        for k in 0..e.src.len() {
            m[[e.dst[k] as usize, e.src[k] as usize]] += e.weight[k];
            match e.edge[k] {
                Some(i) => prop_assert!(g.src()[i] == e.src[k] && g.dst()[i] == e.dst[k]),
                None => prop_assert!(loops && e.src[k] == e.dst[k]),
            }
        }
        prop_assert!(close(&m, &dense(&g.gcn_norm::<f64>(opts))));
        prop_assert!(close(&m, &dense_gcn(&g, opts)));
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
