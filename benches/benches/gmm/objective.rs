//! The ADBench Gaussian mixture model objective, written once against `Real`.
//!
//! Shared by the `gmm` bench and by `shade-autodiff`'s `scalar_gmm` test (which checks
//! its gradient against central differences). Parameters, as in ADBench: `alphas` (k),
//! `means` (k × d), `icf` (k × d(d+1)/2: the log-diagonal, then the strictly lower
//! triangle column by column, of each component's inverse Cholesky factor); a Wishart
//! prior with `gamma` and `m`.

use shade_autodiff::scalar::Real;

/// The constant part of a GMM problem: data points and prior.
#[derive(Clone, Debug)]
pub struct GmmData {
    /// Dimension.
    pub d: usize,
    /// Number of components.
    pub k: usize,
    /// Data points, `n × d` row-major.
    pub x: Vec<f64>,
    /// Wishart prior scale.
    pub gamma: f64,
    /// Wishart prior degrees of freedom offset.
    pub m: i32,
}

impl GmmData {
    /// Number of data points.
    pub fn n(&self) -> usize {
        self.x.len() / self.d
    }

    /// Length of the parameter vector `[alphas, means, icf]`.
    pub fn num_params(&self) -> usize {
        let (d, k) = (self.d, self.k);
        k + k * d + k * d * (d + 1) / 2
    }
}

/// `ln Γ(x)` for `x > 0` (Lanczos, g = 7); only used in a constant term.
fn ln_gamma(x: f64) -> f64 {
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + 7.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The negative log-likelihood-style objective of ADBench (`gmm_objective`), for
/// `params = [alphas (k), means (k·d), icf (k·d(d+1)/2)]`.
pub fn gmm_objective<S: Real>(params: &[S], data: &GmmData) -> S {
    let (d, k, n) = (data.d, data.k, data.n());
    let icf_sz = d * (d + 1) / 2;
    let (alphas, rest) = params.split_at(k);
    let (means, icf) = rest.split_at(k * d);

    // Per component: the rows of the lower-triangular factor Q (row r holds its r
    // off-diagonal entries then the diagonal exp(icf_r)), and Σ icf_r.
    let mut rows: Vec<S> = Vec::with_capacity(k * icf_sz);
    let mut sum_qs: Vec<S> = Vec::with_capacity(k);
    let mut diag_sq: Vec<S> = Vec::with_capacity(k);
    for c in 0..k {
        let q = &icf[c * icf_sz..(c + 1) * icf_sz];
        sum_qs.push(S::sum_of(&q[..d]));
        let mut frob = S::zero();
        for r in 0..d {
            for j in 0..r {
                // Column-major strictly lower triangle: column j holds rows j+1..d.
                rows.push(q[d + j * (2 * d - j - 1) / 2 + (r - j - 1)]);
            }
            let e = q[r].exp();
            frob += e * e;
            rows.push(e);
        }
        diag_sq.push(frob + S::sum_sq(&q[d..]));
    }

    let mut xc: Vec<S> = vec![S::zero(); d];
    let mut main: Vec<S> = vec![S::zero(); k];
    let base: Vec<S> = (0..k).map(|c| alphas[c] + sum_qs[c]).collect();
    let mut slse = S::zero();
    for i in 0..n {
        let xi = &data.x[i * d..(i + 1) * d];
        for c in 0..k {
            // (mean - x) instead of (x - mean): the squared norm below is the same.
            for j in 0..d {
                xc[j] = means[c * d + j] - xi[j];
            }
            // ‖Q (μ - x)‖², one dot product per row of the packed factor.
            let q = &rows[c * icf_sz..(c + 1) * icf_sz];
            let (mut maha, mut off) = (S::zero(), 0);
            for r in 0..d {
                let yr = S::dot(&q[off..=off + r], &xc[..=r]);
                maha += yr * yr;
                off += r + 1;
            }
            main[c] = base[c] - maha * 0.5;
        }
        slse += S::logsumexp(&main);
    }

    let constant = -(n as f64) * (d as f64) * 0.5 * (2.0 * std::f64::consts::PI).ln();
    let lse_alphas = S::logsumexp(alphas);

    // Wishart prior.
    let nn = d as f64 + f64::from(data.m) + 1.0;
    let mut lgd = 0.25 * (d * (d - 1)) as f64 * std::f64::consts::PI.ln();
    for j in 1..=d {
        lgd += ln_gamma(0.5 * nn + 0.5 * (1.0 - j as f64));
    }
    let cst = nn * d as f64 * (data.gamma.ln() - 0.5 * 2f64.ln()) - lgd;
    let mut prior = S::zero();
    for c in 0..k {
        prior += diag_sq[c] * (0.5 * data.gamma * data.gamma) - sum_qs[c] * f64::from(data.m);
    }
    let prior = prior - k as f64 * cst;

    slse - lse_alphas * n as f64 + prior + constant
}

/// A reproducible random problem (uniform data and parameters, as ADBench's generator).
pub fn gmm_problem(d: usize, k: usize, n: usize, seed: u64) -> (Vec<f64>, GmmData) {
    // A small LCG keeps this file free of a random-number crate.
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut next = move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    let data = GmmData {
        d,
        k,
        x: (0..n * d).map(|_| next()).collect(),
        gamma: 1.0,
        m: 0,
    };
    let params = (0..data.num_params()).map(|_| next() - 0.5).collect();
    (params, data)
}
