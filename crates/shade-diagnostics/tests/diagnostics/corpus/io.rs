//! Broken programs against the array readers and writers (`.npy`, `.npz` of arrays,
//! safetensors).

use super::harness::{Program, Seen};

pub(crate) const PROGRAMS: &[(&str, Program)] = &[
    ("io_npz_array_of_another_type", npz_array_of_another_type),
    ("io_npy_string_array", npy_string_array),
    (
        "io_safetensors_overlapping_offsets",
        safetensors_overlapping_offsets,
    ),
];

fn npz_array_of_another_type() -> Result<(), Seen> {
    use shade_graph::{NpzArrays, npz_arrays_bytes, parse_npz_arrays};
    // Features saved as float64, asked for as float32.
    let saved = NpzArrays::new().with("x", ndarray::Array2::<f64>::zeros((4, 3)));
    let bytes = npz_arrays_bytes(&saved, false)?;
    let arrays = parse_npz_arrays(&bytes, "feats.npz")?;
    arrays.array::<f32, ndarray::Ix2>("x")?;
    Ok(())
}

fn npy_string_array() -> Result<(), Seen> {
    // `np.save("names.npy", np.array(["ab", "c"]))`: a '<U2' array.
    let mut bytes = b"\x93NUMPY\x01\x00v\x00".to_vec();
    let mut header = "{'descr': '<U2', 'fortran_order': False, 'shape': (2,), }".to_string();
    while header.len() < 117 {
        header.push(' ');
    }
    header.push('\n');
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(&[0; 16]);
    shade_graph::parse_npy(&bytes, "names.npy")?;
    Ok(())
}

fn safetensors_overlapping_offsets() -> Result<(), Seen> {
    // A hand-edited header: `bias` points into `weight`'s bytes.
    let header = r#"{"weight":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"bias":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}"#;
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(&[0; 8]);
    shade_gnn::from_safetensors_bytes::<f32>(&bytes)?;
    Ok(())
}
