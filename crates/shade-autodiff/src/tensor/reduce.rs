//! Reductions: `sum mean max min` over all elements or one axis, `logsumexp` over an
//! axis, and the Euclidean `norm`.
//!
//! Reducing everything gives a 0-d value (shape `[]`); reducing an axis removes it.
//! The adjoint of `max`/`min` goes to the first arg-max/arg-min (kept from the
//! forward pass), that of `logsumexp` is the softmax, that of `norm` is `x / ‖x‖`
//! (0 at `x = 0`).

use super::tape::{Bwd, Op, Pool, Tan};
use super::{Element, Tape, Var};
use crate::error::{AdError, AdResult};
use ndarray::{ArrayViewD, Axis, Dimension, RemoveAxis, Zip};

/// Which reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Sum,
    Mean,
    Max,
    Min,
    LogSumExp,
    Norm,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Sum => "sum",
            Kind::Mean => "mean",
            Kind::Max => "max",
            Kind::Min => "min",
            Kind::LogSumExp => "logsumexp",
            Kind::Norm => "norm",
        }
    }
}

/// Backward record of a reduction.
#[derive(Debug)]
pub(crate) struct Rec {
    a: usize,
    axis: Option<usize>,
    kind: Kind,
    /// Position of the extremum, per output element (`max`, `min`).
    arg: Vec<usize>,
}

impl Rec {
    pub(crate) fn name(&self) -> &'static str {
        self.kind.name()
    }

    pub(crate) fn inputs(&self) -> smallvec::SmallVec<[usize; 4]> {
        smallvec::smallvec![self.a]
    }

    pub(crate) fn release<T: Element>(self, pool: &mut Pool<T>) {
        pool.give_idx(self.arg);
    }

    pub(crate) fn backward<T: Element>(
        &self,
        me: usize,
        g: ArrayViewD<'_, T>,
        bw: &mut Bwd<'_, '_, T>,
    ) {
        let x = bw.vals[self.a].view();
        let y = bw.vals[me].view();
        let Some(mut ga) = bw.gs.acc(self.a, x.shape()) else {
            return;
        };
        match (self.kind, self.axis) {
            (Kind::Sum | Kind::Mean, None) => {
                let mut s = g.iter().copied().next().unwrap_or_else(T::zero);
                if self.kind == Kind::Mean {
                    s = s / T::cst(x.len() as f64);
                }
                match ga.as_slice_memory_order_mut() {
                    Some(d) => super::simd::wide(|| d.iter_mut().for_each(|d| *d += s)),
                    None => ga.map_inplace(|d| *d += s),
                }
            }
            (Kind::Sum | Kind::Mean, Some(ax)) => {
                let n = x.shape()[ax];
                let c = if self.kind == Kind::Mean {
                    T::one() / T::cst(n as f64)
                } else {
                    T::one()
                };
                let gb = g.insert_axis(Axis(ax));
                Zip::from(&mut ga)
                    .and_broadcast(&gb)
                    .for_each(|d, &g| *d += c * g);
            }
            (Kind::Max | Kind::Min, None) => {
                let s = g.iter().copied().next().unwrap_or_else(T::zero);
                let d = ga.as_slice_mut().expect("standard layout");
                d[self.arg[0]] += s;
            }
            (Kind::Max | Kind::Min, Some(ax)) => {
                for ((mut lane, &k), &g) in ga
                    .lanes_mut(Axis(ax))
                    .into_iter()
                    .zip(&self.arg)
                    .zip(g.iter())
                {
                    lane[k] += g;
                }
            }
            (Kind::LogSumExp, Some(ax)) => {
                let yb = y.insert_axis(Axis(ax));
                let gb = g.insert_axis(Axis(ax));
                Zip::from(&mut ga)
                    .and(&x)
                    .and_broadcast(&yb)
                    .and_broadcast(&gb)
                    .for_each(|d, &x, &y, &g| *d += g * (x - y).exp());
            }
            (Kind::Norm, _) => {
                let n = y.iter().copied().next().unwrap_or_else(T::zero);
                let s = g.iter().copied().next().unwrap_or_else(T::zero);
                if n > T::zero() {
                    Zip::from(&mut ga).and(&x).for_each(|d, &x| *d += s * x / n);
                }
            }
            (Kind::LogSumExp, None) => {}
        }
    }
}

/// Lanes of [`sum_map`]: sixteen independent running sums, so that the loop vectorises
/// (one or two registers wide) without reassociating one long chain.
const LANES: usize = 16;

/// `Σ f(x)` over all elements of `x`. Contiguous (in memory order): [`LANES`] running
/// sums over whole chunks, added pairwise, then the remainder in order; the order
/// depends on the length alone (not on the thread count or the processor), so the bits
/// do too, and the rounding error grows like that of sixteen sums of `len / 16` terms
/// rather than one of `len`. Other layouts: in iteration order. A sequential sum of
/// the policy model's 10,000 outputs cost 5 % of its gradient.
fn sum_map<T: Element>(x: &ArrayViewD<'_, T>, f: impl Fn(T) -> T) -> T {
    match x.as_slice_memory_order() {
        Some(s) => super::simd::wide(|| sum_lanes(s, f)),
        None => x.iter().map(|&v| f(v)).sum(),
    }
}

#[inline(always)]
fn sum_lanes<T: Element>(x: &[T], f: impl Fn(T) -> T) -> T {
    let mut acc = [T::zero(); LANES];
    let chunks = x.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        for (a, &v) in acc.iter_mut().zip(c) {
            *a += f(v);
        }
    }
    let mut w = LANES;
    while w > 1 {
        w /= 2;
        for l in 0..w {
            acc[l] += acc[l + w];
        }
    }
    rest.iter().fold(acc[0], |s, &v| s + f(v))
}

fn first_ext<'x, T: Element>(it: impl Iterator<Item = &'x T>, max: bool) -> (usize, T) {
    let mut best = (0, T::nan());
    for (k, &v) in it.enumerate() {
        let better = if max { v > best.1 } else { v < best.1 };
        if k == 0 || better || (v.is_nan() && !best.1.is_nan()) {
            best = (k, v);
        }
    }
    best
}

impl<'a, T: Element> Tape<'a, T> {
    #[track_caller]
    fn reduce(&mut self, a: Var, axis: Option<usize>, kind: Kind) -> AdResult<Var> {
        let ia = self.index(a)?;
        let x = self.vals[ia].view();
        if let Some(ax) = axis
            && ax >= x.ndim()
        {
            return Err(AdError::AxisOutOfRange {
                op: kind.name(),
                axis: ax,
                ndim: x.ndim(),
            });
        }
        let n = axis.map_or(x.len(), |ax| x.shape()[ax]);
        let needs_nonempty = matches!(kind, Kind::Max | Kind::Min | Kind::Mean | Kind::LogSumExp);
        if n == 0 && needs_nonempty {
            return Err(AdError::InvalidArgument {
                op: kind.name(),
                what: format!("cannot reduce an empty axis of shape {:?}", x.shape()),
            });
        }
        let mut arg = Vec::new();
        let out = match axis {
            None => {
                let v = match kind {
                    Kind::Sum => sum_map(&x, |v| v),
                    Kind::Mean => sum_map(&x, |v| v) / T::cst(n as f64),
                    Kind::Norm => sum_map(&x, |v| v * v).sqrt(),
                    Kind::Max | Kind::Min => {
                        let (k, v) = first_ext(x.iter(), kind == Kind::Max);
                        arg = self.pool.idx(1);
                        arg.push(k);
                        v
                    }
                    Kind::LogSumExp => unreachable!("logsumexp always has an axis"),
                };
                self.pool.collect(&[], std::iter::once(v))
            }
            Some(ax) => {
                let lanes = x.lanes(Axis(ax));
                let mut shape = x.raw_dim();
                shape = shape.remove_axis(Axis(ax));
                if matches!(kind, Kind::Max | Kind::Min) {
                    arg = self.pool.idx(shape.size());
                }
                let arg = &mut arg;
                let it = lanes.into_iter().map(|lane| match kind {
                    Kind::Sum => lane.iter().copied().sum(),
                    Kind::Mean => lane.iter().copied().sum::<T>() / T::cst(n as f64),
                    Kind::Max | Kind::Min => {
                        let (k, v) = first_ext(lane.iter(), kind == Kind::Max);
                        arg.push(k);
                        v
                    }
                    Kind::LogSumExp => {
                        // NaN wins (`T::max` would skip it, and a lane of NaN would give
                        // -inf); an infinite maximum is the result (`inf - inf` is NaN).
                        let m = lane.iter().copied().fold(T::neg_infinity(), |m, v| {
                            if m.is_nan() || v.is_nan() {
                                T::nan()
                            } else {
                                m.max(v)
                            }
                        });
                        if m.is_nan() || m.is_infinite() {
                            m
                        } else {
                            m + lane.iter().map(|&v| (v - m).exp()).sum::<T>().ln()
                        }
                    }
                    Kind::Norm => unreachable!("norm reduces everything"),
                });
                self.pool.collect(shape.slice(), it)
            }
        };
        let tracked = self.tracked[ia];
        let mut tan = Tan::None;
        if self.forward()
            && let Some(ta) = self.tans[ia].view()
        {
            let t = match axis {
                None => {
                    let v = match kind {
                        Kind::Sum => sum_map(&ta, |v| v),
                        Kind::Mean => sum_map(&ta, |v| v) / T::cst(n as f64),
                        Kind::Max | Kind::Min => {
                            ta.iter().nth(arg[0]).copied().unwrap_or_else(T::zero)
                        }
                        Kind::Norm => {
                            let nv = out.iter().copied().next().unwrap_or_else(T::zero);
                            if nv > T::zero() {
                                x.iter().zip(ta.iter()).map(|(&x, &t)| x * t).sum::<T>() / nv
                            } else {
                                T::zero()
                            }
                        }
                        Kind::LogSumExp => unreachable!("logsumexp always has an axis"),
                    };
                    self.pool.collect(&[], std::iter::once(v))
                }
                Some(ax) => {
                    let c = if kind == Kind::Mean {
                        T::one() / T::cst(n as f64)
                    } else {
                        T::one()
                    };
                    let it = ta
                        .lanes(Axis(ax))
                        .into_iter()
                        .zip(x.lanes(Axis(ax)))
                        .zip(out.iter())
                        .enumerate()
                        .map(|(p, ((tl, xl), &y))| match kind {
                            Kind::Sum | Kind::Mean => c * tl.iter().copied().sum::<T>(),
                            Kind::Max | Kind::Min => tl[arg[p]],
                            _ => tl
                                .iter()
                                .zip(xl.iter())
                                .map(|(&t, &x)| t * (x - y).exp())
                                .sum(),
                        });
                    self.pool.collect(out.shape(), it)
                }
            };
            tan = Tan::Own(t);
        }
        let rec = Rec {
            a: ia,
            axis,
            kind,
            arg,
        };
        Ok(self.push(out, tracked, Op::Reduce(rec), tan))
    }

    /// Sum of all elements (a 0-d value).
    #[track_caller]
    pub fn sum(&mut self, a: Var) -> AdResult<Var> {
        self.reduce(a, None, Kind::Sum)
    }

    /// Sum along `axis`, which is removed.
    #[track_caller]
    pub fn sum_axis(&mut self, a: Var, axis: usize) -> AdResult<Var> {
        self.reduce(a, Some(axis), Kind::Sum)
    }

    /// Mean of all elements; an empty value is an [`AdError::InvalidArgument`].
    #[track_caller]
    pub fn mean(&mut self, a: Var) -> AdResult<Var> {
        self.reduce(a, None, Kind::Mean)
    }

    /// Mean along `axis`, which is removed.
    #[track_caller]
    pub fn mean_axis(&mut self, a: Var, axis: usize) -> AdResult<Var> {
        self.reduce(a, Some(axis), Kind::Mean)
    }

    /// Largest element; its adjoint goes to the first position holding it.
    #[track_caller]
    pub fn max(&mut self, a: Var) -> AdResult<Var> {
        self.reduce(a, None, Kind::Max)
    }

    /// Largest element along `axis` (removed); adjoint to the first arg-max.
    #[track_caller]
    pub fn max_axis(&mut self, a: Var, axis: usize) -> AdResult<Var> {
        self.reduce(a, Some(axis), Kind::Max)
    }

    /// Smallest element; its adjoint goes to the first position holding it.
    #[track_caller]
    pub fn min(&mut self, a: Var) -> AdResult<Var> {
        self.reduce(a, None, Kind::Min)
    }

    /// Smallest element along `axis` (removed); adjoint to the first arg-min.
    #[track_caller]
    pub fn min_axis(&mut self, a: Var, axis: usize) -> AdResult<Var> {
        self.reduce(a, Some(axis), Kind::Min)
    }

    /// `ln Σ exp(a)` along `axis` (removed), computed stably.
    #[track_caller]
    pub fn logsumexp(&mut self, a: Var, axis: usize) -> AdResult<Var> {
        self.reduce(a, Some(axis), Kind::LogSumExp)
    }

    /// Euclidean norm of all elements, `sqrt(Σ a²)` (a 0-d value).
    #[track_caller]
    pub fn norm(&mut self, a: Var) -> AdResult<Var> {
        self.reduce(a, None, Kind::Norm)
    }
}

#[cfg(test)]
mod tests {
    use super::sum_map;
    use ndarray::{Array1, ArrayD, IxDyn};

    /// The lane sum against an `f64` sum of the same `f32` values, for lengths around
    /// the lanes (below, at, one over, many chunks with a remainder); below one chunk it
    /// is the sequential sum bit for bit. A transposed (non-contiguous) view sums the
    /// same values.
    #[test]
    fn lane_sums_match_the_definition() {
        for len in [0, 1, 5, 15, 16, 17, 33, 1000, 10_007] {
            let x = Array1::from_shape_fn(len, |i| ((i * 37 % 101) as f32 - 50.0) / 7.0);
            let want: f64 = x.iter().map(|&v| f64::from(v)).sum();
            let xd = x.clone().into_dyn();
            let got = sum_map(&xd.view(), |v| v);
            let scale: f64 = x.iter().map(|&v| f64::from(v.abs())).sum::<f64>().max(1.0);
            assert!(
                (f64::from(got) - want).abs() <= 1e-6 * scale,
                "len {len}: {got} against {want}"
            );
            if (1..16).contains(&len) {
                assert_eq!(got.to_bits(), x.iter().copied().sum::<f32>().to_bits());
            }
            let sq = sum_map(&xd.view(), |v| v * v);
            let want_sq: f64 = x.iter().map(|&v| f64::from(v * v)).sum();
            assert!((f64::from(sq) - want_sq).abs() <= 1e-6 * want_sq.max(1.0));
        }
        let m = ArrayD::from_shape_fn(IxDyn(&[7, 9]), |d| (d[0] * 9 + d[1]) as f64);
        let t = m.t();
        assert_eq!(sum_map(&t, |v| v), (0..63).sum::<i32>() as f64);
    }
}
