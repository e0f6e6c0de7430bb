//! `docs/compiled.md`, generated: the compile-time engine's signatures and activities
//! (from the signatures the attributes really generate), its differentiable subset (one
//! example per row, each checked here in both modes against central differences before
//! the page may show it), the code one small example generates, and its limits (every
//! compile-fail golden of `tests/ui/` with its code). `compiled_md_is_current` fails
//! when the committed page differs; `SHADE_BLESS=1` (or `cargo xtask compat`) rewrites
//! it.

// The examples show the subset's forms on purpose: a `let` returned, a small `Vec`.
#![allow(clippy::let_and_return, clippy::useless_vec)]

use crate::check::{central, close};
use shade_autodiff::compiled::{Generated, GeneratedInfo, GeneratedMode, GradientFn, TangentFn};
use shade_autodiff::scalar::{Real, ScalarRule};
use shade_autodiff::{autodiff_forward, autodiff_reverse};
use std::fmt::Write as _;
use std::path::PathBuf;

/// Defines the items and keeps their source as text (`$name`).
macro_rules! shown {
    ($name:ident = $($item:tt)*) => {
        $($item)*
        const $name: &str = stringify!($($item)*);
    };
}

/// `stringify!`'s text of items, formatted as Rust.
fn pretty(tokens: &str) -> String {
    let file = syn::parse_file(tokens).expect("the examples parse");
    prettyplease::unparse(&file).trim_end().to_string()
}

// --- The subset, one example per row -----------------------------------------------

shown!(ARITHMETIC =
    #[autodiff_reverse(d_arithmetic, Duplicated, Active)]
    #[autodiff_forward(t_arithmetic, Dual, Dual)]
    fn arithmetic(x: &[f64]) -> f64 {
        let y = (x[0] - x[1]) * x[2] / (x[0] + 2.0);
        -y + 3.0 * x[1]
    }
);

shown!(ELEMENTARY =
    #[autodiff_reverse(d_elementary, Duplicated, Active)]
    #[autodiff_forward(t_elementary, Dual, Dual)]
    fn elementary(x: &[f64]) -> f64 {
        x[0].exp() * x[1].sin() + x[0].powi(3) + x[1].powf(x[0]) + f64::max(x[0], x[1])
            + x[1].atan2(x[0]) + x[0].tanh()
    }
);

shown!(BINDINGS =
    #[autodiff_reverse(d_bindings, Duplicated, Active)]
    #[autodiff_forward(t_bindings, Dual, Dual)]
    fn bindings(x: &[f64]) -> f64 {
        let mut s = x[0];
        s += x[1];
        s *= 2.0;
        let s = s * x[0];
        s
    }
);

shown!(INDEXING =
    #[autodiff_reverse(d_indexing, Duplicated, Active)]
    #[autodiff_forward(t_indexing, Dual, Dual)]
    fn indexing(x: &[f64]) -> f64 {
        let idx = [2usize, 0, 1];
        let mut y = vec![0.0; 4];
        for i in 0..3 {
            y[i + 1] += x[idx[i]] * x[i];
        }
        y[1] * y[2] + y[3]
    }
);

shown!(LOCAL_ARRAYS =
    #[autodiff_reverse(d_local_arrays, Duplicated, Active)]
    #[autodiff_forward(t_local_arrays, Dual, Dual)]
    fn local_arrays(x: &[f64]) -> f64 {
        let mut t = vec![0.0; x.len()];
        let mut m = [0.0; 3];
        for i in 0..x.len() {
            t[i] = x[i] * x[i];
        }
        m[0] = t[0] + t[1];
        m[2] = m[0] * t[2];
        m[2]
    }
);

shown!(RANGES =
    #[autodiff_reverse(d_ranges, Duplicated, Active)]
    #[autodiff_forward(t_ranges, Dual, Dual)]
    fn ranges(x: &[f64]) -> f64 {
        let n = x.len();
        let mut acc = 0.0;
        for i in (0..n).rev() {
            for j in 0..=i {
                acc += x[i] * x[j];
            }
        }
        acc
    }
);

shown!(ITERATORS =
    #[autodiff_reverse(d_iterators, Duplicated, Active)]
    #[autodiff_forward(t_iterators, Dual, Dual)]
    fn iterators(x: &[f64]) -> f64 {
        let mut acc = 0.0;
        for (i, (a, b)) in x.iter().zip(x.iter()).enumerate() {
            acc += *a * *b * (i as f64 + 1.0);
        }
        for w in x.windows(2) {
            acc += w[1] - w[0];
        }
        acc
    }
);

shown!(LOOPS =
    #[autodiff_reverse(d_loops, Duplicated, Active)]
    #[autodiff_forward(t_loops, Dual, Dual)]
    fn loops(x: &[f64]) -> f64 {
        let mut r = x[0] * x[0] + 4.0;
        while r > 1.0 {
            r = r * 0.5 + x[1] * 0.01;
        }
        let mut k = 0;
        loop {
            r = r * x[1] + 0.1;
            k += 1;
            if k == 3 {
                break;
            }
        }
        r
    }
);

shown!(BRANCHES =
    #[autodiff_reverse(d_branches, Duplicated, Active)]
    #[autodiff_forward(t_branches, Dual, Dual)]
    fn branches(x: &[f64]) -> f64 {
        let y = if x[0] > 0.0 { x[0] * x[1] } else { -x[1] };
        let z = match x.len() {
            0 | 1 => y,
            _ => y * x[2],
        };
        z + y
    }
);

shown!(RETURNS =
    #[autodiff_reverse(d_returns, Duplicated, Active)]
    #[autodiff_forward(t_returns, Dual, Dual)]
    fn returns(x: &[f64]) -> f64 {
        if x[0] < 0.0 {
            return x[1] * x[1];
        }
        x[0] * x[1]
    }
);

shown!(CALLS =
    #[autodiff_reverse(d_square, Active, Active)]
    #[autodiff_forward(t_square, Dual, Dual)]
    fn square(v: f64) -> f64 {
        v * v
    }

    #[autodiff_reverse(d_calls, Duplicated, Active)]
    #[autodiff_forward(t_calls, Dual, Dual)]
    fn calls(x: &[f64]) -> f64 {
        let mut total = 0.0;
        for i in 0..x.len() {
            total += square(x[i] - 0.5);
        }
        total
    }
);

shown!(CUSTOM =
    /// `ln(1 + eˣ)` with its own derivative rules.
    pub(crate) struct Softplus;

    impl ScalarRule<1> for Softplus {
        fn primal<T: Real>(&self, [x]: [T; 1]) -> T {
            x.max(T::zero()) + (-x.abs()).exp().ln_1p()
        }
        fn forward<T: Real>(&self, [x]: [T; 1], _y: T, [dx]: [T; 1]) -> T {
            dx / ((-x).exp() + 1.0)
        }
        fn reverse<T: Real>(&self, [x]: [T; 1], _y: T, dy: T) -> [T; 1] {
            [dy / ((-x).exp() + 1.0)]
        }
    }

    #[autodiff_reverse(d_custom, Duplicated, Active)]
    #[autodiff_forward(t_custom, Dual, Dual)]
    fn custom(x: &[f64]) -> f64 {
        f64::custom(&Softplus, [x[0] * 2.0]) * x[1]
    }
);

shown!(SINGLE =
    #[autodiff_reverse(d_single, Duplicated, Active)]
    #[autodiff_forward(t_single, Dual, Dual)]
    fn single(x: &[f32]) -> f32 {
        x[0].sqrt() * x[1] + x[1].tanh()
    }
);

/// One row of the subset: what it shows, its source, and its three functions.
struct Row {
    construct: &'static str,
    source: &'static str,
    primal: fn(&[f64]) -> f64,
    reverse: fn(&[f64], &mut [f64], f64) -> f64,
    forward: fn(&[f64], &[f64]) -> (f64, f64),
    /// A point away from the kinks.
    at: &'static [f64],
}

fn rows() -> Vec<Row> {
    macro_rules! row {
        ($c:literal, $src:ident, $f:ident, $d:ident, $t:ident, $at:expr) => {
            Row {
                construct: $c,
                source: $src,
                primal: $f,
                reverse: $d,
                forward: $t,
                at: $at,
            }
        };
    }
    vec![
        row!(
            "`f64`/`f32` arithmetic `+ - * /`, unary `-`",
            ARITHMETIC,
            arithmetic,
            d_arithmetic,
            t_arithmetic,
            &[0.7, 0.3, 1.1]
        ),
        row!(
            "the elementary functions of `Real`, as methods or `f64::` paths",
            ELEMENTARY,
            elementary,
            d_elementary,
            t_elementary,
            &[0.6, 0.4]
        ),
        row!(
            "`let`, reassignment, `+= -= *= /=`, shadowing",
            BINDINGS,
            bindings,
            d_bindings,
            t_bindings,
            &[0.7, -0.2]
        ),
        row!(
            "slices, arrays, `Vec`s: read, write, `+=`, computed indices",
            INDEXING,
            indexing,
            d_indexing,
            t_indexing,
            &[0.5, -0.4, 0.9]
        ),
        row!(
            "local arrays (`vec![0.0; n]`, `[0.0; 3]`)",
            LOCAL_ARRAYS,
            local_arrays,
            d_local_arrays,
            t_local_arrays,
            &[0.5, -0.4, 0.9]
        ),
        row!(
            "`for` over ranges (`a..b`, `a..=b`, `(a..b).rev()`)",
            RANGES,
            ranges,
            d_ranges,
            t_ranges,
            &[0.5, -0.4, 0.9]
        ),
        row!(
            "`for` over `iter()`, `zip`, `enumerate`, `windows`, `chunks_exact`",
            ITERATORS,
            iterators,
            d_iterators,
            t_iterators,
            &[0.5, -0.4, 0.9]
        ),
        row!(
            "`while` and `loop` with `break` (trip counts recorded)",
            LOOPS,
            loops,
            d_loops,
            t_loops,
            &[1.3, 0.8]
        ),
        row!(
            "`if`/`else`, `if` as a value, `match` on values (branches recorded)",
            BRANCHES,
            branches,
            d_branches,
            t_branches,
            &[0.5, -0.4, 0.9]
        ),
        row!(
            "early `return`",
            RETURNS,
            returns,
            d_returns,
            t_returns,
            &[0.5, -0.4]
        ),
        row!(
            "calls of functions that carry the attribute (their derivatives are called)",
            CALLS,
            calls,
            d_calls,
            t_calls,
            &[0.1, 0.9, 1.3]
        ),
        row!(
            "calls of functions with a custom rule (`ScalarRule`)",
            CUSTOM,
            custom,
            d_custom,
            t_custom,
            &[0.3, -0.8]
        ),
    ]
}

/// Checks a row: the reverse gradient against central differences (`1e-6`) and the
/// forward tangent along each axis against the reverse gradient (`1e-12`), and the
/// primal values both return.
fn verify(r: &Row) {
    let x = r.at;
    let y = (r.primal)(x);
    let mut g = vec![0.0; x.len()];
    let yr = (r.reverse)(x, &mut g, 1.0);
    assert!(
        close(yr, y, 1e-14),
        "{}: reverse value {yr} vs {y}",
        r.construct
    );
    let fd = central(&|x: &[f64]| (r.primal)(x), x);
    for k in 0..x.len() {
        assert!(
            close(g[k], fd[k], 1e-6),
            "{}: ∂/∂x{k} {} vs differences {}",
            r.construct,
            g[k],
            fd[k]
        );
        let mut t = vec![0.0; x.len()];
        t[k] = 1.0;
        let (yf, d) = (r.forward)(x, &t);
        assert_eq!(yf.to_bits(), y.to_bits(), "{}: forward value", r.construct);
        assert!(
            close(d, g[k], 1e-12),
            "{}: ∂/∂x{k} forward {d} vs reverse {}",
            r.construct,
            g[k]
        );
    }
}

/// The `f32` row, checked in `f64` against central differences in `f64` (`1e-3`).
fn verify_single() {
    let x = [0.7f32, 0.4];
    let mut g = [0.0f32; 2];
    assert_eq!(d_single(&x, &mut g, 1.0), single(&x));
    let f = |x: &[f64]| x[0].sqrt() * x[1] + x[1].tanh();
    let fd = central(&f, &[0.7, 0.4]);
    for k in 0..2 {
        assert!(close(f64::from(g[k]), fd[k], 1e-3), "f32: ∂/∂x{k}");
        let mut t = [0.0f32; 2];
        t[k] = 1.0;
        assert!((t_single(&x, &t).1 - g[k]).abs() <= 1e-6 * g[k].abs().max(1.0));
    }
}

// --- Activities: what each generates -----------------------------------------------

shown!(ACTIVITIES =
    #[autodiff_reverse(d_scale, Duplicated, Const, Active)]
    #[autodiff_reverse(d_scale_c, Duplicated, Active, Active)]
    #[autodiff_reverse(d_scale_x, Const, Active, Active)]
    #[autodiff_forward(t_scale, Dual, Const, Dual)]
    #[autodiff_forward(t_scale_only, Dual, Dual, DualOnly)]
    #[autodiff_forward(t_scale_2, 2, Dual, Const, Dual)]
    fn scale(x: &[f64], c: f64) -> f64 {
        x[0] * c
    }

    #[autodiff_reverse(d_write, Duplicated, Duplicated)]
    #[autodiff_reverse(d_write_nn, Duplicated, DuplicatedNoNeed)]
    #[autodiff_forward(t_write, Dual, Dual)]
    fn write(x: &[f64], y: &mut [f64]) {
        for i in 0..y.len() {
            y[i] = x[i] * x[i];
        }
    }
);

fn activity_infos() -> Vec<GeneratedInfo> {
    vec![
        <d_scale as Generated>::INFO,
        <d_scale_c as Generated>::INFO,
        <d_scale_x as Generated>::INFO,
        <d_write as Generated>::INFO,
        <d_write_nn as Generated>::INFO,
        <t_scale as Generated>::INFO,
        <t_scale_only as Generated>::INFO,
        <t_scale_2 as Generated>::INFO,
        <t_write as Generated>::INFO,
    ]
}

/// The attribute an info was generated by.
fn attribute(i: &GeneratedInfo) -> String {
    let (mode, width) = match i.mode {
        GeneratedMode::Reverse => ("reverse", String::new()),
        GeneratedMode::Forward if i.width > 1 => ("forward", format!("{}, ", i.width)),
        GeneratedMode::Forward => ("forward", String::new()),
    };
    format!(
        "#[autodiff_{mode}({}, {width}{})]",
        i.derivative,
        i.activities.join(", ")
    )
}

// --- What runs ------------------------------------------------------------------------

shown!(ROSENBROCK =
    #[autodiff_reverse(d_rosenbrock, Duplicated, Active)]
    #[autodiff_forward(t_rosenbrock, Dual, Dual)]
    fn rosenbrock(x: &[f64]) -> f64 {
        let mut acc = 0.0;
        for i in 0..x.len() - 1 {
            let a = 1.0 - x[i];
            let b = x[i + 1] - x[i] * x[i];
            acc += a * a + 100.0 * b * b;
        }
        acc
    }
);

// --- The page -------------------------------------------------------------------------

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `(case, code, message)` of every compile-fail golden, in file order.
fn limits() -> Vec<(String, String, String)> {
    let dir = crate_dir().join("tests/ui");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/ui")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "stderr"))
        .collect();
    cases.sort();
    cases
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).expect("a golden");
            let first = text.lines().next().unwrap_or_default();
            let message = first.split_once(": ").map_or(first, |(_, m)| m);
            let (code, message) = message
                .strip_prefix('[')
                .and_then(|m| m.split_once("] "))
                .expect("a golden starts with its code");
            let case = p.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
            (case.to_string(), code.to_string(), message.to_string())
        })
        .collect()
}

/// The title of `code` from its explanation in shade-diagnostics.
fn title(code: &str) -> String {
    let path = crate_dir().join(format!("../shade-diagnostics/explain/{code}.md"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let first = text.lines().next().unwrap_or_default();
    first.split_once(": ").map_or(first, |(_, t)| t).to_string()
}

fn render() -> String {
    let mut s = String::new();
    s.push_str(
        "<!-- Generated by `cargo xtask compat` from crates/shade-autodiff-macros/tests/macros/docs.rs; \
         do not edit by hand. -->\n\n",
    );
    s.push_str("# The compile-time engine\n\n");
    s.push_str(
        "`#[autodiff_reverse]` and `#[autodiff_forward]` (`use shade_autodiff::{autodiff_reverse, \
         autodiff_forward};`) differentiate a plain `fn` at compile time by source \
         transformation, with the surface of `std::autodiff`: code moves between nightly's \
         `std::autodiff` and shade on stable by changing that import. The reverse derivative \
         runs a forward sweep that saves on a per-thread workspace what the reverse sweep \
         needs (overwritten values, branch decisions, trip counts), then the reverse sweep \
         in straight Rust; activity analysis at expansion time leaves out the derivative \
         code of whatever cannot reach a differentiated output. Everything on this page is \
         generated from code that is compiled and run: the signatures are those the \
         attributes generate, every example of the subset is checked in both modes against \
         central differences, and the limits are the compile-fail tests' messages. Code \
         outside the subset falls back to the tape (`shade_fn!` and \
         `shade_autodiff::scalar`), which takes any code.\n\n",
    );

    s.push_str("## Activities and signatures\n\n");
    s.push_str(
        "One activity per parameter, then one for a non-unit return. Reverse mode: `Const`, \
         `Active` (a by-value `f64`/`f32`; its derivative is returned after the primal \
         result), `Duplicated` (a reference, slice, array or `Vec`, followed by its shadow, \
         which accumulates `∂f/∂x · seed`), `DuplicatedNoNeed` (as `Duplicated`, the \
         output's primal contents unspecified); an `Active` return adds a trailing `seed`. \
         Forward mode: `Const`, `Dual` (followed by its tangent), `DualOnly` (a return: the \
         tangent only), and an optional batch width `N` first (`N` tangents per \
         argument, `[value, t₀, …]` returned). What each attribute below generates for \
         these two functions:\n\n",
    );
    let _ = writeln!(
        s,
        "```rust\n{}\n```\n",
        pretty(ACTIVITIES)
            .lines()
            .filter(|l| !l.starts_with("#[autodiff"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    s.push_str("| attribute | generated function |\n|---|---|\n");
    for i in activity_infos() {
        let _ = writeln!(
            s,
            "| `{}` on `{}` | `{}` |",
            attribute(&i),
            i.primal,
            i.signature
        );
    }

    s.push_str("\n## The differentiable subset\n\n");
    s.push_str(
        "Inactive code (integers, indices, constant data, anything that carries no \
         derivative) may be any Rust; the rows below are what differentiated values may go \
         through. Each example is compiled with both attributes and, before this page is \
         written, its reverse gradient is checked against central differences (`1e-6`) and \
         its forward tangents against the reverse gradient (`1e-12`); the property tests of \
         `tests/macros/subset.rs` check every row on random inputs against the tape too.\n\n",
    );
    s.push_str("| construct | example |\n|---|---|\n");
    let rows = rows();
    for (k, r) in rows.iter().enumerate() {
        let _ = writeln!(
            s,
            "| {} | [example {}](#example-{}) |",
            r.construct,
            k + 1,
            k + 1
        );
    }
    let _ = writeln!(
        s,
        "| `f32` functions | [example {}](#example-{}) |",
        rows.len() + 1,
        rows.len() + 1
    );
    for (k, r) in rows.iter().enumerate() {
        let _ = writeln!(
            s,
            "\n### Example {}\n\n{}:\n\n```rust\n{}\n```",
            k + 1,
            r.construct,
            pretty(r.source)
        );
    }
    let _ = writeln!(
        s,
        "\n### Example {}\n\n`f32` functions (checked in `f64` against central differences to `1e-3`):\n\n```rust\n{}\n```",
        rows.len() + 1,
        pretty(SINGLE)
    );

    s.push_str("\n## What runs\n\n");
    s.push_str(
        "Every derivative has a marker type of its own name implementing \
         `shade_autodiff::compiled::Generated`, whose `INFO.expansion` is the generated \
         code. For Rosenbrock's function:\n\n",
    );
    let _ = writeln!(s, "```rust\n{}\n```\n", pretty(ROSENBROCK));
    s.push_str(
        "its reverse derivative `d_rosenbrock`, with the internal function it calls (the one \
         other generated code calls), as generated. Innermost loops run in a closure over \
         `&[f64]` / `&mut [f64]` slices, so the optimiser knows the arrays do not alias and \
         drops the bounds checks; the reverse loop runs first to last because its \
         iterations only accumulate into the shadow, and it accumulates `dx[i]` and \
         `dx[i + 1]` in two registers (`__c…`), adding to each element of `dx` once, when \
         no later iteration adds to it. The derivative saves nothing, so it runs on \
         a workspace without storage (`without_workspace`), not on the thread's one:\n\n",
    );
    let _ = writeln!(
        s,
        "```rust\n{}\n```\n",
        <d_rosenbrock as Generated>::INFO.expansion.trim_end()
    );
    s.push_str("and the forward derivative `t_rosenbrock`:\n\n");
    let _ = writeln!(
        s,
        "```rust\n{}\n```\n",
        <t_rosenbrock as Generated>::INFO.expansion.trim_end()
    );

    s.push_str("## Through the interface\n\n");
    // What the page says is what runs: the markers implement the interface's entry.
    let x = [0.5, 1.5, -0.5];
    let (mut g, mut want) = ([0.0; 3], [0.0; 3]);
    let y = <d_rosenbrock as GradientFn<()>>::gradient(&x, &mut g, (), 1.0);
    assert_eq!(y, d_rosenbrock(&x, &mut want, 1.0));
    assert_eq!(g, want);
    assert_eq!(
        <t_rosenbrock as TangentFn<()>>::tangent(&x, &[1.0, 0.0, 0.0], ()),
        t_rosenbrock(&x, &[1.0, 0.0, 0.0])
    );
    s.push_str(
        "The marker of a derivative of a function of one slice, `f(x: &[f64], c…) -> f64` \
         with `x` differentiated and every other parameter `Const` (`d_rosenbrock` and \
         `t_rosenbrock` above), also implements `shade_autodiff::compiled::GradientFn` \
         (reverse) or `TangentFn` (forward), by calling the derivative. \
         `shade_interface::Compiled(d_f {})` is then a function value of the interface: \
         with `AutoShade`, `gradient`, `jacobian`, `pushforward` and `pullback` (and their \
         `value_and_*`, `_into` and batched forms) call the generated function itself, \
         the contexts `Constant(v)` passed as its `Const` arguments, and `explain()` \
         names it. A reverse derivative serves every one of them in one call, a forward \
         one a pushforward in one call and the others in `n`. Second derivatives \
         (`hessian`, `hvp`) are not generated: they take a `shade_fn!` function and the \
         tape.\n\n",
    );

    s.push_str("## Limits\n\n");
    s.push_str(
        "Memory: the workspace is one per thread and keeps its capacity, so a warm call, \
         reverse or forward, allocates nothing; a call of an attributed function inside a \
         loop calls that function's derivative in the reverse sweep, which recomputes the \
         call's intermediates, so a sum of independent marked terms keeps one term's \
         intermediates at a time. Speed: `cargo xtask bench` measures the generated \
         gradients against the plain primal in the same run (`docs/benchmarks.md`, groups \
         `compiled/*`). Calls: a callee is found as the call names it, by its path \
         (`m::g(…)`) or in the caller's module (defined there, or imported with its \
         generated function, or by a glob); attributed functions declared inside another \
         function's body do not find each other (declare them at module level).\n\n",
    );
    s.push_str(
        "Everything else is a compile error with our own message at the construct's span, \
         with a code whose long explanation is in [errors.md](errors.md) \
         (`shade_diagnostics::explain(code)`). The codes:\n\n",
    );
    s.push_str("| code | title |\n|---|---|\n");
    for code in shade_autodiff::compiled::CODES {
        let _ = writeln!(
            s,
            "| [{code}](errors.md#{}) | {} |",
            code.to_lowercase(),
            title(code)
        );
    }
    s.push_str(
        "\nand the compile-fail tests (`crates/shade-autodiff-macros/tests/ui/`), each \
         message as the user sees it:\n\n",
    );
    s.push_str("| case | code | message |\n|---|---|---|\n");
    for (case, code, message) in limits() {
        let _ = writeln!(
            s,
            "| `{case}.rs` | {code} | {} |",
            message.replace('|', "\\|")
        );
    }
    s
}

#[test]
fn every_example_is_right_in_both_modes() {
    for r in rows() {
        verify(&r);
    }
    verify_single();
    let x = [0.5, 1.5, -0.5];
    let mut dx = [0.0; 3];
    let y = d_rosenbrock(&x, &mut dx, 1.0);
    assert_eq!(y, rosenbrock(&x));
    for (k, g) in central(&|x: &[f64]| rosenbrock(x), &x).iter().enumerate() {
        assert!(close(dx[k], *g, 1e-6));
        let mut t = [0.0; 3];
        t[k] = 1.0;
        assert!(close(t_rosenbrock(&x, &t).1, dx[k], 1e-12));
    }
    // The activities' functions run as their signatures say.
    let mut dx = [0.0; 1];
    assert_eq!(d_scale(&[2.0], &mut dx, 3.0, 1.0), scale(&[2.0], 3.0));
    assert_eq!(d_scale_c(&[2.0], &mut dx, 3.0, 1.0), (6.0, 2.0));
    assert_eq!(d_scale_x(&[2.0], 3.0, 1.0), (6.0, 2.0));
    let (mut y, mut dy) = ([0.0], [1.0]);
    d_write(&[2.0], &mut dx, &mut y, &mut dy);
    let mut y2 = [0.0];
    write(&[2.0], &mut y2);
    assert_eq!(y, y2);
}

#[test]
fn compiled_md_is_current() {
    let page = render();
    let path = crate_dir().join("../../docs/compiled.md");
    if std::env::var_os("SHADE_BLESS").is_some() {
        std::fs::write(&path, &page).unwrap_or_else(|e| panic!("cannot write {path:?}: {e}"));
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == page,
        "docs/compiled.md is out of date; run `cargo xtask compat` (or SHADE_BLESS=1 cargo test \
         -p shade-autodiff-macros --test macros docs::) and commit it"
    );
}
