//! The graph API on small hand-checked cases: construction errors, data validation,
//! queries, normalisation values, λ_max, transforms and batch errors.

use ndarray::{Array1, Array2, array};
use shade_graph::{Array, GcnNorm, Graph, GraphError, Reduce};

fn code(r: Result<impl std::fmt::Debug, GraphError>) -> &'static str {
    r.unwrap_err().code()
}

#[test]
fn construction_errors_are_coded() {
    assert_eq!(code(Graph::try_new(3, vec![0, 1], vec![1])), "SHADE-E0301");
    let e = Graph::try_new(3, vec![0, 5], vec![1, 2]).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0302");
    assert_eq!(
        e.to_string(),
        "`src` holds node index 5 at position 1, but the graph has 3 nodes"
    );
    let g = Graph::try_new(3, vec![0, 1], vec![1, 2]).unwrap();
    assert_eq!(code(g.clone().with_weights(vec![1.0])), "SHADE-E0301");
    let e = g.clone().with_weights(vec![1.0, f64::NAN]).unwrap_err();
    assert_eq!(
        (e.code(), e.to_string()),
        (
            "SHADE-E0306",
            "`weights` holds the non-finite value NaN at position 1".into()
        )
    );
    assert_eq!(code(Graph::empty(usize::MAX)), "SHADE-E0305");
}

#[test]
fn data_first_dimension_is_validated() {
    let mut g = Graph::try_new(3, vec![0, 1], vec![1, 2]).unwrap();
    g.set_node_data("x", Array2::<f32>::zeros((3, 4))).unwrap();
    let e = g
        .set_node_data("h", Array2::<f32>::zeros((2, 4)))
        .unwrap_err();
    assert_eq!(e.code(), "SHADE-E0310");
    assert_eq!(
        e.to_string(),
        "node data `h` has shape [2, 4], but its first dimension must be 3"
    );
    assert_eq!(
        code(g.set_edge_data("w", Array1::<f64>::zeros(3))),
        "SHADE-E0310"
    );
    g.set_edge_data("w", Array1::<f64>::zeros(2)).unwrap();
    assert_eq!(
        code(g.set_graph_data("y", Array1::<i64>::zeros(2))),
        "SHADE-E0310"
    );
    g.set_graph_data("y", Array1::<i64>::zeros(1)).unwrap();
    assert_eq!(
        code(g.set_sparse_node_features(sprs::CsMat::zero((2, 5)))),
        "SHADE-E0310"
    );
    assert_eq!(
        g.node_data().get("x").map(Array::shape),
        Some(&[3usize, 4][..])
    );
    assert!(g.remove_node_data("x").is_some() && g.node_data().is_empty());
}

/// Sparse features of any sprs index type are kept with `u32` indices, values and
/// structure as given (CSC too); more columns than `u32` indexes is `SHADE-E0305`,
/// and the graph keeps what it had.
#[test]
fn sparse_features_are_kept_with_u32_indices() {
    let mut g = Graph::try_new(3, vec![0, 1], vec![1, 2]).unwrap();
    let dense = array![[0.0f32, 1.5, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, -3.0]];
    let x = sprs::CsMat::csr_from_dense(dense.view(), 0.0);
    g.set_sparse_node_features(x.clone()).unwrap();
    let kept = g.sparse_node_features().unwrap();
    assert_eq!(kept.indices(), &[1u32, 0, 2]);
    assert_eq!(kept.to_dense(), dense);
    g.set_sparse_node_features(x.to_csc()).unwrap();
    assert_eq!(g.sparse_node_features().unwrap().to_dense(), dense);
    let wide = sprs::CsMat::new(
        (3, 1 << 33),
        vec![0, 1, 1, 2],
        vec![5, 1 << 32],
        vec![1.0f32, 2.0],
    );
    assert_eq!(code(g.set_sparse_node_features(wide)), "SHADE-E0305");
    // A CSC matrix of more rows than `u32` indexes: the row count is refused first,
    // before any index is narrowed.
    let tall = sprs::CsMat::new_csc((1 << 33, 1), vec![0, 1], vec![(1 << 32) + 5], vec![1.0f32]);
    assert_eq!(code(g.set_sparse_node_features(tall)), "SHADE-E0310");
    assert_eq!(g.sparse_node_features().unwrap().to_dense(), dense);
}

#[test]
fn queries_on_a_small_graph() {
    // 0 -> 1 (twice), 1 -> 0, 2 -> 2, 1 -> 2
    let g = Graph::try_new(3, vec![0, 0, 1, 2, 1], vec![1, 1, 0, 2, 2]).unwrap();
    assert_eq!(g.in_degree(), &[1, 2, 2]);
    assert_eq!(g.out_degree(), &[2, 2, 1]);
    assert!(g.has_self_loops() && g.has_multi_edges() && !g.is_bidirected());
    assert_eq!(g.in_neighbors(2).unwrap(), &[1, 2]);
    assert_eq!(g.out_neighbors(0).unwrap(), &[1, 1]);
    assert_eq!(code(g.in_neighbors(3)), "SHADE-E0302");
    let a = g.adjacency_matrix::<f64>(false).to_dense();
    assert_eq!(a, array![[0.0, 1.0, 0.0], [2.0, 0.0, 0.0], [0.0, 1.0, 1.0]]);
    assert_eq!(g.adjacency::<f32>().to_dense(), a.mapv(|x| x as f32));
    assert!(
        Graph::from_edges(2, &[(0, 1), (1, 0)])
            .unwrap()
            .is_bidirected()
    );
}

#[test]
fn gcn_normalisation_by_hand() {
    // Path 0 - 1 - 2 (both directions). With self-loops: degrees 2, 3, 2.
    let g = Graph::from_edges(3, &[(0, 1), (1, 0), (1, 2), (2, 1)]).unwrap();
    let a = g.gcn_adjacency::<f64>().to_dense();
    let s6 = 1.0 / 6f64.sqrt();
    let expect = array![[0.5, s6, 0.0], [s6, 1.0 / 3.0, s6], [0.0, s6, 0.5]];
    assert!(
        a.iter().zip(&expect).all(|(x, y)| (x - y).abs() < 1e-15),
        "{a}"
    );
    // improved: A + 2I, degrees 3, 4, 3.
    let b = g
        .gcn_norm::<f64>(GcnNorm {
            improved: true,
            ..GcnNorm::default()
        })
        .to_dense();
    assert!(
        (b[[0, 0]] - 2.0 / 3.0).abs() < 1e-15 && (b[[1, 0]] - 1.0 / 12f64.sqrt()).abs() < 1e-15
    );
    // An existing self-loop keeps its weight (3) instead of the fill value.
    let w = Graph::from_edges(2, &[(0, 0), (1, 0)])
        .unwrap()
        .with_weights(vec![3.0, 1.0])
        .unwrap();
    let c = w
        .gcn_norm::<f64>(GcnNorm {
            improved: true,
            ..GcnNorm::default()
        })
        .to_dense();
    // Node 0: loop 3 + edge 1 = 4; node 1: added loop 2.
    assert!((c[[0, 0]] - 3.0 / 4.0).abs() < 1e-15 && (c[[0, 1]] - 1.0 / 8f64.sqrt()).abs() < 1e-15);
    assert!((c[[1, 1]] - 1.0).abs() < 1e-15);
    // Unweighted option ignores the weights; no self-loops leaves isolated rows empty.
    let d = w.gcn_norm::<f64>(GcnNorm {
        weighted: false,
        ..GcnNorm::default()
    });
    assert_eq!(d, w.clone().without_weights().gcn_norm(GcnNorm::default()));
    let no_loops = GcnNorm {
        add_self_loops: false,
        ..GcnNorm::default()
    };
    let e = Graph::from_edges(3, &[(0, 1), (1, 0)])
        .unwrap()
        .gcn_norm::<f64>(no_loops);
    assert_eq!(
        e.to_dense(),
        array![[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    );
    // A source without incoming edges has degree 0, so its coefficient is 0 (PyG).
    let f = Graph::from_edges(2, &[(0, 1)])
        .unwrap()
        .gcn_norm::<f64>(no_loops);
    assert_eq!(f.to_dense(), array![[0.0, 0.0], [0.0, 0.0]]);
    // The edge-array form agrees with the matrix.
    let ne = g.gcn_norm_edges(GcnNorm::default());
    assert_eq!(ne.src.len(), 4 + 3);
    for k in 0..ne.src.len() {
        assert!((a[[ne.dst[k] as usize, ne.src[k] as usize]] - ne.weight[k]).abs() < 1e-15);
    }
}

#[test]
fn lambda_max_of_known_spectra() {
    use shade_graph::LaplacianNorm::{None as Plain, Rw, Sym};
    let close = |g: &Graph, norm, want: f64| {
        let l = g.lambda_max(norm);
        assert!((l - want).abs() < 1e-9, "{norm:?}: {l} vs {want}");
    };
    // Triangle: L = 3I - J has eigenvalues 0, 3, 3; the normalised ones 0, 3/2, 3/2.
    let k3 = Graph::from_edges(3, &[(0, 1), (1, 0), (1, 2), (2, 1), (0, 2), (2, 0)]).unwrap();
    close(&k3, Plain, 3.0);
    close(&k3, Sym, 1.5);
    close(&k3, Rw, 1.5);
    // A star with 3 leaves: L has eigenvalues 0, 1, 1, 4; the normalised ones 0, 1, 1, 2.
    let star = Graph::from_edges(4, &[(0, 1), (1, 0), (0, 2), (2, 0), (0, 3), (3, 0)]).unwrap();
    close(&star, Plain, 4.0);
    close(&star, Sym, 2.0);
    close(&star, Rw, 2.0);
    // A path 0 - 1 - 2 with weights 1 and 3: L = [[1, -1, 0], [-1, 4, -3], [0, -3, 3]],
    // eigenvalues 0 and 4 ± √7.
    let path = Graph::from_edges(3, &[(0, 1), (1, 0), (1, 2), (2, 1)])
        .unwrap()
        .with_weights(vec![1.0, 1.0, 3.0, 3.0])
        .unwrap();
    close(&path, Plain, 4.0 + 7f64.sqrt());
    // A 4-cycle is bipartite: λ_max = 2.
    let c4 = Graph::from_edges(
        4,
        &[
            (0, 1),
            (1, 0),
            (1, 2),
            (2, 1),
            (2, 3),
            (3, 2),
            (3, 0),
            (0, 3),
        ],
    )
    .unwrap();
    // A 4-cycle is bipartite: the normalised λ_max is 2; L has eigenvalues 0, 2, 2, 4.
    close(&c4, Sym, 2.0);
    close(&c4, Plain, 4.0);
    // Scaled with the estimate: spectrum of 2L/λ - I within [-1, 1]; diagonal 2/λ - 1.
    let s = k3
        .scaled_laplacian::<f64>(Sym, k3.lambda_max(Sym))
        .unwrap()
        .to_dense();
    assert!((s[[0, 0]] - (2.0 / 1.5 - 1.0)).abs() < 1e-9);
    let s2 = k3.scaled_laplacian::<f32>(Sym, 2.0).unwrap();
    assert_eq!(s2.get(0, 0), Some(&0.0));
    // Edges without nodes: isolated nodes have L = 0 (plain) or 1 (normalised).
    close(&Graph::empty(3).unwrap(), Sym, 1.0);
    assert_eq!(Graph::empty(0).unwrap().lambda_max(Sym), 2.0);
}

/// The values PyTorch Geometric's own tests publish, as the independent reference:
/// `get_laplacian` on `[[0, 1, 1, 2], [1, 0, 2, 1]]` with weights `[1, 2, 2, 4]`
/// (test/utils/test_laplacian.py: entries in edge order, then the diagonal), and
/// `add_remaining_self_loops` on `[[0, 1, 0], [1, 0, 0]]` with weights 0.5
/// (test/utils/test_loop.py: `[[0, 1, 0, 1], [1, 0, 0, 1]]`, `[0.5, 0.5, 0.5, 1]`),
/// which `gcn_norm` then scales by the in-degrees 1 and 1.5.
#[test]
fn normalisations_match_the_values_of_pygs_tests() {
    use shade_graph::LaplacianNorm::{None as Plain, Rw, Sym};
    let g = Graph::try_new(3, vec![0, 1, 1, 2], vec![1, 0, 2, 1])
        .unwrap()
        .with_weights(vec![1.0, 2.0, 2.0, 4.0])
        .unwrap();
    for (norm, want) in [
        (Plain, [-1.0, -2.0, -2.0, -4.0, 1.0, 4.0, 4.0]),
        (Sym, [-0.5, -1.0, -0.5, -1.0, 1.0, 1.0, 1.0]),
        (Rw, [-1.0, -0.5, -0.5, -1.0, 1.0, 1.0, 1.0]),
    ] {
        let l = g.laplacian_edges(norm);
        assert_eq!(l.src, [0, 1, 1, 2, 0, 1, 2], "{norm:?}");
        assert_eq!(l.dst, [1, 0, 2, 1, 0, 1, 2], "{norm:?}");
        assert_eq!(l.weight, want, "{norm:?}");
    }
    let g = Graph::try_new(2, vec![0, 1, 0], vec![1, 0, 0])
        .unwrap()
        .with_weights(vec![0.5; 3])
        .unwrap();
    let e = g.gcn_norm_edges(GcnNorm::default());
    assert_eq!((e.src, e.dst), (vec![0, 1, 0, 1], vec![1, 0, 0, 1]));
    assert_eq!(e.edge, [Some(0), Some(1), Some(2), None]);
    let want = [0.5 / 1.5f64.sqrt(), 0.5 / 1.5f64.sqrt(), 0.5, 1.0 / 1.5];
    for (k, (a, b)) in e.weight.iter().zip(want).enumerate() {
        assert!((a - b).abs() < 1e-15, "entry {k}: {a} vs {b}");
    }
}

/// The degree of a Laplacian is the out-degree (PyG's `get_laplacian` scatters the
/// weights by `row`, the source), that of the GCN normalisation the in-degree (PyG's
/// `gcn_norm` by `col`, the target): on the directed path 0 -> 1 -> 2 with weights 2
/// and 5 the two differ, and each matches PyG's numbers.
#[test]
fn laplacian_and_gcn_degrees_follow_pyg_on_a_directed_graph() {
    use shade_graph::LaplacianNorm::{None as Plain, Rw, Sym};
    let g = Graph::try_new(3, vec![0, 1], vec![1, 2])
        .unwrap()
        .with_weights(vec![2.0, 5.0])
        .unwrap();
    // Out-degrees 2, 5, 0: L = D - A with A[dst, src].
    let l = g.laplacian::<f64>(Plain).to_dense();
    assert_eq!(
        l,
        array![[2.0, 0.0, 0.0], [-2.0, 5.0, 0.0], [0.0, -5.0, 0.0]]
    );
    // Sym: -d(src)^-1/2 w d(dst)^-1/2: (1, 0) -> -2 / √(2·5); (2, 1) -> 0 (node 2 has
    // out-degree 0).
    let s = g.laplacian::<f64>(Sym).to_dense();
    assert!(
        (s[[1, 0]] + 2.0 / 10f64.sqrt()).abs() < 1e-15 && s[[2, 1]] == 0.0,
        "{s}"
    );
    assert_eq!(s.diag().to_vec(), vec![1.0, 1.0, 1.0]);
    // Rw: -w / d(src): -1 at (1, 0) and (2, 1).
    let r = g.laplacian::<f64>(Rw).to_dense();
    assert_eq!(
        r,
        array![[1.0, 0.0, 0.0], [-1.0, 1.0, 0.0], [0.0, -1.0, 1.0]]
    );
    // GCN: in-degrees with loops 1, 3, 6: Â[1, 0] = 2 / √(1·3), Â[2, 1] = 5 / √(3·6).
    let a = g.gcn_norm::<f64>(GcnNorm::default()).to_dense();
    assert!((a[[1, 0]] - 2.0 / 3f64.sqrt()).abs() < 1e-15, "{a}");
    assert!((a[[2, 1]] - 5.0 / 18f64.sqrt()).abs() < 1e-15, "{a}");
    assert!((a[[2, 2]] - 1.0 / 6.0).abs() < 1e-15, "{a}");
}

#[test]
fn transforms_by_hand() {
    let g = Graph::from_edges(3, &[(0, 1), (1, 1), (2, 1)])
        .unwrap()
        .with_edge_data("e", array![1.0f32, 2.0, 3.0].into_dyn())
        .unwrap();
    let l = g.add_self_loops(1.0).unwrap();
    assert_eq!(
        l.edge_index(),
        (&[0u32, 1, 2, 0, 1, 2][..], &[1u32, 1, 1, 0, 1, 2][..])
    );
    assert_eq!(
        l.edge_data()
            .get("e")
            .unwrap()
            .as_f32()
            .unwrap()
            .as_slice()
            .unwrap(),
        &[1.0, 2.0, 3.0, 0.0, 0.0, 0.0]
    );
    let r = g.add_remaining_self_loops(2.0).unwrap();
    assert_eq!(
        r.edge_index(),
        (&[0u32, 2, 0, 1, 2][..], &[1u32, 1, 0, 1, 2][..])
    );
    assert_eq!(r.weights(), Some(&[1.0, 1.0, 2.0, 1.0, 2.0][..]));
    assert_eq!(
        r.edge_data()
            .get("e")
            .unwrap()
            .as_f32()
            .unwrap()
            .as_slice()
            .unwrap(),
        &[1.0, 3.0, 0.0, 2.0, 0.0]
    );
    assert_eq!(g.remove_self_loops().num_edges(), 2);
    assert_eq!(code(g.add_self_loops(f64::INFINITY)), "SHADE-E0306");
    // add / remove edges
    let a = g.add_edges(&[2], &[0], Some(&[0.5])).unwrap();
    assert_eq!(a.weights(), Some(&[1.0, 1.0, 1.0, 0.5][..]));
    assert_eq!(code(g.add_edges(&[0], &[7], None)), "SHADE-E0302");
    assert_eq!(
        a.remove_edges(&[3, 0]).unwrap().edge_index(),
        (&[1u32, 2][..], &[1u32, 1][..])
    );
    assert_eq!(code(g.remove_edges(&[3])), "SHADE-E0303");
    // to_unidirected merges both directions, averaging weights and data.
    let b = Graph::from_edges(2, &[(1, 0), (0, 1)])
        .unwrap()
        .with_weights(vec![1.0, 3.0])
        .unwrap();
    let u = b.to_unidirected();
    assert_eq!(
        (u.edge_index(), u.weights()),
        ((&[0u32][..], &[1u32][..]), Some(&[2.0][..]))
    );
    // coalesce with max
    let m = Graph::from_edges(2, &[(0, 1), (0, 1)])
        .unwrap()
        .with_weights(vec![1.0, 3.0])
        .unwrap();
    assert_eq!(m.coalesce(Reduce::Max).weights(), Some(&[3.0][..]));
    assert_eq!(m.coalesce(Reduce::Mean).weights(), Some(&[2.0][..]));
    // add / remove nodes keep data rows in step
    let x = g
        .clone()
        .with_node_data("x", array![[1.0f64], [2.0], [3.0]].into_dyn())
        .unwrap();
    let more = x.add_nodes(2).unwrap();
    assert_eq!(more.node_data().get("x").unwrap().shape(), &[5, 1]);
    let less = x.remove_nodes(&[1]).unwrap();
    assert_eq!((less.num_nodes(), less.num_edges()), (2, 0));
    assert_eq!(
        less.node_data()
            .get("x")
            .unwrap()
            .as_f64()
            .unwrap()
            .as_slice()
            .unwrap(),
        &[1.0, 3.0]
    );
    assert_eq!(code(x.induced_subgraph(&[0, 0])), "SHADE-E0320");
    assert_eq!(x.edge_subgraph(&[2, 2]).unwrap().num_edges(), 2);
}

#[test]
fn batches_validate_and_keep_layout() {
    let a = Graph::from_edges(2, &[(0, 1)])
        .unwrap()
        .with_node_data("x", Array1::from(vec![1.0f32, 2.0]))
        .unwrap();
    let b = Graph::from_edges(1, &[(0, 0)])
        .unwrap()
        .with_node_data("x", Array1::from(vec![3.0f32]))
        .unwrap();
    let batch = Graph::batch(&[a.clone(), b.clone(), a.clone()]).unwrap();
    assert_eq!(batch.graph_indicator(), &[0, 0, 1, 2, 2]);
    assert_eq!(batch.graph_node_ptr(), &[0, 2, 3, 5]);
    assert_eq!(batch.edge_index(), (&[0u32, 2, 3][..], &[1u32, 2, 4][..]));
    assert_eq!(batch.get_graph(1).unwrap(), b);
    assert_eq!(code(batch.get_graph(3)), "SHADE-E0304");
    // A batch of batches stays flat.
    let twice = Graph::batch(&[batch.clone(), a.clone()]).unwrap();
    assert_eq!(twice.num_graphs(), 4);
    assert_eq!(twice.unbatch().unwrap()[3], a);
    // Mismatched data.
    let c = Graph::from_edges(1, &[])
        .unwrap()
        .with_node_data("x", Array1::from(vec![1.0f64]))
        .unwrap();
    assert_eq!(code(Graph::batch(&[a.clone(), c])), "SHADE-E0311");
    assert_eq!(
        code(Graph::batch(&[a.clone(), Graph::empty(1).unwrap()])),
        "SHADE-E0311"
    );
    // Edges cannot cross graphs.
    assert_eq!(code(batch.add_edges(&[0], &[2], None)), "SHADE-E0312");
    let g = Graph::from_edges(3, &[(0, 2)]).unwrap();
    assert_eq!(
        code(g.clone().with_graph_indicator(&[0, 0, 1], 2)),
        "SHADE-E0312"
    );
    assert_eq!(
        code(g.clone().with_graph_indicator(&[1, 0, 0], 2)),
        "SHADE-E0312"
    );
    assert_eq!(
        code(g.clone().with_graph_indicator(&[0, 0, 2], 2)),
        "SHADE-E0304"
    );
    // Removing a node of graph 1 shrinks graph 1 only.
    let r = batch.remove_nodes(&[2]).unwrap();
    assert_eq!(r.graph_node_ptr(), &[0, 2, 2, 4]);
}
