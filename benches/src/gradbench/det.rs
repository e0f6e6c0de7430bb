//! GradBench's `det` eval: the determinant of an `ell × ell` matrix by expansion by
//! minors along the first remaining row (`primal`, `ell!`-order work on purpose), and
//! its gradient with respect to the entries (`gradient`), by reverse mode.
//!
//! Each minor records two dot products (its even and its odd cofactor terms) and their
//! difference, rather than two records per term.

use serde_json::Value;
use shade_autodiff::Const;
use shade_autodiff::scalar::{Real, shade_fn};

use super::input::{field, index, numbers};
use super::{Engine, GradientEval, Run, pick, show_list};

/// Largest supported size (the expansion's work grows as `ell!`).
pub const MAX_ELL: usize = 16;

/// The determinant of the minor with rows `row..` and the columns in `cols`.
fn minor<S: Real>(a: &[S], ell: usize, row: usize, cols: &mut Vec<usize>) -> S {
    let m = cols.len();
    let at = |r: usize, c: usize| a[r * ell + c];
    match m {
        1 => return at(row, cols[0]),
        2 => {
            let (c0, c1) = (cols[0], cols[1]);
            return at(row, c0) * at(row + 1, c1) - at(row, c1) * at(row + 1, c0);
        }
        _ => {}
    }
    let mut entries = [[S::zero(); MAX_ELL / 2]; 2];
    let mut subs = [[S::zero(); MAX_ELL / 2]; 2];
    for j in 0..m {
        let c = cols.remove(j);
        subs[j % 2][j / 2] = minor(a, ell, row + 1, cols);
        cols.insert(j, c);
        entries[j % 2][j / 2] = at(row, c);
    }
    let (even, odd) = (m.div_ceil(2), m / 2);
    S::dot(&entries[0][..even], &subs[0][..even]) - S::dot(&entries[1][..odd], &subs[1][..odd])
}

/// `det(A)` for `A` (`ell × ell` row-major, `ell = sqrt(a.len())`).
pub fn determinant<S: Real>(a: &[S], ell: &usize) -> S {
    let mut cols: Vec<usize> = (0..*ell).collect();
    minor(a, *ell, 0, &mut cols)
}

shade_fn!(Det = determinant(&[S], &usize));

/// Prepares `primal` or `gradient` for `{"A": [ell² floats], "ell": ell}`.
pub fn prepare(function: &str, input: &Value, engine: Engine) -> Result<Box<dyn Run>, String> {
    let Engine::Tape = engine;
    let gradient = pick("det", function, ["primal", "gradient"])?;
    let a = numbers(field(input, "A")?, "A")?;
    let ell = index(field(input, "ell")?, "ell")?;
    if ell == 0 || ell > MAX_ELL || a.len() != ell * ell {
        return Err(format!(
            "`A` must hold ell² entries for 1 ≤ ell ≤ {MAX_ELL}, found {} for ell = {ell}",
            a.len()
        ));
    }
    Ok(GradientEval::boxed(
        gradient,
        a,
        ell,
        determinant,
        |tape, a, ell, g| tape.gradient_into(&Det, a, (Const(ell),), g),
        show_list,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gradbench::testing::{assert_close, uniform};
    use shade_autodiff::scalar::Tape;

    /// The determinant by Gaussian elimination with partial pivoting.
    fn lu_det(a: &[f64], n: usize) -> f64 {
        let mut m = a.to_vec();
        let mut det = 1.0;
        for k in 0..n {
            let p = (k..n)
                .max_by(|&i, &j| m[i * n + k].abs().total_cmp(&m[j * n + k].abs()))
                .unwrap();
            if p != k {
                for c in 0..n {
                    m.swap(k * n + c, p * n + c);
                }
                det = -det;
            }
            det *= m[k * n + k];
            for i in k + 1..n {
                let f = m[i * n + k] / m[k * n + k];
                for c in k..n {
                    m[i * n + c] -= f * m[k * n + c];
                }
            }
        }
        det
    }

    #[test]
    fn determinant_and_gradient_match_an_independent_computation() {
        for ell in [1, 2, 3, 5] {
            let a = uniform(50 + ell as u64, ell * ell);
            let d = determinant(&a, &ell);
            assert!((d - lu_det(&a, ell)).abs() < 1e-12, "ell = {ell}");
            // ∂det/∂a_ij is the cofactor: det(A) (A⁻¹)ᵀ_ij; check by differences of the
            // elimination determinant instead (linear in each entry: exact).
            let mut g = vec![0.0; a.len()];
            Tape::new()
                .gradient_into(&Det, &a, (Const(&ell),), &mut g)
                .unwrap();
            let fd = crate::gradbench::testing::central_gradient(|x| lu_det(x, ell), &a, 1e-5);
            assert_close("det gradient", &g, &fd, 1e-9);
        }
    }
}
