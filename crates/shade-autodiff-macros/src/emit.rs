//! The generated items around an engine's body: the internal function (called by
//! other generated code), the user-facing derivative with `std::autodiff`'s
//! signature, and the marker type that describes both ([`Generated`] in
//! `shade_autodiff::compiled`), with the expansion as text (and, for a function of
//! one slice, the interface's entry: [`crate::callable`]).

use crate::analysis;
use crate::error::Result;
use crate::sig::{Act, Class, Mode, Sig, internal_name};
use crate::{forward, lower, reverse};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{Ident, ItemFn};

/// Everything an attribute expands to, besides the function itself.
pub(crate) fn generate(sig: &Sig, f: &ItemFn) -> Result<TokenStream> {
    let func = lower::lower(sig, f)?;
    let info = analysis::analyse(sig, &func);
    let (internal, user) = match sig.mode {
        Mode::Reverse => {
            let body = reverse::emit(sig, &func, &info)?;
            let ws = workspace(&body);
            (internal_rev(sig, body), user_rev(sig, ws))
        }
        Mode::Forward => {
            let body = forward::emit(sig, &func, &info)?;
            let ws = workspace(&body);
            (internal_fwd(sig, body), user_fwd(sig, ws))
        }
    };
    let mut internal = internal;
    // The primal's inlining hint governs its derivative's too (`#[inline(never)]` on
    // a term keeps each term's derivative a function of its own).
    if let Some(a) = f.attrs.iter().find(|a| a.path().is_ident("inline")) {
        internal.attrs.retain(|x| !x.path().is_ident("inline"));
        internal.attrs.push(a.clone());
    }
    let marker = marker(sig, &internal, &user);
    let callable = crate::callable::callable(sig);
    Ok(quote!(#internal #user #marker #callable))
}

/// How the user-facing derivative calls the internal function `#internal(__ws, ..)`
/// (`call`): with this thread's workspace if the body uses it, else with one without
/// storage (`without_workspace`: no thread-local access, a fixed cost that showed at
/// small sizes).
fn workspace(body: &TokenStream) -> impl Fn(TokenStream) -> TokenStream + use<> {
    let used = body.to_string().contains("__ws");
    move |call| {
        if used {
            quote!(::shade_autodiff::compiled::with_workspace(|__ws| #call))
        } else {
            quote!(::shade_autodiff::compiled::without_workspace(|__ws| #call))
        }
    }
}

const ALLOWS: &str = "unused_mut, unused_variables, unused_assignments, unused_parens, \
    unused_braces, unused_unit, non_snake_case, clippy::all";

fn allows() -> TokenStream {
    let a: TokenStream = ALLOWS.parse().expect("valid lint list");
    quote!(#[allow(#a)])
}

fn param_decl(p: &crate::sig::Param) -> TokenStream {
    let (n, t) = (&p.name, &p.ty);
    let m = p.mutable_binding.then(|| quote!(mut));
    quote!(#m #n: #t)
}

fn is_dup(p: &crate::sig::Param) -> bool {
    p.act.is_active() && !matches!(p.class, Class::Scalar(_))
}

fn is_active_scalar(p: &crate::sig::Param) -> bool {
    p.act.is_active() && matches!(p.class, Class::Scalar(_))
}

fn internal_rev(sig: &Sig, body: TokenStream) -> ItemFn {
    let name = internal_name("rev", &sig.name, &sig.pattern(), 1);
    let f = sig.float.ident();
    let mut params = vec![quote!(__ws: &mut ::shade_autodiff::compiled::Workspace)];
    for p in &sig.params {
        params.push(param_decl(p));
        if is_dup(p) {
            let (d, t) = (crate::expr::adj_ident(&p.name), p.shadow_ty(Mode::Reverse));
            params.push(quote!(#d: #t));
        }
    }
    if sig.ret_act.is_active() {
        params.push(quote!(__seed: #f));
    }
    params.push(quote!(__keep: bool));
    let ret = sig.ret.as_ref().map_or(quote!(()), |t| quote!(#t));
    let outs = sig
        .params
        .iter()
        .filter(|p| is_active_scalar(p))
        .map(|_| quote!(#f));
    let vis = &sig.vis;
    let allows = allows();
    syn::parse_quote! {
        #[doc(hidden)]
        #[inline]
        #allows
        #vis fn #name(#(#params),*) -> (#ret, #(#outs,)*) {
            #body
        }
    }
}

/// A user-facing shadow name that does not clash with a parameter.
fn user_name(sig: &Sig, want: Ident) -> Ident {
    if sig.params.iter().any(|p| p.name == want) {
        format_ident!("__{}", want)
    } else {
        want
    }
}

fn length_checks(sig: &Sig, shadows: &[(Ident, Ident)]) -> Vec<TokenStream> {
    shadows
        .iter()
        .filter(|(p, _)| {
            sig.params
                .iter()
                .any(|q| q.name == *p && matches!(q.class, Class::Array { .. }))
        })
        .map(|(p, d)| {
            let msg = format!(
                "shade-autodiff: [SHADE-E0101] the shadow `{d}` of `{p}` has length {{}}, but `{p}` has length {{}}; \
                 a shadow has the length of its primal"
            );
            quote!(::core::assert_eq!(#d.len(), #p.len(), #msg, #d.len(), #p.len());)
        })
        .collect()
}

/// `()`, the one value, or a tuple.
fn shape(values: Vec<TokenStream>) -> TokenStream {
    match values.len() {
        0 => quote!(()),
        1 => values.into_iter().next().expect("one"),
        _ => quote!((#(#values),*)),
    }
}

fn shape_ty(types: Vec<TokenStream>) -> TokenStream {
    shape(types)
}

/// `-> ty`, or nothing for `()`.
fn ret_arrow(ty: TokenStream) -> TokenStream {
    if ty.to_string() == "()" {
        quote!()
    } else {
        quote!(-> #ty)
    }
}

fn user_rev(sig: &Sig, ws: impl Fn(TokenStream) -> TokenStream) -> ItemFn {
    let f = sig.float.ident();
    let internal = internal_name("rev", &sig.name, &sig.pattern(), 1);
    let (mut params, mut args, mut shadows) = (Vec::new(), Vec::new(), Vec::new());
    for p in &sig.params {
        params.push(param_decl(p));
        let n = &p.name;
        args.push(quote!(#n));
        if is_dup(p) {
            let (d, t) = (
                user_name(sig, p.user_shadow(None)),
                p.shadow_ty(Mode::Reverse),
            );
            params.push(quote!(#d: #t));
            args.push(quote!(#d));
            shadows.push((n.clone(), d));
        }
    }
    if sig.ret_act.is_active() {
        let s = user_name(sig, format_ident!("seed"));
        params.push(quote!(#s: #f));
        args.push(quote!(#s));
    }
    let checks = length_checks(sig, &shadows);
    let mut outs = Vec::new();
    let mut out_tys = Vec::new();
    if let Some(t) = &sig.ret {
        outs.push(quote!(__r.0));
        out_tys.push(quote!(#t));
    }
    let mut k = 1usize;
    for p in &sig.params {
        if is_active_scalar(p) {
            let i = syn::Index::from(k);
            outs.push(quote!(__r.#i));
            out_tys.push(quote!(#f));
            k += 1;
        }
    }
    // Nothing after the call for `()` (a trailing `()` is clippy's `unused_unit`).
    let value = if outs.is_empty() {
        quote!()
    } else {
        shape(outs)
    };
    let ret = ret_arrow(shape_ty(out_tys));
    let call = ws(quote!(#internal(__ws, #(#args,)* true)));
    let doc = doc_line(sig);
    let (vis, name) = (&sig.vis, &sig.deriv);
    syn::parse_quote! {
        #[doc = #doc]
        #[inline]
        #[allow(clippy::too_many_arguments, clippy::unused_unit)]
        #vis fn #name(#(#params),*) #ret {
            #(#checks)*
            let __r = #call;
            #value
        }
    }
}

fn lanes(sig: &Sig) -> TokenStream {
    let (f, n) = (sig.float.ident(), sig.width);
    quote!(::shade_autodiff::compiled::Lanes<#f, #n>)
}

fn internal_fwd(sig: &Sig, body: TokenStream) -> ItemFn {
    let name = internal_name("fwd", &sig.name, &sig.pattern(), sig.width);
    let lanes = lanes(sig);
    let mut params = vec![quote!(__ws: &mut ::shade_autodiff::compiled::Workspace)];
    for p in &sig.params {
        params.push(param_decl(p));
        if !p.act.is_active() {
            continue;
        }
        if matches!(p.class, Class::Scalar(_)) {
            let t = crate::expr::tan_ident(&p.name);
            params.push(quote!(#t: #lanes));
        } else {
            let ty = &p.ty;
            for l in 0..sig.width {
                let t = crate::expr::tan_lane_ident(&p.name, l);
                params.push(quote!(#t: #ty));
            }
        }
    }
    // The unit other generated code passes last: a missing callee's fallback bounds it
    // (see `missing`).
    params.push(quote!(_: ()));
    let ret = sig.ret.as_ref().map_or(quote!(()), |t| quote!(#t));
    let vis = &sig.vis;
    let allows = allows();
    syn::parse_quote! {
        #[doc(hidden)]
        #[inline]
        #allows
        #vis fn #name(#(#params),*) -> (#ret, #lanes) {
            #body
        }
    }
}

fn user_fwd(sig: &Sig, ws: impl Fn(TokenStream) -> TokenStream) -> ItemFn {
    let f = sig.float.ident();
    let n = sig.width;
    let internal = internal_name("fwd", &sig.name, &sig.pattern(), n);
    let (mut params, mut args, mut shadows) = (Vec::new(), Vec::new(), Vec::new());
    for p in &sig.params {
        params.push(param_decl(p));
        let name = &p.name;
        args.push(quote!(#name));
        if !p.act.is_active() {
            continue;
        }
        let lanes: Vec<Ident> = if n == 1 {
            vec![user_name(sig, p.user_shadow(None))]
        } else {
            (0..n)
                .map(|k| user_name(sig, p.user_shadow(Some(k))))
                .collect()
        };
        let ty = &p.ty;
        for l in &lanes {
            params.push(quote!(#l: #ty));
            shadows.push((name.clone(), l.clone()));
        }
        if matches!(p.class, Class::Scalar(_)) {
            args.push(quote!(::shade_autodiff::compiled::Lanes::<#f, #n>([#(#lanes),*])));
        } else {
            args.extend(lanes.iter().map(|l| quote!(#l)));
        }
    }
    let checks = length_checks(sig, &shadows);
    let (ret, value) = match (&sig.ret, sig.ret_act) {
        (None, _) => (quote!(()), quote!(let _ = (__v, __t);)),
        (Some(t), Act::Const) => (quote!(#t), quote!(__v)),
        (Some(_), Act::Dual) if n == 1 => (quote!((#f, #f)), quote!((__v, __t.0[0]))),
        (Some(_), Act::Dual) => {
            let m = n + 1;
            let k = 0..n;
            (quote!([#f; #m]), quote!([__v, #(__t.0[#k]),*]))
        }
        (Some(_), _) if n == 1 => (quote!(#f), quote!(__t.0[0])),
        (Some(_), _) => (quote!([#f; #n]), quote!(__t.0)),
    };
    let ret = ret_arrow(ret);
    let call = ws(quote!(#internal(__ws, #(#args,)* ())));
    let doc = doc_line(sig);
    let (vis, name) = (&sig.vis, &sig.deriv);
    syn::parse_quote! {
        #[doc = #doc]
        #[inline]
        #[allow(clippy::too_many_arguments, clippy::unused_unit)]
        #vis fn #name(#(#params),*) #ret {
            #(#checks)*
            let (__v, __t) = #call;
            #value
        }
    }
}

fn doc_line(sig: &Sig) -> String {
    let acts = sig.act_names().join(", ");
    match sig.mode {
        Mode::Reverse => format!(
            "Reverse-mode derivative of `{}`, generated by `#[autodiff_reverse({}, {acts})]`: \
             shadows accumulate `∂f/∂x · seed`; returns the primal result, then the derivatives \
             of the `Active` arguments.",
            sig.name, sig.deriv
        ),
        Mode::Forward => format!(
            "Forward-mode derivative of `{}`, generated by `#[autodiff_forward({}, {}{acts})]`: \
             shadows are the tangents of the arguments; returns the result's tangent \
             (with the primal result for `Dual`).",
            sig.name,
            sig.deriv,
            if sig.width > 1 {
                format!("{}, ", sig.width)
            } else {
                String::new()
            }
        ),
    }
}

fn marker(sig: &Sig, internal: &ItemFn, user: &ItemFn) -> TokenStream {
    let file = syn::File {
        shebang: None,
        attrs: Vec::new(),
        items: vec![syn::Item::Fn(user.clone()), syn::Item::Fn(internal.clone())],
    };
    let expansion = prettyplease::unparse(&file);
    let signature = {
        let s = &user.sig;
        prettyplease::unparse(&syn::parse_quote!(#s {}))
            .trim()
            .trim_end_matches("{}")
            .trim()
            .to_string()
    };
    let (vis, name, primal) = (&sig.vis, &sig.deriv, sig.name.to_string());
    let deriv = name.to_string();
    let acts = sig.act_names();
    let mode = match sig.mode {
        Mode::Reverse => quote!(Reverse),
        Mode::Forward => quote!(Forward),
    };
    let width = sig.width;
    let doc = format!(
        "Describes the generated function `{deriv}` (names, activities, its code): \
         `<{deriv} as shade_autodiff::compiled::Generated>::INFO`."
    );
    quote! {
        #[doc = #doc]
        #[allow(non_camel_case_types, dead_code)]
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        #vis struct #name {}

        impl ::shade_autodiff::compiled::Generated for #name {
            type Mode = ::shade_autodiff::#mode;
            const INFO: ::shade_autodiff::compiled::GeneratedInfo = ::shade_autodiff::compiled::GeneratedInfo {
                primal: #primal,
                derivative: #deriv,
                mode: ::shade_autodiff::compiled::GeneratedMode::#mode,
                activities: &[#(#acts),*],
                width: #width,
                signature: #signature,
                expansion: #expansion,
            };
        }
    }
}
