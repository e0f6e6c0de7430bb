//! Two tensor operations with hand-written rules (through the core's custom-rule
//! mechanism) that the layers use on their hot path:
//!
//! - [`transpose2`]: the transpose of a 2-D value (the weights are stored in
//!   PyTorch's `[out, in]` layout and multiplied as `X · Wᵀ`); the core's 2-D
//!   transpose is cache-blocked and pooled, so this only checks the rank.
//! - [`dropout`]: inverted dropout whose mask comes from a fast counter-based
//!   generator (SplitMix64) seeded by one draw from the caller's RNG; four 16-bit
//!   draws per 64 bits.
//!
//! - [`gcn_norm_values`]: GCN's normalised adjacency values as a differentiable
//!   function of edge weights that are values on the tape.
//!
//! Rules: dropout `dX += G ⊙ M`, `Ẏ = Ẋ ⊙ M`; for `gcn_norm_values` see its rule.

use crate::ctx::{Float, GcnEdges};
use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD, IxDyn};
use rand::Rng;
use rand::rngs::StdRng;
use shade_autodiff::tensor::{Tape, TensorRule, Var};
use shade_autodiff::{AdError, AdResult};
use std::sync::OnceLock;

/// The transpose of a 2-D value (the core's `transpose` has a cache-blocked 2-D path
/// whose output comes from the tape's pool).
///
/// Errors with [`AdError::RankMismatch`] unless the value is 2-D.
pub(crate) fn transpose2<T: Float>(t: &mut Tape<'_, T>, x: Var) -> AdResult<Var> {
    let shape = t.shape(x)?;
    if shape.len() != 2 {
        return Err(AdError::RankMismatch {
            op: "transpose2",
            expected: 2,
            shape: shape.to_vec(),
        });
    }
    t.transpose(x)
}

struct MaskMul<T> {
    mask: Vec<T>,
}

impl<T: Float> TensorRule<T> for MaskMul<T> {
    fn name(&self) -> &'static str {
        "dropout"
    }

    fn forward(&self, x: &[ArrayViewD<'_, T>]) -> AdResult<ArrayD<T>> {
        let xs = x[0].as_standard_layout();
        let v: Vec<T> = xs
            .as_slice()
            .expect("standard layout")
            .iter()
            .zip(&self.mask)
            .map(|(&a, &m)| a * m)
            .collect();
        Ok(ArrayD::from_shape_vec(IxDyn(x[0].shape()), v).expect("same length"))
    }

    fn vjp(
        &self,
        _x: &[ArrayViewD<'_, T>],
        _y: ArrayViewD<'_, T>,
        g: ArrayViewD<'_, T>,
        _input: usize,
        mut dx: ArrayViewMutD<'_, T>,
    ) {
        let gs = g.as_standard_layout();
        let g = gs.as_slice().expect("standard layout");
        match dx.as_slice_mut() {
            Some(d) => d
                .iter_mut()
                .zip(g.iter().zip(&self.mask))
                .for_each(|(d, (&g, &m))| *d += g * m),
            None => dx
                .iter_mut()
                .zip(g.iter().zip(&self.mask))
                .for_each(|(d, (&g, &m))| *d += g * m),
        }
    }

    fn jvp(
        &self,
        _x: &[ArrayViewD<'_, T>],
        _y: ArrayViewD<'_, T>,
        t: &[Option<ArrayViewD<'_, T>>],
        mut ty: ArrayViewMutD<'_, T>,
    ) {
        if let Some(t) = &t[0] {
            ty.iter_mut()
                .zip(t.iter().zip(&self.mask))
                .for_each(|(o, (&a, &m))| *o = a * m);
        }
    }
}

#[inline]
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Inverted dropout: in training every element is zeroed with probability `p`
/// (resolution 2⁻¹⁶) and the rest scaled by `1 / (1 - p)`; the identity otherwise.
///
/// Errors with [`AdError::InvalidArgument`] unless `0 <= p < 1`.
pub(crate) fn dropout<T: Float>(
    t: &mut Tape<'_, T>,
    x: Var,
    p: f64,
    rng: &mut StdRng,
    training: bool,
) -> AdResult<Var> {
    if !(0.0..1.0).contains(&p) {
        return Err(AdError::InvalidArgument {
            op: "dropout",
            what: format!("the drop probability must lie in [0, 1), got {p}"),
        });
    }
    if !training || p == 0.0 {
        return Ok(x);
    }
    let n = t.shape(x)?.iter().product::<usize>();
    let threshold = (p * 65536.0).round() as u64;
    let keep = T::cst(1.0 / (1.0 - p));
    let mut state = rng.next_u64();
    let mut mask = vec![T::zero(); n];
    let vals = [T::zero(), keep];
    for chunk in mask.chunks_mut(4) {
        let r = splitmix(&mut state);
        for (k, m) in chunk.iter_mut().enumerate() {
            let d = (r >> (16 * k)) & 0xffff;
            *m = vals[usize::from(d >= threshold)];
        }
    }
    t.custom(MaskMul { mask }, &[x])
}

/// A keep mask of `n` entries for a drop probability `p` in `[0, 1)`, from the same
/// counter-based generator as [`dropout`] (one draw from `rng`, then SplitMix64, four
/// 16-bit draws per 64 bits): entry `i` is kept (`true`) unless its draw falls below
/// `p` (resolution 2⁻¹⁶). For masks applied to something other than a tape value,
/// e.g. the edge values of a propagation matrix.
///
/// The caller validates `p`; outside `[0, 1)` the mask keeps nothing (`p >= 1`) or
/// everything (`p <= 0`, NaN).
pub(crate) fn keep_mask(n: usize, p: f64, rng: &mut StdRng) -> Vec<bool> {
    let threshold = (p.clamp(0.0, 1.0) * 65536.0).round() as u64;
    let mut state = rng.next_u64();
    let mut mask = vec![false; n];
    for chunk in mask.chunks_mut(4) {
        let r = splitmix(&mut state);
        for (k, m) in chunk.iter_mut().enumerate() {
            *m = ((r >> (16 * k)) & 0xffff) >= threshold;
        }
    }
    mask
}

struct AddBias;

impl<T: Float> TensorRule<T> for AddBias {
    fn name(&self) -> &'static str {
        "add_bias"
    }

    fn forward(&self, x: &[ArrayViewD<'_, T>]) -> AdResult<ArrayD<T>> {
        let (a, b) = (&x[0], &x[1]);
        let f = b.len();
        if a.ndim() != 2 || b.ndim() != 1 || a.shape()[1] != f {
            return Err(AdError::ShapeMismatch {
                op: "add_bias",
                left: a.shape().to_vec(),
                right: b.shape().to_vec(),
            });
        }
        let (as_, bs) = (a.as_standard_layout(), b.as_standard_layout());
        let bs = bs.as_slice().expect("standard layout");
        let mut out: Vec<T> = as_.as_slice().expect("standard layout").to_vec();
        if f > 0 {
            out.chunks_mut(f)
                .for_each(|r| r.iter_mut().zip(bs).for_each(|(o, &b)| *o += b));
        }
        Ok(ArrayD::from_shape_vec(IxDyn(a.shape()), out).expect("same shape"))
    }

    fn vjp(
        &self,
        _x: &[ArrayViewD<'_, T>],
        _y: ArrayViewD<'_, T>,
        g: ArrayViewD<'_, T>,
        input: usize,
        mut d: ArrayViewMutD<'_, T>,
    ) {
        let gs = g.as_standard_layout();
        let gs = gs.as_slice().expect("standard layout");
        let ds = d.as_slice_mut().expect("adjoints are in standard layout");
        if input == 0 {
            ds.iter_mut().zip(gs).for_each(|(d, &g)| *d += g);
        } else if !ds.is_empty() {
            gs.chunks(ds.len())
                .for_each(|r| ds.iter_mut().zip(r).for_each(|(d, &g)| *d += g));
        }
    }

    fn jvp(
        &self,
        x: &[ArrayViewD<'_, T>],
        _y: ArrayViewD<'_, T>,
        t: &[Option<ArrayViewD<'_, T>>],
        mut ty: ArrayViewMutD<'_, T>,
    ) {
        if let Some(ta) = &t[0] {
            ty += ta;
        }
        if let Some(tb) = &t[1] {
            let f = x[1].len();
            let tb = tb.as_standard_layout();
            let tb = tb.as_slice().expect("standard layout");
            if let Some(o) = ty.as_slice_mut()
                && f > 0
            {
                o.chunks_mut(f)
                    .for_each(|r| r.iter_mut().zip(tb).for_each(|(o, &b)| *o += b));
            }
        }
    }
}

struct Relu;

impl<T: Float> TensorRule<T> for Relu {
    fn name(&self) -> &'static str {
        "relu"
    }

    fn forward(&self, x: &[ArrayViewD<'_, T>]) -> AdResult<ArrayD<T>> {
        let xs = x[0].as_standard_layout();
        let v = xs
            .as_slice()
            .expect("standard layout")
            .iter()
            .map(|&a| a.max(T::zero()))
            .collect();
        Ok(ArrayD::from_shape_vec(IxDyn(x[0].shape()), v).expect("same length"))
    }

    fn vjp(
        &self,
        _x: &[ArrayViewD<'_, T>],
        y: ArrayViewD<'_, T>,
        g: ArrayViewD<'_, T>,
        _input: usize,
        mut dx: ArrayViewMutD<'_, T>,
    ) {
        // The derivative is 1 where the output is positive (0 at the kink, as PyTorch).
        let (ys, gs) = (y.as_standard_layout(), g.as_standard_layout());
        let (y, g) = (ys.as_slice().expect("std"), gs.as_slice().expect("std"));
        let d = dx.as_slice_mut().expect("adjoints are in standard layout");
        d.iter_mut()
            .zip(g.iter().zip(y))
            .for_each(|(d, (&g, &y))| *d += if y > T::zero() { g } else { T::zero() });
    }

    fn jvp(
        &self,
        _x: &[ArrayViewD<'_, T>],
        y: ArrayViewD<'_, T>,
        t: &[Option<ArrayViewD<'_, T>>],
        mut ty: ArrayViewMutD<'_, T>,
    ) {
        if let Some(t) = &t[0] {
            ndarray::Zip::from(&mut ty)
                .and(&y)
                .and(t)
                .for_each(|o, &y, &t| *o = if y > T::zero() { t } else { T::zero() });
        }
    }
}

/// `max(x, 0)` with a slice-based reverse rule.
pub(crate) fn relu<T: Float>(t: &mut Tape<'_, T>, x: Var) -> AdResult<Var> {
    t.custom(Relu, &[x])
}

/// `x + b` for `x` `[N, F]` and a bias `b` `[F]` added to every row.
pub(crate) fn add_bias<T: Float>(t: &mut Tape<'_, T>, x: Var, b: Var) -> AdResult<Var> {
    t.custom(AddBias, &[x, b])
}

/// `out[dst_e, h, :] += α[e, h] · x[src_e, h, :]` over the edges (inputs `x`
/// `[N, H·C]`, `α` `[E, H]`); output `[N, H·C]`.
struct EdgeWeightedSum<'e> {
    src: &'e [usize],
    dst: &'e [usize],
    n: usize,
    heads: usize,
}

impl EdgeWeightedSum<'_> {
    fn check<T>(&self, x: &ArrayViewD<'_, T>, a: &ArrayViewD<'_, T>) -> AdResult<usize> {
        let e = self.src.len();
        let ok = x.ndim() == 2
            && x.shape()[0] == self.n
            && self.heads > 0
            && x.shape()[1].is_multiple_of(self.heads)
            && a.shape() == [e, self.heads];
        if !ok {
            return Err(AdError::ShapeMismatch {
                op: "edge_weighted_sum (x [N, H·C], alpha [E, H])",
                left: x.shape().to_vec(),
                right: a.shape().to_vec(),
            });
        }
        Ok(x.shape()[1] / self.heads)
    }
}

impl<T: Float> TensorRule<T> for EdgeWeightedSum<'_> {
    fn name(&self) -> &'static str {
        "edge_weighted_sum"
    }

    fn forward(&self, inp: &[ArrayViewD<'_, T>]) -> AdResult<ArrayD<T>> {
        let c = self.check(&inp[0], &inp[1])?;
        let (xs, as_) = (inp[0].as_standard_layout(), inp[1].as_standard_layout());
        let (x, a) = (xs.as_slice().expect("std"), as_.as_slice().expect("std"));
        let (h, f) = (self.heads, self.heads * c);
        let mut out = vec![T::zero(); self.n * f];
        for (e, (&s, &d)) in self.src.iter().zip(self.dst).enumerate() {
            for k in 0..h {
                let w = a[e * h + k];
                let (o, xr) = (d * f + k * c, s * f + k * c);
                out[o..o + c]
                    .iter_mut()
                    .zip(&x[xr..xr + c])
                    .for_each(|(o, &v)| *o += w * v);
            }
        }
        Ok(ArrayD::from_shape_vec(IxDyn(&[self.n, f]), out).expect("n * f values"))
    }

    fn vjp(
        &self,
        inp: &[ArrayViewD<'_, T>],
        _y: ArrayViewD<'_, T>,
        g: ArrayViewD<'_, T>,
        input: usize,
        mut dx: ArrayViewMutD<'_, T>,
    ) {
        let c = inp[0].shape()[1] / self.heads;
        let (h, f) = (self.heads, self.heads * c);
        let (xs, as_, gs) = (
            inp[0].as_standard_layout(),
            inp[1].as_standard_layout(),
            g.as_standard_layout(),
        );
        let (x, a, g) = (
            xs.as_slice().expect("std"),
            as_.as_slice().expect("std"),
            gs.as_slice().expect("std"),
        );
        let d = dx.as_slice_mut().expect("adjoints are in standard layout");
        for (e, (&s, &t)) in self.src.iter().zip(self.dst).enumerate() {
            for k in 0..h {
                let (go, xr) = (t * f + k * c, s * f + k * c);
                if input == 0 {
                    let w = a[e * h + k];
                    d[xr..xr + c]
                        .iter_mut()
                        .zip(&g[go..go + c])
                        .for_each(|(d, &v)| *d += w * v);
                } else {
                    d[e * h + k] += g[go..go + c]
                        .iter()
                        .zip(&x[xr..xr + c])
                        .map(|(&p, &q)| p * q)
                        .sum::<T>();
                }
            }
        }
    }

    fn jvp(
        &self,
        inp: &[ArrayViewD<'_, T>],
        _y: ArrayViewD<'_, T>,
        t: &[Option<ArrayViewD<'_, T>>],
        mut ty: ArrayViewMutD<'_, T>,
    ) {
        let c = inp[0].shape()[1] / self.heads;
        let (h, f) = (self.heads, self.heads * c);
        let o = ty.as_slice_mut().expect("tangents are in standard layout");
        let xs = inp[0].as_standard_layout();
        let as_ = inp[1].as_standard_layout();
        let tx = t[0].as_ref().map(|v| v.as_standard_layout());
        let ta = t[1].as_ref().map(|v| v.as_standard_layout());
        let (x, a) = (xs.as_slice().expect("std"), as_.as_slice().expect("std"));
        for (e, (&s, &d)) in self.src.iter().zip(self.dst).enumerate() {
            for k in 0..h {
                let (oo, xr) = (d * f + k * c, s * f + k * c);
                if let Some(tx) = &tx {
                    let tx = tx.as_slice().expect("std");
                    let w = a[e * h + k];
                    o[oo..oo + c]
                        .iter_mut()
                        .zip(&tx[xr..xr + c])
                        .for_each(|(o, &v)| *o += w * v);
                }
                if let Some(ta) = &ta {
                    let w = ta.as_slice().expect("std")[e * h + k];
                    o[oo..oo + c]
                        .iter_mut()
                        .zip(&x[xr..xr + c])
                        .for_each(|(o, &v)| *o += w * v);
                }
            }
        }
    }
}

/// `out[v, h, :] = Σ_{e: dst_e = v} α[e, h] · x[src_e, h, :]` for `x` `[N, H·C]` and
/// `α` `[E, H]`, without materialising the `[E, H·C]` messages.
pub(crate) fn edge_weighted_sum<'a, T: Float>(
    t: &mut Tape<'a, T>,
    edges: &'a crate::EdgeIndex<T>,
    alpha: Var,
    x: Var,
) -> AdResult<Var> {
    let heads = t.shape(alpha)?.get(1).copied().unwrap_or(0);
    let rule = EdgeWeightedSum {
        src: edges.src(),
        dst: edges.dst(),
        n: edges.num_nodes(),
        heads,
    };
    t.custom(rule, &[x, alpha])
}

/// `s[n, h] = Σ_c x[n, h·C + c] · a[h, c]` for `x` `[N, H·C]` and `a` with `H·C`
/// elements (e.g. `[1, H, C]`).
struct HeadDot {
    heads: usize,
}

impl<T: Float> TensorRule<T> for HeadDot {
    fn name(&self) -> &'static str {
        "head_dot"
    }

    fn forward(&self, inp: &[ArrayViewD<'_, T>]) -> AdResult<ArrayD<T>> {
        let (x, a) = (&inp[0], &inp[1]);
        if x.ndim() != 2
            || x.shape()[1] != a.len()
            || self.heads == 0
            || !a.len().is_multiple_of(self.heads)
        {
            return Err(AdError::ShapeMismatch {
                op: "head_dot (x [N, H·C], att [1, H, C])",
                left: x.shape().to_vec(),
                right: a.shape().to_vec(),
            });
        }
        let (n, f) = (x.shape()[0], a.len());
        let c = f / self.heads;
        let (xs, as_) = (x.as_standard_layout(), a.as_standard_layout());
        let (x, a) = (xs.as_slice().expect("std"), as_.as_slice().expect("std"));
        let mut out = vec![T::zero(); n * self.heads];
        for (r, o) in x.chunks(f.max(1)).zip(out.chunks_mut(self.heads)) {
            for (k, o) in o.iter_mut().enumerate() {
                *o = r[k * c..(k + 1) * c]
                    .iter()
                    .zip(&a[k * c..(k + 1) * c])
                    .map(|(&p, &q)| p * q)
                    .sum();
            }
        }
        Ok(ArrayD::from_shape_vec(IxDyn(&[n, self.heads]), out).expect("n * h values"))
    }

    fn vjp(
        &self,
        inp: &[ArrayViewD<'_, T>],
        _y: ArrayViewD<'_, T>,
        g: ArrayViewD<'_, T>,
        input: usize,
        mut d: ArrayViewMutD<'_, T>,
    ) {
        let f = inp[1].len();
        let (h, c) = (self.heads, f / self.heads);
        let (xs, as_, gs) = (
            inp[0].as_standard_layout(),
            inp[1].as_standard_layout(),
            g.as_standard_layout(),
        );
        let (x, a, g) = (
            xs.as_slice().expect("std"),
            as_.as_slice().expect("std"),
            gs.as_slice().expect("std"),
        );
        let d = d.as_slice_mut().expect("adjoints are in standard layout");
        for (i, gr) in g.chunks(h).enumerate() {
            for (k, &gv) in gr.iter().enumerate() {
                let r = i * f + k * c;
                if input == 0 {
                    d[r..r + c]
                        .iter_mut()
                        .zip(&a[k * c..(k + 1) * c])
                        .for_each(|(d, &q)| *d += gv * q);
                } else {
                    d[k * c..(k + 1) * c]
                        .iter_mut()
                        .zip(&x[r..r + c])
                        .for_each(|(d, &p)| *d += gv * p);
                }
            }
        }
    }

    fn jvp(
        &self,
        inp: &[ArrayViewD<'_, T>],
        _y: ArrayViewD<'_, T>,
        t: &[Option<ArrayViewD<'_, T>>],
        mut ty: ArrayViewMutD<'_, T>,
    ) {
        let f = inp[1].len();
        let (h, c) = (self.heads, f / self.heads);
        let o = ty.as_slice_mut().expect("tangents are in standard layout");
        let xs = inp[0].as_standard_layout();
        let as_ = inp[1].as_standard_layout();
        let (x, a) = (xs.as_slice().expect("std"), as_.as_slice().expect("std"));
        for (i, or) in o.chunks_mut(h).enumerate() {
            for (k, ov) in or.iter_mut().enumerate() {
                let r = i * f + k * c;
                if let Some(tx) = &t[0] {
                    let tx = tx.as_standard_layout();
                    let tx = tx.as_slice().expect("std");
                    *ov += tx[r..r + c]
                        .iter()
                        .zip(&a[k * c..(k + 1) * c])
                        .map(|(&p, &q)| p * q)
                        .sum::<T>();
                }
                if let Some(ta) = &t[1] {
                    let ta = ta.as_standard_layout();
                    let ta = ta.as_slice().expect("std");
                    *ov += x[r..r + c]
                        .iter()
                        .zip(&ta[k * c..(k + 1) * c])
                        .map(|(&p, &q)| p * q)
                        .sum::<T>();
                }
            }
        }
    }
}

/// Per-head dot products of the rows of `x` (`[N, H·C]`) with `a` (`H·C` elements).
pub(crate) fn head_dot<T: Float>(
    t: &mut Tape<'_, T>,
    x: Var,
    a: Var,
    heads: usize,
) -> AdResult<Var> {
    t.custom(HeadDot { heads }, &[x, a])
}

/// The values of `D^-1/2 A_w D^-1/2` on the structure of a [`GcnEdges`] list, from the
/// graph's edge weights `w` (any shape holding one value per graph edge).
///
/// With `wf` the listed edges' weights (`w[from]`, or `fill` for an added loop),
/// `deg[i] = Σ_{dst = i} wf`, `dis = deg^-1/2` (0 where `deg = 0`, as PyG masks the
/// infinity) and `c_k = dis[src_k] wf_k dis[dst_k]` summed into the entries. Without
/// `normalize`, `c_k = wf_k`. Reverse: `∂c_k/∂wf_k = dis_s dis_d`, and through the
/// degree `∂dis_i/∂deg_i = -dis_i³ / 2`; forward mode likewise. `w` must hold one
/// value per graph edge (GCNConv checks its shape first).
struct GcnNormValues<'e, T: Float> {
    edges: &'e GcnEdges<T>,
    normalize: bool,
    num_nodes: usize,
    /// `(wf, deg, dis)` from the forward pass, which the reverse and forward rules
    /// reuse instead of recomputing.
    prepared: OnceLock<Prepared<T>>,
}

/// The listed edges' weights, the degrees and `deg^-1/2` of [`GcnNormValues`].
type Prepared<T> = (Vec<T>, Vec<T>, Vec<T>);

impl<T: Float> GcnNormValues<'_, T> {
    /// The listed edges' weights, the degrees and `deg^-1/2` for the weights `w`,
    /// computed once.
    fn prepared(&self, w: &ArrayViewD<'_, T>) -> &Prepared<T> {
        self.prepared.get_or_init(|| {
            let w = w.as_standard_layout();
            self.prepare(w.as_slice().expect("standard layout"))
        })
    }

    fn prepare(&self, w: &[T]) -> Prepared<T> {
        self.edges
            .normalise(|i| w[i], self.normalize, self.num_nodes)
    }
}

impl<T: Float> TensorRule<T> for GcnNormValues<'_, T> {
    fn name(&self) -> &'static str {
        "gcn_norm_values"
    }

    fn forward(&self, x: &[ArrayViewD<'_, T>]) -> AdResult<ArrayD<T>> {
        let (wf, _, dis) = self.prepared(&x[0]);
        let e = self.edges;
        let mut out = vec![T::zero(); e.matrix.nnz()];
        for k in 0..wf.len() {
            let c = if self.normalize {
                dis[e.src[k]] * wf[k] * dis[e.dst[k]]
            } else {
                wf[k]
            };
            out[e.position[k]] += c;
        }
        Ok(ArrayD::from_shape_vec(IxDyn(&[out.len()]), out).expect("one value per entry"))
    }

    fn vjp(
        &self,
        x: &[ArrayViewD<'_, T>],
        _y: ArrayViewD<'_, T>,
        g: ArrayViewD<'_, T>,
        _input: usize,
        mut dx: ArrayViewMutD<'_, T>,
    ) {
        let (wf, deg, dis) = self.prepared(&x[0]);
        let g = g.as_standard_layout();
        let g = g.as_slice().expect("standard layout");
        let e = self.edges;
        let gc = |k: usize| g[e.position[k]];
        let mut gwf: Vec<T> = (0..wf.len()).map(gc).collect();
        if self.normalize {
            let mut gdis = vec![T::zero(); self.num_nodes];
            for k in 0..wf.len() {
                let (s, d) = (e.src[k], e.dst[k]);
                gdis[s] += gwf[k] * wf[k] * dis[d];
                gdis[d] += gwf[k] * wf[k] * dis[s];
                gwf[k] = gwf[k] * dis[s] * dis[d];
            }
            let half = T::cst(-0.5);
            let gdeg: Vec<T> = (0..self.num_nodes)
                .map(|i| {
                    if deg[i] == T::zero() {
                        T::zero()
                    } else {
                        gdis[i] * half * dis[i] * dis[i] * dis[i]
                    }
                })
                .collect();
            for k in 0..wf.len() {
                gwf[k] += gdeg[e.dst[k]];
            }
        }
        let mut dxs = dx.iter_mut().collect::<Vec<_>>();
        for (k, f) in e.from.iter().enumerate() {
            if let Some(i) = *f {
                *dxs[i] += gwf[k];
            }
        }
    }

    fn jvp(
        &self,
        x: &[ArrayViewD<'_, T>],
        _y: ArrayViewD<'_, T>,
        t: &[Option<ArrayViewD<'_, T>>],
        mut ty: ArrayViewMutD<'_, T>,
    ) {
        let Some(tw) = &t[0] else { return };
        let (wf, deg, dis) = self.prepared(&x[0]);
        let tw = tw.as_standard_layout();
        let tw = tw.as_slice().expect("standard layout");
        let e = self.edges;
        let twf: Vec<T> = e
            .from
            .iter()
            .map(|f| f.map_or(T::zero(), |i| tw[i]))
            .collect();
        let out = ty.as_slice_mut().expect("a fresh standard-layout tangent");
        if !self.normalize {
            for k in 0..wf.len() {
                out[e.position[k]] += twf[k];
            }
            return;
        }
        let mut tdeg = vec![T::zero(); self.num_nodes];
        e.dst.iter().zip(&twf).for_each(|(&d, &x)| tdeg[d] += x);
        let half = T::cst(-0.5);
        let tdis: Vec<T> = (0..self.num_nodes)
            .map(|i| {
                if deg[i] == T::zero() {
                    T::zero()
                } else {
                    half * dis[i] * dis[i] * dis[i] * tdeg[i]
                }
            })
            .collect();
        for k in 0..wf.len() {
            let (s, d) = (e.src[k], e.dst[k]);
            let c = tdis[s] * wf[k] * dis[d] + dis[s] * twf[k] * dis[d] + dis[s] * wf[k] * tdis[d];
            out[e.position[k]] += c;
        }
    }
}

/// GCN's adjacency values over `edges` (rows = destination, on `edges.matrix`'s
/// structure, `[nnz]`) from edge weights `w` on the tape, one per graph edge;
/// normalised as PyG's `gcn_norm` when `normalize`. See [`GcnNormValues`].
///
/// `w` must hold one value per graph edge (the caller checks its shape).
pub(crate) fn gcn_norm_values<'a, T: Float>(
    t: &mut Tape<'a, T>,
    edges: &'a GcnEdges<T>,
    num_nodes: usize,
    normalize: bool,
    w: Var,
) -> AdResult<Var> {
    t.custom(
        GcnNormValues {
            edges,
            normalize,
            num_nodes,
            prepared: OnceLock::new(),
        },
        &[w],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::SeedableRng;
    use shade_autodiff::tensor::{self, TapeBuffers};
    use shade_autodiff::{Const, Duplicated};

    #[test]
    fn dropout_keeps_the_expected_fraction_and_is_seeded() {
        let x = ndarray::Array2::<f64>::ones((100, 100));
        let run = |seed| {
            let mut rng = StdRng::seed_from_u64(seed);
            tensor::value(
                &mut TapeBuffers::new(),
                |t, (x,)| dropout(t, x, 0.3, &mut rng, true),
                (Const(&x),),
            )
            .unwrap()
        };
        let y = run(1);
        let kept = y.iter().filter(|&&v| v != 0.0).count() as f64 / 1e4;
        assert!((kept - 0.7).abs() < 0.02, "{kept}");
        assert!(y.iter().all(|&v| v == 0.0 || (v - 1.0 / 0.7).abs() < 1e-12));
        assert_eq!(y, run(1));
        assert_ne!(y, run(2));
        let e = tensor::value(
            &mut TapeBuffers::new(),
            |t, (x,)| dropout(t, x, 1.0, &mut StdRng::seed_from_u64(0), true),
            (Const(&x),),
        )
        .unwrap_err();
        assert_eq!(e.code(), "SHADE-E0114");
    }

    /// The first column of `w` (`[c]`), a bias for `add_bias`.
    fn w_row(t: &mut Tape<'_, f64>, w: Var) -> AdResult<Var> {
        let c = t.shape(w)?[0];
        let r = t.narrow(w, 1, 0, 1)?;
        t.reshape(r, &[c])
    }

    /// Forward mode of the attention operations against finite differences along the
    /// tangent direction (reverse mode is covered by GATConv's gradient checks).
    #[test]
    fn attention_rules_forward_mode() {
        let g = crate::testing::random_graph(6, 14, 3);
        let ctx = crate::GraphCtx::<f64>::new(&g);
        let e = ctx.edges().num_edges();
        let x = crate::testing::random_features(7, 6, 1).into_dyn();
        let a = crate::testing::random_features(e, 2, 2).into_dyn();
        let att = crate::testing::random_features(1, 6, 3).into_dyn();
        let (tx, ta, tt) = (
            crate::testing::random_features(7, 6, 4).into_dyn(),
            crate::testing::random_features(e, 2, 5).into_dyn(),
            crate::testing::random_features(1, 6, 6).into_dyn(),
        );
        let f = |x: &ArrayD<f64>, a: &ArrayD<f64>, att: &ArrayD<f64>| {
            tensor::value(
                &mut TapeBuffers::new(),
                |t, (x, a, att)| {
                    let s = edge_weighted_sum(t, ctx.edges(), a, x)?;
                    let d = head_dot(t, s, att, 2)?;
                    let d2 = t.mul(d, d)?;
                    t.sum(d2)
                },
                (Const(x), Const(a), Const(att)),
            )
            .unwrap()
            .sum()
        };
        let (mut tx2, mut ta2, mut tt2) = (tx.clone(), ta.clone(), tt.clone());
        let (_, dy) = tensor::pushforward(
            &mut TapeBuffers::new(),
            |t, (x, a, att)| {
                let s = edge_weighted_sum(t, ctx.edges(), a, x)?;
                let d = head_dot(t, s, att, 2)?;
                let d2 = t.mul(d, d)?;
                t.sum(d2)
            },
            (
                Duplicated(&x, &mut tx2),
                Duplicated(&a, &mut ta2),
                Duplicated(&att, &mut tt2),
            ),
        )
        .unwrap();
        let h = 1e-6;
        let fd = (f(&(&x + &(&tx * h)), &(&a + &(&ta * h)), &(&att + &(&tt * h)))
            - f(&(&x - &(&tx * h)), &(&a - &(&ta * h)), &(&att - &(&tt * h))))
            / (2.0 * h);
        let d = dy.sum();
        assert!((d - fd).abs() < 1e-6 * (1.0 + fd.abs()), "{d} vs {fd}");
    }

    proptest! {
        /// The rules against finite differences (dropout is linear given its mask)
        /// and the transpose against ndarray's.
        #[test]
        fn rules_match_finite_differences(r in 1usize..40, c in 1usize..40, seed in 0u64..100) {
            let x = crate::testing::random_features(r, c, seed).into_dyn();
            let w = crate::testing::random_features(c, r, seed + 1).into_dyn();
            let f = |x: &ArrayD<f64>, dx: Option<&mut ArrayD<f64>>| {
                let prog = |t: &mut Tape<'_, f64>, x: Var, w: Var| -> AdResult<Var> {
                    let b = w_row(t, w)?;
                    let x = add_bias(t, x, b)?;
                    let x = relu(t, x)?;
                    let xt = transpose2(t, x)?;
                    let d = dropout(t, xt, 0.4, &mut StdRng::seed_from_u64(seed), true)?;
                    let m = t.mul(d, w)?;
                    let m = t.mul(m, m)?;
                    t.sum(m)
                };
                let mut b = TapeBuffers::new();
                match dx {
                    Some(dx) => tensor::gradient(&mut b, |t, (x, w)| prog(t, x, w), (Duplicated(x, dx), Const(&w))),
                    None => tensor::value(&mut b, |t, (x, w)| prog(t, x, w), (Const(x), Const(&w))).map(|v| v.sum()),
                }
            };
            let mut dx = ArrayD::zeros(x.raw_dim());
            f(&x, Some(&mut dx)).unwrap();
            for j in (0..x.len()).step_by(7) {
                let (mut a, mut b) = (x.clone(), x.clone());
                a.as_slice_mut().unwrap()[j] += 1e-6;
                b.as_slice_mut().unwrap()[j] -= 1e-6;
                let fd = (f(&a, None).unwrap() - f(&b, None).unwrap()) / 2e-6;
                let g = dx.as_slice().unwrap()[j];
                prop_assert!((g - fd).abs() <= 1e-6 + 1e-6 * fd.abs(), "{j}: {g} vs {fd}");
            }
            let y = tensor::value(&mut TapeBuffers::new(), |t, (x,)| transpose2(t, x), (Const(&x),)).unwrap();
            let x2 = x.clone().into_dimensionality::<ndarray::Ix2>().unwrap();
            prop_assert_eq!(y, x2.t().to_owned().into_dyn());
        }
    }

    /// `gcn_norm_values` in forward mode against reverse mode and against finite
    /// differences along a random tangent, for every option set (reverse mode is also
    /// covered by GCNConv's gradient checks).
    #[test]
    fn gcn_norm_values_forward_matches_reverse_and_differences() {
        let g = crate::testing::random_graph(6, 14, 8);
        let ctx = crate::GraphCtx::<f64>::new(&g);
        let ne = ctx.edges().num_edges();
        let w = crate::testing::random_features(ne, 1, 1)
            .mapv(|v| 1.2 + v)
            .into_dyn();
        let tw = crate::testing::random_features(ne, 1, 2).into_dyn();
        let r = crate::testing::random_features(1, 64, 3).into_dyn();
        for (improved, loops, normalize) in [
            (false, true, true),
            (true, true, true),
            (false, false, true),
            (false, false, false),
        ] {
            let edges = ctx.gcn_edges(improved, loops && normalize);
            let nnz = edges.matrix.nnz();
            let rv = r
                .slice(ndarray::s![.., ..nnz])
                .to_owned()
                .into_shape_with_order(nnz)
                .unwrap()
                .into_dyn();
            fn program<'a>(
                t: &mut Tape<'a, f64>,
                w: Var,
                edges: &'a GcnEdges<f64>,
                normalize: bool,
                rv: &'a ArrayD<f64>,
            ) -> AdResult<Var> {
                let v = gcn_norm_values(t, edges, 7, normalize, w)?;
                let rv = t.constant(rv);
                let m = t.mul(v, rv)?;
                let m = t.mul(m, m)?;
                t.sum(m)
            }
            let f = |w: &ArrayD<f64>| {
                tensor::value(
                    &mut TapeBuffers::new(),
                    |t, (w,)| program(t, w, edges, normalize, &rv),
                    (Const(w),),
                )
                .unwrap()
                .sum()
            };
            let mut tw2 = tw.clone();
            let (_, dy) = tensor::pushforward(
                &mut TapeBuffers::new(),
                |t, (w,)| program(t, w, edges, normalize, &rv),
                (Duplicated(&w, &mut tw2),),
            )
            .unwrap();
            let mut gw = ArrayD::zeros(w.raw_dim());
            tensor::gradient(
                &mut TapeBuffers::new(),
                |t, (w,)| program(t, w, edges, normalize, &rv),
                (Duplicated(&w, &mut gw),),
            )
            .unwrap();
            let h = 1e-6;
            let fd = (f(&(&w + &(&tw * h))) - f(&(&w - &(&tw * h)))) / (2.0 * h);
            let fwd = dy.sum();
            let rev = (&gw * &tw).sum();
            assert!((fwd - fd).abs() < 1e-6 * (1.0 + fd.abs()), "{fwd} vs {fd}");
            assert!(
                (fwd - rev).abs() < 1e-10 * (1.0 + rev.abs()),
                "{fwd} vs {rev}"
            );
        }
    }

    #[test]
    fn keep_mask_keeps_the_expected_fraction_and_is_seeded() {
        let mask = |seed, p| keep_mask(10_000, p, &mut StdRng::seed_from_u64(seed));
        let m = mask(3, 0.3);
        let kept = m.iter().filter(|&&k| k).count() as f64 / 1e4;
        assert!((kept - 0.7).abs() < 0.02, "{kept}");
        assert_eq!(m, mask(3, 0.3));
        assert_ne!(m, mask(4, 0.3));
        assert!(mask(3, 0.0).iter().all(|&k| k));
        assert!(mask(3, 1.0).iter().all(|&k| !k));
        // Two draws from one stream differ (a fresh mask per call).
        let mut rng = StdRng::seed_from_u64(5);
        assert_ne!(keep_mask(64, 0.5, &mut rng), keep_mask(64, 0.5, &mut rng));
    }
}
