//! Calls of other functions in reverse mode. The forward sweep calls the primal; the
//! reverse sweep calls the callee's internal reverse function
//! (`__shade_rev_<g>_<pattern>`, emitted by `g`'s own attribute), which runs `g`'s
//! forward and reverse sweeps again: only one call's intermediates are alive at a
//! time, so a sum over independent terms keeps one term's intermediates.
//!
//! Buffers the call may overwrite (`&mut` arguments the reverse sweep needs) are saved
//! before it and restored around the reverse call.

use super::{Keep, Rev};
use crate::analysis::{Shape, all_reads, base_name};
use crate::error::Result;
use crate::expr::adj_ident;
use crate::ir::Call;
use crate::sig::internal_name;
use proc_macro2::TokenStream;
use quote::quote;
use syn::{Expr, Ident};

/// How an argument is passed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A buffer with a shadow.
    Dup,
    /// An active scalar whose adjoint comes back.
    Active,
    Const,
}

impl Rev<'_> {
    fn kind(&self, a: &Expr) -> Kind {
        if self.info.is_buffer_arg(a) {
            match base_name(a) {
                Some(b) if self.info.is_active(&b) => Kind::Dup,
                _ => Kind::Const,
            }
        } else if self.info.expr_active(a) {
            Kind::Active
        } else {
            Kind::Const
        }
    }

    /// Arguments whose buffer the call may overwrite and the reverse sweep needs back.
    fn snapshots(&self, c: &Call) -> Vec<(TokenStream, TokenStream, bool)> {
        let mut v = Vec::new();
        for a in &c.args {
            let (inner, base) = match a {
                Expr::Reference(r) if r.mutability.is_some() => (&*r.expr, base_name(&r.expr)),
                Expr::Path(_) if self.info.is_buffer_arg(a) && self.mutable_param(a) => {
                    (a, base_name(a))
                }
                _ => continue,
            };
            let Some(base) = base else { continue };
            if !(self.info.is_active(&base) || self.r.contains(&base)) {
                continue;
            }
            let scalar = matches!(self.info.shape(&base), Shape::Scalar | Shape::ParamRef);
            let place = match (scalar, inner) {
                (true, Expr::Path(_)) if self.info.shape(&base) == Shape::ParamRef => {
                    quote!(*#inner)
                }
                (true, _) => quote!(#inner),
                (false, _) => quote!((#inner)[..]),
            };
            v.push((place, quote!(#inner), scalar));
        }
        v
    }

    fn mutable_param(&self, a: &Expr) -> bool {
        let Some(b) = base_name(a) else { return false };
        self.sig.params.iter().any(|p| {
            p.name == b
                && matches!(
                    p.class,
                    crate::sig::Class::Array { mutable: true, .. }
                        | crate::sig::Class::ScalarRef { mutable: true, .. }
                )
        })
    }

    fn save_all(snaps: &[(TokenStream, TokenStream, bool)]) -> TokenStream {
        let s = snaps.iter().map(|(place, _, scalar)| {
            if *scalar {
                quote!(::shade_autodiff::compiled::Save::save(#place, __ws);)
            } else {
                quote!(::shade_autodiff::compiled::save_slice(__ws, &#place);)
            }
        });
        quote!(#(#s)*)
    }

    fn restore_all(snaps: &[(TokenStream, TokenStream, bool)]) -> TokenStream {
        let s = snaps.iter().rev().map(|(place, _, scalar)| {
            if *scalar {
                quote!(#place = ::shade_autodiff::compiled::Save::restore(__ws);)
            } else {
                quote!(::shade_autodiff::compiled::restore_slice(__ws, &mut #place);)
            }
        });
        quote!(#(#s)*)
    }

    fn pattern(&self, c: &Call, result: Option<&Ident>) -> String {
        let mut p: String = c
            .args
            .iter()
            .map(|a| match self.kind(a) {
                Kind::Dup => 'D',
                Kind::Active => 'A',
                Kind::Const => 'C',
            })
            .collect();
        p.push(if result.is_some_and(|r| self.active(r)) {
            'A'
        } else {
            'C'
        });
        p
    }

    pub(super) fn call_has_rev(&self, c: &Call, result: Option<&Ident>) -> bool {
        self.pattern(c, result).chars().any(|ch| ch != 'C') || !self.snapshots(c).is_empty()
    }

    /// The primal call, with the snapshots its reverse needs.
    pub(super) fn fwd_call(&mut self, c: &Call) -> Result<TokenStream> {
        let snaps = self.snapshots(c);
        for (place, _, _) in &snaps {
            let e: Expr = syn::parse2(place.clone()).expect("a place");
            self.read(&e);
        }
        let save = Self::save_all(&snaps);
        let (callee, args) = (&c.callee, &c.args);
        Ok(if snaps.is_empty() {
            quote!(#callee(#(#args),*))
        } else {
            quote!({ #save #callee(#(#args),*) })
        })
    }

    /// The reverse of the call (`result`: the `let` that holds its value).
    pub(super) fn rev_call(
        &mut self,
        c: &Call,
        result: Option<&Ident>,
        defer: bool,
    ) -> Result<TokenStream> {
        let f = self.float();
        let snaps = self.snapshots(c);
        let pattern = self.pattern(c, result);
        if !pattern.chars().any(|ch| ch != 'C') {
            return Ok(Self::restore_all(&snaps));
        }
        for a in &c.args {
            self.read_names(all_reads(a));
        }
        let mut callee = c.callee.clone();
        let last = callee.segments.last_mut().expect("a path");
        last.ident = internal_name("rev", &last.ident, &pattern, 1);
        let mut args = Vec::new();
        let mut actives = Vec::new();
        for a in &c.args {
            args.push(quote!(#a));
            match self.kind(a) {
                Kind::Dup => args.push(shadow_of(a)),
                Kind::Active => actives.push(a.clone()),
                Kind::Const => {}
            }
        }
        let res_active = result.is_some_and(|r| self.active(r));
        let seed = match result {
            Some(r) if res_active => {
                let d = adj_ident(r);
                quote!(#d,)
            }
            _ => quote!(),
        };
        let zero = match result {
            Some(r) if res_active => {
                let d = adj_ident(r);
                quote!(#d = 0.0;)
            }
            _ => quote!(),
        };
        let mut props = Vec::new();
        for (j, a) in actives.iter().enumerate() {
            let k = syn::Index::from(j + 1);
            let body = self.prop(a, quote!(__a), c.span)?;
            props.push(quote!({ let __a: #f = __r.#k; #body }));
        }
        let (restore, save) = (Self::restore_all(&snaps), Self::save_all(&snaps));
        let (peek, pop) = if snaps.is_empty() {
            (quote!(), quote!())
        } else {
            (quote!(#restore #save), restore.clone())
        };
        let _ = Keep::Plain;
        let add = defer.then(|| quote!(__deferred += __r.0;));
        Ok(quote!({
            #peek
            let __r = #callee(__ws, #(#args,)* #seed false);
            #add
            #pop
            #zero
            #(#props)*
        }))
    }
}

/// The shadow passed for a buffer argument: `&x[a..b]` → `&mut __d_x[a..b]`, a
/// parameter `x` → `&mut *__d_x`.
fn shadow_of(a: &Expr) -> TokenStream {
    fn subst(e: &Expr) -> TokenStream {
        match e {
            Expr::Path(p) => {
                let id = p.path.get_ident().expect("a variable");
                let d = adj_ident(id);
                quote!(#d)
            }
            Expr::Index(i) => {
                let (b, idx) = (subst(&i.expr), &i.index);
                quote!(#b[#idx])
            }
            Expr::Paren(p) => subst(&p.expr),
            Expr::Unary(u) => subst(&u.expr),
            other => quote!(#other),
        }
    }
    match a {
        Expr::Reference(r) => {
            let inner = subst(&r.expr);
            quote!(&mut #inner)
        }
        Expr::Paren(p) => shadow_of(&p.expr),
        other => {
            let inner = subst(other);
            quote!(&mut *#inner)
        }
    }
}
