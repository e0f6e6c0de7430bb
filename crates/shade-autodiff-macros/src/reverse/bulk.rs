//! Loops that overwrite a whole range of an array, one element per iteration
//! (`for j in 0..d { xc[j] = xi[j] - mu[c * d + j]; }`), save the range once before
//! the loop (one copy onto the workspace) instead of one element per iteration, and
//! the reverse sweep restores it once after the loop's reverse.
//!
//! Sound when the loop writes the array only there, at the loop variable, and reads it
//! nowhere: element `j` then holds its value from before the loop until iteration `j`
//! overwrites it, and no reverse code of the loop reads the array.

use super::Rev;
use super::tbr::addr;
use crate::analysis::{Shape, writes};
use crate::ir::{Body, Op, Stmt};
use proc_macro2::TokenStream;
use quote::quote;
use std::collections::HashSet;
use syn::{Expr, Ident};

/// One array saved as a whole around a loop.
pub(super) struct Bulk {
    /// The assignment whose per-iteration save it replaces.
    pub(super) stmt: usize,
    array: Ident,
    lo: Expr,
    hi: Expr,
    inclusive: bool,
}

impl Bulk {
    /// `f(range)` for the loop's range of the array, if the loop runs at all (the
    /// bounds are evaluated first: `&mut x[0..x.len()]` would borrow `x` twice).
    fn around(&self, f: impl Fn(TokenStream) -> TokenStream) -> TokenStream {
        let (x, lo, hi) = (&self.array, &self.lo, &self.hi);
        let (range, runs) = if self.inclusive {
            (quote!(__lo..=__hi), quote!(__lo <= __hi))
        } else {
            (quote!(__lo..__hi), quote!(__lo < __hi))
        };
        let body = f(quote!(#x[#range]));
        quote!({
            let (__lo, __hi) = (#lo, #hi);
            if #runs { #body }
        })
    }
}

impl Rev<'_> {
    /// The arrays the loop `for var in lo..hi { body }` saves as a whole.
    pub(super) fn bulk_saves(
        &self,
        var: &Ident,
        (lo, hi, inclusive): (&Expr, &Expr, bool),
        body: &Body,
    ) -> Vec<Bulk> {
        if !body.breaks.is_empty() || body.segs.len() != 1 {
            return Vec::new();
        }
        let stmts = &body.segs[0];
        let mut out = Vec::new();
        for s in stmts {
            let Stmt::Assign {
                place, op: Op::Set, ..
            } = s
            else {
                continue;
            };
            let x = &place.base;
            let at_var = matches!(place.index.as_slice(), [Expr::Path(p)] if p.path.is_ident(var));
            let sliceable = matches!(
                self.info.shape(&x.to_string()),
                Shape::ParamArray | Shape::Vec | Shape::Array
            );
            if place.deref || !at_var || !sliceable || !self.saves(s, x) {
                continue;
            }
            let name = x.to_string();
            let written_elsewhere = stmts.iter().filter(|t| addr(t) != addr(s)).any(|t| {
                let mut w = HashSet::new();
                writes(std::slice::from_ref(t), self.func, &mut w);
                w.contains(&name)
            });
            if written_elsewhere || self.reads_of(stmts, &name) != 0 {
                continue;
            }
            out.push(Bulk {
                stmt: addr(s),
                array: x.clone(),
                lo: lo.clone(),
                hi: hi.clone(),
                inclusive,
            });
        }
        out
    }
}

/// The saves before the loop, in order.
pub(super) fn save(bulks: &[Bulk]) -> TokenStream {
    let s = bulks
        .iter()
        .map(|b| b.around(|r| quote!(::shade_autodiff::compiled::save_slice(__ws, &#r);)));
    quote!(#(#s)*)
}

/// The restores after the loop's reverse, in the opposite order.
pub(super) fn restore(bulks: &[Bulk]) -> TokenStream {
    let s = bulks
        .iter()
        .rev()
        .map(|b| b.around(|r| quote!(::shade_autodiff::compiled::restore_slice(__ws, &mut #r);)));
    quote!(#(#s)*)
}
