//! Broken files handed to the readers: truncated or hand-edited `.npy`, `.npz` and
//! safetensors bytes, arrays asked for in another type or rank, checkpoints of
//! another model.

use super::gnn::{params_of, two_layers};
use super::harness::{Program, Seen};
use ndarray::{Array1, Array2};
use shade_gnn::{from_safetensors_bytes, model_from_safetensors_bytes, model_to_safetensors_bytes};
use shade_graph::{NpyArray, NpzArrays, npy_bytes, npz_arrays_bytes, parse_npy, parse_npz_arrays};

pub(crate) const PROGRAMS: &[(&str, Program)] = &[
    ("readers_npy_truncated_data", npy_truncated_data),
    ("readers_npy_not_npy", npy_not_npy),
    ("readers_npy_huge_shape", npy_huge_shape),
    ("readers_npy_header_without_shape", npy_header_without_shape),
    ("readers_npy_rank_asked", npy_rank_asked),
    ("readers_npz_not_a_zip", npz_not_a_zip),
    ("readers_npz_array_name", npz_array_name),
    ("readers_npz_member_crc", npz_member_crc),
    (
        "readers_safetensors_header_not_json",
        safetensors_header_not_json,
    ),
    (
        "readers_safetensors_shape_and_bytes",
        safetensors_shape_and_bytes,
    ),
    (
        "readers_safetensors_length_prefix_huge",
        safetensors_length_prefix_huge,
    ),
    ("readers_safetensors_complex", safetensors_complex),
    (
        "readers_safetensors_duplicate_name",
        safetensors_duplicate_name,
    ),
    (
        "readers_checkpoint_into_another_model",
        checkpoint_into_another_model,
    ),
    (
        "readers_checkpoint_of_an_empty_file",
        checkpoint_of_an_empty_file,
    ),
];

fn npy_of(a: Array2<f32>) -> Vec<u8> {
    npy_bytes(&NpyArray::from(a.into_dyn()))
}

fn npy_truncated_data() -> Result<(), Seen> {
    let bytes = npy_of(Array2::zeros((4, 4)));
    parse_npy(&bytes[..bytes.len() - 10], "x.npy")?;
    Ok(())
}

/// A CSV file renamed to `.npy`.
fn npy_not_npy() -> Result<(), Seen> {
    parse_npy(b"0.1,0.2,0.3\n0.4,0.5,0.6\n", "x.npy")?;
    Ok(())
}

fn npy_with_header(header: &str, data: &[u8]) -> Vec<u8> {
    let mut h = header.to_string();
    while !(10 + h.len() + 1).is_multiple_of(64) {
        h.push(' ');
    }
    h.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(h.len() as u16).to_le_bytes());
    bytes.extend_from_slice(h.as_bytes());
    bytes.extend_from_slice(data);
    bytes
}

/// A header whose shape asks for 2^40 x 2^40 floats (a hostile or corrupt file).
fn npy_huge_shape() -> Result<(), Seen> {
    let bytes = npy_with_header(
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }",
        &[0; 16],
    );
    parse_npy(&bytes, "huge.npy")?;
    Ok(())
}

fn npy_header_without_shape() -> Result<(), Seen> {
    let bytes = npy_with_header("{'descr': '<f4', 'fortran_order': False, }", &[0; 16]);
    parse_npy(&bytes, "x.npy")?;
    Ok(())
}

/// A vector of labels asked for as a matrix.
fn npy_rank_asked() -> Result<(), Seen> {
    let bytes = npy_bytes(&NpyArray::from(Array1::<f32>::zeros(5).into_dyn()));
    parse_npy(&bytes, "labels.npy")?.into_array::<f32, ndarray::Ix2>()?;
    Ok(())
}

/// A gzip file renamed to `.npz`.
fn npz_not_a_zip() -> Result<(), Seen> {
    parse_npz_arrays(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", "data.npz")?;
    Ok(())
}

fn npz_array_name() -> Result<(), Seen> {
    let saved = NpzArrays::new().with("features", Array2::<f32>::zeros((3, 2)));
    let arrays = parse_npz_arrays(&npz_arrays_bytes(&saved, false)?, "data.npz")?;
    arrays.get("x")?;
    Ok(())
}

/// One byte of an array flipped on the way (a damaged download).
fn npz_member_crc() -> Result<(), Seen> {
    let saved = NpzArrays::new().with("x", Array2::<f32>::ones((3, 2)));
    let mut bytes = npz_arrays_bytes(&saved, false)?;
    // The stored array's data ends just before the central directory.
    let cd = (0..bytes.len() - 4)
        .find(|&i| bytes[i..i + 4] == *b"PK\x01\x02")
        .unwrap_or(bytes.len());
    bytes[cd - 3] ^= 0xff;
    parse_npz_arrays(&bytes, "data.npz")?;
    Ok(())
}

fn safetensors_with(header: &str, data: &[u8]) -> Vec<u8> {
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(data);
    bytes
}

fn safetensors_header_not_json() -> Result<(), Seen> {
    let bytes = safetensors_with("{weight: F32}", &[]);
    from_safetensors_bytes::<f32>(&bytes)?;
    Ok(())
}

fn safetensors_shape_and_bytes() -> Result<(), Seen> {
    // Shape [2, 3] of F32 is 24 bytes; the offsets give 16.
    let header = r#"{"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,16]}}"#;
    from_safetensors_bytes::<f32>(&safetensors_with(header, &[0; 16]))?;
    Ok(())
}

/// The first eight bytes of a text file read as the header length.
fn safetensors_length_prefix_huge() -> Result<(), Seen> {
    from_safetensors_bytes::<f32>(b"checkpoint saved on 2024-01-01\n")?;
    Ok(())
}

fn safetensors_complex() -> Result<(), Seen> {
    let header = r#"{"w":{"dtype":"C64","shape":[2],"data_offsets":[0,16]}}"#;
    from_safetensors_bytes::<f32>(&safetensors_with(header, &[0; 16]))?;
    Ok(())
}

fn safetensors_duplicate_name() -> Result<(), Seen> {
    let header = r#"{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}"#;
    from_safetensors_bytes::<f32>(&safetensors_with(header, &[0; 8]))?;
    Ok(())
}

/// A model saved with 8 hidden units, loaded for one with 4.
fn checkpoint_into_another_model() -> Result<(), Seen> {
    let saved = params_of(&two_layers(8))?;
    let bytes = model_to_safetensors_bytes(&saved, &shade_gnn::State::new());
    model_from_safetensors_bytes(&two_layers(4), &bytes)?;
    Ok(())
}

fn checkpoint_of_an_empty_file() -> Result<(), Seen> {
    from_safetensors_bytes::<f64>(&[])?;
    Ok(())
}
