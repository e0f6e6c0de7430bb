//! Compile errors in rustc's shape: a lowercase message naming the construct, at its
//! span, then `= note:` and `= help:` lines; constructs outside the subset always name
//! the fallback (`shade_fn!` and the tape).

use crate::sig::Mode;
use proc_macro2::{Span, TokenStream};
use quote::quote_spanned;

/// The fallback every unsupported construct points to.
pub(crate) const FALLBACK: &str = "fall back to the tape, which takes any code: write the \
    function against `shade_autodiff::scalar::Real` and differentiate it with `shade_fn!` \
    (`shade_autodiff::scalar::gradient`, `autodiff`, ...)";

/// One compile error.
pub(crate) struct Error {
    span: Span,
    message: String,
    notes: Vec<String>,
    helps: Vec<String>,
}

pub(crate) type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub(crate) fn new(span: Span, message: impl Into<String>) -> Self {
        Error {
            span,
            message: message.into(),
            notes: Vec::new(),
            helps: Vec::new(),
        }
    }

    /// `construct` is outside the differentiable subset.
    pub(crate) fn unsupported(span: Span, construct: &str, mode: Mode) -> Self {
        Error::new(
            span,
            format!(
                "{construct} is outside the differentiable subset of `#[{}]`",
                mode.attr()
            ),
        )
        .note("the subset is listed in the documentation of `shade_autodiff_macros`")
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

    pub(crate) fn from_syn(e: syn::Error) -> Self {
        Error::new(e.span(), e.to_string())
    }

    pub(crate) fn into_syn(self) -> syn::Error {
        syn::Error::new(self.span, self.render())
    }

    fn render(&self) -> String {
        let mut s = self.message.clone();
        for n in &self.notes {
            s.push_str("\n  = note: ");
            s.push_str(n);
        }
        for h in &self.helps {
            s.push_str("\n  = help: ");
            s.push_str(h);
        }
        s
    }

    /// The error as a `compile_error!` at its span.
    pub(crate) fn to_compile_error(&self) -> TokenStream {
        let msg = self.render();
        quote_spanned!(self.span=> ::core::compile_error!(#msg);)
    }
}
