//! Renaming: every use of a binding becomes its unique name, and the element bindings
//! of desugared iterator loops become index expressions (`xi` → `x[__k]`,
//! `w[1]` → `x[__k + 1]` for `x.windows(n)`).

use super::Lower;
use crate::error::{Error, Result};
use crate::sig::Mode;
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{Expr, Ident};

/// What a source-level name stands for.
#[derive(Clone)]
pub(crate) enum Bind {
    /// A variable, under its unique name.
    Name(Ident),
    /// An element `array[k]` of an iterated array.
    Elem { array: Expr, k: Ident },
    /// A window `array[k..k + n]`: usable as `w[j]` only.
    Window { array: Expr, k: Ident },
    /// A chunk `array[k * size..(k + 1) * size]`: usable as `c[j]` only.
    Chunk { array: Expr, k: Ident, size: Expr },
}

impl Bind {
    /// The same binding with its array (and size) renamed in the current scope.
    pub(super) fn renamed(self, l: &Lower<'_>) -> Result<Bind> {
        Ok(match self {
            Bind::Name(n) => Bind::Name(n),
            Bind::Elem { array, k } => Bind::Elem {
                array: l.rename(&array)?,
                k,
            },
            Bind::Window { array, k } => Bind::Window {
                array: l.rename(&array)?,
                k,
            },
            Bind::Chunk { array, k, size } => Bind::Chunk {
                array: l.rename(&array)?,
                k,
                size: l.rename(&size)?,
            },
        })
    }
}

pub(super) struct Renamer<'a> {
    scopes: &'a [Vec<(String, Bind)>],
    /// Names bound by closures inside the expression (they shadow).
    shadowed: Vec<String>,
    mode: Mode,
    err: Option<Error>,
}

impl<'a> Renamer<'a> {
    pub(super) fn new(scopes: &'a [Vec<(String, Bind)>], mode: Mode) -> Self {
        Renamer {
            scopes,
            shadowed: Vec::new(),
            mode,
            err: None,
        }
    }

    pub(super) fn expr(mut self, e: &Expr) -> Result<Expr> {
        let mut e = e.clone();
        self.visit_expr_mut(&mut e);
        match self.err {
            Some(err) => Err(err),
            None => Ok(e),
        }
    }

    fn lookup(&self, name: &str) -> Option<&'a Bind> {
        if self.shadowed.iter().any(|s| s == name) {
            return None;
        }
        self.scopes
            .iter()
            .rev()
            .flat_map(|s| s.iter().rev())
            .find(|(n, _)| n == name)
            .map(|(_, b)| b)
    }

    fn ident_of(e: &Expr) -> Option<String> {
        match e {
            Expr::Path(p) if p.qself.is_none() => p.path.get_ident().map(|i| i.to_string()),
            _ => None,
        }
    }
}

impl VisitMut for Renamer<'_> {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        match e {
            Expr::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => {
                let id = p.path.get_ident().expect("an ident").clone();
                match self.lookup(&id.to_string()) {
                    Some(Bind::Name(n)) => {
                        // The binding's hygiene (user code, or this macro for loop
                        // indices), at the use's location (for error messages).
                        let mut n = n.clone();
                        n.set_span(n.span().located_at(id.span()));
                        *e = syn::parse_quote!(#n);
                    }
                    Some(Bind::Elem { array, k }) => *e = syn::parse_quote!(#array[#k]),
                    Some(Bind::Window { .. } | Bind::Chunk { .. }) => {
                        self.err.get_or_insert(
                            Error::unsupported(
                                id.span(),
                                "a window or chunk used as a whole",
                                self.mode,
                            )
                            .help(format!("index it: `{id}[j]`")),
                        );
                    }
                    None => {}
                }
            }
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => {
                if let Some(name) = Self::ident_of(&u.expr)
                    && let Some(Bind::Elem { array, k }) = self.lookup(&name)
                {
                    *e = syn::parse_quote!(#array[#k]);
                    return;
                }
                syn::visit_mut::visit_expr_mut(self, e);
            }
            Expr::Index(i) => {
                if let Some(name) = Self::ident_of(&i.expr) {
                    match self.lookup(&name) {
                        Some(Bind::Window { array, k }) => {
                            let mut j = (*i.index).clone();
                            self.visit_expr_mut(&mut j);
                            *e = syn::parse_quote!(#array[#k + (#j)]);
                            return;
                        }
                        Some(Bind::Chunk { array, k, size }) => {
                            let mut j = (*i.index).clone();
                            self.visit_expr_mut(&mut j);
                            *e = syn::parse_quote!(#array[#k * (#size) + (#j)]);
                            return;
                        }
                        _ => {}
                    }
                }
                syn::visit_mut::visit_expr_mut(self, e);
            }
            Expr::Closure(c) => {
                let mut names = Vec::new();
                for p in &c.inputs {
                    super::collect_pat_idents(p, &mut names);
                }
                let n = self.shadowed.len();
                self.shadowed.extend(names.iter().map(|i| i.to_string()));
                self.visit_expr_mut(&mut c.body);
                self.shadowed.truncate(n);
            }
            Expr::Macro(m) => {
                let args = m.mac.parse_body_with(
                    syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated,
                );
                if let Ok(mut args) = args {
                    for a in args.iter_mut() {
                        self.visit_expr_mut(a);
                    }
                    m.mac.tokens = quote::quote!(#args);
                }
            }
            Expr::Field(f) => {
                // Only the base is a variable (`data.x`).
                self.visit_expr_mut(&mut f.base);
            }
            _ => syn::visit_mut::visit_expr_mut(self, e),
        }
    }

    fn visit_expr_method_call_mut(&mut self, m: &mut syn::ExprMethodCall) {
        self.visit_expr_mut(&mut m.receiver);
        for a in m.args.iter_mut() {
            self.visit_expr_mut(a);
        }
    }
}

#[allow(dead_code)]
fn span_of(e: &Expr) -> proc_macro2::Span {
    e.span()
}
