//! The tool's `gmm`: input `d`, `k`, `n`, `x` (n × d), `m`, `gamma` and the parameters
//! `alpha` (k), `mu` (k × d), `q` (k × d), `l` (k × d(d−1)/2); functions `objective`
//! and `jacobian` (the gradient as an object of parameter-shaped lists).

use serde_json::{Value, json};

use super::input::{field, index, int, matrix_with, number, numbers, to_list};
use super::{Engine, GradientEval, Run, generated, on_tape, pick};
use crate::gradbench::gmm::{GmmProblem, d_gmm_objective, gmm_gradient_tape, gmm_objective_tape};

/// Reads the input into a problem.
fn parse(input: &Value) -> Result<GmmProblem, String> {
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
    let m = int(field(input, "m")?, "m")?;
    let m = i32::try_from(m)
        .ok()
        .filter(|m| *m >= 0)
        .ok_or_else(|| format!("`m` must be a non-negative 32-bit integer, found {m}"))?;
    let alpha = numbers(field(input, "alpha")?, "alpha")?;
    if alpha.len() != k {
        return Err(format!(
            "`alpha` must have k = {k} entries, found {}",
            alpha.len()
        ));
    }
    let mut parts = Vec::with_capacity(3);
    for (name, cols) in [("mu", d), ("q", d), ("l", d * (d - 1) / 2)] {
        // Rows of zero entries (`l` for d = 1) read as no rows at all.
        let (r, v) = matrix_with(field(input, name)?, name, cols)?;
        if r != k && !(cols == 0 && v.is_empty()) {
            return Err(format!("`{name}` must have k = {k} rows, found {r}"));
        }
        parts.push(v);
    }
    let l = parts.pop().unwrap_or_default();
    let q = parts.pop().unwrap_or_default();
    let mu = parts.pop().unwrap_or_default();
    Ok(GmmProblem {
        alpha,
        mu,
        q,
        l,
        x,
        m,
        gamma: number(field(input, "gamma")?, "gamma")?,
    })
}

/// `k` rows of `cols` entries each, also when `cols` is zero.
fn rows_of(x: &[f64], k: usize, cols: usize) -> Value {
    Value::Array(
        (0..k)
            .map(|c| to_list(&x[c * cols..(c + 1) * cols]))
            .collect(),
    )
}

/// The gradient `[alpha, mu, q, l]` as the eval's object of parameter-shaped lists.
fn show(g: &[f64], p: &GmmProblem) -> Value {
    let (k, d) = (p.k(), p.d());
    let l = d * (d - 1) / 2;
    json!({
        "alpha": to_list(&g[..k]),
        "mu": rows_of(&g[k..k + k * d], k, d),
        "q": rows_of(&g[k + k * d..k + 2 * k * d], k, d),
        "l": rows_of(&g[k + 2 * k * d..], k, l),
    })
}

/// Prepares `objective` or `jacobian`.
pub(super) fn prepare(
    function: &str,
    input: &Value,
    engine: Engine,
) -> Result<Box<dyn Run>, String> {
    let jacobian = pick("gmm", function, ["objective", "jacobian"])?;
    let p = parse(input)?;
    let params = p.params();
    Ok(match engine {
        Engine::Tape => GradientEval::boxed(
            jacobian,
            params,
            p,
            gmm_objective_tape,
            on_tape(gmm_gradient_tape),
            show,
        ),
        // The problem holds the parameters in its own fields, which the generated
        // derivative reads; its shadows are the four parts of the output buffer.
        Engine::Macro => GradientEval::boxed(
            jacobian,
            params,
            p,
            |_, p| p.objective(),
            generated(|_, p, g| {
                let (k, d) = (p.k(), p.d());
                let (ga, rest) = g.split_at_mut(k);
                let (gm, rest) = rest.split_at_mut(k * d);
                let (gq, gl) = rest.split_at_mut(k * d);
                d_gmm_objective(
                    &p.alpha, ga, &p.mu, gm, &p.q, gq, &p.l, gl, &p.x, p.m, p.gamma, 1.0,
                );
            }),
            show,
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gradbench::support::{assert_close, central_gradient, uniform};

    fn input(d: usize, k: usize, n: usize) -> Value {
        let u = uniform(2, k * (1 + 2 * d + d * (d - 1) / 2));
        let rows = |v: &[f64], c: usize| -> Vec<Vec<f64>> {
            if c == 0 {
                return vec![vec![]; k];
            }
            v.chunks(c).map(<[f64]>::to_vec).collect()
        };
        let x: Vec<f64> = uniform(1, n * d).iter().map(|u| 2.0 * u - 1.0).collect();
        let p: Vec<f64> = u.iter().map(|u| u - 0.5).collect();
        let (a, rest) = p.split_at(k);
        let (mu, rest) = rest.split_at(k * d);
        let (q, l) = rest.split_at(k * d);
        json!({
            "d": d, "k": k, "n": n, "x": rows(&x, d), "m": 2, "gamma": 1.3,
            "alpha": a, "mu": rows(mu, d), "q": rows(q, d), "l": rows(l, d * (d - 1) / 2),
        })
    }

    fn flatten(out: &Value) -> Vec<f64> {
        ["alpha", "mu", "q", "l"]
            .iter()
            .flat_map(|key| {
                let v = &out[*key];
                match v[0].as_array() {
                    Some(_) => serde_json::from_value::<Vec<Vec<f64>>>(v.clone())
                        .unwrap()
                        .concat(),
                    None => serde_json::from_value::<Vec<f64>>(v.clone()).unwrap(),
                }
            })
            .collect()
    }

    #[test]
    fn jacobian_matches_central_differences_with_both_engines() {
        for (d, k, n) in [(3, 4, 7), (1, 2, 3)] {
            let input = input(d, k, n);
            let p = parse(&input).unwrap();
            let fd = central_gradient(|x| gmm_objective_tape(x, &p), &p.params(), 1e-6);
            for engine in [Engine::Tape, Engine::Macro] {
                let mut r = prepare("jacobian", &input, engine).unwrap();
                r.run().unwrap();
                r.run().unwrap();
                let out = r.output();
                assert_eq!(out["mu"][1].as_array().unwrap().len(), d);
                assert_close("gmm jacobian", &flatten(&out), &fd, 1e-6);
                let mut o = prepare("objective", &input, engine).unwrap();
                o.run().unwrap();
                let y = o.output().as_f64().unwrap();
                assert!((y - p.objective()).abs() < 1e-10 * y.abs().max(1.0));
            }
        }
    }

    #[test]
    fn malformed_inputs_name_the_field() {
        let e = prepare("jacobian", &json!({"d": 3}), Engine::Tape)
            .err()
            .unwrap();
        assert!(e.contains("`k`"), "{e}");
        let mut bad = input(2, 2, 3);
        bad["m"] = json!(-1);
        let e = prepare("objective", &bad, Engine::Macro).err().unwrap();
        assert!(e.contains("`m`"), "{e}");
    }
}
