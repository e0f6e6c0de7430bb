//! Broken programs against the GNN crate (codes `SHADE-E04xx`).

use super::harness::{Program, Seen};
use ndarray::Array2;
use shade_gnn::layers::{Chain, Dense, GCNConv};
use shade_gnn::loss::{NodeTargets, cross_entropy};
use shade_gnn::optim::Optimiser;
use shade_gnn::train::TrainState;
use shade_gnn::{
    Features, Inputs, Params, from_safetensors_bytes, load_safetensors, to_safetensors_bytes,
};
use shade_graph::Graph;
use shade_interface::AutoShade;

pub(crate) const PROGRAMS: &[(&str, Program)] = &[
    (
        "gnn_checkpoint_of_a_smaller_model",
        checkpoint_of_a_smaller_model,
    ),
    (
        "gnn_checkpoint_with_another_width",
        checkpoint_with_another_width,
    ),
    (
        "gnn_checkpoint_of_a_larger_model",
        checkpoint_of_a_larger_model,
    ),
    ("gnn_negative_learning_rate", negative_learning_rate),
    ("gnn_feature_rows", feature_rows),
    ("gnn_nan_feature_in_training", nan_feature_in_training),
    ("gnn_missing_checkpoint_file", missing_checkpoint_file),
    ("gnn_truncated_checkpoint", truncated_checkpoint),
    ("gnn_rank_with_nan_features", rank_with_nan_features),
];

fn one_layer() -> Chain<f64> {
    Chain::new().add("conv1", GCNConv::new(3, 4))
}

pub(crate) fn two_layers(hidden: usize) -> Chain<f64> {
    Chain::new()
        .add("conv1", GCNConv::new(3, hidden))
        .add("out", Dense::new(hidden, 2))
}

pub(crate) fn params_of(model: &Chain<f64>) -> Result<Params<f64>, Seen> {
    Ok(TrainState::new(model, Optimiser::adam(0.01), 0)?.params)
}

fn checkpoint_of_a_smaller_model() -> Result<(), Seen> {
    let saved = params_of(&one_layer())?;
    let wanted = params_of(&two_layers(4))?;
    saved.conform_to(&wanted)?;
    Ok(())
}

fn checkpoint_with_another_width() -> Result<(), Seen> {
    let saved = params_of(&two_layers(4))?;
    let wanted = params_of(&two_layers(8))?;
    saved.conform_to(&wanted)?;
    Ok(())
}

fn checkpoint_of_a_larger_model() -> Result<(), Seen> {
    let saved = params_of(&two_layers(4))?;
    let wanted = params_of(&one_layer())?;
    saved.conform_to(&wanted)?;
    Ok(())
}

fn negative_learning_rate() -> Result<(), Seen> {
    TrainState::new(&two_layers(4), Optimiser::adam(-0.01), 0)?;
    Ok(())
}

pub(crate) fn ring(n: u32) -> Result<Graph, Seen> {
    let edges: Vec<(u32, u32)> = (0..n)
        .flat_map(|i| [(i, (i + 1) % n), ((i + 1) % n, i)])
        .collect();
    Ok(Graph::from_edges(n as usize, &edges)?)
}

fn train_once(x: Array2<f64>) -> Result<(), Seen> {
    let y = NodeTargets {
        labels: vec![0, 1, 0, 1, 0, 1],
        nodes: vec![0, 1, 2],
    };
    let x = Some(Features::dense(x));
    super::training::step_on_ring(x, &y, cross_entropy, Optimiser::adam(0.01), false)??;
    Ok(())
}

fn feature_rows() -> Result<(), Seen> {
    train_once(Array2::from_elem((5, 3), 0.5))
}

fn nan_feature_in_training() -> Result<(), Seen> {
    let mut x = Array2::from_elem((6, 3), 0.5);
    x[[1, 2]] = f64::NAN;
    train_once(x)
}

fn missing_checkpoint_file() -> Result<(), Seen> {
    load_safetensors::<f64>("checkpoints/no-such-model.safetensors")?;
    Ok(())
}

fn truncated_checkpoint() -> Result<(), Seen> {
    let bytes = to_safetensors_bytes(&params_of(&two_layers(4))?);
    from_safetensors_bytes::<f64>(&bytes[..bytes.len() / 2])?;
    Ok(())
}

/// Two ranks (threads) train a linear model; rank 1's features hold a NaN.
fn rank_with_nan_features() -> Result<(), Seen> {
    use shade_gnn::distributed::{DataParallel, ThreadGroup};
    use shade_gnn::minibatch::NodeShard;
    let model = Chain::<f64>::new().add("out", Dense::new(3, 2));
    let labels = NodeTargets {
        labels: vec![0, 1, 0, 1],
        nodes: vec![0, 1, 2, 3],
    };
    let results: Vec<Result<(), shade_gnn::GnnError>> = std::thread::scope(|s| {
        let ranks: Vec<_> = ThreadGroup::new(2)
            .into_iter()
            .map(|comm| {
                let (model, labels) = (&model, &labels);
                s.spawn(move || {
                    let mut dp = DataParallel::new(comm);
                    let mut x = Array2::from_elem((4, 3), 0.5);
                    if dp.rank() == 1 {
                        x[[2, 0]] = f64::NAN;
                    }
                    let x = Features::dense(x);
                    let mut ts = TrainState::new(model, Optimiser::adam(0.01), 0)?;
                    let shard = NodeShard {
                        inputs: Inputs::without_graph(&x),
                        target: labels,
                    };
                    dp.step(
                        &AutoShade::REVERSE,
                        model,
                        &cross_entropy,
                        Ok(shard),
                        &mut ts,
                    )?;
                    Ok(())
                })
            })
            .collect();
        ranks.into_iter().map(|r| r.join().unwrap()).collect()
    });
    // Every rank returns the same error; rank 0's is the one shown.
    results.into_iter().next().unwrap_or(Ok(()))?;
    Ok(())
}
