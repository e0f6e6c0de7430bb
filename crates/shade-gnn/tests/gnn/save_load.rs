//! Parameters survive a safetensors round trip: a trained model saved to a file and
//! loaded into a fresh train state predicts exactly the same; a file from another
//! architecture is refused with a coded error.

use shade_gnn::layers::{Activation, Chain, GCNConv};
use shade_gnn::loss::{NodeTargets, cross_entropy};
use shade_gnn::optim::Optimiser;
use shade_gnn::train::{Data, TrainState, single_train_step};
use shade_gnn::{Features, GraphCtx, Inputs, Layer, load_safetensors, save_safetensors};
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
