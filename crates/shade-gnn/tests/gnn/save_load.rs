//! Parameters survive a safetensors round trip: a trained model saved to a file and
//! loaded into a fresh train state predicts exactly the same; a file from another
//! architecture is refused with a coded error. PyTorch interoperates both ways: a PyG
//! model with BatchNorm saved by `safetensors.torch` (fixture in `tests/fixtures`,
//! written once by `make_torch_fixtures.py`) loads and predicts as PyTorch did, and the
//! files shade writes here are the ones that script checks with PyG.

use shade_gnn::layers::{Activation, BatchNorm, Chain, Dense, GCNConv};
use shade_gnn::loss::{NodeTargets, cross_entropy};
use shade_gnn::optim::Optimiser;
use shade_gnn::train::{Data, TrainState, single_train_step};
use shade_gnn::{
    Features, GraphCtx, Inputs, Layer, load_model_safetensors, load_safetensors,
    save_model_safetensors, save_safetensors,
};
use shade_interface::AutoShade;

#[test]
fn trained_parameters_round_trip_through_a_file() {
    let ds = shade_graph::csbm(80, 3, 6, 6.0, 1.5, 4).unwrap();
    let ctx = GraphCtx::<f32>::new(&ds.graph);
    let x = Features::dense(ds.features.clone());
    let y = NodeTargets {
        labels: ds.labels.clone(),
        nodes: (0..40).collect(),
    };
    let model = Chain::new()
        .add("conv1", GCNConv::new(6, 8))
        .add("act", Activation::Relu)
        .add("conv2", GCNConv::new(8, 3));
    let mut ts = TrainState::new(&model, Optimiser::adamw(0.02, 0.01), 1).unwrap();
    let data = Data {
        inputs: Inputs::new(&ctx, &x),
        target: &y,
    };
    for _ in 0..20 {
        single_train_step(&AutoShade::REVERSE, &model, cross_entropy, &data, &mut ts).unwrap();
    }
    let dir = std::env::temp_dir().join(format!("shade-gnn-save-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("gcn.safetensors");
    save_safetensors(&ts.params, &path).unwrap();

    // A fresh state, then the loaded parameters checked against the architecture.
    let mut rng = rand::SeedableRng::seed_from_u64(99);
    let (fresh, state) = Layer::<f32>::init(&model, &mut rng);
    let loaded = load_safetensors::<f32>(&path)
        .unwrap()
        .conform_to(&fresh)
        .unwrap();
    assert_eq!(loaded, ts.params);
    let mut ts2 = TrainState::from_params(loaded, state, Optimiser::adam(0.01), rng).unwrap();
    let a = ts.predict(&model, &data.inputs).unwrap();
    let b = ts2.predict(&model, &data.inputs).unwrap();
    assert_eq!(a, b);

    // Another architecture: the widths differ.
    let other = Chain::<f32>::new()
        .add("conv1", GCNConv::new(6, 4))
        .add("conv2", GCNConv::new(4, 3));
    let (p_other, _) = other.init(&mut rand::SeedableRng::seed_from_u64(0));
    let e = load_safetensors::<f32>(&path)
        .unwrap()
        .conform_to(&p_other)
        .unwrap_err();
    assert_eq!(e.code(), "SHADE-E0402", "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The graph, input and (PyTorch's, if any) output stored in an npz beside a model.
fn npz_problem(
    path: &std::path::Path,
) -> (
    shade_graph::Graph,
    ndarray::Array2<f32>,
    Option<ndarray::Array2<f32>>,
) {
    let a = shade_graph::read_npz_arrays(path).unwrap();
    let x = a.array::<f32, ndarray::Ix2>("x").unwrap();
    let ei = a.array::<i64, ndarray::Ix2>("edge_index").unwrap();
    let (src, dst) = (ei.row(0), ei.row(1));
    let g = shade_graph::Graph::try_new(
        x.nrows(),
        src.iter().map(|&v| v as u32).collect(),
        dst.iter().map(|&v| v as u32).collect(),
    )
    .unwrap();
    (g, x, a.array::<f32, ndarray::Ix2>("out").ok())
}

fn gcn_batchnorm() -> Chain<f32> {
    Chain::new()
        .add("conv1", GCNConv::new(3, 4))
        .add("bn", BatchNorm::new(4))
        .add("act", Activation::Relu)
        .add("conv2", GCNConv::new(4, 2))
}

/// `GCNConv(3, 4) -> BatchNorm1d(4) -> relu -> GCNConv(4, 2)` trained (3 passes) and
/// saved by PyTorch: the I64 counter is read, then dropped, and shade's evaluation
/// output equals PyTorch's.
#[test]
fn a_pytorch_file_with_batchnorm_loads_and_predicts_the_same() {
    let path = fixture("pyg_gcn_batchnorm.safetensors");
    let raw = load_safetensors::<f64>(&path).unwrap();
    assert_eq!(
        raw.get("bn.num_batches_tracked")
            .unwrap()
            .iter()
            .copied()
            .collect::<Vec<_>>(),
        [3.0]
    );
    assert_eq!(raw.len(), 9);
    let model = gcn_batchnorm();
    let (params, state) = load_model_safetensors(&model, &path).unwrap();
    assert_eq!(state.names(), ["bn.running_mean", "bn.running_var"]);
    assert_ne!(state.get("bn.running_var").unwrap()[0], 1.0);
    let (g, x, want) = npz_problem(&fixture("pyg_gcn_batchnorm.npz"));
    let ctx = GraphCtx::<f32>::new(&g);
    let feats = Features::dense(x);
    let rng = rand::SeedableRng::seed_from_u64(0);
    let mut ts = TrainState::from_params(params, state, Optimiser::adam(0.01), rng).unwrap();
    let out = ts.predict(&model, &Inputs::new(&ctx, &feats)).unwrap();
    let want = want.unwrap();
    let diff = out
        .iter()
        .zip(want.iter())
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    assert!(diff < 1e-5, "max |shade - PyTorch| = {diff}");
    // A file of another architecture is refused with the name that does not fit.
    let other = Chain::<f32>::new().add("conv1", GCNConv::new(3, 4));
    let e = load_model_safetensors(&other, &path).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0403", "{e}");
}

/// Writes the files `make_torch_fixtures.py check DIR` loads with PyG
/// (`DIR = target/tmp`): the founding story's policy model and the BatchNorm model,
/// each with its input and shade's output; and checks they read back here.
#[test]
fn files_for_pytorch_round_trip() {
    use shade_graph::{NpzArrays, write_npz_arrays};
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let policy = Chain::<f32>::new()
        .add("conv1", GCNConv::new(2, 50))
        .add("act1", Activation::Tanh)
        .add("conv2", GCNConv::new(50, 50))
        .add("act2", Activation::Relu)
        .add(
            "dense",
            Dense::new(50, 100).with_activation(Activation::Sigmoid),
        );
    let g = shade_graph::erdos_renyi(100, 0.2, true, 7).unwrap();
    let x = ndarray::Array2::from_shape_fn((100, 2), |(i, j)| {
        ((i * 7 + j * 3) % 11) as f32 / 5.0 - 1.0
    });
    let bn_x =
        ndarray::Array2::from_shape_fn((100, 3), |(i, j)| ((i * 5 + j) % 7) as f32 / 3.0 - 1.0);
    let y = NodeTargets {
        labels: (0..100).map(|i| i % 2).collect(),
        nodes: (0..100).collect(),
    };
    for (name, model, x) in [
        ("policy", policy, x),
        ("gcn_batchnorm", gcn_batchnorm(), bn_x),
    ] {
        let ctx = GraphCtx::<f32>::new(&g);
        let feats = Features::dense(x.clone());
        let mut ts = TrainState::new(&model, Optimiser::adam(0.01), 3).unwrap();
        let data = Data {
            inputs: Inputs::new(&ctx, &feats),
            target: &y,
        };
        for _ in 0..5 {
            single_train_step(&AutoShade::REVERSE, &model, cross_entropy, &data, &mut ts).unwrap();
        }
        let out = ts.predict(&model, &data.inputs).unwrap();
        let path = dir.join(format!("shade_{name}.safetensors"));
        save_model_safetensors(&ts.params, &ts.state, &path).unwrap();
        let (src, dst) = g.edge_index();
        let ei = ndarray::Array2::from_shape_fn((2, g.num_edges()), |(r, e)| {
            i64::from(if r == 0 { src[e] } else { dst[e] })
        });
        let arrays = NpzArrays::new()
            .with("x", x)
            .with("edge_index", ei)
            .with("out", out.clone());
        write_npz_arrays(dir.join(format!("shade_{name}.npz")), &arrays).unwrap();
        let (p, s) = load_model_safetensors(&model, &path).unwrap();
        assert_eq!((&p, &s), (&ts.params, &ts.state));
    }
}
