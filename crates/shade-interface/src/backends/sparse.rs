//! [`AutoSparse`]: sparse Jacobians and Hessians by sparsity detection, colouring,
//! batched compressed products and decompression into an sprs [`CsMat<f64>`].
//!
//! At preparation the function is evaluated once with the core's sparsity tracer
//! (`Tracer`: a number carrying the set of inputs it depends on; the pattern is the
//! *local* one at the preparation point, control flow following the values):
//!
//! - **Jacobians** (two-argument functions, and one-argument functions returning a
//!   vector): both the columns and the rows are coloured
//!   greedily (items that share no entry share a colour); the orientation with fewer
//!   colours wins (columns on a tie, or when the inner backend's pullbacks are not
//!   native). Each call then runs one *batched* pushforward (columns) or pullback (rows)
//!   of the inner backend per group of up to 8 colours, the seeds being the sums of each
//!   colour's unit vectors, and gathers the compressed products into the Jacobian's
//!   values: `k` directions instead of `n` (or `m`).
//! - **Hessians** (one-argument functions, inner backend with Hessian-vector products,
//!   e.g. `SecondOrder { outer: AutoShade::FORWARD, inner: AutoShade::REVERSE }`): the
//!   pattern comes from a reverse sweep over a tape of tracers; a star colouring of the
//!   symmetric pattern gives `k` directions whose batched Hessian-vector products hold
//!   every entry directly (each read from the product of the colour of its row's or
//!   its column's unique neighbour).
//!
//! The pattern ([`Prepared::sparsity`]) and the colouring ([`Prepared::colouring`]) are
//! reachable from the preparation, and its report says how many colours, in which
//! orientation, and how many inner calls.
//!
//! ```
//! use shade_interface::sprs::CsMat;
//! use shade_interface::{AutoShade, AutoSparse, Orientation, Real, prepare_jacobian_inplace, shade_fn};
//!
//! /// A tridiagonal Jacobian.
//! fn band<S: Real>(y: &mut [S], x: &[S]) {
//!     let n = x.len();
//!     for i in 0..n {
//!         y[i] = x[i] * x[i];
//!         if i > 0 { y[i] += x[i - 1].sin(); }
//!         if i + 1 < n { y[i] -= x[i + 1]; }
//!     }
//! }
//! let x = vec![0.5; 100];
//! let sparse = AutoSparse { inner: AutoShade::FORWARD };
//! let mut prep = prepare_jacobian_inplace(shade_fn!(band(&mut [S], &[S])), &[0.0; 100], &sparse, &x, ())?;
//! assert_eq!(prep.sparsity().nnz(), 298);
//! assert_eq!((prep.colouring().count, prep.colouring().orientation), (3, Orientation::Columns));
//! let j: CsMat<f64> = prep.jacobian(&x, ())?;
//! assert_eq!(j.get(1, 0), Some(&0.5f64.cos()));
//! assert_eq!(j.get(1, 1), Some(&1.0));
//! assert_eq!(j.get(1, 2), Some(&-1.0));
//! # Ok::<(), shade_interface::InterfaceError>(())
//! ```

mod colour;

use crate::backend::{Backend, Operator, Support};
use crate::context::Contexts;
use crate::error::{InterfaceError, InterfaceResult};
use crate::explain::{PathKind, Report};
use crate::form::{OneArg, OneArgVec, Tail, TwoArg, VecForm};
use crate::ops::{
    HessianBackend, HvpBackend, JacobianBackend, PullbackBackend, PushforwardBackend, op_fn,
};
use crate::prep::{Meta, PrepareBackend, Prepared};
use shade_autodiff::scalar::{CHUNK, ConstArgs, IndexSet, Join, ScalarFn, Slice, hessian_sparsity};
use sprs::CsMat;

/// The marker, also at its former path `shade_interface::sparse::AutoSparse`.
pub use crate::backend::AutoSparse;

/// Which way a colouring compresses the matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Orientation {
    /// Columns coloured: one pushforward per colour (`J S`).
    Columns,
    /// Rows coloured: one pullback per colour (`Sᵀ J`).
    Rows,
    /// A star colouring of a symmetric (Hessian) pattern: one Hessian-vector product
    /// per colour.
    Star,
}

impl Orientation {
    fn word(self) -> &'static str {
        match self {
            Orientation::Columns => "column",
            Orientation::Rows => "row",
            Orientation::Star => "star",
        }
    }
}

/// The colouring of a detected pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Colouring {
    /// Columns, rows, or a star colouring.
    pub orientation: Orientation,
    /// The colour of each column (`Columns`, `Star`) or row (`Rows`); `u32::MAX` for one
    /// without a nonzero (it needs no colour).
    pub colours: Vec<u32>,
    /// The number of colours: directions per call.
    pub count: usize,
    /// For a Jacobian, the number of colours of the other orientation (how many
    /// directions it would have taken).
    pub other: Option<usize>,
}

/// Number of inner calls for `k` directions batched by up to [`CHUNK`].
fn groups(k: usize) -> usize {
    k.div_ceil(CHUNK).max(1)
}

/// Prepared state of [`AutoSparse`].
#[derive(Debug)]
pub struct SparseState<S> {
    inner: S,
    /// The pattern (ones at the structural nonzeros), CSR.
    pattern: CsMat<f64>,
    colouring: Colouring,
    /// The items (columns or rows) of each colour, grouped: `members[mstart[c]..mstart[c + 1]]`.
    members: Vec<u32>,
    mstart: Vec<usize>,
    /// `(value index, position in the colour's product)` of every nonzero, grouped by
    /// colour: `scatter[sstart[c]..sstart[c + 1]]`.
    scatter: Vec<(usize, usize)>,
    sstart: Vec<usize>,
    /// Length of a seed and of a product.
    seed_len: usize,
    out_len: usize,
    /// Up to [`CHUNK`] stacked seeds and products.
    seeds: Vec<f64>,
    outs: Vec<f64>,
    /// A zero direction (the value variant of the Hessian).
    zero_v: Vec<f64>,
}

impl<S> SparseState<S> {
    /// The detected pattern: `m × n` (Jacobian) or `n × n` (Hessian), ones at the
    /// structural nonzeros.
    pub fn sparsity(&self) -> &CsMat<f64> {
        &self.pattern
    }

    /// The colouring of the pattern.
    pub fn colouring(&self) -> &Colouring {
        &self.colouring
    }

    /// Builds the state for `rows` (the pattern's rows, sorted), `shape`, the colours
    /// of the items of `orientation`, and where each nonzero is read from.
    fn new(
        inner: S,
        rows: &[IndexSet],
        (m, n): (usize, usize),
        colouring: Colouring,
        source: impl Fn(usize, usize) -> (u32, usize),
    ) -> Self {
        let k = colouring.count;
        let mut indptr = Vec::with_capacity(m + 1);
        indptr.push(0);
        let mut indices = Vec::new();
        for r in rows {
            indices.extend(r.iter().map(|&j| j as usize));
            indptr.push(indices.len());
        }
        let nnz = indices.len();
        // Nonzeros grouped by the colour they are read from.
        let mut tagged: Vec<(u32, usize, usize)> = Vec::with_capacity(nnz);
        for (i, r) in rows.iter().enumerate() {
            for (p, &j) in (indptr[i]..).zip(r.iter()) {
                let (c, pos) = source(i, j as usize);
                tagged.push((c, p, pos));
            }
        }
        tagged.sort_unstable_by_key(|t| t.0);
        let mut sstart = vec![0; k + 1];
        for t in &tagged {
            sstart[t.0 as usize + 1] += 1;
        }
        for c in 0..k {
            sstart[c + 1] += sstart[c];
        }
        let scatter = tagged.iter().map(|&(_, p, pos)| (p, pos)).collect();
        let mut order: Vec<u32> = (0..colouring.colours.len() as u32)
            .filter(|&i| colouring.colours[i as usize] != colour::NONE)
            .collect();
        order.sort_by_key(|&i| colouring.colours[i as usize]);
        let mut mstart = vec![0; k + 1];
        for &c in colouring.colours.iter().filter(|&&c| c != colour::NONE) {
            mstart[c as usize + 1] += 1;
        }
        for c in 0..k {
            mstart[c + 1] += mstart[c];
        }
        let (seed_len, out_len) = match colouring.orientation {
            Orientation::Columns => (n, m),
            Orientation::Rows => (m, n),
            Orientation::Star => (n, n),
        };
        let w = k.min(CHUNK);
        SparseState {
            inner,
            pattern: CsMat::new((m, n), indptr, indices, vec![1.0; nnz]),
            colouring,
            members: order,
            mstart,
            scatter,
            sstart,
            seed_len,
            out_len,
            seeds: vec![0.0; w * seed_len],
            outs: vec![0.0; w * out_len],
            zero_v: Vec::new(),
        }
    }

    /// For each group of up to [`CHUNK`] colours: writes the group's seeds, runs
    /// `product(seeds, outs)` and gathers the products into `values`.
    fn run(
        &mut self,
        values: &mut [f64],
        mut product: impl FnMut(&mut S, &[f64], &mut [f64]) -> InterfaceResult<()>,
    ) -> InterfaceResult<()> {
        let k = self.colouring.count;
        let (sl, ol) = (self.seed_len, self.out_len);
        for g in (0..k).step_by(CHUNK) {
            let w = (k - g).min(CHUNK);
            let seeds = &mut self.seeds[..w * sl];
            seeds.fill(0.0);
            for c in g..g + w {
                for &item in &self.members[self.mstart[c]..self.mstart[c + 1]] {
                    seeds[(c - g) * sl + item as usize] = 1.0;
                }
            }
            let outs = &mut self.outs[..w * ol];
            product(&mut self.inner, seeds, outs)?;
            for c in g..g + w {
                for &(p, pos) in &self.scatter[self.sstart[c]..self.sstart[c + 1]] {
                    values[p] = outs[(c - g) * ol + pos];
                }
            }
        }
        Ok(())
    }

    /// Checks that `mat` has the prepared shape and pattern.
    fn check(
        &self,
        operator: &'static str,
        what: &'static str,
        mat: &CsMat<f64>,
    ) -> InterfaceResult<()> {
        let p = &self.pattern;
        let same = mat.shape() == p.shape()
            && mat.is_csr()
            && mat.indptr().raw_storage() == p.indptr().raw_storage()
            && mat.indices() == p.indices();
        if same {
            return Ok(());
        }
        Err(InterfaceError::SparsityMismatch {
            operator,
            argument: what,
            expected: (p.rows(), p.cols(), p.nnz()),
            found: (mat.rows(), mat.cols(), mat.nnz()),
        })
    }

    /// A zero matrix with the pattern.
    fn zeros(&self) -> CsMat<f64> {
        let mut z = self.pattern.clone();
        z.data_mut().fill(0.0);
        z
    }

    fn report(&self, mut r: Report, name: String, inner: &str, meta: &Meta) -> Report {
        let (k, c) = (self.colouring.count, &self.colouring);
        let what = match c.orientation {
            Orientation::Columns => "pushforwards",
            Orientation::Rows => "pullbacks",
            Orientation::Star => "Hessian-vector products",
        };
        let other = match c.other {
            Some(o) => format!(
                " ({} colouring: {o})",
                if c.orientation == Orientation::Rows {
                    "column"
                } else {
                    "row"
                }
            ),
            None => String::new(),
        };
        let dense = match c.orientation {
            Orientation::Rows => meta.m,
            _ => meta.n,
        };
        r.backend = name;
        r.path = PathKind::Generic;
        r.detail = format!(
            "sparse: {} nonzeros (local pattern at the preparation point), {} colouring: {k} colours{other}: {} batched {what} of {inner} ({k} directions instead of {dense}); each: {}",
            self.pattern.nnz(),
            c.orientation.word(),
            groups(k),
            r.detail
        );
        r.calls = groups(k);
        r.batch = k.clamp(1, CHUNK);
        r.reserved_bytes += 8 * (self.pattern.nnz() * 4 + self.seeds.len() + self.outs.len())
            + 4 * (self.members.len() + self.colouring.colours.len());
        r
    }
}

impl<Op, V, B: Backend, S> Prepared<Op, V, AutoSparse<B>, SparseState<S>> {
    /// The detected local sparsity pattern (`m × n` for a Jacobian, `n × n` for a
    /// Hessian; ones at the structural nonzeros).
    pub fn sparsity(&self) -> &CsMat<f64> {
        self.state.sparsity()
    }

    /// The colouring: orientation, colour of each column or row, number of colours.
    pub fn colouring(&self) -> &Colouring {
        self.state.colouring()
    }
}

// ---------------------------------------------------------------- Jacobians

/// The vector-valued forms whose Jacobians `AutoSparse` compresses: the two-argument
/// form [`TwoArg`] and the one-argument [`OneArgVec`] (sealed).
pub trait JacobianForm: sealed::Sealed {}
impl<F> JacobianForm for TwoArg<F> {}
impl<F> JacobianForm for OneArgVec<F> {}

mod sealed {
    pub trait Sealed {}
    impl<F> Sealed for super::TwoArg<F> {}
    impl<F> Sealed for super::OneArgVec<F> {}
}

/// `PrepareBackend::footprint` and `explain` of both preparations (Jacobian and
/// Hessian): the inner backend's, the report extended with the pattern and colouring.
macro_rules! footprint_and_explain {
    () => {
        fn footprint(&self, st: &Self::State) -> Option<usize> {
            self.inner.footprint(&st.inner)
        }

        fn explain(&self, st: &Self::State, meta: &Meta) -> Report {
            let r = self.inner.explain(&st.inner, meta);
            st.report(r, self.name(), &self.inner.name(), meta)
        }
    };
}

/// Preparation traces the pattern at `x` (and checks the output length), colours its
/// columns and its rows, and keeps the orientation with fewer colours.
impl<V, C, B> PrepareBackend<V, C> for AutoSparse<B>
where
    V: JacobianForm + VecForm<C>,
    B: PushforwardBackend<V, C> + PullbackBackend<V, C>,
    C: Contexts,
{
    type State = SparseState<B::State>;
    op_fn!(contexts);

    fn prepare(&self, f: &V, x: &[f64], ctx: &C, meta: &Meta) -> InterfaceResult<Self::State> {
        let (m, n) = (f.outputs(), x.len());
        let rows = f.probe(x, ctx)?;
        let cols = colour::transpose(&rows, n);
        let by_col = colour::distance1(&cols, &rows);
        let by_row = colour::distance1(&rows, &cols);
        let (kc, kr) = (colour::count(&by_col), colour::count(&by_row));
        let rows_win = kr < kc && self.inner.supports(Operator::Pullback) == Support::Native;
        let colouring = if rows_win {
            Colouring {
                orientation: Orientation::Rows,
                colours: by_row,
                count: kr,
                other: Some(kc),
            }
        } else {
            Colouring {
                orientation: Orientation::Columns,
                colours: by_col,
                count: kc,
                other: Some(kr),
            }
        };
        let inner = self.inner.prepare(f, x, ctx, meta)?;
        let c = colouring.colours.clone();
        Ok(if rows_win {
            SparseState::new(inner, &rows, (m, n), colouring, |i, j| (c[i], j))
        } else {
            SparseState::new(inner, &rows, (m, n), colouring, |i, j| (c[j], i))
        })
    }

    footprint_and_explain!();
}

impl<V, C, B> JacobianBackend<V, C> for AutoSparse<B>
where
    V: JacobianForm + VecForm<C>,
    B: PushforwardBackend<V, C> + PullbackBackend<V, C>,
    C: Contexts,
{
    type Jacobian = CsMat<f64>;

    fn new_jacobian(&self, st: &Self::State, _: &Meta) -> CsMat<f64> {
        st.zeros()
    }

    fn check_jacobian(&self, st: &Self::State, _: &Meta, jac: &CsMat<f64>) -> InterfaceResult<()> {
        st.check("jacobian", "jacobian", jac)
    }

    op_fn!(value_and_jacobian_into(self, st: Self::State, f, x, ctx, y, jac: CsMat<f64>) {
        if st.colouring.count == 0 {
            // No dependence on x: one pushforward with a zero seed, for the value.
            let (seed, out) = (vec![0.0; x.len()], &mut st.outs);
            out.resize(y.len(), 0.0);
            self.inner
                .value_and_pushforward_into(&mut st.inner, f, x, &seed, ctx, y, out)?;
            return Ok(());
        }
        let rows = st.colouring.orientation == Orientation::Rows;
        st.run(jac.data_mut(), |inner, seeds, outs| {
            if rows {
                self.inner
                    .value_and_pullback_batch_into(inner, f, x, seeds, ctx, y, outs)
            } else {
                self.inner
                    .value_and_pushforward_batch_into(inner, f, x, seeds, ctx, y, outs)
            }
        })
    });
}

// ---------------------------------------------------------------- Hessians

/// Preparation traces the Hessian's pattern at `x` (reverse over tracers) and star
/// colours it.
impl<F, C, B> PrepareBackend<OneArg<F>, C> for AutoSparse<B>
where
    F: ScalarFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<Tail<F>> + Contexts,
    B: HvpBackend<F, C>,
{
    type State = SparseState<B::State>;
    op_fn!(contexts);

    op_fn!(prepare(self, f, x, ctx, meta) {
        let n = x.len();
        let rows = hessian_sparsity(&f.0, x, ctx)?;
        let colours = colour::star(&rows);
        let count = colour::count(&colours);
        let colouring = Colouring {
            orientation: Orientation::Star,
            colours: colours.clone(),
            count,
            other: None,
        };
        let inner = self.inner.prepare(f, x, ctx, meta)?;
        let mut st = SparseState::new(inner, &rows, (n, n), colouring, |i, j| {
            let (r, c) = colour::star_source(i, j, &colours, &rows[i]);
            (c, r)
        });
        st.zero_v = vec![0.0; n];
        Ok(st)
    });

    footprint_and_explain!();
}

impl<F, C, B> HessianBackend<F, C> for AutoSparse<B>
where
    F: ScalarFn,
    F::Kinds: Join<Slice>,
    C: ConstArgs<Tail<F>> + Contexts,
    B: HvpBackend<F, C>,
{
    type Hessian = CsMat<f64>;

    fn new_hessian(&self, st: &Self::State, _: &Meta) -> CsMat<f64> {
        st.zeros()
    }

    fn check_hessian(&self, st: &Self::State, _: &Meta, h: &CsMat<f64>) -> InterfaceResult<()> {
        st.check("hessian", "hessian", h)
    }

    op_fn!(hessian_into(self, st: Self::State, f, x, ctx, h: CsMat<f64>) {
        st.run(h.data_mut(), |inner, vs, hvs| {
            self.inner.hvp_batch_into(inner, f, x, vs, ctx, hvs)
        })
    });

    op_fn!(value_gradient_and_hessian_into(self, st: Self::State, f, x, ctx, g, h: CsMat<f64>) {
        self.hessian_into(st, f, x, ctx, h)?;
        // The value and the gradient: one more product, along zero.
        let zero = core::mem::take(&mut st.zero_v);
        let mut hv = core::mem::take(&mut st.outs);
        hv.resize(x.len().max(hv.len()), 0.0);
        let r = self.inner.gradient_and_hvp_into(
            &mut st.inner,
            f,
            x,
            &zero,
            ctx,
            g,
            &mut hv[..x.len()],
        );
        st.zero_v = zero;
        st.outs = hv;
        r
    });
}
