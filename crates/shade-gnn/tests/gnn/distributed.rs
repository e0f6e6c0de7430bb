//! Data-parallel training with ranks as threads (the MPI runs of the same scenarios are
//! in `distributed_mpi.rs`): two ranks equal one process on the union batch, a failing
//! rank (bad shard, NaN loss, hung, gone) stops every rank with `SHADE-E0416` naming
//! it, and a checkpoint from rank 0 lets a restarted job continue identically.

use ndarray::{Array1, Array2};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use shade_autodiff::AdResult;
use shade_autodiff::tensor::{Tape, Var};
use shade_gnn::distributed::{Collective, DataParallel, ThreadGroup};
use shade_gnn::layers::{Activation, Chain, SAGEConv};
use shade_gnn::loss::NodeTargets;
use shade_gnn::loss::cross_entropy;
use shade_gnn::minibatch::{Columns, MiniBatch, NodeBatch, node_batches};
use shade_gnn::optim::Optimiser;
use shade_gnn::train::{TrainState, single_train_step};
use shade_gnn::{GnnError, GnnResult, Params};
use shade_graph::{Graph, NeighborLoader, rand_graph};
use shade_interface::AutoShade;
use std::cell::Cell;
use std::time::Duration;

/// Per-rank seeds in a batch, and batches per epoch (80 training nodes).
pub(crate) const BATCH: usize = 8;
const NODES: usize = 120;

fn graph() -> Graph {
    let mut g = rand_graph(NODES, 600, 5).unwrap();
    let mut rng = StdRng::seed_from_u64(9);
    let x = Array2::from_shape_simple_fn((NODES, 4), || rng.random::<f32>() * 2.0 - 1.0);
    let y = Array1::from_shape_simple_fn(NODES, || rng.random_range(0..3i64));
    g.set_node_data("x", x).unwrap();
    g.set_node_data("y", y).unwrap();
    g
}

fn model() -> Chain<f32> {
    Chain::new()
        .add("conv1", SAGEConv::new(4, 8))
        .add("act", Activation::Tanh)
        .add("conv2", SAGEConv::new(8, 3))
}

/// The loader of a job of `world` ranks (full fan-out: a rank's batch is exact, so a
/// step does not depend on how the seeds are split).
fn loader(batch: usize) -> NeighborLoader {
    let train: Vec<u32> = (0..80).collect();
    NeighborLoader::new(graph(), &[-1, -1])
        .unwrap()
        .input_nodes(&train)
        .unwrap()
        .batch_size(batch)
        .unwrap()
        .shuffle(true)
        .seed(3)
}

/// How a rank misbehaves in a failure scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    /// Nothing goes wrong.
    None,
    /// Rank 1's shard has no labels: its batches cannot be prepared.
    BadShard,
    /// Rank 1's loss is NaN at step 2 (its loss is scaled by NaN; NaN features would be
    /// refused before the step, as `SHADE-E0413`).
    NanLoss,
    /// Rank 1 stops answering at step 2 (sleeps past the timeout).
    Hang,
    /// Rank 1 is gone at step 2 (its thread ends; over MPI the process is killed).
    Gone,
    /// Over MPI: rank 1's process is killed at step 2, and the timeout is 30 s, so that
    /// what ends the others' wait is the launcher stopping the job, not the timeout.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    Killed,
}

/// `steps` data-parallel steps of epoch 0 (then epoch 1, ...) on this rank; returns the
/// parameters. `fault` applies on rank 1; `gone` is what "gone" means for this
/// transport.
pub(crate) fn run_rank<C: Collective>(
    comm: C,
    epochs: std::ops::Range<u64>,
    fault: Fault,
    resume: Option<&std::path::Path>,
    save: Option<&std::path::Path>,
    gone: impl Fn(),
) -> GnnResult<Params<f32>> {
    let timeout = match fault {
        Fault::Killed => Duration::from_secs(30),
        _ => Duration::from_millis(1500),
    };
    let mut dp = DataParallel::new(comm).timeout(timeout);
    let (rank, world) = (dp.rank(), dp.world());
    let model = model();
    // A restarted job initialises differently on purpose: the checkpoint must win.
    let init = if resume.is_some() { 99 } else { 0 };
    let mut ts = TrainState::new(&model, Optimiser::adam(0.01), init)?;
    if let Some(path) = resume {
        let at = dp.load_checkpoint(&mut ts, path)?;
        assert_eq!(at.epoch, epochs.start);
    }
    let loader = loader(BATCH).shard(rank, world)?;
    let cols = if fault == Fault::BadShard && rank == 1 {
        Columns {
            labels: "label".into(),
            ..Columns::default()
        }
    } else {
        Columns::default()
    };
    let poison = Cell::new(false);
    let loss = node_loss(|t, out, y| {
        let l = cross_entropy(t, out, y)?;
        if poison.get() {
            t.scale(l, f32::NAN)
        } else {
            Ok(l)
        }
    });
    for epoch in epochs.clone() {
        for (i, b) in node_batches::<f32>(&loader, epoch, &cols).enumerate() {
            let b: GnnResult<NodeBatch<f32>> = b;
            if rank == 1 && i == 2 {
                match fault {
                    Fault::NanLoss => poison.set(true),
                    Fault::Hang => std::thread::sleep(Duration::from_secs(4)),
                    Fault::Gone | Fault::Killed => gone(),
                    _ => {}
                }
            }
            dp.step(&AutoShade::REVERSE, &model, &loss, b, &mut ts)?;
            poison.set(false);
        }
        if let Some(path) = save {
            dp.save_checkpoint(&ts, epoch + 1, path)?;
        }
    }
    Ok(ts.params)
}

/// `f` as a loss of node batches (for every lifetime of the tape).
fn node_loss<F>(f: F) -> F
where
    F: for<'a> Fn(&mut Tape<'a, f32>, Var, &'a NodeTargets) -> AdResult<Var>,
{
    f
}

/// One process on the union batch: `world × BATCH` seeds per step.
pub(crate) fn run_single(world: usize, epochs: std::ops::Range<u64>) -> Params<f32> {
    let model = model();
    let mut ts = TrainState::new(&model, Optimiser::adam(0.01), 0).unwrap();
    let loader = loader(BATCH * world);
    for epoch in epochs {
        for b in node_batches::<f32>(&loader, epoch, &Columns::default()) {
            let b = b.unwrap();
            single_train_step(
                &AutoShade::REVERSE,
                &model,
                cross_entropy,
                &b.data(),
                &mut ts,
            )
            .unwrap();
        }
    }
    ts.params
}

/// Parameters equal to `tol` (scaled by `1 + |value|`).
pub(crate) fn assert_params_close(a: &Params<f32>, b: &Params<f32>, tol: f32) {
    for ((name, x), y) in a.iter().zip(b.values()) {
        for (u, v) in x.iter().zip(y.iter()) {
            assert!(
                (u - v).abs() <= tol * (1.0 + u.abs().max(v.abs())),
                "{name}: {u} vs {v}"
            );
        }
    }
}

fn threads(
    world: usize,
    epochs: std::ops::Range<u64>,
    fault: Fault,
    resume: Option<&std::path::Path>,
    save: Option<&std::path::Path>,
) -> Vec<GnnResult<Params<f32>>> {
    std::thread::scope(|s| {
        let handles: Vec<_> = ThreadGroup::new(world)
            .into_iter()
            .map(|comm| {
                let epochs = epochs.clone();
                // A rank that is gone stops: its thread ends without a word.
                s.spawn(move || {
                    let gone = std::cell::Cell::new(false);
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        run_rank(comm, epochs, fault, resume, save, || {
                            gone.set(true);
                            std::panic::resume_unwind(Box::new("gone"));
                        })
                    }));
                    r.unwrap_or_else(|_| {
                        assert!(gone.get(), "a rank panicked");
                        Err(GnnError::DataMismatch {
                            what: "gone".into(),
                            expected: String::new(),
                            found: String::new(),
                        })
                    })
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

#[test]
fn two_ranks_equal_one_process_on_the_union_batch() {
    // 80 seeds, 16 per global batch: 5 Adam steps per epoch, 10 in two epochs.
    let ranks = threads(2, 0..2, Fault::None, None, None);
    let (p0, p1) = (ranks[0].as_ref().unwrap(), ranks[1].as_ref().unwrap());
    assert_eq!(p0, p1, "the ranks' parameters are identical");
    let single = run_single(2, 0..2);
    assert_params_close(p0, &single, 1e-6);
    // And they moved: the comparison is not between two initialisations.
    let init = TrainState::new(&model(), Optimiser::adam(0.01), 0)
        .unwrap()
        .params;
    assert!(
        p0.values()[0]
            .iter()
            .zip(init.values()[0].iter())
            .any(|(a, b)| (a - b).abs() > 1e-3)
    );
}

#[test]
fn three_ranks_with_a_short_last_slice_equal_one_process() {
    // 80 seeds in global batches of 24: the last step has 8 seeds, all on rank 0, and
    // ranks 1 and 2 contribute nothing (weighted averaging).
    let ranks = threads(3, 0..1, Fault::None, None, None);
    let single = run_single(3, 0..1);
    for r in &ranks {
        assert_params_close(r.as_ref().unwrap(), &single, 1e-6);
    }
}

/// Every rank's error is `SHADE-E0416` naming rank 1, with `cause` in it.
fn assert_every_rank_names_rank_1(
    results: &[GnnResult<Params<f32>>],
    cause: &str,
    skip: Option<usize>,
) {
    for (r, res) in results.iter().enumerate() {
        if Some(r) == skip {
            continue;
        }
        let e = res.as_ref().unwrap_err();
        assert_eq!(e.code(), "SHADE-E0416", "rank {r}: {e}");
        let msg = e.to_string();
        assert!(msg.starts_with("rank 1 of "), "rank {r}: {msg}");
        assert!(msg.contains(cause), "rank {r}: {msg}");
    }
}

#[test]
fn a_bad_shard_stops_every_rank_naming_it() {
    let results = threads(3, 0..1, Fault::BadShard, None, None);
    assert_every_rank_names_rank_1(
        &results,
        "error[SHADE-E0405]: the node labels `label`",
        None,
    );
    assert!(
        results[0]
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("at step 0")
    );
}

#[test]
fn a_nan_loss_stops_every_rank_naming_it() {
    let results = threads(2, 0..1, Fault::NanLoss, None, None);
    assert_every_rank_names_rank_1(
        &results,
        "at step 2: error[SHADE-E0406]: the loss is not finite",
        None,
    );
}

#[test]
fn a_hung_rank_is_named_after_the_timeout() {
    let t = std::time::Instant::now();
    let results = threads(3, 0..1, Fault::Hang, None, None);
    // Ranks 0 and 2 give up after the 1.5 s timeout; rank 1 wakes up to the news.
    assert_every_rank_names_rank_1(&results, "did not report within 1.5 s", Some(1));
    assert_eq!(results[1].as_ref().unwrap_err().code(), "SHADE-E0416");
    assert!(t.elapsed() < Duration::from_secs(20));
}

#[test]
fn a_rank_that_is_gone_is_named_after_the_timeout() {
    let results = threads(2, 0..1, Fault::Gone, None, None);
    assert_every_rank_names_rank_1(&results, "did not report within 1.5 s", Some(1));
}

#[test]
fn a_checkpoint_from_rank_0_continues_with_identical_parameters() {
    let dir = std::env::temp_dir().join(format!("shade-ckpt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("job.safetensors");
    let straight = threads(2, 0..2, Fault::None, None, None);
    // The first epoch, checkpointed by rank 0; then a new job resumes at epoch 1.
    let first = threads(2, 0..1, Fault::None, None, Some(&path));
    assert!(first.iter().all(|r| r.is_ok()));
    assert!(!path.with_extension("tmp").exists());
    let resumed = threads(2, 1..2, Fault::None, Some(&path), None);
    for (a, b) in straight.iter().zip(&resumed) {
        assert_eq!(a.as_ref().unwrap(), b.as_ref().unwrap(), "bit for bit");
    }
    // A checkpoint that is missing is every rank's error, naming rank 0.
    let missing = threads(
        2,
        1..2,
        Fault::None,
        Some(&dir.join("none.safetensors")),
        None,
    );
    for r in &missing {
        let e = r.as_ref().unwrap_err();
        assert_eq!(e.code(), "SHADE-E0416");
        assert!(
            e.to_string().contains("rank 0 of 2") && e.to_string().contains("SHADE-E0407"),
            "{e}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
