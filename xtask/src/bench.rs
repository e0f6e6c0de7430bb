//! `cargo xtask bench`: run the criterion benches, then turn criterion's estimates into
//! the table in `docs/benchmarks.md`; with `--peers`, also run the peer scripts and
//! write the comparison page instead ([`peers`]).
//!
//! Bench ids follow `group/function/parameter`. Within a group, a function named
//! `baseline` (or whose name starts with `peer-` or `floor-`) is the reference that
//! the other functions of the group with the same parameter are divided by.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use crate::{cargo, root};

mod json;
mod page;
mod peers;
mod workloads;

/// One measured bench: its id, criterion's mean estimate and the spread of its samples
/// (per-iteration times of each sample), in nanoseconds.
pub(crate) struct Estimate {
    pub(crate) group: String,
    pub(crate) function: String,
    pub(crate) parameter: String,
    pub(crate) mean_ns: f64,
    pub(crate) throughput: Option<String>,
    /// Bytes per iteration, when the bench declares a byte throughput.
    pub(crate) bytes: Option<f64>,
    /// Elements per iteration, when the bench declares an element throughput.
    pub(crate) elements: Option<f64>,
    /// Minimum, median and maximum of the samples' per-iteration times.
    pub(crate) spread: Option<[f64; 3]>,
}

/// `cargo xtask bench [--peers [--quick]] [FILTER]`.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let (mut peers, mut quick, mut filter) = (false, false, None);
    for a in args {
        match a.as_str() {
            "--peers" => peers = true,
            "--quick" => quick = true,
            f if !f.starts_with('-') && filter.is_none() => filter = Some(f),
            other => return Err(format!("unknown option `{other}` for `bench`")),
        }
    }
    if peers {
        if filter.is_some() {
            return Err("`bench --peers` runs every workload; it takes no filter".into());
        }
        return peers::run(quick);
    }
    if quick {
        return Err("`--quick` goes with `--peers`".into());
    }
    let mut args = vec!["bench", "-p", "shade-benches"];
    if let Some(f) = filter {
        args.extend(["--", f]);
    }
    println!("==> xtask bench: cargo {}", args.join(" "));
    let status = cargo(&args)
        .status()
        .map_err(|e| format!("could not start cargo: {e}"))?;
    if !status.success() {
        return Err(format!("benches failed ({status})"));
    }
    let criterion = root().join("target").join("criterion");
    let mut estimates = Vec::new();
    collect(&criterion, &criterion, &mut estimates)?;
    estimates.sort_by(|a, b| {
        (&a.group, &a.parameter, &a.function).cmp(&(&b.group, &b.parameter, &b.function))
    });
    let table = render(&estimates);
    let out = root().join("docs").join("benchmarks.md");
    fs::write(&out, table).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    println!("wrote {} ({} benches)", out.display(), estimates.len());
    Ok(())
}

pub(crate) fn collect(base: &Path, dir: &Path, out: &mut Vec<Estimate>) -> Result<(), String> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if !path.is_dir() {
            continue;
        }
        let new = path.join("new");
        let estimates = new.join("estimates.json");
        let benchmark = new.join("benchmark.json");
        if estimates.is_file() && benchmark.is_file() {
            let est = fs::read_to_string(&estimates).map_err(|e| e.to_string())?;
            let meta = fs::read_to_string(&benchmark).map_err(|e| e.to_string())?;
            let Some(mean_ns) = number_after(&est, "\"mean\"", "\"point_estimate\":") else {
                continue;
            };
            let field = |key: &str| string_field(&meta, key).unwrap_or_default();
            let spread = fs::read_to_string(new.join("sample.json"))
                .ok()
                .and_then(|s| spread(&s));
            let (bytes, elements) = (throughput_bytes(&meta), throughput_elements(&meta));
            out.push(Estimate {
                group: field("group_id"),
                function: field("function_id"),
                parameter: field("value_str"),
                mean_ns,
                throughput: throughput(bytes, elements, mean_ns),
                bytes,
                elements,
                spread,
            });
        } else if path != base.join("report") {
            collect(base, &path, out)?;
        }
    }
    Ok(())
}

/// The number that follows `key` after the first occurrence of `section`.
fn number_after(json: &str, section: &str, key: &str) -> Option<f64> {
    let rest = &json[json.find(section)?..];
    let rest = &rest[rest.find(key)? + key.len()..];
    let end = rest.find([',', '}'])?;
    rest[..end].trim().parse().ok()
}

/// A string field `"key":"value"` (criterion writes `null` for absent ones).
fn string_field(json: &str, key: &str) -> Option<String> {
    let pat = format!("\"{key}\":");
    let rest = json[json.find(&pat)? + pat.len()..].trim_start();
    let rest = rest.strip_prefix('"')?;
    Some(rest[..rest.find('"')?].to_string())
}

/// Min, median and max per-iteration time of criterion's samples (`sample.json`).
fn spread(sample: &str) -> Option<[f64; 3]> {
    let iters = json::number_array(sample, "iters")?;
    let times = json::number_array(sample, "times")?;
    let mut per: Vec<f64> = iters
        .iter()
        .zip(&times)
        .filter(|(i, _)| **i > 0.0)
        .map(|(i, t)| t / i)
        .collect();
    if per.is_empty() {
        return None;
    }
    per.sort_by(f64::total_cmp);
    Some([per[0], per[per.len() / 2], per[per.len() - 1]])
}

fn throughput_bytes(meta: &str) -> Option<f64> {
    number_after(meta, "\"throughput\"", "\"Bytes\":")
        .or_else(|| number_after(meta, "\"throughput\"", "\"BytesDecimal\":"))
}

fn throughput_elements(meta: &str) -> Option<f64> {
    number_after(meta, "\"throughput\"", "\"Elements\":")
}

/// The rate of a bench that declares bytes (GB/s) or elements (Gelem/s) per iteration.
fn throughput(bytes: Option<f64>, elements: Option<f64>, mean_ns: f64) -> Option<String> {
    match (bytes, elements) {
        (Some(b), _) => Some(format!("{:.2} GB/s", b / mean_ns)),
        (None, e) => e.map(|e| format!("{:.3} Gelem/s", e / mean_ns)),
    }
}

fn is_reference(function: &str) -> bool {
    function == "baseline" || function.starts_with("peer-") || function.starts_with("floor-")
}

pub(crate) fn human(ns: f64) -> String {
    match ns {
        n if n < 1e3 => format!("{n:.1} ns"),
        n if n < 1e6 => format!("{:.2} µs", n / 1e3),
        n if n < 1e9 => format!("{:.2} ms", n / 1e6),
        n => format!("{:.3} s", n / 1e9),
    }
}

fn render(estimates: &[Estimate]) -> String {
    let mut s = String::from(
        "# Benchmarks\n\n\
         Generated by `cargo xtask bench` from criterion's estimates; do not edit by hand.\n\
         The ratio divides each entry by its group's reference (`baseline`, `peer-*` or\n\
         `floor-*`) at the same parameter, measured in the same run.\n\n",
    );
    s.push_str(&ratio_table(estimates));
    s
}

/// The criterion table: every estimate with its ratio to its group's reference.
pub(crate) fn ratio_table(estimates: &[Estimate]) -> String {
    let mut s = String::from(
        "| group | function | parameter | mean | throughput | ratio to reference |\n\
         |---|---|---|---|---|---|\n",
    );
    for e in estimates {
        let reference = estimates.iter().find(|r| {
            r.group == e.group && r.parameter == e.parameter && is_reference(&r.function)
        });
        let ratio = match reference {
            Some(r) if !std::ptr::eq(r, e) => {
                format!("{:.2} ({})", e.mean_ns / r.mean_ns, r.function)
            }
            Some(_) => "reference".to_string(),
            None => String::new(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            e.group,
            e.function,
            e.parameter,
            human(e.mean_ns),
            e.throughput.as_deref().unwrap_or(""),
            ratio
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_criterion_fields() {
        let est = r#"{"mean":{"confidence_interval":{"lower_bound":1.0},"point_estimate":1500.5,"standard_error":2.0},"median":{"point_estimate":9.0}}"#;
        assert_eq!(
            number_after(est, "\"mean\"", "\"point_estimate\":"),
            Some(1500.5)
        );
        let meta = r#"{"group_id":"spmm","function_id":"shade","value_str":"100k","throughput":{"Bytes":3000}}"#;
        assert_eq!(string_field(meta, "function_id").as_deref(), Some("shade"));
        assert_eq!(
            throughput(throughput_bytes(meta), throughput_elements(meta), 1000.0).as_deref(),
            Some("3.00 GB/s")
        );
        let meta = r#"{"group_id":"floors","throughput":{"Elements":5000}}"#;
        assert_eq!(throughput_elements(meta), Some(5000.0));
        assert_eq!(
            throughput(throughput_bytes(meta), throughput_elements(meta), 1000.0).as_deref(),
            Some("5.000 Gelem/s")
        );
        let null = r#"{"group_id":"g","function_id":null}"#;
        assert_eq!(string_field(null, "function_id"), None);
    }

    #[test]
    fn ratios_divide_by_the_reference() {
        let e = |function: &str, mean_ns| Estimate {
            group: "g".into(),
            function: function.into(),
            parameter: "10".into(),
            mean_ns,
            throughput: None,
            bytes: None,
            elements: None,
            spread: None,
        };
        let table = render(&[e("baseline", 100.0), e("shade", 103.0)]);
        assert!(
            table.contains("| g | shade | 10 | 103.0 ns |  | 1.03 (baseline) |"),
            "{table}"
        );
    }
}
