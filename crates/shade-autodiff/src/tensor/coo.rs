//! Operations over coordinate lists: a sparse structure given as the pairs
//! `(rows[k], cols[k])` (constant index arrays, e.g. a graph's edges `dst ← src`) with
//! values on the tape.
//!
//! - `coo_spmm`: `out[rows[k], g, :] += v[k, g] · x[cols[k], g, :]`, a sparse × dense
//!   product whose nonzeros carry one value per column group (`G` groups of `C`
//!   columns side by side, e.g. attention heads), without materialising the per-pair
//!   rows. Rules: `dx[cols[k], g, :] += v[k, g] · G[rows[k], g, :]`,
//!   `dv[k, g] += ⟨G[rows[k], g, :], x[cols[k], g, :]⟩`, `ẏ = A(v̇) x + A(v) ẋ`.
//! - `sym_norm_values`: the values `d[rows[k]]^-1/2 · w'[k] · d[cols[k]]^-1/2` of a
//!   symmetrically normalised matrix as a function of pair weights `w` on the tape,
//!   summed into the stored entries of a CSR structure (`d[i] = Σ_{rows[k] = i} w'[k]`,
//!   `d^-1/2 = 0` where `d = 0`; `w'[k]` is `w[from[k]]`, or a constant fill for a pair
//!   that carries none): PyG's `gcn_norm` over differentiable edge weights. Rules
//!   through the degrees: `∂c_k/∂w'_k = s_r s_c`, `∂s_i/∂d_i = -s_i³ / 2`.
//!
//! Indices are `u32` or `usize` ([`IndexType`]; a graph's edge lists as they are),
//! checked once at the entry; the kernels then run over contiguous slices, compiled
//! once per index type.

use super::index::indices::{Pairs, with_pairs};
use super::index::{IndexType, check_count, check_indices};
use super::tape::{Bwd, Op, Pool, Tan};
use super::{Element, Tape, Var};
use crate::error::{AdError, AdResult};
use ndarray::ArrayViewD;
use smallvec::SmallVec;

/// The structure of [`Tape::sym_norm_values`]: the pairs, where each pair's weight
/// comes from, and the stored entry of the result that each pair adds to. The pairs'
/// rows and columns are `usize` (the default) or `u32` ([`IndexType`]).
#[derive(Clone, Copy, Debug)]
pub struct SymNorm<'a, I = usize> {
    /// Row (e.g. destination) of every pair; the degrees are summed by row.
    pub rows: &'a [I],
    /// Column (e.g. source) of every pair.
    pub cols: &'a [I],
    /// The weight each pair carries: `Some(i)` for `w[i]`, `None` for `fill`.
    pub from: &'a [Option<usize>],
    /// The weight of a pair without one (e.g. an added self-loop).
    pub fill: f64,
    /// The stored entry (position in the result) each pair adds to.
    pub entry: &'a [usize],
    /// Number of stored entries of the result.
    pub num_entries: usize,
    /// Number of rows (and columns) of the normalised matrix.
    pub num_nodes: usize,
    /// Normalise (`false`: the values are the weights themselves, summed into the
    /// entries).
    pub normalize: bool,
}

impl<'a, I: IndexType> SymNorm<'a, I> {
    fn validate<T>(&self, w_len: usize) -> AdResult<()> {
        let op = "sym_norm_values";
        check_count::<T>(op, "nodes", self.num_nodes, 1)?;
        check_count::<T>(op, "entries", self.num_entries, 1)?;
        let k = self.rows.len();
        for (len, _) in [
            (self.cols.len(), "cols"),
            (self.from.len(), "from"),
            (self.entry.len(), "entry"),
        ] {
            if len != k {
                return Err(AdError::ShapeMismatch {
                    op,
                    left: vec![k],
                    right: vec![len],
                });
            }
        }
        check_indices(op, self.rows, self.num_nodes)?;
        check_indices(op, self.cols, self.num_nodes)?;
        check_indices(op, self.entry, self.num_entries)?;
        if let Some((position, &Some(index))) = self
            .from
            .iter()
            .enumerate()
            .find(|(_, f)| f.is_some_and(|i| i >= w_len))
        {
            return Err(AdError::IndexOutOfRange {
                op,
                position,
                index,
                bound: w_len,
            });
        }
        Ok(())
    }

    /// The pairs' weights `w'`, the degrees and `d^-1/2` (pool buffers).
    fn prepare<T: Element>(&self, w: &[T], pool: &mut Pool<T>) -> [Vec<T>; 3] {
        let fill = T::cst(self.fill);
        let mut wf = pool.vec(self.from.len());
        wf.extend(self.from.iter().map(|f| f.map_or(fill, |i| w[i])));
        let mut deg = pool.vec(self.num_nodes);
        deg.resize(self.num_nodes, T::zero());
        if self.normalize {
            self.rows
                .iter()
                .zip(&wf)
                .for_each(|(&r, &x)| deg[r.ix()] += x);
        }
        let mut dis = pool.vec(self.num_nodes);
        dis.extend(deg.iter().map(|&d| {
            if d == T::zero() {
                T::zero()
            } else {
                d.powf(T::cst(-0.5))
            }
        }));
        [wf, deg, dis]
    }

    /// The structure as a record keeps it.
    fn keep(self) -> SymNormRec<'a> {
        SymNormRec {
            pairs: I::pairs(self.rows, self.cols),
            from: self.from,
            fill: self.fill,
            entry: self.entry,
            num_entries: self.num_entries,
            num_nodes: self.num_nodes,
            normalize: self.normalize,
        }
    }
}

/// A [`SymNorm`] in a record: its pairs of either index type, the rest as given.
#[derive(Clone, Copy, Debug)]
struct SymNormRec<'a> {
    pairs: Pairs<'a>,
    from: &'a [Option<usize>],
    fill: f64,
    entry: &'a [usize],
    num_entries: usize,
    num_nodes: usize,
    normalize: bool,
}

impl<'a> SymNormRec<'a> {
    /// The structure again, with its pairs `rows` and `cols` of one index type.
    fn with<I: IndexType>(&self, rows: &'a [I], cols: &'a [I]) -> SymNorm<'a, I> {
        SymNorm {
            rows,
            cols,
            from: self.from,
            fill: self.fill,
            entry: self.entry,
            num_entries: self.num_entries,
            num_nodes: self.num_nodes,
            normalize: self.normalize,
        }
    }
}

/// Which coordinate-list operation, with its structure.
#[derive(Debug)]
enum Kind<'a> {
    Spmm { pairs: Pairs<'a>, groups: usize },
    SymNorm(SymNormRec<'a>),
}

/// Backward record of a coordinate-list operation.
#[derive(Debug)]
pub(crate) struct Rec<'a, T> {
    kind: Kind<'a>,
    inputs: SmallVec<[usize; 4]>,
    /// `sym_norm_values`: the pairs' weights, the degrees and `d^-1/2`.
    prepared: [Vec<T>; 3],
}

fn std<'v, T: Element>(v: &'v ndarray::CowArray<'_, T, ndarray::IxDyn>) -> &'v [T] {
    v.as_slice().expect("standard layout")
}

/// `out[rows[k], g, :] += v[k, g] · x[cols[k], g, :]` for `x` rows of `f = groups · c`.
///
/// Each pair's values are spread over a row buffer (`c` copies each, `c` a
/// compile-time constant for the usual widths per head 1, 2, 4, 8, 16), then one
/// contiguous multiply-add runs over the row, compiled for AVX-512F or AVX2 where the processor
/// has it. Per element the same operations in the same order as the plain loop (no
/// fused multiply-add): the result is identical bit for bit on every path.
fn spmm_into<T: Element, I: IndexType>(
    structure: (&[I], &[I], usize),
    v: &[T],
    x: &[T],
    f: usize,
    out: &mut [T],
) {
    Kern::new(structure, f).run(Pass::Spmm, v, x, out);
}

/// `d[k, g] += ⟨G[rows[k], g, :], x[cols[k], g, :]⟩`: the adjoint of the values, as
/// [`spmm_into`] (the same widths unrolled, AVX-512F or AVX2 where the processor has them, the
/// products summed left to right as the plain loop).
fn values_adjoint<T: Element, I: IndexType>(
    structure: (&[I], &[I], usize),
    gv: &[T],
    x: &[T],
    f: usize,
    d: &mut [T],
) {
    Kern::new(structure, f).run(Pass::Dots, gv, x, d);
}

/// Which kernel of [`Kern`]: the product, or the values' adjoint.
#[derive(Clone, Copy)]
enum Pass {
    Spmm,
    Dots,
}

/// The structure of a coordinate-list product: pairs `(rows[k], cols[k])`, `groups`
/// values per pair, rows of `f` elements.
#[derive(Clone, Copy)]
struct Kern<'s, I> {
    rows: &'s [I],
    cols: &'s [I],
    groups: usize,
    f: usize,
}

impl<'s, I: IndexType> Kern<'s, I> {
    fn new((rows, cols, groups): (&'s [I], &'s [I], usize), f: usize) -> Self {
        Kern {
            rows,
            cols,
            groups,
            f,
        }
    }

    /// `pass` with `a` the values (product) or the output adjoint (dots), the width
    /// per group unrolled where it is a usual one.
    fn run<T: Element>(self, pass: Pass, a: &[T], x: &[T], out: &mut [T]) {
        if self.f == 0 {
            // Rows of width 0: nothing to add (and no chunks to walk).
            return;
        }
        match self.f / self.groups {
            1 => self.at::<T, 1>(pass, a, x, out),
            2 => self.at::<T, 2>(pass, a, x, out),
            4 => self.at::<T, 4>(pass, a, x, out),
            8 => self.at::<T, 8>(pass, a, x, out),
            16 => self.at::<T, 16>(pass, a, x, out),
            c => self.pass(pass, c, a, x, out),
        }
    }

    /// [`Kern::pass`] at the width `C`, a constant once inlined, compiled for AVX-512F or AVX2 where
    /// the processor has it.
    fn at<T: Element, const C: usize>(self, pass: Pass, a: &[T], x: &[T], out: &mut [T]) {
        super::simd::wide(
            #[inline(always)]
            || self.pass(pass, C, a, x, out),
        );
    }

    /// One pass with `c` elements per group (`f = groups · c`).
    #[inline(always)]
    fn pass<T: Element>(self, pass: Pass, c: usize, a: &[T], x: &[T], out: &mut [T]) {
        let (f, g) = (self.f, self.groups);
        let pairs = self.rows.iter().zip(self.cols);
        match pass {
            Pass::Spmm => {
                // Each pair's values spread over its row (`c` copies each), then one
                // contiguous multiply-add over the row: packed, without shuffles.
                let mut w = vec![T::zero(); f];
                for ((&r, &s), vk) in pairs.zip(a.chunks_exact(g)) {
                    let (r, s) = (r.ix(), s.ix());
                    for (w, &a) in w.chunks_exact_mut(c).zip(vk) {
                        w.fill(a);
                    }
                    let o = &mut out[r * f..(r + 1) * f];
                    let xi = &x[s * f..(s + 1) * f];
                    for ((o, &x), &w) in o.iter_mut().zip(xi).zip(&w) {
                        *o += w * x;
                    }
                }
            }
            Pass::Dots => {
                for ((&r, &s), dk) in pairs.zip(out.chunks_exact_mut(g)) {
                    let (r, s) = (r.ix(), s.ix());
                    let gr = &a[r * f..(r + 1) * f];
                    let xi = &x[s * f..(s + 1) * f];
                    for ((gr, xi), d) in gr.chunks_exact(c).zip(xi.chunks_exact(c)).zip(dk) {
                        // From zero, left to right, as the plain loop.
                        *d += gr
                            .iter()
                            .zip(xi)
                            .fold(T::zero(), |acc, (&p, &q)| acc + p * q);
                    }
                }
            }
        }
    }
}

/// `c_k` summed into the entries: `s[r] w'[k] s[c]` (or `w'[k]` unnormalised).
fn sym_norm_into<T: Element, I: IndexType>(s: &SymNorm<'_, I>, wf: &[T], dis: &[T], out: &mut [T]) {
    for k in 0..wf.len() {
        out[s.entry[k]] += if s.normalize {
            dis[s.rows[k].ix()] * wf[k] * dis[s.cols[k].ix()]
        } else {
            wf[k]
        };
    }
}

impl<T: Element> Rec<'_, T> {
    pub(crate) fn name(&self) -> &'static str {
        match self.kind {
            Kind::Spmm { .. } => "coo_spmm",
            Kind::SymNorm(_) => "sym_norm_values",
        }
    }

    pub(crate) fn inputs(&self) -> SmallVec<[usize; 4]> {
        self.inputs.clone()
    }

    pub(crate) fn release(self, pool: &mut Pool<T>) {
        for v in self.prepared {
            pool.give_vec(v);
        }
    }

    pub(crate) fn backward(&self, _me: usize, g: ArrayViewD<'_, T>, bw: &mut Bwd<'_, '_, T>) {
        let gs = g.as_standard_layout();
        let gv = std(&gs);
        match self.kind {
            Kind::Spmm { pairs, groups } => {
                let (iv, ix) = (self.inputs[0], self.inputs[1]);
                let (v, x) = (bw.vals[iv].view(), bw.vals[ix].view());
                let (vs, xs) = (v.as_standard_layout(), x.as_standard_layout());
                let (vv, xv) = (std(&vs), std(&xs));
                let f = x.shape()[1];
                with_pairs!(pairs, |rows, cols| {
                    if let Some(mut dx) = bw.gs.acc(ix, x.shape()) {
                        let d = dx.as_slice_mut().expect("adjoints are in standard layout");
                        // The transpose: gather from the rows, scatter into the columns.
                        spmm_into((cols, rows, groups), vv, gv, f, d);
                    }
                    if let Some(mut dv) = bw.gs.acc(iv, v.shape()) {
                        let d = dv.as_slice_mut().expect("adjoints are in standard layout");
                        values_adjoint((rows, cols, groups), gv, xv, f, d);
                    }
                });
            }
            Kind::SymNorm(s) => {
                with_pairs!(s.pairs, |rows, cols| self.sym_norm_backward(
                    &s.with(rows, cols),
                    gv,
                    bw
                ));
            }
        }
    }

    /// The reverse rule of [`Tape::sym_norm_values`] on `s` (pairs of one index type).
    fn sym_norm_backward<I: IndexType>(
        &self,
        s: &SymNorm<'_, I>,
        gv: &[T],
        bw: &mut Bwd<'_, '_, T>,
    ) {
        let iw = self.inputs[0];
        if !bw.gs.wants(iw) {
            return;
        }
        let [wf, deg, dis] = &self.prepared;
        let n = s.num_nodes;
        // The adjoint of each pair's weight: directly, and through the degree
        // of its row.
        let mut gwf = bw.gs.pool.vec(wf.len());
        gwf.extend(s.entry.iter().map(|&e| gv[e]));
        if s.normalize {
            let mut gdis = bw.gs.pool.vec(n);
            gdis.resize(n, T::zero());
            for k in 0..wf.len() {
                let (r, c) = (s.rows[k].ix(), s.cols[k].ix());
                gdis[r] += gwf[k] * wf[k] * dis[c];
                gdis[c] += gwf[k] * wf[k] * dis[r];
                gwf[k] = gwf[k] * dis[r] * dis[c];
            }
            let half = T::cst(-0.5);
            for i in 0..n {
                gdis[i] = if deg[i] == T::zero() {
                    T::zero()
                } else {
                    gdis[i] * half * dis[i] * dis[i] * dis[i]
                };
            }
            for k in 0..wf.len() {
                gwf[k] += gdis[s.rows[k].ix()];
            }
            bw.gs.pool.give_vec(gdis);
        }
        let w = bw.vals[iw].view();
        if let Some(mut dw) = bw.gs.acc(iw, w.shape()) {
            let d = dw.as_slice_mut().expect("adjoints are in standard layout");
            for (f, &g) in s.from.iter().zip(&gwf) {
                if let Some(i) = *f {
                    d[i] += g;
                }
            }
        }
        bw.gs.pool.give_vec(gwf);
    }
}

impl<'a, T: Element> Tape<'a, T> {
    /// The sparse × dense product of the pairs `(rows[k], cols[k])` with values `v`:
    /// `out[rows[k], g, :] += v[k, g] · x[cols[k], g, :]` for `x` `[M, G·C]` (the `G`
    /// column groups side by side) and `v` `[K, G]` (or `[K]` for one group); the
    /// result is `[n, G·C]`. With `rows` a graph's destinations, `cols` its sources and
    /// `v` per-edge, per-head attention coefficients, this is attention aggregation
    /// without the `[E, G·C]` messages.
    ///
    /// `rows` and `cols` are `usize` or `u32` ([`IndexType`]), both of one type.
    ///
    /// Errors: [`AdError::ShapeMismatch`] unless `rows` and `cols` have one entry per
    /// row of `v`, `x` is 2-D and the groups divide its width;
    /// [`AdError::IndexOutOfRange`] for a row `>= n` or a column `>= M`;
    /// [`AdError::InvalidArgument`] when `n` rows of the result would not fit in memory.
    #[track_caller]
    pub fn coo_spmm<I: IndexType>(
        &mut self,
        rows: &'a [I],
        cols: &'a [I],
        n: usize,
        v: Var,
        x: Var,
    ) -> AdResult<Var> {
        let op = "coo_spmm (values [K, G], x [M, G·C])";
        let (iv, ix) = (self.index(v)?, self.index(x)?);
        let (vw, xw) = (self.vals[iv].view(), self.vals[ix].view());
        let (vs, xs) = (vw.shape(), xw.shape());
        let groups = match vs {
            [_] => 1,
            [_, g] => *g,
            _ => 0,
        };
        let k = vs.first().copied().unwrap_or(0);
        if groups == 0
            || xs.len() != 2
            || !xs[1].is_multiple_of(groups)
            || rows.len() != k
            || cols.len() != k
        {
            return Err(AdError::ShapeMismatch {
                op,
                left: vs.to_vec(),
                right: xs.to_vec(),
            });
        }
        check_indices("coo_spmm", rows, n)?;
        check_indices("coo_spmm", cols, xs[0])?;
        let f = xs[1];
        check_count::<T>("coo_spmm", "rows", n, f)?;
        let (vc, xc) = (vw.as_standard_layout(), xw.as_standard_layout());
        let (vf, xf) = (std(&vc), std(&xc));
        let mut out = self.pool.zeros(&[n, f]);
        let o = out.as_slice_mut().expect("standard layout");
        spmm_into((rows, cols, groups), vf, xf, f, o);
        let tracked = self.tracked[iv] || self.tracked[ix];
        let mut tan = Tan::None;
        if self.forward() && tracked {
            let mut t = self.pool.zeros(&[n, f]);
            let tv = t.as_slice_mut().expect("standard layout");
            if let Some(tx) = self.tans[ix].view() {
                let tx = tx.as_standard_layout();
                spmm_into((rows, cols, groups), vf, std(&tx), f, tv);
            }
            if let Some(ta) = self.tans[iv].view() {
                let ta = ta.as_standard_layout();
                spmm_into((rows, cols, groups), std(&ta), xf, f, tv);
            }
            tan = Tan::Own(t);
        }
        let rec = Rec {
            kind: Kind::Spmm {
                pairs: I::pairs(rows, cols),
                groups,
            },
            inputs: smallvec::smallvec![iv, ix],
            prepared: Default::default(),
        };
        Ok(self.push(out, tracked, Op::Coo(rec), tan))
    }

    /// The values of a symmetrically normalised matrix on the structure `s`, as a
    /// function of the pair weights `w` (any shape; `w.len()` weights, indexed by
    /// `s.from`): `out[s.entry[k]] += d[rows[k]]^-1/2 · w'[k] · d[cols[k]]^-1/2` with
    /// `d[i] = Σ_{rows[k] = i} w'[k]` and `d^-1/2 = 0` where `d = 0` (PyG's
    /// `gcn_norm`), or `w'[k]` unnormalised; the result is `[s.num_entries]`, the
    /// values for [`Tape::spmm_values`] on that structure. See [`SymNorm`].
    ///
    /// Errors: [`AdError::ShapeMismatch`] when the lists of `s` differ in length;
    /// [`AdError::IndexOutOfRange`] for an index out of its range.
    #[track_caller]
    pub fn sym_norm_values<I: IndexType>(&mut self, w: Var, s: SymNorm<'a, I>) -> AdResult<Var> {
        let iw = self.index(w)?;
        let wv = self.vals[iw].view();
        s.validate::<T>(wv.len())?;
        let wc = wv.as_standard_layout();
        let prepared = s.prepare(std(&wc), &mut self.pool);
        let [wf, _, dis] = &prepared;
        let mut out = self.pool.zeros(&[s.num_entries]);
        let o = out.as_slice_mut().expect("standard layout");
        sym_norm_into(&s, wf, dis, o);
        let tracked = self.tracked[iw];
        let mut tan = Tan::None;
        if self.forward()
            && let Some(tw) = self.tans[iw].view()
        {
            let tw = tw.as_standard_layout();
            let tw = std(&tw);
            let mut t = self.pool.zeros(&[s.num_entries]);
            let tv = t.as_slice_mut().expect("standard layout");
            let mut twf = self.pool.vec(s.from.len());
            twf.extend(s.from.iter().map(|f| f.map_or(T::zero(), |i| tw[i])));
            if s.normalize {
                let deg = &prepared[1];
                let mut tdis = self.pool.vec(s.num_nodes);
                tdis.resize(s.num_nodes, T::zero());
                s.rows
                    .iter()
                    .zip(&twf)
                    .for_each(|(&r, &x)| tdis[r.ix()] += x);
                let half = T::cst(-0.5);
                for i in 0..s.num_nodes {
                    tdis[i] = if deg[i] == T::zero() {
                        T::zero()
                    } else {
                        half * dis[i] * dis[i] * dis[i] * tdis[i]
                    };
                }
                for k in 0..wf.len() {
                    let (r, c) = (s.rows[k].ix(), s.cols[k].ix());
                    tv[s.entry[k]] += tdis[r] * wf[k] * dis[c]
                        + dis[r] * twf[k] * dis[c]
                        + dis[r] * wf[k] * tdis[c];
                }
                self.pool.give_vec(tdis);
            } else {
                for (k, &x) in twf.iter().enumerate() {
                    tv[s.entry[k]] += x;
                }
            }
            self.pool.give_vec(twf);
            tan = Tan::Own(t);
        }
        let rec = Rec {
            kind: Kind::SymNorm(s.keep()),
            inputs: smallvec::smallvec![iw],
            prepared,
        };
        Ok(self.push(out, tracked, Op::Coo(rec), tan))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The unrolled, dispatched kernels give the bits of the plain loops of the
    /// definition, for every width per group around the unrolled ones, both element
    /// types and both index types.
    #[test]
    fn kernels_equal_the_plain_loops_bit_for_bit() {
        fn check<T: Element>() {
            let (n, m, k) = (9, 7, 40);
            let rows: Vec<usize> = (0..k).map(|i| (i * 5 + 3) % n).collect();
            let cols: Vec<usize> = (0..k).map(|i| (i * 7 + 1) % m).collect();
            let narrow = |v: &[usize]| -> Vec<u32> { v.iter().map(|&i| i as u32).collect() };
            let (rows32, cols32) = (narrow(&rows), narrow(&cols));
            let val = |i: usize| T::cst(((i as f64) * 0.731).sin() * 1.7);
            for groups in [1, 2, 3] {
                for c in 0..=17 {
                    let f = groups * c;
                    let v: Vec<T> = (0..k * groups).map(val).collect();
                    let x: Vec<T> = (0..m * f).map(|i| val(i + 1000)).collect();
                    let g: Vec<T> = (0..n * f).map(|i| val(i + 7000)).collect();
                    let mut got = vec![T::zero(); n * f];
                    spmm_into((&rows, &cols, groups), &v, &x, f, &mut got);
                    let mut want = vec![T::zero(); n * f];
                    for e in 0..k {
                        for q in 0..groups {
                            for j in 0..c {
                                let w = v[e * groups + q];
                                want[rows[e] * f + q * c + j] += w * x[cols[e] * f + q * c + j];
                            }
                        }
                    }
                    assert_eq!(got, want, "spmm, groups {groups}, c {c}");
                    let mut got32 = vec![T::zero(); n * f];
                    spmm_into((&rows32, &cols32, groups), &v, &x, f, &mut got32);
                    assert_eq!(got32, want, "spmm (u32), groups {groups}, c {c}");
                    let mut got = vec![T::zero(); k * groups];
                    values_adjoint((&rows, &cols, groups), &g, &x, f, &mut got);
                    let mut want = vec![T::zero(); k * groups];
                    for e in 0..k {
                        for q in 0..groups {
                            let mut acc = T::zero();
                            for j in 0..c {
                                acc += g[rows[e] * f + q * c + j] * x[cols[e] * f + q * c + j];
                            }
                            want[e * groups + q] += acc;
                        }
                    }
                    assert_eq!(got, want, "values adjoint, groups {groups}, c {c}");
                    let mut got32 = vec![T::zero(); k * groups];
                    values_adjoint((&rows32, &cols32, groups), &g, &x, f, &mut got32);
                    assert_eq!(got32, want, "values adjoint (u32), groups {groups}, c {c}");
                }
            }
        }
        check::<f32>();
        check::<f64>();
    }
}
