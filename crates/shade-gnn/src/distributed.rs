//! Data-parallel training: every rank holds the whole model and takes its shard of the
//! seeds or graphs (the loaders' `shard(rank, world)`); after each rank has computed
//! its gradient, the gradients are averaged over the ranks, weighted by each rank's
//! item count, before the optimiser step, so every rank keeps identical parameters and
//! a step equals one process's step on the union of the ranks' batches.
//!
//! The transport is a [`Collective`]: [`MpiCollective`] (feature `mpi`, the `mpi` crate
//! over the system's MPI library, e.g. OpenMPI) for jobs started with `mpirun`, or
//! [`ThreadGroup`]'s ranks, threads of one process for tests and one-machine runs.
//! [`DataParallel`] is the trainer on top of either:
//!
//! - **A status exchange before every gradient exchange.** Each rank reports its step,
//!   its item count, its loss, or its error (a batch that could not be prepared, a
//!   non-finite loss, any error of the step). If a rank failed, every rank returns
//!   `SHADE-E0416` naming the (lowest) failing rank and its error, and nobody steps.
//!   A rank that does not report within the timeout (killed, hung, unreachable) is
//!   named the same way; over MPI the rank that notices prints the error and aborts the
//!   job (`MPI_Abort`), the only way to end a rank that hangs. A rank that is killed
//!   or aborts makes `mpirun` stop the others with `SIGTERM` a second later; each
//!   prints `SHADE-E0416` then (rank 0, waiting for the reports, naming the rank that
//!   had not reported) and ends, and the job exits non-zero.
//! - **Weighted averaging.** Rank `r` scales its gradient (the mean over its `n_r`
//!   items) by `n_r / N` before the sum, so the result is the mean over the global
//!   batch's `N` items, also when a rank's slice is short or empty at the end of an
//!   epoch.
//! - **Reproducible for a given rank count.** The loaders' shards and sampling streams
//!   depend on (seed, epoch, batch, rank); the random stream of each step (dropout) is
//!   seeded from (seed, rank, step), so a run, and a run restarted from a checkpoint,
//!   repeats exactly.
//! - **Rank 0 writes.** [`DataParallel::save_checkpoint`] writes parameters, model
//!   state, optimiser state and counters on rank 0 only (atomically: a temporary file,
//!   then a rename); [`DataParallel::load_checkpoint`] reads on rank 0 and broadcasts,
//!   so a restarted job continues with identical parameters on every rank.
//!   [`DataParallel::is_root`] tells the program where to print progress.
//!
//! ```
//! use shade_gnn::distributed::{DataParallel, ThreadGroup};
//! use shade_gnn::layers::{Chain, Dense};
//! use shade_gnn::loss::{NodeTargets, cross_entropy};
//! use shade_gnn::minibatch::NodeShard;
//! use shade_gnn::optim::Optimiser;
//! use shade_gnn::train::TrainState;
//! use shade_gnn::{Features, Inputs};
//! use shade_interface::AutoShade;
//!
//! let x = Features::dense(ndarray::Array2::from_shape_fn((8, 3), |(i, j)| (i * j) as f64 * 0.1));
//! let labels: Vec<usize> = (0..8).map(|i| i % 2).collect();
//! let model = Chain::<f64>::new().add("out", Dense::new(3, 2));
//! // Two ranks as threads; each takes half of the nodes.
//! let params = std::thread::scope(|s| {
//!     let handles: Vec<_> = ThreadGroup::new(2).into_iter().map(|comm| {
//!         let (x, labels, model) = (&x, &labels, &model);
//!         s.spawn(move || {
//!             let mut dp = DataParallel::new(comm);
//!             let mut ts = TrainState::new(model, Optimiser::adam(0.1), 0)?;
//!             let nodes = (dp.rank()..8).step_by(2).collect();
//!             let target = NodeTargets { labels: labels.clone(), nodes };
//!             for _ in 0..5 {
//!                 let shard = NodeShard { inputs: Inputs::without_graph(x), target: &target };
//!                 dp.step(&AutoShade::REVERSE, model, &cross_entropy, Ok(shard), &mut ts)?;
//!             }
//!             Ok::<_, shade_gnn::GnnError>(ts.params)
//!         })
//!     }).collect();
//!     handles.into_iter().map(|h| h.join().unwrap()).collect::<Result<Vec<_>, _>>()
//! })?;
//! assert_eq!(params[0], params[1]); // every rank holds the same parameters
//! # Ok::<(), shade_gnn::GnnError>(())
//! ```

mod checkpoint;
#[cfg(feature = "mpi")]
mod mpi;
mod threads;

#[cfg(feature = "mpi")]
pub use self::mpi::{ABORT_EXIT_CODE, MpiCollective};
pub use checkpoint::{Checkpoint, checkpoint_bytes, restore_checkpoint};
pub use threads::{ThreadGroup, ThreadRank};

use crate::ctx::Float;
use crate::error::{GnnError, GnnResult};
use crate::layer::Layer;
use crate::minibatch::{EpochReport, MiniBatch};
use crate::params::Params;
use crate::train::{TrainState, loss_and_gradient};
use rand::SeedableRng;
use rand::rngs::StdRng;
use shade_autodiff::AdResult;
use shade_autodiff::tensor::{Tape, Var};
use shade_interface::tensor::TensorBackend;
use std::any::Any;
use std::time::{Duration, Instant};

/// One rank's account of a step, exchanged before the gradients are.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// The step it is about.
    pub step: u64,
    /// Items (seeds or graphs) in the rank's batch.
    pub items: u64,
    /// The rank's loss (the mean over its items; 0 without items).
    pub loss: f64,
    /// The rank's error: its code and message.
    pub error: Option<(String, String)>,
}

// The encoding is the MPI transport's (the thread ranks send reports as values).
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
/// Words of an encoded [`Report`]: step, items, loss bits, error code, message length,
/// then the message (UTF-8, cut at a character boundary).
pub(crate) const REPORT_WORDS: usize = 5 + 59;

#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
impl Report {
    /// The report as fixed-size words (for a transport of plain integers).
    pub(crate) fn encode(&self) -> [u64; REPORT_WORDS] {
        let mut w = [0u64; REPORT_WORDS];
        w[0] = self.step;
        w[1] = self.items;
        w[2] = self.loss.to_bits();
        if let Some((code, msg)) = &self.error {
            // "SHADE-E0406" → 406 (+ 1, so that 0 means no error).
            let num: u64 = code.trim_start_matches("SHADE-E").parse().unwrap_or(9999);
            w[3] = num + 1;
            let room = (REPORT_WORDS - 5) * 8;
            let mut end = msg.len().min(room);
            while !msg.is_char_boundary(end) {
                end -= 1;
            }
            let bytes = &msg.as_bytes()[..end];
            w[4] = end as u64;
            for (i, chunk) in bytes.chunks(8).enumerate() {
                let mut b = [0u8; 8];
                b[..chunk.len()].copy_from_slice(chunk);
                w[5 + i] = u64::from_le_bytes(b);
            }
        }
        w
    }

    /// The report from its words.
    pub(crate) fn decode(w: &[u64]) -> Report {
        let error = (w[3] != 0).then(|| {
            let len = (w[4] as usize).min((REPORT_WORDS - 5) * 8);
            let bytes: Vec<u8> = w[5..]
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .take(len)
                .collect();
            (
                format!("SHADE-E{:04}", w[3] - 1),
                String::from_utf8_lossy(&bytes).into_owned(),
            )
        });
        Report {
            step: w[0],
            items: w[1],
            loss: f64::from_bits(w[2]),
            error,
        }
    }
}

/// The transport of a data-parallel job: who this rank is, and the three exchanges the
/// trainer needs. Every rank calls the same methods in the same order.
pub trait Collective {
    /// This rank, `0..world`.
    fn rank(&self) -> usize;
    /// Ranks in the job.
    fn world(&self) -> usize;
    /// Every rank's report (in rank order), on every rank. A rank that does not report
    /// within `timeout` is a `SHADE-E0416` naming it (over MPI: printed, then the job
    /// is aborted).
    fn exchange(&mut self, mine: &Report, timeout: Duration) -> GnnResult<Vec<Report>>;
    /// Sums `buf` element-wise over the ranks; every rank gets the same sum.
    fn sum_f32(&mut self, buf: &mut [f32], timeout: Duration) -> GnnResult<()>;
    /// Sums `buf` element-wise over the ranks; every rank gets the same sum.
    fn sum_f64(&mut self, buf: &mut [f64], timeout: Duration) -> GnnResult<()>;
    /// Rank `root`'s `bytes` on every rank (others' `bytes` are replaced).
    fn broadcast(&mut self, root: usize, bytes: &mut Vec<u8>, timeout: Duration) -> GnnResult<()>;
}

/// What one data-parallel step did.
#[derive(Clone, Debug, PartialEq)]
pub struct StepReport {
    /// The loss over the global batch (the ranks' losses weighted by their items).
    pub loss: f64,
    /// Items in the global batch.
    pub items: usize,
    /// Time spent exchanging reports and gradients (the cost of data parallelism; with
    /// [`DataParallel::timing_barrier`] without the wait for the slowest rank).
    pub comm: Duration,
    /// Time of the whole step on this rank.
    pub total: Duration,
}

/// The data-parallel trainer over a [`Collective`]; see the [module
/// documentation](self).
#[derive(Debug)]
pub struct DataParallel<C: Collective> {
    comm: C,
    timeout: Duration,
    seed: u64,
    timing_barrier: bool,
    buf32: Vec<f32>,
    buf64: Vec<f64>,
}

/// splitmix64's finaliser (the step streams' seeds).
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl<C: Collective> DataParallel<C> {
    /// A trainer over `comm`, with a 60 s timeout and seed 0.
    pub fn new(comm: C) -> Self {
        DataParallel {
            comm,
            timeout: Duration::from_secs(60),
            seed: 0,
            timing_barrier: false,
            buf32: Vec::new(),
            buf64: Vec::new(),
        }
    }

    /// How long a rank waits for the others at each exchange before it names the
    /// missing rank (default 60 s: longer than any step, shorter than a lost night).
    pub fn timeout(mut self, t: Duration) -> Self {
        self.timeout = t;
        self
    }

    /// The seed of the steps' random streams (dropout), default 0.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// For measurements: an extra, untimed exchange before each step's exchanges, so
    /// that [`StepReport::comm`] is the cost of the exchanges themselves rather than
    /// the wait for the slowest rank (default off: it costs one more exchange).
    pub fn timing_barrier(mut self, on: bool) -> Self {
        self.timing_barrier = on;
        self
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.comm.rank()
    }

    /// Ranks in the job.
    pub fn world(&self) -> usize {
        self.comm.world()
    }

    /// Whether this is rank 0 (which writes checkpoints and prints progress).
    pub fn is_root(&self) -> bool {
        self.comm.rank() == 0
    }

    /// The transport.
    pub fn collective(&mut self) -> &mut C {
        &mut self.comm
    }

    fn failed(&self, rank: usize, step: u64, cause: String) -> GnnError {
        GnnError::RankFailed {
            rank,
            world: self.world(),
            step,
            cause,
        }
    }

    /// Every rank's report; the first failed rank as `SHADE-E0416` on every rank.
    fn agree(&mut self, mine: &Report) -> GnnResult<Vec<Report>> {
        let all = self.comm.exchange(mine, self.timeout)?;
        if let Some((r, rep)) = all.iter().enumerate().find(|(_, r)| r.error.is_some()) {
            let (code, msg) = rep.error.clone().unwrap_or_default();
            return Err(self.failed(r, mine.step, format!("error[{code}]: {msg}")));
        }
        Ok(all)
    }

    /// One data-parallel step on this rank's `batch` (its error, if it could not be
    /// prepared, is reported to every rank): the local loss and gradient, the status
    /// exchange, the weighted gradient sum, the optimiser step. Every rank returns the
    /// same result.
    ///
    /// Errors: `SHADE-E0416` on every rank when any rank failed (its own error inside),
    /// or the optimiser's error (the same on every rank, since the gradients are).
    pub fn step<T, B, L, M, F>(
        &mut self,
        backend: &B,
        model: &L,
        loss: &F,
        batch: GnnResult<M>,
        ts: &mut TrainState<T>,
    ) -> GnnResult<StepReport>
    where
        T: Float + 'static,
        B: TensorBackend,
        L: Layer<T> + ?Sized,
        M: MiniBatch<T>,
        F: for<'a> Fn(&mut Tape<'a, T>, Var, &'a M::Target) -> AdResult<Var>,
    {
        let t0 = Instant::now();
        let step = ts.step;
        ts.rng = StdRng::seed_from_u64(mix(mix(self.seed ^ mix(self.rank() as u64)) ^ step));
        let local = batch.and_then(|b| {
            let items = b.items();
            if items == 0 {
                ts.grads.fill_zero();
                return Ok((0.0, 0));
            }
            let data = b.data();
            data.inputs.validate()?;
            let v = loss_and_gradient(backend, model, loss, &data, ts)?
                .to_f64()
                .unwrap_or(f64::NAN);
            if !v.is_finite() {
                return Err(GnnError::NonFinite {
                    what: "loss".into(),
                    value: v,
                });
            }
            Ok((v, items))
        });
        let mine = match &local {
            Ok((loss, items)) => Report {
                step,
                items: *items as u64,
                loss: *loss,
                error: None,
            },
            Err(e) => Report {
                step,
                items: 0,
                loss: f64::NAN,
                error: Some((e.code().into(), e.to_string())),
            },
        };
        if self.timing_barrier {
            let ready = Report {
                error: None,
                ..mine.clone()
            };
            self.comm.exchange(&ready, self.timeout)?;
        }
        let t_comm = Instant::now();
        let all = self.agree(&mine)?;
        let total: u64 = all.iter().map(|r| r.items).sum();
        let global_loss =
            all.iter().map(|r| r.loss * r.items as f64).sum::<f64>() / total.max(1) as f64;
        let w = mine.items as f64 / total.max(1) as f64;
        self.sum_gradients(&mut ts.grads, w)?;
        let comm = t_comm.elapsed();
        ts.opt
            .step(&mut ts.params, &mut ts.grads, &mut ts.opt_state)?;
        ts.step += 1;
        Ok(StepReport {
            loss: global_loss,
            items: total as usize,
            comm,
            total: t0.elapsed(),
        })
    }

    /// `Σ_r w_r g_r` into every rank's `grads`.
    fn sum_gradients<T: Float + 'static>(
        &mut self,
        grads: &mut Params<T>,
        w: f64,
    ) -> GnnResult<()> {
        let timeout = self.timeout;
        let any: &mut dyn Any = grads;
        if let Some(g) = any.downcast_mut::<Params<f32>>() {
            flatten(g, w as f32, &mut self.buf32);
            self.comm.sum_f32(&mut self.buf32, timeout)?;
            unflatten(&self.buf32, g);
        } else if let Some(g) = any.downcast_mut::<Params<f64>>() {
            flatten(g, w, &mut self.buf64);
            self.comm.sum_f64(&mut self.buf64, timeout)?;
            unflatten(&self.buf64, g);
        }
        Ok(())
    }

    /// One [`step`](Self::step) per batch; `on_step` sees each step's report (on every
    /// rank: print it where [`is_root`](Self::is_root)). Every rank must be given the
    /// same number of batches (the loaders' shards are).
    pub fn train_epoch<T, B, L, M, F, I>(
        &mut self,
        backend: &B,
        model: &L,
        loss: F,
        batches: I,
        ts: &mut TrainState<T>,
        mut on_step: impl FnMut(&StepReport),
    ) -> GnnResult<EpochReport>
    where
        T: Float + 'static,
        B: TensorBackend,
        L: Layer<T> + ?Sized,
        M: MiniBatch<T>,
        F: for<'a> Fn(&mut Tape<'a, T>, Var, &'a M::Target) -> AdResult<Var>,
        I: IntoIterator<Item = GnnResult<M>>,
    {
        let mut report = EpochReport::default();
        for batch in batches {
            let s = self.step(backend, model, &loss, batch, ts)?;
            report.record(s.loss, s.items);
            on_step(&s);
        }
        Ok(report)
    }
}

fn flatten<T: Float>(g: &Params<T>, w: T, out: &mut Vec<T>) {
    out.clear();
    for a in g.values() {
        out.extend(a.iter().map(|&v| v * w));
    }
}

fn unflatten<T: Float>(buf: &[T], g: &mut Params<T>) {
    let mut at = 0;
    for a in g.values_mut() {
        for v in a.iter_mut() {
            *v = buf[at];
            at += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_survive_their_encoding() {
        let ok = Report {
            step: 7,
            items: 1024,
            loss: 0.25,
            error: None,
        };
        assert_eq!(Report::decode(&ok.encode()), ok);
        let long = "é".repeat(400);
        let bad = Report {
            step: u64::MAX,
            items: 0,
            loss: f64::NAN,
            error: Some(("SHADE-E0406".into(), long.clone())),
        };
        let back = Report::decode(&bad.encode());
        let (code, msg) = back.error.unwrap();
        assert_eq!(code, "SHADE-E0406");
        // Cut at a character boundary to what fits.
        assert_eq!(msg.len(), (REPORT_WORDS - 5) * 8);
        assert!(long.starts_with(&msg));
        assert_eq!(back.step, u64::MAX);
        assert!(back.loss.is_nan());
    }
}
