//! The model that failed for the user in the Julia stack: a random directed graph
//! (n = 100, edge probability 0.2), 2 input features, GCNConv(2→50) → tanh →
//! GCNConv(50→50) → relu → Dense(50→100, sigmoid). It must train with the native
//! backend (loss decreases over 100 Adam steps) and its gradient must agree with
//! central finite differences over every parameter.

use ndarray::{Array2, ArrayD};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use shade_gnn::layers::{Activation, Chain, Dense, GCNConv};
use shade_gnn::loss::{DenseTargets, mse};
use shade_gnn::optim::Optimiser;
use shade_gnn::train::{Data, TrainState, loss_and_gradient, single_train_step};
use shade_gnn::{Features, GraphCtx, Inputs};
use shade_interface::AutoShade;

fn users_model() -> Chain<f64> {
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

struct Problem {
    ctx: GraphCtx<f64>,
    x: Features<f64>,
    y: DenseTargets<f64>,
}

fn problem() -> Problem {
    let g = shade_graph::erdos_renyi(100, 0.2, true, 7).unwrap();
    assert!(g.num_edges() > 1500, "{} edges", g.num_edges());
    let mut rng = StdRng::seed_from_u64(8);
    let x = Array2::from_shape_simple_fn((100, 2), || rng.random::<f64>() * 2.0 - 1.0);
    let y = ArrayD::from_shape_simple_fn(ndarray::IxDyn(&[100, 100]), || rng.random::<f64>());
    Problem {
        ctx: GraphCtx::new(&g),
        x: Features::dense(x),
        y: DenseTargets(y),
    }
}

#[test]
fn trains_with_the_native_backend() {
    let p = problem();
    let model = users_model();
    let mut ts = TrainState::new(&model, Optimiser::adam(0.01), 1).unwrap();
    let data = Data {
        inputs: Inputs::new(&p.ctx, &p.x),
        target: &p.y,
    };
    let mut losses = Vec::new();
    for _ in 0..100 {
        losses.push(
            single_train_step(&AutoShade::REVERSE, &model, mse, &data, &mut ts)
                .unwrap()
                .loss,
        );
    }
    let (first, last) = (losses[0], losses[99]);
    // Targets uniform in [0, 1]: the best constant predictor reaches 1/12 ≈ 0.083.
    assert!(last < 0.9 * first, "loss {first} -> {last}");
    assert!(last < 0.0875, "loss {last}");
    assert!(losses.iter().all(|l| l.is_finite()));
}

/// The loss from a plain forward pass (evaluation mode; the model has no dropout).
fn loss_at(model: &Chain<f64>, p: &Problem, params: &shade_gnn::Params<f64>) -> f64 {
    let mut rng = StdRng::seed_from_u64(0);
    let (y, _) = shade_gnn::apply(
        model,
        &Inputs::new(&p.ctx, &p.x),
        params,
        &shade_gnn::State::new(),
        false,
        &mut rng,
    )
    .unwrap();
    y.iter()
        .zip(p.y.0.iter())
        .map(|(a, b)| (a - b) * (a - b))
        .sum::<f64>()
        / y.len() as f64
}

#[test]
fn gradient_passes_a_finite_difference_check() {
    let p = problem();
    let model = users_model();
    let data = Data {
        inputs: Inputs::new(&p.ctx, &p.x),
        target: &p.y,
    };
    let mut ts = TrainState::new(&model, Optimiser::adam(0.01), 3).unwrap();
    // Move away from the initial point (zero biases) first.
    for _ in 0..3 {
        single_train_step(&AutoShade::REVERSE, &model, mse, &data, &mut ts).unwrap();
    }
    let l = loss_and_gradient(&AutoShade::REVERSE, &model, &mse, &data, &mut ts).unwrap();
    let params = ts.params.clone();
    assert!((l - loss_at(&model, &p, &params)).abs() < 1e-15);
    let h = 1e-6;
    // (a) Every scalar of the first layer and of the output bias.
    let mut checked = 0;
    for name in ["conv1.lin.weight", "conv1.bias", "dense.bias"] {
        let k = params.position(name).unwrap();
        for j in 0..params.values()[k].len() {
            let mut q = params.clone();
            q.values_mut()[k].as_slice_mut().unwrap()[j] += h;
            let up = loss_at(&model, &p, &q);
            q.values_mut()[k].as_slice_mut().unwrap()[j] -= 2.0 * h;
            let down = loss_at(&model, &p, &q);
            let fd = (up - down) / (2.0 * h);
            let g = ts.grads.values()[k].as_slice().unwrap()[j];
            assert!(
                (g - fd).abs() <= 1e-9 + 1e-5 * fd.abs(),
                "{name}[{j}]: native {g:e}, fd {fd:e}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 100 + 50 + 100);
    // (b) Directional derivatives along random directions over all 7850 parameters.
    let mut rng = StdRng::seed_from_u64(11);
    for _ in 0..10 {
        let dir: Vec<ArrayD<f64>> = params
            .values()
            .iter()
            .map(|v| v.mapv(|_| rng.random::<f64>() * 2.0 - 1.0))
            .collect();
        let along = |s: f64| {
            let mut q = params.clone();
            q.values_mut()
                .iter_mut()
                .zip(&dir)
                .for_each(|(v, d)| v.scaled_add(s, d));
            loss_at(&model, &p, &q)
        };
        let fd = (along(h) - along(-h)) / (2.0 * h);
        let g: f64 = ts
            .grads
            .values()
            .iter()
            .zip(&dir)
            .map(|(g, d)| (g * d).sum())
            .sum();
        assert!(
            (g - fd).abs() <= 1e-8 + 1e-5 * fd.abs(),
            "directional: native {g:e}, fd {fd:e}"
        );
    }
}

/// The model, its parameters and its train state cross threads: static assertions, then
/// one thread trains while three serve predictions from a snapshot of the parameters
/// (`std::thread::scope`); every served output equals the single-threaded one.
#[test]
fn the_model_is_served_from_threads_while_one_trains() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Chain<f32>>();
    send_sync::<Chain<f64>>();
    send_sync::<GCNConv>();
    send_sync::<Dense>();
    send_sync::<shade_gnn::layers::GATConv>();
    send_sync::<shade_gnn::layers::BatchNorm>();
    send_sync::<TrainState<f32>>();
    send_sync::<TrainState<f64>>();
    send_sync::<shade_gnn::Params<f64>>();
    send_sync::<GraphCtx<f64>>();
    send_sync::<Features<f64>>();
    send_sync::<Optimiser>();

    let p = problem();
    let model = users_model();
    let inputs = Inputs::new(&p.ctx, &p.x);
    let predict = |params: &shade_gnn::Params<f64>| {
        let mut rng = StdRng::seed_from_u64(0);
        shade_gnn::apply(
            &model,
            &inputs,
            params,
            &shade_gnn::State::new(),
            false,
            &mut rng,
        )
        .unwrap()
        .0
    };
    let mut ts = TrainState::new(&model, Optimiser::adam(0.01), 1).unwrap();
    let snapshot = ts.params.clone();
    let want = predict(&snapshot);
    let data = Data {
        inputs: Inputs::new(&p.ctx, &p.x),
        target: &p.y,
    };
    let served = std::thread::scope(|s| {
        let trainer = s.spawn(|| {
            for _ in 0..5 {
                single_train_step(&AutoShade::REVERSE, &model, mse, &data, &mut ts).unwrap();
            }
        });
        let servers: Vec<_> = (0..3).map(|_| s.spawn(|| predict(&snapshot))).collect();
        trainer.join().unwrap();
        servers
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    });
    assert!(served.iter().all(|y| *y == want));
    // The trained parameters moved, and serving them from threads agrees too.
    assert_ne!(ts.params, snapshot);
    let after = predict(&ts.params);
    let again = std::thread::scope(|s| s.spawn(|| predict(&ts.params)).join().unwrap());
    assert_eq!(again, after);
    assert_ne!(after, want);
}
