//! Generators: counts against their expectations, structure, determinism, and the
//! contextual SBM's learnability through graph propagation.

use ndarray::{Array2, array};
use shade_graph::{
    Csbm, Graph, csbm, erdos_renyi, knn_graph, radius_graph, rand_graph, sprand,
    stochastic_block_model,
};

/// |x - mean| within 5 binomial standard deviations.
fn near_binomial(x: usize, trials: f64, p: f64) -> bool {
    let (mean, sd) = (trials * p, (trials * p * (1.0 - p)).sqrt());
    (x as f64 - mean).abs() <= 5.0 * sd
}

#[test]
fn rand_graph_has_m_edges_and_no_loops() {
    let g = rand_graph(50, 400, 1).unwrap();
    assert_eq!((g.num_nodes(), g.num_edges()), (50, 400));
    assert!(!g.has_self_loops());
    assert_eq!(g, rand_graph(50, 400, 1).unwrap());
    assert_ne!(g, rand_graph(50, 400, 2).unwrap());
    assert_eq!(rand_graph(1, 1, 0).unwrap_err().code(), "SHADE-E0320");
}

#[test]
fn erdos_renyi_counts_and_symmetry() {
    let g = erdos_renyi(200, 0.05, false, 3).unwrap();
    assert!(g.is_bidirected() && !g.has_self_loops() && !g.has_multi_edges());
    assert!(
        near_binomial(g.num_edges() / 2, 200.0 * 199.0 / 2.0, 0.05),
        "{}",
        g.num_edges()
    );
    let d = erdos_renyi(200, 0.05, true, 3).unwrap();
    assert!(!d.has_self_loops() && !d.has_multi_edges());
    assert!(
        near_binomial(d.num_edges(), 200.0 * 199.0, 0.05),
        "{}",
        d.num_edges()
    );
    assert_eq!(erdos_renyi(5, 1.0, false, 0).unwrap().num_edges(), 20);
    assert_eq!(erdos_renyi(5, 1.0, true, 0).unwrap().num_edges(), 20);
    assert_eq!(erdos_renyi(5, 0.0, true, 0).unwrap().num_edges(), 0);
    assert_eq!(
        erdos_renyi(5, 1.5, true, 0).unwrap_err().code(),
        "SHADE-E0320"
    );
}

#[test]
fn sbm_edges_follow_the_block_probabilities() {
    let (g, labels) =
        stochastic_block_model(&[100, 150], &[vec![0.1, 0.01], vec![0.01, 0.2]], 5).unwrap();
    assert!(g.is_bidirected() && !g.has_self_loops() && !g.has_multi_edges());
    let count = |a: usize, b: usize| {
        (0..g.num_edges())
            .filter(|&e| labels[g.src()[e] as usize] == a && labels[g.dst()[e] as usize] == b)
            .count()
    };
    assert!(near_binomial(count(0, 0) / 2, 100.0 * 99.0 / 2.0, 0.1));
    assert!(near_binomial(count(1, 1) / 2, 150.0 * 149.0 / 2.0, 0.2));
    assert!(near_binomial(count(0, 1), 100.0 * 150.0, 0.01));
    assert_eq!(count(0, 1), count(1, 0));
    let e = stochastic_block_model(&[2, 2], &[vec![0.1, 0.2], vec![0.3, 0.1]], 0).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0320");
}

/// Accuracy of the nearest class mean (means estimated on the first 20 nodes of each
/// class) on the remaining nodes.
fn centroid_accuracy(x: &Array2<f64>, labels: &[usize], c: usize) -> f64 {
    let f = x.ncols();
    let mut means = Array2::<f64>::zeros((c, f));
    let mut seen = vec![0usize; c];
    let mut train = vec![false; labels.len()];
    for (v, &l) in labels.iter().enumerate() {
        if seen[l] < 20 {
            seen[l] += 1;
            train[v] = true;
            let mut row = means.row_mut(l);
            row += &x.row(v);
        }
    }
    for (mut row, &k) in means.rows_mut().into_iter().zip(&seen) {
        row /= k as f64;
    }
    let (mut ok, mut total) = (0, 0);
    for v in (0..labels.len()).filter(|&v| !train[v]) {
        let best = (0..c)
            .map(|l| {
                (
                    x.row(v)
                        .iter()
                        .zip(means.row(l))
                        .map(|(a, b)| (a - b) * (a - b))
                        .sum::<f64>(),
                    l,
                )
            })
            .min_by(|a, b| a.partial_cmp(b).unwrap())
            .unwrap()
            .1;
        ok += usize::from(best == labels[v]);
        total += 1;
    }
    ok as f64 / total as f64
}

#[test]
fn csbm_is_learnable_through_the_graph() {
    let ds = csbm(1500, 3, 16, 10.0, 1.0, 7).unwrap();
    let g = &ds.graph;
    assert!(g.is_bidirected() && !g.has_self_loops());
    let mean_deg = g.num_edges() as f64 / 1500.0;
    assert!((mean_deg - 10.0).abs() < 1.0, "{mean_deg}");
    let same = (0..g.num_edges())
        .filter(|&e| ds.labels[g.src()[e] as usize] == ds.labels[g.dst()[e] as usize])
        .count();
    let h = same as f64 / g.num_edges() as f64;
    assert!((h - 0.8).abs() < 0.05, "homophily {h}");
    let x = ds.features.mapv(f64::from);
    let a = g.gcn_adjacency::<f64>();
    let ax = a * &x;
    let aax = a * &ax;
    let raw = centroid_accuracy(&x, &ds.labels, 3);
    let prop = centroid_accuracy(&aax, &ds.labels, 3);
    assert!(raw < 0.8, "features alone should not suffice: {raw}");
    assert!(
        prop > 0.9 && prop > raw + 0.15,
        "two propagation steps: {prop} vs raw {raw}"
    );
    assert_eq!(
        ds,
        Csbm {
            seed: 7,
            feature_signal: 1.0,
            ..Csbm::new(1500, 3, 16)
        }
        .generate()
        .unwrap()
    );
    assert_eq!(
        csbm(10, 1, 2, 3.0, 1.0, 0).unwrap_err().code(),
        "SHADE-E0320"
    );
}

#[test]
fn knn_and_radius_graphs_match_brute_force() {
    let p = array![[0.0, 0.0], [1.0, 0.0], [0.0, 2.0], [3.0, 3.0], [1.1, 0.1]];
    let g = knn_graph(p.view(), 2, false).unwrap();
    assert_eq!(g.in_degree(), &[2, 2, 2, 2, 2]);
    assert_eq!(g.in_neighbors(0).unwrap(), &[1, 4]);
    assert_eq!(g.in_neighbors(3).unwrap(), &[2, 4]); // |(0,2)-(3,3)|² = 10 < |(1,0)-(3,3)|² = 13
    let with_self = knn_graph(p.view(), 1, true).unwrap();
    assert_eq!(with_self.src(), with_self.dst());
    let r = radius_graph(p.view(), 1.2, false, None).unwrap();
    assert_eq!(
        r,
        Graph::from_edges(5, &[(1, 0), (4, 0), (4, 1), (0, 1), (1, 4), (0, 4)]).unwrap()
    );
    let capped = radius_graph(p.view(), 10.0, false, Some(1)).unwrap();
    assert_eq!(capped.in_degree(), &[1, 1, 1, 1, 1]);
    let bad = array![[0.0, f64::NAN]];
    assert_eq!(
        knn_graph(bad.view(), 1, false).unwrap_err().code(),
        "SHADE-E0306"
    );
}

#[test]
fn sprand_fills_about_p_n_squared_entries() {
    let g = sprand(100, 0.1, 9).unwrap();
    assert!(near_binomial(g.num_edges(), 10_000.0, 0.1));
    assert!(
        g.weights()
            .unwrap()
            .iter()
            .all(|&w| (0.0..1.0).contains(&w))
    );
    assert!(!g.has_multi_edges());
    let full = sprand(4, 1.0, 0).unwrap();
    assert_eq!(full.num_edges(), 16);
    assert!(full.has_self_loops());
}
