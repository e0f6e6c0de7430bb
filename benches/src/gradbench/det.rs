//! GradBench `det`: the determinant of an `ell × ell` matrix by expansion by minors
//! along the first remaining row (`primal`, `ell!`-order work on purpose), and its
//! gradient with respect to the entries (`gradient`), by reverse mode.
//!
//! The compile-time form ([`minor`]) recurses with the set of used columns as a bit
//! mask; each level's reverse derivative calls the next level's, which recomputes its
//! own minors, so the gradient costs about `ell` primals. The tape's form
//! ([`determinant_tape`]) records each minor as two dot products (its even and its odd
//! cofactor terms) and their difference, rather than two records per term.

use shade_autodiff::autodiff_reverse;
use shade_autodiff::scalar::{Real, shade_fn};

/// Largest supported size (the expansion's work grows as `ell!`).
pub const MAX_ELL: usize = 16;

/// The determinant of the minor of rows `row..` and the columns not in `used` (a bit per
/// column). The compile-time form.
#[autodiff_reverse(d_minor, Duplicated, Const, Const, Const, Active)]
pub fn minor(a: &[f64], ell: usize, row: usize, used: u64) -> f64 {
    let mut det = 0.0;
    if row + 1 == ell {
        for c in 0..ell {
            if used & (1u64 << c) == 0 {
                det = a[row * ell + c];
            }
        }
    } else if row + 2 == ell {
        let mut c0 = ell;
        let mut c1 = ell;
        for c in 0..ell {
            if used & (1u64 << c) == 0 {
                if c0 == ell {
                    c0 = c;
                } else {
                    c1 = c;
                }
            }
        }
        let r = row * ell;
        det = a[r + c0] * a[r + ell + c1] - a[r + c1] * a[r + ell + c0];
    } else {
        let mut sign = 1.0;
        for c in 0..ell {
            if used & (1u64 << c) == 0 {
                det += sign * a[row * ell + c] * minor(a, ell, row + 1, used | (1u64 << c));
                sign = -sign;
            }
        }
    }
    det
}

/// `det(A)` for `A` (`ell × ell` row-major). The compile-time form.
#[autodiff_reverse(d_determinant, Duplicated, Const, Active)]
pub fn determinant(a: &[f64], ell: usize) -> f64 {
    minor(a, ell, 0, 0)
}

/// The minor with rows `row..` and the columns in `cols`, for any [`Real`].
fn minor_tape<S: Real>(a: &[S], ell: usize, row: usize, cols: &mut Vec<usize>) -> S {
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
        subs[j % 2][j / 2] = minor_tape(a, ell, row + 1, cols);
        cols.insert(j, c);
        entries[j % 2][j / 2] = at(row, c);
    }
    let (even, odd) = (m.div_ceil(2), m / 2);
    S::dot(&entries[0][..even], &subs[0][..even]) - S::dot(&entries[1][..odd], &subs[1][..odd])
}

/// [`determinant`] for any [`Real`]: the tape's form.
pub fn determinant_tape<S: Real>(a: &[S], ell: &usize) -> S {
    let mut cols: Vec<usize> = (0..*ell).collect();
    minor_tape(a, *ell, 0, &mut cols)
}

shade_fn!(pub(crate) DetTape = determinant_tape(&[S], &usize));

#[cfg(test)]
mod tests {
    use super::super::support::assert_close;
    use super::*;
    use shade_autodiff::Const;
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
    fn both_forms_match_elimination_and_agree_on_the_gradient() {
        for ell in [1usize, 2, 3, 5] {
            let a: Vec<f64> = (0..ell * ell)
                .map(|i| ((i * 7 + ell) % 11) as f64 * 0.1 - 0.4)
                .collect();
            let want = lu_det(&a, ell);
            let got = [determinant(&a, ell), determinant_tape(&a, &ell)];
            assert_close(&format!("ell = {ell}: values"), &got, &[want; 2], 1e-12);
            let mut g = vec![0.0; a.len()];
            let y = d_determinant(&a, &mut g, ell, 1.0);
            assert_eq!(y, determinant(&a, ell));
            let mut t = vec![0.0; a.len()];
            Tape::new()
                .gradient_into(&DetTape, &a, (Const(&ell),), &mut t)
                .unwrap();
            assert_close(&format!("ell = {ell}: gradient"), &g, &t, 1e-12);
        }
    }
}
