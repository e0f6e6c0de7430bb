//! `for` loops over ranges and over iterator chains (`iter`, `iter_mut`, `windows`,
//! `chunks_exact`, `zip`, `enumerate`), turned into index loops.

use super::rename::Bind;
use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Expr, Ident, Pat};

/// A range loop's bounds.
pub(super) struct RangeSpec {
    pub(super) lo: Expr,
    pub(super) hi: Expr,
    pub(super) inclusive: bool,
    pub(super) rev: bool,
}

/// `a..b`, `a..=b`, `(a..b).rev()`.
pub(super) fn range(e: &Expr) -> Option<RangeSpec> {
    match e {
        Expr::Paren(p) => range(&p.expr),
        Expr::Range(r) => {
            let (lo, hi) = (r.start.as_ref()?, r.end.as_ref()?);
            Some(RangeSpec {
                lo: (**lo).clone(),
                hi: (**hi).clone(),
                inclusive: matches!(r.limits, syn::RangeLimits::Closed(_)),
                rev: false,
            })
        }
        Expr::MethodCall(m) if m.method == "rev" && m.args.is_empty() => {
            let mut r = range(&m.receiver)?;
            if r.rev {
                return None;
            }
            r.rev = true;
            Some(r)
        }
        _ => None,
    }
}

/// An iterator chain over arrays.
pub(super) enum Src {
    Elem(Expr),
    Window(Expr, Expr),
    Chunk(Expr, Expr),
    Zip(Box<Src>, Box<Src>),
    Enumerate(Box<Src>),
}

pub(super) fn parse(e: &Expr) -> Option<Src> {
    match e {
        Expr::Paren(p) => parse(&p.expr),
        Expr::Reference(r) => Some(Src::Elem((*r.expr).clone())),
        Expr::Path(_) | Expr::Field(_) => Some(Src::Elem(e.clone())),
        Expr::MethodCall(m) => {
            let name = m.method.to_string();
            let arg = m.args.first();
            match (name.as_str(), m.args.len()) {
                ("iter" | "iter_mut" | "into_iter", 0) => Some(Src::Elem((*m.receiver).clone())),
                ("copied" | "cloned", 0) => parse(&m.receiver),
                ("enumerate", 0) => Some(Src::Enumerate(Box::new(parse(&m.receiver)?))),
                ("zip", 1) => Some(Src::Zip(
                    Box::new(parse(&m.receiver)?),
                    Box::new(parse(arg?)?),
                )),
                ("windows", 1) => Some(Src::Window((*m.receiver).clone(), arg?.clone())),
                ("chunks_exact", 1) => Some(Src::Chunk((*m.receiver).clone(), arg?.clone())),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Matches `pat` against `src`: the lengths that bound the loop and the bindings.
pub(super) fn bind(
    src: &Src,
    pat: &Pat,
    k: &Ident,
    lens: &mut Vec<Expr>,
    binds: &mut Vec<(Ident, Bind)>,
) -> Result<(), Span> {
    let pat = match pat {
        Pat::Paren(p) => &*p.pat,
        p => p,
    };
    match src {
        Src::Enumerate(inner) | Src::Zip(inner, _) => {
            let Pat::Tuple(t) = pat else {
                return Err(pat.span());
            };
            if t.elems.len() != 2 {
                return Err(pat.span());
            }
            match src {
                Src::Enumerate(_) => {
                    match &t.elems[0] {
                        Pat::Ident(i) if i.subpat.is_none() => {
                            binds.push((i.ident.clone(), Bind::Name(k.clone())));
                        }
                        Pat::Wild(_) => {}
                        p => return Err(p.span()),
                    }
                    bind(inner, &t.elems[1], k, lens, binds)
                }
                Src::Zip(a, b) => {
                    bind(a, &t.elems[0], k, lens, binds)?;
                    bind(b, &t.elems[1], k, lens, binds)
                }
                _ => unreachable!("matched above"),
            }
        }
        Src::Elem(array) => {
            lens.push(syn::parse_quote!(#array.len()));
            leaf(
                pat,
                binds,
                Bind::Elem {
                    array: array.clone(),
                    k: k.clone(),
                },
            )
        }
        Src::Window(array, n) => {
            lens.push(syn::parse_quote!((#array.len() + 1).saturating_sub(#n)));
            leaf(
                pat,
                binds,
                Bind::Window {
                    array: array.clone(),
                    k: k.clone(),
                },
            )
        }
        Src::Chunk(array, n) => {
            lens.push(syn::parse_quote!(#array.len() / (#n)));
            leaf(
                pat,
                binds,
                Bind::Chunk {
                    array: array.clone(),
                    k: k.clone(),
                    size: n.clone(),
                },
            )
        }
    }
}

fn leaf(pat: &Pat, binds: &mut Vec<(Ident, Bind)>, b: Bind) -> Result<(), Span> {
    match pat {
        Pat::Ident(i) if i.subpat.is_none() => {
            binds.push((i.ident.clone(), b));
            Ok(())
        }
        Pat::Reference(r) => leaf(&r.pat, binds, b),
        Pat::Wild(_) => Ok(()),
        p => Err(p.span()),
    }
}
