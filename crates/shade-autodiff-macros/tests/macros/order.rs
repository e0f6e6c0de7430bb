//! Three rewrites of the reverse sweep, each against the tape and central differences
//! (where it applies and where it must not): a reverse loop whose iterations are
//! independent runs forwards in a closure over slices, accumulating a shadow indexed
//! at several literal offsets in registers, and a loop that overwrites a whole range
//! of an array saves the range once.

use crate::check::check;
use crate::{row, twin};
use proptest::prelude::*;
use shade_autodiff::compiled::Generated;
use shade_autodiff::scalar::Real;
use shade_autodiff::{autodiff_forward, autodiff_reverse};

/// The float type of the plain versions.
type S = f64;

twin! {
    /// Independent iterations: own elements at an offset, an inclusive range, a
    /// reversed range, a scalar accumulator, accumulations at two indices.
    #[autodiff_reverse(d_independent, Duplicated, Active)]
    #[autodiff_forward(t_independent, Dual, Dual)]
    fn independent / independent_g(x) {
        let n = x.len();
        let mut t = vec![S::cst(0.0); n + 2];
        for j in 1..=n - 2 {
            t[j + 2] = x[j] * x[j + 1];
        }
        for j in (0..n).rev() {
            t[j] += x[j].sin();
        }
        let mut acc = S::cst(0.0);
        for j in 0..n - 1 {
            acc += t[j] * t[j + 1] + x[j] * x[j + 1];
        }
        acc
    }
}

twin! {
    /// Shadows accumulated in registers: three offsets in an inclusive range that
    /// starts at 1, two offsets under `-=` (Rosenbrock's shape), and a loop of one
    /// offset (left as it is).
    #[autodiff_reverse(d_stencil, Duplicated, Active)]
    #[autodiff_forward(t_stencil, Dual, Dual)]
    fn stencil / stencil_g(x) {
        let n = x.len();
        let mut acc = S::cst(0.0);
        for j in 1..=n - 3 {
            acc += x[j] * x[j + 2] - x[j + 1].sin() * x[j];
        }
        for j in 0..n - 1 {
            let d = x[j + 1] - x[j];
            acc -= d * d * 0.5;
        }
        for j in 0..n {
            acc += x[j] * x[j] * x[j];
        }
        acc
    }
}

twin! {
    /// Recurrences: iteration `j` reads what iteration `j − 1` wrote, so their
    /// reverses stay backwards (the first through saved values, the second, whose
    /// values the reverse never reads, through adjoints alone).
    #[autodiff_reverse(d_recurrence, Duplicated, Active)]
    #[autodiff_forward(t_recurrence, Dual, Dual)]
    fn recurrence / recurrence_g(x) {
        let n = x.len();
        let mut y = vec![S::cst(0.0); n];
        y[0] = x[0];
        for j in 1..n {
            y[j] = y[j - 1] * x[j] + x[j];
        }
        let mut t = vec![S::cst(0.0); n];
        for j in 0..n {
            t[j] = x[j] * 2.0;
        }
        for j in 0..n - 1 {
            let h = t[j] * 0.5;
            t[j + 1] += h;
        }
        let mut acc = S::cst(0.0);
        let mut lin = S::cst(0.0);
        for j in 0..n {
            acc += y[j] * y[j];
            lin += t[j] * 3.0;
        }
        acc + lin * lin
    }
}

twin! {
    /// A scratch row overwritten by every outer iteration, read by the next inner loop
    /// (saved as a whole), with a product accumulated across iterations (saved one
    /// value at a time, its reverse backwards).
    #[autodiff_reverse(d_scratch, Duplicated, Active)]
    #[autodiff_forward(t_scratch, Dual, Dual)]
    fn scratch / scratch_g(x) {
        let n = x.len();
        let mut z = vec![S::cst(0.0); n];
        let mut acc = S::cst(0.0);
        let mut p = S::cst(1.0);
        for c in 0..3 {
            for j in 0..n {
                z[j] = x[j] * x[(j + c) % n] - x[c];
            }
            for j in 0..n {
                acc += z[j] * z[j];
            }
            for j in 0..n {
                p = p * (z[j] * 0.1 + 1.0);
            }
        }
        acc + p
    }
}

fn vec_in(lo: f64, hi: f64, n: usize) -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(lo..hi, n)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn independent_iterations_run_forwards(x in vec_in(-1.0, 1.0, 6)) {
        check(&row!("independent", independent, d_independent, t_independent, independent_g), &x, 1e-6)
            .map_err(TestCaseError::fail)?;
    }

    #[test]
    fn shadows_at_several_offsets_accumulate_in_registers(x in vec_in(-1.0, 1.0, 7)) {
        check(&row!("stencil", stencil, d_stencil, t_stencil, stencil_g), &x, 1e-6)
            .map_err(TestCaseError::fail)?;
    }

    #[test]
    fn registers_add_to_what_the_shadow_holds(x in vec_in(-1.0, 1.0, 6), d0 in vec_in(-2.0, 2.0, 6)) {
        // `dx += ∂f/∂x · seed` whatever `dx` holds before: each element gets its sum once.
        let mut g = vec![0.0; 6];
        d_stencil(&x, &mut g, 0.5);
        let mut dx = d0.clone();
        d_stencil(&x, &mut dx, 0.5);
        for k in 0..6 {
            prop_assert!(crate::check::close(dx[k], d0[k] + g[k], 1e-14), "{k}: {} vs {}", dx[k], d0[k] + g[k]);
        }
    }

    #[test]
    fn recurrences_stay_backwards(x in vec_in(-1.0, 1.0, 5)) {
        check(&row!("recurrence", recurrence, d_recurrence, t_recurrence, recurrence_g), &x, 1e-6)
            .map_err(TestCaseError::fail)?;
    }

    #[test]
    fn overwritten_rows_are_saved_whole(x in vec_in(-1.0, 1.0, 5)) {
        check(&row!("scratch", scratch, d_scratch, t_scratch, scratch_g), &x, 1e-6)
            .map_err(TestCaseError::fail)?;
    }
}

/// The rewrites apply where the tests above expect them (and not elsewhere), so the
/// property tests exercise them.
#[test]
fn the_rewrites_apply_where_sound() {
    let closures =
        |e: &str| e.matches(": &mut [f64]| {").count() + e.matches(": &[f64]| {").count();
    let ind = <d_independent as Generated>::INFO.expansion;
    // The offset write, the reversed range and the two-index accumulation.
    assert!(closures(ind) >= 3, "{ind}");
    assert!(ind.contains("(__lo)..=(__hi)"), "{ind}");
    let st = <d_stencil as Generated>::INFO.expansion;
    // Offsets 0, 1, 2 after the inclusive loop: two sums pending past its end.
    assert!(st.contains("__d_x[__hi + 1 + 1usize] +="), "{st}");
    // Offsets 0 and 1 of the second loop: one.
    assert!(st.contains("__d_x[__hi + 0usize] +="), "{st}");
    assert_eq!(st.matches("let mut __c").count(), 5, "{st}");
    let rec = <d_recurrence as Generated>::INFO.expansion;
    for backwards in ["for j in ((1)..(n)).rev()", "in ((0)..(n - 1)).rev()"] {
        assert!(rec.contains(backwards), "{backwards} in:\n{rec}");
    }
    let scr = <d_scratch as Generated>::INFO.expansion;
    assert!(scr.contains("save_slice(__ws, &z[__lo..__hi])"), "{scr}");
    assert!(
        scr.contains("restore_slice(__ws, &mut z[__lo..__hi])"),
        "{scr}"
    );
    // `p = p * …` is saved per iteration and its reverse pops: backwards.
    assert!(scr.contains("Save::save(p, __ws)"), "{scr}");
}
