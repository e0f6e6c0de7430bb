//! Recording of the fused n-ary helpers of [`Real`] (`dot`, `sum_sq`, linear
//! combinations) on [`Var`]s: one record for the
//! whole operation, operand lists stored as ranges when contiguous (see [`sweep`] for the
//! layouts).

use super::{RECORDED, SHIFTED, Trace, TraceData, Var, sweep};
use crate::scalar::real::Real;

impl<T: Real> TraceData<T> {
    /// Pushes the operand list of `xs` for a kind whose sweep reads the operands' values
    /// from `vals`: a range if all are recorded, unshifted and contiguous (`[first]`,
    /// returns `true`), else their indices, with constants materialised as leaves and
    /// shifted entries as copies so that the sweep finds their values (returns `false`).
    ///
    /// Copies push operands of their own before the list: a record may use this for its
    /// first list only (later lists go through [`Self::operands_with_values`]).
    #[inline]
    fn operands(&mut self, xs: &[Var<'_, T>]) -> bool {
        let Some(first) = xs.first() else {
            return false;
        };
        // One branch-free pass for the checks, one copy of the indices.
        let i0 = first.idx;
        let (mut state, mut contiguous) = (RECORDED, true);
        for (k, x) in xs.iter().enumerate() {
            state |= x.state;
            contiguous &= x.idx == i0.wrapping_add(k as u32);
        }
        if state == RECORDED {
            if contiguous {
                self.args.push(i0);
            } else {
                self.args.extend(xs.iter().map(|x| x.idx));
            }
            return contiguous;
        }
        let mut list = core::mem::take(&mut self.scratch);
        list.clear();
        for x in xs {
            // On overflow the recording is discarded: any index will do.
            let i = match x.tape {
                Some(_) if x.state == SHIFTED => {
                    self.args.push(x.idx);
                    self.record(sweep::COPY, x.v).unwrap_or(0)
                }
                Some(_) => x.idx,
                None => self.record(sweep::LEAF, x.v).unwrap_or(0),
            };
            list.push(i);
        }
        self.args.extend_from_slice(&list);
        self.scratch = list;
        false
    }

    /// Pushes one term of a `LINEAR` record if `x` is recorded.
    #[inline(always)]
    pub(super) fn term(&mut self, x: &Var<'_, T>, p: T, len: &mut u32) {
        if x.tape.is_some() {
            self.args.push(x.idx);
            self.parts.push(p);
            *len += 1;
        }
    }

    /// Closes a `LINEAR` record of `len` terms with value `v`.
    #[inline(always)]
    pub(super) fn linear(&mut self, len: u32, v: T) -> Option<u32> {
        self.args.push(len);
        self.record(sweep::LINEAR, v)
    }
}

impl<T: Real> Trace<T> {
    /// Records `f` with value `v` and partials `p` for the recorded entries of `x`.
    pub(super) fn linear(
        &self,
        x: &[Var<'_, T>],
        p: impl Fn(&Var<'_, T>) -> T,
        v: T,
    ) -> Var<'_, T> {
        let mut d = self.data.borrow_mut();
        let mut len = 0u32;
        for xi in x {
            d.term(xi, p(xi), &mut len);
        }
        let i = d.linear(len, v);
        drop(d);
        self.wrap(i, v)
    }

    /// Records `Σ a_i b_i` over the common length (`n > 0`, both sides recorded).
    pub(super) fn dot(&self, a: &[Var<'_, T>], b: &[Var<'_, T>]) -> Var<'_, T> {
        let n = a.len().min(b.len());
        let (a, b) = (&a[..n], &b[..n]);
        let mut v = T::zero();
        for (x, y) in a.iter().zip(b) {
            v += x.v * y.v;
        }
        let mut d = self.data.borrow_mut();
        let i = if a.iter().chain(b).any(|x| x.state == SHIFTED) {
            // Operand values are not all in `vals`: store the partials.
            let mut len = 0u32;
            for (x, y) in a.iter().zip(b) {
                d.term(x, y.v, &mut len);
                d.term(y, x.v, &mut len);
            }
            d.linear(len, v)
        } else {
            let fa = d.operands(a);
            let fb = d.operands(b);
            d.args
                .extend_from_slice(&[u32::from(fa) | u32::from(fb) << 1, n as u32]);
            d.record(sweep::DOT, v)
        };
        drop(d);
        self.wrap(i, v)
    }

    /// Records `Σ a_i²` (`a` non-empty, some entry recorded).
    pub(super) fn sum_sq(&self, a: &[Var<'_, T>]) -> Var<'_, T> {
        let mut v = T::zero();
        for x in a {
            v += x.v * x.v;
        }
        if a.iter().any(|x| x.state == SHIFTED) {
            return self.linear(a, |x| x.v + x.v, v);
        }
        let mut d = self.data.borrow_mut();
        let fa = d.operands(a);
        d.args.extend_from_slice(&[u32::from(fa), a.len() as u32]);
        let i = d.record(sweep::SUM_SQ, v);
        drop(d);
        self.wrap(i, v)
    }
}
