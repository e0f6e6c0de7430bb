//! The tool's `ba`: input `n`, `m`, `p`, `cam` (11), `x` (3), `w`, `feat` (2);
//! functions `objective` and `jacobian`, both in GradBench's compressed forms (the
//! first observation's errors with the count; the first 30 and the last entry of each
//! CSR array).

use serde_json::{Value, json};
use shade_autodiff::scalar::Tape;

use super::input::{field, finite, index, number, numbers, to_list};
use super::{Engine, Run, pick};
use crate::gradbench::ba::{BaData, CAM, Csr, jacobian, jacobian_tape, objective};

/// Expands GradBench's one-of-each input.
fn parse(input: &Value) -> Result<BaData, String> {
    let n = index(field(input, "n")?, "n")?;
    let m = index(field(input, "m")?, "m")?;
    let p = index(field(input, "p")?, "p")?;
    if n == 0 || m == 0 || p == 0 {
        return Err(format!(
            "`n`, `m` and `p` must be positive, found {n}, {m}, {p}"
        ));
    }
    let cam = numbers(field(input, "cam")?, "cam")?;
    let x = numbers(field(input, "x")?, "x")?;
    let w = number(field(input, "w")?, "w")?;
    let feat = numbers(field(input, "feat")?, "feat")?;
    if cam.len() != CAM || x.len() != 3 || feat.len() != 2 {
        return Err(format!(
            "`cam`, `x` and `feat` must have 11, 3 and 2 entries, found {}, {}, {}",
            cam.len(),
            x.len(),
            feat.len()
        ));
    }
    Ok(BaData::expand(n, m, p, &cam, &x, w, &feat))
}

/// The first 30 entries and the last one: GradBench's cut of a CSR array.
fn cut<T: Copy>(v: &[T], json: impl Fn(T) -> Value) -> Value {
    let mut out: Vec<Value> = v.iter().take(30).map(|&x| json(x)).collect();
    if let Some(&last) = v.last() {
        out.push(json(last));
    }
    Value::Array(out)
}

struct BaRun {
    jacobian: bool,
    engine: Engine,
    data: BaData,
    reproj: Vec<f64>,
    w_err: Vec<f64>,
    jac: Csr,
    tape: Tape,
}

impl Run for BaRun {
    fn run(&mut self) -> Result<(), String> {
        match (self.jacobian, self.engine) {
            (true, Engine::Tape) => jacobian_tape(&self.data, &mut self.tape, &mut self.jac),
            (true, Engine::Macro) => jacobian(&self.data, &mut self.jac),
            (false, engine) => {
                let tape = engine == Engine::Tape;
                objective(&self.data, tape, &mut self.reproj, &mut self.w_err);
                Ok(())
            }
        }
    }
    fn output(&self) -> Value {
        if self.jacobian {
            let index = |i: usize| Value::from(i as u64);
            return json!({
                "rows": cut(&self.jac.rows, index),
                "cols": cut(&self.jac.cols, index),
                "vals": cut(&self.jac.vals, finite),
            });
        }
        json!({
            "reproj_error": {"elements": to_list(&self.reproj[..2]), "repeated": self.data.p},
            "w_err": {"element": finite(self.w_err[0]), "repeated": self.data.p},
        })
    }
}

/// Prepares `objective` or `jacobian`.
pub(super) fn prepare(
    function: &str,
    input: &Value,
    engine: Engine,
) -> Result<Box<dyn Run>, String> {
    let jacobian = pick("ba", function, ["objective", "jacobian"])?;
    let data = parse(input)?;
    Ok(Box::new(BaRun {
        jacobian,
        engine,
        reproj: vec![0.0; 2 * data.p],
        w_err: vec![0.0; data.p],
        data,
        jac: Csr::default(),
        tape: Tape::new(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gradbench::ba::{BLOCK, reprojection_tape};
    use crate::gradbench::support::{assert_close, central_jacobian};

    const CAMERA: [f64; CAM] = [
        0.1, 0.2, 0.3, 0.1, -0.2, -3.0, 400.0, 10.0, -5.0, 1e-3, -2e-4,
    ];

    fn input() -> Value {
        json!({
            "n": 2, "m": 3, "p": 4, "cam": CAMERA,
            "x": [0.5, 0.3, 2.0], "w": 0.8, "feat": [1.0, 2.0]
        })
    }

    #[test]
    fn jacobian_matches_central_differences_with_both_engines() {
        let x: Vec<f64> = CAMERA
            .iter()
            .chain(&[0.5, 0.3, 2.0, 0.8])
            .copied()
            .collect();
        let fd = central_jacobian(
            |x| {
                let mut e = [0.0; 2];
                reprojection_tape(&mut e, x, &[1.0, 2.0]);
                e.to_vec()
            },
            &x,
            1e-7,
        );
        assert_eq!(fd.len(), 2 * BLOCK);
        for engine in [Engine::Tape, Engine::Macro] {
            let mut r = prepare("jacobian", &input(), engine).unwrap();
            r.run().unwrap();
            r.run().unwrap();
            let out = r.output();
            let vals: Vec<f64> = serde_json::from_value(out["vals"].clone()).unwrap();
            // The first observation's two rows, then the last weight error's derivative.
            assert_close("ba block", &vals[..30], &fd, 1e-5);
            assert!((vals[30] + 1.6).abs() < 1e-15);
            let mut o = prepare("objective", &input(), engine).unwrap();
            o.run().unwrap();
            assert_eq!(o.output()["w_err"]["repeated"], json!(4));
            assert!((o.output()["w_err"]["element"].as_f64().unwrap() - 0.36).abs() < 1e-15);
        }
    }

    #[test]
    fn csr_layout_follows_the_eval() {
        let mut r = prepare("jacobian", &input(), Engine::Macro).unwrap();
        r.run().unwrap();
        let out = r.output();
        let rows: Vec<usize> = serde_json::from_value(out["rows"].clone()).unwrap();
        let cols: Vec<usize> = serde_json::from_value(out["cols"].clone()).unwrap();
        assert_eq!(rows.len(), 14, "13 row pointers, then the last again");
        assert_eq!(rows[..3], [0, 15, 30]);
        assert_eq!(*rows.last().unwrap(), 2 * 4 * 15 + 4);
        assert_eq!(cols[..12], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 22]);
        assert_eq!(cols[14], 22 + 9);
        assert_eq!(*cols.last().unwrap(), 22 + 9 + 3);
        let e = prepare("objective", &json!({"n": 1, "m": 1, "p": 0}), Engine::Tape)
            .err()
            .unwrap();
        assert!(e.contains("positive"), "{e}");
    }
}
