//! The graph crate's errors, each with a stable code.
//!
//! Codes `SHADE-E0300`..`SHADE-E0399` belong to this crate. A code, once published,
//! keeps its meaning; new variants take new codes.

/// What went wrong while building, transforming, sampling or reading a graph, with the
/// values that matter.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum GraphError {
    /// `src` and `dst` (or an edge array and the edge count) have different lengths.
    #[error("`{what}` has length {found}, but {expected} was expected")]
    LengthMismatch {
        /// The array whose length is wrong.
        what: String,
        /// The length it should have.
        expected: usize,
        /// The length it has.
        found: usize,
    },
    /// A node index points outside `0..num_nodes`.
    #[error(
        "`{what}` holds node index {index} at position {position}, but the graph has {num_nodes} nodes{}",
        negative_hint(*index)
    )]
    NodeOutOfRange {
        /// The array (or argument) holding the index.
        what: String,
        /// Position of the offending entry.
        position: usize,
        /// The offending index.
        index: u64,
        /// Number of nodes.
        num_nodes: usize,
    },
    /// An edge id points outside `0..num_edges`.
    #[error(
        "edge id {index} at position {position} is out of range for a graph with {num_edges} edges"
    )]
    EdgeOutOfRange {
        /// Position of the offending entry.
        position: usize,
        /// The offending id.
        index: usize,
        /// Number of edges.
        num_edges: usize,
    },
    /// A graph id points outside `0..num_graphs`.
    #[error("graph id {index} is out of range for a batch of {num_graphs} graphs")]
    GraphOutOfRange {
        /// The offending id.
        index: usize,
        /// Number of graphs in the batch.
        num_graphs: usize,
    },
    /// A count does not fit the 32-bit node index type.
    #[error("{what} is {found}, more than the supported maximum {max}")]
    TooLarge {
        /// What is too large.
        what: String,
        /// The requested value.
        found: u64,
        /// The largest supported value.
        max: u64,
    },
    /// A node count whose per-node structures this machine cannot allocate (often a
    /// garbage id, such as `-2` written as `u32`, taken for the largest node).
    #[error(
        "{what} = {found} needs {gib:.1} GiB for the graph's per-node structures, which cannot be allocated"
    )]
    Unallocatable {
        /// What asked for it, e.g. `num_nodes`.
        what: String,
        /// The count.
        found: u64,
        /// The memory the per-node offsets alone need, in GiB.
        gib: f64,
    },
    /// An edge weight (or another value that must be finite) is NaN or infinite.
    #[error("`{what}` holds the non-finite value {value} at position {position}")]
    NonFinite {
        /// The array holding the value.
        what: String,
        /// Position of the offending entry.
        position: usize,
        /// The offending value.
        value: f64,
    },
    /// A data array's leading dimension differs from the count it must match.
    #[error("{kind} data `{name}` has shape {shape:?}, but its first dimension must be {expected}")]
    DataShape {
        /// `node`, `edge` or `graph`.
        kind: &'static str,
        /// The array's name.
        name: String,
        /// The array's shape.
        shape: Vec<usize>,
        /// The required first dimension.
        expected: usize,
    },
    /// Arrays that must agree (when batching or adding edges) differ in name, type or
    /// trailing shape.
    #[error("{kind} data `{name}` cannot be combined: {what}")]
    DataMismatch {
        /// `node`, `edge` or `graph`.
        kind: &'static str,
        /// The array's name.
        name: String,
        /// What differs.
        what: String,
    },
    /// The graph indicator is not sorted, or an edge joins two graphs of a batch.
    #[error("invalid batch: {what}")]
    InvalidBatch {
        /// What is wrong.
        what: String,
    },
    /// A parameter is outside its domain (a probability above 1, `k` = 0, ...).
    #[error("`{name}` = {value} is invalid: {expected}")]
    InvalidParameter {
        /// The parameter's name.
        name: &'static str,
        /// Its value, as written.
        value: String,
        /// What is allowed.
        expected: String,
    },
    /// A sampler or split asked for more than the graph or the labels can give.
    #[error("cannot draw {requested} {what}: only {available} available")]
    NotEnough {
        /// What was asked for.
        what: String,
        /// How many were asked for.
        requested: usize,
        /// How many exist.
        available: usize,
    },
    /// An I/O operation failed.
    #[error("cannot {op} `{path}`: {message}")]
    Io {
        /// `read` or `write`.
        op: &'static str,
        /// The file.
        path: String,
        /// The operating system's message.
        message: String,
    },
    /// A file is not in the expected format: truncated, corrupt, or inconsistent.
    #[error("`{file}`{}: {what}", member_suffix(.member))]
    Malformed {
        /// The file (or `<bytes>` for in-memory input).
        file: String,
        /// The archive member or array, if known.
        member: Option<String>,
        /// What is wrong, with the offending value.
        what: String,
    },
    /// A file uses a feature this reader does not implement.
    #[error("`{file}`{}: unsupported {what}", member_suffix(.member))]
    Unsupported {
        /// The file (or `<bytes>` for in-memory input).
        file: String,
        /// The archive member or array, if known.
        member: Option<String>,
        /// The feature.
        what: String,
    },
    /// A required array is missing from an archive.
    #[error("`{file}` has no array `{name}`")]
    MissingArray {
        /// The file.
        file: String,
        /// The missing array.
        name: String,
    },
    /// An array read from a file holds another element type or rank than the one
    /// asked for.
    #[error("{what} is a {found}, but a {expected} was asked for")]
    ArrayType {
        /// The array (and the file it came from).
        what: String,
        /// What was asked for (`float32 array`, `rank-2 array`).
        expected: String,
        /// What it is (`uint8 array of shape [2, 3]`).
        found: String,
    },
    /// An edge-list line cannot be parsed.
    #[error("`{file}` line {line}: {what}")]
    Parse {
        /// The file (or `<text>` for in-memory input).
        file: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong, with the offending text.
        what: String,
    },
}

/// For an index whose 32-bit pattern is a negative `i32` (a `-1` cast to `u32`): says so.
fn negative_hint(index: u64) -> String {
    match u32::try_from(index) {
        Ok(i) if i >= 1 << 31 => format!(
            " (as a 32-bit signed number it is {}: a negative id written unsigned?)",
            i as i32
        ),
        _ => String::new(),
    }
}

fn member_suffix(member: &Option<String>) -> String {
    member
        .as_ref()
        .map(|m| format!(" array `{m}`"))
        .unwrap_or_default()
}

/// Result with a [`GraphError`].
pub type GraphResult<T> = Result<T, GraphError>;

impl GraphError {
    /// Every code this enum can return, in order, so that catalogues can be checked
    /// for completeness.
    pub const CODES: &'static [&'static str] = &[
        "SHADE-E0301",
        "SHADE-E0302",
        "SHADE-E0303",
        "SHADE-E0304",
        "SHADE-E0305",
        "SHADE-E0306",
        "SHADE-E0307",
        "SHADE-E0310",
        "SHADE-E0311",
        "SHADE-E0312",
        "SHADE-E0320",
        "SHADE-E0321",
        "SHADE-E0330",
        "SHADE-E0331",
        "SHADE-E0332",
        "SHADE-E0333",
        "SHADE-E0334",
        "SHADE-E0335",
    ];

    /// The stable code of this error, e.g. `"SHADE-E0301"`.
    pub fn code(&self) -> &'static str {
        match self {
            GraphError::LengthMismatch { .. } => "SHADE-E0301",
            GraphError::NodeOutOfRange { .. } => "SHADE-E0302",
            GraphError::EdgeOutOfRange { .. } => "SHADE-E0303",
            GraphError::GraphOutOfRange { .. } => "SHADE-E0304",
            GraphError::TooLarge { .. } => "SHADE-E0305",
            GraphError::NonFinite { .. } => "SHADE-E0306",
            GraphError::Unallocatable { .. } => "SHADE-E0307",
            GraphError::DataShape { .. } => "SHADE-E0310",
            GraphError::DataMismatch { .. } => "SHADE-E0311",
            GraphError::InvalidBatch { .. } => "SHADE-E0312",
            GraphError::InvalidParameter { .. } => "SHADE-E0320",
            GraphError::NotEnough { .. } => "SHADE-E0321",
            GraphError::Io { .. } => "SHADE-E0330",
            GraphError::Malformed { .. } => "SHADE-E0331",
            GraphError::Unsupported { .. } => "SHADE-E0332",
            GraphError::MissingArray { .. } => "SHADE-E0333",
            GraphError::Parse { .. } => "SHADE-E0334",
            GraphError::ArrayType { .. } => "SHADE-E0335",
        }
    }

    /// One line that says what to do about this error.
    pub fn help(&self) -> String {
        match self {
            GraphError::LengthMismatch { .. } => {
                "give every array its count: one entry per edge for `src`, `dst` and weights, \
                 one per node for the graph indicator"
                    .into()
            }
            GraphError::NodeOutOfRange { .. } => {
                "node indices count from 0 to num_nodes - 1; raise num_nodes or fix the index".into()
            }
            GraphError::EdgeOutOfRange { .. } => "edge ids count from 0 to num_edges - 1".into(),
            GraphError::GraphOutOfRange { .. } => "graph ids count from 0 to num_graphs - 1".into(),
            GraphError::TooLarge { .. } => {
                "node and edge counts must fit in u32; split the graph or sample it".into()
            }
            GraphError::NonFinite { .. } => {
                "replace NaN/inf values before building the graph (e.g. drop those edges or points)".into()
            }
            GraphError::Unallocatable { .. } => {
                "check the ids the count came from (a negative id written unsigned, a sentinel \
                 such as u32::MAX - 1); give the node count explicitly, or split the graph"
                    .into()
            }
            GraphError::DataShape { .. } => {
                "node data needs num_nodes rows, edge data num_edges rows, graph data num_graphs rows"
                    .into()
            }
            GraphError::DataMismatch { .. } => {
                "give every graph the same data names, element types and trailing shapes".into()
            }
            GraphError::InvalidBatch { .. } => {
                "keep each graph's nodes contiguous (sorted indicator) and its edges inside it".into()
            }
            GraphError::InvalidParameter { .. } => {
                "see the function's documentation for the allowed range".into()
            }
            GraphError::NotEnough { .. } => "ask for fewer, or use a larger graph".into(),
            GraphError::Io { .. } => "check that the path exists and is readable/writable".into(),
            GraphError::Malformed { .. } => {
                "the file is truncated or corrupt; re-download or re-export it".into()
            }
            GraphError::Unsupported { .. } => {
                "re-save with numeric dtypes (float32/64, int8..64, uint8..64, bool) and `np.savez` or `np.savez_compressed`".into()
            }
            GraphError::MissingArray { .. } => {
                "save the archive with the CSR arrays described in shared/data/README.md".into()
            }
            GraphError::Parse { .. } => {
                "write one edge per line as `src dst` or `src dst weight`; `#` starts a comment".into()
            }
            GraphError::ArrayType { .. } => {
                "ask for the stored type (`NpyArray::dtype`), or convert on the numpy side (`a.astype(np.float32)`)".into()
            }
        }
    }

    pub(crate) fn param(name: &'static str, value: impl ToString, expected: &str) -> Self {
        GraphError::InvalidParameter {
            name,
            value: value.to_string(),
            expected: expected.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_well_formed() {
        let s = String::new;
        let all = [
            GraphError::LengthMismatch {
                what: s(),
                expected: 1,
                found: 2,
            },
            GraphError::NodeOutOfRange {
                what: s(),
                position: 0,
                index: 5,
                num_nodes: 3,
            },
            GraphError::EdgeOutOfRange {
                position: 0,
                index: 5,
                num_edges: 3,
            },
            GraphError::GraphOutOfRange {
                index: 2,
                num_graphs: 1,
            },
            GraphError::TooLarge {
                what: s(),
                found: 1,
                max: 0,
            },
            GraphError::NonFinite {
                what: s(),
                position: 0,
                value: f64::NAN,
            },
            GraphError::Unallocatable {
                what: s(),
                found: 1,
                gib: 1.0,
            },
            GraphError::DataShape {
                kind: "node",
                name: s(),
                shape: vec![2],
                expected: 3,
            },
            GraphError::DataMismatch {
                kind: "node",
                name: s(),
                what: s(),
            },
            GraphError::InvalidBatch { what: s() },
            GraphError::param("p", 2, "in [0, 1]"),
            GraphError::NotEnough {
                what: s(),
                requested: 2,
                available: 1,
            },
            GraphError::Io {
                op: "read",
                path: s(),
                message: s(),
            },
            GraphError::Malformed {
                file: s(),
                member: None,
                what: s(),
            },
            GraphError::Unsupported {
                file: s(),
                member: None,
                what: s(),
            },
            GraphError::MissingArray {
                file: s(),
                name: s(),
            },
            GraphError::Parse {
                file: s(),
                line: 1,
                what: s(),
            },
            GraphError::ArrayType {
                what: s(),
                expected: s(),
                found: s(),
            },
        ];
        let mut codes: Vec<_> = all.iter().map(GraphError::code).collect();
        assert!(
            codes
                .iter()
                .all(|c| c.len() == 11 && c.starts_with("SHADE-E03"))
        );
        assert!(
            all.iter()
                .all(|e| !e.help().is_empty() && !e.help().contains('\n'))
        );
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), all.len());
        assert_eq!(codes, GraphError::CODES);
        assert_eq!(
            all[1].to_string(),
            "`` holds node index 5 at position 0, but the graph has 3 nodes"
        );
        let m = GraphError::Malformed {
            file: "a.npz".into(),
            member: Some("adj_indices".into()),
            what: "truncated".into(),
        };
        assert_eq!(m.to_string(), "`a.npz` array `adj_indices`: truncated");
    }
}
