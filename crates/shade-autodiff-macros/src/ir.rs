//! The lowered function both engines emit from: Rust statements with every binding
//! renamed to a unique name, iterator loops turned into index loops, compound
//! assignments split, early `return`s turned into assignments to `__ret`, and `break`
//! only as `if cond { …; break; }` directly in a loop body.
//!
//! Expressions stay `syn` expressions (inactive ones are emitted as they are).

use proc_macro2::{Span, TokenStream};
use syn::{Expr, Ident, Pat, Type};

/// A `let` binding (or a parameter, or the result `__ret`).
#[derive(Clone)]
pub(crate) struct Local {
    pub(crate) name: Ident,
    pub(crate) mutable: bool,
    pub(crate) ty: Option<Type>,
    /// 0 at the function's top level, +1 for every enclosing block.
    pub(crate) depth: usize,
}

/// How a `let` is initialised.
#[derive(Clone)]
pub(crate) enum Init {
    Expr(Expr),
    /// `let x;`, or a value set by the branches that follow.
    Uninit,
    /// `vec![fill; len]`.
    Vec {
        fill: Expr,
        len: Expr,
    },
    /// `[fill; len]`.
    Repeat {
        fill: Expr,
        len: Expr,
    },
    /// `[a, b, c]`.
    List(Vec<Expr>),
    /// `g(args)` for a function `g` that is not a known elementary function.
    Call(Call),
}

/// A call of a function that is not a known elementary function.
#[derive(Clone)]
pub(crate) struct Call {
    pub(crate) callee: syn::Path,
    pub(crate) args: Vec<Expr>,
    pub(crate) span: Span,
}

/// Where an assignment writes: `x`, `x[i][j]` or `*x`.
#[derive(Clone)]
pub(crate) struct Place {
    pub(crate) base: Ident,
    pub(crate) index: Vec<Expr>,
    pub(crate) deref: bool,
}

/// An assignment operator after lowering (`*=` and `/=` become `Set`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Set,
    Add,
    Sub,
}

/// A lowered statement.
#[derive(Clone)]
pub(crate) enum Stmt {
    /// `let`: `local` indexes [`Func::locals`].
    Let {
        local: usize,
        init: Init,
        span: Span,
    },
    Assign {
        place: Place,
        op: Op,
        value: Expr,
        span: Span,
    },
    /// A call whose result is not used.
    Call(Call),
    /// Anything else, emitted as written (checked: it must not touch derivatives).
    Verbatim {
        tokens: TokenStream,
        /// Variables it may write.
        writes: Vec<Ident>,
        /// Variables it reads.
        reads: Vec<String>,
        span: Span,
    },
    If {
        cond: Expr,
        then: Vec<Stmt>,
        els: Vec<Stmt>,
    },
    Match {
        scrut: Expr,
        arms: Vec<Arm>,
    },
    /// `for var in lo..hi` (`..=` if `inclusive`, `(lo..hi).rev()` if `rev`).
    For {
        var: Ident,
        lo: Expr,
        hi: Expr,
        inclusive: bool,
        rev: bool,
        body: Body,
        span: Span,
    },
    /// `loop` (a `while` is a loop whose first break is its negated condition).
    Loop {
        body: Body,
    },
}

/// One arm of a `match`.
#[derive(Clone)]
pub(crate) struct Arm {
    pub(crate) pat: Pat,
    pub(crate) guard: Option<Expr>,
    pub(crate) body: Vec<Stmt>,
}

/// A loop body: `segs[0]; if breaks[0].0 { breaks[0].1; break } segs[1]; …`.
#[derive(Clone, Default)]
pub(crate) struct Body {
    pub(crate) segs: Vec<Vec<Stmt>>,
    pub(crate) breaks: Vec<(Expr, Vec<Stmt>)>,
}

impl Body {
    /// Every statement, in order (segments and break tails interleaved).
    pub(crate) fn parts(&self) -> impl Iterator<Item = &Vec<Stmt>> {
        let n = self.segs.len();
        (0..n).flat_map(move |k| {
            let tail = self.breaks.get(k).map(|b| &b.1);
            std::iter::once(&self.segs[k]).chain(tail)
        })
    }
}

/// The lowered function.
#[derive(Clone)]
pub(crate) struct Func {
    pub(crate) locals: Vec<Local>,
    pub(crate) body: Vec<Stmt>,
    /// Whether an early `return` needs the `__done` flag.
    pub(crate) has_done: bool,
}

impl Stmt {
    /// Calls `f` on every statement nested in `self` (not on `self`).
    pub(crate) fn children(&self) -> Vec<&Vec<Stmt>> {
        match self {
            Stmt::If { then, els, .. } => vec![then, els],
            Stmt::Match { arms, .. } => arms.iter().map(|a| &a.body).collect(),
            Stmt::For { body, .. } | Stmt::Loop { body, .. } => body.parts().collect(),
            _ => Vec::new(),
        }
    }
}
