//! Innermost loops in a closure over slices, and reverse loops that run forwards.
//!
//! An innermost loop that uses no workspace (no saved values, branches or calls) runs
//! inside an immediately called closure that takes the float arrays it indexes as
//! `&[F]` / `&mut [F]` parameters, which the optimiser knows do not alias one another
//! (no run-time overlap checks before a vector loop, no reloads after each store). An
//! array indexed only at `j + c` (`c` fixed in the loop) is passed as the slice the
//! loop touches, indexed at `j`; one indexed at several literal offsets `j + 0`,
//! `j + 1`, … as the slice that covers them: no bounds check is left inside. Loops of
//! the forward sweep keep their order (the primal's floating-point operations are
//! unchanged).
//!
//! The reverse of a loop whose iterations do not depend on each other through the
//! reverse sweep may visit them in any order, and then runs them first to last (the
//! order the optimiser vectorises best). The iterations are independent when the
//! reverse body (checked on its emitted code) declares nothing that outlives an
//! iteration and writes outer variables only as
//! - an accumulation `v += …` / `v -= …` of a scalar the body does not otherwise read,
//! - elements of an array that every access of the body indexes at the same `j + c`
//!   (each iteration has its own element), or
//! - accumulations `a[k] += …` into an array the body does not otherwise read.
//!
//! Accumulations then only change the order of additions (the last bits of a
//! derivative, as between any two AD tools).
//!
//! In such a reverse loop, an array accumulated into at several literal offsets
//! (`dx[j] += …; dx[j + 1] += …`, Rosenbrock's shadow) is accumulated in registers
//! instead: `c_k` collects what iteration `j` adds to element `j + k`, and at the end of
//! the iteration element `j` is complete (no later iteration adds to it) and receives
//! its sum with one `+=`; the registers then shift by one. Each element is read and
//! written once, not once per term, and the optimiser no longer has to carry a value
//! from one iteration's store to the next one's load. The sums are the same: the terms
//! of an element are added in the same order, once, to the element (bit for bit the
//! former result when the shadow starts at zero).

use super::Rev;
use crate::analysis::Shape;
use crate::lower::is_compound;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use std::collections::{BTreeMap, HashSet};
use syn::visit::Visit;
use syn::visit_mut::VisitMut;
use syn::{BinOp, Expr, Ident};

/// How the body accesses one outer variable.
#[derive(Default)]
struct Uses {
    /// The variable as the body names it (with its span, for hygiene).
    ident: Option<Ident>,
    /// `v[k]`: the index as text and expression, and how it is accessed.
    index: Vec<(String, Expr, Access)>,
    /// `v` as a value, or written as a whole.
    whole: Vec<Access>,
    /// `v.len()`.
    len: usize,
    /// Any other use (`v[i][j]`, `&v`, a method): not followed.
    other: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    /// `=` (or `*=`, `/=`: they read too).
    Set,
    /// `+=` / `-=`.
    Accum,
}

/// Walks a reverse body, recording the uses of every variable.
#[derive(Default)]
struct Scan {
    uses: BTreeMap<String, Uses>,
    /// Names the body declares.
    inner: HashSet<String>,
    /// A construct that rules the reordering out.
    refused: bool,
}

impl Scan {
    fn uses(&mut self, id: &Ident) -> &mut Uses {
        let u = self.uses.entry(id.to_string()).or_default();
        u.ident.get_or_insert_with(|| id.clone());
        u
    }

    /// A place written with `access`.
    fn target(&mut self, e: &Expr, access: Access) {
        match e {
            Expr::Paren(p) => self.target(&p.expr, access),
            Expr::Path(p) if p.path.get_ident().is_some() => {
                let id = p.path.get_ident().expect("an ident").clone();
                self.uses(&id).whole.push(access);
            }
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => self.target(&u.expr, access),
            Expr::Index(i) => match &*i.expr {
                Expr::Path(p) if p.path.get_ident().is_some() => {
                    let id = p.path.get_ident().expect("an ident").clone();
                    let k = (*i.index).clone();
                    let text = quote!(#k).to_string();
                    self.uses(&id).index.push((text, k, access));
                    self.visit_expr(&i.index);
                }
                _ => self.refused = true,
            },
            _ => self.refused = true,
        }
    }
}

impl<'ast> Visit<'ast> for Scan {
    fn visit_expr(&mut self, e: &'ast Expr) {
        match e {
            Expr::Assign(a) => {
                self.target(&a.left, Access::Set);
                self.visit_expr(&a.right);
            }
            Expr::Binary(b) if is_compound(&b.op) => {
                let acc = if matches!(b.op, BinOp::AddAssign(_) | BinOp::SubAssign(_)) {
                    Access::Accum
                } else {
                    Access::Set
                };
                self.target(&b.left, acc);
                if acc == Access::Set {
                    // `v *= c` reads `v` too.
                    self.target(&b.left, Access::Read);
                }
                self.visit_expr(&b.right);
            }
            Expr::Path(p) => match p.path.get_ident() {
                Some(id) if p.qself.is_none() => self.uses(id).whole.push(Access::Read),
                _ => {}
            },
            Expr::Index(i) => match &*i.expr {
                Expr::Path(p) if p.path.get_ident().is_some() => {
                    self.target(e, Access::Read);
                }
                _ => {
                    self.refused = true;
                }
            },
            Expr::MethodCall(m) => {
                if let Expr::Path(p) = &*m.receiver
                    && let Some(id) = p.path.get_ident()
                {
                    if m.method == "len" && m.args.is_empty() {
                        self.uses(id).len += 1;
                    } else {
                        // A scalar receiver (`(x).sin()`) is a read; an array's is
                        // not followed.
                        self.uses(id).whole.push(Access::Read);
                    }
                } else {
                    self.visit_expr(&m.receiver);
                }
                for a in &m.args {
                    self.visit_expr(a);
                }
            }
            Expr::Call(c) => {
                // Only elementary functions by path (`f64::max(a, b)`).
                let float_path = matches!(&*c.func, Expr::Path(p)
                    if p.path.segments.len() == 2
                        && (p.path.segments[0].ident == "f64" || p.path.segments[0].ident == "f32"));
                if !float_path {
                    self.refused = true;
                }
                for a in &c.args {
                    self.visit_expr(a);
                }
            }
            Expr::Reference(r) => {
                self.refused = true;
                self.visit_expr(&r.expr);
            }
            Expr::Macro(_)
            | Expr::Closure(_)
            | Expr::ForLoop(_)
            | Expr::While(_)
            | Expr::Loop(_)
            | Expr::Break(_)
            | Expr::Continue(_)
            | Expr::Return(_)
            | Expr::Let(_)
            | Expr::Async(_)
            | Expr::Await(_)
            | Expr::Unsafe(_) => self.refused = true,
            _ => syn::visit::visit_expr(self, e),
        }
    }

    fn visit_local(&mut self, l: &'ast syn::Local) {
        let pat = match &l.pat {
            syn::Pat::Type(t) => &*t.pat,
            p => p,
        };
        match pat {
            syn::Pat::Ident(p) if p.subpat.is_none() => {
                self.inner.insert(p.ident.to_string());
            }
            _ => self.refused = true,
        }
        if let Some(init) = &l.init {
            self.visit_expr(&init.expr);
            if init.diverge.is_some() {
                self.refused = true;
            }
        }
    }

    fn visit_item(&mut self, _: &'ast syn::Item) {
        self.refused = true;
    }

    fn visit_macro(&mut self, _: &'ast syn::Macro) {
        self.refused = true;
    }
}

/// The variables `e` names.
fn names(e: &Expr) -> Vec<String> {
    crate::analysis::all_reads(e)
}

/// `c` in an index `var`, `var + c` or `c + var` (`None` for `var` alone), if `c`
/// does not depend on the loop.
fn offset(k: &Expr, var: &Ident, varying: &HashSet<String>) -> Option<Option<Expr>> {
    let is_var = |e: &Expr| matches!(strip(e), Expr::Path(p) if p.path.is_ident(var));
    let fixed = |e: &Expr| names(e).iter().all(|n| !varying.contains(n));
    match strip(k) {
        e if is_var(e) => Some(None),
        Expr::Binary(b) if matches!(b.op, BinOp::Add(_)) => {
            if is_var(&b.left) && fixed(&b.right) {
                Some(Some((*b.right).clone()))
            } else if is_var(&b.right) && fixed(&b.left) {
                Some(Some((*b.left).clone()))
            } else {
                None
            }
        }
        _ => None,
    }
}

fn strip(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => strip(&p.expr),
        Expr::Group(g) => strip(&g.expr),
        e => e,
    }
}

/// A literal integer offset.
fn literal(c: &Option<Expr>) -> Option<usize> {
    match c.as_ref().map(strip) {
        None => Some(0),
        Some(Expr::Lit(l)) => match &l.lit {
            syn::Lit::Int(i) => i.base10_parse().ok(),
            _ => None,
        },
        Some(_) => None,
    }
}

/// Rewrites the accesses to sliced arrays: an array sliced at one offset is indexed at
/// `var`; one sliced from its smallest literal offset `m` is indexed at `var + (c − m)`.
struct Reindex<'a> {
    /// The arrays, and for those with literal offsets the smallest one.
    sliced: &'a BTreeMap<String, Option<usize>>,
    var: &'a Ident,
    varying: &'a HashSet<String>,
}

impl VisitMut for Reindex<'_> {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        if let Expr::Index(i) = e
            && let Expr::Path(p) = &*i.expr
            && let Some(shift) = p
                .path
                .get_ident()
                .and_then(|id| self.sliced.get(&id.to_string()))
        {
            let var = self.var;
            let c = match shift {
                None => 0,
                Some(m) => {
                    let c = offset(&i.index, var, self.varying)
                        .and_then(|c| literal(&c))
                        .expect("a literal offset");
                    c - m
                }
            };
            *i.index = if c == 0 {
                syn::parse_quote!(#var)
            } else {
                syn::parse_quote!(#var + #c)
            };
            return;
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }
}

impl Rev<'_> {
    /// Whether `name` (a primal or an adjoint `__d_…`) is a one-dimensional float array
    /// whose element type the generated code knows.
    fn float_array(&self, name: &str) -> bool {
        let base = name.strip_prefix("__d_").unwrap_or(name);
        if base != name && !self.info.is_active(base) {
            return false;
        }
        match self.info.shape(base) {
            Shape::ParamArray => true,
            Shape::Vec => self.pooled.iter().any(|p| p == base),
            _ => false,
        }
    }

    /// The reverse of `for var in lo..hi` with iteration body `body` (emitted code),
    /// run forwards in a closure, if its iterations are independent.
    pub(super) fn reverse_forwards(
        &mut self,
        var: &Ident,
        bounds: (&Expr, &Expr, bool),
        body: &TokenStream,
    ) -> Option<TokenStream> {
        self.in_closure(var, bounds, false, body, true)
    }

    /// A loop of the forward sweep (its order kept, `rev` for `(lo..hi).rev()`) in a
    /// closure over slices, if its body allows.
    pub(super) fn forward_in_closure(
        &mut self,
        var: &Ident,
        bounds: (&Expr, &Expr, bool),
        rev: bool,
        body: &TokenStream,
    ) -> Option<TokenStream> {
        self.in_closure(var, bounds, rev, &quote!({ #body }), false)
    }

    /// `for var in lo..hi body` (backwards if `rev`) in a closure that takes the float
    /// arrays `body` indexes as slices; `reorder`: the loop replaces a reverse loop, so
    /// its iterations must be independent.
    fn in_closure(
        &mut self,
        var: &Ident,
        (lo, hi, inclusive): (&Expr, &Expr, bool),
        rev: bool,
        body: &TokenStream,
        reorder: bool,
    ) -> Option<TokenStream> {
        if body.to_string().contains("__ws") {
            return None;
        }
        let mut block: syn::Block = syn::parse2(body.clone()).ok()?;
        let mut scan = Scan::default();
        scan.visit_block(&block);
        if scan.refused {
            return None;
        }
        let var_name = var.to_string();
        let outer: Vec<(&String, &Uses)> = scan
            .uses
            .iter()
            .filter(|(n, _)| !scan.inner.contains(*n) && **n != var_name)
            .collect();
        // What an iteration changes (and so what an index must not depend on).
        let mut varying: HashSet<String> = scan.inner.clone();
        varying.insert(var_name.clone());
        for (n, u) in &outer {
            let written = u.whole.iter().chain(u.index.iter().map(|x| &x.2));
            if written.into_iter().any(|a| *a != Access::Read) {
                varying.insert((*n).clone());
            }
        }
        let mut params = Vec::new();
        let mut args = Vec::new();
        let mut sliced = BTreeMap::new();
        // Arrays accumulated in registers, with their largest relative offset.
        let mut carried = BTreeMap::new();
        let f = self.float();
        let (lo_v, hi_v) = (format_ident!("__lo"), format_ident!("__hi"));
        for (n, u) in &outer {
            let writes_whole = u.whole.iter().any(|a| *a != Access::Read);
            let writes_elems = u.index.iter().any(|x| x.2 != Access::Read);
            let first = u.index.first().map(|x| x.0.as_str());
            let one_index = u.index.iter().all(|x| Some(x.0.as_str()) == first);
            let own = first.and_then(|_| offset(&u.index[0].1, var, &varying));
            if writes_whole && reorder {
                // A scalar accumulator, read nowhere else.
                let accum_only = u.whole.iter().all(|a| *a == Access::Accum);
                if !accum_only || !u.index.is_empty() || u.len > 0 || u.other {
                    return None;
                }
                continue;
            }
            if writes_elems && reorder {
                let own_element = one_index && own.is_some();
                let accum_only = u.whole.is_empty() && u.index.iter().all(|x| x.2 == Access::Accum);
                if u.other || !(own_element || accum_only) {
                    return None;
                }
            }
            if writes_whole
                || u.other
                || !u.whole.is_empty()
                || u.index.is_empty()
                || !self.float_array(n)
            {
                continue;
            }
            let id = u.ident.clone()?;
            let m = (writes_elems).then(|| quote!(mut));
            params.push(quote!(#id: &#m [#f]));
            // Literal offsets `j + c` (several of them: Rosenbrock's `x[i]`, `x[i + 1]`).
            let lits: Option<Vec<usize>> = u
                .index
                .iter()
                .map(|x| offset(&x.1, var, &varying).and_then(|c| literal(&c)))
                .collect();
            let one = if inclusive { quote!(+ 1) } else { quote!() };
            match (
                own.filter(|_| one_index && u.len == 0),
                lits.filter(|_| u.len == 0),
            ) {
                (Some(c), _) => {
                    let c = c.map_or(quote!(0), |c| quote!(#c));
                    args.push(quote!(&#m #id[(#c)..(#c) + #hi_v #one]));
                    sliced.insert((*n).clone(), None);
                }
                (None, Some(cs)) => {
                    let (lo_c, hi_c) = (cs.iter().min()?, cs.iter().max()?);
                    args.push(quote!(&#m #id[#lo_c..#hi_v + #hi_c #one]));
                    sliced.insert((*n).clone(), Some(*lo_c));
                    let accum_only =
                        u.whole.is_empty() && u.index.iter().all(|x| x.2 == Access::Accum);
                    if reorder && !rev && accum_only {
                        carried.insert(id.to_string(), (id.clone(), hi_c - lo_c));
                    }
                }
                (None, None) => args.push(quote!(&#m #id[..])),
            }
        }
        if params.is_empty() {
            return None;
        }
        Reindex {
            sliced: &sliced,
            var,
            varying: &varying,
        }
        .visit_block_mut(&mut block);
        let (before, after) = self.carry(&carried, var, &mut block, inclusive);
        let range = crate::reverse::range_tokens(
            &syn::parse_quote!(#lo_v),
            &syn::parse_quote!(#hi_v),
            inclusive,
            rev,
        );
        let runs = if inclusive {
            quote!(#lo_v <= #hi_v)
        } else {
            quote!(#lo_v < #hi_v)
        };
        Some(quote! {
            {
                let #lo_v = #lo;
                let #hi_v = #hi;
                if #runs {
                    (|#(#params),*| {
                        #before
                        for #var in #range #block
                        #after
                    })(#(#args),*);
                }
            }
        })
    }

    /// Accumulates the `carried` arrays (reindexed: `a[var + k]`, `k` up to the offset
    /// given) in registers, rewriting `block`; returns the registers' declarations (before
    /// the loop) and what adds the last iterations' pending sums (after it).
    fn carry(
        &mut self,
        carried: &BTreeMap<String, (Ident, usize)>,
        var: &Ident,
        block: &mut syn::Block,
        inclusive: bool,
    ) -> (TokenStream, TokenStream) {
        let f = self.float();
        let (mut before, mut after) = (TokenStream::new(), TokenStream::new());
        let mut regs = BTreeMap::new();
        for (name, (_, top)) in carried {
            let cs: Vec<Ident> = (0..=*top).map(|_| self.fresh("c")).collect();
            before.extend(quote!(#(let mut #cs: #f = 0.0;)*));
            regs.insert(name.clone(), cs);
        }
        if regs.is_empty() {
            return (before, after);
        }
        Carry { regs: &regs, var }.visit_block_mut(block);
        let end = if inclusive {
            quote!(__hi + 1)
        } else {
            quote!(__hi)
        };
        for (name, cs) in &regs {
            let a = &carried[name].0;
            let (c0, rest) = (&cs[0], &cs[1..]);
            let shift = cs.windows(2).map(|w| {
                let (to, from) = (&w[0], &w[1]);
                quote!(#to = #from;)
            });
            let last = &cs[cs.len() - 1];
            block.stmts.push(syn::parse_quote!({
                #a[#var] += #c0;
                #(#shift)*
                #last = 0.0;
            }));
            let ks = 0..rest.len();
            let pending = &cs[..rest.len()];
            after.extend(quote!(#(#a[#end + #ks] += #pending;)*));
        }
        (before, after)
    }
}

/// Rewrites `a[var + k] += e` (`-=`) into `c_k += e` for the arrays accumulated in
/// registers ([`Rev::carry`]).
struct Carry<'a> {
    regs: &'a BTreeMap<String, Vec<Ident>>,
    var: &'a Ident,
}

impl VisitMut for Carry<'_> {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        if let Expr::Binary(b) = e
            && matches!(b.op, BinOp::AddAssign(_) | BinOp::SubAssign(_))
            && let Expr::Index(i) = strip(&b.left)
            && let Expr::Path(p) = &*i.expr
            && let Some(cs) = p
                .path
                .get_ident()
                .and_then(|id| self.regs.get(&id.to_string()))
        {
            let k = offset(&i.index, self.var, &HashSet::new())
                .and_then(|c| literal(&c))
                .expect("a literal offset");
            let c = &cs[k];
            *b.left = syn::parse_quote!(#c);
            self.visit_expr_mut(&mut b.right);
            return;
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }
}
