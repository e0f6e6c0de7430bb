//! A user project with `shade-gnn` as its only dependency: the founding story's policy
//! model (a random directed graph, n = 100, p = 0.2, two input features; GCNConv 2→50,
//! tanh, GCNConv 50→50, relu, Dense 50→100 with a sigmoid: a preference over 100
//! actions per node) trained with Adam towards a fixed preference (action `j` has target
//! `(j + 0.5) / 100` at every node), then saved as safetensors and loaded back.

use shade_gnn::layers::{Activation, Chain, Dense, GCNConv};
use shade_gnn::loss::{DenseTargets, mse};
use shade_gnn::ndarray::{Array2, ArrayD, IxDyn};
use shade_gnn::optim::Optimiser;
use shade_gnn::rand::rngs::StdRng;
use shade_gnn::rand::{RngExt, SeedableRng};
use shade_gnn::shade_interface::AutoShade;
use shade_gnn::train::{Data, TrainState, single_train_step};
use shade_gnn::{Features, GnnResult, GraphCtx, Inputs, Params};
use std::path::Path;

fn policy_model() -> Chain<f32> {
    Chain::new()
        .add("conv1", GCNConv::new(2, 50))
        .add("act1", Activation::Tanh)
        .add("conv2", GCNConv::new(50, 50))
        .add("act2", Activation::Relu)
        .add(
            "dense",
            Dense::new(50, 100).with_activation(Activation::Sigmoid),
        )
}

/// Trains the model for `steps` Adam steps and saves its parameters to `path`;
/// returns the losses and the trained parameters.
fn train_and_save(steps: usize, path: &Path) -> GnnResult<(Vec<f32>, Params<f32>)> {
    let g = shade_gnn::shade_graph::erdos_renyi(100, 0.2, true, 7)?;
    let mut rng = StdRng::seed_from_u64(8);
    let x = Array2::from_shape_simple_fn((100, 2), || rng.random::<f32>() * 2.0 - 1.0);
    let y = DenseTargets(ArrayD::from_shape_fn(IxDyn(&[100, 100]), |ij| {
        (ij[1] as f32 + 0.5) / 100.0
    }));
    let (ctx, x) = (GraphCtx::new(&g), Features::dense(x));
    let model = policy_model();
    let mut ts = TrainState::new(&model, Optimiser::adam(0.01), 1)?;
    let data = Data {
        inputs: Inputs::new(&ctx, &x),
        target: &y,
    };
    let mut losses = Vec::with_capacity(steps);
    for _ in 0..steps {
        losses.push(single_train_step(&AutoShade::REVERSE, &model, mse, &data, &mut ts)?.loss);
    }
    shade_gnn::save_safetensors(&ts.params, path)?;
    Ok((losses, ts.params))
}

fn main() -> GnnResult<()> {
    let path = std::env::temp_dir().join("policy_model.safetensors");
    let (losses, params) = train_and_save(100, &path)?;
    println!(
        "loss {:.4} -> {:.4}; {} parameter tensors saved to {}",
        losses[0],
        losses[losses.len() - 1],
        params.len(),
        path.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trains_saves_and_loads_the_policy_model() {
        let dir = std::env::temp_dir().join(format!("shade-user-gnn-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("policy.safetensors");
        let (losses, params) = train_and_save(40, &path).unwrap();
        let (first, last) = (losses[0], losses[losses.len() - 1]);
        assert!(losses.iter().all(|l| l.is_finite()));
        // From about the targets' variance (1/12) to a fraction of it.
        assert!(first > 0.07 && last < 0.5 * first, "loss {first} -> {last}");
        let back: Params<f32> = shade_gnn::load_safetensors(&path).unwrap();
        assert_eq!(back, params);
        assert_eq!(
            back.names(),
            [
                "conv1.lin.weight",
                "conv1.bias",
                "conv2.lin.weight",
                "conv2.bias",
                "dense.weight",
                "dense.bias"
            ]
        );
        assert_eq!(back.get("dense.weight").unwrap().shape(), &[100, 50]);
        // A file that is not safetensors is a coded error, not a panic.
        std::fs::write(&path, b"not a safetensors file").unwrap();
        let e = shade_gnn::load_safetensors::<f32>(&path).unwrap_err();
        assert!(e.code().starts_with("SHADE-E04"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
