//! The GradBench tool: the JSON-lines protocol on stdin/stdout ([`serve`]) and, per
//! eval, the conversion of its input into the eval module's own layout and of the
//! result back (`tool/<eval>.rs`).
//!
//! The eval sends one JSON object per line (`start`, `define`, `evaluate`, `analysis`);
//! the tool answers each with one line carrying the same `id`. An `evaluate` message
//! names a module (the eval), a function and an input; [`serve`] converts the input
//! once ([`Prepare`], untimed), then runs the function at least `min_runs` times and
//! until the summed run time reaches `min_seconds`, timing only [`Run::run`] (one
//! `"evaluate"` timing per run), and sends the output of the last run.
//!
//! The [`Engine`] is chosen once per session (`--engine tape|macro`): each eval's
//! `prepare` picks that engine's functions from the eval's module. Where the
//! compile-time engine cannot compute a function (second order, nested derivatives, or
//! an objective outside its subset), that function runs on the tape under `--engine
//! macro` too; [`Module::on_tape`] says which and why, and the `start` response's
//! `config` lists them, so every log names the engine of each function.

use std::io::{self, BufRead, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Instant;

use serde_json::{Map, Value, json};

mod ba;
mod det;
mod gmm;
mod hello;
mod ht;
pub mod input;
mod kmeans;
mod llsq;
mod lse;
mod lstm;
mod ode;
mod particle;
mod saddle;

/// How derivatives are computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// shade's run-time scalar layer (`shade_autodiff::scalar`): `Tape` / `Var` for
    /// reverse mode, `Dual` / `DualVec` for forward mode, nested by type.
    Tape,
    /// The compile-time engine: the derivatives `#[autodiff_reverse]` /
    /// `#[autodiff_forward]` generate from each eval's plain `f64` functions.
    Macro,
}

impl Engine {
    /// Parses the value of `--engine`.
    pub fn parse(name: &str) -> Result<Engine, String> {
        match name {
            "tape" => Ok(Engine::Tape),
            "macro" => Ok(Engine::Macro),
            other => Err(format!(
                "unknown engine `{other}`: the engines are `tape` and `macro`"
            )),
        }
    }

    /// The engine's name, as written after `--engine`.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Tape => "tape",
            Engine::Macro => "macro",
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

/// Converts the input of `function` into a [`Run`] for `engine` (untimed).
pub type Prepare =
    fn(function: &str, input: &Value, engine: Engine) -> Result<Box<dyn Run>, String>;

/// One eval the tool implements.
pub struct Module {
    /// GradBench's name of the eval.
    pub name: &'static str,
    /// Its functions.
    pub prepare: Prepare,
    /// Under `--engine macro`: which of its functions still run on the tape, and why
    /// (`None`: every function uses the compile-time engine).
    pub on_tape: Option<&'static str>,
}

/// Why `kmeans`' `dir` stays on the tape under `--engine macro`.
const KMEANS_ON_TAPE: &str = "`dir` (the Hessian's diagonal is a derivative of a derivative, \
     and the compile-time engine is first order: it does not differentiate its own generated \
     code); `cost` is the compile-time form's plain function";

/// Why `particle` and `saddle` stay on the tape under `--engine macro`.
const NESTED_ON_TAPE: &str = "all four functions (a gradient descent whose objective holds \
     another gradient: nested derivatives, which the compile-time engine does not take)";

/// The evals this tool implements, by GradBench name.
pub const MODULES: &[Module] = &[
    module("hello", hello::prepare, None),
    module("gmm", gmm::prepare, None),
    module("lse", lse::prepare, None),
    module("lstm", lstm::prepare, None),
    module("ba", ba::prepare, None),
    module("ht", ht::prepare, None),
    module("kmeans", kmeans::prepare, Some(KMEANS_ON_TAPE)),
    module("ode", ode::prepare, None),
    module("llsq", llsq::prepare, None),
    module("det", det::prepare, None),
    module("particle", particle::prepare, Some(NESTED_ON_TAPE)),
    module("saddle", saddle::prepare, Some(NESTED_ON_TAPE)),
];

const fn module(name: &'static str, prepare: Prepare, on_tape: Option<&'static str>) -> Module {
    Module {
        name,
        prepare,
        on_tape,
    }
}

/// The module `name`.
fn lookup(name: &str) -> Result<Prepare, String> {
    MODULES
        .iter()
        .find(|m| m.name == name)
        .map(|m| m.prepare)
        .ok_or_else(|| format!("shade does not implement module `{name}`"))
}

/// The `config` of the `start` response: the engine, and under `macro` the functions
/// that run on the tape (so that a log says which engine computed what).
fn config(engine: Engine) -> Value {
    let mut c = Map::new();
    c.insert("engine".into(), engine.name().into());
    if engine == Engine::Macro {
        let on_tape: Map<String, Value> = MODULES
            .iter()
            .filter_map(|m| Some((m.name.to_string(), Value::from(m.on_tape?))))
            .collect();
        c.insert("on_tape".into(), Value::Object(on_tape));
    }
    Value::Object(c)
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

/// A derivative written into a buffer of `x`'s length, with the engine's state (a
/// reused tape) captured.
pub(crate) type Derive<C> = Box<dyn FnMut(&[f64], &C, &mut [f64]) -> Result<(), String>>;

/// The shape most evals share: a primal `f(x; c) -> f64` and its gradient, written by
/// `derive` into a buffer of `x`'s length and shown as JSON by `show`.
pub(crate) struct GradientEval<C> {
    gradient: bool,
    x: Vec<f64>,
    c: C,
    primal: fn(&[f64], &C) -> f64,
    derive: Derive<C>,
    show: fn(&[f64], &C) -> Value,
    value: f64,
    g: Vec<f64>,
}

impl<C: 'static> GradientEval<C> {
    /// The primal (`gradient == false`) or the gradient of `primal` at `x`.
    pub(crate) fn boxed(
        gradient: bool,
        x: Vec<f64>,
        c: C,
        primal: fn(&[f64], &C) -> f64,
        derive: Derive<C>,
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
        })
    }
}

impl<C> Run for GradientEval<C> {
    fn run(&mut self) -> Result<(), String> {
        if self.gradient {
            (self.derive)(&self.x, &self.c, &mut self.g)
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

/// A tape-engine [`Derive`]: `f`'s gradient on a tape kept across runs.
pub(crate) fn on_tape<C: 'static>(
    f: fn(
        &mut shade_autodiff::scalar::Tape,
        &[f64],
        &C,
        &mut [f64],
    ) -> shade_autodiff::AdResult<()>,
) -> Derive<C> {
    let mut tape = shade_autodiff::scalar::Tape::new();
    Box::new(move |x, c, g| f(&mut tape, x, c, g).map_err(|e| e.to_string()))
}

/// A compile-time [`Derive`]: `f` adds the gradient into its shadow (as the generated
/// derivatives do), so the buffer is zeroed first.
pub(crate) fn generated<C: 'static>(f: fn(&[f64], &C, &mut [f64])) -> Derive<C> {
    Box::new(move |x, c, g| {
        g.fill(0.0);
        f(x, c, g);
        Ok(())
    })
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
        "start" => json!({"id": id, "tool": "shade", "config": config(engine)}),
        "define" => {
            let name = msg.get("module").and_then(Value::as_str).unwrap_or("");
            match lookup(name) {
                Ok(_) => json!({"id": id, "success": true}),
                Err(e) => json!({"id": id, "success": false, "error": e}),
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
    let prepare = match lookup(name) {
        Ok(p) => p,
        Err(e) => return fail(e),
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
        assert_eq!(Engine::parse("macro"), Ok(Engine::Macro));
        assert!(
            Engine::parse("x")
                .unwrap_err()
                .contains("`tape` and `macro`")
        );
    }

    #[test]
    fn every_eval_is_listed() {
        let names: Vec<&str> = MODULES.iter().map(|m| m.name).collect();
        for eval in [
            "hello", "gmm", "lse", "lstm", "ba", "ht", "kmeans", "ode", "llsq", "det", "particle",
            "saddle",
        ] {
            assert!(names.contains(&eval), "{eval}");
        }
    }

    #[test]
    fn every_engine_defines_every_eval_and_the_macro_engine_names_what_stays_on_the_tape() {
        for engine in [Engine::Tape, Engine::Macro] {
            for m in MODULES {
                let r = respond(
                    &format!("{{\"id\":1,\"kind\":\"define\",\"module\":\"{}\"}}", m.name),
                    engine,
                );
                assert_eq!(r["success"], json!(true), "{} {engine:?}", m.name);
            }
        }
        let start = |engine| respond("{\"id\":0,\"kind\":\"start\",\"eval\":\"ht\"}", engine);
        assert_eq!(start(Engine::Tape)["config"], json!({"engine": "tape"}));
        let config = &start(Engine::Macro)["config"];
        assert_eq!(config["engine"], json!("macro"));
        let on_tape = config["on_tape"].as_object().unwrap();
        let mut names: Vec<&str> = on_tape.keys().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, ["kmeans", "particle", "saddle"]);
        assert!(on_tape["kmeans"].as_str().unwrap().contains("`dir`"));
    }
}
