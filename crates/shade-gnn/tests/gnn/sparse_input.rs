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

/// Input dropout (`Features::dropout`, what `fit` applies every epoch) is the core's
/// mask: dense features (also given column-major) keep `x · 1/(1-p)` where
/// `keep_mask` keeps and 0 elsewhere, sparse features the same over their stored values
/// only; `p` outside `[0, 1)` is SHADE-E0404 and moves nothing.
#[test]
fn input_dropout_is_the_core_mask_on_dense_and_sparse_features() {
    use ndarray::ShapeBuilder;
    let (n, f, p) = (61, 37, 0.4);
    let (dense, sparse) = features(n, f, 5);
    let scale = 1.0 / (1.0 - p);
    let mask = shade_autodiff::tensor::keep_mask(n * f, p, &mut StdRng::seed_from_u64(9));
    let mut col_major = Array2::zeros((n, f).f());
    col_major.assign(&dense);
    for x in [dense.clone(), col_major] {
        let d = Features::<f64>::dense(x)
            .dropout(p, &mut StdRng::seed_from_u64(9))
            .expect("dropout");
        let Features::Dense(y) = d else {
            panic!("dense features stay dense")
        };
        for i in 0..n {
            for j in 0..f {
                let want = if mask[i * f + j] {
                    dense[[i, j]] * scale
                } else {
                    0.0
                };
                assert_eq!(y[[i, j]], want, "[{i}, {j}]");
            }
        }
    }
    let s = Features::<f64>::sparse_from_f32(&sparse);
    let Features::Sparse(y) = s
        .dropout(p, &mut StdRng::seed_from_u64(9))
        .expect("dropout")
    else {
        panic!("sparse features stay sparse")
    };
    let m = shade_autodiff::tensor::keep_mask(sparse.nnz(), p, &mut StdRng::seed_from_u64(9));
    assert_eq!(y.csr().indices(), sparse.indices());
    for ((&got, &v), &k) in y.csr().data().iter().zip(sparse.data()).zip(&m) {
        assert_eq!(got, if k { f64::from(v) * scale } else { 0.0 });
    }
    for bad in [1.0, -0.1, f64::NAN] {
        let mut rng = StdRng::seed_from_u64(9);
        let e = s.dropout(bad, &mut rng).expect_err("out of range");
        assert_eq!(e.code(), "SHADE-E0404", "{bad}");
        assert_eq!(
            rng.random::<u64>(),
            StdRng::seed_from_u64(9).random::<u64>()
        );
    }
}
