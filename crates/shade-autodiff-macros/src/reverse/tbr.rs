//! Which saves the forward sweep may skip ("to be recorded" analysis): an assignment
//! to `v` must save the value it overwrites only if the reverse code of something that
//! ran before it, since `v`'s `let`, reads `v`. Accumulations such as
//! `let mut s = 0.0; for j in 0..n { s += a[j] * x[j]; } y += s * s;` then save nothing
//! in the inner loop: only `y += s * s`, which runs after it, reads `s`.

use super::Rev;
use crate::analysis::all_reads;
use crate::ir::{Init, Stmt};
use std::collections::{HashMap, HashSet};

/// The address of a statement, its identity during one expansion.
pub(super) fn addr(s: &Stmt) -> usize {
    s as *const Stmt as usize
}

/// One enclosing block of the statement being decided.
struct Level<'s> {
    parts: Vec<&'s [Stmt]>,
    is_loop: bool,
    owner: Option<usize>,
    /// Position (part, index) of the chain's statement in this block.
    pos: (usize, usize),
}

impl Rev<'_> {
    /// The assignments (by address) whose save can be skipped, given which statements'
    /// reverse code reads which variables (`readers`, from the previous run).
    pub(super) fn skips(&self, readers: &HashMap<String, HashSet<usize>>) -> HashSet<usize> {
        let mut out = HashSet::new();
        let mut chain = Vec::new();
        self.walk(
            vec![&self.func.body[..]],
            false,
            None,
            readers,
            &mut chain,
            &mut out,
        );
        out
    }

    fn walk<'s>(
        &self,
        parts: Vec<&'s [Stmt]>,
        is_loop: bool,
        owner: Option<usize>,
        readers: &HashMap<String, HashSet<usize>>,
        chain: &mut Vec<Level<'s>>,
        out: &mut HashSet<usize>,
    ) {
        for pi in 0..parts.len() {
            for si in 0..parts[pi].len() {
                let s = &parts[pi][si];
                chain.push(Level {
                    parts: parts.clone(),
                    is_loop,
                    owner,
                    pos: (pi, si),
                });
                match s {
                    Stmt::Assign { place, value, .. } => {
                        if self.can_skip(&place.base.to_string(), value, readers, chain, out) {
                            out.insert(addr(s));
                        }
                    }
                    Stmt::Let {
                        local,
                        init: Init::Expr(e),
                        ..
                    } => {
                        let name = self.func.locals[*local].name.to_string();
                        if self.can_skip(&name, e, readers, chain, out) {
                            out.insert(addr(s));
                        }
                    }
                    Stmt::For { body, .. } | Stmt::Loop { body } => {
                        let ps: Vec<&[Stmt]> = body.parts().map(|p| p.as_slice()).collect();
                        self.walk(ps, true, Some(addr(s)), readers, chain, out);
                    }
                    other => {
                        for c in other.children() {
                            self.walk(
                                vec![c.as_slice()],
                                false,
                                Some(addr(s)),
                                readers,
                                chain,
                                out,
                            );
                        }
                    }
                }
                chain.pop();
            }
        }
    }

    fn can_skip(
        &self,
        v: &str,
        value: &syn::Expr,
        readers: &HashMap<String, HashSet<usize>>,
        chain: &[Level<'_>],
        decided: &HashSet<usize>,
    ) -> bool {
        if all_reads(value).iter().any(|r| r == v) {
            return false;
        }
        let empty = HashSet::new();
        let rs = readers.get(v).unwrap_or(&empty);
        // The block that declares `v`, innermost first.
        let Some((lb, let_pos, decl)) = chain.iter().enumerate().rev().find_map(|(k, lv)| {
            lv.parts.iter().enumerate().find_map(|(pi, part)| {
                part.iter()
                    .position(|s| self.declares(s, v))
                    .map(|si| (k, (pi, si), &part[si]))
            })
        }) else {
            return false;
        };
        // A new instance of `v` starts at its `let` only if that `let` saves the
        // previous one; otherwise everything before counts.
        let protected = match decl {
            Stmt::Let { local, .. } if self.keep(*local) == super::Keep::Snapshot => chain
                .last()
                .is_some_and(|lv| !std::ptr::eq(&lv.parts[lv.pos.0][lv.pos.1], decl)),
            Stmt::Let {
                local,
                init: Init::Expr(_),
                ..
            } => {
                self.keep(*local) == super::Keep::Hoist
                    && !decided.contains(&addr(decl))
                    && chain
                        .last()
                        .is_some_and(|lv| !std::ptr::eq(&lv.parts[lv.pos.0][lv.pos.1], decl))
            }
            _ => false,
        };
        let (lb, let_pos) = if protected {
            (lb, let_pos)
        } else {
            (0, (usize::MAX, usize::MAX))
        };
        let mut looped = false;
        for (k, lv) in chain.iter().enumerate().skip(lb) {
            if k > lb && lv.owner.is_some_and(|o| rs.contains(&o)) {
                return false;
            }
            // Inside a loop (within `v`'s block) everything runs before, in earlier
            // iterations.
            looped |= k > lb && lv.is_loop;
            let flat: Vec<(usize, usize, &Stmt)> = lv
                .parts
                .iter()
                .enumerate()
                .flat_map(|(pi, p)| p.iter().enumerate().map(move |(si, s)| (pi, si, s)))
                .collect();
            for (pi, si, s) in flat {
                let before_pos = (pi, si) < lv.pos;
                let in_region = if k == lb {
                    (let_pos.0 == usize::MAX || (pi, si) > let_pos) && before_pos
                } else {
                    looped || before_pos
                };
                if in_region && (pi, si) != lv.pos && reads_in(s, rs) {
                    return false;
                }
            }
        }
        true
    }

    fn declares(&self, s: &Stmt, v: &str) -> bool {
        matches!(s, Stmt::Let { local, .. } if self.func.locals[*local].name == v)
    }
}

/// Whether `s` or a statement nested in it is among `rs`.
fn reads_in(s: &Stmt, rs: &HashSet<usize>) -> bool {
    rs.contains(&addr(s))
        || s.children()
            .iter()
            .any(|c| c.iter().any(|t| reads_in(t, rs)))
}
