//! `.npz` archives of arbitrary named arrays, as `np.savez` / `np.savez_compressed`
//! write them and `np.load` reads them: stored or deflated members named
//! `<name>.npy`, each a `.npy` array of any supported type, order and rank.
//!
//! ```
//! use shade_graph::ndarray::{Array1, Array2, Ix1, Ix2};
//! use shade_graph::{NpzArrays, npz_arrays_bytes, parse_npz_arrays};
//!
//! let arrays = NpzArrays::new()
//!     .with("x", Array2::<f32>::zeros((3, 2)))
//!     .with("labels", Array1::from(vec![0i64, 1, 1]));
//! let bytes = npz_arrays_bytes(&arrays, true)?; // as np.savez_compressed
//! let back = parse_npz_arrays(&bytes, "a.npz")?;
//! assert_eq!(back.names().collect::<Vec<_>>(), ["x", "labels"]);
//! let labels = back.array::<i64, Ix1>("labels")?;
//! assert_eq!(labels.to_vec(), [0, 1, 1]);
//! // Asking for another type is a coded error naming the array.
//! let e = back.array::<f64, Ix2>("x").unwrap_err();
//! assert_eq!(e.code(), "SHADE-E0335");
//! # Ok::<(), shade_graph::GraphError>(())
//! ```

use std::path::Path;

use ndarray::Dimension;

use super::npy::{self, Descr, NpyArray, NpyElement};
use super::zip;
use crate::error::{GraphError, GraphResult};

/// Named arrays in archive order, as `np.load` returns them from an `.npz` file.
///
/// Members that hold no supported array (strings, objects, complex numbers, `float16`,
/// structured records, or a member that is not a `.npy` file) are not decoded; they
/// are listed in [`skipped`](Self::skipped) and asking for one with [`get`](Self::get)
/// says why (`SHADE-E0332`), so nothing is lost silently.
#[derive(Debug, Clone, Default)]
pub struct NpzArrays {
    source: String,
    arrays: Vec<(String, NpyArray)>,
    skipped: Vec<(String, String)>,
}

/// Equal if they hold the same arrays and skipped members in the same order (the
/// file they came from does not matter).
impl PartialEq for NpzArrays {
    fn eq(&self, other: &Self) -> bool {
        self.arrays == other.arrays && self.skipped == other.skipped
    }
}

impl NpzArrays {
    /// No arrays.
    pub fn new() -> Self {
        NpzArrays {
            source: "<arrays>".into(),
            ..Default::default()
        }
    }

    /// With `a` stored under `name` (replacing an array of that name in place).
    pub fn with(mut self, name: impl Into<String>, a: impl Into<NpyArray>) -> Self {
        self.insert(name, a);
        self
    }

    /// Stores `a` under `name`, returning the array it replaces (which keeps its
    /// position), if any.
    pub fn insert(&mut self, name: impl Into<String>, a: impl Into<NpyArray>) -> Option<NpyArray> {
        let (name, a) = (name.into(), a.into());
        self.skipped.retain(|(n, _)| *n != name);
        match self.arrays.iter_mut().find(|(n, _)| *n == name) {
            Some((_, old)) => Some(std::mem::replace(old, a)),
            None => {
                self.arrays.push((name, a));
                None
            }
        }
    }

    /// The array named `name`: `SHADE-E0333` if there is none, `SHADE-E0332` if the
    /// member exists but holds an unsupported type.
    pub fn get(&self, name: &str) -> GraphResult<&NpyArray> {
        if let Some((_, a)) = self.arrays.iter().find(|(n, _)| n == name) {
            return Ok(a);
        }
        Err(match self.skipped.iter().find(|(n, _)| n == name) {
            Some((_, why)) => GraphError::Unsupported {
                file: self.source.clone(),
                member: Some(name.into()),
                what: why.clone(),
            },
            None => GraphError::MissingArray {
                file: self.source.clone(),
                name: name.into(),
            },
        })
    }

    /// A copy of the array named `name` as `Array<T, D>`: the errors of
    /// [`get`](Self::get), or `SHADE-E0335` if it holds another type or rank.
    pub fn array<T: NpyElement, D: Dimension>(
        &self,
        name: &str,
    ) -> GraphResult<ndarray::Array<T, D>> {
        let what = format!("`{}` array `{name}`", self.source);
        self.get(name)?.clone().into_array_named(&what)
    }

    /// Removes and returns the array named `name`.
    pub fn remove(&mut self, name: &str) -> Option<NpyArray> {
        let at = self.arrays.iter().position(|(n, _)| n == name)?;
        Some(self.arrays.remove(at).1)
    }

    /// The arrays' names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.arrays.iter().map(|(n, _)| n.as_str())
    }

    /// `(name, array)` pairs, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &NpyArray)> {
        self.arrays.iter().map(|(n, a)| (n.as_str(), a))
    }

    /// Number of arrays (skipped members not counted).
    pub fn len(&self) -> usize {
        self.arrays.len()
    }

    /// Whether there is no array.
    pub fn is_empty(&self) -> bool {
        self.arrays.is_empty()
    }

    /// Members read but not decoded, with the reason (`dtype "<U5"`, ...).
    pub fn skipped(&self) -> &[(String, String)] {
        &self.skipped
    }
}

/// Reads the arrays of `.npz` bytes (stored or deflated members); `file` names the input
/// in errors. A corrupt archive or `.npy` member is `SHADE-E0331`, another zip
/// compression method `SHADE-E0332`; members of unsupported types are skipped
/// ([`NpzArrays::skipped`]).
pub fn parse_npz_arrays(bytes: &[u8], file: &str) -> GraphResult<NpzArrays> {
    let mut out = NpzArrays {
        source: file.into(),
        ..Default::default()
    };
    for m in zip::read_members(bytes, file)? {
        let Some(name) = m.name.strip_suffix(".npy") else {
            out.skipped.push((m.name, "not a .npy member".into()));
            continue;
        };
        let h = npy::parse_header(&m.data, file, Some(name))?;
        match h.descr {
            Descr::Other(ref d) => out.skipped.push((name.into(), format!("dtype {d:?}"))),
            Descr::Known(d) => {
                let a = npy::decode(&m.data[h.data_start..], d, &h, file, Some(name))?;
                out.arrays.push((name.into(), a));
            }
        }
    }
    Ok(out)
}

/// Reads an `.npz` file of arrays ([`parse_npz_arrays`]; `SHADE-E0330` if it cannot be
/// read).
pub fn read_npz_arrays(path: impl AsRef<Path>) -> GraphResult<NpzArrays> {
    let path = path.as_ref();
    parse_npz_arrays(&super::read_file(path)?, &path.display().to_string())
}

/// The `.npz` bytes of the arrays (members `<name>.npy`), deflated if `compress` (as
/// `np.savez_compressed`), stored otherwise (as `np.savez`). Skipped members are not
/// written. `SHADE-E0305` beyond 4 GiB (zip64 archives are read, not written).
pub fn npz_arrays_bytes(arrays: &NpzArrays, compress: bool) -> GraphResult<Vec<u8>> {
    let members: Vec<(String, Vec<u8>)> = arrays
        .iter()
        .map(|(n, a)| (format!("{n}.npy"), npy::npy_bytes(a)))
        .collect();
    zip::write_members_with(&members, compress)
}

/// Writes the arrays as an uncompressed `.npz` file (as `np.savez`).
pub fn write_npz_arrays(path: impl AsRef<Path>, arrays: &NpzArrays) -> GraphResult<()> {
    super::write_file(path.as_ref(), npz_arrays_bytes(arrays, false)?)
}

/// Writes the arrays as a deflated `.npz` file (as `np.savez_compressed`).
pub fn write_npz_arrays_compressed(path: impl AsRef<Path>, arrays: &NpzArrays) -> GraphResult<()> {
    super::write_file(path.as_ref(), npz_arrays_bytes(arrays, true)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array2, Ix2, ShapeBuilder, array};
    use proptest::prelude::*;

    fn sample() -> NpzArrays {
        NpzArrays::new()
            .with(
                "f",
                Array2::from_shape_vec((2, 2).f(), vec![1.0f64, 2.0, 3.0, 4.0]).unwrap(),
            )
            .with("b", array![true, false])
            .with("u", array![[[7u32]]])
    }

    #[test]
    fn round_trips_stored_and_deflated() {
        let a = sample();
        for compress in [false, true] {
            let back = parse_npz_arrays(&npz_arrays_bytes(&a, compress).unwrap(), "a.npz").unwrap();
            assert_eq!(back, a);
            assert_eq!(
                back.array::<f64, Ix2>("f").unwrap(),
                array![[1.0, 3.0], [2.0, 4.0]]
            );
        }
        let mut a = a;
        assert!(a.insert("b", array![1i8]).is_some());
        assert_eq!(a.names().collect::<Vec<_>>(), ["f", "b", "u"]);
        assert_eq!(a.remove("f").map(|x| x.dtype()), Some("float64"));
        assert_eq!(a.len(), 2);
    }

    #[test]
    fn skipped_members_and_missing_names_are_coded() {
        let ms = vec![
            (
                "x.npy".to_string(),
                npy::npy_bytes(&NpyArray::from(array![1u8])),
            ),
            (
                "names.npy".to_string(),
                npy::write_raw("<U2", &[1], &[0; 8]),
            ),
            ("README".to_string(), b"hello".to_vec()),
        ];
        let a = parse_npz_arrays(&zip::write_members(&ms).unwrap(), "m.npz").unwrap();
        assert_eq!(a.names().collect::<Vec<_>>(), ["x"]);
        assert_eq!(
            a.skipped(),
            [
                ("names".to_string(), "dtype \"<U2\"".to_string()),
                ("README".to_string(), "not a .npy member".to_string())
            ]
        );
        let e = a.get("names").unwrap_err();
        assert_eq!(e.code(), "SHADE-E0332");
        assert_eq!(
            e.to_string(),
            "`m.npz` array `names`: unsupported dtype \"<U2\""
        );
        let e = a.get("y").unwrap_err();
        assert_eq!(
            (e.code(), e.to_string()),
            ("SHADE-E0333", "`m.npz` has no array `y`".into())
        );
        let e = a.array::<i8, Ix2>("x").unwrap_err();
        assert_eq!(e.code(), "SHADE-E0335");
        assert!(e.to_string().contains("`m.npz` array `x`"), "{e}");
        // A corrupt .npy member is an error, naming the member.
        let ms = vec![("x.npy".to_string(), b"\x93NUMPY\x01\x00\xff\x00{".to_vec())];
        let e = parse_npz_arrays(&zip::write_members(&ms).unwrap(), "c.npz").unwrap_err();
        assert_eq!(e.code(), "SHADE-E0331");
        assert!(
            e.to_string()
                .starts_with("`c.npz` array `x`: header of 255 bytes"),
            "{e}"
        );
    }

    proptest! {
        #[test]
        fn corrupt_archives_are_coded_errors(compress in any::<bool>(), flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6), cut in any::<prop::sample::Index>()) {
            let mut z = npz_arrays_bytes(&sample(), compress).unwrap();
            for (at, x) in &flips {
                let i = at.index(z.len());
                z[i] ^= x;
            }
            let keep = cut.index(z.len() + 1);
            for bytes in [&z[..], &z[..keep]] {
                if let Err(e) = parse_npz_arrays(bytes, "f.npz") {
                    prop_assert!(matches!(e.code(), "SHADE-E0331" | "SHADE-E0332"), "{e}");
                }
            }
        }
    }
}
