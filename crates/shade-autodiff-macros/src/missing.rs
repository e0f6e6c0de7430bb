//! How generated code finds the generated function of a callee, and our error
//! (`SHADE-E0183`) when the callee has none for the activities of the call.
//!
//! A call `g(…)` with differentiated arguments calls `__shade_rev_g_<pattern>` (or
//! `__shade_fwd_g_<pattern>_<width>`), which `g`'s own attribute emits. A proc macro
//! cannot see whether `g` carries the attribute, so the caller declares a fallback of
//! that name at the top of its own function body, with a trait bound that never holds
//! on its last parameter (the `false` of `__keep`, the `()` that forward calls pass),
//! the trait carrying our message (`#[diagnostic::on_unimplemented]`, naming the
//! callee and the attribute it needs). The name is looked up inside a block that
//! glob-imports the module (`{ use self::*; __shade_rev_g_DA }`): a real function of
//! the module (or a name the module imports) shadows the fallback; only a missing one
//! falls through to it. The looked-up function is called outside the block, so the
//! glob shadows none of the arguments' names.
//!
//! A path `m::g(…)` names its module, where no fallback can be declared: it calls
//! `m::__shade_rev_g_…` directly (rustc's "cannot find" if `g` has no attribute). A
//! function declared inside another function's body is not a module item: a caller
//! finds the fallback before it, which the message says.

use crate::sig::Mode;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use std::collections::BTreeMap;
use syn::Ident;

/// The activity of one argument (or of the result) at a call site.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A buffer with a shadow (or tangents).
    Dup,
    /// A differentiated scalar.
    Active,
    Const,
}

impl Kind {
    /// The kinds of a call pattern (`D`, `A`, `C` per argument, then the result's).
    pub(crate) fn of_pattern(pattern: &str) -> Vec<Kind> {
        pattern
            .chars()
            .map(|ch| match ch {
                'D' => Kind::Dup,
                'A' => Kind::Active,
                _ => Kind::Const,
            })
            .collect()
    }
}

/// One call site's shape: what the fallback must accept and return.
pub(crate) struct Site<'a> {
    pub(crate) mode: Mode,
    pub(crate) width: usize,
    /// The activities of the callee's parameters.
    pub(crate) params: &'a [Kind],
    /// The result's, if the call's value is used.
    pub(crate) result: Option<Kind>,
    /// The number of arguments (the workspace included).
    pub(crate) n_args: usize,
    /// The fallback's return type.
    pub(crate) ret: TokenStream,
    pub(crate) span: Span,
}

/// The fallbacks a function body needs, one per callee function.
#[derive(Default)]
pub(crate) struct Missing {
    fns: BTreeMap<String, TokenStream>,
}

impl Missing {
    /// The function to call for `callee` (a path), whose generated function is
    /// `internal`: a lookup with a fallback for a one-segment path.
    pub(crate) fn callee(
        &mut self,
        callee: &syn::Path,
        internal: &Ident,
        site: Site<'_>,
    ) -> TokenStream {
        let mut path = callee.clone();
        let last = path.segments.last_mut().expect("a path");
        let name = last.ident.to_string();
        last.ident = internal.clone();
        if callee.segments.len() != 1 || callee.leading_colon.is_some() {
            return quote!(#path);
        }
        let key = internal.to_string();
        let span = site.span;
        if !self.fns.contains_key(&key) {
            self.fns
                .insert(key.clone(), fallback(&name, internal, &site));
        }
        quote_spanned!(span=> ({ #[allow(unused_imports)] use self::*; #path }))
    }

    /// The fallbacks, for the top of the function body.
    pub(crate) fn items(&self) -> TokenStream {
        if self.fns.is_empty() {
            return quote!();
        }
        let fns = self.fns.values();
        let names = self.fns.keys().map(|k| format_ident!("{}", k));
        quote! {
            #[allow(non_snake_case, non_camel_case_types, dead_code, unreachable_pub, clippy::all)]
            mod __shade_missing {
                /// No value: the one implementor of the traits below (so that rustc
                /// does not suggest writing one).
                pub enum Never {}
                #(#fns)*
            }
            #[allow(unused_imports)]
            use __shade_missing::{#(#names),*};
        }
    }
}

/// The fallback `internal` for callee `name`: a function of the call's shape whose
/// last parameter is bound by a trait that only [`Never`] implements.
fn fallback(name: &str, internal: &Ident, site: &Site<'_>) -> TokenStream {
    let word = |k: Kind| match (site.mode, k) {
        (_, Kind::Const) => "Const",
        (Mode::Reverse, Kind::Dup) => "Duplicated",
        (Mode::Reverse, Kind::Active) => "Active",
        (Mode::Forward, _) => "Dual",
    };
    let params: Vec<&str> = site.params.iter().map(|&k| word(k)).collect();
    let call = format!(
        "{name}({}){}",
        params.join(", "),
        site.result
            .map_or(String::new(), |r| format!(" -> {}", word(r)))
    );
    let mut acts = params.clone();
    let (mode, attr, prefix) = match site.mode {
        Mode::Reverse => ("reverse", "autodiff_reverse", "d"),
        Mode::Forward => ("forward", "autodiff_forward", "df"),
    };
    let width = if site.width > 1 {
        format!("{}, ", site.width)
    } else {
        String::new()
    };
    let result = match site.result {
        Some(r) => {
            acts.push(word(r));
            String::new()
        }
        None => ", and `Const` for its result if it returns one".into(),
    };
    let message = format!(
        "[SHADE-E0183] `{name}` has no {mode}-mode derivative for the activities of this call"
    );
    let label = format!("`{call}`: its generated derivative is called, and there is none");
    let fix = format!(
        "give `{name}` the attribute `#[{attr}({prefix}_{name}, {width}{})]` (any name for the \
         derivative){result}; a function called only with constants needs none",
        acts.join(", ")
    );
    let found = format!(
        "if `{name}` has the attribute in another module, call it by its path \
         (`m::{name}(…)`) or import its generated function too (`use m::{{{name}, {internal}}};`); \
         one declared inside another function's body is not found: declare `{name}` at \
         module level"
    );
    let more = "the long explanation: `shade_diagnostics::explain(\"SHADE-E0183\")`, or \
                SHADE-E0183 in docs/errors.md";
    let tr = format_ident!("{}_has_no_derivative", internal);
    let generics: Vec<Ident> = (0..site.n_args - 1)
        .map(|k| format_ident!("__A{}", k))
        .collect();
    let ret = &site.ret;
    let span = site.span;
    quote_spanned! {span=>
        #[diagnostic::on_unimplemented(message = #message, label = #label, note = #fix, note = #found, note = #more)]
        pub trait #tr {}
        #[diagnostic::do_not_recommend]
        impl #tr for Never {}
        pub fn #internal<#(#generics,)* __K: #tr>(#(_: #generics,)* _: __K) -> #ret {
            ::core::unreachable!()
        }
    }
}
