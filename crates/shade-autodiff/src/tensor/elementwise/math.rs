//! Branch-free `exp`, `expm1`, `tanh` and `sigmoid` that the compiler vectorises: the maps of
//! the activations run over whole slices, where libm's scalar calls (one call per
//! element, no SIMD) cost more than the products of a small model.
//!
//! Every function is written with selects instead of branches and integer bit tricks
//! instead of float-to-int conversions, so that a loop over a slice becomes packed SIMD
//! code (SSE2 on the baseline target, wider where the crate is compiled for it), with no
//! `unsafe`.
//!
//! `exp`: `x = n ln2 + r`, `|r| ≤ ln2 / 2` (`n` rounded with the `1.5 · 2^p` trick, `ln2`
//! split in two so that `n · ln2_hi` is exact), `e^r` by its Taylor polynomial (degree 7
//! for `f32`, remainder below 0.2 ulp; degree 13 for `f64`), then `· 2^(n/2) · 2^(n -
//! n/2)` built from exponent bits (two factors, so that subnormal results and overflow
//! to `inf` come out rounded once, as IEEE says). `tanh` (`f32`): `x + x³ P(x²)` below
//! `|x| = 0.625` (Cephes' `tanhf` polynomial), `±(1 − 2 / (e^{2|x|} + 1))` above.
//! `sigmoid`: `e = e^{−|x|}`, `1 / (1 + e)` for `x ≥ 0` and `e / (1 + e)` below (one
//! division either way), so that neither side overflows and tiny results keep their
//! relative accuracy.
//!
//! Accuracy against std's functions over a dense sweep, edges included (±0, subnormal
//! results, overflow, ±inf, NaN): the tests below state the measured bounds in ulp.

/// `x = n ln2 + r` with `n` rounded to the nearest integer (the `1.5 · 2^23` trick,
/// `ln2` split in two so that `n · ln2_hi` is exact): `(n, r)`, for `|x|` within the
/// range of `exp`.
#[inline(always)]
fn reduce_f32(x: f32) -> (i32, f32) {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    // ln 2 = LN2_HI + LN2_LO, LN2_HI with 9 significant bits: `n · LN2_HI` is exact.
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // 1.5 · 2^23: adding it rounds to an integer, held in the low mantissa bits.
    const MAGIC: f32 = 12_582_912.0;
    let t = x * LOG2E + MAGIC;
    let n = t - MAGIC;
    let k = (t.to_bits() as i32).wrapping_sub(0x4B40_0000);
    (k, (x - n * LN2_HI) - n * LN2_LO)
}

/// [`reduce_f32`] for `f64`.
#[inline(always)]
fn reduce_f64(x: f64) -> (i64, f64) {
    const LOG2E: f64 = std::f64::consts::LOG2_E;
    // LN2_HI with 16 significant bits: `n · LN2_HI` is exact for |n| < 2^37.
    const LN2_HI: f64 = 0.693_145_751_953_125;
    const LN2_LO: f64 = 1.428_606_820_309_417_2e-6;
    // 1.5 · 2^52.
    const MAGIC: f64 = 6_755_399_441_055_744.0;
    let t = x * LOG2E + MAGIC;
    let n = t - MAGIC;
    let k = (t.to_bits() as i64).wrapping_sub(0x4338_0000_0000_0000);
    (k, (x - n * LN2_HI) - n * LN2_LO)
}

/// `1 / j!` for `j = 0..=14`: the Taylor coefficients of `e^r` (and, from `j = 1`, of
/// `(e^r - 1) / r`).
const INV_FACT: [f64; 15] = [
    1.0,
    1.0,
    1.0 / 2.0,
    1.0 / 6.0,
    1.0 / 24.0,
    1.0 / 120.0,
    1.0 / 720.0,
    1.0 / 5_040.0,
    1.0 / 40_320.0,
    1.0 / 362_880.0,
    1.0 / 3_628_800.0,
    1.0 / 39_916_800.0,
    1.0 / 479_001_600.0,
    1.0 / 6_227_020_800.0,
    1.0 / 87_178_291_200.0,
];

/// `e^x` for `f32`.
#[inline(always)]
pub(crate) fn exp_f32(x: f32) -> f32 {
    // e^-104 rounds to 0, e^89 to inf; NaN passes both comparisons unchanged.
    let x = if x < -104.0 { -104.0 } else { x };
    let x = if x > 89.0 { 89.0 } else { x };
    let (k, r) = reduce_f32(x);
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0
                    + r * (1.0 / 24.0
                        + r * (1.0 / 120.0 + r * (1.0 / 720.0 + r * (1.0 / 5040.0)))))));
    let k1 = k >> 1;
    let k2 = k.wrapping_sub(k1);
    let s1 = f32::from_bits((k1.wrapping_add(127) as u32) << 23);
    let s2 = f32::from_bits((k2.wrapping_add(127) as u32) << 23);
    p * s1 * s2
}

/// `e^x` for `f64`.
#[inline(always)]
pub(crate) fn exp_f64(x: f64) -> f64 {
    let x = if x < -746.0 { -746.0 } else { x };
    let x = if x > 710.0 { 710.0 } else { x };
    let (k, r) = reduce_f64(x);
    // Taylor to degree 13: the remainder is below 1e-17 on |r| ≤ ln2 / 2.
    let mut p = INV_FACT[13];
    for &c in INV_FACT[..13].iter().rev() {
        p = p * r + c;
    }
    let k1 = k >> 1;
    let k2 = k.wrapping_sub(k1);
    let s1 = f64::from_bits((k1.wrapping_add(1023) as u64) << 52);
    let s2 = f64::from_bits((k2.wrapping_add(1023) as u64) << 52);
    p * s1 * s2
}

/// `e^x - 1` for `f32`, accurate near 0: `x = n ln2 + r` as in [`exp_f32`], `e^r - 1` by
/// its Taylor polynomial `r + r²/2 + … + r⁸/8!` (remainder below 0.3 ulp on
/// `|r| ≤ ln2 / 2`), then `2^n (e^r - 1) + (2^n - 1)` (both terms exact in `2^n` for
/// `|n| ≤ 24`); beyond that, where the `- 1` no longer cancels, `e^x - 1` itself.
#[inline(always)]
pub(crate) fn expm1_f32(x: f32) -> f32 {
    let far = x.abs() > 16.0 || x.is_nan();
    let (k, r) = reduce_f32(if far { 0.0 } else { x });
    let p = 1.0
        + r * (0.5
            + r * (1.0 / 6.0
                + r * (1.0 / 24.0
                    + r * (1.0 / 120.0
                        + r * (1.0 / 720.0 + r * (1.0 / 5040.0 + r * (1.0 / 40_320.0)))))));
    let em = r * p;
    let s = f32::from_bits((k.wrapping_add(127) as u32) << 23);
    let near = s * em + (s - 1.0);
    let near = if k == 0 { em } else { near };
    // ±0 unchanged (the reduction gives +0 for -0).
    let near = if x == 0.0 { x } else { near };
    if far { exp_f32(x) - 1.0 } else { near }
}

/// `e^x - 1` for `f64`, as [`expm1_f32`] with the Taylor polynomial to degree 14
/// (remainder below 1e-17) and `|n| ≤ 53`.
#[inline(always)]
pub(crate) fn expm1_f64(x: f64) -> f64 {
    let far = x.abs() > 36.0 || x.is_nan();
    let (k, r) = reduce_f64(if far { 0.0 } else { x });
    // e^r - 1 = r · Σ_j r^j / (j+1)!, to degree 14.
    let mut p = INV_FACT[14];
    for &c in INV_FACT[1..14].iter().rev() {
        p = p * r + c;
    }
    let em = r * p;
    let s = f64::from_bits((k.wrapping_add(1023) as u64) << 52);
    let near = s * em + (s - 1.0);
    let near = if k == 0 { em } else { near };
    if far { exp_f64(x) - 1.0 } else { near }
}

/// `tanh x` for `f32`.
#[inline(always)]
pub(crate) fn tanh_f32(x: f32) -> f32 {
    let z = x * x;
    let small = x + x
        * z
        * ((((-5.704_988_7e-3 * z + 2.063_909e-2) * z - 5.373_971_6e-2) * z + 1.333_144_2e-1) * z
            - 3.333_328e-1);
    let e = exp_f32(2.0 * x.abs());
    let large = 1.0 - 2.0 / (e + 1.0);
    // Odd: the sign of `x` on both sides (the polynomial alone gives +0 for -0).
    (if x.abs() < 0.625 { small } else { large }).copysign(x)
}

/// The logistic function `1 / (1 + e^-x)` for `f32`.
#[inline(always)]
pub(crate) fn sigmoid_f32(x: f32) -> f32 {
    let e = exp_f32(-x.abs());
    (if x >= 0.0 { 1.0 } else { e }) / (1.0 + e)
}

/// The logistic function `1 / (1 + e^-x)` for `f64`.
#[inline(always)]
pub(crate) fn sigmoid_f64(x: f64) -> f64 {
    let e = exp_f64(-x.abs());
    (if x >= 0.0 { 1.0 } else { e }) / (1.0 + e)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distance in units in the last place, over the ordered integers of the bit
    /// patterns (0 and -0 equal; NaN only matches NaN).
    fn ulps32(a: f32, b: f32) -> u64 {
        if a.is_nan() || b.is_nan() {
            return if a.is_nan() && b.is_nan() {
                0
            } else {
                u64::MAX
            };
        }
        let key = |v: f32| {
            let i = v.to_bits() as i32;
            i64::from(if i < 0 { i32::MIN - i } else { i })
        };
        (key(a) - key(b)).unsigned_abs()
    }

    fn ulps64(a: f64, b: f64) -> u64 {
        if a.is_nan() || b.is_nan() {
            return if a.is_nan() && b.is_nan() {
                0
            } else {
                u64::MAX
            };
        }
        let key = |v: f64| {
            let i = v.to_bits() as i64;
            i128::from(if i < 0 { i64::MIN - i } else { i })
        };
        (key(a) - key(b)).unsigned_abs() as u64
    }

    /// The edges every sweep includes.
    const EDGES32: [f32; 12] = [
        0.0,
        -0.0,
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        1e-30,
        -1e-30,
        f32::MAX,
        f32::MIN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        0.625,
    ];

    /// Every 997th `f32` bit pattern (~4.3 million values, all binades, both signs),
    /// then the edges: the worst ulp distance and where.
    fn sweep32(f: impl Fn(f32) -> f32, reference: impl Fn(f32) -> f32) -> (u64, f32) {
        let mut worst = (0, 0.0);
        let mut check = |x: f32| {
            let d = ulps32(f(x), reference(x));
            if d > worst.0 {
                worst = (d, x);
            }
        };
        (0..=u32::MAX)
            .step_by(997)
            .for_each(|b| check(f32::from_bits(b)));
        EDGES32.into_iter().for_each(check);
        worst
    }

    #[test]
    fn exp_f32_is_within_1_ulp_of_std() {
        let (d, x) = sweep32(exp_f32, f32::exp);
        assert!(d <= 1, "exp_f32({x:e}) is {d} ulp from std");
        assert_eq!(exp_f32(0.0), 1.0);
        assert_eq!(exp_f32(-0.0), 1.0);
        assert_eq!(exp_f32(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_f32(88.8), f32::INFINITY);
        assert!(exp_f32(f32::NAN).is_nan());
    }

    #[test]
    fn expm1_f32_is_within_2_ulp_of_std() {
        let (d, x) = sweep32(expm1_f32, f32::exp_m1);
        assert!(d <= 2, "expm1_f32({x:e}) is {d} ulp from std");
        assert_eq!(expm1_f32(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(expm1_f32(f32::INFINITY), f32::INFINITY);
        assert_eq!(expm1_f32(f32::NEG_INFINITY), -1.0);
        assert!(expm1_f32(f32::NAN).is_nan());
    }

    #[test]
    fn expm1_f64_is_within_2_ulp_of_std() {
        let mut worst = (0, 0.0);
        for x in sweep64() {
            let d = ulps64(expm1_f64(x), x.exp_m1());
            if d > worst.0 {
                worst = (d, x);
            }
        }
        assert!(
            worst.0 <= 2,
            "expm1_f64({:e}) is {} ulp from std",
            worst.1,
            worst.0
        );
        assert_eq!(expm1_f64(-0.0).to_bits(), (-0.0f64).to_bits());
        assert_eq!(expm1_f64(f64::NEG_INFINITY), -1.0);
        assert!(expm1_f64(f64::NAN).is_nan());
    }

    #[test]
    fn tanh_f32_is_within_2_ulp_of_std() {
        let (d, x) = sweep32(tanh_f32, f32::tanh);
        assert!(d <= 2, "tanh_f32({x:e}) is {d} ulp from std");
        assert_eq!(tanh_f32(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(tanh_f32(f32::INFINITY), 1.0);
        assert_eq!(tanh_f32(f32::NEG_INFINITY), -1.0);
        assert!(tanh_f32(f32::NAN).is_nan());
    }

    #[test]
    fn sigmoid_f32_is_within_2_ulp_of_its_definition_in_f64() {
        let reference = |x: f32| {
            let x = f64::from(x);
            (if x >= 0.0 {
                1.0 / (1.0 + (-x).exp())
            } else {
                x.exp() / (1.0 + x.exp())
            }) as f32
        };
        let (d, x) = sweep32(sigmoid_f32, reference);
        assert!(d <= 2, "sigmoid_f32({x:e}) is {d} ulp from the definition");
        assert_eq!(sigmoid_f32(f32::INFINITY), 1.0);
        assert_eq!(sigmoid_f32(f32::NEG_INFINITY), 0.0);
        assert!(sigmoid_f32(f32::NAN).is_nan());
    }

    /// ~2 million `f64` values spread over every binade up to the overflow of `exp`,
    /// both signs, dense around 0, and the edges.
    fn sweep64() -> impl Iterator<Item = f64> {
        let spread = (0..1u64 << 20).flat_map(|i| {
            // Exponents 2^-60 .. 2^67 (from 2^10 on, exp is 0 or inf), 2^13 mantissas each.
            let e = (i >> 13) as i32 - 60;
            let m = 1.0 + (i & 0x1FFF) as f64 / 8_192.0 + 1.234e-9;
            let x = m * 2f64.powi(e);
            [x, -x]
        });
        let edges = [
            0.0,
            -0.0,
            f64::MIN_POSITIVE,
            709.78,
            709.79,
            -745.1,
            -745.2,
            -744.0,
            f64::MAX,
            f64::MIN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ];
        spread.chain(edges)
    }

    #[test]
    fn exp_f64_is_within_1_ulp_of_std() {
        let mut worst = (0, 0.0);
        for x in sweep64() {
            let d = ulps64(exp_f64(x), x.exp());
            if d > worst.0 {
                worst = (d, x);
            }
        }
        assert!(
            worst.0 <= 1,
            "exp_f64({:e}) is {} ulp from std",
            worst.1,
            worst.0
        );
        assert_eq!(exp_f64(f64::INFINITY), f64::INFINITY);
        assert_eq!(exp_f64(f64::NEG_INFINITY), 0.0);
        assert!(exp_f64(f64::NAN).is_nan());
    }

    #[test]
    fn sigmoid_f64_is_within_2_ulp_of_its_definition() {
        let mut worst = (0, 0.0);
        for x in sweep64() {
            let want = if x >= 0.0 {
                1.0 / (1.0 + (-x).exp())
            } else {
                x.exp() / (1.0 + x.exp())
            };
            let d = ulps64(sigmoid_f64(x), want);
            if d > worst.0 {
                worst = (d, x);
            }
        }
        assert!(
            worst.0 <= 2,
            "sigmoid_f64({:e}) is {} ulp off",
            worst.1,
            worst.0
        );
    }
}
