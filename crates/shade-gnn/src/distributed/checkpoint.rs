//! Checkpoints of a data-parallel job: one safetensors file (every tensor in `f64`, so
//! `f32` values round-trip exactly) holding the parameters (`params/<name>`), the model
//! state (`state/<name>`), the optimiser's buffers (`opt.m/<name>`, `opt.v/<name>`) and
//! the counters (`meta/step`, `meta/opt_step`, `meta/epoch`, `meta/world`). Rank 0
//! writes it and reads it; the others receive it by broadcast.

use super::{Collective, DataParallel, Report};
use crate::ctx::Float;
use crate::error::{GnnError, GnnResult};
use crate::params::Store;
use crate::safetensors::{from_safetensors_bytes, to_safetensors_bytes};
use crate::train::TrainState;
use ndarray::{ArrayD, IxDyn};
use std::path::Path;

/// Where a checkpoint says the job is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// The epoch to run next.
    pub epoch: u64,
    /// Training steps taken.
    pub step: u64,
    /// Ranks of the job that wrote it (a run repeats exactly with the same count).
    pub world: usize,
}

fn to_f64<T: Float>(a: &ArrayD<T>) -> ArrayD<f64> {
    a.mapv(|v| v.to_f64().unwrap_or(f64::NAN))
}

fn scalar(v: u64) -> ArrayD<f64> {
    ArrayD::from_elem(IxDyn(&[1]), v as f64)
}

/// A train state and the job's position as checkpoint bytes.
pub fn checkpoint_bytes<T: Float>(ts: &TrainState<T>, at: Checkpoint) -> Vec<u8> {
    let mut s = Store::<f64>::new();
    let groups = [
        ("params", &ts.params),
        ("state", &ts.state),
        ("opt.m", &ts.opt_state.m),
        ("opt.v", &ts.opt_state.v),
    ];
    for (prefix, store) in groups {
        for (name, a) in store.iter() {
            s.push(format!("{prefix}/{name}"), to_f64(a));
        }
    }
    s.push("meta/step", scalar(at.step));
    s.push("meta/opt_step", scalar(ts.opt_state.step));
    s.push("meta/epoch", scalar(at.epoch));
    s.push("meta/world", scalar(at.world as u64));
    to_safetensors_bytes(&s)
}

/// Restores a train state from checkpoint bytes: every entry of its stores must be in
/// the checkpoint with its shape (`SHADE-E0401` / `SHADE-E0402`; the state is then
/// unchanged), and the counters must be present (`SHADE-E0408`).
pub fn restore_checkpoint<T: Float>(ts: &mut TrainState<T>, bytes: &[u8]) -> GnnResult<Checkpoint> {
    let s: Store<f64> = from_safetensors_bytes(bytes)?;
    let meta = |name: &str| -> GnnResult<u64> {
        s.get(&format!("meta/{name}"))
            .and_then(|a| a.iter().next().copied())
            .map(|v| v as u64)
            .ok_or_else(|| GnnError::Safetensors {
                what: format!("the checkpoint has no `meta/{name}` counter"),
            })
    };
    let at = Checkpoint {
        step: meta("step")?,
        epoch: meta("epoch")?,
        world: meta("world")? as usize,
    };
    let opt_step = meta("opt_step")?;
    // Check everything before changing anything.
    let fill = |prefix: &str, store: &Store<T>| -> GnnResult<Vec<ArrayD<T>>> {
        store
            .iter()
            .map(|(name, a)| {
                let full = format!("{prefix}/{name}");
                let v = s
                    .get(&full)
                    .ok_or_else(|| GnnError::MissingParam { name: full.clone() })?;
                if v.shape() != a.shape() {
                    return Err(GnnError::ParamShape {
                        name: full,
                        expected: a.shape().to_vec(),
                        found: v.shape().to_vec(),
                    });
                }
                Ok(v.mapv(T::cst))
            })
            .collect()
    };
    let p = fill("params", &ts.params)?;
    let st = fill("state", &ts.state)?;
    let m = fill("opt.m", &ts.opt_state.m)?;
    let v = fill("opt.v", &ts.opt_state.v)?;
    let put = |store: &mut Store<T>, vals: Vec<ArrayD<T>>| {
        for (dst, src) in store.values_mut().iter_mut().zip(vals) {
            *dst = src;
        }
    };
    put(&mut ts.params, p);
    put(&mut ts.state, st);
    put(&mut ts.opt_state.m, m);
    put(&mut ts.opt_state.v, v);
    ts.opt_state.step = opt_step;
    ts.step = at.step;
    Ok(at)
}

fn io(action: &'static str, path: &Path, e: std::io::Error) -> GnnError {
    GnnError::Io {
        action,
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

impl<C: Collective> DataParallel<C> {
    /// Rank 0 writes the checkpoint of `ts` (the job continues with `next_epoch`) to
    /// `path`, through a temporary file and a rename, so a job killed while writing
    /// leaves the previous checkpoint intact. Every rank returns once rank 0 has
    /// written; a failed write is `SHADE-E0416` naming rank 0 on every rank.
    pub fn save_checkpoint<T: Float>(
        &mut self,
        ts: &TrainState<T>,
        next_epoch: u64,
        path: impl AsRef<Path>,
    ) -> GnnResult<()> {
        let path = path.as_ref();
        let mut outcome = Ok(());
        if self.is_root() {
            let at = Checkpoint {
                epoch: next_epoch,
                step: ts.step,
                world: self.world(),
            };
            let tmp = path.with_extension("tmp");
            outcome = std::fs::write(&tmp, checkpoint_bytes(ts, at))
                .map_err(|e| io("write", &tmp, e))
                .and_then(|()| std::fs::rename(&tmp, path).map_err(|e| io("rename", path, e)));
        }
        let mine = Report {
            step: ts.step,
            items: 0,
            loss: 0.0,
            error: outcome.err().map(|e| (e.code().into(), e.to_string())),
        };
        self.agree(&mine).map(|_| ())
    }

    /// Rank 0 reads the checkpoint at `path` and sends it to every rank, which
    /// restores `ts` from it ([`restore_checkpoint`]); returns where the job stands.
    /// A checkpoint rank 0 cannot read, or one that does not fit the model, is
    /// `SHADE-E0416` on every rank, naming the rank that failed.
    pub fn load_checkpoint<T: Float>(
        &mut self,
        ts: &mut TrainState<T>,
        path: impl AsRef<Path>,
    ) -> GnnResult<Checkpoint> {
        let path = path.as_ref();
        let mut bytes = Vec::new();
        let mut error = None;
        if self.is_root() {
            match std::fs::read(path) {
                Ok(b) => bytes = b,
                Err(e) => {
                    let e = io("read", path, e);
                    error = Some((e.code().into(), e.to_string()));
                }
            }
        }
        let mine = Report {
            step: ts.step,
            items: 0,
            loss: 0.0,
            error,
        };
        self.agree(&mine)?;
        let timeout = self.timeout;
        self.comm.broadcast(0, &mut bytes, timeout)?;
        let restored = restore_checkpoint(ts, &bytes);
        let mine = Report {
            step: ts.step,
            items: 0,
            loss: 0.0,
            error: restored
                .as_ref()
                .err()
                .map(|e| (e.code().into(), e.to_string())),
        };
        self.agree(&mine)?;
        restored
    }
}
