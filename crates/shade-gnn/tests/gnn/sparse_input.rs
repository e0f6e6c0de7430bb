//! Part-B layers on sparse input features give the same output as on the same
//! features stored densely (the sparse × dense path of `Input::linear` and the
//! densified fallbacks).

use ndarray::Array2;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use shade_gnn::layers::{
    AGNNConv, APPNP, ChebConv, GATv2Conv, GatedGraphConv, GraphConv, ResGatedGraphConv, SGConv,
    TAGConv, TransformerConv,
};
use shade_gnn::message::Aggr;
use shade_gnn::pool::{GlobalPool, Set2Set};
use shade_gnn::{Features, GraphCtx, Inputs, Layer, apply};
use sprs::TriMatI;

fn features(n: usize, f: usize, seed: u64) -> (Array2<f64>, shade_graph::CsMat32<f32>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut dense = Array2::zeros((n, f));
    let mut tri = TriMatI::<_, u32>::new((n, f));
    for i in 0..n {
        for j in 0..f {
            if rng.random::<f64>() < 0.4 {
                let v = (rng.random::<f64>() * 2.0 - 1.0) as f32;
                dense[[i, j]] = f64::from(v);
                tri.add_triplet(i, j, v);
            }
        }
    }
    (dense, tri.to_csr())
}

fn same_output<L: Layer<f64>>(
    layer: &L,
    ctx: &GraphCtx<f64>,
    dense: &Array2<f64>,
    sparse: &shade_graph::CsMat32<f32>,
) {
    let mut rng = StdRng::seed_from_u64(3);
    let (p, st) = layer.init(&mut rng);
    let fd = Features::dense(dense.clone());
    let fs = Features::sparse_from_f32(sparse);
    let (yd, _) = apply(layer, &Inputs::new(ctx, &fd), &p, &st, false, &mut rng).unwrap();
    let (ys, _) = apply(layer, &Inputs::new(ctx, &fs), &p, &st, false, &mut rng).unwrap();
    assert_eq!(yd.shape(), ys.shape(), "{}", layer.name());
    for (a, b) in yd.iter().zip(ys.iter()) {
        assert!(
            (a - b).abs() <= 1e-12 * (1.0 + b.abs()),
            "{}: {a} vs {b}",
            layer.name()
        );
    }
    // The same features stored by column give the same bits.
    let fc = Features::sparse_from_f32(&sparse.to_csc());
    let (yc, _) = apply(layer, &Inputs::new(ctx, &fc), &p, &st, false, &mut rng).unwrap();
    assert_eq!(yc, ys, "{}: CSC features", layer.name());
}

#[test]
fn sparse_and_dense_input_agree() {
    let g = shade_graph::Graph::new(
        7,
        vec![0, 1, 2, 3, 4, 0, 5, 5, 2],
        vec![1, 2, 3, 4, 0, 0, 1, 1, 6],
    );
    let ctx = GraphCtx::<f64>::new(&g);
    let (dense, sparse) = features(7, 4, 1);
    same_output(&GraphConv::new(4, 3), &ctx, &dense, &sparse);
    same_output(
        &GraphConv::new(4, 3).with_aggr(Aggr::Max),
        &ctx,
        &dense,
        &sparse,
    );
    same_output(&GATv2Conv::new(4, 2).with_heads(2), &ctx, &dense, &sparse);
    same_output(&ChebConv::new(4, 3, 3), &ctx, &dense, &sparse);
    same_output(&SGConv::new(4, 3).with_k(2), &ctx, &dense, &sparse);
    same_output(
        &SGConv::new(4, 3).with_k(2).with_cached(true),
        &ctx,
        &dense,
        &sparse,
    );
    same_output(&TAGConv::new(4, 3), &ctx, &dense, &sparse);
    same_output(&APPNP::new(3, 0.2), &ctx, &dense, &sparse);
    same_output(&ResGatedGraphConv::new(4, 3), &ctx, &dense, &sparse);
    same_output(&GatedGraphConv::new(5, 2), &ctx, &dense, &sparse);
    same_output(
        &TransformerConv::new(4, 2).with_heads(2),
        &ctx,
        &dense,
        &sparse,
    );
    same_output(&AGNNConv::new(), &ctx, &dense, &sparse);
    same_output(&GlobalPool::new(Aggr::Mean), &ctx, &dense, &sparse);
    same_output(&Set2Set::new(4, 2), &ctx, &dense, &sparse);
}
