//! The backend × operator support table, from the backends' declared capabilities.
//!
//! The harness test (`tests/interface/harness.rs`) cross-checks it against what really
//! ran, and `docs/backends.md` is this table rendered (a test fails when the committed
//! page differs; bless with `SHADE_BLESS=1 cargo test -p shade-interface`).

use crate::backend::{AutoFiniteDiff, AutoShade, Backend, Operator, SecondOrder, Support};

/// One row per backend: its name and how it supports each of [`Operator::ALL`] on
/// scalar-generic functions, then tensor programs (the last entry).
pub fn support_table() -> Vec<(String, Vec<Support>)> {
    fn row<B: Backend>(b: B) -> (String, Vec<Support>) {
        let mut r: Vec<Support> = Operator::ALL.iter().map(|&op| b.supports(op)).collect();
        r.push(b.supports_tensor());
        (b.name(), r)
    }
    let mut rows = vec![
        row(AutoShade::REVERSE),
        row(AutoShade::FORWARD),
        row(AutoFiniteDiff::CENTRAL),
        row(AutoFiniteDiff::FORWARD),
    ];
    #[cfg(feature = "num-dual")]
    rows.push(row(crate::AutoNumDual));
    rows.push(row(SecondOrder {
        outer: AutoShade::FORWARD,
        inner: AutoShade::REVERSE,
    }));
    rows.push(row(SecondOrder {
        outer: AutoFiniteDiff::CENTRAL,
        inner: AutoShade::REVERSE,
    }));
    rows.push(row(crate::AutoSparse {
        inner: AutoShade::FORWARD,
    }));
    rows.push(row(crate::AutoSparse {
        inner: AutoFiniteDiff::CENTRAL,
    }));
    rows
}

/// The support table as a markdown page.
pub fn render_support_table() -> String {
    let mut s = String::from(
        "# Backends × operators\n\n\
         Generated from the backends' declared capabilities by\n\
         `shade_interface::render_support_table()` and checked against what the test harness\n\
         really runs (`crates/shade-interface/tests/interface/harness.rs`). Regenerate with\n\
         `SHADE_BLESS=1 cargo test -p shade-interface --test interface docs::`.\n\n\
         `native`: the operator calls `shade-autodiff` directly with the user's function and the\n\
         contexts as activities. `generic`: a generic path evaluates the function's\n\
         instantiations (finite differences, third-party number types). `no`: refused\n\
         (at compile time where Rust can, else at preparation with `SHADE-E0202`).\n\
         The eight operator columns are for scalar-generic functions (`shade_fn!`); the last\n\
         column is for tensor programs (`shade_interface::tensor`: gradient, jacobian,\n\
         pushforward, pullback): `AutoShade(forward)` computes their gradients and Jacobians in\n\
         forward mode (one pushforward per input entry), `AutoShade(reverse)` in reverse mode;\n\
         a pushforward is forward and a pullback reverse in either mode; `explain()` says\n\
         which ran. `AutoNumDual` needs feature `num-dual`.\n\n",
    );
    s.push_str("| backend |");
    for op in Operator::ALL {
        s.push_str(&format!(" {} |", op.name()));
    }
    s.push_str(" tensor programs |\n|---|");
    for _ in 0..=Operator::ALL.len() {
        s.push_str("---|");
    }
    s.push('\n');
    for (name, row) in support_table() {
        s.push_str(&format!("| `{name}` |"));
        for sup in row {
            s.push_str(&format!(" {} |", sup.word()));
        }
        s.push('\n');
    }
    s
}
