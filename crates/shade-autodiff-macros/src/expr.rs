//! Differentiated expressions: an active `syn` expression as a tree of arithmetic
//! and elementary functions ([`Node`]), the derivative of each elementary function
//! once ([`partial`]), and the two emitters on top: the adjoint propagation of
//! reverse mode ([`Emit::rev`]) and the tangent of forward mode ([`Emit::tan`]).

use crate::analysis::{Info, Shape, all_reads};
use crate::error::{Error, Result};
use crate::sig::{Float, Mode};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use std::collections::{HashMap, HashSet};
use syn::spanned::Spanned;
use syn::{BinOp, Expr, Ident};

/// Where an active leaf lives.
#[derive(Clone)]
pub(crate) enum Leaf {
    Var(Ident),
    Elem(Ident, Vec<Expr>),
    Deref(Ident),
}

/// Elementary functions of one float operand (extra arguments inactive).
#[derive(Clone)]
pub(crate) enum Un {
    Method(&'static str),
    Powi(Expr),
    PowfConst(Expr),
    Erf,
}

/// Elementary functions of two float operands.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Bi {
    Powf,
    Atan2,
    Hypot,
    Max,
    Min,
    Log,
}

/// An active expression.
#[derive(Clone)]
pub(crate) enum Node {
    Leaf(Leaf, Expr),
    Const(Expr),
    Add(Box<Node>, Box<Node>),
    Sub(Box<Node>, Box<Node>),
    Mul(Box<Node>, Box<Node>),
    Div(Box<Node>, Box<Node>),
    Neg(Box<Node>),
    Un(Un, Box<Node>),
    Bi(Bi, Box<Node>, Box<Node>),
    MulAdd(Box<Node>, Box<Node>, Box<Node>),
    Custom(Expr, Vec<Node>),
}

impl Node {
    fn active(&self) -> bool {
        !matches!(self, Node::Const(_))
    }
}

/// Unary float methods with a derivative in [`partial`].
const UNARY: &[&str] = &[
    "exp",
    "exp2",
    "exp_m1",
    "ln",
    "ln_1p",
    "log2",
    "log10",
    "sqrt",
    "cbrt",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "abs",
    "recip",
    "to_degrees",
    "to_radians",
    "fract",
];

/// Float methods whose derivative is zero (their value is used as a constant).
const FLAT: &[&str] = &["floor", "ceil", "round", "trunc", "signum"];

/// Roots of paths whose associated functions are the float methods.
const FLOAT_PATHS: &[&str] = &["f64", "f32", "Real", "Float"];

/// Builds the tree of `e` (which reads active values).
pub(crate) fn build(e: &Expr, info: &Info, mode: Mode) -> Result<Node> {
    if !info.expr_active(e) {
        return Ok(Node::Const(e.clone()));
    }
    let b = |x: &Expr| build(x, info, mode).map(Box::new);
    let unsupported = |what: &str| Error::unsupported(e.span(), what, mode);
    Ok(match e {
        Expr::Paren(p) => return build(&p.expr, info, mode),
        Expr::Group(g) => return build(&g.expr, info, mode),
        Expr::Path(p) => {
            let id = p
                .path
                .get_ident()
                .expect("an active path is a variable")
                .clone();
            match info.shape(&id.to_string()) {
                Shape::Scalar => Node::Leaf(Leaf::Var(id), e.clone()),
                _ => {
                    return Err(unsupported("a differentiated array used as a value").help(
                        "index it (`x[i]`), or pass it to a function that carries the attribute",
                    ));
                }
            }
        }
        Expr::Index(_) => {
            let mut index = Vec::new();
            let mut cur = e;
            while let Expr::Index(i) = cur {
                index.push((*i.index).clone());
                cur = &i.expr;
            }
            index.reverse();
            match cur {
                Expr::Path(p) if p.path.get_ident().is_some() => {
                    let id = p.path.get_ident().expect("checked").clone();
                    Node::Leaf(Leaf::Elem(id, index), e.clone())
                }
                _ => return Err(unsupported("this indexed expression")),
            }
        }
        Expr::Unary(u) => match u.op {
            syn::UnOp::Neg(_) => Node::Neg(b(&u.expr)?),
            syn::UnOp::Deref(_) => match &*u.expr {
                Expr::Path(p)
                    if info.shape(
                        &p.path
                            .get_ident()
                            .map(|i| i.to_string())
                            .unwrap_or_default(),
                    ) == Shape::ParamRef =>
                {
                    Node::Leaf(
                        Leaf::Deref(p.path.get_ident().expect("checked").clone()),
                        e.clone(),
                    )
                }
                inner => return build(inner, info, mode),
            },
            _ => return Err(unsupported("`!` on a differentiated value")),
        },
        Expr::Binary(bin) => {
            let (l, r) = (b(&bin.left)?, b(&bin.right)?);
            match bin.op {
                BinOp::Add(_) => Node::Add(l, r),
                BinOp::Sub(_) => Node::Sub(l, r),
                BinOp::Mul(_) => Node::Mul(l, r),
                BinOp::Div(_) => Node::Div(l, r),
                _ => {
                    return Err(unsupported(&format!(
                        "the operator `{}` on differentiated values",
                        quote!(#bin.op).to_string().trim()
                    )));
                }
            }
        }
        Expr::MethodCall(m) => {
            if let Some(span) = closure_in(e) {
                return Err(Error::unsupported(span, "a closure", mode)
                    .note("iterator adaptors (`map`, `sum`, `fold`, …) are outside the subset: write a `for` loop"));
            }
            let name = m.method.to_string();
            method(
                &name,
                &m.receiver,
                &m.args.iter().collect::<Vec<_>>(),
                e,
                info,
                mode,
            )?
        }
        Expr::Call(c) => {
            let Expr::Path(p) = &*c.func else {
                return Err(unsupported("this call"));
            };
            let root = p
                .path
                .segments
                .first()
                .map(|s| s.ident.to_string())
                .unwrap_or_default();
            let last = p
                .path
                .segments
                .last()
                .map(|s| s.ident.to_string())
                .unwrap_or_default();
            let float_path = p.qself.as_ref().is_some_and(|q| {
                matches!(&*q.ty, syn::Type::Path(t) if t.path.is_ident("f64") || t.path.is_ident("f32"))
            }) || FLOAT_PATHS.contains(&root.as_str())
                // A type alias of the float type (`S::exp(x)` with `type S = f64`).
                || (p.path.segments.len() == 2 && root.starts_with(|c: char| c.is_uppercase()));
            if !float_path || c.args.is_empty() {
                return Err(unsupported(&format!("the call `{}`", quote!(#p).to_string().replace(' ', "")))
                    .help("call elementary functions as methods (`x.exp()`), and give user functions the attribute"));
            }
            if last == "custom" {
                let [rule, Expr::Array(arr)] = [&c.args[0], &c.args[1]] else {
                    return Err(unsupported(
                        "`custom` without an array literal of arguments",
                    ));
                };
                let mut args = Vec::new();
                for a in &arr.elems {
                    args.push(build(a, info, mode)?);
                }
                let rule = match rule {
                    Expr::Reference(r) => (*r.expr).clone(),
                    r => syn::parse_quote!(*#r),
                };
                Node::Custom(rule, args)
            } else if last == "erf" {
                Node::Un(Un::Erf, b(&c.args[0])?)
            } else {
                let rest: Vec<&Expr> = c.args.iter().skip(1).collect();
                method(&last, &c.args[0], &rest, e, info, mode)?
            }
        }
        Expr::Lit(_) => Node::Const(e.clone()),
        Expr::Cast(_) => return Err(unsupported("a cast of a differentiated value")),
        Expr::Field(_) => return Err(unsupported("a field of a differentiated value")),
        Expr::Closure(_) => return Err(unsupported("a closure")),
        Expr::If(_) => {
            return Err(unsupported("an `if` inside an expression")
                .help("assign it to a variable first: `let y = if c { a } else { b };`"));
        }
        Expr::Match(_) => return Err(unsupported("a `match` inside an expression")),
        Expr::Block(_) => return Err(unsupported("a block inside an expression")),
        Expr::Tuple(_) => return Err(unsupported("a tuple of differentiated values")),
        Expr::Macro(_) => return Err(unsupported("a macro call on differentiated values")),
        Expr::Reference(_) => {
            return Err(unsupported("a reference to a differentiated value")
                .help("pass references only as arguments of functions that carry the attribute"));
        }
        _ => return Err(unsupported("this expression")),
    })
}

/// The span of the first closure in `e`.
fn closure_in(e: &Expr) -> Option<Span> {
    struct F(Option<Span>);
    impl<'ast> syn::visit::Visit<'ast> for F {
        fn visit_expr_closure(&mut self, c: &'ast syn::ExprClosure) {
            self.0.get_or_insert(c.span());
        }
    }
    let mut f = F(None);
    syn::visit::Visit::visit_expr(&mut f, e);
    f.0
}

fn method(
    name: &str,
    recv: &Expr,
    args: &[&Expr],
    e: &Expr,
    info: &Info,
    mode: Mode,
) -> Result<Node> {
    let b = |x: &Expr| build(x, info, mode).map(Box::new);
    let unsupported = |what: String| Error::unsupported(e.span(), &what, mode);
    if let Some(c) = args.iter().find(|a| matches!(a, Expr::Closure(_))) {
        return Err(Error::unsupported(c.span(), "a closure", mode)
            .note("iterator adaptors (`map`, `sum`, `fold`, …) are outside the subset: write a `for` loop"));
    }
    if let Some(m) = UNARY.iter().find(|m| **m == name) {
        if !args.is_empty() {
            return Err(unsupported(format!("`{name}` with arguments")));
        }
        return Ok(Node::Un(Un::Method(m), b(recv)?));
    }
    if FLAT.contains(&name) {
        return Ok(Node::Const(e.clone()));
    }
    Ok(match (name, args) {
        ("erf", []) => Node::Un(Un::Erf, b(recv)?),
        ("powi", [n]) => Node::Un(Un::Powi((*n).clone()), b(recv)?),
        ("powf", [p]) if !info.expr_active(p) => Node::Un(Un::PowfConst((*p).clone()), b(recv)?),
        ("powf", [p]) => Node::Bi(Bi::Powf, b(recv)?, b(p)?),
        ("atan2", [o]) => Node::Bi(Bi::Atan2, b(recv)?, b(o)?),
        ("hypot", [o]) => Node::Bi(Bi::Hypot, b(recv)?, b(o)?),
        ("max", [o]) => Node::Bi(Bi::Max, b(recv)?, b(o)?),
        ("min", [o]) => Node::Bi(Bi::Min, b(recv)?, b(o)?),
        ("log", [o]) => Node::Bi(Bi::Log, b(recv)?, b(o)?),
        ("mul_add", [x, y]) => Node::MulAdd(b(recv)?, b(x)?, b(y)?),
        ("clone", []) => return build(recv, info, mode),
        _ => {
            return Err(unsupported(format!("the method `{name}` on a differentiated value"))
                .note(format!("elementary functions: {}, powi, powf, atan2, hypot, max, min, log, mul_add, erf", UNARY.join(", "))));
        }
    })
}

/// `∂f/∂x` of a unary function at `x` with value `y`.
fn partial(u: &Un, x: &TokenStream, y: &TokenStream, f: &Ident) -> TokenStream {
    match u {
        Un::Method(m) => match *m {
            "exp" => quote!(#y),
            "exp2" => quote!(#y * ::core::#f::consts::LN_2),
            "exp_m1" => quote!(#x.exp()),
            "ln" => quote!(#x.recip()),
            "ln_1p" => quote!((#x + 1.0).recip()),
            "log2" => quote!((#x * ::core::#f::consts::LN_2).recip()),
            "log10" => quote!((#x * ::core::#f::consts::LN_10).recip()),
            "sqrt" => quote!((#y + #y).recip()),
            "cbrt" => quote!((#y * #y * 3.0).recip()),
            "sin" => quote!(#x.cos()),
            "cos" => quote!(-#x.sin()),
            "tan" => quote!(#y * #y + 1.0),
            "asin" => quote!((1.0 - #x * #x).sqrt().recip()),
            "acos" => quote!(-(1.0 - #x * #x).sqrt().recip()),
            "atan" => quote!((#x * #x + 1.0).recip()),
            "sinh" => quote!(#x.cosh()),
            "cosh" => quote!(#x.sinh()),
            "tanh" => quote!(1.0 - #y * #y),
            "asinh" => quote!((#x * #x + 1.0).sqrt().recip()),
            "acosh" => quote!((#x * #x - 1.0).sqrt().recip()),
            "atanh" => quote!((1.0 - #x * #x).recip()),
            "abs" => quote!(if #x > 0.0 { 1.0 } else if #x < 0.0 { -1.0 } else { 0.0 }),
            "recip" => quote!(-(#y * #y)),
            "to_degrees" => quote!(180.0 / ::core::#f::consts::PI),
            "to_radians" => quote!(::core::#f::consts::PI / 180.0),
            "fract" => quote!(1.0),
            other => unreachable!("no derivative for {other}"),
        },
        Un::Powi(n) => quote!(if (#n) == 0 { 0.0 } else { ((#n) as #f) * #x.powi((#n) - 1) }),
        Un::PowfConst(p) => quote!(if (#p) == 0.0 { 0.0 } else { (#p) * #x.powf((#p) - 1.0) }),
        Un::Erf => quote!(::core::#f::consts::FRAC_2_SQRT_PI * (-(#x * #x)).exp()),
    }
}

/// The two partials of a binary function at `(a, b)` with value `y`.
fn partials2(
    bi: Bi,
    a: &TokenStream,
    b: &TokenStream,
    y: &TokenStream,
) -> (TokenStream, TokenStream) {
    match bi {
        Bi::Powf => (
            quote!(if #b == 0.0 { 0.0 } else { #b * #a.powf(#b - 1.0) }),
            quote!(if #a > 0.0 { #y * #a.ln() } else { 0.0 }),
        ),
        Bi::Atan2 => (
            quote!(#b / (#a * #a + #b * #b)),
            quote!(-#a / (#a * #a + #b * #b)),
        ),
        Bi::Hypot => (
            quote!(if #y == 0.0 { 0.0 } else { #a / #y }),
            quote!(if #y == 0.0 { 0.0 } else { #b / #y }),
        ),
        // As the tape: the larger (smaller) operand, the first on ties and NaN.
        Bi::Max => (
            quote!(if #a.is_nan() || #b > #a { 0.0 } else { 1.0 }),
            quote!(if #a.is_nan() || #b > #a { 1.0 } else { 0.0 }),
        ),
        Bi::Min => (
            quote!(if #a.is_nan() || #b < #a { 0.0 } else { 1.0 }),
            quote!(if #a.is_nan() || #b < #a { 1.0 } else { 0.0 }),
        ),
        Bi::Log => (quote!((#a * #b.ln()).recip()), quote!(-#y / (#b * #b.ln()))),
    }
}

/// Naming of derivative storage, per mode.
pub(crate) fn adj_ident(name: &Ident) -> Ident {
    format_ident!("__d_{}", name)
}

/// The tangent of lane `l` of an array (or reference) `name` in forward mode.
pub(crate) fn tan_lane_ident(name: &Ident, l: usize) -> Ident {
    format_ident!("__t{}_{}", l, name)
}

/// The tangent (all lanes) of a scalar `name` in forward mode.
pub(crate) fn tan_ident(name: &Ident) -> Ident {
    format_ident!("__t_{}", name)
}

/// Emits the code of one active expression.
pub(crate) struct Emit<'a> {
    pub(crate) float: Float,
    pub(crate) width: usize,
    /// Variables whose primal value the emitted code reads.
    pub(crate) reads: &'a mut HashSet<String>,
    pub(crate) out: Vec<TokenStream>,
    vals: HashMap<usize, TokenStream>,
    tmp: &'a mut usize,
    span: Span,
}

impl<'a> Emit<'a> {
    pub(crate) fn new(
        float: Float,
        width: usize,
        reads: &'a mut HashSet<String>,
        tmp: &'a mut usize,
        span: Span,
    ) -> Self {
        Emit {
            float,
            width,
            reads,
            out: Vec::new(),
            vals: HashMap::new(),
            tmp,
            span,
        }
    }

    fn fresh(&mut self, p: &str) -> Ident {
        *self.tmp += 1;
        format_ident!("__{}{}", p, *self.tmp)
    }

    fn record(&mut self, e: &Expr) {
        self.reads.extend(all_reads(e));
    }

    /// The primal value of `n` (a temporary for compound nodes).
    pub(crate) fn val(&mut self, n: &Node) -> TokenStream {
        let key = n as *const Node as usize;
        if let Some(v) = self.vals.get(&key) {
            return v.clone();
        }
        let f = self.float.ident();
        let v = match n {
            Node::Leaf(_, e) | Node::Const(e) => {
                self.record(e);
                return quote!((#e));
            }
            Node::Add(a, b) => {
                let (a, b) = (self.val(a), self.val(b));
                quote!(#a + #b)
            }
            Node::Sub(a, b) => {
                let (a, b) = (self.val(a), self.val(b));
                quote!(#a - #b)
            }
            Node::Mul(a, b) => {
                let (a, b) = (self.val(a), self.val(b));
                quote!(#a * #b)
            }
            Node::Div(a, b) => {
                let (a, b) = (self.val(a), self.val(b));
                quote!(#a / #b)
            }
            Node::Neg(a) => {
                let a = self.val(a);
                quote!(-#a)
            }
            Node::Un(u, a) => {
                let a = self.val(a);
                match u {
                    Un::Method(m) => {
                        let m = format_ident!("{}", m);
                        quote!(#a.#m())
                    }
                    Un::Powi(k) => {
                        self.record(k);
                        quote!(#a.powi(#k))
                    }
                    Un::PowfConst(p) => {
                        self.record(p);
                        quote!(#a.powf(#p))
                    }
                    Un::Erf => quote!(<#f as ::shade_autodiff::scalar::Real>::erf(#a)),
                }
            }
            Node::Bi(bi, a, b) => {
                let (a, b) = (self.val(a), self.val(b));
                let m = format_ident!("{}", format!("{bi:?}").to_lowercase());
                quote!(#a.#m(#b))
            }
            Node::MulAdd(a, b, c) => {
                let (a, b, c) = (self.val(a), self.val(b), self.val(c));
                quote!(#a.mul_add(#b, #c))
            }
            Node::Custom(rule, args) => {
                self.record(rule);
                let vs: Vec<_> = args.iter().map(|a| self.val(a)).collect();
                quote!(<#f as ::shade_autodiff::scalar::Real>::custom(&#rule, [#(#vs),*]))
            }
        };
        let t = self.fresh("v");
        let span = self.span;
        self.out.push(quote_spanned!(span=> let #t: #f = #v;));
        self.vals.insert(key, quote!(#t));
        quote!(#t)
    }

    /// Binds `e` to a fresh temporary.
    fn bind(&mut self, e: TokenStream) -> TokenStream {
        let f = self.float.ident();
        let t = self.fresh("a");
        self.out.push(quote!(let #t: #f = #e;));
        quote!(#t)
    }

    /// Reverse mode: adds `adj · ∂n/∂leaf` to the adjoint of every active leaf of `n`.
    pub(crate) fn rev(&mut self, n: &Node, adj: TokenStream) {
        match n {
            Node::Const(_) => {}
            Node::Leaf(l, _) => {
                let target = match l {
                    Leaf::Var(v) => {
                        let d = adj_ident(v);
                        quote!(#d)
                    }
                    Leaf::Elem(v, idx) => {
                        for i in idx {
                            self.record(i);
                        }
                        let d = adj_ident(v);
                        quote!(#d #([#idx])*)
                    }
                    Leaf::Deref(v) => {
                        let d = adj_ident(v);
                        quote!(*#d)
                    }
                };
                self.out.push(quote!(#target += #adj;));
            }
            Node::Add(a, b) => {
                self.rev(a, adj.clone());
                self.rev(b, adj);
            }
            Node::Sub(a, b) => {
                self.rev(a, adj.clone());
                if b.active() {
                    let t = self.bind(quote!(-#adj));
                    self.rev(b, t);
                }
            }
            Node::Neg(a) => {
                let t = self.bind(quote!(-#adj));
                self.rev(a, t);
            }
            Node::Mul(a, b) => {
                if a.active() {
                    let vb = self.val(b);
                    let t = self.bind(quote!(#adj * #vb));
                    self.rev(a, t);
                }
                if b.active() {
                    let va = self.val(a);
                    let t = self.bind(quote!(#adj * #va));
                    self.rev(b, t);
                }
            }
            Node::Div(a, b) => {
                let vb = self.val(b);
                if a.active() {
                    let t = self.bind(quote!(#adj / #vb));
                    self.rev(a, t);
                }
                if b.active() {
                    let y = self.val(n);
                    let t = self.bind(quote!(-(#adj * #y) / #vb));
                    self.rev(b, t);
                }
            }
            Node::Un(u, a) => {
                let (x, y) = (self.val(a), self.val(n));
                let d = partial(u, &x, &y, &self.float.ident());
                let t = self.bind(quote!(#adj * (#d)));
                self.rev(a, t);
            }
            Node::Bi(bi, a, b) => {
                let (va, vb, y) = (self.val(a), self.val(b), self.val(n));
                let (da, db) = partials2(*bi, &va, &vb, &y);
                if a.active() {
                    let t = self.bind(quote!(#adj * (#da)));
                    self.rev(a, t);
                }
                if b.active() {
                    let t = self.bind(quote!(#adj * (#db)));
                    self.rev(b, t);
                }
            }
            Node::MulAdd(a, b, c) => {
                let (va, vb) = (self.val(a), self.val(b));
                if a.active() {
                    let t = self.bind(quote!(#adj * #vb));
                    self.rev(a, t);
                }
                if b.active() {
                    let t = self.bind(quote!(#adj * #va));
                    self.rev(b, t);
                }
                self.rev(c, adj);
            }
            Node::Custom(rule, args) => {
                let vs: Vec<_> = args.iter().map(|a| self.val(a)).collect();
                let y = self.val(n);
                let p = self.fresh("p");
                self.out.push(quote!(
                    let #p = ::shade_autodiff::scalar::ScalarRule::reverse(&#rule, [#(#vs),*], #y, #adj);
                ));
                for (k, a) in args.iter().enumerate() {
                    if a.active() {
                        self.rev(a, quote!(#p[#k]));
                    }
                }
            }
        }
    }

    /// Forward mode: the tangent of `n` (a `Lanes` expression), `None` if constant.
    pub(crate) fn tan(
        &mut self,
        n: &Node,
        leaf: &dyn Fn(&Leaf) -> TokenStream,
    ) -> Option<TokenStream> {
        let f = self.float.ident();
        Some(match n {
            Node::Const(_) => return None,
            Node::Leaf(l, _) => {
                if let Leaf::Elem(_, idx) = l {
                    for i in idx {
                        self.record(i);
                    }
                }
                leaf(l)
            }
            Node::Add(a, b) => match (self.tan(a, leaf), self.tan(b, leaf)) {
                (Some(x), Some(y)) => quote!((#x + #y)),
                (x, y) => x.or(y)?,
            },
            Node::Sub(a, b) => match (self.tan(a, leaf), self.tan(b, leaf)) {
                (Some(x), Some(y)) => quote!((#x - #y)),
                (Some(x), None) => x,
                (None, Some(y)) => quote!((-#y)),
                (None, None) => return None,
            },
            Node::Neg(a) => {
                let t = self.tan(a, leaf)?;
                quote!((-#t))
            }
            Node::Mul(a, b) => {
                let (va, vb) = (self.val(a), self.val(b));
                let terms: Vec<TokenStream> = [
                    self.tan(a, leaf).map(|t| quote!((#t * #vb))),
                    self.tan(b, leaf).map(|t| quote!((#t * #va))),
                ]
                .into_iter()
                .flatten()
                .collect();
                quote!((#(#terms)+*))
            }
            Node::Div(a, b) => {
                let (vb, y) = (self.val(b), self.val(n));
                let ta = self.tan(a, leaf).map(|t| quote!((#t * (1.0 / #vb))));
                let tb = self.tan(b, leaf).map(|t| quote!((-(#t * (#y / #vb)))));
                let terms: Vec<_> = [ta, tb].into_iter().flatten().collect();
                quote!((#(#terms)+*))
            }
            Node::Un(u, a) => {
                let (x, y) = (self.val(a), self.val(n));
                let d = partial(u, &x, &y, &f);
                let t = self.tan(a, leaf)?;
                let d = self.bind(d);
                quote!((#t * #d))
            }
            Node::Bi(bi, a, b) => {
                let (va, vb, y) = (self.val(a), self.val(b), self.val(n));
                let (da, db) = partials2(*bi, &va, &vb, &y);
                let ta = match self.tan(a, leaf) {
                    Some(t) => {
                        let d = self.bind(da);
                        Some(quote!((#t * #d)))
                    }
                    None => None,
                };
                let tb = match self.tan(b, leaf) {
                    Some(t) => {
                        let d = self.bind(db);
                        Some(quote!((#t * #d)))
                    }
                    None => None,
                };
                let terms: Vec<_> = [ta, tb].into_iter().flatten().collect();
                quote!((#(#terms)+*))
            }
            Node::MulAdd(a, b, c) => {
                let (va, vb) = (self.val(a), self.val(b));
                let terms: Vec<_> = [
                    self.tan(a, leaf).map(|t| quote!((#t * #vb))),
                    self.tan(b, leaf).map(|t| quote!((#t * #va))),
                    self.tan(c, leaf),
                ]
                .into_iter()
                .flatten()
                .collect();
                quote!((#(#terms)+*))
            }
            Node::Custom(rule, args) => {
                let vs: Vec<_> = args.iter().map(|a| self.val(a)).collect();
                let y = self.val(n);
                let ts: Vec<TokenStream> = args
                    .iter()
                    .map(|a| match self.tan(a, leaf) {
                        Some(t) => quote!(#t.0[__l]),
                        None => quote!(0.0),
                    })
                    .collect();
                let w = self.width;
                quote!(::shade_autodiff::compiled::Lanes::<#f, #w>(::core::array::from_fn(|__l| {
                    ::shade_autodiff::scalar::ScalarRule::forward(&#rule, [#(#vs),*], #y, [#(#ts),*])
                })))
            }
        })
    }
}
