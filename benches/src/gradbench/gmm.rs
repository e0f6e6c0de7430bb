//! GradBench `gmm`: the log posterior of a Gaussian mixture with a Wishart prior on
//! the precision matrices (GradBench's corrected definition of ADBench's objective).
//!
//! `F = Σᵢ logsumexp_k(β_ik) − n (d/2 ln 2π + logsumexp(α)) + K (ν d ln(γ/√2) − ln Γ_d(ν/2))
//!      − γ²/2 Σ_k ‖Q_k‖²_F + m Σ_k Σ_j q_kj`, with `β_ik = α_k + Σ_j q_kj − ½ ‖Q_k (x_i − μ_k)‖²`,
//! `ν = d + m + 1`, and `Q_k` lower triangular: `exp(q_k)` on the diagonal, `l_k` below
//! it, column by column.
//!
//! Each data point's term is a function of its own carrying the attribute, so the
//! reverse sweep keeps one point's intermediates at a time (memory `O(k d²)` beyond
//! the primal's, at any `n`).

// Index loops are the form the compile-time engine differentiates.
#![allow(clippy::needless_range_loop)]

use shade_autodiff::autodiff_reverse;

/// One point's term `logsumexp_k(β_k)` with `β_k = base_k − ½ ‖Q_k (x − μ_k)‖²`;
/// `qdiag` holds `exp(q_k)` and `lr` the strictly lower triangles row by row.
#[autodiff_reverse(
    d_gmm_point,
    Duplicated,
    Duplicated,
    Duplicated,
    Duplicated,
    Const,
    Active
)]
pub fn gmm_point(base: &[f64], mu: &[f64], qdiag: &[f64], lr: &[f64], xi: &[f64]) -> f64 {
    let k = base.len();
    let d = xi.len();
    let ld = d * (d - 1) / 2;
    let mut beta = vec![0.0; k];
    let mut xc = vec![0.0; d];
    for c in 0..k {
        for j in 0..d {
            xc[j] = xi[j] - mu[c * d + j];
        }
        let mut sq = 0.0;
        for r in 0..d {
            let off = c * ld + r * (r + 1) / 2 - r;
            let mut s = qdiag[c * d + r] * xc[r];
            for j in 0..r {
                s += lr[off + j] * xc[j];
            }
            sq += s * s;
        }
        beta[c] = base[c] - sq * 0.5;
    }
    let mut mx = beta[0];
    for c in 1..k {
        if beta[c] > mx {
            mx = beta[c];
        }
    }
    let mut se = 0.0;
    for c in 0..k {
        se += (beta[c] - mx).exp();
    }
    mx + se.ln()
}

/// `ln Γ(x)` for `x > 0` (Lanczos, g = 7): constant terms only.
pub fn ln_gamma(x: f64) -> f64 {
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

/// The constant of the prior and the likelihood: `K (ν d ln(γ/√2) − ln Γ_d(ν/2)) − n d/2 ln 2π`.
pub fn gmm_constant(d: usize, k: usize, n: usize, m: i32, gamma: f64) -> f64 {
    let nu = d as f64 + f64::from(m) + 1.0;
    let mut lgd = 0.25 * (d * (d - 1)) as f64 * std::f64::consts::PI.ln();
    for j in 1..=d {
        lgd += ln_gamma(0.5 * nu + 0.5 * (1.0 - j as f64));
    }
    let prior = k as f64 * (nu * d as f64 * (gamma / 2f64.sqrt()).ln() - lgd);
    prior - n as f64 * d as f64 * 0.5 * (2.0 * std::f64::consts::PI).ln()
}

/// The log posterior for `alpha` (k), `mu` (k·d), `q` (k·d), `l` (k·d(d−1)/2, each
/// component's strictly lower triangle column by column), data `x` (n·d), prior `m`
/// and `gamma`.
#[autodiff_reverse(
    d_gmm_objective,
    Duplicated,
    Duplicated,
    Duplicated,
    Duplicated,
    Const,
    Const,
    Const,
    Active
)]
pub fn gmm_objective(
    alpha: &[f64],
    mu: &[f64],
    q: &[f64],
    l: &[f64],
    x: &[f64],
    m: i32,
    gamma: f64,
) -> f64 {
    let k = alpha.len();
    let d = mu.len() / k;
    let n = x.len() / d;
    let ld = d * (d - 1) / 2;
    let mut qdiag = vec![0.0; k * d];
    let mut lr = vec![0.0; k * ld];
    let mut base = vec![0.0; k];
    let mut frob = 0.0;
    let mut sum_q = 0.0;
    for c in 0..k {
        let mut sq = 0.0;
        for j in 0..d {
            let e = q[c * d + j].exp();
            qdiag[c * d + j] = e;
            sq += q[c * d + j];
            frob += e * e;
        }
        // Column-major input, row-major copy for the points' inner loops.
        let mut src = c * ld;
        for j in 0..d {
            for r in j + 1..d {
                let v = l[src];
                lr[c * ld + r * (r - 1) / 2 + j] = v;
                frob += v * v;
                src += 1;
            }
        }
        base[c] = alpha[c] + sq;
        sum_q += sq;
    }
    let mut slse = 0.0;
    for i in 0..n {
        slse += gmm_point(&base, mu, &qdiag, &lr, &x[i * d..(i + 1) * d]);
    }
    let mut mx = alpha[0];
    for c in 1..k {
        if alpha[c] > mx {
            mx = alpha[c];
        }
    }
    let mut se = 0.0;
    for c in 0..k {
        se += (alpha[c] - mx).exp();
    }
    let lse_alpha = mx + se.ln();
    let constant = gmm_constant(d, k, n, m, gamma);
    slse - lse_alpha * (n as f64) - frob * (gamma * gamma * 0.5) + sum_q * f64::from(m) + constant
}

/// A GMM problem: parameters and data.
#[derive(Clone, Debug)]
pub struct GmmProblem {
    /// Mixture weight parameters (k).
    pub alpha: Vec<f64>,
    /// Means (k·d).
    pub mu: Vec<f64>,
    /// Log-diagonals (k·d).
    pub q: Vec<f64>,
    /// Strictly lower triangles, column by column (k·d(d−1)/2).
    pub l: Vec<f64>,
    /// Data points (n·d).
    pub x: Vec<f64>,
    /// Wishart degrees of freedom offset.
    pub m: i32,
    /// Wishart precision.
    pub gamma: f64,
}

impl GmmProblem {
    /// A random problem of dimension `d`, `k` components, `n` points, from `next`
    /// (uniform in `[0, 1)`).
    pub fn random(d: usize, k: usize, n: usize, next: &mut impl FnMut() -> f64) -> Self {
        let mut vec = |n: usize, lo: f64, hi: f64| -> Vec<f64> {
            (0..n).map(|_| lo + (hi - lo) * next()).collect()
        };
        GmmProblem {
            alpha: vec(k, -0.5, 0.5),
            mu: vec(k * d, 0.0, 1.0),
            q: vec(k * d, -0.5, 0.5),
            l: vec(k * d * (d - 1) / 2, -0.5, 0.5),
            x: vec(n * d, 0.0, 1.0),
            m: 0,
            gamma: 1.0,
        }
    }

    /// The objective.
    pub fn objective(&self) -> f64 {
        gmm_objective(
            &self.alpha,
            &self.mu,
            &self.q,
            &self.l,
            &self.x,
            self.m,
            self.gamma,
        )
    }

    /// The objective and its gradient (added into the four shadows).
    pub fn gradient(&self, g: &mut GmmGradient) -> f64 {
        d_gmm_objective(
            &self.alpha,
            &mut g.alpha,
            &self.mu,
            &mut g.mu,
            &self.q,
            &mut g.q,
            &self.l,
            &mut g.l,
            &self.x,
            self.m,
            self.gamma,
            1.0,
        )
    }
}

/// The gradient's four parts.
#[derive(Clone, Debug, Default)]
pub struct GmmGradient {
    /// ∂F/∂α.
    pub alpha: Vec<f64>,
    /// ∂F/∂μ.
    pub mu: Vec<f64>,
    /// ∂F/∂q.
    pub q: Vec<f64>,
    /// ∂F/∂l.
    pub l: Vec<f64>,
}

impl GmmGradient {
    /// Zeros shaped like `p`'s parameters.
    pub fn zeros(p: &GmmProblem) -> Self {
        GmmGradient {
            alpha: vec![0.0; p.alpha.len()],
            mu: vec![0.0; p.mu.len()],
            q: vec![0.0; p.q.len()],
            l: vec![0.0; p.l.len()],
        }
    }

    /// Sets every entry to zero.
    pub fn clear(&mut self) {
        for v in [&mut self.alpha, &mut self.mu, &mut self.q, &mut self.l] {
            v.iter_mut().for_each(|x| *x = 0.0);
        }
    }
}
