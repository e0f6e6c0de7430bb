//! Reverse-mode emission: the forward sweep (the primal, saving what is overwritten
//! and what the reverse sweep needs) followed by the reverse sweep (the statements
//! backwards, in straight Rust).
//!
//! Invariant: the reverse of a statement starts with every variable the reverse sweep
//! reads (the set `R`) holding its value after the statement, and ends with its value
//! before it. Values of `R` overwritten by the forward sweep are saved on the
//! workspace's stacks and restored on the way back; branch decisions and trip counts
//! are saved likewise. Nested `let`s of `R` are either recomputed at the top of their
//! block's reverse (cheap initialisers whose inputs do not change later in the block)
//! or declared at the top of the function (*hoisted*) and saved like assignments.
//!
//! `R` is found by running the emitter until it stops growing (each run records the
//! variables its code reads).

mod call;
mod defer;
mod tbr;

use crate::analysis::{Info, Shape, all_reads, writes};
use crate::error::{Error, Result};
use crate::expr::{Emit, adj_ident, build};
use crate::ir::{Body, Func, Init, Op, Place, Stmt};
use crate::sig::{Class, Sig};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use std::collections::{HashMap, HashSet};

/// How a local is kept for the reverse sweep.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// Declared where it is; not needed by the reverse sweep, or alive until the end.
    Plain,
    /// Recomputed at the top of its block's reverse.
    Recompute,
    /// Declared at the top of the function and saved before each overwrite.
    Hoist,
    /// A local of its block, whose final value the block's end saves and the top of
    /// its reverse restores (active scalars in blocks without `break`).
    Snapshot,
}

pub(crate) struct Rev<'a> {
    sig: &'a Sig,
    func: &'a Func,
    info: &'a Info,
    /// Variables read by the reverse sweep, from the previous run.
    r: HashSet<String>,
    /// Variables read by the code of this run.
    reads: HashSet<String>,
    tmp: usize,
    /// Active `Vec` locals, whose storage comes from the workspace's pool.
    pooled: Vec<syn::Ident>,
    /// Which statements' code reads which variables (this run).
    readers: HashMap<String, HashSet<usize>>,
    /// The statements being emitted, innermost last.
    cur: Vec<usize>,
    /// Assignments whose save is skipped (see `tbr`).
    skip: HashSet<usize>,
    /// Calls whose forward is deferred, and the accumulations of their values
    /// (see `defer`).
    deferred: (HashSet<usize>, HashSet<usize>),
    /// Locals that may be kept as [`Keep::Snapshot`].
    snapshot_ok: HashSet<usize>,
}

/// The body of the internal reverse function: forward sweep, reverse sweep, result.
pub(crate) fn emit(sig: &Sig, func: &Func, info: &Info) -> Result<TokenStream> {
    let mut r = HashSet::new();
    let mut readers = HashMap::new();
    for _ in 0..64 {
        let mut rev = Rev::new(sig, func, info, r.clone());
        rev.body()?;
        let grown = rev.closure();
        readers = rev.readers;
        if grown.is_subset(&r) {
            break;
        }
        r.extend(grown);
    }
    let mut rev = Rev::new(sig, func, info, r);
    rev.skip = rev.skips(&readers);
    rev.deferred = rev.deferrable();
    rev.body()
}

impl<'a> Rev<'a> {
    fn new(sig: &'a Sig, func: &'a Func, info: &'a Info, r: HashSet<String>) -> Self {
        Rev {
            sig,
            func,
            info,
            r,
            reads: HashSet::new(),
            tmp: 0,
            pooled: Vec::new(),
            readers: HashMap::new(),
            cur: Vec::new(),
            skip: HashSet::new(),
            deferred: (HashSet::new(), HashSet::new()),
            snapshot_ok: snapshot_candidates(func, info),
        }
    }

    /// Records that the current statement's code reads `names`.
    fn read_names(&mut self, names: impl IntoIterator<Item = String>) {
        let at = self.cur.last().copied().unwrap_or(0);
        for n in names {
            self.readers.entry(n.clone()).or_default().insert(at);
            self.reads.insert(n);
        }
    }

    /// Whether the assignment `s` to `base` saves the value it overwrites.
    fn saves(&self, s: &Stmt, base: &syn::Ident) -> bool {
        self.in_r(base) && !self.skip.contains(&tbr::addr(s))
    }

    /// The reads of this run plus the inputs of recomputed `let`s.
    fn closure(&self) -> HashSet<String> {
        let mut out = self.reads.clone();
        loop {
            let mut more = Vec::new();
            for (k, l) in self.func.locals.iter().enumerate() {
                let name = l.name.to_string();
                if out.contains(&name)
                    && self.keep(k) == Keep::Recompute
                    && let Some(init) = self.init_of(k)
                {
                    more.extend(all_reads(init).into_iter().filter(|r| !out.contains(r)));
                }
            }
            if more.is_empty() {
                return out;
            }
            out.extend(more);
        }
    }

    fn init_of(&self, local: usize) -> Option<&'a syn::Expr> {
        fn find(stmts: &[Stmt], local: usize) -> Option<&syn::Expr> {
            for s in stmts {
                match s {
                    Stmt::Let {
                        local: l,
                        init: Init::Expr(e),
                        ..
                    } if *l == local => return Some(e),
                    other => {
                        for c in other.children() {
                            if let Some(e) = find(c, local) {
                                return Some(e);
                            }
                        }
                    }
                }
            }
            None
        }
        find(&self.func.body, local)
    }

    fn keep(&self, local: usize) -> Keep {
        let l = &self.func.locals[local];
        let name = l.name.to_string();
        if l.depth == 0 || !self.r.contains(&name) {
            Keep::Plain
        } else if self.info.recomputable.contains(&name) {
            Keep::Recompute
        } else if self.snapshot_ok.contains(&local) {
            Keep::Snapshot
        } else {
            Keep::Hoist
        }
    }

    fn fresh(&mut self, p: &str) -> syn::Ident {
        self.tmp += 1;
        format_ident!("__{}{}", p, self.tmp)
    }

    fn float(&self) -> syn::Ident {
        self.sig.float.ident()
    }

    fn active(&self, name: &syn::Ident) -> bool {
        self.info.is_active(&name.to_string())
    }

    fn in_r(&self, name: &syn::Ident) -> bool {
        self.r.contains(&name.to_string())
    }

    fn read(&mut self, e: &syn::Expr) {
        self.read_names(all_reads(e));
    }

    /// The whole body of the internal function.
    fn body(&mut self) -> Result<TokenStream> {
        let f = self.float();
        let mut hoisted = Vec::new();
        for (k, l) in self.func.locals.iter().enumerate() {
            if self.keep(k) == Keep::Hoist {
                let (name, ty) = (&l.name, l.ty.as_ref().map(|t| quote!(: #t)));
                hoisted.push(quote!(let mut #name #ty = ::shade_autodiff::compiled::hoist();));
            }
        }
        let ret_decl = self
            .sig
            .ret
            .as_ref()
            .map(|t| quote!(let mut __ret: #t = ::shade_autodiff::compiled::hoist();));
        let done_decl = self.func.has_done.then(|| quote!(let mut __done = false;));
        let forward = self.fwd_stmts(&self.func.body)?;

        // Buffers the caller keeps the final values of (`__keep`).
        let mut keep_save = Vec::new();
        let mut keep_restore = Vec::new();
        let mut written = HashSet::new();
        writes(&self.func.body, self.func, &mut written);
        for p in &self.sig.params {
            let n = &p.name;
            if !written.contains(&n.to_string())
                || !self.in_r(n)
                || p.act == crate::sig::Act::DuplicatedNoNeed
            {
                continue;
            }
            match p.class {
                // The final values wait in a pooled buffer (not on the stacks, which
                // the reverse sweep pops).
                Class::Array { mutable: true, .. } => {
                    let fin = format_ident!("__fin_{}", n);
                    keep_save.push(quote! {
                        let mut #fin = <#f as ::shade_autodiff::compiled::Pooled>::take(__ws, 0, 0.0);
                        if __keep { #fin.extend_from_slice(&#n[..]); }
                    });
                    keep_restore.push(quote! {
                        if __keep { #n.copy_from_slice(&#fin); }
                        <#f as ::shade_autodiff::compiled::Pooled>::give(__ws, #fin);
                    });
                }
                Class::ScalarRef { mutable: true, .. } => {
                    let fin = format_ident!("__fin_{}", n);
                    keep_save.push(quote!(let #fin: #f = *#n;));
                    keep_restore.push(quote!(if __keep { *#n = #fin; }));
                }
                _ => {}
            }
        }
        keep_restore.reverse();

        // Adjoints of the function's top level.
        let mut adjoints = Vec::new();
        if self.sig.ret_act.is_active() {
            adjoints.push(quote!(let mut __d___ret: #f = __seed;));
        }
        for p in &self.sig.params {
            if matches!(p.class, Class::Scalar(_)) && p.act.is_active() {
                let d = adj_ident(&p.name);
                adjoints.push(quote!(let mut #d: #f = 0.0;));
            }
        }
        adjoints.push(self.prelude(&[&self.func.body], true)?);
        let deferred = !self.deferred.0.is_empty();
        if deferred {
            adjoints.push(quote!(let mut __deferred: #f = 0.0;));
        }
        let reverse = self.rev_stmts(&self.func.body)?;
        let add_deferred = deferred.then(|| quote!(__ret = __ret + __deferred;));
        let give: Vec<_> = self
            .pooled
            .iter()
            .map(|v| {
                let d = adj_ident(v);
                quote!(
                    <#f as ::shade_autodiff::compiled::Pooled>::give(__ws, #v);
                    <#f as ::shade_autodiff::compiled::Pooled>::give(__ws, #d);
                )
            })
            .collect();
        let ret_val = if self.sig.ret.is_some() {
            quote!(__ret)
        } else {
            quote!(())
        };
        let outs: Vec<_> = self
            .sig
            .params
            .iter()
            .filter(|p| matches!(p.class, Class::Scalar(_)) && p.act.is_active())
            .map(|p| adj_ident(&p.name))
            .collect();
        Ok(quote! {
            #(#hoisted)*
            #ret_decl
            #done_decl
            #forward
            #(#keep_save)*
            #(#adjoints)*
            #reverse
            #add_deferred
            #(#keep_restore)*
            #(#give)*
            (#ret_val, #(#outs,)*)
        })
    }

    /// Adjoint declarations and recomputed `let`s of the lists `parts` (one block).
    fn prelude(&mut self, parts: &[&Vec<Stmt>], top: bool) -> Result<TokenStream> {
        let f = self.float();
        let mut decls = Vec::new();
        let mut recompute = Vec::new();
        let mut snaps = Vec::new();
        for part in parts {
            for s in part.iter() {
                if let Stmt::Let { local, .. } = s
                    && self.keep(*local) == Keep::Snapshot
                {
                    let n = &self.func.locals[*local].name;
                    snaps.push(
                        quote!(let mut #n: #f = ::shade_autodiff::compiled::Save::restore(__ws);),
                    );
                }
            }
        }
        snaps.reverse();
        for part in parts {
            for s in part.iter() {
                let Stmt::Let { local, init, span } = s else {
                    continue;
                };
                let l = &self.func.locals[*local];
                let name = &l.name;
                if self.active(name) {
                    let d = adj_ident(name);
                    match (init, top) {
                        (Init::Vec { len, .. }, true) => {
                            self.read(len);
                            decls.push(quote!(let mut #d = <#f as ::shade_autodiff::compiled::Pooled>::take(__ws, #name.len(), 0.0);));
                        }
                        (Init::Repeat { .. } | Init::List(_), true) => {
                            decls.push(quote!(let mut #d = ::shade_autodiff::compiled::Shadow::zeros_like(&#name);));
                        }
                        (Init::Vec { .. } | Init::Repeat { .. } | Init::List(_), false) => {
                            return Err(Error::unsupported(
                                *span,
                                "a differentiated array declared inside a block",
                                self.sig.mode,
                            )
                            .help("declare it at the function's top level and reuse it"));
                        }
                        _ => decls.push(quote!(let mut #d: #f = 0.0;)),
                    }
                }
                if self.keep(*local) == Keep::Recompute
                    && let Init::Expr(e) = init
                {
                    self.cur.push(tbr::addr(s));
                    self.read(e);
                    self.cur.pop();
                    let ty = l.ty.as_ref().map(|t| quote!(: #t));
                    recompute.push(quote!(let #name #ty = #e;));
                }
            }
        }
        Ok(quote!(#(#snaps)* #(#decls)* #(#recompute)*))
    }

    fn fwd_stmts(&mut self, stmts: &[Stmt]) -> Result<TokenStream> {
        let mut out = Vec::new();
        for s in stmts {
            out.push(self.fwd(s)?);
        }
        // The final values of this block's snapshot locals, for its reverse.
        for s in stmts {
            if let Stmt::Let { local, .. } = s
                && self.keep(*local) == Keep::Snapshot
            {
                let n = &self.func.locals[*local].name;
                out.push(quote!(::shade_autodiff::compiled::Save::save(#n, __ws);));
            }
        }
        Ok(quote!(#(#out)*))
    }

    fn rev_stmts(&mut self, stmts: &[Stmt]) -> Result<TokenStream> {
        let mut out = Vec::new();
        for s in stmts.iter().rev() {
            out.push(self.rev(s)?);
        }
        Ok(quote!(#(#out)*))
    }

    fn rev_block(&mut self, stmts: &Vec<Stmt>) -> Result<TokenStream> {
        let pre = self.prelude(&[stmts], false)?;
        let body = self.rev_stmts(stmts)?;
        Ok(quote!({ #pre #body }))
    }

    /// Whether `s` leaves anything for the reverse sweep.
    fn has_rev(&self, s: &Stmt) -> bool {
        match s {
            Stmt::Let { local, init, .. } => {
                let name = &self.func.locals[*local].name;
                self.keep(*local) == Keep::Hoist
                    || match init {
                        Init::Call(c) => self.call_has_rev(c, Some(name)),
                        Init::Expr(e) => self.active(name) && self.info.expr_active(e),
                        Init::List(es) => {
                            self.active(name) && es.iter().any(|e| self.info.expr_active(e))
                        }
                        _ => false,
                    }
            }
            Stmt::Assign { place, .. } => self.active(&place.base) || self.in_r(&place.base),
            Stmt::Call(c) => self.call_has_rev(c, None),
            Stmt::Verbatim { .. } => false,
            other => other
                .children()
                .iter()
                .any(|c| c.iter().any(|s| self.has_rev(s))),
        }
    }

    fn place_tokens(p: &Place) -> TokenStream {
        let b = &p.base;
        let idx = &p.index;
        if p.deref {
            quote!(*#b)
        } else {
            quote!(#b #([#idx])*)
        }
    }

    fn adj_place(p: &Place) -> TokenStream {
        let d = adj_ident(&p.base);
        let idx = &p.index;
        if p.deref {
            quote!(*#d)
        } else {
            quote!(#d #([#idx])*)
        }
    }

    fn fwd(&mut self, s: &Stmt) -> Result<TokenStream> {
        let a = tbr::addr(s);
        if self.deferred.0.contains(&a) || self.deferred.1.contains(&a) {
            return Ok(quote!());
        }
        self.cur.push(tbr::addr(s));
        let r = self.fwd_inner(s);
        self.cur.pop();
        r
    }

    fn fwd_inner(&mut self, s: &Stmt) -> Result<TokenStream> {
        let f = self.float();
        Ok(match s {
            Stmt::Let { local, init, span } => {
                let l = &self.func.locals[*local];
                let name = &l.name;
                let m = l.mutable.then(|| quote!(mut));
                let ty = l.ty.as_ref().map(|t| quote!(: #t));
                let value = match init {
                    Init::Expr(e) => quote!(#e),
                    Init::Uninit if self.active(name) || self.in_r(name) => {
                        quote!(::shade_autodiff::compiled::hoist())
                    }
                    Init::Uninit => quote!(),
                    Init::Vec { fill, len } if self.active(name) => {
                        if self.info.expr_active(fill) {
                            return Err(fill_error(*span, self.sig));
                        }
                        self.pooled.push(name.clone());
                        quote!(<#f as ::shade_autodiff::compiled::Pooled>::take(__ws, #len, #fill))
                    }
                    Init::Vec { fill, len } => quote!(::std::vec![#fill; #len]),
                    Init::Repeat { fill, len } => {
                        if self.active(name) && self.info.expr_active(fill) {
                            return Err(fill_error(*span, self.sig));
                        }
                        quote!([#fill; #len])
                    }
                    Init::List(es) => quote!([#(#es),*]),
                    Init::Call(c) => self.fwd_call(c)?,
                };
                let m = if matches!(init, Init::Uninit) && (self.active(name) || self.in_r(name)) {
                    Some(quote!(mut))
                } else {
                    m
                };
                match self.keep(*local) {
                    Keep::Snapshot if matches!(init, Init::Uninit) => {
                        quote!(let mut #name: #f = 0.0;)
                    }
                    Keep::Snapshot => quote!(let mut #name: #f = #value;),
                    Keep::Hoist if matches!(init, Init::Uninit) => quote!(),
                    Keep::Hoist if self.skip.contains(&tbr::addr(s)) => quote!(#name = #value;),
                    Keep::Hoist => quote! {
                        ::shade_autodiff::compiled::Save::save(#name, __ws);
                        #name = #value;
                    },
                    _ if matches!(init, Init::Uninit) && value.is_empty() => {
                        quote!(let #m #name #ty;)
                    }
                    _ => quote!(let #m #name #ty = #value;),
                }
            }
            Stmt::Assign {
                place, op, value, ..
            } => {
                let p = Self::place_tokens(place);
                let saves = self.saves(s, &place.base);
                for i in &place.index {
                    if saves {
                        self.read(i);
                    }
                }
                let save = saves.then(|| quote!(::shade_autodiff::compiled::Save::save(#p, __ws);));
                let op = match op {
                    Op::Set => quote!(=),
                    Op::Add => quote!(+=),
                    Op::Sub => quote!(-=),
                };
                quote!(#save #p #op #value;)
            }
            Stmt::Call(c) => {
                let call = self.fwd_call(c)?;
                quote!(#call;)
            }
            Stmt::Verbatim {
                tokens,
                writes,
                reads,
                span,
            } => {
                crate::analysis::check_verbatim(self.info, writes, reads, *span, self.sig.mode)?;
                if let Some(w) = writes.iter().find(|w| self.in_r(w)) {
                    return Err(Error::unsupported(
                        *span,
                        &format!(
                            "a statement that changes `{w}`, which the reverse sweep needs, in a form it cannot save"
                        ),
                        self.sig.mode,
                    ));
                }
                quote!(#tokens)
            }
            Stmt::If { cond, then, els } => {
                let (t, e) = (self.fwd_stmts(then)?, self.fwd_stmts(els)?);
                if self.has_rev(s) {
                    quote!(if #cond { #t __ws.push_branch(1); } else { #e __ws.push_branch(0); })
                } else {
                    quote!(if #cond { #t } else { #e })
                }
            }
            Stmt::Match { scrut, arms } => {
                let rec = self.has_rev(s);
                let mut out = Vec::new();
                for (k, a) in arms.iter().enumerate() {
                    let body = self.fwd_stmts(&a.body)?;
                    let (pat, guard) = (&a.pat, a.guard.as_ref().map(|g| quote!(if #g)));
                    let push = rec.then(|| quote!(__ws.push_branch(#k);));
                    out.push(quote!(#pat #guard => { #body #push }));
                }
                quote!(match #scrut { #(#out)* })
            }
            Stmt::For {
                var,
                lo,
                hi,
                inclusive,
                rev,
                body,
                span,
            } => {
                let range = range_tokens(lo, hi, *inclusive, *rev);
                let rec = self.has_rev(s);
                if rec {
                    self.check_stable(lo, hi, body, *span)?;
                }
                if !rec || body.breaks.is_empty() {
                    let b = self.fwd_body(body, None)?;
                    quote!(for #var in #range { #b })
                } else {
                    if *rev {
                        return Err(Error::unsupported(
                            *span,
                            "a `break` in a reversed range",
                            self.sig.mode,
                        ));
                    }
                    let (n, e) = (self.fresh("n"), self.fresh("e"));
                    let b = self.fwd_body(body, Some(&e))?;
                    quote! {
                        let mut #n: usize = 0;
                        let mut #e: usize = 0;
                        for #var in #range { #b #n += 1; }
                        __ws.push_branch(#n);
                        __ws.push_branch(#e);
                    }
                }
            }
            Stmt::Loop { body } => {
                if self.has_rev(s) {
                    let (n, e) = (self.fresh("n"), self.fresh("e"));
                    let b = self.fwd_body(body, Some(&e))?;
                    quote! {
                        let mut #n: usize = 0;
                        let mut #e: usize = 0;
                        loop { #b #n += 1; }
                        __ws.push_branch(#n);
                        __ws.push_branch(#e);
                    }
                } else {
                    let b = self.fwd_body(body, None)?;
                    quote!(loop { #b })
                }
            }
        })
    }

    /// A loop body of the forward sweep; each `break` records its number in `exit`.
    fn fwd_body(&mut self, body: &Body, exit: Option<&syn::Ident>) -> Result<TokenStream> {
        let mut out = Vec::new();
        for (k, seg) in body.segs.iter().enumerate() {
            out.push(self.fwd_stmts(seg)?);
            if let Some((cond, tail)) = body.breaks.get(k) {
                let t = self.fwd_stmts(tail)?;
                let j = k + 1;
                let set = exit.map(|e| quote!(#e = #j;));
                out.push(quote!(if #cond { #t #set break; }));
            }
        }
        Ok(quote!(#(#out)*))
    }

    /// The bounds of a loop with a reverse must not change inside it (the reverse
    /// sweep evaluates them again).
    fn check_stable(
        &mut self,
        lo: &syn::Expr,
        hi: &syn::Expr,
        body: &Body,
        span: proc_macro2::Span,
    ) -> Result<()> {
        let mut w = HashSet::new();
        for p in body.parts() {
            writes(p, self.func, &mut w);
        }
        self.read(lo);
        self.read(hi);
        if let Some(v) = crate::analysis::bound_reads(lo)
            .into_iter()
            .chain(crate::analysis::bound_reads(hi))
            .find(|r| w.contains(r))
        {
            return Err(Error::unsupported(
                span,
                &format!("a loop whose bounds change inside it (`{v}`)"),
                self.sig.mode,
            )
            .help("copy the bound to a variable before the loop"));
        }
        Ok(())
    }

    fn rev(&mut self, s: &Stmt) -> Result<TokenStream> {
        self.cur.push(tbr::addr(s));
        let r = self.rev_inner(s);
        self.cur.pop();
        r
    }

    fn rev_inner(&mut self, s: &Stmt) -> Result<TokenStream> {
        let f = self.float();
        Ok(match s {
            Stmt::Let { local, init, span } => {
                let l = &self.func.locals[*local];
                let name = l.name.clone();
                let restore = (self.keep(*local) == Keep::Hoist
                    && !matches!(init, Init::Uninit)
                    && !self.skip.contains(&tbr::addr(s)))
                .then(|| quote!(#name = ::shade_autodiff::compiled::Save::restore(__ws);));
                let adj = if self.active(&name) {
                    let d = adj_ident(&name);
                    match init {
                        Init::Expr(e) => {
                            let body = self.prop(e, quote!(__a), *span)?;
                            quote!({ let __a: #f = #d; #d = 0.0; #body })
                        }
                        Init::List(es) => {
                            let mut v = Vec::new();
                            for (k, e) in es.iter().enumerate() {
                                let body = self.prop(e, quote!(__a), *span)?;
                                v.push(quote!({ let __a: #f = #d[#k]; #d[#k] = 0.0; #body }));
                            }
                            quote!(#(#v)*)
                        }
                        Init::Call(c) => {
                            let defer = self.deferred.0.contains(&tbr::addr(s));
                            self.rev_call(c, Some(&name), defer)?
                        }
                        _ => quote!(),
                    }
                } else if let Init::Call(c) = init {
                    self.rev_call(c, None, false)?
                } else {
                    quote!()
                };
                quote!(#restore #adj)
            }
            Stmt::Assign {
                place,
                op,
                value,
                span,
            } => {
                let p = Self::place_tokens(place);
                let restore = self
                    .saves(s, &place.base)
                    .then(|| quote!(#p = ::shade_autodiff::compiled::Save::restore(__ws);));
                let adj = if self.active(&place.base) {
                    for i in &place.index {
                        self.read(i);
                    }
                    let d = Self::adj_place(place);
                    let active_value = self.info.expr_active(value);
                    match (op, active_value) {
                        (Op::Set, false) => quote!(#d = 0.0;),
                        (Op::Set, true) => {
                            let body = self.prop(value, quote!(__a), *span)?;
                            quote!({ let __a: #f = #d; #d = 0.0; #body })
                        }
                        (_, false) => quote!(),
                        (Op::Add, true) => {
                            let body = self.prop(value, quote!(__a), *span)?;
                            quote!({ let __a: #f = #d; #body })
                        }
                        (Op::Sub, true) => {
                            let body = self.prop(value, quote!(__a), *span)?;
                            quote!({ let __a: #f = -#d; #body })
                        }
                    }
                } else {
                    quote!()
                };
                quote!(#restore #adj)
            }
            Stmt::Call(c) => self.rev_call(c, None, false)?,
            Stmt::Verbatim { .. } => quote!(),
            Stmt::If { then, els, .. } => {
                if !self.has_rev(s) {
                    return Ok(quote!());
                }
                let (t, e) = (self.rev_block(then)?, self.rev_block(els)?);
                quote!(if __ws.pop_branch() != 0 #t else #e)
            }
            Stmt::Match { arms, .. } => {
                if !self.has_rev(s) {
                    return Ok(quote!());
                }
                let mut out = Vec::new();
                for (k, a) in arms.iter().enumerate() {
                    let b = self.rev_block(&a.body)?;
                    out.push(quote!(#k => #b));
                }
                quote!(match __ws.pop_branch() { #(#out)* _ => ::core::unreachable!() })
            }
            Stmt::For {
                var,
                lo,
                hi,
                inclusive,
                rev,
                body,
                ..
            } => {
                if !self.has_rev(s) {
                    return Ok(quote!());
                }
                if body.breaks.is_empty() {
                    let range = range_tokens(lo, hi, *inclusive, !*rev);
                    let b = self.rev_iteration(body, None)?;
                    quote!(for #var in #range #b)
                } else {
                    let at = |k: &syn::Ident| quote!(let #var = ::shade_autodiff::compiled::offset(#lo, #k););
                    self.rev_counted(body, at)?
                }
            }
            Stmt::Loop { body } => {
                if !self.has_rev(s) {
                    return Ok(quote!());
                }
                self.rev_counted(body, |_| quote!())?
            }
        })
    }

    /// The reverse of a loop that saved its trip count and exit: the partial last
    /// iteration (if it left by `break`), then the full ones backwards. `at(k)` binds
    /// the loop variable of iteration `k`.
    fn rev_counted(
        &mut self,
        body: &Body,
        at: impl Fn(&syn::Ident) -> TokenStream,
    ) -> Result<TokenStream> {
        let (n, e, k) = (self.fresh("n"), self.fresh("e"), self.fresh("k"));
        let mut partial = Vec::new();
        for j in 1..=body.breaks.len() {
            let b = self.rev_iteration(body, Some(j))?;
            partial.push(quote!(#j => #b));
        }
        let full = self.rev_iteration(body, None)?;
        let (at_n, at_k) = (at(&n), at(&k));
        Ok(quote! {
            let #e = __ws.pop_branch();
            let #n = __ws.pop_branch();
            if #e != 0 {
                #at_n
                match #e { #(#partial)* _ => ::core::unreachable!() }
            }
            for #k in (0..#n).rev() {
                #at_k
                #full
            }
        })
    }

    /// The reverse of one iteration: all of it (`exit` `None`), or the part before
    /// break `j` and that break's statements.
    fn rev_iteration(&mut self, body: &Body, exit: Option<usize>) -> Result<TokenStream> {
        let mut parts: Vec<&Vec<Stmt>> = Vec::new();
        match exit {
            None => parts.extend(body.segs.iter()),
            Some(j) => {
                parts.extend(body.segs[..j].iter());
                parts.push(&body.breaks[j - 1].1);
            }
        }
        let pre = self.prelude(&parts, false)?;
        let mut out = Vec::new();
        for p in parts.iter().rev() {
            out.push(self.rev_stmts(p)?);
        }
        Ok(quote!({ #pre #(#out)* }))
    }

    /// Propagates `adj` through the active expression `e`.
    fn prop(
        &mut self,
        e: &syn::Expr,
        adj: TokenStream,
        span: proc_macro2::Span,
    ) -> Result<TokenStream> {
        let node = build(e, self.info, self.sig.mode)?;
        let mut reads = HashSet::new();
        let mut em = Emit::new(self.sig.float, 1, &mut reads, &mut self.tmp, span);
        em.rev(&node, adj);
        let out = em.out;
        self.read_names(reads);
        Ok(quote!(#(#out)*))
    }
}

fn fill_error(span: proc_macro2::Span, sig: &Sig) -> Error {
    Error::unsupported(
        span,
        "an array filled with a differentiated value",
        sig.mode,
    )
    .help("fill it with a constant and assign the elements in a loop")
}

/// `lo..hi`, `lo..=hi`, reversed if `rev`.
pub(crate) fn range_tokens(
    lo: &syn::Expr,
    hi: &syn::Expr,
    inclusive: bool,
    rev: bool,
) -> TokenStream {
    let r = if inclusive {
        quote!((#lo)..=(#hi))
    } else {
        quote!((#lo)..(#hi))
    };
    if rev { quote!((#r).rev()) } else { r }
}

#[allow(dead_code)]
fn _shape(_: Shape) {}

/// Active scalar `let`s nested in blocks that no `break` leaves early.
fn snapshot_candidates(func: &Func, info: &Info) -> HashSet<usize> {
    fn walk(stmts: &[Stmt], breaking: bool, func: &Func, info: &Info, out: &mut HashSet<usize>) {
        for s in stmts {
            match s {
                Stmt::Let { local, init, .. } => {
                    let l = &func.locals[*local];
                    let scalar = matches!(init, Init::Expr(_) | Init::Uninit | Init::Call(_));
                    if !breaking && l.depth > 0 && scalar && info.is_active(&l.name.to_string()) {
                        out.insert(*local);
                    }
                }
                Stmt::For { body, .. } | Stmt::Loop { body } => {
                    let b = !body.breaks.is_empty();
                    for p in body.parts() {
                        walk(p, b, func, info, out);
                    }
                }
                other => {
                    for c in other.children() {
                        walk(c, false, func, info, out);
                    }
                }
            }
        }
    }
    let mut out = HashSet::new();
    walk(&func.body, false, func, info, &mut out);
    out
}
