//! Batching: many graphs as one block-diagonal graph with a graph indicator, and back.

use std::sync::Arc;

use crate::data::{Array, DataStore};
use crate::error::{GraphError, GraphResult};
use crate::graph::{Graph, check_num_nodes};
use crate::transform::select_sparse_rows;

fn concat_store(kind: &'static str, stores: &[&DataStore]) -> GraphResult<DataStore> {
    let mut out = DataStore::default();
    let Some(first) = stores.first() else {
        return Ok(out);
    };
    for (i, s) in stores.iter().enumerate() {
        if !s.names().eq(first.names()) {
            let a: Vec<_> = first.names().collect();
            let b: Vec<_> = s.names().collect();
            return Err(GraphError::DataMismatch {
                kind,
                name: format!("{a:?}"),
                what: format!("graph {i} has arrays {b:?} instead"),
            });
        }
    }
    for (name, a) in first.iter() {
        let parts: Vec<&Array> = stores
            .iter()
            .map(|s| s.get(name).expect("same names"))
            .collect();
        if let Some((i, p)) = parts.iter().enumerate().find(|(_, p)| !p.compatible(a)) {
            return Err(GraphError::DataMismatch {
                kind,
                name: name.into(),
                what: format!(
                    "graph 0 has {} {:?}, graph {i} has {} {:?}",
                    a.dtype(),
                    a.shape(),
                    p.dtype(),
                    p.shape()
                ),
            });
        }
        out.insert_unchecked(name.into(), Array::concat(&parts));
    }
    Ok(out)
}

impl Graph {
    /// Batches `graphs` into one block-diagonal graph: node ids are offset, data arrays
    /// concatenated by name, and the result has `Σ num_graphs` graphs (a batch of batches
    /// stays flat). All graphs must have the same data names, types and trailing shapes
    /// (`SHADE-E0311`); if some graphs are weighted, the others get weight 1; sparse
    /// features must be present in all graphs or none, with equal column counts.
    ///
    /// ```
    /// use shade_graph::Graph;
    /// let a = Graph::try_new(2, vec![0], vec![1])?;
    /// let b = Graph::try_new(3, vec![2], vec![0])?;
    /// let batch = Graph::batch(&[a.clone(), b.clone()])?;
    /// assert_eq!(batch.graph_indicator(), &[0, 0, 1, 1, 1]);
    /// assert_eq!(batch.dst(), &[1, 2]);
    /// assert_eq!(batch.unbatch()?, vec![a, b]);
    /// # Ok::<(), shade_graph::GraphError>(())
    /// ```
    pub fn batch(graphs: &[Graph]) -> GraphResult<Graph> {
        let num_nodes: usize = graphs.iter().map(Graph::num_nodes).sum();
        check_num_nodes(num_nodes)?;
        let num_edges: usize = graphs.iter().map(Graph::num_edges).sum();
        let (mut src, mut dst) = (Vec::with_capacity(num_edges), Vec::with_capacity(num_edges));
        let weighted = graphs.iter().any(|g| g.weights.is_some());
        let mut weights = weighted.then(|| Vec::with_capacity(num_edges));
        let mut node_ptr = vec![0usize];
        let mut offset = 0u32;
        for g in graphs {
            src.extend(g.src.iter().map(|&s| s + offset));
            dst.extend(g.dst.iter().map(|&d| d + offset));
            if let Some(w) = &mut weights {
                match &g.weights {
                    Some(gw) => w.extend_from_slice(gw),
                    None => w.extend(std::iter::repeat_n(1.0, g.num_edges())),
                }
            }
            node_ptr.extend(g.node_ptr[1..].iter().map(|&p| p + offset as usize));
            offset += g.num_nodes as u32;
        }
        let stores = |f: fn(&Graph) -> &DataStore| graphs.iter().map(f).collect::<Vec<_>>();
        let node_data = concat_store("node", &stores(|g| &g.node_data))?;
        let edge_data = concat_store("edge", &stores(|g| &g.edge_data))?;
        let graph_data = concat_store("graph", &stores(|g| &g.graph_data))?;
        let sparse_features = match graphs
            .iter()
            .filter(|g| g.sparse_features.is_some())
            .count()
        {
            0 => None,
            k if k == graphs.len() => {
                let mats: Vec<_> = graphs
                    .iter()
                    .map(|g| {
                        let x = g.sparse_features.as_ref().expect("counted");
                        if x.is_csr() { x.clone() } else { x.to_csr() }
                    })
                    .collect();
                if let Some(i) = mats.iter().position(|m| m.cols() != mats[0].cols()) {
                    return Err(GraphError::DataMismatch {
                        kind: "node",
                        name: "sparse features".into(),
                        what: format!(
                            "graph 0 has {} columns, graph {i} has {}",
                            mats[0].cols(),
                            mats[i].cols()
                        ),
                    });
                }
                let views: Vec<_> = mats.iter().map(|m| m.view()).collect();
                Some(sprs::vstack(&views))
            }
            _ => {
                return Err(GraphError::DataMismatch {
                    kind: "node",
                    name: "sparse features".into(),
                    what: "some graphs have sparse features and others do not".into(),
                });
            }
        };
        Ok(Graph {
            num_nodes,
            src,
            dst,
            weights,
            node_ptr,
            node_data,
            edge_data,
            graph_data,
            sparse_features,
            cache: Arc::default(),
        })
    }

    /// Graph `i` of a batch, renumbered from 0, with its data (`SHADE-E0304`).
    pub fn get_graph(&self, i: usize) -> GraphResult<Graph> {
        if i >= self.num_graphs() {
            return Err(GraphError::GraphOutOfRange {
                index: i,
                num_graphs: self.num_graphs(),
            });
        }
        let (lo, hi) = (self.node_ptr[i], self.node_ptr[i + 1]);
        let ids: Vec<usize> = (0..self.num_edges())
            .filter(|&e| (lo..hi).contains(&(self.src[e] as usize)))
            .collect();
        Ok(self.extract(i, lo, hi, &ids))
    }

    fn extract(&self, i: usize, lo: usize, hi: usize, ids: &[usize]) -> Graph {
        let mut g = self.select_edges(ids);
        g.src.iter_mut().for_each(|s| *s -= lo as u32);
        g.dst.iter_mut().for_each(|d| *d -= lo as u32);
        g.num_nodes = hi - lo;
        g.node_ptr = vec![0, hi - lo];
        g.node_data = self.node_data.map(|a| a.slice_rows(lo, hi));
        g.graph_data = self.graph_data.map(|a| a.slice_rows(i, i + 1));
        let rows: Vec<usize> = (lo..hi).collect();
        g.sparse_features = self
            .sparse_features
            .as_ref()
            .map(|x| select_sparse_rows(x, &rows));
        g
    }

    /// Splits a batch into its graphs (the inverse of [`batch`](Self::batch) for graphs
    /// that were single graphs). Edges keep their relative order.
    pub fn unbatch(&self) -> GraphResult<Vec<Graph>> {
        let ind = self.graph_indicator();
        let mut ids: Vec<Vec<usize>> = vec![Vec::new(); self.num_graphs()];
        for (e, &s) in self.src.iter().enumerate() {
            ids[ind[s as usize] as usize].push(e);
        }
        Ok((0..self.num_graphs())
            .map(|i| self.extract(i, self.node_ptr[i], self.node_ptr[i + 1], &ids[i]))
            .collect())
    }
}
