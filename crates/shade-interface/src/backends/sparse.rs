//! [`AutoSparse`]: sparse Jacobians of two-argument functions by sparsity detection,
//! greedy column colouring and compressed forward evaluation.
//!
//! At preparation the function is evaluated once with the core's sparsity tracer
//! ([`Tracer`], a number that carries the set of inputs it depends on; the pattern is
//! the *local* one at the preparation point, control flow following the values). Columns that share no row
//! get one colour; each call then runs one pushforward of the inner backend per colour
//! (seed = the sum of the colour's unit vectors) and scatters the compressed columns
//! into the Jacobian: `k` pushforwards instead of `n`.

use crate::backend::Backend;
use crate::context::Contexts;
use crate::error::InterfaceResult;
use crate::explain::Report;
use crate::form::{TwoArg, VecForm};
use crate::ops::{JacobianBackend, PushforwardBackend};
use crate::prep::{Meta, PrepareBackend};
use bumpalo::Bump;
use shade_autodiff::scalar::{Tracer, trace_sparsity};

/// The marker, also at its former path `shade_interface::sparse::AutoSparse`.
pub use crate::backend::AutoSparse;

/// The detected pattern and its colouring.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pattern {
    /// Number of outputs.
    pub m: usize,
    /// Number of inputs.
    pub n: usize,
    /// Nonzeros `(row, column)`, grouped by the column's colour.
    pub entries: Vec<(u32, u32)>,
    /// `entries[starts[c]..starts[c + 1]]` are the nonzeros of colour `c`.
    pub starts: Vec<usize>,
    /// Colour of each column.
    pub colour: Vec<u32>,
}

impl Pattern {
    /// Number of colours (pushforwards per Jacobian).
    pub fn colours(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    /// Greedy distance-1 colouring of the columns of the pattern `nz`.
    fn colour(m: usize, n: usize, nz: &[(u32, u32)]) -> Pattern {
        let mut cols_of_row = vec![Vec::new(); m];
        let mut rows_of_col = vec![Vec::new(); n];
        for &(i, j) in nz {
            cols_of_row[i as usize].push(j);
            rows_of_col[j as usize].push(i);
        }
        let mut colour = vec![u32::MAX; n];
        let mut forbidden: Vec<usize> = Vec::new();
        for j in 0..n {
            for &r in &rows_of_col[j] {
                for &k in &cols_of_row[r as usize] {
                    let c = colour[k as usize];
                    if c != u32::MAX {
                        if forbidden.len() <= c as usize {
                            forbidden.resize(c as usize + 1, usize::MAX);
                        }
                        forbidden[c as usize] = j;
                    }
                }
            }
            colour[j] = (0..)
                .find(|&c| forbidden.get(c as usize) != Some(&j))
                .unwrap_or(0);
        }
        let k = colour.iter().map(|&c| c as usize + 1).max().unwrap_or(0);
        let mut entries = nz.to_vec();
        entries.sort_by_key(|&(i, j)| (colour[j as usize], j, i));
        let mut starts = vec![0; k + 1];
        for &(_, j) in &entries {
            starts[colour[j as usize] as usize + 1] += 1;
        }
        for c in 0..k {
            starts[c + 1] += starts[c];
        }
        Pattern {
            m,
            n,
            entries,
            starts,
            colour,
        }
    }
}

/// Prepared state of [`AutoSparse`].
#[derive(Debug)]
pub struct SparseState<S> {
    inner: S,
    pattern: Pattern,
    seed: Vec<f64>,
    dy: Vec<f64>,
}

impl<S> SparseState<S> {
    /// The detected pattern.
    pub fn pattern(&self) -> &Pattern {
        &self.pattern
    }
}

/// Preparation traces the pattern at `x` and colours it; the inner backend's state
/// does the pushforwards.
impl<F, C, B> PrepareBackend<TwoArg<F>, C> for AutoSparse<B>
where
    TwoArg<F>: VecForm<C>,
    B: PushforwardBackend<TwoArg<F>, C>,
    C: Contexts,
{
    type State = SparseState<B::State>;
    fn contexts(ctx: &C) -> &impl Contexts {
        ctx
    }

    fn prepare(
        &self,
        f: &TwoArg<F>,
        x: &[f64],
        ctx: &C,
        meta: &Meta,
    ) -> InterfaceResult<Self::State> {
        let (m, n) = (f.m, x.len());
        // The core's sparsity tracer, evaluated once at `x`.
        let nz: Vec<(u32, u32)> = trace_sparsity(|| {
            let xs: Vec<Tracer> = (0u32..).zip(x).map(|(i, &v)| Tracer::input(v, i)).collect();
            let mut ys = vec![Tracer::default(); m];
            f.eval::<Tracer>(&xs, ctx, &Bump::new(), &mut ys);
            (0u32..)
                .zip(&ys)
                .flat_map(|(i, y)| y.inputs().into_iter().map(move |j| (i, j)))
                .collect()
        });
        Ok(SparseState {
            inner: self.inner.prepare(f, x, ctx, meta)?,
            pattern: Pattern::colour(m, n, &nz),
            seed: vec![0.0; n],
            dy: vec![0.0; m],
        })
    }

    fn footprint(&self, st: &Self::State) -> Option<usize> {
        self.inner.footprint(&st.inner)
    }

    fn explain(&self, st: &Self::State, meta: &Meta) -> Report {
        let mut r = self.inner.explain(&st.inner, meta);
        let k = st.pattern.colours();
        r.backend = self.name();
        r.path = crate::explain::PathKind::Generic;
        r.detail = format!(
            "sparse: {} nonzeros (local pattern at the preparation point), {k} colours: {k} pushforwards instead of {}; each: {}",
            st.pattern.entries.len(),
            meta.n,
            r.detail
        );
        r.calls = k.max(1);
        r.reserved_bytes +=
            8 * (st.pattern.entries.len() + st.seed.len() + st.dy.len() + st.pattern.colour.len());
        r
    }
}

impl<F, C, B> JacobianBackend<TwoArg<F>, C> for AutoSparse<B>
where
    TwoArg<F>: VecForm<C>,
    B: PushforwardBackend<TwoArg<F>, C>,
    C: Contexts,
{
    fn value_and_jacobian_into(
        &self,
        st: &mut Self::State,
        f: &TwoArg<F>,
        x: &[f64],
        ctx: &C,
        y: &mut [f64],
        jac: &mut [f64],
    ) -> InterfaceResult<()> {
        let n = x.len();
        jac.fill(0.0);
        let p = &st.pattern;
        // One pushforward per colour; with no colour (no dependence on x) one with a zero
        // seed all the same, for the value.
        for c in 0..p.colours().max(1) {
            let scatter = c < p.colours();
            for (s, &col) in st.seed.iter_mut().zip(&p.colour) {
                *s = if scatter && col as usize == c {
                    1.0
                } else {
                    0.0
                };
            }
            self.inner.value_and_pushforward_into(
                &mut st.inner,
                f,
                x,
                &st.seed,
                ctx,
                y,
                &mut st.dy,
            )?;
            if scatter {
                for &(i, j) in &p.entries[p.starts[c]..p.starts[c + 1]] {
                    jac[i as usize * n + j as usize] = st.dy[i as usize];
                }
            }
        }
        Ok(())
    }
}
