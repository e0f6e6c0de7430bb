//! A [GradBench](https://github.com/gradbench/gradbench) tool for shade: the JSON-lines
//! protocol on stdin/stdout and the twelve evals, each in its own module.
//!
//! The binary `shade-gradbench` (in `src/bin/`) calls [`serve`]. The eval sends one JSON
//! object per line (`start`, `define`, `evaluate`, `analysis`); the tool answers each
//! with one line carrying the same `id`. An `evaluate` message names a module (the
//! eval), a function and an input; [`serve`] converts the input into the module's own
//! layout once ([`Prepare`]), then runs the function at least `min_runs` times and
//! until the summed run time reaches `min_seconds`, timing only [`Run::run`] (one
//! `"evaluate"` timing per run), and sends the output of the last run.
//!
//! # One objective per eval, several engines
//!
//! Each eval's mathematics is one function generic over
//! [`Real`](shade_autodiff::scalar::Real) in `gradbench/<eval>.rs` (its primal is that
//! function at `f64`); the derivative functions of the eval are computed from it by an
//! [`Engine`]. Today there is one engine, [`Engine::Tape`]: shade's run-time scalar
//! layer (reverse mode on a reused `Tape`, forward mode with `Dual`/`DualVec`, and their
//! nestings). A compile-time engine is added as a new variant and one arm in each
//! module's `prepare`, reusing the same generic objective.

use std::io::{self, BufRead, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Instant;

use serde_json::{Map, Value, json};
use shade_autodiff::AdResult;
use shade_autodiff::scalar::Tape;

pub mod ba;
pub mod det;
pub mod gmm;
pub mod hello;
pub mod ht;
pub mod input;
pub mod kmeans;
pub mod llsq;
pub mod lse;
pub mod lstm;
pub mod ode;
pub mod optimise;
pub mod particle;
pub mod saddle;

/// How derivatives are computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// shade's run-time scalar layer (`shade_autodiff::scalar`): `Tape` / `Var` for
    /// reverse mode, `Dual` / `DualVec` for forward mode, nested by type.
    Tape,
}

impl Engine {
    /// Parses the value of `--engine`.
    pub fn parse(name: &str) -> Result<Engine, String> {
        match name {
            "tape" => Ok(Engine::Tape),
            "macro" => Err(
                "engine `macro` is not available yet: the compile-time AD crate \
                            has not landed; use `--engine tape`"
                    .into(),
            ),
            other => Err(format!(
                "unknown engine `{other}`: the engines are `tape` (and, later, `macro`)"
            )),
        }
    }

    /// The engine's name, as written after `--engine`.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Tape => "tape",
        }
    }
}

/// One evaluation, its input already converted into the module's own layout.
pub trait Run {
    /// Evaluates the function once: the timed part.
    fn run(&mut self) -> Result<(), String>;
    /// The output of the last run, in the eval's JSON shape.
    fn output(&self) -> Value;
}

/// Converts the input of `function` into a [`Run`] (untimed).
pub type Prepare =
    fn(function: &str, input: &Value, engine: Engine) -> Result<Box<dyn Run>, String>;

/// The modules this tool implements, by GradBench name.
pub const MODULES: &[(&str, Prepare)] = &[
    ("hello", hello::prepare),
    ("gmm", gmm::prepare),
    ("lse", lse::prepare),
    ("lstm", lstm::prepare),
    ("ba", ba::prepare),
    ("ht", ht::prepare),
    ("kmeans", kmeans::prepare),
    ("ode", ode::prepare),
    ("llsq", llsq::prepare),
    ("det", det::prepare),
    ("particle", particle::prepare),
    ("saddle", saddle::prepare),
];

fn module(name: &str) -> Option<Prepare> {
    MODULES.iter().find(|(n, _)| *n == name).map(|(_, p)| *p)
}

/// The error of a function that does not exist in a module.
pub(crate) fn unknown_function(module: &str, function: &str, known: &[&str]) -> String {
    format!(
        "module `{module}` has no function `{function}` (it has {})",
        known.join(", ")
    )
}

/// Which of a module's two functions is asked for: `false` for `names[0]` (the
/// primal), `true` for `names[1]` (the derivative).
pub(crate) fn pick(module: &str, function: &str, names: [&str; 2]) -> Result<bool, String> {
    match names.iter().position(|n| *n == function) {
        Some(i) => Ok(i == 1),
        None => Err(unknown_function(module, function, &names)),
    }
}

/// The shape most evals share: a primal `f(x; c) -> f64` and its gradient, written by
/// `derive` into a buffer of `x`'s length and shown as JSON by `show`.
pub(crate) struct GradientEval<C> {
    gradient: bool,
    x: Vec<f64>,
    c: C,
    primal: fn(&[f64], &C) -> f64,
    derive: fn(&mut Tape, &[f64], &C, &mut [f64]) -> AdResult<()>,
    show: fn(&[f64], &C) -> Value,
    value: f64,
    g: Vec<f64>,
    tape: Tape,
}

impl<C: 'static> GradientEval<C> {
    /// The primal (`gradient == false`) or the gradient of `primal` at `x`.
    pub(crate) fn boxed(
        gradient: bool,
        x: Vec<f64>,
        c: C,
        primal: fn(&[f64], &C) -> f64,
        derive: fn(&mut Tape, &[f64], &C, &mut [f64]) -> AdResult<()>,
        show: fn(&[f64], &C) -> Value,
    ) -> Box<dyn Run> {
        Box::new(GradientEval {
            gradient,
            g: vec![0.0; x.len()],
            x,
            c,
            primal,
            derive,
            show,
            value: 0.0,
            tape: Tape::new(),
        })
    }
}

impl<C> Run for GradientEval<C> {
    fn run(&mut self) -> Result<(), String> {
        if self.gradient {
            (self.derive)(&mut self.tape, &self.x, &self.c, &mut self.g).map_err(|e| e.to_string())
        } else {
            self.value = (self.primal)(&self.x, &self.c);
            Ok(())
        }
    }
    fn output(&self) -> Value {
        if self.gradient {
            (self.show)(&self.g, &self.c)
        } else {
            input::finite(self.value)
        }
    }
}

/// [`GradientEval`]'s `show` for a gradient written as a plain list.
pub(crate) fn show_list<C>(g: &[f64], _c: &C) -> Value {
    input::to_list(g)
}

/// Runs the protocol until the input ends: one response line per message line.
pub fn serve(input: impl BufRead, mut output: impl Write, engine: Engine) -> io::Result<()> {
    for line in input.lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let response = respond(&line, engine);
        writeln!(output, "{response}")?;
        output.flush()?;
    }
    Ok(())
}

/// The response to one message line.
pub fn respond(line: &str, engine: Engine) -> Value {
    let msg: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => {
            return json!({"id": Value::Null, "success": false, "error": format!("invalid JSON message: {e}")});
        }
    };
    let id = msg.get("id").cloned().unwrap_or(Value::Null);
    let kind = msg.get("kind").and_then(Value::as_str).unwrap_or("");
    match kind {
        "start" => json!({"id": id, "tool": "shade", "config": {"engine": engine.name()}}),
        "define" => {
            let name = msg.get("module").and_then(Value::as_str).unwrap_or("");
            if module(name).is_some() {
                json!({"id": id, "success": true})
            } else {
                json!({"id": id, "success": false, "error": format!("shade does not implement module `{name}`")})
            }
        }
        "evaluate" => evaluate(id, &msg, engine),
        "analysis" => {
            if msg.get("valid") == Some(&Value::Bool(false)) {
                let err = msg.get("error").and_then(Value::as_str).unwrap_or("");
                eprintln!(
                    "shade-gradbench: output of message {} judged invalid: {err}",
                    msg["of"]
                );
            }
            json!({"id": id})
        }
        _ => json!({"id": id}),
    }
}

fn evaluate(id: Value, msg: &Value, engine: Engine) -> Value {
    let fail = |error: String| json!({"id": id, "success": false, "error": error});
    let name = msg.get("module").and_then(Value::as_str).unwrap_or("");
    let Some(prepare) = module(name) else {
        return fail(format!("shade does not implement module `{name}`"));
    };
    let function = msg.get("function").and_then(Value::as_str).unwrap_or("");
    let input = msg.get("input").unwrap_or(&Value::Null);
    let (min_runs, min_seconds) = input::runs(input);
    // A panic in an eval (a bug) becomes an error response, so the session goes on.
    let result = catch_unwind(AssertUnwindSafe(|| -> Result<(Value, Vec<u64>), String> {
        let mut run = prepare(function, input, engine)?;
        let mut timings = Vec::new();
        let mut total = 0.0;
        while timings.len() < min_runs || total < min_seconds {
            let start = Instant::now();
            run.run()?;
            let elapsed = start.elapsed();
            timings.push(elapsed.as_nanos() as u64);
            total += elapsed.as_secs_f64();
        }
        Ok((run.output(), timings))
    }));
    match result {
        Ok(Ok((output, timings))) => {
            let timings: Vec<Value> = timings
                .into_iter()
                .map(|ns| {
                    let mut t = Map::new();
                    t.insert("name".into(), "evaluate".into());
                    t.insert("nanoseconds".into(), ns.into());
                    Value::Object(t)
                })
                .collect();
            json!({"id": id, "success": true, "output": output, "timings": timings})
        }
        Ok(Err(e)) => fail(e),
        Err(panic) => {
            let what = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            fail(format!("{name}/{function} panicked: {what}"))
        }
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! Central finite differences for the evals' derivative tests.

    /// `∂f/∂x` by central differences with step `h · max(1, |x_i|)`.
    pub(crate) fn central_gradient(f: impl Fn(&[f64]) -> f64, x: &[f64], h: f64) -> Vec<f64> {
        let mut xp = x.to_vec();
        (0..x.len())
            .map(|i| {
                let step = h * x[i].abs().max(1.0);
                xp[i] = x[i] + step;
                let up = f(&xp);
                xp[i] = x[i] - step;
                let down = f(&xp);
                xp[i] = x[i];
                (up - down) / (2.0 * step)
            })
            .collect()
    }

    /// The Jacobian (row-major, `m × n`) of `f: ℝⁿ → ℝᵐ` by central differences.
    pub(crate) fn central_jacobian(f: impl Fn(&[f64]) -> Vec<f64>, x: &[f64], h: f64) -> Vec<f64> {
        let m = f(x).len();
        let n = x.len();
        let mut jac = vec![0.0; m * n];
        let mut xp = x.to_vec();
        for j in 0..n {
            let step = h * x[j].abs().max(1.0);
            xp[j] = x[j] + step;
            let up = f(&xp);
            xp[j] = x[j] - step;
            let down = f(&xp);
            xp[j] = x[j];
            for i in 0..m {
                jac[i * n + j] = (up[i] - down[i]) / (2.0 * step);
            }
        }
        jac
    }

    /// Asserts `|a - b| <= tol · max(1, |a| + |b|)` entry by entry (GradBench's measure).
    #[track_caller]
    pub(crate) fn assert_close(what: &str, got: &[f64], want: &[f64], tol: f64) {
        assert_eq!(got.len(), want.len(), "{what}: lengths");
        for (i, (a, b)) in got.iter().zip(want).enumerate() {
            let scale = (a.abs() + b.abs()).max(1.0);
            assert!(
                (a - b).abs() <= tol * scale,
                "{what}[{i}]: got {a}, want {b} (tolerance {tol})"
            );
        }
    }

    /// A reproducible uniform stream in `[0, 1)` (splitmix64).
    pub(crate) fn uniform(seed: u64, n: usize) -> Vec<f64> {
        (0..n as u64)
            .map(|i| crate::peer_data::unit_f64(seed, i))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(lines: &str) -> Vec<Value> {
        let mut out = Vec::new();
        serve(lines.as_bytes(), &mut out, Engine::Tape).unwrap();
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn a_hello_session_answers_every_message_with_its_id() {
        let r = roundtrip(
            "{\"id\":0,\"kind\":\"start\",\"eval\":\"hello\"}\n\
             {\"id\":1,\"kind\":\"define\",\"module\":\"hello\"}\n\
             {\"id\":2,\"kind\":\"evaluate\",\"module\":\"hello\",\"function\":\"square\",\"input\":3.0}\n\
             {\"id\":3,\"kind\":\"analysis\",\"of\":2,\"valid\":true}\n\
             {\"id\":4,\"kind\":\"evaluate\",\"module\":\"hello\",\"function\":\"double\",\"input\":{\"x\":1}}\n\
             {\"id\":5,\"kind\":\"evaluate\",\"module\":\"hello\",\"function\":\"double\",\"input\":2.5}\n\
             {\"id\":6,\"kind\":\"define\",\"module\":\"nope\"}\n\
             {\"id\":7,\"kind\":\"end\"}\n",
        );
        assert_eq!(r.len(), 8);
        for (i, resp) in r.iter().enumerate() {
            assert_eq!(resp["id"], json!(i));
        }
        assert_eq!(r[0]["tool"], json!("shade"));
        assert_eq!(r[1]["success"], json!(true));
        assert_eq!(r[2]["output"], json!(9.0));
        assert_eq!(r[2]["timings"].as_array().unwrap().len(), 1);
        assert_eq!(r[2]["timings"][0]["name"], json!("evaluate"));
        assert_eq!(r[4]["success"], json!(false));
        assert!(
            r[4]["error"].as_str().unwrap().contains("number"),
            "{}",
            r[4]
        );
        assert_eq!(r[5]["output"], json!(5.0));
        assert_eq!(r[6]["success"], json!(false));
        assert_eq!(r[7], json!({"id": 7}));
    }

    #[test]
    fn min_runs_and_min_seconds_control_the_number_of_timings() {
        let msg = |runs: usize, secs: f64| {
            format!(
                "{{\"id\":1,\"kind\":\"evaluate\",\"module\":\"lse\",\"function\":\"primal\",\
                 \"input\":{{\"x\":[1.0,2.0],\"min_runs\":{runs},\"min_seconds\":{secs}}}}}"
            )
        };
        let r = respond(&msg(5, 0.0), Engine::Tape);
        assert_eq!(r["timings"].as_array().unwrap().len(), 5);
        let r = respond(&msg(1, 0.01), Engine::Tape);
        let ts = r["timings"].as_array().unwrap();
        let total: u64 = ts.iter().map(|t| t["nanoseconds"].as_u64().unwrap()).sum();
        assert!(total >= 10_000_000, "{} runs, {total} ns", ts.len());
    }

    #[test]
    fn unknown_functions_and_bad_json_are_errors_not_crashes() {
        let r = respond(
            "{\"id\":3,\"kind\":\"evaluate\",\"module\":\"gmm\",\"function\":\"hessian\",\"input\":{}}",
            Engine::Tape,
        );
        assert_eq!(r["success"], json!(false));
        assert!(r["error"].as_str().unwrap().contains("hessian"));
        let r = respond("{not json", Engine::Tape);
        assert_eq!(r["success"], json!(false));
    }

    #[test]
    fn engines_parse_by_name() {
        assert_eq!(Engine::parse("tape"), Ok(Engine::Tape));
        assert!(
            Engine::parse("macro")
                .unwrap_err()
                .contains("not available")
        );
        assert!(Engine::parse("x").is_err());
    }

    #[test]
    fn every_eval_is_listed() {
        let names: Vec<&str> = MODULES.iter().map(|(n, _)| *n).collect();
        for eval in [
            "hello", "gmm", "lse", "lstm", "ba", "ht", "kmeans", "ode", "llsq", "det", "particle",
            "saddle",
        ] {
            assert!(names.contains(&eval), "{eval}");
        }
    }
}
