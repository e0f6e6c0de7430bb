//! The tool's `ht`: input `theta` (26), `us` (one `[u, v]` per correspondence, empty in
//! the simple variant) and `data` (the hand model, the correspondences, the observed
//! points); functions `objective` (3 residuals per correspondence) and `jacobian` (one
//! row of 26, or 28 with `∂/∂u, ∂/∂v` first, per residual). The tape computes the
//! Jacobian in one forward evaluation with 26 (28) tangents; the compile-time engine
//! by one call of the generated `t_ht_objective` per column, on the model flattened
//! once ([`HtFlat`], untimed).

use serde_json::Value;

use super::input::{field, indices, int, list, matrix, matrix_with, numbers, to_list};
use super::{Engine, Run, pick};
use crate::gradbench::ht::{
    HtData, HtFlat, HtModel, M4, THETA, ht_objective, ht_objective_tape, jacobian, jacobian_tape,
};

fn matrices(v: &Value, what: &str, count: usize) -> Result<Vec<M4>, String> {
    let items = list(v, what)?;
    if items.len() != count {
        return Err(format!(
            "`{what}` must hold {count} matrices, found {}",
            items.len()
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let (r, c, d) = matrix(m, &format!("{what}[{i}]"))?;
            if (r, c) != (4, 4) {
                return Err(format!("`{what}[{i}]` must be 4 × 4, found {r} × {c}"));
            }
            Ok(std::array::from_fn(|k| d[k]))
        })
        .collect()
}

/// Reads `(theta, us, data)`.
fn parse(input: &Value) -> Result<(Vec<f64>, Vec<f64>, HtData), String> {
    let theta = numbers(field(input, "theta")?, "theta")?;
    if theta.len() != THETA {
        return Err(format!(
            "`theta` must have {THETA} entries, found {}",
            theta.len()
        ));
    }
    let (_, us) = matrix_with(field(input, "us")?, "us", 2)?;
    let data = field(input, "data")?;
    let model = field(data, "model")?;
    let parents: Vec<i64> = list(field(model, "parents")?, "parents")?
        .iter()
        .enumerate()
        .map(|(i, p)| int(p, &format!("parents[{i}]")))
        .collect::<Result<_, _>>()?;
    let bones = parents.len();
    if bones < 22 {
        return Err(format!(
            "the hand model needs at least 22 bones, found {bones}"
        ));
    }
    let parents = parents
        .iter()
        .enumerate()
        .map(|(i, &p)| match p {
            -1 => Ok(None),
            p if p >= 0 && (p as usize) < i => Ok(Some(p as usize)),
            p => Err(format!(
                "`parents[{i}]` = {p} must be -1 or an earlier bone"
            )),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let (nv, base) = matrix_with(field(model, "base_positions")?, "base_positions", 4)?;
    let (nw, w) = matrix_with(field(model, "weights")?, "weights", bones)?;
    if nw != nv {
        return Err(format!(
            "`weights` must have one row per vertex ({nv}), found {nw}"
        ));
    }
    let triangles = list(field(model, "triangles")?, "triangles")?
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let t = indices(t, &format!("triangles[{i}]"))?;
            match t[..] {
                [a, b, c] if a < nv && b < nv && c < nv => Ok([a, b, c]),
                _ => Err(format!(
                    "`triangles[{i}]` must be 3 vertex indices below {nv}"
                )),
            }
        })
        .collect::<Result<Vec<_>, String>>()?;
    let model = HtModel {
        base_relatives: matrices(field(model, "base_relatives")?, "base_relatives", bones)?,
        inverse_base_absolutes: matrices(
            field(model, "inverse_base_absolutes")?,
            "inverse_base_absolutes",
            bones,
        )?,
        parents,
        base_positions: base.chunks(4).map(|c| [c[0], c[1], c[2], c[3]]).collect(),
        weights: w
            .chunks(bones)
            .map(|row| {
                row.iter()
                    .enumerate()
                    .filter(|(_, w)| **w != 0.0)
                    .map(|(b, &w)| (b, w))
                    .collect()
            })
            .collect(),
        triangles,
        is_mirrored: field(model, "is_mirrored")?.as_bool().unwrap_or(false),
    };
    let correspondences = indices(field(data, "correspondences")?, "correspondences")?;
    let (np, pts) = matrix_with(field(data, "points")?, "points", 3)?;
    let complicated = !us.is_empty();
    let limit = if complicated {
        model.triangles.len()
    } else {
        nv
    };
    if np != correspondences.len() || (complicated && us.len() != 2 * np) {
        return Err(format!(
            "`points` ({np}) and `us` ({}) must have one row per correspondence ({})",
            us.len() / 2,
            correspondences.len()
        ));
    }
    if let Some((i, c)) = correspondences
        .iter()
        .enumerate()
        .find(|(_, c)| **c >= limit)
    {
        return Err(format!(
            "`correspondences[{i}]` = {c} is out of range (below {limit})"
        ));
    }
    let data = HtData {
        model,
        correspondences,
        points: pts.chunks(3).map(|c| [c[0], c[1], c[2]]).collect(),
    };
    Ok((theta, us, data))
}

struct HtRun {
    jacobian: bool,
    theta: Vec<f64>,
    us: Vec<f64>,
    data: HtData,
    /// The flat model of the compile-time form (`None`: the tape's).
    flat: Option<HtFlat>,
    err: Vec<f64>,
    simple: Vec<[f64; THETA]>,
    complicated: Vec<[f64; THETA + 2]>,
}

impl Run for HtRun {
    fn run(&mut self) -> Result<(), String> {
        let (theta, us) = (&self.theta, &self.us);
        match (&self.flat, self.jacobian) {
            (None, false) => ht_objective_tape(&mut self.err, theta, us, &self.data),
            (None, true) if us.is_empty() => jacobian_tape(theta, us, &self.data, &mut self.simple),
            (None, true) => jacobian_tape(theta, us, &self.data, &mut self.complicated),
            (Some(flat), false) => ht_objective(theta, us, flat, &mut self.err),
            (Some(flat), true) if us.is_empty() => jacobian(theta, us, flat, &mut self.simple),
            (Some(flat), true) => jacobian(theta, us, flat, &mut self.complicated),
        }
        Ok(())
    }
    fn output(&self) -> Value {
        if !self.jacobian {
            to_list(&self.err)
        } else if self.us.is_empty() {
            Value::Array(self.simple.iter().map(|r| to_list(r)).collect())
        } else {
            Value::Array(self.complicated.iter().map(|r| to_list(r)).collect())
        }
    }
}

/// Prepares `objective` or `jacobian`.
pub(super) fn prepare(
    function: &str,
    input: &Value,
    engine: Engine,
) -> Result<Box<dyn Run>, String> {
    let jacobian = pick("ht", function, ["objective", "jacobian"])?;
    let (theta, us, data) = parse(input)?;
    let rows = 3 * data.correspondences.len();
    let complicated = !us.is_empty();
    Ok(Box::new(HtRun {
        jacobian,
        err: vec![0.0; rows],
        simple: vec![[0.0; THETA]; if jacobian && !complicated { rows } else { 0 }],
        complicated: vec![[0.0; THETA + 2]; if jacobian && complicated { rows } else { 0 }],
        flat: (engine == Engine::Macro).then(|| HtFlat::new(&data)),
        theta,
        us,
        data,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A 22-bone chain with small rotations, 6 vertices, 3 triangles, 2 correspondences.
    fn input(complicated: bool) -> Value {
        let bones = 22;
        let m4 = |k: usize| {
            let a = 0.05 * (k as f64 + 1.0);
            let (c, s) = (a.cos(), a.sin());
            json!([
                [c, -s, 0.0, 0.1],
                [s, c, 0.0, -0.2],
                [0.0, 0.0, 1.0, 0.3],
                [0.0, 0.0, 0.0, 1.0]
            ])
        };
        let nv = 6;
        let weights: Vec<Vec<f64>> = (0..nv)
            .map(|v| {
                (0..bones)
                    .map(|b| {
                        if b % nv == v || b == (v + 7) % bones {
                            0.5
                        } else {
                            0.0
                        }
                    })
                    .collect()
            })
            .collect();
        json!({
            "theta": (0..THETA).map(|k| 0.1 * ((k * 7 % 11) as f64 - 5.0)).collect::<Vec<_>>(),
            "us": if complicated { json!([[0.2, 0.3], [0.5, 0.1]]) } else { json!([]) },
            "data": {
                "model": {
                    "parents": (0..bones as i64).map(|b| b - 1).collect::<Vec<_>>(),
                    "base_relatives": (0..bones).map(m4).collect::<Vec<_>>(),
                    "inverse_base_absolutes": (0..bones).map(|b| m4(bones - b)).collect::<Vec<_>>(),
                    "base_positions": (0..nv).map(|v| [0.1 * v as f64, 0.2, -0.1 * v as f64, 1.0]).collect::<Vec<_>>(),
                    "weights": weights,
                    "triangles": [[0, 1, 2], [3, 4, 5], [1, 3, 5]],
                    "is_mirrored": true,
                },
                "correspondences": [2, 1],
                "points": [[0.1, 0.2, 0.3], [-0.3, 0.1, 0.0]],
            },
        })
    }

    #[test]
    fn both_engines_give_the_same_residuals_and_jacobians() {
        for complicated in [false, true] {
            for function in ["objective", "jacobian"] {
                let mut outputs = Vec::new();
                for engine in [Engine::Tape, Engine::Macro] {
                    let mut r = prepare(function, &input(complicated), engine).unwrap();
                    r.run().unwrap();
                    outputs.push(r.output());
                }
                let flat = |v: &Value| -> Vec<f64> {
                    let mut out = Vec::new();
                    let mut walk = vec![v.clone()];
                    while let Some(v) = walk.pop() {
                        match v {
                            Value::Array(a) => walk.extend(a.into_iter().rev()),
                            v => out.push(v.as_f64().unwrap()),
                        }
                    }
                    out
                };
                let (t, m) = (flat(&outputs[0]), flat(&outputs[1]));
                assert_eq!(t.len(), m.len());
                assert!(t.iter().any(|v| *v != 0.0), "{function}");
                for (a, b) in t.iter().zip(&m) {
                    assert!(
                        (a - b).abs() <= 1e-10 * (a.abs() + b.abs()).max(1.0),
                        "{function} {complicated}: {a} vs {b}"
                    );
                }
            }
        }
    }
}
