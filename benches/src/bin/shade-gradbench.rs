//! `shade-gradbench [--engine tape|macro]`: shade as a GradBench tool, speaking the JSON-lines
//! protocol on stdin/stdout (see `benches/gradbench/README.md` for how to run it with
//! GradBench's `gradbench run --eval ... --tool ...`).

use std::io::{self, BufWriter};
use std::process::ExitCode;

use shade_benches::gradbench::tool::{Engine, serve};

const USAGE: &str = "usage: shade-gradbench [--engine tape|macro]\n\n\
    Reads GradBench messages on stdin, one JSON object per line, and answers each on stdout.\n\
    --engine tape    shade's run-time scalar layer (the default; all twelve evals)\n\
    --engine macro   the compile-time engine (#[autodiff_reverse] / #[autodiff_forward]);\n\
    \x20                what it cannot compute (kmeans `dir`, ht, particle, saddle) runs on\n\
    \x20                the tape, as the `start` response's config says\n";

fn main() -> ExitCode {
    let mut engine = Engine::Tape;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = match arg.as_str() {
            "--engine" => args.next(),
            a if a.starts_with("--engine=") => Some(a["--engine=".len()..].to_string()),
            "-h" | "--help" => {
                print!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => {
                eprint!("error: unknown argument `{other}`\n\n{USAGE}");
                return ExitCode::from(2);
            }
        };
        match value.as_deref().map(Engine::parse) {
            Some(Ok(e)) => engine = e,
            Some(Err(e)) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
            None => {
                eprint!("error: `--engine` needs a value\n\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    let stdin = io::stdin().lock();
    let stdout = BufWriter::new(io::stdout().lock());
    match serve(stdin, stdout, engine) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
