//! GradBench's `gmm` eval: the log-posterior of a Gaussian mixture with a Wishart prior
//! (`objective`) and its gradient with respect to every parameter (`jacobian`), by
//! reverse mode.
//!
//! GradBench's form differs from ADBench's (`benches/benches/gmm/objective.rs`) in the
//! sign of the prior and in the parameter layout: `alpha` (k), `mu` (k × d), `q`
//! (k × d, the log-diagonal of each precision factor `Q_j`) and `l` (k × d(d-1)/2, its
//! strictly lower part column after column).

use serde_json::{Value, json};
use shade_autodiff::Const;
use shade_autodiff::scalar::{Real, shade_fn};

use super::input::{field, index, int, matrix_with, number, numbers, to_list};
use super::{Engine, GradientEval, Run, pick};

/// The constants of a GMM problem.
#[derive(Clone, Debug)]
pub struct GmmData {
    /// Dimension.
    pub d: usize,
    /// Components.
    pub k: usize,
    /// Points, `n × d` row-major.
    pub x: Vec<f64>,
    /// Wishart precision.
    pub gamma: f64,
    /// Extra Wishart degrees of freedom.
    pub m: i64,
}

impl GmmData {
    /// Number of points.
    pub fn n(&self) -> usize {
        self.x.len() / self.d
    }

    /// Entries of one component's `l`.
    pub fn l_size(&self) -> usize {
        self.d * (self.d - 1) / 2
    }

    /// Length of the parameter vector `[alpha, mu, q, l]`.
    pub fn num_params(&self) -> usize {
        self.k * (1 + 2 * self.d + self.l_size())
    }
}

/// `ln Γ(x)` for `x > 0` (Lanczos, g = 7, relative error ~1e-15); a constant term only.
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
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1 - x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).abs().ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + 7.5;
    let mut a = C[0];
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// `ln Γ_p(a)`, the multivariate gamma function.
fn ln_multigamma(a: f64, p: usize) -> f64 {
    let mut out = 0.25 * (p * (p - 1)) as f64 * std::f64::consts::PI.ln();
    for j in 1..=p {
        out += ln_gamma(a + 0.5 * (1.0 - j as f64));
    }
    out
}

/// The log-posterior for `params = [alpha (k), mu (k·d), q (k·d), l (k·d(d-1)/2)]`.
pub fn gmm_objective<S: Real>(params: &[S], data: &GmmData) -> S {
    let (d, k, n) = (data.d, data.k, data.n());
    let l_sz = data.l_size();
    let tri = d * (d + 1) / 2;
    let (alpha, rest) = params.split_at(k);
    let (mu, rest) = rest.split_at(k * d);
    let (q, l) = rest.split_at(k * d);

    // Per component: Q packed by rows (row r: its r strictly-lower entries, then the
    // diagonal exp(q_r)), Σ q, and ‖Q‖_F².
    let mut rows: Vec<S> = Vec::with_capacity(k * tri);
    let mut sum_q: Vec<S> = Vec::with_capacity(k);
    let mut frob: Vec<S> = Vec::with_capacity(k);
    for c in 0..k {
        let (qc, lc) = (&q[c * d..(c + 1) * d], &l[c * l_sz..(c + 1) * l_sz]);
        sum_q.push(S::sum_of(qc));
        let mut diag = S::zero();
        for r in 0..d {
            for j in 0..r {
                // Column j of the strictly lower part holds rows j+1..d.
                rows.push(lc[j * (2 * d - j - 1) / 2 + (r - j - 1)]);
            }
            let e = qc[r].exp();
            diag += e * e;
            rows.push(e);
        }
        frob.push(diag + S::sum_sq(lc));
    }

    let base: Vec<S> = (0..k).map(|c| alpha[c] + sum_q[c]).collect();
    let mut centred: Vec<S> = vec![S::zero(); d];
    let mut main: Vec<S> = vec![S::zero(); k];
    let mut slse = S::zero();
    for i in 0..n {
        let xi = &data.x[i * d..(i + 1) * d];
        for c in 0..k {
            // (mu - x) rather than (x - mu): the squared norm is the same.
            for j in 0..d {
                centred[j] = mu[c * d + j] - xi[j];
            }
            let maha = S::lower_tri_matvec_sum_sq(&rows[c * tri..(c + 1) * tri], &centred);
            main[c] = base[c] - maha * 0.5;
        }
        slse += S::logsumexp(&main);
    }

    let two_pi = 2.0 * std::f64::consts::PI;
    let constant = -(n as f64) * d as f64 * 0.5 * two_pi.ln();
    let dof = d as f64 + data.m as f64 + 1.0;
    let c_prior =
        dof * d as f64 * (data.gamma.ln() - 0.5 * 2f64.ln()) - ln_multigamma(0.5 * dof, d);
    let mut prior = S::zero();
    for c in 0..k {
        prior += frob[c] * (0.5 * data.gamma * data.gamma) - sum_q[c] * data.m as f64;
    }
    slse - S::logsumexp(alpha) * n as f64 - prior + (constant + k as f64 * c_prior)
}

shade_fn!(Gmm = gmm_objective(&[S], &GmmData));

/// Reads the input into the data and the parameter vector `[alpha, mu, q, l]`.
pub fn parse(input: &Value) -> Result<(GmmData, Vec<f64>), String> {
    let d = index(field(input, "d")?, "d")?;
    let k = index(field(input, "k")?, "k")?;
    let n = index(field(input, "n")?, "n")?;
    if d == 0 || k == 0 {
        return Err(format!(
            "`d` and `k` must be positive, found d = {d}, k = {k}"
        ));
    }
    let (rows, x) = matrix_with(field(input, "x")?, "x", d)?;
    if rows != n {
        return Err(format!("`x` must have n = {n} rows, found {rows}"));
    }
    let data = GmmData {
        d,
        k,
        x,
        gamma: number(field(input, "gamma")?, "gamma")?,
        m: int(field(input, "m")?, "m")?,
    };
    let mut params = numbers(field(input, "alpha")?, "alpha")?;
    if params.len() != k {
        return Err(format!(
            "`alpha` must have k = {k} entries, found {}",
            params.len()
        ));
    }
    for (name, cols) in [("mu", d), ("q", d), ("l", data.l_size())] {
        let (r, v) = matrix_with(field(input, name)?, name, cols)?;
        if r != k {
            return Err(format!("`{name}` must have k = {k} rows, found {r}"));
        }
        // Rows of zero entries (`l` for d = 1) read as no rows at all.
        params.extend(v);
    }
    Ok((data, params))
}

/// `k` rows of `cols` entries each, also when `cols` is zero.
fn rows_of(x: &[f64], k: usize, cols: usize) -> Value {
    Value::Array(
        (0..k)
            .map(|c| to_list(&x[c * cols..(c + 1) * cols]))
            .collect(),
    )
}

/// The gradient as the eval's object of parameter-shaped lists.
fn show(g: &[f64], data: &GmmData) -> Value {
    let (d, k, l) = (data.d, data.k, data.l_size());
    json!({
        "alpha": to_list(&g[..k]),
        "mu": rows_of(&g[k..k + k * d], k, d),
        "q": rows_of(&g[k + k * d..k + 2 * k * d], k, d),
        "l": rows_of(&g[k + 2 * k * d..], k, l),
    })
}

/// Prepares `objective` or `jacobian`.
pub fn prepare(function: &str, input: &Value, engine: Engine) -> Result<Box<dyn Run>, String> {
    let Engine::Tape = engine;
    let jacobian = pick("gmm", function, ["objective", "jacobian"])?;
    let (data, params) = parse(input)?;
    Ok(GradientEval::boxed(
        jacobian,
        params,
        data,
        gmm_objective,
        |tape, p, data, g| tape.gradient_into(&Gmm, p, (Const(data),), g),
        show,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gradbench::testing::{assert_close, central_gradient, uniform};
    use shade_autodiff::scalar::Tape;

    fn problem(d: usize, k: usize, n: usize, m: i64) -> (GmmData, Vec<f64>) {
        let data = GmmData {
            d,
            k,
            x: uniform(1, n * d).iter().map(|u| 2.0 * u - 1.0).collect(),
            gamma: 1.3,
            m,
        };
        let params = uniform(2, data.num_params())
            .iter()
            .map(|u| u - 0.5)
            .collect();
        (data, params)
    }

    #[test]
    fn gradient_matches_central_differences() {
        let (data, params) = problem(3, 4, 7, 2);
        let mut g = vec![0.0; params.len()];
        Tape::new()
            .gradient_into(&Gmm, &params, (Const(&data),), &mut g)
            .unwrap();
        let fd = central_gradient(|p| gmm_objective(p, &data), &params, 1e-6);
        assert_close("gmm gradient", &g, &fd, 1e-6);
    }

    /// The log-posterior written naively (densities multiplied out, as the eval's own
    /// reference does), for one point and one component in d = 2.
    #[test]
    fn objective_matches_the_density_formula() {
        let (d, k) = (2, 1);
        let data = GmmData {
            d,
            k,
            x: vec![0.3, -0.2],
            gamma: 1.0,
            m: 0,
        };
        // alpha, mu (2), q (2), l (1)
        let p: [f64; 6] = [0.1, 0.2, 0.4, 0.3, -0.5, 0.7];
        let q = [[p[3].exp(), 0.0], [p[5], p[4].exp()]];
        let prec = |i: usize, j: usize| (0..2).map(|r| q[r][i] * q[r][j]).sum::<f64>();
        let diff = [0.3 - p[1], -0.2 - p[2]];
        let maha: f64 = (0..2)
            .flat_map(|i| (0..2).map(move |j| (i, j)))
            .map(|(i, j)| diff[i] * prec(i, j) * diff[j])
            .sum();
        let det = prec(0, 0) * prec(1, 1) - prec(0, 1) * prec(1, 0);
        let pi = std::f64::consts::PI;
        let likelihood = (-0.5 * maha).exp() / ((2.0 * pi).powi(2) / det).sqrt();
        // Wishart density of X = QᵀQ with V = I, p = 2, n = 3: tr(X) = ‖Q‖_F².
        let frob: f64 = q.iter().flatten().map(|v| v * v).sum();
        let lgamma_2 = 0.5 * pi.ln() + ln_gamma(1.5) + ln_gamma(1.0);
        let prior = 0.0 * det.ln() - frob / 2.0 - 3.0 * 2f64.ln() - lgamma_2;
        let want = likelihood.ln() + prior;
        let got = gmm_objective(&p, &data);
        assert!((got - want).abs() < 1e-10, "{got} vs {want}");
        let _ = k;
    }

    #[test]
    fn ln_gamma_matches_known_values() {
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-13);
        assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-13);
        assert!((ln_gamma(0.25) - 1.288_022_524_698_077_4).abs() < 1e-12);
    }

    #[test]
    fn jacobian_output_has_the_parameters_shapes() {
        let (data, params) = problem(3, 2, 5, 0);
        let x: Vec<Vec<f64>> = data.x.chunks(3).map(<[f64]>::to_vec).collect();
        let rows =
            |v: &[f64], c: usize| -> Vec<Vec<f64>> { v.chunks(c).map(<[f64]>::to_vec).collect() };
        let input = json!({
            "d": 3, "k": 2, "n": 5, "x": x, "m": 0, "gamma": 1.3,
            "alpha": params[..2], "mu": rows(&params[2..8], 3),
            "q": rows(&params[8..14], 3), "l": rows(&params[14..], 3),
        });
        let mut r = prepare("jacobian", &input, Engine::Tape).unwrap();
        r.run().unwrap();
        let out = r.output();
        assert_eq!(out["alpha"].as_array().unwrap().len(), 2);
        assert_eq!(out["mu"][1].as_array().unwrap().len(), 3);
        assert_eq!(out["l"][0].as_array().unwrap().len(), 3);
        let e = prepare("jacobian", &json!({"d": 3}), Engine::Tape)
            .err()
            .unwrap();
        assert!(e.contains("`k`"), "{e}");
    }
}
