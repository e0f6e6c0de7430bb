//! Tests of the skinny kernels against the definition, on every level and thread count.

use super::*;
use ndarray::Array2;

/// `β·c + α·a·b` by the definition, summed in `f64`.
fn naive<T: Element>(
    alpha: f64,
    a: &ArrayView2<'_, T>,
    b: &ArrayView2<'_, T>,
    beta: f64,
    c: &Array2<T>,
) -> Array2<f64> {
    let (m, k) = a.dim();
    let n = b.ncols();
    Array2::from_shape_fn((m, n), |(i, j)| {
        let s: f64 = (0..k)
            .map(|p| a[[i, p]].to_f64().unwrap() * b[[p, j]].to_f64().unwrap())
            .sum();
        beta * c[[i, j]].to_f64().unwrap() + alpha * s
    })
}

/// Every kernel this machine can run, on 1, 2 and 3 threads (the bits must agree
/// across thread counts for one kernel; kernels differ in rounding only).
fn runs() -> Vec<(Level, usize)> {
    let mut levels = vec![Level::Plain];
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            levels.push(Level::Fma);
        }
        if std::is_x86_feature_detected!("avx512f") {
            levels.push(Level::Avx512);
        }
    }
    levels
        .into_iter()
        .flat_map(|l| [1, 2, 3].map(|t| (l, t)))
        .collect()
}

fn value<T: Element>(i: usize, j: usize, salt: usize) -> T {
    T::cst(((i * 7 + j * 3 + salt) % 17) as f64 / 4.0 - 2.0)
}

/// The largest error against the definition, relative to `Σ |a||b|` per element.
fn check<T: Element>(tol: f64, shapes: &[(usize, usize, usize)]) {
    for &(m, k, n) in shapes {
        let a = Array2::<T>::from_shape_fn((m, k), |(i, j)| value(i, j, 0));
        let b = Array2::<T>::from_shape_fn((k, n), |(i, j)| value(i, j, 5));
        let g = Array2::<T>::from_shape_fn((m, n), |(i, j)| value(i, j, 9));
        for (alpha, beta) in [(1.0, 0.0), (2.0, 0.5)] {
            let (al, be) = (T::cst(alpha), T::cst(beta));
            // A·B, B contiguous and transposed (G·Wᵀ of a reverse sweep).
            let bt = b.t().to_owned();
            for bv in [b.view(), bt.t()] {
                let c0 = Array2::<T>::from_shape_fn((m, n), |(i, j)| value(i, j, 2));
                let mut first: Option<Array2<T>> = None;
                for (level, threads) in runs() {
                    let mut c = c0.clone();
                    assert!(takes_nn(&a.view(), &bv, &c.view_mut()));
                    nn_at(level, threads, al, &a.view(), &bv, be, &mut c.view_mut());
                    let want = naive(alpha, &a.view(), &bv, beta, &c0);
                    let err = c
                        .iter()
                        .zip(&want)
                        .fold(0.0f64, |e, (x, w)| e.max((x.to_f64().unwrap() - w).abs()));
                    assert!(
                        err <= tol * (k as f64) * 4.0,
                        "A·B {m}×{k}×{n} on {threads} threads: error {err}"
                    );
                    let first = first.get_or_insert_with(|| c.clone());
                    assert_eq!(
                        &c, first,
                        "A·B {m}×{k}×{n}: bits differ on {threads} threads"
                    );
                    // `A` and `C` the first columns of wider arrays (rows contiguous,
                    // the whole not: the rows taken one view at a time): the same
                    // bits, and the columns beside `C` untouched.
                    let wa = Array2::<T>::from_shape_fn((m, k + 3), |(i, j)| {
                        if j < k { value(i, j, 0) } else { T::cst(9.0) }
                    });
                    let mut wc = Array2::<T>::from_shape_fn((m, n + 2), |(i, j)| {
                        if j < n { value(i, j, 2) } else { T::cst(7.0) }
                    });
                    let av = wa.slice(ndarray::s![.., ..k]);
                    let mut cv = wc.slice_mut(ndarray::s![.., ..n]);
                    assert!(m == 1 || av.as_slice().is_none() && cv.as_slice().is_none());
                    assert!(takes_nn(&av, &bv, &cv));
                    nn_at(level, threads, al, &av, &bv, be, &mut cv);
                    assert_eq!(&cv, first, "A·B {m}×{k}×{n}, A and C inside wider arrays");
                    assert!(
                        wc.slice(ndarray::s![.., n..])
                            .iter()
                            .all(|&v| v == T::cst(7.0))
                    );
                }
            }
            // Aᵀ·G.
            if m >= TN_MIN_ROWS {
                let c0 = Array2::<T>::from_shape_fn((k, n), |(i, j)| value(i, j, 4));
                let mut first: Option<Array2<T>> = None;
                for (level, threads) in runs() {
                    let mut c = c0.clone();
                    assert!(takes_tn(&a.t(), &g.view(), &c.view_mut()));
                    tn_at(level, threads, al, &a.t(), &g.view(), be, &mut c.view_mut());
                    let want = naive(alpha, &a.t(), &g.view(), beta, &c0);
                    let err = c
                        .iter()
                        .zip(&want)
                        .fold(0.0f64, |e, (x, w)| e.max((x.to_f64().unwrap() - w).abs()));
                    assert!(
                        err <= tol * (m as f64) * 4.0,
                        "Aᵀ·G {m}×{k}×{n} on {threads} threads: error {err}"
                    );
                    let first = first.get_or_insert_with(|| c.clone());
                    assert_eq!(
                        &c, first,
                        "Aᵀ·G {m}×{k}×{n}: bits differ on {threads} threads"
                    );
                    // Into a transposed `C` (`Gᵀ·A` into a row-major `[n, k]`): the
                    // same bits.
                    let mut ct = c0.t().to_owned();
                    let mut cv = ct.view_mut().reversed_axes();
                    assert!(takes_tn(&a.t(), &g.view(), &cv));
                    tn_at(level, threads, al, &a.t(), &g.view(), be, &mut cv);
                    assert_eq!(&ct.t(), first, "Aᵀ·G {m}×{k}×{n} into a transposed C");
                    // `A` the first columns of a wider array (rows contiguous, the
                    // whole not: the blocks' copy reads it row by row): the same bits.
                    let wide = Array2::<T>::from_shape_fn((m, k + 3), |(i, j)| {
                        if j < k { value(i, j, 0) } else { T::cst(9.0) }
                    });
                    let av = wide.slice(ndarray::s![.., ..k]);
                    let mut c = c0.clone();
                    assert!(av.as_slice().is_none() && takes_tn(&av.t(), &g.view(), &c.view_mut()));
                    tn_at(
                        level,
                        threads,
                        al,
                        &av.t(),
                        &g.view(),
                        be,
                        &mut c.view_mut(),
                    );
                    assert_eq!(&c, first, "Aᵀ·G {m}×{k}×{n} with A inside a wider array");
                }
            }
        }
    }
}

/// Shapes with remainders everywhere: rows not a multiple of the tile, columns
/// below, at and above a panel, one column, several parts of `Aᵀ·G`; the 8-row and
/// 8-column tiles of one-vector panels (`n ≤ 16` for f32, `≤ 8` for f64, with
/// AVX-512) with `k` not a multiple of 8; one row; the fewest rows `Aᵀ·G` takes;
/// the blocks of columns of a wide `Aᵀ·G` (`k ≥ 512`, a short last block).
const SHAPES: &[(usize, usize, usize)] = &[
    (700, 12, 5),
    (1100, 21, 16),
    (7, 3, 1),
    (13, 40, 7),
    (130, 33, 16),
    (1031, 17, 23),
    (2050, 9, 64),
    (600, 5, 128),
    (1, 40, 9),
    (17, 600, 35),
    (300, 530, 33),
];

#[test]
fn f32_products_match_the_definition_on_any_thread_count() {
    // Both splits of `Aᵀ·G` are among the shapes.
    assert!(SHAPES.iter().any(|&(_, k, n)| takes_blocks::<f32>(k, n)));
    assert!(SHAPES.iter().any(|&(_, k, n)| !takes_blocks::<f32>(k, n)));
    check::<f32>(f32::EPSILON as f64 * 4.0, SHAPES);
}

#[test]
fn f64_products_match_the_definition_on_any_thread_count() {
    check::<f64>(f64::EPSILON * 4.0, SHAPES);
}

#[test]
fn parts_depend_on_rows_only() {
    assert_eq!(parts(10), 1);
    assert_eq!(parts(PART_ROWS - 1), 1);
    assert_eq!(parts(3 * PART_ROWS), 2);
    assert_eq!(parts(4 * PART_ROWS), 4);
    assert_eq!(parts(5 * PART_ROWS + 100), 4);
    assert_eq!(parts(1 << 30), MAX_PARTS);
}
