//! Readers and writers: `.npy` arrays and `.npz` archives of arbitrary arrays, the
//! `.npz` citation-graph format, and edge-list text files. Every reader returns a
//! coded error (never panics) on any input bytes.

mod edgelist;
mod npy;
mod npz;
mod npz_arrays;
mod zip;

use std::path::Path;

use crate::error::{GraphError, GraphResult};

pub use edgelist::{edge_list_string, parse_edge_list, read_edge_list, write_edge_list};
pub use npy::{NpyArray, NpyElement, npy_bytes, parse_npy, read_npy, write_npy};
pub use npz::{
    Dataset, NpzOptions, npz_bytes, parse_npz, read_npz, write_npz, write_npz_compressed,
};
pub use npz_arrays::{
    NpzArrays, npz_arrays_bytes, parse_npz_arrays, read_npz_arrays, write_npz_arrays,
    write_npz_arrays_compressed,
};

/// The bytes of `path` (`SHADE-E0330` if it cannot be read).
fn read_file(path: &Path) -> GraphResult<Vec<u8>> {
    std::fs::read(path).map_err(|e| GraphError::Io {
        op: "read",
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

/// Writes `bytes` to `path` (`SHADE-E0330` on failure).
fn write_file(path: &Path, bytes: Vec<u8>) -> GraphResult<()> {
    std::fs::write(path, bytes).map_err(|e| GraphError::Io {
        op: "write",
        path: path.display().to_string(),
        message: e.to_string(),
    })
}
