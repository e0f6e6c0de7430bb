//! GradBench `gmm`: the log posterior of a Gaussian mixture with a Wishart prior on
//! the precision matrices (GradBench's corrected definition of ADBench's objective).
//!
//! `F = Σᵢ logsumexp_k(β_ik) − n (d/2 ln 2π + logsumexp(α)) + K (ν d ln(γ/√2) − ln Γ_d(ν/2))
//!      − γ²/2 Σ_k ‖Q_k‖²_F + m Σ_k Σ_j q_kj`, with `β_ik = α_k + Σ_j q_kj − ½ ‖Q_k (x_i − μ_k)‖²`,
//! `ν = d + m + 1`, and `Q_k` lower triangular: `exp(q_k)` on the diagonal, `l_k` below
//! it, column by column.
//!
//! Two forms of the same objective: [`gmm_objective`] for the compile-time engine (each
//! data point's term is a function of its own carrying the attribute, so the reverse
//! sweep keeps one point's intermediates at a time: memory `O(k d²)` beyond the
//! primal's, at any `n`), and [`gmm_objective_tape`] for the tape, generic over
//! [`Real`] with the parameters in one slice `[alpha, mu, q, l]`.
//!
//! GradBench's form differs from ADBench's in the sign of the prior's Frobenius term
//! and in the parameter layout (`q` and `l` apart); the `gmm` bench and the peer
//! scripts of `cargo xtask bench --peers` use this one.

// Index loops are the form the compile-time engine differentiates.
#![allow(clippy::needless_range_loop)]

use shade_autodiff::autodiff_reverse;
use shade_autodiff::scalar::{Real, Tape, shade_fn};
use shade_autodiff::{AdResult, Const};

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

/// [`gmm_objective`] for any [`Real`]: the tape's form. `params` is `[alpha (k), mu
/// (k·d), q (k·d), l (k·d(d−1)/2)]` (as [`GmmProblem::params`]); the sizes and the
/// constants (`x`, `m`, `gamma`) are `p`'s, whose own parameters are not read.
pub fn gmm_objective_tape<S: Real>(params: &[S], p: &GmmProblem) -> S {
    let (k, d) = (p.k(), p.d());
    let n = p.x.len() / d;
    let ld = d * (d - 1) / 2;
    let tri = d * (d + 1) / 2;
    let (alpha, rest) = params.split_at(k);
    let (mu, rest) = rest.split_at(k * d);
    let (q, l) = rest.split_at(k * d);

    // Per component: Q packed by rows (row r: its r strictly-lower entries, then the
    // diagonal exp(q_r)), Σ q, and ‖Q‖_F².
    let mut rows: Vec<S> = Vec::with_capacity(k * tri);
    let mut sum_q = S::zero();
    let mut frob = S::zero();
    let mut base: Vec<S> = Vec::with_capacity(k);
    for c in 0..k {
        let (qc, lc) = (&q[c * d..(c + 1) * d], &l[c * ld..(c + 1) * ld]);
        let sq = S::sum_of(qc);
        for r in 0..d {
            for j in 0..r {
                // Column j of the strictly lower part holds rows j+1..d.
                rows.push(lc[j * (2 * d - j - 1) / 2 + (r - j - 1)]);
            }
            let e = qc[r].exp();
            frob += e * e;
            rows.push(e);
        }
        frob += S::sum_sq(lc);
        base.push(alpha[c] + sq);
        sum_q += sq;
    }

    let mut centred: Vec<S> = vec![S::zero(); d];
    let mut beta: Vec<S> = vec![S::zero(); k];
    let mut slse = S::zero();
    for i in 0..n {
        let xi = &p.x[i * d..(i + 1) * d];
        for c in 0..k {
            // (mu - x) rather than (x - mu): the squared norm is the same.
            for j in 0..d {
                centred[j] = mu[c * d + j] - xi[j];
            }
            // ‖Q (μ - x)‖², one dot product per row of the packed factor.
            let qc = &rows[c * tri..(c + 1) * tri];
            let (mut sq, mut off) = (S::zero(), 0);
            for r in 0..d {
                let yr = S::dot(&qc[off..=off + r], &centred[..=r]);
                sq += yr * yr;
                off += r + 1;
            }
            beta[c] = base[c] - sq * 0.5;
        }
        slse += S::logsumexp(&beta);
    }
    let constant = gmm_constant(d, k, n, p.m, p.gamma);
    slse - S::logsumexp(alpha) * n as f64 - frob * (p.gamma * p.gamma * 0.5)
        + sum_q * f64::from(p.m)
        + constant
}

shade_fn!(pub(crate) GmmTape = gmm_objective_tape(&[S], &GmmProblem));

/// The tape's gradient of [`gmm_objective_tape`] at `params`, written into `g`, on a
/// `tape` kept across calls (warm after the first: its storage is reused).
pub fn gmm_gradient_tape(
    tape: &mut Tape,
    params: &[f64],
    p: &GmmProblem,
    g: &mut [f64],
) -> AdResult<()> {
    tape.gradient_into(&GmmTape, params, (Const(p),), g)
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

    /// Components.
    pub fn k(&self) -> usize {
        self.alpha.len()
    }

    /// Dimension.
    pub fn d(&self) -> usize {
        self.mu.len() / self.alpha.len()
    }

    /// The parameters in one vector `[alpha, mu, q, l]` (the tape's layout).
    pub fn params(&self) -> Vec<f64> {
        join([&self.alpha, &self.mu, &self.q, &self.l])
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

    /// The four parts in one vector `[alpha, mu, q, l]`.
    pub fn flat(&self) -> Vec<f64> {
        join([&self.alpha, &self.mu, &self.q, &self.l])
    }
}

fn join(parts: [&[f64]; 4]) -> Vec<f64> {
    parts.concat()
}

#[cfg(test)]
mod tests {
    use super::super::support::{Lcg, assert_close};
    use super::*;

    #[test]
    fn the_two_forms_agree() {
        for &(d, k, n, m) in &[(1usize, 2usize, 3usize, 0), (2, 3, 5, 2), (4, 5, 12, 1)] {
            let mut r = Lcg::new(7);
            let mut p = GmmProblem::random(d, k, n, &mut || r.next_f64());
            p.m = m;
            p.gamma = 0.7;
            let mut g = GmmGradient::zeros(&p);
            let y = p.gradient(&mut g);
            assert_close("primal", &[y], &[p.objective()], 1e-14);
            let params = p.params();
            assert_close("value", &[y], &[gmm_objective_tape(&params, &p)], 1e-12);
            let mut want = vec![0.0; params.len()];
            gmm_gradient_tape(&mut Tape::new(), &params, &p, &mut want).unwrap();
            assert_close(&format!("d={d} k={k} gradient"), &g.flat(), &want, 1e-10);
        }
    }

    /// The log-posterior written naively (densities multiplied out, as the eval's own
    /// reference does), for one point and one component in d = 2.
    #[test]
    fn objective_matches_the_density_formula() {
        // alpha, mu (2), q (2), l (1)
        let v: [f64; 6] = [0.1, 0.2, 0.4, 0.3, -0.5, 0.7];
        let p = GmmProblem {
            alpha: vec![v[0]],
            mu: vec![v[1], v[2]],
            q: vec![v[3], v[4]],
            l: vec![v[5]],
            x: vec![0.3, -0.2],
            m: 0,
            gamma: 1.0,
        };
        let q = [[v[3].exp(), 0.0], [v[5], v[4].exp()]];
        let prec = |i: usize, j: usize| (0..2).map(|r| q[r][i] * q[r][j]).sum::<f64>();
        let diff = [0.3 - v[1], -0.2 - v[2]];
        let mut maha = 0.0;
        for i in 0..2 {
            for j in 0..2 {
                maha += diff[i] * prec(i, j) * diff[j];
            }
        }
        let det = prec(0, 0) * prec(1, 1) - prec(0, 1) * prec(1, 0);
        let pi = std::f64::consts::PI;
        let likelihood = (-0.5 * maha).exp() / ((2.0 * pi).powi(2) / det).sqrt();
        // Wishart density of X = QᵀQ with V = I, p = 2, n = 3: tr(X) = ‖Q‖_F².
        let frob: f64 = q.iter().flatten().map(|v| v * v).sum();
        let lgamma_2 = 0.5 * pi.ln() + ln_gamma(1.5) + ln_gamma(1.0);
        let prior = -frob / 2.0 - 3.0 * 2f64.ln() - lgamma_2;
        let want = likelihood.ln() + prior;
        for got in [p.objective(), gmm_objective_tape(&p.params(), &p)] {
            assert!((got - want).abs() < 1e-10, "{got} vs {want}");
        }
    }

    /// The value `benches/peers/common.py`'s self-test pins for its own numpy form of
    /// the objective on the same generated problem: the peer scripts of `cargo xtask
    /// bench --peers` see the same data and the same function.
    #[test]
    fn the_peers_problem_is_pinned() {
        let mut r = Lcg::new(1);
        let p = GmmProblem::random(3, 2, 5, &mut || r.next_f64());
        assert_eq!(
            (p.alpha[0], p.x[0]),
            (0.00940744288372064, 0.9796215956506859)
        );
        let want = -29.890289758411686;
        assert_close("objective", &[p.objective()], &[want], 1e-13);
        assert_close(
            "tape form",
            &[gmm_objective_tape(&p.params(), &p)],
            &[want],
            1e-13,
        );
    }

    #[test]
    fn ln_gamma_matches_known_values() {
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-13);
        assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-13);
        assert!((ln_gamma(1.5) - (0.5 * std::f64::consts::PI.sqrt()).ln()).abs() < 1e-13);
    }
}
