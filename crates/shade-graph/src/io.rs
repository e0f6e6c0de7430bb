//! Readers and writers: the `.npz` citation-graph format and edge-list text files.
//! Every reader returns a coded error (never panics) on any input bytes.

mod edgelist;
mod npy;
mod npz;
mod zip;

pub use edgelist::{edge_list_string, parse_edge_list, read_edge_list, write_edge_list};
pub use npz::{
    Dataset, NpzOptions, npz_bytes, parse_npz, read_npz, write_npz, write_npz_compressed,
};
