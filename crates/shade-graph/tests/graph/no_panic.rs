//! No panic on any input: every public constructor, transform, sampler, split and
//! generator of the crate driven with arbitrary counts, ids (beyond the graph, near
//! `u32::MAX`), weights (NaN, infinities) and options; the readers (`.npy`, `.npz` of
//! arrays, the citation-graph `.npz`, edge lists) on arbitrary bytes and on valid
//! files with bytes overwritten, cut or appended. Each call may succeed or return a
//! coded error; a panic fails the property.
//!
//! `PROPTEST_CASES=10000` (or `cargo xtask fuzz`) for the long run.

use ndarray::{Array1, Array2, ArrayD, IxDyn};
use proptest::prelude::*;
use shade_graph::{
    Dataset, GcnNorm, Graph, LaplacianNorm, NeighborSampler, NormalizeFeatures, NpyArray,
    NpzArrays, NpzOptions, Reduce, edge_list_string, erdos_renyi, knn_graph, negative_edges,
    npy_bytes, npz_arrays_bytes, npz_bytes, parse_edge_list, parse_npy, parse_npz,
    parse_npz_arrays, radius_graph, rand_graph, random_edge_split, split_per_class, sprand,
    stochastic_block_model,
};
use shade_test_support::strategies::no_panic;

fn node_id(n: u32) -> impl Strategy<Value = u32> {
    prop_oneof![
        30 => 0..n.max(1),
        1 => Just(n),
        1 => prop::sample::select(vec![u32::MAX, u32::MAX - 1, 1 << 31]),
    ]
}

fn count() -> impl Strategy<Value = usize> {
    prop_oneof![
        20 => 0usize..9,
        1 => prop::sample::select(vec![usize::MAX, u32::MAX as usize, u32::MAX as usize + 1]),
    ]
}

fn weight() -> impl Strategy<Value = f64> {
    prop_oneof![
        20 => -2.0..2.0f64,
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(0.0),
    ]
}

fn fraction() -> impl Strategy<Value = f64> {
    prop::sample::select(vec![0.0, 0.2, 0.5, 1.0, 1.5, -0.5, f64::NAN])
}

#[derive(Debug)]
struct Case {
    n: usize,
    edges: Vec<(u32, u32)>,
    weights: Vec<f64>,
    nodes: Vec<u32>,
    ids: Vec<usize>,
    k: usize,
    f: f64,
    g: f64,
}

fn case() -> impl Strategy<Value = Case> {
    (0u32..8).prop_flat_map(|n| {
        (
            prop_oneof![12 => Just(n as usize), 1 => count()],
            prop::collection::vec((node_id(n), node_id(n)), 0..14),
            prop::collection::vec(weight(), 0..16),
            prop::collection::vec(node_id(n), 0..6),
            prop::collection::vec(prop_oneof![10 => 0usize..16, 1 => Just(usize::MAX)], 0..6),
            count(),
            fraction(),
            fraction(),
        )
            .prop_map(|(n, edges, weights, nodes, ids, k, f, g)| Case {
                n,
                edges,
                weights,
                nodes,
                ids,
                k,
                f,
                g,
            })
    })
}

fn drive(c: &Case) -> Result<(), TestCaseError> {
    let (src, dst): (Vec<u32>, Vec<u32>) = c.edges.iter().copied().unzip();
    let _ = no_panic("empty", || Graph::empty(c.n))?;
    let _ = no_panic("from_edges", || Graph::from_edges(c.n, &c.edges))?;
    let g = no_panic("try_new", || Graph::try_new(c.n, src.clone(), dst.clone()))?;
    let Ok(g) = g else {
        return Ok(());
    };
    let small = c.k.min(64);
    no_panic("transforms", || {
        let w = g.clone().with_weights(c.weights.clone());
        let g = w.unwrap_or_else(|_| g.clone());
        let _ = g.add_nodes(c.k);
        let _ = g.add_edges(&src, &dst, Some(&c.weights));
        let _ = g.remove_edges(&c.ids);
        let _ = g.edge_subgraph(&c.ids);
        let _ = g.induced_subgraph(&c.nodes);
        let _ = g.k_hop_subgraph(&c.nodes, small);
        let _ = g.remove_nodes(&c.nodes);
        let _ = g.add_self_loops(c.f);
        let _ = g.add_remaining_self_loops(c.g);
        let _ = g
            .coalesce(Reduce::Sum)
            .to_undirected(Reduce::Max)
            .to_unidirected();
        let _ = g.remove_self_loops().to_bidirected();
        let indicator: Vec<u32> = (0..g.num_nodes() as u32).map(|v| v / 2).collect();
        let _ = g.clone().with_graph_indicator(&indicator, small);
        let _ = g.clone().with_graph_indicator(&c.nodes, small);
        for &v in &c.nodes {
            let _ = g.in_neighbors(v);
            let _ = g.out_neighbors(v);
        }
        let _ = g.gcn_norm::<f32>(GcnNorm::default());
        let _ = g.gcn_norm::<f64>(GcnNorm {
            add_self_loops: false,
            improved: true,
            weighted: true,
        });
        let _ = g.gcn_norm_edges(GcnNorm::default());
        for norm in LaplacianNorm::ALL {
            let _ = g.laplacian::<f64>(norm);
            let _ = g.scaled_laplacian::<f32>(norm, c.f);
            let _ = g.lambda_max(norm);
        }
        let _ = edge_list_string(&g);
        let x = Array2::from_shape_fn((g.num_nodes(), 2), |(i, j)| {
            c.weights.get(i + j).copied().unwrap_or(0.5) as f32
        });
        if let Ok(g) = g.clone().with_node_data("x", x.into_dyn()) {
            let _ = NormalizeFeatures::new().apply(&g);
            let _ = Graph::batch(&[g.clone(), g.clone()]).and_then(|b| {
                let _ = b.get_graph(c.k);
                b.unbatch()
            });
        }
    })?;
    no_panic("sampling", || {
        let fanouts: Vec<usize> = c
            .ids
            .iter()
            .map(|&i| if i == usize::MAX { i } else { i % 4 })
            .collect();
        let mut s = NeighborSampler::new(fanouts);
        let _ = s.sample(&g, &c.nodes, 0);
        s.replace = true;
        let _ = s.sample(&g, &c.nodes, 1);
        let _ = negative_edges(&g, small, 0);
        let _ = random_edge_split(&g, c.f, c.g, c.k.is_multiple_of(2), 0);
        let labels: Vec<usize> = (0..g.num_nodes()).map(|v| v % 3).collect();
        let _ = split_per_class(&labels, small, 1, small, small, 0);
    })?;
    Ok(())
}

proptest! {
    #![proptest_config(shade_test_support::strategies::cases(64))]

    #[test]
    fn no_constructor_transform_or_sampler_panics(c in case()) {
        drive(&c)?;
    }

    #[test]
    fn no_generator_panics(
        n in count(), m in count(), k in 0usize..5, p in fraction(), q in fraction(),
        pts in prop::collection::vec(prop_oneof![10 => -2.0..2.0f64, 1 => Just(f64::NAN)], 0..12),
    ) {
        // Counts beyond a few thousand only where a generator must refuse them (the
        // others would build a graph that large).
        let n = if n > 64 { n } else { n.min(64) };
        no_panic("generators", || {
            if n <= 64 || n > u32::MAX as usize {
                let _ = rand_graph(n, m.min(256), 0);
                let _ = erdos_renyi(n, p, k.is_multiple_of(2), 0);
                let _ = sprand(n, q, 0);
            }
            let sizes = vec![n.min(8); k];
            let probs = vec![vec![p; k]; k.saturating_sub(usize::from(q > 0.5))];
            let _ = stochastic_block_model(&sizes, &probs, 0);
            let points = Array2::from_shape_fn((pts.len() / 2, 2), |(i, j)| pts[2 * i + j]);
            let _ = knn_graph(points.view(), k, !k.is_multiple_of(2));
            let _ = radius_graph(points.view(), p, true, Some(k));
            let _ = shade_graph::csbm(n.min(64), k, k, p.abs() * 10.0, q, 0);
        })?;
    }

    /// The readers on arbitrary bytes and on valid files mutated.
    #[test]
    fn no_reader_panics(
        noise in prop::collection::vec(any::<u8>(), 0..96),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..6),
        cut in any::<prop::sample::Index>(),
        which in 0usize..4,
        how in 0usize..3,
    ) {
        let valid = || -> Vec<u8> {
            match which {
                0 => npy_bytes(&NpyArray::from(ArrayD::from_elem(IxDyn(&[2, 3]), 1.5f32))),
                1 => {
                    let a = NpzArrays::new()
                        .with("x", Array2::<f64>::eye(3))
                        .with("y", Array1::<i64>::from(vec![1, 2]));
                    npz_arrays_bytes(&a, cut.index(2) == 1).unwrap_or_default()
                }
                2 => {
                    let mut graph = Graph::from_edges(3, &[(0, 1), (1, 2)]).unwrap_or_else(|_| Graph::empty(0).unwrap());
                    let _ = graph.set_sparse_node_features(sprs::CsMat::<f32>::eye(3));
                    let ds = Dataset { graph, labels: vec![0, 1, 0], num_classes: 2 };
                    npz_bytes(&ds, cut.index(2) == 1).unwrap_or_default()
                }
                _ => b"# nodes 4\n0 1 0.5\n1 2 2\n2,3\n".to_vec(),
            }
        };
        let bytes = match how {
            0 => noise.clone(),
            1 => { let v = valid(); v[..cut.index(v.len() + 1)].to_vec() }
            _ => {
                let mut b = valid();
                for (i, v) in &edits {
                    if !b.is_empty() {
                        let k = i.index(b.len());
                        b[k] = *v;
                    }
                }
                b.extend_from_slice(&noise[..noise.len().min(3)]);
                b
            }
        };
        no_panic("readers", || {
            let _ = parse_npy(&bytes, "x.npy").map(|a| a.into_array::<f64, ndarray::IxDyn>());
            let _ = parse_npz_arrays(&bytes, "a.npz").map(|a| a.array::<f32, ndarray::Ix2>("x").map(|x| x.len()));
            let _ = parse_npz(&bytes, "g.npz", NpzOptions::undirected());
            let _ = parse_npz(&bytes, "g.npz", NpzOptions::default());
            let _ = parse_edge_list(&bytes, "e.txt", None);
            let _ = parse_edge_list(&bytes, "e.txt", Some(3));
        })?;
    }
}
