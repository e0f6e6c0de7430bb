//! Compile-time reverse and forward mode for plain Rust functions, with the surface
//! of `std::autodiff`: `#[autodiff_reverse(d_f, Duplicated, Const, Active)]` and
//! `#[autodiff_forward(df, Dual, Const, Dual)]` on an `fn` generate `d_f` / `df` by
//! source transformation. Use them through `shade_autodiff` (`use
//! shade_autodiff::{autodiff_reverse, autodiff_forward};`): code moves between
//! `std::autodiff` on nightly and shade on stable by changing that import.
//!
//! The reverse derivative runs a *forward sweep* (the primal, saving on a reusable
//! per-thread workspace what it overwrites and what the reverse needs: overwritten
//! values, branch decisions, trip counts) and then a *reverse sweep*: the statements
//! backwards, in straight Rust that the optimiser compiles like hand-written
//! derivative code. Activity analysis runs at expansion time: code that cannot reach
//! a differentiated output produces no derivative code.
//!
//! # Signatures (as `std::autodiff`)
//!
//! Reverse mode, activities `Const`, `Active` (by-value `f64`/`f32`), `Duplicated`,
//! `DuplicatedNoNeed` (references, slices, arrays, `Vec`s):
//!
//! - each `Duplicated` argument is followed by its shadow, `&mut` of the same type;
//!   the shadow accumulates: `dx += ∂f/∂x · seed`;
//! - an `Active` return adds a trailing `seed` argument;
//! - the result is the primal result followed by the derivatives of the `Active`
//!   arguments (a tuple if there are several values);
//! - a `&mut` output marked `Duplicated` reads its shadow as the seed of what the
//!   function writes into it and zeroes it, as Enzyme does; `DuplicatedNoNeed` leaves
//!   the output's primal contents unspecified.
//!
//! `#[autodiff_reverse(d_f, Duplicated, Active)] fn f(x: &[f64]) -> f64` gives
//! `fn d_f(x: &[f64], dx: &mut [f64], seed: f64) -> f64`.
//!
//! Forward mode, activities `Const`, `Dual`, `DualOnly`, optionally with a batch width:
//! each `Dual` argument is followed by its tangent (`bx_0 … bx_{N-1}` when batched); a
//! `Dual` return gives `(value, tangent)` (`[value, t_0, …]` batched), `DualOnly` the
//! tangent(s) only. `#[autodiff_forward(df, 2, Dual, Dual)] fn f(x: f64) -> f64` gives
//! `fn df(x: f64, bx_0: f64, bx_1: f64) -> [f64; 3]`.
//!
//! ```
//! use shade_autodiff::{autodiff_forward, autodiff_reverse};
//!
//! #[autodiff_reverse(d_rosenbrock, Duplicated, Active)]
//! #[autodiff_forward(t_rosenbrock, Dual, Dual)]
//! fn rosenbrock(x: &[f64]) -> f64 {
//!     let mut acc = 0.0;
//!     for i in 0..x.len() - 1 {
//!         let a = 1.0 - x[i];
//!         let b = x[i + 1] - x[i] * x[i];
//!         acc += a * a + 100.0 * b * b;
//!     }
//!     acc
//! }
//!
//! let x = [0.5, 1.5, -0.5];
//! let mut dx = [0.0; 3];
//! let y = d_rosenbrock(&x, &mut dx, 1.0);
//! assert_eq!(y, rosenbrock(&x));
//! let (_, d0) = t_rosenbrock(&x, &[1.0, 0.0, 0.0]);
//! assert!((d0 - dx[0]).abs() < 1e-12);
//! ```
//!
//! # The differentiable subset
//!
//! Inactive code (integers, indices, constant data, anything that carries no
//! derivative) may be any Rust; the rows below are what *differentiated* values may
//! go through. Every row has a property test (the generated reverse and forward
//! derivatives against the tape and central differences) in `tests/macros/subset.rs`.
//!
//! | construct | example |
//! |---|---|
//! | `f64`/`f32` arithmetic `+ - * /`, unary `-` | `let y = (a - b) * c / d;` |
//! | elementary functions of `Real` as methods or `f64::` paths | `x.exp()`, `x.powi(3)`, `x.powf(y)`, `x.atan2(y)`, `f64::max(a, b)`, `x.erf()` |
//! | `let`, reassignment, `+= -= *= /=`, shadowing | `let mut s = 0.0; s += x; s *= 2.0;` |
//! | slices, arrays, `Vec`s: read, write, `+=`, computed indices | `y[2 * i + 1] += a[i] * x[idx[i]];` |
//! | local arrays | `let mut t = vec![0.0; n];`, `let mut m = [0.0; 3];` |
//! | `for` over ranges | `for i in 0..n`, `for i in (0..n).rev()`, `for j in 0..=i` |
//! | `for` over iterators | `for (i, (a, b)) in x.iter().zip(y.iter()).enumerate()`, `x.windows(2)`, `x.chunks_exact(d)` |
//! | `while` and `loop` with `break` (trip counts recorded) | `while r > 1.0 { r = r / 2.0; }`, `loop { …; if c { break; } }` |
//! | `if`/`else`, `if` as a value, `match` on values (branches recorded) | `let y = if x > 0.0 { x } else { -x };`, `match k { 0 => …, _ => … }` |
//! | early `return` | `if x < 0.0 { return 0.0; }` |
//! | calls to functions that carry the attribute (their derivative is called) | `acc += term(x, i);` |
//! | calls to functions with a custom rule | `f64::custom(&Softplus, [x])` |
//!
//! Outside the subset, for differentiated values: closures and iterator adaptors
//! such as `map`/`sum`, methods other than the elementary functions, casts, fields of
//! structures, `continue`, labelled breaks, `while let`/`if let`, `break`/`return`
//! nested deeper than an `if` directly in the loop body, and arrays declared inside a
//! loop. Each is a compile error naming the construct, at its span, with the fallback:
//! the tape (`shade_fn!`, `shade_autodiff::scalar`), which takes any code.
//!
//! # Memory
//!
//! The workspace is one per thread and keeps its capacity: a warm call allocates
//! nothing (local `Vec`s of differentiated values and their adjoints come from its
//! pool). A call of another attributed function inside a loop calls that function's
//! derivative in the reverse sweep, which recomputes the call's intermediates: a sum
//! of independent marked terms (`for i in 0..n { total += term(i) }`) keeps one
//! term's intermediates at a time.
//!
//! # Inspecting what runs
//!
//! Each attribute also emits a marker type named like the derivative, implementing
//! `shade_autodiff::compiled::Generated`: `<d_f as Generated>::INFO` holds the
//! names, activities, signature and the generated code as pretty-printed Rust.

/// The README's example, compiled and run as a doc-test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod analysis;
mod emit;
mod error;
mod expr;
mod forward;
mod ir;
mod lower;
mod reverse;
mod sig;

use proc_macro::TokenStream;
use quote::quote;
use sig::Mode;

/// Generates a reverse-mode derivative: `#[autodiff_reverse(NAME, ACTIVITIES…)]`,
/// one activity per parameter (`Const`, `Active`, `Duplicated`, `DuplicatedNoNeed`)
/// and one for a non-unit return (`Active` or `Const`). See the crate documentation.
#[proc_macro_attribute]
pub fn autodiff_reverse(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand(Mode::Reverse, attr.into(), item.into()).into()
}

/// Generates a forward-mode derivative: `#[autodiff_forward(NAME, [WIDTH,]
/// ACTIVITIES…)]`, one activity per parameter (`Const`, `Dual`, `DualOnly`) and one
/// for a non-unit return (`Dual`, `DualOnly`, `Const`). See the crate documentation.
#[proc_macro_attribute]
pub fn autodiff_forward(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand(Mode::Forward, attr.into(), item.into()).into()
}

fn expand(
    mode: Mode,
    attr: proc_macro2::TokenStream,
    item: proc_macro2::TokenStream,
) -> proc_macro2::TokenStream {
    let f: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            let e = error::Error::new(
                proc_macro2::Span::call_site(),
                format!("`#[{}]` applies to a free `fn`", mode.attr()),
            )
            .help(error::FALLBACK);
            let ce = e.to_compile_error();
            return quote!(#ce #item);
        }
    };
    let generated = sig::parse_args(attr)
        .and_then(|args| sig::Sig::new(mode, args, &f))
        .and_then(|sig| emit::generate(&sig, &f));
    match generated {
        Ok(g) => quote!(#f #g),
        Err(e) => {
            let ce = e.to_compile_error();
            quote!(#f #ce)
        }
    }
}
