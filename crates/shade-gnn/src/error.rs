//! The GNN crate's errors, each with a stable code.
//!
//! Codes `SHADE-E0400`..`SHADE-E0499` belong to this crate. A code, once published,
//! keeps its meaning; new variants take new codes. Errors of the AD core and of the
//! graph crate pass through unchanged (their own codes) inside [`GnnError::Ad`] and
//! [`GnnError::Graph`].

use shade_autodiff::AdError;
use shade_graph::GraphError;

/// What went wrong while building, running, training, saving or loading a model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GnnError {
    /// An error of the AD core (a shape mismatch inside a layer, an index out of range, ...).
    #[error(transparent)]
    Ad(#[from] AdError),
    /// An error of the graph crate.
    #[error(transparent)]
    Graph(#[from] GraphError),
    /// A parameter (or state entry) the model needs is missing from the store.
    #[error("parameter `{name}` is missing from the store")]
    MissingParam {
        /// Its full name, e.g. `conv1.lin.weight`.
        name: String,
    },
    /// A stored parameter has another shape than the model needs.
    #[error("parameter `{name}` has shape {found:?}, but the model needs {expected:?}")]
    ParamShape {
        /// Its full name.
        name: String,
        /// The shape the model needs.
        expected: Vec<usize>,
        /// The stored shape.
        found: Vec<usize>,
    },
    /// The store holds a parameter the model does not know.
    #[error("parameter `{name}` is not a parameter of this model")]
    UnexpectedParam {
        /// Its full name.
        name: String,
    },
    /// A setting (layer size, learning rate, ...) is out of its valid range.
    #[error("invalid setting `{name}` = {value}: expected {expected}")]
    InvalidSetting {
        /// The setting.
        name: String,
        /// The value given.
        value: String,
        /// What is allowed.
        expected: String,
    },
    /// The data do not fit the model (feature width, label count, ...).
    #[error("{what}: expected {expected}, found {found}")]
    DataMismatch {
        /// What is compared.
        what: String,
        /// What the model needs.
        expected: String,
        /// What the data hold.
        found: String,
    },
    /// The loss or a gradient is NaN or infinite.
    #[error("the {what} is not finite ({value})")]
    NonFinite {
        /// `loss` or `gradient of <name>`.
        what: String,
        /// The offending value.
        value: f64,
    },
    /// Reading or writing a file failed.
    #[error("cannot {action} `{path}`: {message}")]
    Io {
        /// `read` or `write`.
        action: &'static str,
        /// The file.
        path: String,
        /// The operating system's message.
        message: String,
    },
    /// A safetensors file is malformed (the reference implementation's rules) or holds
    /// a tensor without a real-number reading (complex, sub-byte formats).
    #[error("malformed safetensors data: {what}")]
    Safetensors {
        /// What is wrong.
        what: String,
    },
    /// A graph layer was called without a graph, or (in a
    /// [`Chain`](crate::layers::Chain)) after a node-dropping pooling without a
    /// [`GraphArena`](crate::GraphArena) to hold the pooled graph.
    #[error("the layer reads the graph, but the call has no graph{}", match after_pooling {
        Some(p) => format!(" for it: layer `{p}` before it dropped nodes, and the pooled graph has nowhere to live"),
        None => String::new(),
    })]
    NoGraph {
        /// The layer's type, e.g. `GCNConv`.
        layer: &'static str,
        /// The node-dropping pooling before it, whose pooled graph the layer would need.
        after_pooling: Option<String>,
    },
    /// An input of a layer does not fit the layer's parameters or options, e.g. a
    /// feature width other than the weight's.
    #[error("{what} has {found} but {} expects {expected}", Expecter(param.as_deref()))]
    InputShape {
        /// What was given, e.g. `input` or `edge feature array`.
        what: String,
        /// What it has, e.g. `1433 features per node` or `shape [12, 3]`.
        found: String,
        /// The parameter whose shape it must fit (its full name, e.g.
        /// `conv1.lin.weight`), or `None` when an option of the layer sets the shape.
        param: Option<String>,
        /// What the parameter or the layer expects, e.g. `16` or `shape [12, 4]`.
        expected: String,
    },
    /// A rank of a data-parallel job failed (its own error, or it did not report
    /// within the timeout): every rank stops with this error naming it.
    #[error("rank {rank} of {world} failed at step {step}: {cause}")]
    RankFailed {
        /// The failing rank (the lowest one when several fail in the same step).
        rank: usize,
        /// Ranks in the job.
        world: usize,
        /// The training step (0-based, counted over the whole run).
        step: u64,
        /// What happened there: that rank's error with its code, or "did not report".
        cause: String,
    },
    /// Two children of a container have the same name, so they would share their
    /// parameters (the second's would shadow the first's in the store).
    /// (Raised by the container, whose path the error then carries.)
    #[error("two {what} are named `{name}`")]
    DuplicateName {
        /// `layers` or `parameters`.
        what: &'static str,
        /// The repeated name.
        name: String,
    },
    /// The parameters (or the optimiser's buffers) of a [`TrainState`] no longer have
    /// the names of the model it was built for, e.g. after `ts.params` was replaced
    /// by a checkpoint of another model.
    ///
    /// [`TrainState`]: crate::train::TrainState
    #[error(
        "{what} do not match the model's parameters: {}",
        Listing(missing, unexpected)
    )]
    StoreMismatch {
        /// What does not match, e.g. `the parameters`.
        what: String,
        /// Names the model has and the store lacks.
        missing: Vec<String>,
        /// Names the store has and the model lacks.
        unexpected: Vec<String>,
    },
    /// An input array (node or edge features) holds NaN or an infinity.
    #[error("the {what} hold {value} at {index:?} (the first non-finite entry)")]
    NonFiniteInput {
        /// The array, e.g. `node features`.
        what: String,
        /// The entry's index, e.g. `[1, 2]`.
        index: Vec<usize>,
        /// The value.
        value: f64,
    },
    /// A feature array has one column per node instead of one row: `[F, N]`.
    #[error("the {what} look transposed: got {found:?}, expected [{nodes}, F] (one row per node)")]
    Transposed {
        /// The array, e.g. `node features`.
        what: String,
        /// Its shape.
        found: Vec<usize>,
        /// The number of nodes.
        nodes: usize,
    },
    /// A node-level graph layer follows a graph-level readout, whose output has one
    /// row per graph.
    #[error(
        "the layer reads node features, but layer `{readout}` before it is a graph-level readout: its output has one row per graph"
    )]
    AfterReadout {
        /// The readout's path.
        readout: String,
    },
    /// An error raised inside a layer of a model: the layer's path in the model and
    /// its type, and the error (its code is the error's own).
    #[error("{}: {source}", if path.is_empty() { layer } else { path.as_str() })]
    InLayer {
        /// The layer's path in the model, e.g. `conv1` or `conv1.nn.0`; empty for a
        /// layer called on its own (the message then names its type).
        path: String,
        /// The layer's type, e.g. `GCNConv`.
        layer: &'static str,
        /// What went wrong.
        source: Box<GnnError>,
    },
}

/// Something a model runs with that is probably not meant: the computation goes on,
/// and the warning is kept where the caller reads it ([`GraphCtx::warnings`]) to show
/// it (shade-diagnostics renders it as `warning[SHADE-W0401]: ...`), as the project's
/// proactive checks report their warnings.
///
/// [`GraphCtx::warnings`]: crate::GraphCtx::warnings
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum GnnWarning {
    /// A GCN normalisation without self-loops over a graph with nodes that have no
    /// incoming edge: their rows of `D^-1/2 A D^-1/2` are zero, so their outputs
    /// ignore their own features (and pass them no gradient).
    #[error(
        "{isolated} of {num_nodes} nodes have no incoming edge and a GCN normalisation without self-loops gives them zero rows"
    )]
    IsolatedWithoutSelfLoops {
        /// Nodes without an incoming edge.
        isolated: usize,
        /// Nodes of the graph.
        num_nodes: usize,
        /// The first few of them.
        first: Vec<usize>,
    },
}

impl GnnWarning {
    /// Every code of this crate's warnings.
    pub const CODES: &'static [&'static str] = &["SHADE-W0401"];

    /// The stable code.
    pub fn code(&self) -> &'static str {
        match self {
            GnnWarning::IsolatedWithoutSelfLoops { .. } => "SHADE-W0401",
        }
    }

    /// Further facts, one line each.
    pub fn notes(&self) -> Vec<String> {
        match self {
            GnnWarning::IsolatedWithoutSelfLoops {
                isolated, first, ..
            } => {
                let list: Vec<String> = first.iter().map(usize::to_string).collect();
                let more = if *isolated > first.len() { ", ..." } else { "" };
                vec![
                    format!("nodes without incoming edges: {}{more}", list.join(", ")),
                    "their outputs are the bias alone, whatever their features".into(),
                ]
            }
        }
    }

    /// What to do.
    pub fn help(&self) -> String {
        match self {
            GnnWarning::IsolatedWithoutSelfLoops { .. } => {
                "keep the layer's self-loops (the default), or add them to the graph with \
                 `graph.add_remaining_self_loops(1.0)`"
                    .into()
            }
        }
    }
}

/// The names missing from and added to a store, for [`GnnError::StoreMismatch`].
struct Listing<'a>(&'a [String], &'a [String]);

impl std::fmt::Display for Listing<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = |v: &[String]| {
            let mut s = v
                .iter()
                .take(4)
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>();
            if v.len() > 4 {
                s.push(format!("and {} more", v.len() - 4));
            }
            s.join(", ")
        };
        let mut parts = Vec::new();
        if !self.0.is_empty() {
            parts.push(format!("missing {}", names(self.0)));
        }
        if !self.1.is_empty() {
            parts.push(format!("not in the model {}", names(self.1)));
        }
        if parts.is_empty() {
            parts.push("the same names in another order".into());
        }
        f.write_str(&parts.join("; "))
    }
}

/// `` `name` `` for a parameter, `the layer` otherwise (the subject of "... expects").
struct Expecter<'a>(Option<&'a str>);

impl std::fmt::Display for Expecter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(p) => write!(f, "`{p}`"),
            None => f.write_str("the layer"),
        }
    }
}

/// Result of the GNN crate.
pub type GnnResult<T> = Result<T, GnnError>;

impl GnnError {
    /// Every code this crate's own variants return, in order (wrapped core and graph
    /// errors keep their codes), so that catalogues can be checked for completeness.
    pub const CODES: &'static [&'static str] = &[
        "SHADE-E0401",
        "SHADE-E0402",
        "SHADE-E0403",
        "SHADE-E0404",
        "SHADE-E0405",
        "SHADE-E0406",
        "SHADE-E0407",
        "SHADE-E0408",
        "SHADE-E0409",
        "SHADE-E0410",
        "SHADE-E0411",
        "SHADE-E0412",
        "SHADE-E0413",
        "SHADE-E0414",
        "SHADE-E0415",
        "SHADE-E0416",
    ];

    /// The stable code, e.g. `SHADE-E0401`; the wrapped error's own code for
    /// [`GnnError::Ad`], [`GnnError::Graph`] and [`GnnError::InLayer`].
    pub fn code(&self) -> &'static str {
        match self {
            GnnError::InLayer { source, .. } => source.code(),
            GnnError::Ad(e) => e.code(),
            GnnError::Graph(e) => e.code(),
            GnnError::MissingParam { .. } => "SHADE-E0401",
            GnnError::ParamShape { .. } => "SHADE-E0402",
            GnnError::UnexpectedParam { .. } => "SHADE-E0403",
            GnnError::InvalidSetting { .. } => "SHADE-E0404",
            GnnError::DataMismatch { .. } => "SHADE-E0405",
            GnnError::NonFinite { .. } => "SHADE-E0406",
            GnnError::Io { .. } => "SHADE-E0407",
            GnnError::Safetensors { .. } => "SHADE-E0408",
            GnnError::NoGraph { .. } => "SHADE-E0409",
            GnnError::InputShape { .. } => "SHADE-E0410",
            GnnError::DuplicateName { .. } => "SHADE-E0411",
            GnnError::StoreMismatch { .. } => "SHADE-E0412",
            GnnError::NonFiniteInput { .. } => "SHADE-E0413",
            GnnError::Transposed { .. } => "SHADE-E0414",
            GnnError::AfterReadout { .. } => "SHADE-E0415",
            GnnError::RankFailed { .. } => "SHADE-E0416",
        }
    }

    /// A one-line hint at the fix.
    pub fn help(&self) -> String {
        match self {
            GnnError::InLayer { source, .. } => source.help(),
            GnnError::Ad(e) => e.help(),
            GnnError::Graph(e) => e.help(),
            GnnError::MissingParam { .. } | GnnError::UnexpectedParam { .. } => {
                "build the store with the model's `init`, or load a file saved from the same architecture".into()
            }
            GnnError::ParamShape { .. } => {
                "the layer sizes of the model and of the stored parameters differ; check in/out dimensions".into()
            }
            GnnError::InvalidSetting { .. } => "change the setting to a value in the stated range".into(),
            GnnError::DataMismatch { .. } => {
                "make the model's input size match the data (e.g. the number of features or classes)".into()
            }
            GnnError::NonFinite { .. } => {
                "find the first operation that produced it with `ts.set_anomaly(true)` before the step \
                 (or `shade_diagnostics::detect_anomaly`); then lower the learning rate or clip the \
                 gradient norm (`Optimiser::clip_grad_norm`)"
                    .into()
            }
            GnnError::Io { .. } => "check that the path exists and is readable/writable".into(),
            GnnError::Safetensors { .. } => {
                "load a complete safetensors file of real-valued tensors (e.g. one written by `safetensors.torch.save_file`)".into()
            }
            GnnError::NoGraph {
                after_pooling: Some(_),
                ..
            } => "give the inputs a GraphArena (`Inputs::with_arena`), or run the model \
                  through `apply`, `TrainState::predict` or `single_train_step`, which make one"
                .into(),
            GnnError::NoGraph { .. } => {
                "give the call a graph (`Inputs::new(&ctx, &x)`); a layer that calls a graph \
                 sublayer must not hide the graph from it (`Env::without_graph`)"
                    .into()
            }
            GnnError::InputShape { .. } => {
                "make the data fit the layer (or build the layer for the data): the widths \
                 of the inputs and of the layer's parameters must agree"
                    .into()
            }
            GnnError::RankFailed { .. } => {
                "fix what that rank reports (its data shard, its settings), or see its log if it was killed or hung; then restart the job from the last checkpoint".into()
            }
            GnnError::DuplicateName { .. } => {
                "give every layer of a container its own name (`Chain::push` names layers by position)".into()
            }
            GnnError::StoreMismatch { .. } => {
                "load a checkpoint saved from this model (`TrainState::load_params` checks and reorders it), \
                 or start a new `TrainState::from_params` for another model's parameters"
                    .into()
            }
            GnnError::NonFiniteInput { .. } => {
                "clean the data before training: replace missing values (e.g. by the column mean) \
                 or drop the affected nodes; `shade_diagnostics::check_finite` lists every entry"
                    .into()
            }
            GnnError::Transposed { .. } => {
                "transpose the features to one row per node: `x.t().as_standard_layout().into_owned()`".into()
            }
            GnnError::AfterReadout { .. } => {
                "put node-level layers before the readout (global pooling), and only graph-level \
                 layers (Dense, MLPs) after it"
                    .into()
            }
        }
    }

    /// This error as raised inside the layer at `path` (e.g. `conv1`, empty for a
    /// layer called on its own) of type `layer`: wrapped in [`GnnError::InLayer`],
    /// unless a layer further in already named itself.
    pub fn in_layer(self, path: String, layer: &'static str) -> GnnError {
        match self {
            GnnError::InLayer { .. } => self,
            e => GnnError::InLayer {
                path,
                layer,
                source: Box::new(e),
            },
        }
    }

    /// The error itself, without the layer it was raised in ([`GnnError::InLayer`]'s
    /// source; any other error as it is).
    pub fn innermost(&self) -> &GnnError {
        match self {
            GnnError::InLayer { source, .. } => source.innermost(),
            e => e,
        }
    }

    /// [`GnnError::InvalidSetting`] for `name` = `value`, which must be `expected`.
    pub(crate) fn setting(name: &str, value: impl std::fmt::Display, expected: &str) -> Self {
        GnnError::InvalidSetting {
            name: name.into(),
            value: value.to_string(),
            expected: expected.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_lists_every_own_code() {
        let s = String::new;
        let all = [
            GnnError::MissingParam { name: s() },
            GnnError::ParamShape {
                name: s(),
                expected: vec![1],
                found: vec![2],
            },
            GnnError::UnexpectedParam { name: s() },
            GnnError::InvalidSetting {
                name: s(),
                value: s(),
                expected: s(),
            },
            GnnError::DataMismatch {
                what: s(),
                expected: s(),
                found: s(),
            },
            GnnError::NonFinite {
                what: s(),
                value: f64::NAN,
            },
            GnnError::Io {
                action: "read",
                path: s(),
                message: s(),
            },
            GnnError::Safetensors { what: s() },
            GnnError::NoGraph {
                layer: "GCNConv",
                after_pooling: None,
            },
            GnnError::InputShape {
                what: s(),
                found: s(),
                param: None,
                expected: s(),
            },
            GnnError::DuplicateName {
                what: "layers",
                name: s(),
            },
            GnnError::StoreMismatch {
                what: s(),
                missing: vec![],
                unexpected: vec![],
            },
            GnnError::NonFiniteInput {
                what: s(),
                index: vec![],
                value: f64::NAN,
            },
            GnnError::Transposed {
                what: s(),
                found: vec![],
                nodes: 0,
            },
            GnnError::AfterReadout { readout: s() },
            GnnError::RankFailed {
                rank: 1,
                world: 2,
                step: 0,
                cause: s(),
            },
        ];
        let codes: Vec<_> = all.iter().map(GnnError::code).collect();
        assert_eq!(codes, GnnError::CODES);
    }
}
