//! Activity analysis at expansion time, on the lowered function: a variable is
//! *varied* if a differentiated input flows into it, *useful* if it flows into a
//! differentiated output, and *active* if both. Only active variables get adjoints
//! (or tangents); code that cannot reach an active output produces no derivative code.
//!
//! Also here: what each statement writes, the values an expression reads, and which
//! `let`s the reverse sweep may recompute instead of saving.

use crate::ir::{Func, Init, Stmt};
use crate::sig::{Class, Sig};
use std::collections::{HashMap, HashSet};
use syn::visit::Visit;
use syn::{BinOp, Expr};

/// The shape of a variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    Scalar,
    /// `vec![v; n]` (pooled in reverse mode).
    Vec,
    /// `[v; N]` or `[a, b, c]`.
    Array,
    /// A parameter `&[F]`, `&Vec<F>`, `&[F; N]` (or `&mut`).
    ParamArray,
    /// A parameter `&F` / `&mut F`.
    ParamRef,
    Other,
}

/// What the analysis knows about one variable.
#[derive(Clone, Debug)]
pub(crate) struct Var {
    pub(crate) shape: Shape,
}

/// The result of the analysis.
pub(crate) struct Info {
    pub(crate) vars: HashMap<String, Var>,
    pub(crate) varied: HashSet<String>,
    pub(crate) active: HashSet<String>,
    /// `let`s whose value the reverse sweep may recompute at the top of their block.
    pub(crate) recomputable: HashSet<String>,
}

impl Info {
    pub(crate) fn is_active(&self, name: &str) -> bool {
        self.active.contains(name)
    }

    pub(crate) fn shape(&self, name: &str) -> Shape {
        self.vars.get(name).map_or(Shape::Other, |v| v.shape)
    }

    /// Whether `e` reads an active value (so it carries a derivative).
    pub(crate) fn expr_active(&self, e: &Expr) -> bool {
        value_reads(e).iter().any(|r| self.active.contains(r))
    }
}

/// One flow of values: `target` receives values from `sources`.
struct Flow {
    targets: Vec<String>,
    sources: Vec<String>,
}

pub(crate) fn analyse(sig: &Sig, func: &Func) -> Info {
    let mut vars = HashMap::new();
    for p in &sig.params {
        let shape = match p.class {
            Class::Scalar(_) => Shape::Scalar,
            Class::ScalarRef { .. } => Shape::ParamRef,
            Class::Array { .. } => Shape::ParamArray,
            Class::Other => Shape::Other,
        };
        vars.insert(p.name.to_string(), Var { shape });
    }
    vars.insert(
        "__ret".into(),
        Var {
            shape: Shape::Scalar,
        },
    );
    let mut flows = Vec::new();
    collect(&func.body, func, &mut vars, &mut flows);

    let consts: HashSet<String> = sig
        .params
        .iter()
        .filter(|p| !p.act.is_active())
        .map(|p| p.name.to_string())
        .collect();
    let mut varied: HashSet<String> = sig
        .params
        .iter()
        .filter(|p| p.act.is_active())
        .map(|p| p.name.to_string())
        .collect();
    fixpoint(&mut varied, &flows, |f| &f.sources, |f| &f.targets, &consts);

    let mut useful: HashSet<String> = sig
        .params
        .iter()
        .filter(|p| {
            p.act.is_active()
                && matches!(
                    p.class,
                    Class::Array { mutable: true, .. } | Class::ScalarRef { mutable: true, .. }
                )
        })
        .map(|p| p.name.to_string())
        .collect();
    if sig.ret_act.is_active() {
        useful.insert("__ret".into());
    }
    fixpoint(&mut useful, &flows, |f| &f.targets, |f| &f.sources, &consts);

    let active = varied.intersection(&useful).cloned().collect();
    let mut recomputable = HashSet::new();
    find_recomputable(&func.body, func, &mut recomputable);
    Info {
        vars,
        varied,
        active,
        recomputable,
    }
}

/// Grows `set` along `flows` from `from` to `to` until nothing changes.
fn fixpoint(
    set: &mut HashSet<String>,
    flows: &[Flow],
    from: impl Fn(&Flow) -> &Vec<String>,
    to: impl Fn(&Flow) -> &Vec<String>,
    consts: &HashSet<String>,
) {
    loop {
        let mut changed = false;
        for f in flows {
            if from(f).iter().any(|s| set.contains(s)) {
                for t in to(f) {
                    if !consts.contains(t) && set.insert(t.clone()) {
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
}

fn collect(stmts: &[Stmt], func: &Func, vars: &mut HashMap<String, Var>, flows: &mut Vec<Flow>) {
    for s in stmts {
        match s {
            Stmt::Let { local, init, .. } => {
                let l = &func.locals[*local];
                let name = l.name.to_string();
                let (shape, sources, extra) = match init {
                    Init::Expr(e) => (Shape::Scalar, value_reads(e), Vec::new()),
                    Init::Uninit => (Shape::Scalar, Vec::new(), Vec::new()),
                    Init::Vec { fill, .. } => (Shape::Vec, value_reads(fill), Vec::new()),
                    Init::Repeat { fill, .. } => (Shape::Array, value_reads(fill), Vec::new()),
                    Init::List(es) => (
                        Shape::Array,
                        es.iter().flat_map(value_reads).collect(),
                        Vec::new(),
                    ),
                    Init::Call(c) => (
                        Shape::Scalar,
                        c.args.iter().flat_map(value_reads).collect(),
                        c.args.iter().filter_map(mut_base).collect(),
                    ),
                };
                vars.insert(name.clone(), Var { shape });
                let mut targets = vec![name];
                targets.extend(extra);
                flows.push(Flow { targets, sources });
            }
            Stmt::Assign { place, value, .. } => flows.push(Flow {
                targets: vec![place.base.to_string()],
                sources: value_reads(value),
            }),
            Stmt::Call(c) => flows.push(Flow {
                targets: c.args.iter().filter_map(mut_base).collect(),
                sources: c.args.iter().flat_map(value_reads).collect(),
            }),
            Stmt::For { var, body, .. } => {
                vars.insert(
                    var.to_string(),
                    Var {
                        shape: Shape::Other,
                    },
                );
                for p in body.parts() {
                    collect(p, func, vars, flows);
                }
            }
            other => {
                for c in other.children() {
                    collect(c, func, vars, flows);
                }
            }
        }
    }
}

/// The variable a call argument lends mutably (`&mut x`, `&mut x[a..b]`).
pub(crate) fn mut_base(e: &Expr) -> Option<String> {
    match e {
        Expr::Reference(r) if r.mutability.is_some() => base_name(&r.expr),
        Expr::Paren(p) => mut_base(&p.expr),
        _ => None,
    }
}

/// The variable at the root of an index or reference expression.
pub(crate) fn base_name(e: &Expr) -> Option<String> {
    match e {
        Expr::Path(p) if p.qself.is_none() => p.path.get_ident().map(|i| i.to_string()),
        Expr::Index(i) => base_name(&i.expr),
        Expr::Reference(r) => base_name(&r.expr),
        Expr::Paren(p) => base_name(&p.expr),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => base_name(&u.expr),
        _ => None,
    }
}

/// Methods whose result carries no derivative (integers, booleans, lengths, values
/// rounded to integers).
const FLAT_METHODS: &[&str] = &[
    "len",
    "is_empty",
    "is_nan",
    "is_finite",
    "is_infinite",
    "is_sign_negative",
    "is_sign_positive",
    "floor",
    "ceil",
    "round",
    "trunc",
    "signum",
    "to_bits",
    "partial_cmp",
    "total_cmp",
];

/// Variables whose values flow into `e`'s value (not through indices, casts,
/// comparisons or integer-valued methods).
pub(crate) fn value_reads(e: &Expr) -> Vec<String> {
    struct V(Vec<String>);
    impl<'ast> Visit<'ast> for V {
        fn visit_expr(&mut self, e: &'ast Expr) {
            match e {
                Expr::Path(p) if p.qself.is_none() => {
                    if let Some(i) = p.path.get_ident() {
                        self.0.push(i.to_string());
                    }
                }
                Expr::Index(i) => self.visit_expr(&i.expr),
                // A cast to a float keeps the value (and is refused on derivatives).
                Expr::Cast(c) if matches!(&*c.ty, syn::Type::Path(p) if p.path.is_ident("f64") || p.path.is_ident("f32")) => {
                    self.visit_expr(&c.expr)
                }
                Expr::Cast(_) | Expr::Macro(_) | Expr::Lit(_) => {}
                Expr::Binary(b)
                    if matches!(
                        b.op,
                        BinOp::Eq(_)
                            | BinOp::Ne(_)
                            | BinOp::Lt(_)
                            | BinOp::Le(_)
                            | BinOp::Gt(_)
                            | BinOp::Ge(_)
                            | BinOp::And(_)
                            | BinOp::Or(_)
                    ) => {}
                Expr::MethodCall(m) => {
                    let name = m.method.to_string();
                    if FLAT_METHODS.contains(&name.as_str()) {
                        return;
                    }
                    self.visit_expr(&m.receiver);
                    if name != "powi" {
                        for a in &m.args {
                            self.visit_expr(a);
                        }
                    }
                }
                Expr::Call(c) => {
                    // `f64::floor(x)` and friends are flat too.
                    if let Expr::Path(p) = &*c.func
                        && let Some(last) = p.path.segments.last()
                        && FLAT_METHODS.contains(&last.ident.to_string().as_str())
                    {
                        return;
                    }
                    for a in &c.args {
                        self.visit_expr(a);
                    }
                }
                _ => syn::visit::visit_expr(self, e),
            }
        }
    }
    let mut v = V(Vec::new());
    v.visit_expr(e);
    v.0
}

/// Every variable named in `e` (values, indices, everything).
pub(crate) fn all_reads(e: &Expr) -> Vec<String> {
    struct V(Vec<String>);
    impl<'ast> Visit<'ast> for V {
        fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
            if p.qself.is_none()
                && let Some(i) = p.path.get_ident()
            {
                self.0.push(i.to_string());
            }
        }
        fn visit_macro(&mut self, m: &'ast syn::Macro) {
            let args = m.parse_body_with(
                syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated,
            );
            if let Ok(args) = args {
                for a in &args {
                    self.visit_expr(a);
                }
            }
        }
    }
    let mut v = V(Vec::new());
    v.visit_expr(e);
    v.0
}

/// Variables written by `stmts` (and by the statements nested in them).
pub(crate) fn writes(stmts: &[Stmt], func: &Func, out: &mut HashSet<String>) {
    for s in stmts {
        match s {
            Stmt::Let { local, init, .. } => {
                out.insert(func.locals[*local].name.to_string());
                if let Init::Call(c) = init {
                    out.extend(c.args.iter().filter_map(mut_base));
                }
            }
            Stmt::Assign { place, .. } => {
                out.insert(place.base.to_string());
            }
            Stmt::Call(c) => out.extend(c.args.iter().filter_map(mut_base)),
            Stmt::Verbatim { writes, .. } => out.extend(writes.iter().map(|w| w.to_string())),
            Stmt::For { var, body, .. } => {
                out.insert(var.to_string());
                for p in body.parts() {
                    self::writes(p, func, out);
                }
            }
            other => {
                for c in other.children() {
                    self::writes(c, func, out);
                }
            }
        }
    }
}

/// Methods cheap enough to recompute rather than save.
const CHEAP_METHODS: &[&str] = &["abs", "min", "max", "len", "powi", "mul_add", "recip"];

fn cheap(e: &Expr) -> bool {
    struct C(bool);
    impl<'ast> Visit<'ast> for C {
        fn visit_expr(&mut self, e: &'ast Expr) {
            match e {
                Expr::MethodCall(m) if !CHEAP_METHODS.contains(&m.method.to_string().as_str()) => {
                    self.0 = false
                }
                Expr::Call(_) | Expr::Macro(_) | Expr::Closure(_) | Expr::Block(_) => {
                    self.0 = false
                }
                Expr::If(_) | Expr::Match(_) | Expr::Loop(_) | Expr::Assign(_) => self.0 = false,
                _ => syn::visit::visit_expr(self, e),
            }
        }
    }
    let mut c = C(true);
    c.visit_expr(e);
    c.0
}

/// Nested immutable `let`s with a cheap initialiser whose inputs are not written later
/// in their block: the reverse sweep recomputes them at the top of the block.
fn find_recomputable(stmts: &[Stmt], func: &Func, out: &mut HashSet<String>) {
    scan_block(&[stmts], func, out);
}

/// `parts` are the statement lists of one block, in order (several for a loop body).
fn scan_block(parts: &[&[Stmt]], func: &Func, out: &mut HashSet<String>) {
    let flat: Vec<&Stmt> = parts.iter().flat_map(|p| p.iter()).collect();
    for (k, s) in flat.iter().enumerate() {
        if let Stmt::Let {
            local,
            init: Init::Expr(e),
            ..
        } = s
        {
            let l = &func.locals[*local];
            if l.depth > 0 && !l.mutable && cheap(e) {
                let mut after = HashSet::new();
                for later in &flat[k + 1..] {
                    writes(std::slice::from_ref(*later), func, &mut after);
                }
                if all_reads(e).iter().all(|r| !after.contains(r)) {
                    out.insert(l.name.to_string());
                }
            }
        }
        match s {
            Stmt::For { body, .. } | Stmt::Loop { body, .. } => {
                let ps: Vec<&[Stmt]> = body.parts().map(|p| p.as_slice()).collect();
                scan_block(&ps, func, out);
            }
            other => {
                for c in other.children() {
                    scan_block(&[c.as_slice()], func, out);
                }
            }
        }
    }
}

/// A statement emitted as written must not take differentiated values into
/// variables the analysis cannot follow.
pub(crate) fn check_verbatim(
    info: &Info,
    writes: &[syn::Ident],
    reads: &[String],
    span: proc_macro2::Span,
    mode: crate::sig::Mode,
) -> crate::error::Result<()> {
    let tainted = reads.iter().find(|r| info.varied.contains(*r));
    let changed = writes.iter().find(|w| info.varied.contains(&w.to_string()));
    match (changed, tainted) {
        (Some(w), _) => Err(crate::error::Error::unsupported(
            span,
            &format!("a statement that changes the differentiated `{w}` in a form the derivative cannot follow"),
            mode,
        )
        .note("differentiated code assigns with `=`, `+=`, `-=`, `*=`, `/=` and `let name = …`")),
        (None, Some(r)) if !writes.is_empty() => Err(crate::error::Error::unsupported(
            span,
            &format!("a statement that takes the differentiated `{r}` into a pattern or a method call"),
            mode,
        )
        .help("bind one variable per `let`: `let a = x[0];`")),
        _ => Ok(()),
    }
}

/// Variables a loop bound depends on (`x.len()` does not depend on `x`'s elements).
pub(crate) fn bound_reads(e: &Expr) -> Vec<String> {
    struct V(Vec<String>);
    impl<'ast> Visit<'ast> for V {
        fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
            if let Some(i) = p.path.get_ident() {
                self.0.push(i.to_string());
            }
        }
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            if m.method == "len" {
                return;
            }
            syn::visit::visit_expr_method_call(self, m);
        }
    }
    let mut v = V(Vec::new());
    v.visit_expr(e);
    v.0
}

impl Info {
    /// Whether a call argument passes a buffer (a reference, or a reference
    /// parameter), which is shadowed when differentiated.
    pub(crate) fn is_buffer_arg(&self, a: &Expr) -> bool {
        match a {
            Expr::Reference(_) => true,
            Expr::Paren(p) => self.is_buffer_arg(&p.expr),
            Expr::Path(_) => matches!(
                base_name(a).map(|b| self.shape(&b)),
                Some(Shape::ParamArray | Shape::ParamRef)
            ),
            _ => false,
        }
    }
}
