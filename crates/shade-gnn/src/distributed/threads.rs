//! [`ThreadGroup`]: the ranks of a data-parallel job as threads of one process,
//! connected by channels through rank 0 (a star, as the MPI collective's status
//! exchange). For tests (two ranks against one process, failures, checkpoints) and
//! one-machine experiments; jobs over several processes or machines use MPI.

use super::{Collective, Report};
use crate::error::{GnnError, GnnResult};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::{Duration, Instant};

/// What travels between the ranks.
#[derive(Debug)]
enum Msg {
    Report(usize, Report),
    Reports(Vec<Report>),
    F32(usize, Vec<f32>),
    F64(usize, Vec<f64>),
    Bytes(Vec<u8>),
    /// Rank 0 gave up waiting for a rank: the failure every rank returns.
    Abort {
        rank: usize,
        step: u64,
        cause: String,
    },
}

/// Builds the ranks of an in-process job.
#[derive(Debug)]
pub struct ThreadGroup;

impl ThreadGroup {
    /// `world` connected ranks (at least one); move each to its own thread.
    #[allow(clippy::new_ret_no_self)] // a group is its ranks
    pub fn new(world: usize) -> Vec<ThreadRank> {
        let world = world.max(1);
        let (txs, rxs): (Vec<Sender<Msg>>, Vec<Receiver<Msg>>) =
            (0..world).map(|_| channel()).unzip();
        rxs.into_iter()
            .enumerate()
            .map(|(rank, rx)| ThreadRank {
                rank,
                to: txs.clone(),
                rx,
                step: 0,
            })
            .collect()
    }
}

/// One rank of a [`ThreadGroup`].
#[derive(Debug)]
pub struct ThreadRank {
    rank: usize,
    to: Vec<Sender<Msg>>,
    rx: Receiver<Msg>,
    /// The step of the last exchange (named in the errors of the later exchanges).
    step: u64,
}

fn did_not_report(rank: usize, world: usize, step: u64, timeout: Duration) -> GnnError {
    GnnError::RankFailed {
        rank,
        world,
        step,
        cause: format!(
            "it did not report within {:.1} s (killed, hung or unreachable)",
            timeout.as_secs_f64()
        ),
    }
}

impl ThreadRank {
    fn send(&self, to: usize, m: Msg) {
        // A rank that has ended no longer listens; the one waiting for it times out.
        let _ = self.to[to].send(m);
    }

    fn recv(&self, deadline: Instant) -> Result<Msg, RecvTimeoutError> {
        self.rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
    }

    /// Tells every other rank that `rank` is lost, and returns that failure.
    fn give_up(&self, rank: usize, step: u64, timeout: Duration) -> GnnError {
        let e = did_not_report(rank, self.to.len(), step, timeout);
        if let GnnError::RankFailed { cause, .. } = &e {
            for r in (1..self.to.len()).filter(|&r| r != rank) {
                self.send(
                    r,
                    Msg::Abort {
                        rank,
                        step,
                        cause: cause.clone(),
                    },
                );
            }
        }
        e
    }

    /// On rank 0: one message from each other rank, in rank order, picked by `take`.
    fn gather<P>(
        &self,
        step: u64,
        timeout: Duration,
        mut take: impl FnMut(Msg) -> Option<(usize, P)>,
    ) -> GnnResult<Vec<Option<P>>> {
        let deadline = Instant::now() + timeout;
        let world = self.to.len();
        let mut got: Vec<Option<P>> = (0..world).map(|_| None).collect();
        let mut missing = world - 1;
        while missing > 0 {
            match self.recv(deadline) {
                Ok(m) => {
                    if let Some((r, p)) = take(m)
                        && got[r].is_none()
                    {
                        got[r] = Some(p);
                        missing -= 1;
                    }
                }
                Err(_) => {
                    let lost = (1..world).find(|&r| got[r].is_none()).unwrap_or(1);
                    return Err(self.give_up(lost, step, timeout));
                }
            }
        }
        Ok(got)
    }

    /// On a rank other than 0: rank 0's answer, picked by `take`.
    ///
    /// Rank 0 itself may wait up to `timeout` for a lost rank before it tells the others,
    /// and ranks reach an exchange at different times: rank 0 is declared silent only
    /// after twice the timeout, so a rank never blames rank 0 for another rank's silence.
    fn answer<P>(
        &self,
        step: u64,
        timeout: Duration,
        take: impl Fn(Msg) -> Option<P>,
    ) -> GnnResult<P> {
        let timeout = timeout.saturating_mul(2);
        let deadline = Instant::now() + timeout;
        loop {
            match self.recv(deadline) {
                Ok(Msg::Abort { rank, step, cause }) => {
                    return Err(GnnError::RankFailed {
                        rank,
                        world: self.to.len(),
                        step,
                        cause,
                    });
                }
                Ok(m) => {
                    if let Some(p) = take(m) {
                        return Ok(p);
                    }
                }
                Err(_) => return Err(did_not_report(0, self.to.len(), step, timeout)),
            }
        }
    }

    fn sum<T: Copy + std::ops::AddAssign>(
        &mut self,
        buf: &mut [T],
        timeout: Duration,
        wrap: impl Fn(usize, Vec<T>) -> Msg,
        unwrap: impl Fn(Msg) -> Option<(usize, Vec<T>)>,
    ) -> GnnResult<()> {
        let world = self.to.len();
        if world == 1 {
            return Ok(());
        }
        if self.rank == 0 {
            let parts = self.gather(self.step, timeout, &unwrap)?;
            // Summed in rank order: the same floating-point result on every run.
            for p in parts.into_iter().flatten() {
                for (b, x) in buf.iter_mut().zip(p) {
                    *b += x;
                }
            }
            for r in 1..world {
                self.send(r, wrap(0, buf.to_vec()));
            }
        } else {
            self.send(0, wrap(self.rank, buf.to_vec()));
            let s = self.answer(self.step, timeout, |m| unwrap(m).map(|p| p.1))?;
            buf.copy_from_slice(&s);
        }
        Ok(())
    }
}

impl Collective for ThreadRank {
    fn rank(&self) -> usize {
        self.rank
    }

    fn world(&self) -> usize {
        self.to.len()
    }

    fn exchange(&mut self, mine: &Report, timeout: Duration) -> GnnResult<Vec<Report>> {
        let world = self.to.len();
        self.step = mine.step;
        if self.rank == 0 {
            let mut all = self.gather(mine.step, timeout, |m| match m {
                Msg::Report(r, rep) => Some((r, rep)),
                _ => None,
            })?;
            all[0] = Some(mine.clone());
            let all: Vec<Report> = all.into_iter().flatten().collect();
            for r in 1..world {
                self.send(r, Msg::Reports(all.clone()));
            }
            Ok(all)
        } else {
            self.send(0, Msg::Report(self.rank, mine.clone()));
            self.answer(mine.step, timeout, |m| match m {
                Msg::Reports(all) => Some(all),
                _ => None,
            })
        }
    }

    fn sum_f32(&mut self, buf: &mut [f32], timeout: Duration) -> GnnResult<()> {
        self.sum(buf, timeout, Msg::F32, |m| match m {
            Msg::F32(r, v) => Some((r, v)),
            _ => None,
        })
    }

    fn sum_f64(&mut self, buf: &mut [f64], timeout: Duration) -> GnnResult<()> {
        self.sum(buf, timeout, Msg::F64, |m| match m {
            Msg::F64(r, v) => Some((r, v)),
            _ => None,
        })
    }

    fn broadcast(&mut self, root: usize, bytes: &mut Vec<u8>, timeout: Duration) -> GnnResult<()> {
        if self.rank == root {
            for r in (0..self.to.len()).filter(|&r| r != root) {
                self.send(r, Msg::Bytes(bytes.clone()));
            }
            Ok(())
        } else {
            *bytes = self.answer(self.step, timeout, |m| match m {
                Msg::Bytes(b) => Some(b),
                _ => None,
            })?;
            Ok(())
        }
    }
}
