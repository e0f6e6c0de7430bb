//! Forward-mode emission: the primal statements, each preceded by the tangent of what
//! it assigns (`N` lanes at once for a batched derivative). Control flow is the
//! primal's; only active values carry tangents.

use crate::analysis::{Info, Shape, all_reads, base_name};
use crate::error::{Error, Result};
use crate::expr::{Emit, Leaf, build, tan_ident, tan_lane_ident};
use crate::ir::{Body, Call, Func, Init, Op, Place, Stmt};
use crate::sig::{Sig, internal_name};
use proc_macro2::TokenStream;
use quote::quote;
use std::collections::HashSet;
use syn::{Expr, Ident};

pub(crate) struct Fwd<'a> {
    sig: &'a Sig,
    func: &'a Func,
    info: &'a Info,
    tmp: usize,
    reads: HashSet<String>,
}

/// The body of the internal forward function.
pub(crate) fn emit(sig: &Sig, func: &Func, info: &Info) -> Result<TokenStream> {
    let mut f = Fwd {
        sig,
        func,
        info,
        tmp: 0,
        reads: HashSet::new(),
    };
    let lanes = f.lanes();
    let ret_decl = sig.ret.as_ref().map(|t| {
        quote! {
            let mut __ret: #t = ::shade_autodiff::compiled::hoist();
            let mut __t___ret: #lanes = <#lanes>::zero();
        }
    });
    let done_decl = func.has_done.then(|| quote!(let mut __done = false;));
    let body = f.stmts(&func.body)?;
    let ret = if sig.ret.is_some() {
        quote!((__ret, __t___ret))
    } else {
        quote!(((), <#lanes>::zero()))
    };
    Ok(quote! {
        #ret_decl
        #done_decl
        #body
        #ret
    })
}

impl Fwd<'_> {
    fn lanes(&self) -> TokenStream {
        let (f, n) = (self.sig.float.ident(), self.sig.width);
        quote!(::shade_autodiff::compiled::Lanes<#f, #n>)
    }

    fn active(&self, n: &Ident) -> bool {
        self.info.is_active(&n.to_string())
    }

    fn lane_idents(&self, n: &Ident) -> Vec<Ident> {
        (0..self.sig.width).map(|l| tan_lane_ident(n, l)).collect()
    }

    /// `{ temporaries; tangent }` of `e`, or zero.
    fn tangent(&mut self, e: &Expr, span: proc_macro2::Span) -> Result<TokenStream> {
        let lanes = self.lanes();
        if !self.info.expr_active(e) {
            return Ok(quote!(<#lanes>::zero()));
        }
        let node = build(e, self.info, self.sig.mode)?;
        let (f, w) = (self.sig.float.ident(), self.sig.width);
        let info = self.info;
        let leaf = move |l: &Leaf| -> TokenStream {
            match l {
                Leaf::Var(v) => {
                    let t = tan_ident(v);
                    quote!(#t)
                }
                Leaf::Elem(v, idx) => {
                    let ts: Vec<_> = (0..w).map(|k| tan_lane_ident(v, k)).collect();
                    let _ = info;
                    let ix = quote!(#([#idx])*);
                    quote!(::shade_autodiff::compiled::Lanes::<#f, #w>([#(#ts #ix),*]))
                }
                Leaf::Deref(v) => {
                    let ts: Vec<_> = (0..w).map(|k| tan_lane_ident(v, k)).collect();
                    quote!(::shade_autodiff::compiled::Lanes::<#f, #w>([#(*#ts),*]))
                }
            }
        };
        let mut em = Emit::new(self.sig.float, w, &mut self.reads, &mut self.tmp, span);
        let t = em
            .tan(&node, &leaf)
            .unwrap_or_else(|| quote!(<#lanes>::zero()));
        let out = em.out;
        Ok(quote!({ #(#out)* #t }))
    }

    /// Stores tangent `t` (an identifier) into the tangent of `p` with `op`.
    fn store(&self, p: &Place, op: Op, t: &Ident) -> TokenStream {
        let o = match op {
            Op::Set => quote!(=),
            Op::Add => quote!(+=),
            Op::Sub => quote!(-=),
        };
        match (self.info.shape(&p.base.to_string()), p.deref) {
            (_, true) => {
                let ls = self.lane_idents(&p.base);
                let k = 0..ls.len();
                quote!(#(*#ls #o #t.0[#k];)*)
            }
            (Shape::Scalar, false) if p.index.is_empty() => {
                let tv = tan_ident(&p.base);
                quote!(#tv #o #t;)
            }
            _ => {
                let ls = self.lane_idents(&p.base);
                let idx = &p.index;
                let ix = quote!(#([#idx])*);
                let k = 0..ls.len();
                quote!(#(#ls #ix #o #t.0[#k];)*)
            }
        }
    }

    fn stmts(&mut self, stmts: &[Stmt]) -> Result<TokenStream> {
        let mut out = Vec::new();
        for s in stmts {
            out.push(self.stmt(s)?);
        }
        Ok(quote!(#(#out)*))
    }

    fn body(&mut self, b: &Body) -> Result<TokenStream> {
        let mut out = Vec::new();
        for (k, seg) in b.segs.iter().enumerate() {
            out.push(self.stmts(seg)?);
            if let Some((cond, tail)) = b.breaks.get(k) {
                let t = self.stmts(tail)?;
                out.push(quote!(if #cond { #t break; }));
            }
        }
        Ok(quote!(#(#out)*))
    }

    fn stmt(&mut self, s: &Stmt) -> Result<TokenStream> {
        let lanes = self.lanes();
        Ok(match s {
            Stmt::Let { local, init, span } => {
                let l = &self.func.locals[*local];
                let name = &l.name;
                let m = l.mutable.then(|| quote!(mut));
                let ty = l.ty.as_ref().map(|t| quote!(: #t));
                let active = self.active(name);
                match init {
                    Init::Expr(e) if active => {
                        let t = self.tangent(e, *span)?;
                        let tv = tan_ident(name);
                        quote!(let #m #tv: #lanes = #t; let #m #name #ty = #e;)
                    }
                    Init::Expr(e) => quote!(let #m #name #ty = #e;),
                    Init::Uninit if active => {
                        let tv = tan_ident(name);
                        quote!(let mut #name #ty = ::shade_autodiff::compiled::hoist(); let mut #tv: #lanes = <#lanes>::zero();)
                    }
                    Init::Uninit => quote!(let #m #name #ty;),
                    Init::Vec { fill, len } => {
                        let v = quote!(let #m #name #ty = ::std::vec![#fill; #len];);
                        if active {
                            self.check_fill(fill, *span)?;
                            let ls = self.lane_idents(name);
                            quote!(#v #(let mut #ls = ::std::vec![0.0; #name.len()];)*)
                        } else {
                            v
                        }
                    }
                    Init::Repeat { fill, len } => {
                        let v = quote!(let #m #name #ty = [#fill; #len];);
                        if active {
                            self.check_fill(fill, *span)?;
                            let ls = self.lane_idents(name);
                            quote!(#v #(let mut #ls = ::shade_autodiff::compiled::Shadow::zeros_like(&#name);)*)
                        } else {
                            v
                        }
                    }
                    Init::List(es) => {
                        let v = quote!(let #m #name #ty = [#(#es),*];);
                        if active {
                            let ls = self.lane_idents(name);
                            let mut sets = Vec::new();
                            for (k, e) in es.iter().enumerate() {
                                let t = self.tangent(e, *span)?;
                                let lane = 0..ls.len();
                                sets.push(quote!({ let __t = #t; #(#ls[#k] = __t.0[#lane];)* }));
                            }
                            quote!(#v #(let mut #ls = ::shade_autodiff::compiled::Shadow::zeros_like(&#name);)* #(#sets)*)
                        } else {
                            v
                        }
                    }
                    Init::Call(c) => {
                        let (call, has) = self.call(c, Some(name))?;
                        if has {
                            let tv = tan_ident(name);
                            quote!(let (#m #name, #m #tv) = #call;)
                        } else {
                            quote!(let #m #name #ty = #call;)
                        }
                    }
                }
            }
            Stmt::Assign {
                place,
                op,
                value,
                span,
            } => {
                let p = place_tokens(place);
                let o = match op {
                    Op::Set => quote!(=),
                    Op::Add => quote!(+=),
                    Op::Sub => quote!(-=),
                };
                if self.active(&place.base) {
                    let t = self.tangent(value, *span)?;
                    let tv = syn::Ident::new("__tv", proc_macro2::Span::call_site());
                    let st = self.store(place, *op, &tv);
                    quote!({ let __tv: #lanes = #t; #p #o #value; #st })
                } else {
                    quote!(#p #o #value;)
                }
            }
            Stmt::Call(c) => {
                let (call, has) = self.call(c, None)?;
                if has {
                    quote!(let _ = #call;)
                } else {
                    quote!(#call;)
                }
            }
            Stmt::Verbatim {
                tokens,
                writes,
                reads,
                span,
            } => {
                crate::analysis::check_verbatim(self.info, writes, reads, *span, self.sig.mode)?;
                quote!(#tokens)
            }
            Stmt::If { cond, then, els } => {
                let (t, e) = (self.stmts(then)?, self.stmts(els)?);
                quote!(if #cond { #t } else { #e })
            }
            Stmt::Match { scrut, arms } => {
                let mut out = Vec::new();
                for a in arms {
                    let b = self.stmts(&a.body)?;
                    let (pat, guard) = (&a.pat, a.guard.as_ref().map(|g| quote!(if #g)));
                    out.push(quote!(#pat #guard => { #b }));
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
                ..
            } => {
                let range = crate::reverse::range_tokens(lo, hi, *inclusive, *rev);
                let b = self.body(body)?;
                quote!(for #var in #range { #b })
            }
            Stmt::Loop { body } => {
                let b = self.body(body)?;
                quote!(loop { #b })
            }
        })
    }

    fn check_fill(&self, fill: &Expr, span: proc_macro2::Span) -> Result<()> {
        if self.info.expr_active(fill) {
            return Err(Error::unsupported(
                span,
                "an array filled with a differentiated value",
                self.sig.mode,
            )
            .help("fill it with a constant and assign the elements in a loop"));
        }
        Ok(())
    }

    /// A call: the primal call, or the callee's forward function if a derivative flows.
    /// Returns the call and whether it yields `(value, tangent)`.
    fn call(&mut self, c: &Call, result: Option<&Ident>) -> Result<(TokenStream, bool)> {
        let mut pattern = String::new();
        let mut args = Vec::new();
        for a in &c.args {
            self.reads.extend(all_reads(a));
            args.push(quote!(#a));
            if self.info.is_buffer_arg(a) {
                match base_name(a) {
                    Some(b) if self.info.is_active(&b) => {
                        pattern.push('D');
                        let mutable = self.sig.params.iter().any(|p| {
                            p.name == b
                                && matches!(
                                    p.class,
                                    crate::sig::Class::Array { mutable: true, .. }
                                        | crate::sig::Class::ScalarRef { mutable: true, .. }
                                )
                        });
                        for l in 0..self.sig.width {
                            args.push(lane_of(a, l, mutable));
                        }
                    }
                    _ => pattern.push('C'),
                }
            } else if self.info.expr_active(a) {
                pattern.push('A');
                args.push(self.tangent(a, c.span)?);
            } else {
                pattern.push('C');
            }
        }
        let res_active = result.is_some_and(|r| self.active(r));
        pattern.push(if res_active { 'A' } else { 'C' });
        let (callee, plain) = (&c.callee, &c.args);
        if !pattern.chars().any(|ch| ch != 'C') {
            return Ok((quote!(#callee(#(#plain),*)), false));
        }
        let mut path = c.callee.clone();
        let last = path.segments.last_mut().expect("a path");
        last.ident = internal_name("fwd", &last.ident, &pattern, self.sig.width);
        Ok((quote!(#path(#(#args),*)), result.is_some()))
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

/// Lane `l` of a buffer argument: `&x[a..b]` → `&__t0_x[a..b]`.
fn lane_of(a: &Expr, l: usize, mutable: bool) -> TokenStream {
    fn subst(e: &Expr, l: usize) -> TokenStream {
        match e {
            Expr::Path(p) => {
                let t = tan_lane_ident(p.path.get_ident().expect("a variable"), l);
                quote!(#t)
            }
            Expr::Index(i) => {
                let (b, idx) = (subst(&i.expr, l), &i.index);
                quote!(#b[#idx])
            }
            Expr::Paren(p) => subst(&p.expr, l),
            Expr::Unary(u) => subst(&u.expr, l),
            other => quote!(#other),
        }
    }
    match a {
        Expr::Reference(r) => {
            let inner = subst(&r.expr, l);
            match r.mutability {
                Some(_) => quote!(&mut #inner),
                None => quote!(&#inner),
            }
        }
        Expr::Paren(p) => lane_of(&p.expr, l, mutable),
        other => {
            let inner = subst(other, l);
            if mutable {
                quote!(&mut *#inner)
            } else {
                quote!(&*#inner)
            }
        }
    }
}
