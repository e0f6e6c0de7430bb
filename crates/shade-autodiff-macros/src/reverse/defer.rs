//! Deferred terms: in `let mut acc = 0.0; for i in 0..n { acc += term(…); } … return
//! acc + …`, where `acc` reaches the result only as one added term, the forward sweep
//! need not call `term` at all: the reverse sweep calls `term`'s derivative anyway,
//! which returns the term's value, and the sum of those values is added to the result
//! at the end. A sum over independent marked terms then costs one derivative call per
//! term and no primal call (the result may differ from the primal's in the last bits,
//! the terms being added in another order).

use super::Rev;
use super::tbr::addr;
use crate::analysis::{all_reads, mut_base};
use crate::ir::{Init, Op, Stmt};
use std::collections::HashSet;
use syn::{BinOp, Expr};

impl Rev<'_> {
    /// The `let __c = term(…)` statements (and the `acc += __c` after each) whose
    /// forward the sweep defers, by address.
    pub(super) fn deferrable(&self) -> (HashSet<usize>, HashSet<usize>) {
        let none = (HashSet::new(), HashSet::new());
        let body = &self.func.body;
        if self.func.has_done || !self.sig.ret_act.is_active() {
            return none;
        }
        let Some(Stmt::Assign {
            place,
            op: Op::Set,
            value,
            ..
        }) = body.last()
        else {
            return none;
        };
        if place.base != "__ret" || !place.index.is_empty() {
            return none;
        }
        let mut terms = Vec::new();
        positive_terms(value, &mut terms);
        let (mut calls, mut adds) = (HashSet::new(), HashSet::new());
        for acc in terms {
            if self.r.contains(&acc) || all_reads(value).iter().filter(|r| **r == acc).count() != 1
            {
                continue;
            }
            let declared_on_top = body.iter().any(
                |s| matches!(s, Stmt::Let { local, .. } if self.func.locals[*local].name == acc),
            );
            let mut found = (Vec::new(), Vec::new());
            if declared_on_top && self.only_accumulated(body, &acc, body.last(), &mut found) {
                calls.extend(found.0);
                adds.extend(found.1);
            }
        }
        (calls, adds)
    }

    /// Whether `acc` is only read by the final statement and written by `let` and
    /// `acc += …`; collects the `let __c = g(…); acc += __c;` pairs.
    fn only_accumulated(
        &self,
        stmts: &[Stmt],
        acc: &str,
        last: Option<&Stmt>,
        found: &mut (Vec<usize>, Vec<usize>),
    ) -> bool {
        for (k, s) in stmts.iter().enumerate() {
            if last.is_some_and(|l| std::ptr::eq(l, s)) {
                continue;
            }
            match s {
                Stmt::Assign {
                    place, op, value, ..
                } if place.base == acc => {
                    if *op != Op::Add
                        || !place.index.is_empty()
                        || all_reads(value).iter().any(|r| r == acc)
                    {
                        return false;
                    }
                    // `acc += __c` right after `let __c = g(…)`, `__c` used nowhere else.
                    if let (Expr::Path(p), Some(prev)) =
                        (value, k.checked_sub(1).map(|j| &stmts[j]))
                        && let Stmt::Let {
                            local,
                            init: Init::Call(c),
                            ..
                        } = prev
                    {
                        let t = &self.func.locals[*local].name;
                        if p.path.is_ident(t)
                            && self.active(t)
                            && c.args.iter().all(|a| mut_base(a).is_none())
                            && self.reads_of(&self.func.body, &t.to_string()) == 1
                        {
                            found.0.push(addr(prev));
                            found.1.push(addr(s));
                        }
                    }
                }
                Stmt::Let { local, init, .. } => {
                    let reads = match init {
                        Init::Expr(e) => all_reads(e),
                        Init::Call(c) => c.args.iter().flat_map(all_reads).collect(),
                        Init::List(es) => es.iter().flat_map(all_reads).collect(),
                        Init::Vec { fill, len } | Init::Repeat { fill, len } => {
                            all_reads(fill).into_iter().chain(all_reads(len)).collect()
                        }
                        Init::Uninit => Vec::new(),
                    };
                    let _ = local;
                    if reads.iter().any(|r| r == acc) {
                        return false;
                    }
                }
                other => {
                    if stmt_reads(other).iter().any(|r| r == acc) {
                        return false;
                    }
                    for c in other.children() {
                        if !self.only_accumulated(c, acc, None, found) {
                            return false;
                        }
                    }
                }
            }
        }
        true
    }

    /// How many statements read `v`.
    fn reads_of(&self, stmts: &[Stmt], v: &str) -> usize {
        stmts
            .iter()
            .map(|s| {
                let own = usize::from(stmt_reads(s).iter().any(|r| r == v) || self.let_reads(s, v));
                own + s
                    .children()
                    .iter()
                    .map(|c| self.reads_of(c, v))
                    .sum::<usize>()
            })
            .sum()
    }

    fn let_reads(&self, s: &Stmt, v: &str) -> bool {
        match s {
            Stmt::Let {
                init: Init::Expr(e),
                ..
            } => all_reads(e).iter().any(|r| r == v),
            Stmt::Let {
                init: Init::Call(c),
                ..
            } => c.args.iter().flat_map(all_reads).any(|r| r == v),
            _ => false,
        }
    }
}

/// Variables read by the statement itself (not by the statements nested in it).
fn stmt_reads(s: &Stmt) -> Vec<String> {
    match s {
        Stmt::Assign { place, value, .. } => {
            let mut v = all_reads(value);
            v.extend(place.index.iter().flat_map(all_reads));
            v
        }
        Stmt::Call(c) => c.args.iter().flat_map(all_reads).collect(),
        Stmt::Verbatim { reads, .. } => reads.clone(),
        Stmt::If { cond, .. } => all_reads(cond),
        Stmt::Match { scrut, arms } => {
            let mut v = all_reads(scrut);
            v.extend(
                arms.iter()
                    .filter_map(|a| a.guard.as_ref())
                    .flat_map(all_reads),
            );
            v
        }
        Stmt::For { lo, hi, body, .. } => {
            let mut v = all_reads(lo);
            v.extend(all_reads(hi));
            v.extend(body.breaks.iter().flat_map(|b| all_reads(&b.0)));
            v
        }
        Stmt::Loop { body } => body.breaks.iter().flat_map(|b| all_reads(&b.0)).collect(),
        Stmt::Let { .. } => Vec::new(),
    }
}

/// The variables that are added (with coefficient +1) at the top of `e`.
fn positive_terms(e: &Expr, out: &mut Vec<String>) {
    match e {
        Expr::Paren(p) => positive_terms(&p.expr, out),
        Expr::Binary(b) if matches!(b.op, BinOp::Add(_)) => {
            positive_terms(&b.left, out);
            positive_terms(&b.right, out);
        }
        Expr::Binary(b) if matches!(b.op, BinOp::Sub(_)) => positive_terms(&b.left, out),
        Expr::Path(p) => out.extend(p.path.get_ident().map(|i| i.to_string())),
        _ => {}
    }
}
