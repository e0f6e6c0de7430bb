//! The marker type's implementation of `shade_autodiff::compiled::GradientFn`
//! (reverse) or `TangentFn` (forward), when the differentiated function has the shape
//! the interface's operators take: `f(x: &[f64], c…) -> f64` with `x` differentiated
//! (`Duplicated` / `Dual`), every other parameter `Const`, the return differentiated
//! (`Active` / `Dual`) and no batch width. The implementation calls the user-facing
//! derivative, so `shade_interface::Compiled(d_f {})` runs exactly what `d_f` runs.
//!
//! The `Const` parameters' types become the trait's tuple of constants, their elided
//! lifetimes (`&T`, `'_`) one lifetime of the impl. A function of another shape, or
//! whose parameter types name a lifetime other than `'static`, gets no implementation (the interface then
//! says that the marker does not implement the trait).

use crate::sig::{Act, Class, Float, Mode, Sig};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::visit_mut::VisitMut;
use syn::{Lifetime, Type};

/// The implementation for the marker of `sig`'s derivative, or nothing.
pub(crate) fn callable(sig: &Sig) -> TokenStream {
    let Some((first, rest)) = sig.params.split_first() else {
        return quote!();
    };
    let x_slice = matches!(&first.ty, Type::Reference(r)
        if r.mutability.is_none() && matches!(&*r.elem, Type::Slice(_)));
    let (x_act, ret_act) = match sig.mode {
        Mode::Reverse => (Act::Duplicated, Act::Active),
        Mode::Forward => (Act::Dual, Act::Dual),
    };
    let fits = sig.float == Float::F64
        && sig.width == 1
        && x_slice
        && first.class
            == (Class::Array {
                mutable: false,
                float: Float::F64,
            })
        && first.act == x_act
        && sig.ret.is_some()
        && sig.ret_act == ret_act
        && rest.iter().all(|p| p.act == Act::Const);
    if !fits {
        return quote!();
    }
    let mut named = Lifetimes::default();
    let tys: Vec<Type> = rest
        .iter()
        .map(|p| {
            let mut t = p.ty.clone();
            named.visit_type_mut(&mut t);
            t
        })
        .collect();
    if named.refused {
        return quote!();
    }
    let generics = named.used.then(|| quote!(<'__shade_c>));
    let cs: Vec<_> = (0..tys.len()).map(|k| format_ident!("__c{}", k)).collect();
    let deriv = &sig.deriv;
    match sig.mode {
        Mode::Reverse => quote! {
            impl #generics ::shade_autodiff::compiled::GradientFn<(#(#tys,)*)> for #deriv {
                #[inline(always)]
                fn gradient(
                    __x: &[f64],
                    __dx: &mut [f64],
                    (#(#cs,)*): (#(#tys,)*),
                    __seed: f64,
                ) -> f64 {
                    #deriv(__x, __dx, #(#cs,)* __seed)
                }
            }
        },
        Mode::Forward => quote! {
            impl #generics ::shade_autodiff::compiled::TangentFn<(#(#tys,)*)> for #deriv {
                #[inline(always)]
                fn tangent(__x: &[f64], __dx: &[f64], (#(#cs,)*): (#(#tys,)*)) -> (f64, f64) {
                    #deriv(__x, __dx, #(#cs),*)
                }
            }
        },
    }
}

/// Gives every elided lifetime of a type the impl's lifetime; refuses named ones and
/// `impl Trait`.
#[derive(Default)]
struct Lifetimes {
    used: bool,
    refused: bool,
}

impl Lifetimes {
    fn ours() -> Lifetime {
        Lifetime::new("'__shade_c", proc_macro2::Span::call_site())
    }
}

impl VisitMut for Lifetimes {
    fn visit_type_mut(&mut self, t: &mut Type) {
        match t {
            Type::ImplTrait(_) | Type::BareFn(_) | Type::TraitObject(_) | Type::Macro(_) => {
                self.refused = true;
            }
            Type::Reference(r) if r.lifetime.is_none() => {
                r.lifetime = Some(Self::ours());
                self.used = true;
            }
            _ => {}
        }
        syn::visit_mut::visit_type_mut(self, t);
    }

    fn visit_lifetime_mut(&mut self, l: &mut Lifetime) {
        if l.ident == "_" {
            *l = Self::ours();
            self.used = true;
        } else if l.ident != "__shade_c" && l.ident != "static" {
            self.refused = true;
        }
    }
}
