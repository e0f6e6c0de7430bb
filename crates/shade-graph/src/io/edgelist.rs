//! Edge-list text files: one edge per line, `src dst` or `src dst weight`, separated
//! by spaces, tabs or commas; `#` and `%` start comments; an optional `# nodes N`
//! header fixes the node count (so isolated nodes survive a round trip).

use std::fmt::Write as _;
use std::path::Path;

use crate::error::{GraphError, GraphResult};
use crate::graph::{Graph, MAX_NODES, check_num_nodes};

fn parse_err(file: &str, line: usize, what: String) -> GraphError {
    GraphError::Parse {
        file: file.into(),
        line,
        what,
    }
}

/// Parses an edge list from bytes (UTF-8 text); `file` names it in errors. The node
/// count is `num_nodes` if given, else the `# nodes N` header, else the largest index
/// plus one. Either every edge has a weight or none does.
pub fn parse_edge_list(bytes: &[u8], file: &str, num_nodes: Option<usize>) -> GraphResult<Graph> {
    let text = std::str::from_utf8(bytes).map_err(|e| GraphError::Malformed {
        file: file.into(),
        member: None,
        what: format!(
            "not UTF-8 text (invalid byte at offset {})",
            e.valid_up_to()
        ),
    })?;
    let (mut src, mut dst, mut w) = (Vec::new(), Vec::new(), Vec::new());
    // The line of each edge, for messages about it.
    let mut lines: Vec<usize> = Vec::new();
    let mut header: Option<usize> = None;
    let mut weighted: Option<bool> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let t = raw.trim();
        if let Some(c) = t.strip_prefix('#').or_else(|| t.strip_prefix('%')) {
            let mut it = c.split_whitespace();
            if it.next() == Some("nodes") {
                let v = it.next().unwrap_or("");
                let n: usize = v.parse().map_err(|_| {
                    parse_err(file, line, format!("`# nodes` needs a count, found {v:?}"))
                })?;
                check_num_nodes(n)?;
                header = Some(n);
            }
            continue;
        }
        let t = t.split(['#', '%']).next().unwrap_or("");
        let fields: Vec<&str> = t
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|f| !f.is_empty())
            .collect();
        if fields.is_empty() {
            continue;
        }
        if !(2..=3).contains(&fields.len()) {
            return Err(parse_err(
                file,
                line,
                format!("expected 2 or 3 fields, found {}: {t:?}", fields.len()),
            ));
        }
        let node = |f: &str| -> GraphResult<u32> {
            let v: u64 = f.parse().map_err(|_| {
                let what = if f.parse::<i64>().is_ok() {
                    format!("{f:?} is a negative node index (node ids count from 0)")
                } else {
                    format!("{f:?} is not a node index")
                };
                parse_err(file, line, what)
            })?;
            u32::try_from(v)
                .ok()
                .filter(|&v| (v as usize) < MAX_NODES)
                .ok_or_else(|| GraphError::TooLarge {
                    what: format!("`{file}` line {line}: node index"),
                    found: v,
                    max: MAX_NODES as u64 - 1,
                })
        };
        src.push(node(fields[0])?);
        dst.push(node(fields[1])?);
        lines.push(line);
        let has_w = fields.len() == 3;
        if *weighted.get_or_insert(has_w) != has_w {
            return Err(parse_err(
                file,
                line,
                "some edges have a weight and others do not".into(),
            ));
        }
        if has_w {
            let x: f64 = fields[2]
                .parse()
                .map_err(|_| parse_err(file, line, format!("{:?} is not a weight", fields[2])))?;
            if !x.is_finite() {
                return Err(parse_err(
                    file,
                    line,
                    format!("weight {x} is not finite (edge weights must be)"),
                ));
            }
            w.push(x);
        }
    }
    let max = src.iter().chain(&dst).max().map_or(0, |&m| m as usize + 1);
    let n = num_nodes.or(header).unwrap_or(max);
    check_num_nodes(n)?;
    let from = match (num_nodes, header) {
        (Some(_), _) => "the `num_nodes` given",
        (None, Some(_)) => "the `# nodes` header",
        (None, None) => "the largest index plus one",
    };
    let g = Graph::try_new(n, src, dst).map_err(|e| match e {
        GraphError::NodeOutOfRange {
            what,
            position,
            index,
            num_nodes,
        } => parse_err(
            file,
            lines.get(position).copied().unwrap_or(0),
            format!("{what} node {index} is not below the node count {num_nodes} ({from})"),
        ),
        e => e,
    })?;
    if weighted == Some(true) {
        g.with_weights(w)
    } else {
        Ok(g)
    }
}

/// Reads an edge-list file (see [`parse_edge_list`]).
///
/// ```
/// use shade_graph::{Graph, edge_list_string, parse_edge_list};
/// let g = Graph::try_new(4, vec![0, 1], vec![1, 2])?.with_weights(vec![0.5, 2.0])?;
/// let text = edge_list_string(&g);
/// assert_eq!(text, "# nodes 4\n0 1 0.5\n1 2 2\n");
/// assert_eq!(parse_edge_list(text.as_bytes(), "<text>", None)?, g);
/// # Ok::<(), shade_graph::GraphError>(())
/// ```
pub fn read_edge_list(path: impl AsRef<Path>, num_nodes: Option<usize>) -> GraphResult<Graph> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| GraphError::Io {
        op: "read",
        path: name.clone(),
        message: e.to_string(),
    })?;
    parse_edge_list(&bytes, &name, num_nodes)
}

/// The edge list of a graph: a `# nodes N` header, then `src dst [weight]` lines in
/// edge order (weights printed so that they read back exactly).
pub fn edge_list_string(g: &Graph) -> String {
    let mut s = format!("# nodes {}\n", g.num_nodes());
    for e in 0..g.num_edges() {
        let _ = match g.weights() {
            Some(w) => writeln!(s, "{} {} {}", g.src()[e], g.dst()[e], w[e]),
            None => writeln!(s, "{} {}", g.src()[e], g.dst()[e]),
        };
    }
    s
}

/// Writes [`edge_list_string`] to a file.
pub fn write_edge_list(path: impl AsRef<Path>, g: &Graph) -> GraphResult<()> {
    let path = path.as_ref();
    std::fs::write(path, edge_list_string(g)).map_err(|e| GraphError::Io {
        op: "write",
        path: path.display().to_string(),
        message: e.to_string(),
    })
}
