//! [`MpiCollective`]: the data-parallel transport over MPI (rsmpi over the system's
//! library, e.g. OpenMPI), for jobs started with `mpirun`.
//!
//! Every exchange is non-blocking and polled against the timeout, so a rank that dies
//! or hangs is named instead of waited for: the status exchange goes through rank 0
//! (each rank sends its report, rank 0 answers with all of them), which tells who is
//! missing; the gradient sum is `MPI_Iallreduce`. When a wait runs out, the rank prints
//! the coded error (`SHADE-E0416`, naming the rank) and aborts the job with
//! `MPI_Abort`: a hung rank cannot be finished any other way, and its pending
//! messages cannot be abandoned safely. The job's exit code is then 9.
//!
//! **A rank that ends abnormally** (killed, crashed, aborted) is seen by the launcher
//! first: Open MPI's `mpirun` (4.1.4, Debian's, measured) sends the other ranks
//! `SIGCONT` at once, `SIGTERM` after `odls_base_sigkill_timeout` (1 s) and `SIGKILL`
//! after as long again, and exits non-zero (137 for a rank killed by `SIGKILL`). So
//! the survivors catch `SIGTERM` (module `stop`): a handler prints `SHADE-E0416` from
//! what the main thread published (rank 0, waiting for the reports, names the rank
//! that had not reported; the others say where they were) and ends the process, within
//! the grace second whatever the main thread is doing. A rank that has printed or
//! returned the failure itself stays quiet. The alternatives, and why not:
//!
//! - *`MPI_ERRORS_RETURN` on the communicator*: rsmpi ignores the return codes of
//!   `MPI_Test`, so a failed transfer would look complete, a silently wrong gradient;
//!   and over shared memory (ranks of one node) a dead peer is no error at all, the
//!   request just never completes. The default, errors are fatal, stays: a transport
//!   error Open MPI notices aborts the job, and the others then see the `SIGTERM`.
//! - *ULFM* (`MPIX_Comm_revoke`/`agree`, to survive a lost rank): not in Open MPI 4.1
//!   (it came with 5.0, `--with-ft=ulfm`), and not in rsmpi; a data-parallel job
//!   restarts from the last checkpoint instead.
//! - *`--mca orte_abort_on_non_zero_status 0`*: makes it worse; with it (measured) a
//!   killed rank no longer ends the job (the survivors run on until the timeout, and
//!   `mpirun` did not exit after they had), and a rank that exits with an error leaves
//!   `mpirun` exiting 0. Keep the default.
//!
//! A launcher that does not stop the job leaves the timeout to name the rank.

mod stop;

use super::{Collective, REPORT_WORDS, Report};
use crate::error::{GnnError, GnnResult};
use mpi::Threading;
use mpi::collective::SystemOperation;
use mpi::environment::Universe;
use mpi::request::{Request, Scope};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::time::{Duration, Instant};

/// The exit code of a job that [`MpiCollective`] aborts (rank lost or hung).
pub const ABORT_EXIT_CODE: i32 = 9;

/// This process's rank of an MPI job (`MPI_COMM_WORLD`). MPI is initialised by
/// [`init`](Self::init) and finalised when the value is dropped; only the thread that
/// created it communicates (`MPI_THREAD_FUNNELED`: the loaders' worker threads and the
/// kernels' thread pool never call MPI).
pub struct MpiCollective {
    world: SimpleCommunicator,
    rank: usize,
    size: usize,
    step: u64,
    send: Vec<u8>,
    /// The `SIGTERM` handler (jobs of several ranks), removed before MPI is finalised.
    _stop: Option<stop::Watch>,
    // The universe last: MPI is finalised after everything else is dropped.
    _universe: Universe,
}

impl std::fmt::Debug for MpiCollective {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MpiCollective")
            .field("rank", &self.rank)
            .field("world", &self.size)
            .finish()
    }
}

impl MpiCollective {
    /// Initialises MPI. A program started without `mpirun` is a job of one rank.
    ///
    /// Errors (`SHADE-E0404`): MPI was initialised already in this process, or the
    /// library cannot give the threading level the trainer needs.
    pub fn init() -> GnnResult<Self> {
        let (universe, provided) =
            mpi::initialize_with_threading(Threading::Funneled).ok_or_else(|| {
                GnnError::setting("MPI", "initialised twice", "one MpiCollective per process")
            })?;
        if provided < Threading::Funneled {
            return Err(GnnError::setting(
                "MPI threading",
                format!("{provided:?}"),
                "at least MPI_THREAD_FUNNELED",
            ));
        }
        let world = universe.world();
        let (rank, size) = (world.rank() as usize, world.size() as usize);
        let stop = if size > 1 {
            stop::Watch::install(rank, size).map_err(|e| {
                GnnError::setting(
                    "the SIGTERM handler",
                    e,
                    "a process that may handle SIGTERM",
                )
            })?
        } else {
            None
        };
        Ok(MpiCollective {
            world,
            rank,
            size,
            step: 0,
            send: Vec::new(),
            _stop: stop,
            _universe: universe,
        })
    }

    /// Prints the failure as rustc-shaped text and ends the job.
    fn abort(&self, e: GnnError) -> ! {
        stop::quiet();
        eprintln!(
            "error[{}]: {e}\n  = note: seen by rank {} of {}; the job is aborted (MPI_Abort)\n  = help: {}",
            e.code(),
            self.rank,
            self.size,
            e.help()
        );
        self.world.abort(ABORT_EXIT_CODE)
    }

    fn lost(&self, rank: usize, what: &str, timeout: Duration) -> GnnError {
        GnnError::RankFailed {
            rank,
            world: self.size,
            step: self.step,
            cause: format!(
                "{what} within {:.1} s (killed, hung or unreachable)",
                timeout.as_secs_f64()
            ),
        }
    }
}

/// Polls `requests` until all are complete or `deadline` passes; returns the index of
/// the first one still pending then. On `Err` the pending requests are left to the
/// caller, which aborts the job. With `first`, request `i` is rank `first + i`'s, and
/// the lowest pending rank is published for the `SIGTERM` handler.
fn poll<'a, D: ?Sized, S: Scope<'a>>(
    requests: &mut Vec<Option<Request<'a, D, S>>>,
    deadline: Instant,
    first: Option<usize>,
) -> Result<(), usize> {
    let start = Instant::now();
    loop {
        let mut pending = None;
        let mut missing = 0;
        for (i, slot) in requests.iter_mut().enumerate() {
            if let Some(r) = slot.take() {
                match r.test() {
                    Ok(_) => {}
                    Err(r) => {
                        *slot = Some(r);
                        pending.get_or_insert(i);
                        missing += 1;
                    }
                }
            }
        }
        if let (Some(first), Some(i)) = (first, pending) {
            stop::pending(first + i, missing);
        }
        let now = Instant::now();
        match pending {
            None => return Ok(()),
            Some(i) if now >= deadline => return Err(i),
            // Yield while the wait is short (an exchange takes microseconds once every
            // rank is there; sleeping would add the scheduler's wake-up latency to
            // every step), then sleep between polls: a long wait is a rank still
            // computing, and the cores are better left to it.
            Some(_) if now - start < Duration::from_millis(20) => std::thread::yield_now(),
            Some(_) => std::thread::sleep(Duration::from_micros(100)),
        }
    }
}

impl Collective for MpiCollective {
    fn rank(&self) -> usize {
        self.rank
    }

    fn world(&self) -> usize {
        self.size
    }

    fn exchange(&mut self, mine: &Report, timeout: Duration) -> GnnResult<Vec<Report>> {
        self.step = mine.step;
        let deadline = Instant::now() + timeout;
        let n = self.size;
        let me = mine.encode();
        let mut all = vec![0u64; REPORT_WORDS * n];
        if n == 1 {
            return Ok(vec![mine.clone()]);
        }
        const TAG: i32 = 0x5ade;
        if self.rank == 0 {
            all[..REPORT_WORDS].copy_from_slice(&me);
            stop::enter(stop::Phase::Reports, self.step);
            mpi::request::scope(|scope| {
                let (_, rest) = all.split_at_mut(REPORT_WORDS);
                let mut reqs: Vec<_> = rest
                    .chunks_mut(REPORT_WORDS)
                    .enumerate()
                    .map(|(i, chunk)| {
                        Some(
                            self.world
                                .process_at_rank(i as i32 + 1)
                                .immediate_receive_into_with_tag(scope, chunk, TAG),
                        )
                    })
                    .collect();
                if let Err(i) = poll(&mut reqs, deadline, Some(1)) {
                    let e = self.lost(i + 1, "it did not report", timeout);
                    self.abort(e)
                }
            });
            stop::enter(stop::Phase::Answers, self.step);
            mpi::request::scope(|scope| {
                let mut reqs: Vec<_> = (1..n)
                    .map(|r| {
                        Some(
                            self.world
                                .process_at_rank(r as i32)
                                .immediate_send_with_tag(scope, &all[..], TAG),
                        )
                    })
                    .collect();
                if let Err(i) = poll(&mut reqs, deadline, Some(1)) {
                    let e = self.lost(i + 1, "it did not take the reports", timeout);
                    self.abort(e)
                }
            });
        } else {
            stop::enter(stop::Phase::ToRoot, self.step);
            mpi::request::scope(|scope| {
                let root = self.world.process_at_rank(0);
                let send = root.immediate_send_with_tag(scope, &me[..], TAG);
                let mut reqs = vec![Some(send)];
                if poll(&mut reqs, deadline, None).is_err() {
                    let e = self.lost(0, "rank 0 did not take this rank's report", timeout);
                    self.abort(e)
                }
                let recv = root.immediate_receive_into_with_tag(scope, &mut all[..], TAG);
                let mut reqs = vec![Some(recv)];
                if poll(&mut reqs, deadline, None).is_err() {
                    let e = self.lost(0, "it did not answer", timeout);
                    self.abort(e)
                }
            });
        }
        let all: Vec<Report> = all.chunks(REPORT_WORDS).map(Report::decode).collect();
        if all.iter().any(|r| r.error.is_some()) {
            // Every rank returns the failure now (`SHADE-E0416` with the rank's error).
            stop::quiet();
        } else {
            stop::enter(stop::Phase::Between, self.step);
        }
        Ok(all)
    }

    fn sum_f32(&mut self, buf: &mut [f32], timeout: Duration) -> GnnResult<()> {
        let send = buf.to_vec();
        self.sum(&send, buf, timeout);
        Ok(())
    }

    fn sum_f64(&mut self, buf: &mut [f64], timeout: Duration) -> GnnResult<()> {
        let send = buf.to_vec();
        self.sum(&send, buf, timeout);
        Ok(())
    }

    fn broadcast(&mut self, root: usize, bytes: &mut Vec<u8>, timeout: Duration) -> GnnResult<()> {
        let deadline = Instant::now() + timeout;
        let r = self.world.process_at_rank(root as i32);
        stop::enter(stop::Phase::Broadcast, self.step);
        stop::pending(root, 1);
        let mut len = [bytes.len() as u64];
        mpi::request::scope(|scope| {
            let mut reqs = vec![Some(r.immediate_broadcast_into(scope, &mut len[..]))];
            if let Err(_i) = poll(&mut reqs, deadline, None) {
                let e = self.lost(root, "the broadcast did not complete", timeout);
                self.abort(e)
            }
        });
        self.send.clear();
        self.send.resize(len[0] as usize, 0);
        if self.rank == root {
            self.send.copy_from_slice(bytes);
        }
        let mut data = std::mem::take(&mut self.send);
        mpi::request::scope(|scope| {
            let mut reqs = vec![Some(r.immediate_broadcast_into(scope, &mut data[..]))];
            if let Err(_i) = poll(&mut reqs, deadline, None) {
                let e = self.lost(root, "the broadcast did not complete", timeout);
                self.abort(e)
            }
        });
        *bytes = data;
        stop::enter(stop::Phase::Between, self.step);
        Ok(())
    }
}

impl MpiCollective {
    fn sum<T: Equivalence>(&self, send: &[T], recv: &mut [T], timeout: Duration) {
        let deadline = Instant::now() + timeout;
        stop::enter(stop::Phase::Sum, self.step);
        mpi::request::scope(|scope| {
            let req =
                self.world
                    .immediate_all_reduce_into(scope, send, recv, SystemOperation::sum());
            let mut reqs = vec![Some(req)];
            if poll(&mut reqs, deadline, None).is_err() {
                stop::quiet();
                // Every rank reported a moment ago: one died or hung since, and an
                // allreduce cannot tell which.
                eprintln!(
                    "error[SHADE-E0416]: a rank of {} failed at step {}: the gradient sum did not \
                     complete within {:.1} s (a rank died or hung after reporting)\n  \
                     = note: seen by rank {}; the job is aborted (MPI_Abort)\n  \
                     = help: see the other ranks' logs (mpirun names a rank that was killed)",
                    self.size,
                    self.step,
                    timeout.as_secs_f64(),
                    self.rank
                );
                self.world.abort(ABORT_EXIT_CODE)
            }
        });
        // The step's exchanges are done: the next one is computed.
        stop::enter(stop::Phase::Between, self.step + 1);
    }
}
