//! A user project with `shade-graph` as its only dependency: reads Cora from
//! `../shared/data`, symmetrises it, splits it and propagates its sparse features once.

use shade_graph::CsMat32;
use shade_graph::ndarray::Array2;
use shade_graph::{Dataset, GraphResult, NpzOptions, read_npz};
use std::path::PathBuf;

/// `../shared/data/<name>` beside the workspace checkout.
fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../../shared/data")
        .join(name)
}

fn cora() -> GraphResult<Dataset> {
    read_npz(data("cora.npz"), NpzOptions::undirected())
}

/// One GCN propagation of the dense features: `Â · X`.
fn propagate(ds: &Dataset) -> Array2<f32> {
    let x: &CsMat32<f32> = ds.features();
    let a = ds.graph.gcn_adjacency::<f32>();
    a * &x.to_dense()
}

fn main() -> GraphResult<()> {
    let ds = cora()?;
    let split = ds.split(20, 500, 1000, 0)?;
    println!(
        "cora: {} nodes, {} edges, {} features, {} classes; split {}/{}/{}",
        ds.graph.num_nodes(),
        ds.graph.num_edges(),
        ds.num_features(),
        ds.num_classes,
        split.train.len(),
        split.val.len(),
        split.test.len()
    );
    println!("propagated features: {:?}", propagate(&ds).shape());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_cora_with_its_published_counts() {
        let ds = cora().unwrap();
        assert_eq!((ds.graph.num_nodes(), ds.graph.num_edges()), (2708, 10556));
        assert_eq!((ds.num_features(), ds.features().nnz()), (1433, 49216));
        assert_eq!(ds.num_classes, 7);
        assert_eq!(ds.split(20, 500, 1000, 0).unwrap().train.len(), 140);
        // Â has rows summing to sum_j 1 / sqrt(d_i d_j) over i's neighbours and itself:
        // check one row against that definition.
        let h = propagate(&ds);
        let (src, dst) = ds.graph.edge_index();
        let deg = |v: u32| 1.0 + dst.iter().filter(|&&d| d == v).count() as f32;
        let x = ds.features().to_dense();
        let i = 0u32;
        let mut want = x.row(0).mapv(|v| v / deg(i));
        for (&s, _) in src.iter().zip(dst).filter(|&(_, &d)| d == i) {
            want.scaled_add(1.0 / (deg(i) * deg(s)).sqrt(), &x.row(s as usize));
        }
        assert!(
            h.row(0)
                .iter()
                .zip(&want)
                .all(|(a, b)| (a - b).abs() < 1e-6)
        );
    }

    #[test]
    fn bad_files_are_coded_errors() {
        let e = read_npz(data("no-such-file.npz"), NpzOptions::default()).unwrap_err();
        assert_eq!(e.code(), "SHADE-E0330", "{e}");
        let bytes = std::fs::read(data("cora.npz")).unwrap();
        let cut = &bytes[..bytes.len() / 2];
        let e = shade_graph::parse_npz(cut, "half.npz", NpzOptions::default()).unwrap_err();
        assert_eq!(e.code(), "SHADE-E0331", "{e}");
        assert!(e.to_string().contains("half.npz"), "{e}");
    }
}
