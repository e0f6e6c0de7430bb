//! Runs the small-graph workloads of `gnn_step` and `policy` `reps` times, for `perf
//! record` / `perf stat` (this process only, steadier than wall time on a busy machine)
//! or `valgrind --tool=callgrind` (instructions, independent of the load):
//! `small_profile {cora-step|cora-infer|gat-step|gat-infer|gat-step-dense|gat-infer-dense|policy|spmm-*} [reps]`.
//! Cora is the `peers/cora_gcn` step (shade-gnn's `single_train_step`, sparse features),
//! `gat-*` the `peers/cora_gat` variants (sparse features, or dense with `-dense`); `policy` is the
//! `peers/policy` gradient. `spmm-a16`, `spmm-a7`, `spmm-x16` and `spmm-xt16` are Cora's sparse
//! products alone (`SparseMatrix::mul_dense_into`, `out += A · x`): the normalised adjacency
//! times 16 or 7 columns, the features times 16, the features' transpose times 16. It prints a checksum of the results (the bits of the losses
//! and of every gradient after the last call), so that two builds can be checked to
//! give bit-identical results at a fixed thread count; compare two runs' counts at two
//! `reps` to take out the set-up.

use shade_benches::small::{policy_graph, policy_loss, policy_model, policy_state};
use shade_gnn::loss::{NodeTargets, cross_entropy};
use shade_gnn::models::{Model, NodeConfig};
use shade_gnn::train::{Data, TrainState, loss_and_gradient, single_train_step};
use shade_gnn::{Features, Inputs};
use shade_interface::AutoShade;
use std::hint::black_box;

/// FNV-1a over the bits of `values`, folded into `h`.
fn fold(h: &mut u64, values: impl IntoIterator<Item = f32>) {
    for v in values {
        for b in v.to_bits().to_le_bytes() {
            *h = (*h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
}

/// The checksum of the gradients in `ts`.
fn grads(h: &mut u64, ts: &TrainState<f32>) {
    for v in ts.grads.values() {
        fold(h, v.iter().copied());
    }
    for v in ts.params.values() {
        fold(h, v.iter().copied());
    }
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let what = a.get(1).map_or("cora-step", String::as_str);
    let reps: usize = a.get(2).and_then(|s| s.parse().ok()).unwrap_or(100);
    let mut h = 0xcbf2_9ce4_8422_2325_u64;
    shade_benches::pool();
    match what {
        "cora-step" | "cora-infer" | "gat-step" | "gat-infer" | "gat-step-dense"
        | "gat-infer-dense" => {
            let (ds, split, ctx) = shade_benches::small::cora();
            let x = if what.ends_with("-dense") {
                Features::<f32>::dense(ds.features().to_dense())
            } else {
                Features::<f32>::sparse_from_f32(ds.features())
            };
            let target = NodeTargets::new(&ds.labels, &split.train);
            let kind = if what.starts_with("gat") {
                Model::Gat
            } else {
                Model::Gcn
            };
            let cfg = NodeConfig::standard(kind);
            let model = cfg.build::<f32>(x.cols(), ds.num_classes);
            let mut ts = TrainState::new(&model, cfg.optimiser(), 0).expect("train state");
            let data = Data {
                inputs: Inputs::new(&ctx, &x),
                target: &target,
            };
            for _ in 0..reps {
                if what.contains("-step") {
                    let l = single_train_step(
                        &AutoShade::REVERSE,
                        &model,
                        cross_entropy,
                        &data,
                        &mut ts,
                    )
                    .expect("step")
                    .loss;
                    fold(&mut h, [black_box(l)]);
                } else {
                    let y = ts.predict(&model, &data.inputs).expect("forward");
                    fold(&mut h, black_box(y).iter().copied());
                }
            }
            grads(&mut h, &ts);
        }
        "policy" => {
            let (ctx, x) = policy_graph();
            let model = policy_model();
            let mut ts = policy_state(&model);
            let data = Data {
                inputs: Inputs::new(&ctx, &x),
                target: &(),
            };
            for _ in 0..reps {
                let l =
                    loss_and_gradient(&AutoShade::REVERSE, &model, &policy_loss, &data, &mut ts)
                        .expect("gradient");
                fold(&mut h, [black_box(l)]);
            }
            grads(&mut h, &ts);
        }
        "spmm-a16" | "spmm-a7" | "spmm-x16" | "spmm-xt16" => {
            let (ds, _split, ctx) = shade_benches::small::cora();
            let f = if what.ends_with("7") { 7 } else { 16 };
            let xm = Features::<f32>::sparse_from_f32(ds.features());
            let a = match what {
                "spmm-a16" | "spmm-a7" => ctx.normalized_adjacency(shade_graph::GcnNorm::default()),
                _ => match &xm {
                    Features::Sparse(m) => &**m,
                    Features::Dense(_) => unreachable!("sparse_from_f32 gives sparse features"),
                },
            };
            let (rows, cols) = if what == "spmm-xt16" {
                (a.cols(), a.rows())
            } else {
                (a.rows(), a.cols())
            };
            a.prepare_transpose();
            let x = ndarray::Array2::<f32>::from_shape_fn((cols, f), |(i, j)| {
                ((i * 7 + j) % 13) as f32 * 0.1
            });
            let mut out = ndarray::Array2::<f32>::zeros((rows, f));
            for _ in 0..reps {
                if what == "spmm-xt16" {
                    a.transpose_mul_dense_into(x.view(), out.view_mut())
                        .expect("shapes");
                } else {
                    a.mul_dense_into(x.view(), out.view_mut()).expect("shapes");
                }
                black_box(&mut out);
            }
            fold(&mut h, out.iter().copied());
        }
        _ => panic!(
            "small_profile {{cora-step|cora-infer|gat-step|gat-infer|gat-step-dense|gat-infer-dense|policy|spmm-a16|spmm-a7|spmm-x16|spmm-xt16}} [reps]"
        ),
    }
    println!("{what} x{reps}: checksum {h:016x}");
}
