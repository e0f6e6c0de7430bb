//! Proactive checks: problems found before training or differentiating, each a coded
//! [`Diagnostic`], errors separated from warnings.
//!
//! ```
//! use ndarray::Array2;
//! use shade_graph::Graph;
//! use shade_diagnostics::check_graph_features;
//!
//! let g = Graph::from_edges(3, &[(0, 1), (1, 2)])?;
//! let x = Array2::<f32>::zeros((2, 4)); // one row short
//! let f = check_graph_features(&g, &x, &[0, 1, 1], 2, &[true, false, false]);
//! assert_eq!(f.errors.len(), 1);
//! assert_eq!(f.errors[0].code, "SHADE-E0502");
//! # Ok::<(), shade_graph::GraphError>(())
//! ```

use crate::render::{Diagnostic, render_all};
use ndarray::{ArrayBase, Data, Dimension, Ix2};
use num_traits::Float;
use shade_graph::{GcnNorm, Graph};
use std::panic::Location;

/// What the checks found: errors (fix before running) and warnings (probably not
/// meant).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Findings {
    /// Problems that make the result wrong or the run fail.
    pub errors: Vec<Diagnostic>,
    /// Problems that are legal but probably unintended.
    pub warnings: Vec<Diagnostic>,
}

impl Findings {
    /// No findings.
    pub fn new() -> Self {
        Self::default()
    }

    /// Files a diagnostic under errors or warnings by its severity.
    pub fn push(&mut self, d: Diagnostic) {
        if d.is_error() {
            self.errors.push(d);
        } else {
            self.warnings.push(d);
        }
    }

    /// Adds every finding of `other`.
    pub fn extend(&mut self, other: Findings) {
        self.errors.extend(other.errors);
        self.warnings.extend(other.warnings);
    }

    /// Whether there is no error (warnings allowed).
    pub fn is_ok(&self) -> bool {
        self.errors.is_empty()
    }

    /// Whether there is neither an error nor a warning.
    pub fn is_clean(&self) -> bool {
        self.errors.is_empty() && self.warnings.is_empty()
    }

    /// Every code found, errors first.
    pub fn codes(&self) -> Vec<&'static str> {
        self.errors
            .iter()
            .chain(&self.warnings)
            .map(|d| d.code)
            .collect()
    }

    /// Errors then warnings, rendered, with a summary line.
    pub fn render(&self) -> String {
        render_all(self.errors.iter().chain(&self.warnings))
    }

    /// `Ok(warnings)` without errors; otherwise the first error, with a note counting
    /// the others.
    pub fn into_result(self) -> Result<Vec<Diagnostic>, Diagnostic> {
        let mut errors = self.errors.into_iter();
        match errors.next() {
            None => Ok(self.warnings),
            Some(first) => {
                let more = errors.len();
                Err(if more > 0 {
                    first.with_note(format!(
                        "{more} more error{} found by the same check",
                        if more == 1 { "" } else { "s" }
                    ))
                } else {
                    first
                })
            }
        }
    }
}

impl std::fmt::Display for Findings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render())
    }
}

fn at(d: Diagnostic, loc: &'static Location<'static>) -> Diagnostic {
    d.at(loc)
}

/// Checks a node-classification setup: `features` has one row per node, `labels` and
/// `train_mask` one entry per node, every label is below `num_classes`, the training
/// mask selects at least one node, the features are finite; warns when a class has no
/// training node.
///
/// Codes: `SHADE-E0502` (feature rows), `SHADE-E0504` (per-node lengths), `SHADE-E0503`
/// (labels), `SHADE-E0505` (empty mask), `SHADE-E0506` (non-finite), `SHADE-W0503`
/// (class without training nodes).
#[track_caller]
pub fn check_graph_features<S, A>(
    graph: &Graph,
    features: &ArrayBase<S, Ix2>,
    labels: &[usize],
    num_classes: usize,
    train_mask: &[bool],
) -> Findings
where
    S: Data<Elem = A>,
    A: Float + std::fmt::Debug,
{
    let loc = Location::caller();
    let n = graph.num_nodes();
    let mut f = Findings::new();
    let (rows, cols) = features.dim();
    if rows != n {
        f.push(at(
            Diagnostic::error(
                "SHADE-E0502",
                format!("the features have {rows} rows, but the graph has {n} nodes"),
            )
            .with_note(format!("features shape: [{rows}, {cols}]"))
            .with_help("give the feature matrix one row per node, in node order"),
            loc,
        ));
    }
    for (what, len) in [("labels", labels.len()), ("train_mask", train_mask.len())] {
        if len != n {
            f.push(at(
                Diagnostic::error(
                    "SHADE-E0504",
                    format!("`{what}` has {len} entries, but the graph has {n} nodes"),
                )
                .with_help(format!("give `{what}` one entry per node, in node order")),
                loc,
            ));
        }
    }
    let bad: Vec<usize> = (0..labels.len())
        .filter(|&i| labels[i] >= num_classes)
        .collect();
    if let Some(&i) = bad.first() {
        let mut d = Diagnostic::error(
            "SHADE-E0503",
            format!(
                "label {} of node {i} is out of range for {num_classes} classes",
                labels[i]
            ),
        );
        if bad.len() > 1 {
            d = d.with_note(format!("{} labels are out of range in all", bad.len()));
        }
        let max = labels.iter().copied().max().unwrap_or(0);
        f.push(at(
            d.with_help(format!(
                "labels count from 0 to num_classes - 1; pass num_classes = {} or fix the labels",
                max + 1
            )),
            loc,
        ));
    }
    if !train_mask.iter().any(|&m| m) {
        f.push(at(
            Diagnostic::error("SHADE-E0505", "the training mask selects no node")
                .with_note(format!(
                    "train mask: {} entries, none true",
                    train_mask.len()
                ))
                .with_help("select training nodes, e.g. with `shade_graph::split_per_class`"),
            loc,
        ));
    }
    f.extend(finite_findings("features", features, loc));
    if f.is_ok() && num_classes > 0 {
        let mut seen = vec![false; num_classes];
        for (&l, _) in labels.iter().zip(train_mask).filter(|(_, m)| **m) {
            seen[l] = true;
        }
        let missing: Vec<usize> = (0..num_classes).filter(|&c| !seen[c]).collect();
        if !missing.is_empty() {
            f.push(at(
                Diagnostic::warning(
                    "SHADE-W0503",
                    format!(
                        "{} of {num_classes} classes have no training node: {}",
                        missing.len(),
                        list(&missing)
                    ),
                )
                .with_help(
                    "draw the training nodes per class, e.g. with `shade_graph::split_per_class`",
                ),
                loc,
            ));
        }
    }
    f
}

/// A short list: the first eight items, then `...`.
fn list(xs: &[usize]) -> String {
    let mut s: Vec<String> = xs.iter().take(8).map(|x| x.to_string()).collect();
    if xs.len() > 8 {
        s.push("...".into());
    }
    format!("[{}]", s.join(", "))
}

fn finite_findings<S, A, D>(
    name: &str,
    a: &ArrayBase<S, D>,
    loc: &'static Location<'static>,
) -> Findings
where
    S: Data<Elem = A>,
    A: Float + std::fmt::Debug,
    D: Dimension,
{
    let mut f = Findings::new();
    let mut count = 0;
    let mut first = None;
    for (k, v) in a.iter().enumerate() {
        if !v.is_finite() {
            count += 1;
            if first.is_none() {
                first = Some((k, *v));
            }
        }
    }
    if let Some((k, v)) = first {
        let idx = format!("{:?}", unravel(k, a.shape()));
        let mut d = Diagnostic::error(
            "SHADE-E0506",
            format!("`{name}` holds the non-finite value {v:?} at {idx}"),
        );
        if count > 1 {
            d = d.with_note(format!("{count} non-finite values in all"));
        }
        f.push(at(
            d.with_help(
                "replace or drop NaN/inf values before training (impute, or mask those nodes)",
            ),
            loc,
        ));
    }
    f
}

/// Row-major multi-index of flat position `i`.
fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for (k, &d) in shape.iter().enumerate().rev() {
        if d > 0 {
            idx[k] = i % d;
            i /= d;
        }
    }
    idx
}

/// Checks that an input array holds only finite values (`SHADE-E0506`).
#[track_caller]
pub fn check_finite<S, A, D>(name: &str, a: &ArrayBase<S, D>) -> Findings
where
    S: Data<Elem = A>,
    A: Float + std::fmt::Debug,
    D: Dimension,
{
    finite_findings(name, a, Location::caller())
}

/// Warns (`SHADE-W0501`) when GCN normalisation with `opts` would leave nodes without
/// any incoming edge (in-degree 0, no self-loop): their rows of `D^-1/2 A D^-1/2` are
/// zero, so their output ignores their own features.
#[track_caller]
pub fn check_gcn_normalisation(graph: &Graph, opts: GcnNorm) -> Findings {
    let loc = Location::caller();
    let mut f = Findings::new();
    if opts.add_self_loops {
        return f;
    }
    let deg = graph.in_degree();
    let isolated: Vec<usize> = (0..graph.num_nodes()).filter(|&v| deg[v] == 0).collect();
    if !isolated.is_empty() {
        f.push(at(
            Diagnostic::warning(
                "SHADE-W0501",
                format!(
                    "{} of {} nodes have no incoming edge and GCN normalisation adds no self-loops",
                    isolated.len(),
                    graph.num_nodes()
                ),
            )
            .with_note(format!("nodes without incoming edges: {}", list(&isolated)))
            .with_note("their rows of D^-1/2 A D^-1/2 are zero: their outputs ignore their own features")
            .with_help("keep `add_self_loops: true` (the default), or add self-loops with `graph.add_remaining_self_loops(1.0)`"),
            loc,
        ));
    }
    f
}

/// Warns (`SHADE-W0502`) when the shadow of a `Duplicated` argument is not zero before
/// a reverse-mode call: reverse mode adds (`+=`) the new gradient to what is there.
#[track_caller]
pub fn check_shadow_zeroed<S, A, D>(name: &str, shadow: &ArrayBase<S, D>) -> Findings
where
    S: Data<Elem = A>,
    A: Float + std::fmt::Debug,
    D: Dimension,
{
    let loc = Location::caller();
    let mut f = Findings::new();
    let nonzero = shadow.iter().filter(|v| !v.is_zero()).count();
    if nonzero > 0 {
        f.push(at(
            Diagnostic::warning(
                "SHADE-W0502",
                format!(
                    "the shadow `{name}` holds {nonzero} nonzero values before reverse mode accumulates into it"
                ),
            )
            .with_note("reverse mode adds the new gradient to the shadow's contents")
            .with_help(format!("zero it first (`{name}.fill(0.0)`), unless you mean to accumulate")),
            loc,
        ));
    }
    f
}
