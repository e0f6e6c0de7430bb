//! The attribute's arguments (`d_f, [width,] activities…`) and the signature of the
//! differentiated function: what each parameter is, which activity it takes, and the
//! parameter lists of the generated functions.

use crate::error::{Error, Result};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::parse::{Parse, ParseStream};
use syn::{FnArg, Ident, ItemFn, LitInt, Pat, ReturnType, Token, Type};

/// Which engine an attribute asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Reverse,
    Forward,
}

impl Mode {
    pub(crate) fn attr(self) -> &'static str {
        match self {
            Mode::Reverse => "autodiff_reverse",
            Mode::Forward => "autodiff_forward",
        }
    }
}

/// An activity as written in the attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Act {
    Const,
    Active,
    Duplicated,
    DuplicatedNoNeed,
    Dual,
    DualOnly,
}

impl Act {
    fn parse(id: &Ident) -> Result<Act> {
        Ok(match id.to_string().as_str() {
            "Const" => Act::Const,
            "Active" => Act::Active,
            "Duplicated" => Act::Duplicated,
            "DuplicatedNoNeed" => Act::DuplicatedNoNeed,
            "Dual" => Act::Dual,
            "DualOnly" => Act::DualOnly,
            other => {
                return Err(
                    Error::new(id.span(), format!("unknown activity `{other}`")).help(
                        "reverse mode takes `Const`, `Active`, `Duplicated`, `DuplicatedNoNeed`; \
                     forward mode takes `Const`, `Dual`, `DualOnly`",
                    ),
                );
            }
        })
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Act::Const => "Const",
            Act::Active => "Active",
            Act::Duplicated => "Duplicated",
            Act::DuplicatedNoNeed => "DuplicatedNoNeed",
            Act::Dual => "Dual",
            Act::DualOnly => "DualOnly",
        }
    }

    /// Carries a derivative (not `Const`).
    pub(crate) fn is_active(self) -> bool {
        self != Act::Const
    }
}

/// The floating-point type of the differentiated values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Float {
    F64,
    F32,
}

impl Float {
    pub(crate) fn ident(self) -> Ident {
        match self {
            Float::F64 => format_ident!("f64"),
            Float::F32 => format_ident!("f32"),
        }
    }
    fn of(ty: &Type) -> Option<Float> {
        match ty {
            Type::Path(p) if p.qself.is_none() && p.path.is_ident("f64") => Some(Float::F64),
            Type::Path(p) if p.qself.is_none() && p.path.is_ident("f32") => Some(Float::F32),
            Type::Paren(p) => Float::of(&p.elem),
            Type::Group(g) => Float::of(&g.elem),
            _ => None,
        }
    }
}

/// What a parameter is, from its type.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum Class {
    /// `f64` / `f32` by value.
    Scalar(Float),
    /// `&f64`, `&mut f64`.
    ScalarRef { mutable: bool, float: Float },
    /// `&[F]`, `&Vec<F>`, `&[F; N]` and their `&mut` forms.
    Array { mutable: bool, float: Float },
    /// Anything else (integers, data structures): only `Const`.
    Other,
}

impl Class {
    fn of(ty: &Type) -> Class {
        if let Type::Group(g) = ty {
            return Class::of(&g.elem);
        }
        if let Some(f) = Float::of(ty) {
            return Class::Scalar(f);
        }
        let Type::Reference(r) = ty else {
            return Class::Other;
        };
        let mutable = r.mutability.is_some();
        if let Some(float) = Float::of(&r.elem) {
            return Class::ScalarRef { mutable, float };
        }
        let elem = match &*r.elem {
            Type::Slice(s) => Some(&*s.elem),
            Type::Array(a) => Some(&*a.elem),
            Type::Path(p) if p.qself.is_none() => {
                let last = p.path.segments.last();
                match last {
                    Some(seg) if seg.ident == "Vec" => match &seg.arguments {
                        syn::PathArguments::AngleBracketed(a) => match a.args.first() {
                            Some(syn::GenericArgument::Type(t)) => Some(t),
                            _ => None,
                        },
                        _ => None,
                    },
                    _ => None,
                }
            }
            _ => None,
        };
        match elem.and_then(Float::of) {
            Some(float) => Class::Array { mutable, float },
            None => Class::Other,
        }
    }

    pub(crate) fn float(&self) -> Option<Float> {
        match *self {
            Class::Scalar(f)
            | Class::ScalarRef { float: f, .. }
            | Class::Array { float: f, .. } => Some(f),
            Class::Other => None,
        }
    }
}

/// One parameter of the differentiated function.
#[derive(Clone)]
pub(crate) struct Param {
    pub(crate) name: Ident,
    pub(crate) mutable_binding: bool,
    pub(crate) ty: Type,
    pub(crate) class: Class,
    pub(crate) act: Act,
}

impl Param {
    /// The type of its shadow: `&mut` of the referenced type.
    pub(crate) fn shadow_ty(&self, mode: Mode) -> TokenStream {
        match (&self.ty, mode) {
            (Type::Reference(r), Mode::Reverse) => {
                let elem = &r.elem;
                quote!(&mut #elem)
            }
            (ty, _) => quote!(#ty),
        }
    }

    /// The name of its shadow in the user-facing signature (`dx`, or `bx_k` batched).
    pub(crate) fn user_shadow(&self, lane: Option<usize>) -> Ident {
        match lane {
            None => format_ident!("d{}", self.name),
            Some(k) => format_ident!("b{}_{}", self.name, k),
        }
    }
}

/// The attribute's arguments.
pub(crate) struct AttrArgs {
    pub(crate) name: Ident,
    pub(crate) width: usize,
    pub(crate) acts: Vec<(Act, Span)>,
}

impl Parse for AttrArgs {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let name: Ident = input.parse()?;
        let mut width = 1;
        let mut acts = Vec::new();
        while input.parse::<Option<Token![,]>>()?.is_some() {
            if input.is_empty() {
                break;
            }
            if input.peek(LitInt) {
                let lit: LitInt = input.parse()?;
                width = lit.base10_parse()?;
                if width == 0 {
                    return Err(syn::Error::new(
                        lit.span(),
                        "the batch width must be at least 1",
                    ));
                }
                continue;
            }
            let id: Ident = input.parse()?;
            let act = Act::parse(&id).map_err(|e| e.into_syn())?;
            acts.push((act, id.span()));
        }
        Ok(AttrArgs { name, width, acts })
    }
}

/// The differentiated function's signature with its activities.
pub(crate) struct Sig {
    pub(crate) mode: Mode,
    pub(crate) name: Ident,
    pub(crate) deriv: Ident,
    pub(crate) width: usize,
    pub(crate) params: Vec<Param>,
    pub(crate) ret: Option<Type>,
    pub(crate) ret_act: Act,
    pub(crate) float: Float,
    pub(crate) vis: syn::Visibility,
}

impl Sig {
    pub(crate) fn new(mode: Mode, args: AttrArgs, f: &ItemFn) -> Result<Sig> {
        let s = &f.sig;
        if !s.generics.params.is_empty() || s.generics.where_clause.is_some() {
            return Err(Error::unsupported(
                s.generics.params.first().map_or(s.ident.span(), span_of),
                "a generic function",
                mode,
            ));
        }
        if let Some(t) = &s.asyncness {
            return Err(Error::unsupported(t.span, "an `async fn`", mode));
        }
        if args.width > 1 && mode == Mode::Reverse {
            return Err(Error::new(
                args.name.span(),
                "a batch width is only supported by `#[autodiff_forward]`",
            ));
        }
        let ret = match &s.output {
            ReturnType::Default => None,
            ReturnType::Type(_, t) => match &**t {
                Type::Tuple(tu) if tu.elems.is_empty() => None,
                t => Some(t.clone()),
            },
        };
        let n_in = s.inputs.len();
        let want = n_in + usize::from(ret.is_some());
        if args.acts.len() != want {
            let what = if ret.is_some() {
                format!("{n_in} parameter activities and one for the return")
            } else {
                format!(
                    "{n_in} parameter activities (no return activity: the function returns `()`)"
                )
            };
            return Err(Error::new(
                args.name.span(),
                format!(
                    "`#[{}]` on `{}` needs {what}, found {}",
                    mode.attr(),
                    s.ident,
                    args.acts.len()
                ),
            ));
        }
        let mut params = Vec::new();
        for (arg, &(act, span)) in s.inputs.iter().zip(&args.acts) {
            let FnArg::Typed(pt) = arg else {
                return Err(Error::unsupported(
                    span_of(arg),
                    "a method (`self` parameter)",
                    mode,
                ));
            };
            let (name, mutable_binding) = match &*pt.pat {
                Pat::Ident(pi) if pi.by_ref.is_none() && pi.subpat.is_none() => {
                    (pi.ident.clone(), pi.mutability.is_some())
                }
                p => {
                    return Err(Error::unsupported(span_of(p), "a pattern parameter", mode));
                }
            };
            let class = Class::of(&pt.ty);
            check_act(mode, act, span, &class, &name)?;
            params.push(Param {
                name,
                mutable_binding,
                ty: (*pt.ty).clone(),
                class,
                act,
            });
        }
        let ret_act = match ret {
            Some(_) => args.acts[n_in].0,
            None => Act::Const,
        };
        if let Some(t) = &ret {
            let span = args.acts[n_in].1;
            let ok = match mode {
                Mode::Reverse => matches!(ret_act, Act::Const | Act::Active),
                Mode::Forward => matches!(ret_act, Act::Const | Act::Dual | Act::DualOnly),
            };
            if !ok {
                return Err(Error::new(
                    span,
                    format!(
                        "`{}` is not a return activity of `#[{}]`",
                        ret_act.name(),
                        mode.attr()
                    ),
                )
                .help(match mode {
                    Mode::Reverse => "use `Active` (a seed argument is added) or `Const`",
                    Mode::Forward => "use `Dual`, `DualOnly` or `Const`",
                }));
            }
            if ret_act.is_active() && Float::of(t).is_none() {
                return Err(
                    Error::new(span_of(t), "an active return must be `f64` or `f32`").help(
                        "return the values through a `&mut [f64]` parameter marked `Duplicated`",
                    ),
                );
            }
        }
        // One float type for everything that carries a derivative.
        let mut all: Vec<(Float, Span)> = params
            .iter()
            .filter(|p| p.act.is_active())
            .filter_map(|p| p.class.float().map(|f| (f, p.name.span())))
            .collect();
        if let Some(f) = ret
            .as_ref()
            .and_then(Float::of)
            .filter(|_| ret_act.is_active())
        {
            all.push((f, s.ident.span()));
        }
        let float = all.first().map_or(Float::F64, |f| f.0);
        if let Some(&(_, span)) = all.iter().find(|f| f.0 != float) {
            return Err(Error::new(
                span,
                "differentiated values of one function must share one float type (`f64` or `f32`)",
            ));
        }
        Ok(Sig {
            mode,
            name: s.ident.clone(),
            deriv: args.name,
            width: args.width,
            params,
            ret,
            ret_act,
            float,
            vis: f.vis.clone(),
        })
    }

    /// The activity code of the internal function: one letter per parameter
    /// (`D` shadowed, `A` active scalar, `C` constant) and one for the return.
    pub(crate) fn pattern(&self) -> String {
        let mut p: String = self
            .params
            .iter()
            .map(|p| letter(p.act, &p.class))
            .collect();
        p.push(if self.ret_act.is_active() { 'A' } else { 'C' });
        p
    }

    /// The activities as written, for [`crate::marker`].
    pub(crate) fn act_names(&self) -> Vec<&'static str> {
        let mut v: Vec<_> = self.params.iter().map(|p| p.act.name()).collect();
        if self.ret.is_some() {
            v.push(self.ret_act.name());
        }
        v
    }
}

/// The pattern letter of one argument.
pub(crate) fn letter(act: Act, class: &Class) -> char {
    match (act.is_active(), class) {
        (false, _) => 'C',
        (true, Class::Scalar(_)) => 'A',
        (true, _) => 'D',
    }
}

/// The name of the internal reverse (`rev`) or forward (`fwd`) function of `f`.
pub(crate) fn internal_name(kind: &str, f: &Ident, pattern: &str, width: usize) -> Ident {
    if kind == "fwd" {
        format_ident!("__shade_fwd_{}_{}_{}", f, pattern, width)
    } else {
        format_ident!("__shade_rev_{}_{}", f, pattern)
    }
}

fn check_act(mode: Mode, act: Act, span: Span, class: &Class, name: &Ident) -> Result<()> {
    let allowed: &[Act] = match (mode, class) {
        (_, Class::Other) => &[Act::Const],
        (Mode::Reverse, Class::Scalar(_)) => &[Act::Const, Act::Active],
        (Mode::Reverse, _) => &[Act::Const, Act::Duplicated, Act::DuplicatedNoNeed],
        (Mode::Forward, _) => &[Act::Const, Act::Dual, Act::DualOnly],
    };
    if allowed.contains(&act) {
        return Ok(());
    }
    let what = match class {
        Class::Scalar(_) => "a by-value float",
        Class::ScalarRef { .. } => "a float reference",
        Class::Array { .. } => "a float slice, array or `Vec`",
        Class::Other => "a parameter that holds no `f64`/`f32` values",
    };
    let list: Vec<_> = allowed.iter().map(|a| format!("`{}`", a.name())).collect();
    Err(Error::new(
        span,
        format!(
            "`{}` cannot be the activity of `{name}`, {what}",
            act.name()
        ),
    )
    .help(format!("`{name}` takes {} here", list.join(" or "))))
}

fn span_of<T: quote::ToTokens>(t: &T) -> Span {
    syn::spanned::Spanned::span(t)
}

/// Parses the attribute's arguments, with our message on failure.
pub(crate) fn parse_args(attr: TokenStream) -> Result<AttrArgs> {
    syn::parse2::<AttrArgs>(attr).map_err(Error::from_syn)
}
