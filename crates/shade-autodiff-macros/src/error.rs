//! Compile errors in rustc's shape: a code and a lowercase message naming the
//! construct, at its span, then `= note:` and `= help:` lines; constructs outside the
//! subset always name the fallback (`shade_fn!` and the tape).
//!
//! The codes are declared (with the two that generated code raises through trait
//! bounds, `SHADE-E0183` and `SHADE-E0184`) in `shade_autodiff::compiled::CODES`, a
//! proc-macro crate exporting nothing but its macros; each has its explanation in
//! shade-diagnostics and a compile-fail golden in `tests/ui/`.

use crate::sig::Mode;
use proc_macro2::{Span, TokenStream};
use quote::quote_spanned;

/// The fallback every unsupported construct points to.
pub(crate) const FALLBACK: &str = "fall back to the tape, which takes any code: write the \
    function against `shade_autodiff::scalar::Real` and differentiate it with `shade_fn!` \
    (`shade_autodiff::scalar::gradient`, `autodiff`, ...)";

/// The attribute is on an item it cannot differentiate (not a free, non-generic,
/// synchronous `fn` with plain parameters).
pub(crate) const ITEM: &str = "SHADE-E0180";
/// The attribute's arguments do not fit the function.
pub(crate) const ARGS: &str = "SHADE-E0181";
/// A construct outside the differentiable subset.
pub(crate) const SUBSET: &str = "SHADE-E0182";

/// One compile error.
pub(crate) struct Error {
    span: Span,
    code: &'static str,
    message: String,
    notes: Vec<String>,
    helps: Vec<String>,
}

pub(crate) type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub(crate) fn new(span: Span, code: &'static str, message: impl Into<String>) -> Self {
        Error {
            span,
            code,
            message: message.into(),
            notes: Vec::new(),
            helps: Vec::new(),
        }
    }

    /// `construct` is outside the differentiable subset.
    pub(crate) fn unsupported(span: Span, construct: &str, mode: Mode) -> Self {
        Error::new(
            span,
            SUBSET,
            format!(
                "{construct} is outside the differentiable subset of `#[{}]`",
                mode.attr()
            ),
        )
        .note("the subset is listed in the documentation of `shade_autodiff_macros`")
        .help(FALLBACK)
    }

    /// The attribute cannot differentiate `item` (a generic function, a method, …).
    pub(crate) fn item(span: Span, item: &str, mode: Mode) -> Self {
        Error::new(
            span,
            ITEM,
            format!("`#[{}]` cannot differentiate {item}", mode.attr()),
        )
        .note("it transforms one free, non-generic, synchronous `fn` with plain parameter names")
        .help(FALLBACK)
    }

    pub(crate) fn note(mut self, n: impl Into<String>) -> Self {
        self.notes.push(n.into());
        self
    }

    pub(crate) fn help(mut self, h: impl Into<String>) -> Self {
        self.helps.push(h.into());
        self
    }

    /// A parse error of the attribute's arguments.
    pub(crate) fn from_syn(e: syn::Error) -> Self {
        Error::new(e.span(), ARGS, e.to_string())
    }

    pub(crate) fn into_syn(self) -> syn::Error {
        syn::Error::new(self.span, self.render())
    }

    fn render(&self) -> String {
        let mut s = format!("[{}] {}", self.code, self.message);
        for n in &self.notes {
            s.push_str("\n  = note: ");
            s.push_str(n);
        }
        for h in &self.helps {
            s.push_str("\n  = help: ");
            s.push_str(h);
        }
        s.push_str(&format!(
            "\n  = note: the long explanation: `shade_diagnostics::explain(\"{}\")`, or {} in docs/errors.md",
            self.code, self.code
        ));
        s
    }

    /// The error as a `compile_error!` at its span.
    pub(crate) fn to_compile_error(&self) -> TokenStream {
        let msg = self.render();
        quote_spanned!(self.span=> ::core::compile_error!(#msg);)
    }
}
