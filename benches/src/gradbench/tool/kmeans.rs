//! The tool's `kmeans`: input `points` (n × d), `centroids` (k × d); functions `cost`
//! and `dir` (k × d). The tape engine only (see [`super::MODULES`]).

use serde_json::Value;
use shade_autodiff::scalar::{Dual, Tape, VarId};

use super::input::{field, finite, matrix, to_rows};
use super::{Engine, Run, pick};
use crate::gradbench::kmeans::{kmeans_cost_tape, newton_direction};

struct KmeansRun {
    dir: bool,
    centroids: Vec<f64>,
    points: Vec<f64>,
    d: usize,
    cost: f64,
    out: Vec<f64>,
    tape: Tape<Dual<f64>>,
    ids: Vec<VarId>,
}

impl Run for KmeansRun {
    fn run(&mut self) -> Result<(), String> {
        if self.dir {
            newton_direction(
                &self.centroids,
                &self.points,
                self.d,
                &mut self.tape,
                &mut self.ids,
                &mut self.out,
            )
        } else {
            self.cost = kmeans_cost_tape(&self.centroids, &self.points, self.d);
            Ok(())
        }
    }
    fn output(&self) -> Value {
        if self.dir {
            to_rows(&self.out, self.d)
        } else {
            finite(self.cost)
        }
    }
}

/// Prepares `cost` or `dir`.
pub(super) fn prepare(
    function: &str,
    input: &Value,
    engine: Engine,
) -> Result<Box<dyn Run>, String> {
    if engine != Engine::Tape {
        return Err("kmeans is implemented by the tape engine only".into());
    }
    let dir = pick("kmeans", function, ["cost", "dir"])?;
    let (_, d, points) = matrix(field(input, "points")?, "points")?;
    let (k, dc, centroids) = matrix(field(input, "centroids")?, "centroids")?;
    if d == 0 || dc != d || k == 0 {
        return Err(format!(
            "`points` and `centroids` must be non-empty with the same width, found {d} and {dc}"
        ));
    }
    Ok(Box::new(KmeansRun {
        dir,
        out: vec![0.0; centroids.len()],
        centroids,
        points,
        d,
        cost: 0.0,
        tape: Tape::new(),
        ids: Vec::new(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gradbench::testing::{assert_close, central_gradient, uniform};
    use serde_json::json;

    #[test]
    fn direction_is_the_gradient_over_the_hessian_diagonal() {
        let (n, k, d) = (40, 4, 3);
        let points = uniform(21, n * d);
        let centroids = points[(n - k) * d..].to_vec();
        let rows = |v: &[f64]| -> Vec<Vec<f64>> { v.chunks(d).map(<[f64]>::to_vec).collect() };
        let input = json!({"points": rows(&points), "centroids": rows(&centroids)});
        let mut r = prepare("dir", &input, Engine::Tape).unwrap();
        r.run().unwrap();
        r.run().unwrap();
        let dir: Vec<Vec<f64>> = serde_json::from_value(r.output()).unwrap();
        // Away from ties the cost is a sum of quadratics: central differences are exact
        // up to rounding for the gradient and the (constant) second derivative.
        let cost = |c: &[f64]| kmeans_cost_tape(c, &points, d);
        let h = 1e-4;
        let g = central_gradient(cost, &centroids, h);
        let mut c = centroids.clone();
        let f0 = cost(&centroids);
        let want: Vec<f64> = (0..k * d)
            .map(|i| {
                c[i] = centroids[i] + h;
                let up = cost(&c);
                c[i] = centroids[i] - h;
                let down = cost(&c);
                c[i] = centroids[i];
                g[i] / ((up - 2.0 * f0 + down) / (h * h))
            })
            .collect();
        assert_close("kmeans dir", &dir.concat(), &want, 1e-5);
        let e = prepare("dir", &input, Engine::Macro).err().unwrap();
        assert!(e.contains("tape engine only"), "{e}");
    }
}
