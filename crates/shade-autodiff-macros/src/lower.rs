//! Lowering a `syn` function body into [`crate::ir`], checking the subset's control
//! flow as it goes: unique names for every binding, iterator loops as index loops
//! (`lower/iter.rs`), early `return` as assignments to `__ret` guarded by `__done`,
//! and `break` only as `if cond { …; break; }` directly in a loop body.

mod iter;
mod rename;

use crate::error::{Error, Result};
use crate::ir::{Arm, Body, Call, Func, Init, Local, Op, Place, Stmt};
use crate::sig::{Mode, Sig};
use proc_macro2::Span;
use quote::{ToTokens, format_ident, quote};
use rename::{Bind, Renamer};
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::{BinOp, Expr, Ident, Pat};

/// The name of the result variable.
pub(crate) fn ret_ident() -> Ident {
    format_ident!("__ret")
}

/// The name of the early-return flag.
pub(crate) fn done_ident() -> Ident {
    format_ident!("__done")
}

/// Where the value of a block's tail expression goes.
#[derive(Clone)]
enum Tail {
    /// Nowhere: the block is a statement (its tail must be `()`).
    Stmt,
    /// Assigned to a place.
    Into(Place),
}

pub(crate) struct Lower<'a> {
    mode: Mode,
    scopes: Vec<Vec<(String, Bind)>>,
    used: std::collections::HashMap<String, usize>,
    locals: Vec<Local>,
    tmp: usize,
    depth: usize,
    in_loop: bool,
    has_done: bool,
    returns: bool,
    _sig: &'a Sig,
}

/// Lowers `f`'s body.
pub(crate) fn lower(sig: &Sig, f: &syn::ItemFn) -> Result<Func> {
    let mut l = Lower {
        mode: sig.mode,
        scopes: vec![Vec::new()],
        used: Default::default(),
        locals: Vec::new(),
        tmp: 0,
        depth: 0,
        in_loop: false,
        has_done: false,
        returns: sig.ret.is_some(),
        _sig: sig,
    };
    for p in &sig.params {
        l.bind_name(&p.name);
    }
    l.used.insert("__ret".into(), 1);
    l.used.insert("__done".into(), 1);
    l.has_done = contains_return(&f.block);
    let tail = if sig.ret.is_some() {
        Tail::Into(var_place(ret_ident()))
    } else {
        Tail::Stmt
    };
    let body = l.block(&f.block.stmts, &tail)?;
    Ok(Func {
        locals: l.locals,
        body,
        has_done: l.has_done,
    })
}

fn var_place(base: Ident) -> Place {
    Place {
        base,
        index: Vec::new(),
        deref: false,
    }
}

/// Whether `block` holds a `return` (outside closures).
fn contains_return<T: ToTokens>(node: &T) -> bool {
    struct Find(bool);
    impl<'ast> Visit<'ast> for Find {
        fn visit_expr_return(&mut self, _: &'ast syn::ExprReturn) {
            self.0 = true;
        }
        fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
        fn visit_item(&mut self, _: &'ast syn::Item) {}
    }
    let mut f = Find(false);
    let tokens = node.to_token_stream();
    if let Ok(b) = syn::parse2::<syn::Block>(quote!({ #tokens })) {
        f.visit_block(&b);
    }
    f.0
}

impl Lower<'_> {
    fn unsupported(&self, span: Span, what: &str) -> Error {
        Error::unsupported(span, what, self.mode)
    }

    /// A fresh unique name for a new binding of `orig`, bound in the current scope.
    fn bind_name(&mut self, orig: &Ident) -> Ident {
        let key = orig.to_string();
        let n = self.used.entry(key.clone()).or_insert(0);
        let name = if *n == 0 {
            orig.clone()
        } else {
            Ident::new(&format!("{key}__{n}"), orig.span())
        };
        *n += 1;
        self.scopes
            .last_mut()
            .expect("a scope")
            .push((key, Bind::Name(name.clone())));
        name
    }

    fn bind_alias(&mut self, orig: &Ident, b: Bind) {
        self.scopes
            .last_mut()
            .expect("a scope")
            .push((orig.to_string(), b));
    }

    fn fresh(&mut self, prefix: &str) -> Ident {
        self.tmp += 1;
        format_ident!("__{}{}", prefix, self.tmp)
    }

    fn rename(&self, e: &Expr) -> Result<Expr> {
        Renamer::new(&self.scopes, self.mode).expr(e)
    }

    fn new_local(
        &mut self,
        name: Ident,
        mutable: bool,
        ty: Option<syn::Type>,
        _span: Span,
    ) -> usize {
        self.locals.push(Local {
            name,
            mutable,
            ty,
            depth: self.depth,
        });
        self.locals.len() - 1
    }

    /// A nested block: a new scope one level deeper.
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        self.scopes.push(Vec::new());
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        self.scopes.pop();
        r
    }

    fn block(&mut self, stmts: &[syn::Stmt], tail: &Tail) -> Result<Vec<Stmt>> {
        let mut out = Vec::new();
        for (k, s) in stmts.iter().enumerate() {
            let last = k + 1 == stmts.len();
            self.stmt(s, last, tail, &mut out)?;
            if !last && contains_return(s) {
                if self.in_loop {
                    return Err(self
                        .unsupported(s.span(), "a `return` nested inside a block of a loop body")
                        .help("return from an `if` placed directly in the loop body"));
                }
                // The rest runs only if nothing returned.
                let rest = self.nested(|l| l.block(&stmts[k + 1..], tail))?;
                out.push(Stmt::If {
                    cond: syn::parse_quote!(!__done),
                    then: rest,
                    els: Vec::new(),
                });
                return Ok(out);
            }
        }
        Ok(out)
    }

    fn stmt(&mut self, s: &syn::Stmt, last: bool, tail: &Tail, out: &mut Vec<Stmt>) -> Result<()> {
        match s {
            syn::Stmt::Local(l) => self.local(l, out),
            syn::Stmt::Item(i) => {
                Err(self.unsupported(i.span(), "an item declared inside the function"))
            }
            syn::Stmt::Macro(m) => {
                out.push(self.verbatim_macro(&m.mac, m.span())?);
                Ok(())
            }
            syn::Stmt::Expr(e, semi) => {
                if semi.is_none()
                    && last
                    && let Tail::Into(p) = tail
                {
                    return self.value_into(p.clone(), e, out);
                }
                self.expr_stmt(e, out)
            }
        }
    }

    fn verbatim_macro(&self, mac: &syn::Macro, span: Span) -> Result<Stmt> {
        // Rename the arguments of expression-like macros (`assert!(a > 0.0)`).
        let args = mac
            .parse_body_with(syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated);
        let tokens = match args {
            Ok(args) => {
                let mut renamed = Vec::new();
                for a in &args {
                    renamed.push(self.rename(a)?);
                }
                let path = &mac.path;
                quote!(#path!(#(#renamed),*);)
            }
            Err(_) => quote!(#mac;),
        };
        Ok(Stmt::Verbatim {
            tokens,
            writes: Vec::new(),
            reads: Vec::new(),
            span,
        })
    }

    fn local(&mut self, l: &syn::Local, out: &mut Vec<Stmt>) -> Result<()> {
        if let Some(d) = &l.init.as_ref().and_then(|i| i.diverge.as_ref()) {
            return Err(self.unsupported(d.0.span, "`let ... else`"));
        }
        let (ident, mutable, ty) = match &l.pat {
            Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => {
                (p.ident.clone(), p.mutability.is_some(), None)
            }
            Pat::Type(pt) => match &*pt.pat {
                Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => (
                    p.ident.clone(),
                    p.mutability.is_some(),
                    Some((*pt.ty).clone()),
                ),
                p => return self.verbatim_let(l, p, out),
            },
            p => return self.verbatim_let(l, p, out),
        };
        let init_expr = l.init.as_ref().map(|i| &*i.expr);
        // The initialiser is lowered before the name is bound (`let x = x + 1.0`).
        let init = match init_expr {
            None => Init::Uninit,
            Some(e) => match strip(e) {
                Expr::If(_) | Expr::Match(_) | Expr::Block(_) => {
                    let name = self.bind_name(&ident);
                    let local = self.new_local(name.clone(), true, ty, ident.span());
                    out.push(Stmt::Let {
                        local,
                        init: Init::Uninit,
                        span: l.span(),
                    });
                    return self.value_into(var_place(name), e, out);
                }
                Expr::Macro(m) if m.mac.path.is_ident("vec") => {
                    let parts = m.mac.parse_body_with(
                        syn::punctuated::Punctuated::<Expr, syn::Token![;]>::parse_separated_nonempty,
                    );
                    match parts {
                        Ok(p) if p.len() == 2 => Init::Vec {
                            fill: self.rename(&p[0])?,
                            len: self.rename(&p[1])?,
                        },
                        _ => {
                            return Err(self
                                .unsupported(m.span(), "`vec![a, b, …]`")
                                .help("write `vec![0.0; n]` and assign the elements"));
                        }
                    }
                }
                Expr::Repeat(r) => Init::Repeat {
                    fill: self.rename(&r.expr)?,
                    len: self.rename(&r.len)?,
                },
                Expr::Array(a) => {
                    let mut v = Vec::new();
                    for e in &a.elems {
                        let e = self.rename(e)?;
                        v.push(self.extract_calls(e, out)?);
                    }
                    Init::List(v)
                }
                Expr::Call(c) if is_user_call(c) => Init::Call(self.call(c, out)?),
                _ => {
                    let e = self.rename(e)?;
                    Init::Expr(self.extract_calls(e, out)?)
                }
            },
        };
        let name = self.bind_name(&ident);
        let local = self.new_local(name, mutable, ty, ident.span());
        out.push(Stmt::Let {
            local,
            init,
            span: l.span(),
        });
        Ok(())
    }

    /// A `let` with a pattern: emitted as written; the names it binds are checked not
    /// to carry derivatives.
    fn verbatim_let(&mut self, l: &syn::Local, pat: &Pat, out: &mut Vec<Stmt>) -> Result<()> {
        let init = match &l.init {
            Some(i) => Some(self.rename(&i.expr)?),
            None => None,
        };
        let mut names = Vec::new();
        collect_pat_idents(pat, &mut names);
        let mut pat = pat.clone();
        let mut renamed = Vec::new();
        for n in &names {
            renamed.push(self.bind_name(n));
        }
        rename_pat(&mut pat, &names, &renamed);
        let ty = match &l.pat {
            Pat::Type(pt) => {
                let t = &pt.ty;
                quote!(: #t)
            }
            _ => quote!(),
        };
        let reads = init
            .as_ref()
            .map(crate::analysis::all_reads)
            .unwrap_or_default();
        let init = init.map(|e| quote!(= #e));
        out.push(Stmt::Verbatim {
            tokens: quote!(let #pat #ty #init;),
            writes: renamed,
            reads,
            span: l.span(),
        });
        Ok(())
    }

    /// Assigns the value of `e` (an `if`, `match` or block expression, or a plain
    /// one) to `p`.
    fn value_into(&mut self, p: Place, e: &Expr, out: &mut Vec<Stmt>) -> Result<()> {
        let tail = Tail::Into(p.clone());
        match strip(e) {
            Expr::If(i) => self.if_stmt(i, &tail, out),
            Expr::Match(m) => self.match_stmt(m, &tail, out),
            Expr::Block(b) if b.label.is_none() => {
                let stmts = self.nested(|l| l.block(&b.block.stmts, &tail))?;
                out.extend(stmts);
                Ok(())
            }
            Expr::Return(r) => self.ret(r, out),
            Expr::Call(c) if is_user_call(c) => {
                let call = self.call(c, out)?;
                let t = self.fresh("c");
                let local = self.new_local(t.clone(), false, None, c.span());
                out.push(Stmt::Let {
                    local,
                    init: Init::Call(call),
                    span: c.span(),
                });
                out.push(assign(p, Op::Set, syn::parse_quote!(#t), e.span()));
                Ok(())
            }
            _ => {
                let v = self.rename(e)?;
                let v = self.extract_calls(v, out)?;
                out.push(assign(p, Op::Set, v, e.span()));
                Ok(())
            }
        }
    }

    fn ret(&mut self, r: &syn::ExprReturn, out: &mut Vec<Stmt>) -> Result<()> {
        match (&r.expr, self.returns) {
            (Some(e), true) => self.value_into(var_place(ret_ident()), e, out)?,
            (None, false) => {}
            (Some(e), false) => self.expr_stmt(e, out)?,
            (None, true) => return Err(Error::new(r.span(), "`return` without a value")),
        }
        out.push(assign(
            var_place(done_ident()),
            Op::Set,
            syn::parse_quote!(true),
            r.span(),
        ));
        Ok(())
    }

    fn expr_stmt(&mut self, e: &Expr, out: &mut Vec<Stmt>) -> Result<()> {
        match strip(e) {
            Expr::Assign(a) => {
                let place = self.place(&a.left)?;
                self.value_into(place, &a.right, out)
            }
            Expr::Binary(b) if is_compound(&b.op) => self.compound(b, out),
            Expr::If(i) => self.if_stmt(i, &Tail::Stmt, out),
            Expr::Match(m) => self.match_stmt(m, &Tail::Stmt, out),
            Expr::ForLoop(f) => self.for_loop(f, out),
            Expr::While(w) => self.while_loop(w, out),
            Expr::Loop(l) => self.plain_loop(l, out),
            Expr::Return(r) => self.ret(r, out),
            Expr::Block(b) if b.label.is_none() => {
                let stmts = self.nested(|l| l.block(&b.block.stmts, &Tail::Stmt))?;
                out.extend(stmts);
                Ok(())
            }
            Expr::Call(c) if is_user_call(c) => {
                let call = self.call(c, out)?;
                out.push(Stmt::Call(call));
                Ok(())
            }
            Expr::Macro(m) => {
                out.push(self.verbatim_macro(&m.mac, m.span())?);
                Ok(())
            }
            Expr::Break(b) => Err(self.unsupported(b.span(), "a `break` outside `if cond { …; break; }`")
                .help("end the loop with an `if` whose branch ends in `break`, directly in the loop body")),
            Expr::Continue(c) => Err(self.unsupported(c.span(), "`continue`")
                .help("put the rest of the iteration in an `if`")),
            Expr::Closure(c) => Err(self.unsupported(c.span(), "a closure")),
            Expr::Async(a) => Err(self.unsupported(a.span(), "an `async` block")),
            Expr::Unsafe(u) => Err(self.unsupported(u.span(), "an `unsafe` block")),
            other => {
                let renamed = self.rename(other)?;
                let writes = mutated_bases(&renamed);
                out.push(Stmt::Verbatim {
                    tokens: quote!(#renamed;),
                    writes,
                    reads: crate::analysis::all_reads(&renamed),
                    span: other.span(),
                });
                Ok(())
            }
        }
    }

    fn compound(&mut self, b: &syn::ExprBinary, out: &mut Vec<Stmt>) -> Result<()> {
        let place = self.place(&b.left)?;
        let value = self.rename(&b.right)?;
        let value = self.extract_calls(value, out)?;
        let left = self.rename(&b.left)?;
        let span = b.span();
        let st = match b.op {
            BinOp::AddAssign(_) => assign(place, Op::Add, value, span),
            BinOp::SubAssign(_) => assign(place, Op::Sub, value, span),
            BinOp::MulAssign(_) => {
                assign(place, Op::Set, syn::parse_quote!(#left * (#value)), span)
            }
            BinOp::DivAssign(_) => {
                assign(place, Op::Set, syn::parse_quote!(#left / (#value)), span)
            }
            _ => {
                let renamed = self.rename(&Expr::Binary(b.clone()))?;
                Stmt::Verbatim {
                    tokens: quote!(#renamed;),
                    writes: vec![place.base],
                    reads: crate::analysis::all_reads(&renamed),
                    span,
                }
            }
        };
        out.push(st);
        Ok(())
    }

    /// The place an assignment writes.
    fn place(&self, e: &Expr) -> Result<Place> {
        let renamed = self.rename(e)?;
        let mut index = Vec::new();
        let mut cur = &renamed;
        loop {
            match cur {
                Expr::Index(i) => {
                    index.push((*i.index).clone());
                    cur = &i.expr;
                }
                Expr::Paren(p) => cur = &p.expr,
                _ => break,
            }
        }
        index.reverse();
        let (base, deref) = match cur {
            Expr::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => {
                (p.path.get_ident().cloned().expect("an ident"), false)
            }
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) && index.is_empty() => {
                match &*u.expr {
                    Expr::Path(p) if p.path.get_ident().is_some() => {
                        (p.path.get_ident().cloned().expect("an ident"), true)
                    }
                    _ => return Err(self.unsupported(e.span(), "this assignment target")),
                }
            }
            _ => {
                return Err(self
                    .unsupported(e.span(), "this assignment target")
                    .note("assignments write a variable, `*r`, or an element `a[i]` / `a[i][j]`"));
            }
        };
        Ok(Place { base, index, deref })
    }

    fn if_stmt(&mut self, i: &syn::ExprIf, tail: &Tail, out: &mut Vec<Stmt>) -> Result<()> {
        if let Expr::Let(l) = &*i.cond {
            return Err(self.unsupported(l.span(), "`if let`"));
        }
        let cond = self.rename(&i.cond)?;
        let then = self.nested(|l| l.block(&i.then_branch.stmts, tail))?;
        let els = match &i.else_branch {
            None => Vec::new(),
            Some((_, e)) => self.nested(|l| match strip(e) {
                Expr::Block(b) => l.block(&b.block.stmts, tail),
                other => {
                    let mut v = Vec::new();
                    match (tail, other) {
                        (Tail::Into(p), _) => l.value_into(p.clone(), other, &mut v)?,
                        (Tail::Stmt, Expr::If(ei)) => l.if_stmt(ei, tail, &mut v)?,
                        (Tail::Stmt, _) => l.expr_stmt(other, &mut v)?,
                    }
                    Ok(v)
                }
            })?,
        };
        out.push(Stmt::If { cond, then, els });
        Ok(())
    }

    fn match_stmt(&mut self, m: &syn::ExprMatch, tail: &Tail, out: &mut Vec<Stmt>) -> Result<()> {
        let scrut = self.rename(&m.expr)?;
        let mut arms = Vec::new();
        for a in &m.arms {
            let mut names = Vec::new();
            collect_pat_idents(&a.pat, &mut names);
            if let Some(n) = names.first() {
                return Err(self
                    .unsupported(n.span(), "a binding in a `match` pattern")
                    .help("match on values with literals, ranges, `|` and guards"));
            }
            let guard = match &a.guard {
                Some((_, g)) => Some(self.rename(g)?),
                None => None,
            };
            let body = self.nested(|l| {
                let mut v = Vec::new();
                match (&*a.body, tail) {
                    (Expr::Block(b), _) => v = l.block(&b.block.stmts, tail)?,
                    (e, Tail::Into(p)) => l.value_into(p.clone(), e, &mut v)?,
                    (e, Tail::Stmt) => l.expr_stmt(e, &mut v)?,
                }
                Ok(v)
            })?;
            arms.push(Arm {
                pat: a.pat.clone(),
                guard,
                body,
            });
        }
        out.push(Stmt::Match { scrut, arms });
        Ok(())
    }

    /// A loop body: top-level `if c { …; break; }` (and `if c { …; return e; }`)
    /// split it into segments.
    fn loop_body(&mut self, stmts: &[syn::Stmt], mut body: Body) -> Result<Body> {
        let was = self.in_loop;
        self.in_loop = true;
        let r = self.nested(|l| {
            if body.segs.is_empty() {
                body.segs.push(Vec::new());
            }
            for s in stmts {
                if let Some((cond, tail)) = l.breaking_if(s)? {
                    body.breaks.push((cond, tail));
                    body.segs.push(Vec::new());
                    continue;
                }
                let mut v = Vec::new();
                l.stmt(s, false, &Tail::Stmt, &mut v)?;
                body.segs.last_mut().expect("a segment").extend(v);
                if contains_return(s) {
                    // A nested loop returned: leave this one too.
                    body.breaks.push((syn::parse_quote!(__done), Vec::new()));
                    body.segs.push(Vec::new());
                }
            }
            Ok(body)
        });
        self.in_loop = was;
        r
    }

    /// `if c { …; break; }` or `if c { …; return e; }` directly in a loop body.
    fn breaking_if(&mut self, s: &syn::Stmt) -> Result<Option<(Expr, Vec<Stmt>)>> {
        let syn::Stmt::Expr(Expr::If(i), _) = s else {
            return Ok(None);
        };
        let Some(last) = i.then_branch.stmts.last() else {
            return Ok(None);
        };
        let ends = match last {
            syn::Stmt::Expr(Expr::Break(b), _) => {
                if b.label.is_some() || b.expr.is_some() {
                    return Err(
                        self.unsupported(b.span(), "a labelled `break` or `break` with a value")
                    );
                }
                Some(false)
            }
            syn::Stmt::Expr(Expr::Return(_), _) => Some(true),
            _ => None,
        };
        let Some(returns) = ends else {
            return Ok(None);
        };
        if i.else_branch.is_some() {
            return Err(self
                .unsupported(i.span(), "a breaking `if` with an `else`")
                .help("put the `else` statements after the `if`"));
        }
        let n = i.then_branch.stmts.len();
        let cond = self.rename(&i.cond)?;
        let was = self.in_loop;
        self.in_loop = false;
        let tail = self.nested(|l| {
            let mut v = l.block(&i.then_branch.stmts[..n - 1], &Tail::Stmt)?;
            if returns {
                let syn::Stmt::Expr(Expr::Return(r), _) = last else {
                    unreachable!("checked above")
                };
                l.ret(r, &mut v)?;
            }
            Ok(v)
        });
        self.in_loop = was;
        Ok(Some((cond, tail?)))
    }

    fn for_loop(&mut self, f: &syn::ExprForLoop, out: &mut Vec<Stmt>) -> Result<()> {
        if let Some(l) = &f.label {
            return Err(self.unsupported(l.span(), "a loop label"));
        }
        let span = f.span();
        if let Some(r) = iter::range(&f.expr) {
            let lo = self.rename(&r.lo)?;
            let hi = self.rename(&r.hi)?;
            let (var, bind) = match &*f.pat {
                Pat::Ident(p) if p.subpat.is_none() => (None, Some(p.ident.clone())),
                Pat::Wild(_) => (None, None),
                p => return Err(self.unsupported(p.span(), "this loop pattern")),
            };
            let _: Option<()> = var;
            // The loop variable belongs to the body's scope.
            self.scopes.push(Vec::new());
            let var = match &bind {
                Some(b) => self.bind_name(b),
                None => self.fresh("k"),
            };
            let body = self.loop_body(&f.body.stmts, Body::default());
            self.scopes.pop();
            out.push(Stmt::For {
                var,
                lo,
                hi,
                inclusive: r.inclusive,
                rev: r.rev,
                body: body?,
                span,
            });
            return Ok(());
        }
        let k = self.fresh("k");
        let Some(src) = iter::parse(&f.expr) else {
            return Err(self.unsupported(f.expr.span(), "this iterator").note(
                "loops run over ranges `a..b`, `a..=b`, `(a..b).rev()`, and over `x.iter()`, \
                       `x.iter_mut()`, `x.windows(n)`, `x.chunks_exact(n)` with `.zip(…)` and \
                       `.enumerate()`",
            ));
        };
        let mut lens = Vec::new();
        let mut binds = Vec::new();
        iter::bind(&src, &f.pat, &k, &mut lens, &mut binds)
            .map_err(|span| self.unsupported(span, "this loop pattern"))?;
        let mut renamed_lens = Vec::new();
        for e in &lens {
            renamed_lens.push(self.rename(e)?);
        }
        let hi = renamed_lens
            .into_iter()
            .reduce(|a, b| syn::parse_quote!(::core::cmp::min(#a, #b)))
            .expect("at least one source");
        self.scopes.push(Vec::new());
        self.used.insert(k.to_string(), 1);
        for (name, b) in binds {
            let b = b.renamed(self)?;
            self.bind_alias(&name, b);
        }
        let body = self.loop_body(&f.body.stmts, Body::default());
        self.scopes.pop();
        out.push(Stmt::For {
            var: k,
            lo: syn::parse_quote!(0usize),
            hi,
            inclusive: false,
            rev: false,
            body: body?,
            span,
        });
        Ok(())
    }

    fn while_loop(&mut self, w: &syn::ExprWhile, out: &mut Vec<Stmt>) -> Result<()> {
        if let Some(l) = &w.label {
            return Err(self.unsupported(l.span(), "a loop label"));
        }
        if let Expr::Let(l) = &*w.cond {
            return Err(self.unsupported(l.span(), "`while let`"));
        }
        let cond = self.rename(&w.cond)?;
        let pre = Body {
            segs: vec![Vec::new(), Vec::new()],
            breaks: vec![(syn::parse_quote!(!(#cond)), Vec::new())],
        };
        let body = self.loop_body(&w.body.stmts, pre)?;
        out.push(Stmt::Loop { body });
        Ok(())
    }

    fn plain_loop(&mut self, l: &syn::ExprLoop, out: &mut Vec<Stmt>) -> Result<()> {
        if let Some(lb) = &l.label {
            return Err(self.unsupported(lb.span(), "a loop label"));
        }
        let body = self.loop_body(&l.body.stmts, Body::default())?;
        out.push(Stmt::Loop { body });
        Ok(())
    }

    fn call(&mut self, c: &syn::ExprCall, out: &mut Vec<Stmt>) -> Result<Call> {
        let Expr::Path(p) = &*c.func else {
            unreachable!("checked by is_user_call")
        };
        let mut args = Vec::new();
        for a in &c.args {
            let a = self.rename(a)?;
            args.push(self.extract_calls(a, out)?);
        }
        Ok(Call {
            callee: p.path.clone(),
            args,
            span: c.span(),
        })
    }

    /// Moves calls of user functions out of `e` into `let` temporaries.
    fn extract_calls(&mut self, e: Expr, out: &mut Vec<Stmt>) -> Result<Expr> {
        struct Ex<'l, 'a> {
            l: &'l mut Lower<'a>,
            out: &'l mut Vec<Stmt>,
            err: Option<Error>,
        }
        impl syn::visit_mut::VisitMut for Ex<'_, '_> {
            fn visit_expr_mut(&mut self, e: &mut Expr) {
                if let Expr::Call(c) = e
                    && is_user_call(c)
                {
                    for a in c.args.iter_mut() {
                        self.visit_expr_mut(a);
                    }
                    let Expr::Path(p) = &*c.func else { return };
                    let call = Call {
                        callee: p.path.clone(),
                        args: c.args.iter().cloned().collect(),
                        span: c.span(),
                    };
                    let t = self.l.fresh("c");
                    let local = self.l.new_local(t.clone(), false, None, c.span());
                    self.out.push(Stmt::Let {
                        local,
                        init: Init::Call(call),
                        span: c.span(),
                    });
                    *e = syn::parse_quote!(#t);
                    return;
                }
                match e {
                    // Short-circuiting and closures keep their calls where they are.
                    Expr::Closure(_) => {}
                    Expr::Binary(b) if matches!(b.op, BinOp::And(_) | BinOp::Or(_)) => {}
                    Expr::If(i) => self.err = Some(Error::unsupported(i.span(), "an `if` inside an expression", self.l.mode)
                        .help("assign the `if` to a variable first: `let y = if c { a } else { b };`")),
                    _ => syn::visit_mut::visit_expr_mut(self, e),
                }
            }
        }
        let mut e = e;
        let mut ex = Ex {
            l: self,
            out,
            err: None,
        };
        syn::visit_mut::VisitMut::visit_expr_mut(&mut ex, &mut e);
        match ex.err {
            Some(err) => Err(err),
            None => Ok(e),
        }
    }
}

fn assign(place: Place, op: Op, value: Expr, span: Span) -> Stmt {
    Stmt::Assign {
        place,
        op,
        value,
        span,
    }
}

fn strip(e: &Expr) -> &Expr {
    match e {
        Expr::Paren(p) => strip(&p.expr),
        Expr::Group(g) => strip(&g.expr),
        e => e,
    }
}

fn is_compound(op: &BinOp) -> bool {
    matches!(
        op,
        BinOp::AddAssign(_)
            | BinOp::SubAssign(_)
            | BinOp::MulAssign(_)
            | BinOp::DivAssign(_)
            | BinOp::RemAssign(_)
            | BinOp::BitAndAssign(_)
            | BinOp::BitOrAssign(_)
            | BinOp::BitXorAssign(_)
            | BinOp::ShlAssign(_)
            | BinOp::ShrAssign(_)
    )
}

/// Primitive types and traits whose associated functions are elementary functions or
/// constructors, not user functions (`f64::max(a, b)`, `usize::min`, `Real::custom`).
const BUILTIN_ROOTS: &[&str] = &[
    "f64", "f32", "usize", "isize", "u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64", "Real",
    "Float", "core", "std", "Some", "Ok", "Err", "Vec", "Box", "String",
];

/// Whether `c` calls a user function (one that may carry the attribute).
pub(crate) fn is_user_call(c: &syn::ExprCall) -> bool {
    let Expr::Path(p) = &*c.func else {
        return false;
    };
    if p.qself.is_some() {
        return false;
    }
    let Some(first) = p.path.segments.first() else {
        return false;
    };
    let root = first.ident.to_string();
    if BUILTIN_ROOTS.contains(&root.as_str()) {
        return false;
    }
    let segs: Vec<String> = p
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    let upper = |s: &String| s.starts_with(|c: char| c.is_uppercase());
    // Tuple structs and enum variants are capitalised, and so are the types whose
    // associated functions are called (`S::cst`, `Self::new`).
    let n = segs.len();
    !(upper(&segs[n - 1]) || (n >= 2 && upper(&segs[n - 2])))
}

pub(crate) fn collect_pat_idents(p: &Pat, out: &mut Vec<Ident>) {
    struct C<'a>(&'a mut Vec<Ident>);
    impl<'ast> Visit<'ast> for C<'_> {
        fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
            // A lone capitalised identifier is a constant or unit variant, not a binding.
            if !p.ident.to_string().starts_with(|c: char| c.is_uppercase()) || p.subpat.is_some() {
                self.0.push(p.ident.clone());
            }
            syn::visit::visit_pat_ident(self, p);
        }
    }
    C(out).visit_pat(p);
}

fn rename_pat(p: &mut Pat, from: &[Ident], to: &[Ident]) {
    struct R<'a>(&'a [Ident], &'a [Ident]);
    impl syn::visit_mut::VisitMut for R<'_> {
        fn visit_pat_ident_mut(&mut self, p: &mut syn::PatIdent) {
            if let Some(k) = self.0.iter().position(|f| *f == p.ident) {
                p.ident = self.1[k].clone();
            }
            syn::visit_mut::visit_pat_ident_mut(self, p);
        }
    }
    syn::visit_mut::VisitMut::visit_pat_mut(&mut R(from, to), p);
}

/// Variables an expression statement may write: receivers of method calls and
/// operands of `&mut`.
fn mutated_bases(e: &Expr) -> Vec<Ident> {
    struct M(Vec<Ident>);
    fn base(e: &Expr) -> Option<Ident> {
        match e {
            Expr::Path(p) => p.path.get_ident().cloned(),
            Expr::Index(i) => base(&i.expr),
            Expr::Field(f) => base(&f.base),
            Expr::Paren(p) => base(&p.expr),
            Expr::Unary(u) => base(&u.expr),
            Expr::MethodCall(m) => base(&m.receiver),
            _ => None,
        }
    }
    impl<'ast> Visit<'ast> for M {
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            self.0.extend(base(&m.receiver));
            syn::visit::visit_expr_method_call(self, m);
        }
        fn visit_expr_reference(&mut self, r: &'ast syn::ExprReference) {
            if r.mutability.is_some() {
                self.0.extend(base(&r.expr));
            }
            syn::visit::visit_expr_reference(self, r);
        }
        fn visit_expr_assign(&mut self, a: &'ast syn::ExprAssign) {
            self.0.extend(base(&a.left));
            syn::visit::visit_expr_assign(self, a);
        }
    }
    let mut m = M(Vec::new());
    m.visit_expr(e);
    m.0
}
