//! Connected components and PyG's `LargestConnectedComponents` transform.
//!
//! Components are numbered as SciPy's `csgraph.connected_components` numbers weak ones
//! (in the order of their smallest node), which is what PyG's transform calls; the
//! transform keeps the `num_components` largest and returns the subgraph they induce
//! (nodes in ascending order, node / edge data and sparse features carried along), or
//! the graph unchanged when it has no more components than that.
//!
//! ```
//! use shade_graph::{Graph, LargestConnectedComponents};
//!
//! // Components {0, 1, 2}, {3, 4}, {5}.
//! let g = Graph::from_edges(6, &[(0, 1), (2, 1), (3, 4)])?;
//! let lcc = LargestConnectedComponents::new(1);
//! assert_eq!(lcc.nodes(&g), [0, 1, 2]);
//! let h = lcc.apply(&g)?;
//! assert_eq!((h.num_nodes(), h.num_edges()), (3, 2));
//! assert_eq!(LargestConnectedComponents::new(2).nodes(&g), [0, 1, 2, 3, 4]);
//! # Ok::<(), shade_graph::GraphError>(())
//! ```

use crate::error::GraphResult;
use crate::graph::Graph;
use crate::io::Dataset;

/// Which connectivity of a directed graph (SciPy's `connection`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Connection {
    /// Ignoring the edges' directions (PyG's default).
    #[default]
    Weak,
    /// Along the edges' directions.
    Strong,
}

/// The connected components of a graph: how many, and the component of each node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Components {
    /// Number of components.
    pub count: usize,
    /// Component of each node, `0..count`.
    pub of_node: Vec<u32>,
}

impl Components {
    /// The size of each component.
    pub fn sizes(&self) -> Vec<usize> {
        let mut s = vec![0; self.count];
        for &c in &self.of_node {
            s[c as usize] += 1;
        }
        s
    }
}

impl Graph {
    /// The connected components (weak: in the order of their smallest node; strong:
    /// in the order in which Kosaraju's second pass finds them).
    pub fn connected_components(&self, connection: Connection) -> Components {
        let n = self.num_nodes();
        let (out, inn) = adjacency(self);
        match connection {
            Connection::Weak => label(0..n, |v| out[v].iter().chain(&inn[v])),
            Connection::Strong => strong(n, &out, &inn),
        }
    }
}

/// Labels the nodes reachable through `next` from each start (in the order of `starts`,
/// skipping labelled ones) with one component number per start.
fn label<'a, I: Iterator<Item = &'a usize>>(
    starts: impl Iterator<Item = usize> + Clone,
    next: impl Fn(usize) -> I,
) -> Components {
    let n = starts.clone().count();
    let mut of_node = vec![u32::MAX; n];
    let mut count = 0u32;
    let mut todo = Vec::new();
    for s in starts {
        if of_node[s] != u32::MAX {
            continue;
        }
        of_node[s] = count;
        todo.push(s);
        while let Some(v) = todo.pop() {
            for &w in next(v) {
                if of_node[w] == u32::MAX {
                    of_node[w] = count;
                    todo.push(w);
                }
            }
        }
        count += 1;
    }
    Components {
        count: count as usize,
        of_node,
    }
}

/// Out- and in-neighbours of every node.
fn adjacency(g: &Graph) -> (Vec<Vec<usize>>, Vec<Vec<usize>>) {
    let n = g.num_nodes();
    let (mut out, mut inn) = (vec![Vec::new(); n], vec![Vec::new(); n]);
    for (&s, &d) in g.src().iter().zip(g.dst()) {
        out[s as usize].push(d as usize);
        inn[d as usize].push(s as usize);
    }
    (out, inn)
}

/// Kosaraju: finishing order on the graph, components on the reversed graph.
fn strong(n: usize, out: &[Vec<usize>], inn: &[Vec<usize>]) -> Components {
    let mut seen = vec![false; n];
    let mut order = Vec::with_capacity(n);
    // Iterative depth-first search: (node, next neighbour position).
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for s in 0..n {
        if seen[s] {
            continue;
        }
        seen[s] = true;
        stack.push((s, 0));
        while let Some(&mut (v, ref mut k)) = stack.last_mut() {
            if let Some(&w) = out[v].get(*k) {
                *k += 1;
                if !seen[w] {
                    seen[w] = true;
                    stack.push((w, 0));
                }
            } else {
                order.push(v);
                stack.pop();
            }
        }
    }
    // Reverse finishing order over the reversed edges.
    label(order.iter().rev().copied(), |v| inn[v].iter())
}

/// PyG's `T.LargestConnectedComponents(num_components, connection)`: the subgraph
/// induced by the `num_components` largest connected components.
///
/// As PyG (which ranks the sizes with NumPy's `argsort`), components of equal size are
/// ranked by their number, the later one first. A graph with at most `num_components`
/// components is returned unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LargestConnectedComponents {
    /// How many components to keep (PyG's default: 1).
    pub num_components: usize,
    /// Weak or strong connectivity (PyG's default: weak).
    pub connection: Connection,
}

impl Default for LargestConnectedComponents {
    fn default() -> Self {
        LargestConnectedComponents::new(1)
    }
}

impl LargestConnectedComponents {
    /// The `num_components` largest weakly connected components.
    pub fn new(num_components: usize) -> Self {
        LargestConnectedComponents {
            num_components,
            connection: Connection::Weak,
        }
    }

    /// The nodes the transform keeps, ascending (every node if the graph has at most
    /// `num_components` components).
    pub fn nodes(&self, g: &Graph) -> Vec<u32> {
        let c = g.connected_components(self.connection);
        if c.count <= self.num_components {
            return (0..g.num_nodes() as u32).collect();
        }
        let sizes = c.sizes();
        let mut rank: Vec<usize> = (0..c.count).collect();
        // Ascending by size, ties by number (a stable sort); the last ones are kept.
        rank.sort_by_key(|&k| sizes[k]);
        let mut keep = vec![false; c.count];
        for &k in &rank[c.count - self.num_components..] {
            keep[k] = true;
        }
        (0..g.num_nodes() as u32)
            .filter(|&v| keep[c.of_node[v as usize] as usize])
            .collect()
    }

    /// The subgraph of the kept components (node and edge data, sparse features
    /// carried along; nodes renumbered in ascending order).
    pub fn apply(&self, g: &Graph) -> GraphResult<Graph> {
        let nodes = self.nodes(g);
        if nodes.len() == g.num_nodes() {
            return Ok(g.clone());
        }
        g.induced_subgraph(&nodes)
    }

    /// The dataset restricted to the kept components: graph, features and labels.
    pub fn apply_dataset(&self, ds: &Dataset) -> GraphResult<Dataset> {
        let nodes = self.nodes(&ds.graph);
        let graph = if nodes.len() == ds.graph.num_nodes() {
            ds.graph.clone()
        } else {
            ds.graph.induced_subgraph(&nodes)?
        };
        let labels: Vec<usize> = nodes.iter().map(|&v| ds.labels[v as usize]).collect();
        Ok(Dataset {
            graph,
            // PyG keeps the dataset's number of classes even if one vanished.
            num_classes: ds.num_classes,
            labels,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weak_components_are_numbered_by_their_smallest_node() {
        let g = Graph::from_edges(7, &[(5, 0), (1, 2), (3, 1), (6, 4)]).unwrap();
        let c = g.connected_components(Connection::Weak);
        assert_eq!(c.count, 3);
        assert_eq!(c.of_node, [0, 1, 1, 1, 2, 0, 2]);
        assert_eq!(c.sizes(), [2, 3, 2]);
    }

    #[test]
    fn strong_components_follow_directions() {
        // 0 -> 1 -> 2 -> 0 is a cycle; 2 -> 3 leaves it; 4 alone.
        let g = Graph::from_edges(5, &[(0, 1), (1, 2), (2, 0), (2, 3)]).unwrap();
        let c = g.connected_components(Connection::Strong);
        assert_eq!(c.count, 3);
        assert_eq!(c.of_node[0], c.of_node[1]);
        assert_eq!(c.of_node[1], c.of_node[2]);
        assert_ne!(c.of_node[3], c.of_node[0]);
        let mut s = c.sizes();
        s.sort_unstable();
        assert_eq!(s, [1, 1, 3]);
        let t = LargestConnectedComponents {
            num_components: 1,
            connection: Connection::Strong,
        };
        assert_eq!(t.nodes(&g), [0, 1, 2]);
        // Weakly, 0..4 are one component.
        assert_eq!(LargestConnectedComponents::new(1).nodes(&g), [0, 1, 2, 3]);
    }

    #[test]
    fn ties_keep_the_later_component_and_few_components_keep_everything() {
        // Two components of two nodes: PyG keeps the one numbered last.
        let g = Graph::from_edges(4, &[(0, 1), (2, 3)]).unwrap();
        assert_eq!(LargestConnectedComponents::new(1).nodes(&g), [2, 3]);
        let t = LargestConnectedComponents::new(2);
        assert_eq!(t.apply(&g).unwrap(), g);
    }

    #[test]
    fn datasets_keep_the_labels_and_features_of_the_kept_nodes() {
        let mut g = Graph::from_edges(5, &[(0, 1), (1, 0), (3, 4), (4, 2)]).unwrap();
        let x = sprs::CsMat::csr_from_dense(
            ndarray::array![
                [1.0f32, 0.0],
                [0.0, 1.0],
                [2.0, 0.0],
                [0.0, 3.0],
                [4.0, 4.0]
            ]
            .view(),
            0.0,
        );
        g.set_sparse_node_features(x).unwrap();
        let ds = Dataset {
            graph: g,
            labels: vec![0, 1, 2, 1, 0],
            num_classes: 3,
        };
        let lcc = LargestConnectedComponents::new(1)
            .apply_dataset(&ds)
            .unwrap();
        assert_eq!(lcc.labels, [2, 1, 0]);
        assert_eq!(
            lcc.features().to_dense(),
            ndarray::array![[2.0f32, 0.0], [0.0, 3.0], [4.0, 4.0]]
        );
        let mut edges: Vec<(u32, u32)> = lcc
            .graph
            .src()
            .iter()
            .zip(lcc.graph.dst())
            .map(|(&s, &d)| (s, d))
            .collect();
        edges.sort_unstable();
        assert_eq!(edges, [(1, 2), (2, 0)]);
    }
}
