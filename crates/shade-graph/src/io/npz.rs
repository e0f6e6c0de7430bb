//! The citation-graph `.npz` format of `shared/data` (adjacency and features in CSR
//! form, integer labels), read into a [`Dataset`] and written back.

use std::path::Path;

use crate::graph::CsMat32;

use super::npy::{self, NpyArray};
use super::npz_arrays::{NpzArrays, parse_npz_arrays};
use super::zip;
use crate::error::{GraphError, GraphResult};
use crate::graph::{Graph, check_num_nodes};
use crate::split::{NodeSplit, split_per_class};
use crate::{MAX_NODES, Reduce};

/// How to post-process the stored adjacency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NpzOptions {
    /// Symmetrise the (directed citation) adjacency with
    /// [`Graph::to_undirected`]`(Reduce::Max)`.
    pub undirected: bool,
    /// Drop self-loops.
    pub remove_self_loops: bool,
}

impl NpzOptions {
    /// The usual protocol: undirected, without self-loops.
    pub fn undirected() -> Self {
        NpzOptions {
            undirected: true,
            remove_self_loops: true,
        }
    }
}

/// A node-classification dataset: graph, sparse features, labels.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    /// The graph; its sparse node features are the feature matrix.
    pub graph: Graph,
    /// Class of every node.
    pub labels: Vec<usize>,
    /// Number of classes (`max label + 1`).
    pub num_classes: usize,
}

impl Dataset {
    /// The sparse `[num_nodes, num_features]` feature matrix (CSR as stored).
    ///
    /// # Panics
    /// If the graph has no sparse node features, which happens only for a `Dataset`
    /// assembled by hand without them (a programming error).
    #[track_caller]
    pub fn features(&self) -> &CsMat32<f32> {
        self.graph
            .sparse_node_features()
            .expect("a dataset always has features")
    }

    /// Number of feature columns.
    pub fn num_features(&self) -> usize {
        self.features().cols()
    }

    /// The standard split: `per_class` training nodes per class, then `num_val` and
    /// `num_test` from the rest, seeded (see [`split_per_class`]).
    pub fn split(
        &self,
        per_class: usize,
        num_val: usize,
        num_test: usize,
        seed: u64,
    ) -> GraphResult<NodeSplit> {
        split_per_class(
            &self.labels,
            self.num_classes,
            per_class,
            num_val,
            num_test,
            seed,
        )
    }
}

struct Arrays<'a> {
    file: &'a str,
    arrays: NpzArrays,
}

impl Arrays<'_> {
    fn get(&self, name: &str) -> GraphResult<&NpyArray> {
        self.arrays.get(name)
    }
    fn bad(&self, name: &str, what: String) -> GraphError {
        GraphError::Malformed {
            file: self.file.into(),
            member: Some(name.into()),
            what,
        }
    }
    /// Any integer or boolean array, widened to `i64`.
    fn ints(&self, name: &str) -> GraphResult<Vec<i64>> {
        fn wide<T: Copy + Into<i64>>(a: &ndarray::ArrayD<T>) -> Vec<i64> {
            a.iter().map(|&v| v.into()).collect()
        }
        Ok(match self.get(name)? {
            NpyArray::I8(a) => wide(a),
            NpyArray::I16(a) => wide(a),
            NpyArray::I32(a) => wide(a),
            NpyArray::I64(a) => a.iter().copied().collect(),
            NpyArray::U8(a) => wide(a),
            NpyArray::U16(a) => wide(a),
            NpyArray::U32(a) => wide(a),
            NpyArray::Bool(a) => a.iter().map(|&b| i64::from(b)).collect(),
            NpyArray::U64(a) => {
                if let Some((p, v)) = a.iter().enumerate().find(|(_, v)| **v > i64::MAX as u64) {
                    return Err(self.bad(name, format!("value {v} at position {p} exceeds i64")));
                }
                a.iter().map(|&v| v as i64).collect()
            }
            other => {
                return Err(self.bad(name, format!("expected integers, found {}", other.dtype())));
            }
        })
    }
    fn floats(&self, name: &str) -> GraphResult<Vec<f32>> {
        match self.get(name)? {
            NpyArray::F32(a) => Ok(a.iter().copied().collect()),
            NpyArray::F64(a) => Ok(a.iter().map(|&x| x as f32).collect()),
            _ => Ok(self.ints(name)?.into_iter().map(|x| x as f32).collect()),
        }
    }
    /// `[rows, cols]` of `{prefix}_shape`.
    fn shape(&self, prefix: &str) -> GraphResult<(usize, usize)> {
        let name = format!("{prefix}_shape");
        let s = self.ints(&name)?;
        match s[..] {
            [r, c] if r >= 0 && c >= 0 => {
                check_num_nodes(r as usize).map_err(|_| {
                    self.bad(&name, format!("{r} rows exceed the supported {MAX_NODES}"))
                })?;
                Ok((r as usize, c as usize))
            }
            _ => Err(self.bad(
                &name,
                format!("expected two non-negative sizes, found {s:?}"),
            )),
        }
    }
    /// A validated CSR `(indptr, indices, data)` under `prefix` with `rows x cols`.
    fn csr(
        &self,
        prefix: &str,
        rows: usize,
        cols: usize,
    ) -> GraphResult<(Vec<usize>, Vec<u32>, Vec<f32>)> {
        let (pn, iname, dname) = (
            format!("{prefix}_indptr"),
            format!("{prefix}_indices"),
            format!("{prefix}_data"),
        );
        let indptr = self.ints(&pn)?;
        let indices = self.ints(&iname)?;
        let data = self.floats(&dname)?;
        if indptr.len() != rows + 1 {
            return Err(self.bad(
                &pn,
                format!("length {} but {rows} rows need {}", indptr.len(), rows + 1),
            ));
        }
        if indices.len() != data.len() {
            return Err(self.bad(
                &dname,
                format!(
                    "length {} differs from {iname}'s {}",
                    data.len(),
                    indices.len()
                ),
            ));
        }
        if indptr[0] != 0 || indptr[rows] != indices.len() as i64 {
            return Err(self.bad(
                &pn,
                format!(
                    "must run from 0 to {}, runs from {} to {}",
                    indices.len(),
                    indptr[0],
                    indptr[rows]
                ),
            ));
        }
        if let Some(r) = (0..rows).find(|&r| indptr[r] > indptr[r + 1]) {
            return Err(self.bad(
                &pn,
                format!(
                    "decreases at row {r} ({} then {})",
                    indptr[r],
                    indptr[r + 1]
                ),
            ));
        }
        if let Some(p) = indices
            .iter()
            .position(|&i| i < 0 || i as u64 >= cols as u64)
        {
            return Err(GraphError::NodeOutOfRange {
                what: format!("{}: {iname}", self.file),
                position: p,
                index: indices[p] as u64,
                num_nodes: cols,
            });
        }
        if let Some(p) = data.iter().position(|x| !x.is_finite()) {
            return Err(GraphError::NonFinite {
                what: format!("{}: {dname}", self.file),
                position: p,
                value: data[p] as f64,
            });
        }
        Ok((
            indptr.iter().map(|&x| x as usize).collect(),
            indices.iter().map(|&x| x as u32).collect(),
            data,
        ))
    }
}

/// Reads a dataset from `.npz` bytes; `file` names it in errors.
pub fn parse_npz(bytes: &[u8], file: &str, opts: NpzOptions) -> GraphResult<Dataset> {
    let a = Arrays {
        file,
        arrays: parse_npz_arrays(bytes, file)?,
    };
    let (n, n2) = a.shape("adj")?;
    if n != n2 {
        return Err(a.bad(
            "adj_shape",
            format!("adjacency must be square, is {n} x {n2}"),
        ));
    }
    let (indptr, dst, w) = a.csr("adj", n, n)?;
    let mut src = Vec::with_capacity(dst.len());
    for r in 0..n {
        src.extend(std::iter::repeat_n(r as u32, indptr[r + 1] - indptr[r]));
    }
    let mut graph = Graph::try_new(n, src, dst)?;
    if w.iter().any(|&x| x != 1.0) {
        graph = graph.with_weights(w.iter().map(|&x| x as f64).collect())?;
    }
    let (fr, fc) = a.shape("attr")?;
    if fr != n {
        return Err(GraphError::DataShape {
            kind: "node",
            name: format!("{file}: attr_shape"),
            shape: vec![fr, fc],
            expected: n,
        });
    }
    let (fp, fi, fd) = a.csr("attr", fr, fc)?;
    // Sort the column indices of each row (the format does not promise sorted rows).
    let features = CsMat32::new_from_unsorted((fr, fc), fp, fi, fd)
        .map_err(|(_, _, _, e)| a.bad("attr_indices", format!("invalid CSR structure: {e}")))?;
    let labels = a.ints("labels")?;
    if labels.len() != n {
        return Err(GraphError::DataShape {
            kind: "node",
            name: format!("{file}: labels"),
            shape: vec![labels.len()],
            expected: n,
        });
    }
    if let Some(p) = labels
        .iter()
        .position(|&l| l < 0 || l as u64 >= n.max(1) as u64)
    {
        return Err(a.bad(
            "labels",
            format!(
                "label {} at position {p} is not a class id in 0..{n}",
                labels[p]
            ),
        ));
    }
    let labels: Vec<usize> = labels.iter().map(|&l| l as usize).collect();
    let num_classes = labels.iter().max().map_or(0, |m| m + 1);
    if opts.remove_self_loops {
        graph = graph.remove_self_loops();
    }
    if opts.undirected {
        graph = graph.to_undirected(Reduce::Max);
    }
    graph.set_sparse_node_features(features)?;
    Ok(Dataset {
        graph,
        labels,
        num_classes,
    })
}

/// Reads a dataset from an `.npz` file (`np.savez`, uncompressed members).
///
/// ```
/// use shade_graph::{NpzOptions, read_npz};
/// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data/cora.npz");
/// # if !std::path::Path::new(path).exists() { return Ok(()); }
/// let cora = read_npz(path, NpzOptions::undirected())?;
/// assert_eq!((cora.graph.num_nodes(), cora.graph.num_edges()), (2708, 10556));
/// let split = cora.split(20, 500, 1000, 0)?;
/// assert_eq!(split.train.len(), 140);
/// # Ok::<(), shade_graph::GraphError>(())
/// ```
pub fn read_npz(path: impl AsRef<Path>, opts: NpzOptions) -> GraphResult<Dataset> {
    let path = path.as_ref();
    parse_npz(&super::read_file(path)?, &path.display().to_string(), opts)
}

fn le<T: Copy, const N: usize>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    v.iter().flat_map(|&x| f(x)).collect()
}

/// The `.npz` bytes of a dataset: the graph's edges as a CSR by source (weights or
/// ones), the features, the labels (`int8` if they fit, else `int64`); members
/// deflated if `compress` (as `np.savez_compressed`), stored otherwise (`np.savez`).
/// `SHADE-E0310` if the graph has no sparse node features.
pub fn npz_bytes(ds: &Dataset, compress: bool) -> GraphResult<Vec<u8>> {
    let g = &ds.graph;
    let n = g.num_nodes();
    let too_big = |what: &str, v: usize| GraphError::TooLarge {
        what: what.into(),
        found: v as u64,
        max: i32::MAX as u64,
    };
    if g.num_edges() > i32::MAX as usize {
        return Err(too_big("num_edges", g.num_edges()));
    }
    let csr = g.csr_by_src();
    let adj_data: Vec<f32> = csr
        .edge_ids
        .iter()
        .map(|&e| g.weight(e as usize) as f32)
        .collect();
    let x = ds
        .graph
        .sparse_node_features()
        .ok_or_else(|| GraphError::DataShape {
            kind: "node",
            name: "sparse features".into(),
            shape: vec![],
            expected: n,
        })?;
    let x = if x.is_csr() { x.clone() } else { x.to_csr() };
    if x.nnz() > i32::MAX as usize {
        return Err(too_big("feature nonzeros", x.nnz()));
    }
    let i32s = |v: &mut dyn Iterator<Item = usize>| {
        le(&v.map(|x| x as i32).collect::<Vec<_>>(), i32::to_le_bytes)
    };
    let mut members = vec![
        (
            "adj_data",
            npy::write_raw("<f4", &[adj_data.len()], &le(&adj_data, f32::to_le_bytes)),
        ),
        (
            "adj_indices",
            npy::write_raw(
                "<i4",
                &[csr.indices.len()],
                &le(
                    &csr.indices.iter().map(|&x| x as i32).collect::<Vec<_>>(),
                    i32::to_le_bytes,
                ),
            ),
        ),
        (
            "adj_indptr",
            npy::write_raw("<i4", &[n + 1], &i32s(&mut csr.indptr.iter().copied())),
        ),
        (
            "adj_shape",
            npy::write_raw("<i8", &[2], &le(&[n as i64, n as i64], i64::to_le_bytes)),
        ),
        (
            "attr_data",
            npy::write_raw("<f4", &[x.nnz()], &le(x.data(), f32::to_le_bytes)),
        ),
        (
            "attr_indices",
            npy::write_raw(
                "<i4",
                &[x.nnz()],
                &i32s(&mut x.indices().iter().map(|&c| c as usize)),
            ),
        ),
        (
            "attr_indptr",
            npy::write_raw(
                "<i4",
                &[n + 1],
                &i32s(&mut x.indptr().to_proper().iter().copied()),
            ),
        ),
        (
            "attr_shape",
            npy::write_raw(
                "<i8",
                &[2],
                &le(&[n as i64, x.cols() as i64], i64::to_le_bytes),
            ),
        ),
    ];
    if ds.num_classes <= 128 {
        members.push((
            "labels",
            npy::write_raw(
                "|i1",
                &[n],
                &ds.labels.iter().map(|&l| l as u8).collect::<Vec<_>>(),
            ),
        ));
    } else {
        members.push((
            "labels",
            npy::write_raw(
                "<i8",
                &[n],
                &le(
                    &ds.labels.iter().map(|&l| l as i64).collect::<Vec<_>>(),
                    i64::to_le_bytes,
                ),
            ),
        ));
    }
    zip::write_members_with(
        &members
            .into_iter()
            .map(|(k, v)| (format!("{k}.npy"), v))
            .collect::<Vec<_>>(),
        compress,
    )
}

/// Writes a dataset as an uncompressed `.npz` that [`read_npz`] (and NumPy) can read.
pub fn write_npz(path: impl AsRef<Path>, ds: &Dataset) -> GraphResult<()> {
    super::write_file(path.as_ref(), npz_bytes(ds, false)?)
}

/// Writes a dataset as a deflated `.npz` (as `np.savez_compressed`).
pub fn write_npz_compressed(path: impl AsRef<Path>, ds: &Dataset) -> GraphResult<()> {
    super::write_file(path.as_ref(), npz_bytes(ds, true)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A 3-node dataset's members: 0->1, 1->2 (weights w), 2 features, labels.
    fn members(w: [f32; 2], idx: [i32; 2], attr_rows: i64) -> Vec<(String, Vec<u8>)> {
        let f = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>();
        let i = |v: &[i32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>();
        let l = |v: &[i64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>();
        vec![
            ("adj_data.npy".into(), npy::write_raw("<f4", &[2], &f(&w))),
            (
                "adj_indices.npy".into(),
                npy::write_raw("<i4", &[2], &i(&idx)),
            ),
            (
                "adj_indptr.npy".into(),
                npy::write_raw("<i4", &[4], &i(&[0, 1, 2, 2])),
            ),
            (
                "adj_shape.npy".into(),
                npy::write_raw("<i8", &[2], &l(&[3, 3])),
            ),
            (
                "attr_data.npy".into(),
                npy::write_raw("<f4", &[2], &f(&[1.0, 1.0])),
            ),
            (
                "attr_indices.npy".into(),
                npy::write_raw("<i4", &[2], &i(&[1, 0])),
            ),
            (
                "attr_indptr.npy".into(),
                npy::write_raw("<i4", &[4], &i(&[0, 1, 1, 2])),
            ),
            (
                "attr_shape.npy".into(),
                npy::write_raw("<i8", &[2], &l(&[attr_rows, 2])),
            ),
            ("labels.npy".into(), npy::write_raw("|i1", &[3], &[0, 1, 1])),
            (
                "node_names.npy".into(),
                npy::write_raw("<U2", &[3], &[0; 24]),
            ),
        ]
    }

    fn parse(ms: &[(String, Vec<u8>)]) -> GraphResult<Dataset> {
        parse_npz(
            &zip::write_members(ms).unwrap(),
            "t.npz",
            NpzOptions::default(),
        )
    }

    #[test]
    fn reads_a_small_archive() {
        let ds = parse(&members([0.5, 2.0], [1, 2], 3)).unwrap();
        assert_eq!(ds.graph.edge_index(), (&[0u32, 1][..], &[1u32, 2][..]));
        assert_eq!(ds.graph.weights(), Some(&[0.5, 2.0][..]));
        assert_eq!(
            ds.features().to_dense(),
            ndarray::arr2(&[[0.0f32, 1.0], [0.0, 0.0], [1.0, 0.0]])
        );
        assert_eq!((ds.labels.clone(), ds.num_classes), (vec![0, 1, 1], 2));
        // Writing and reading back gives the same dataset.
        let again = parse_npz(
            &npz_bytes(&ds, false).unwrap(),
            "u.npz",
            NpzOptions::default(),
        )
        .unwrap();
        assert_eq!(again, ds);
    }

    #[test]
    fn reads_deflated_members() {
        let ms = members([0.5, 2.0], [1, 2], 3);
        let z = zip::write_members_with(&ms, true).unwrap();
        let ds = parse_npz(&z, "c.npz", NpzOptions::default()).unwrap();
        assert_eq!(ds, parse(&ms).unwrap());
    }

    #[test]
    fn coded_errors_name_the_array_and_value() {
        let e = parse(&members([f32::NAN, 1.0], [1, 2], 3)).unwrap_err();
        assert_eq!(e.code(), "SHADE-E0306");
        assert!(
            e.to_string().contains("t.npz: adj_data") && e.to_string().contains("NaN"),
            "{e}"
        );
        let e = parse(&members([1.0, 1.0], [1, 7], 3)).unwrap_err();
        assert_eq!(e.code(), "SHADE-E0302");
        assert!(
            e.to_string().contains("adj_indices") && e.to_string().contains("index 7"),
            "{e}"
        );
        let e = parse(&members([1.0, 1.0], [1, 2], 4)).unwrap_err();
        assert_eq!(e.code(), "SHADE-E0310");
        assert!(
            e.to_string().contains("attr_shape") && e.to_string().contains("[4, 2]"),
            "{e}"
        );
        let mut ms = members([1.0, 1.0], [1, 2], 3);
        ms.retain(|(n, _)| n != "labels.npy");
        assert_eq!(parse(&ms).unwrap_err().code(), "SHADE-E0333");
        // Other compression methods are reported as unsupported, not misread.
        let mut z = zip::write_members(&members([1.0, 1.0], [1, 2], 3)).unwrap();
        let cd = z
            .windows(4)
            .position(|w| w == [0x50, 0x4B, 0x01, 0x02])
            .unwrap();
        z[cd + 10] = 12; // bzip2
        let e = parse_npz(&z, "t.npz", NpzOptions::default()).unwrap_err();
        assert_eq!(e.code(), "SHADE-E0332");
        assert!(e.to_string().contains("method 12"), "{e}");
        // A flipped data byte is caught by the CRC.
        let mut z = zip::write_members(&members([1.0, 1.0], [1, 2], 3)).unwrap();
        let at = z.windows(6).position(|w| w == b"\x93NUMPY").unwrap();
        z[at + 20] ^= 0x40;
        let e = parse_npz(&z, "t.npz", NpzOptions::default()).unwrap_err();
        assert_eq!(e.code(), "SHADE-E0331");
    }

    proptest! {
        /// Corrupt member contents behind a valid CRC: the npy and CSR validation must
        /// answer with a coded error, never a panic or a huge allocation.
        #[test]
        fn corrupt_members_never_panic(member in 0usize..10, flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6), cut in any::<prop::sample::Index>(), truncate in any::<bool>()) {
            let mut ms = members([1.0, 1.0], [1, 2], 3);
            let data = &mut ms[member].1;
            for (at, x) in &flips {
                let i = at.index(data.len());
                data[i] ^= x;
            }
            if truncate {
                let keep = cut.index(data.len() + 1);
                data.truncate(keep);
            }
            if let Err(e) = parse(&ms) {
                prop_assert!(e.code().starts_with("SHADE-E03"));
            }
        }

        #[test]
        fn npy_parse_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
            let mut b = b"\x93NUMPY\x01\x00".to_vec();
            b.extend_from_slice(&bytes);
            let _ = npy::parse_npy(&b, "f");
            let _ = npy::parse_npy(&bytes, "f");
        }
    }
}
