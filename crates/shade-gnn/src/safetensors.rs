//! Saving and loading parameter stores in the safetensors format: an 8-byte
//! little-endian header length, a JSON header mapping each name to
//! `{"dtype", "shape", "data_offsets"}` (plus an optional `__metadata__` object of
//! strings), then the raw little-endian data. PyTorch (`safetensors.torch`), candle and
//! burn read and write the same files; names follow PyTorch's `state_dict`
//! (`conv1.lin.weight`), so a shade model's file loads into the same PyTorch / PyG
//! model with `load_state_dict`, and the other way round.
//!
//! Written by hand (no serde), with the reference implementation's rules:
//!
//! - **dtypes**: the format's full set (`BOOL`, `U8`..`U64`, `I8`..`I64`, `F16`,
//!   `BF16`, `F32`, `F64`, the `F8_*`, `F6_*`, `F4` formats, `C64`) is understood and
//!   validated; every real-valued one (all but complex, sub-byte and the FNUZ / E8M0
//!   scale formats) is converted to the store's element type on loading, so PyTorch's
//!   `I64` `num_batches_tracked`, half and bfloat16 checkpoints load.
//! - **validation**: a header of at most 100 MB that starts with `{`, valid UTF-8 JSON
//!   without duplicate keys, string-valued `__metadata__`, a known dtype and a
//!   non-negative shape per tensor, offsets that tile the data exactly (in offset
//!   order, each tensor starting where the previous one ends: no overlap, no gap, no
//!   trailing bytes), and a byte length that agrees with dtype × shape. Every violation
//!   is `SHADE-E0408` naming the tensor and the numbers.
//! - **writing**: the store's element type (`F32` or `F64`), except PyTorch's
//!   `*.num_batches_tracked` counters, written as `I64`; metadata `{"format": "pt"}`;
//!   the header padded with spaces so that the data start 8-byte aligned.
//!
//! ```
//! use shade_gnn::layers::{BatchNorm, Chain, GCNConv};
//! use shade_gnn::{model_from_safetensors_bytes, model_to_safetensors_bytes, Layer};
//!
//! let model = Chain::<f32>::new()
//!     .add("conv1", GCNConv::new(4, 8))
//!     .add("bn", BatchNorm::new(8));
//! let (params, state) = model.init(&mut shade_gnn::rand::SeedableRng::seed_from_u64(0));
//! let bytes = model_to_safetensors_bytes(&params, &state);
//! let (p, s) = model_from_safetensors_bytes(&model, &bytes)?;
//! assert_eq!((p, s), (params, state));
//! # Ok::<(), shade_gnn::GnnError>(())
//! ```

mod dtype;
mod json;

use crate::ctx::Float;
use crate::error::{GnnError, GnnResult};
use crate::layer::Layer;
use crate::params::{Params, State, Store};
use dtype::Dtype;
use json::{Json, Parser};
use ndarray::{ArrayD, IxDyn};
use std::path::Path;

/// The reference implementation's limit on the header length.
const MAX_HEADER: u64 = 100_000_000;

fn bad(what: impl Into<String>) -> GnnError {
    GnnError::Safetensors { what: what.into() }
}

/// Whether `name` is PyTorch's BatchNorm counter, which `state_dict` holds as `I64`.
fn is_counter(name: &str) -> bool {
    name == "num_batches_tracked" || name.ends_with(".num_batches_tracked")
}

/// The safetensors bytes of one or more stores, in order (tensors in each store's
/// order, metadata `{"format": "pt"}`).
fn bytes_of<T: Float>(stores: &[&Store<T>]) -> Vec<u8> {
    let float = if std::mem::size_of::<T>() == 4 {
        ("F32", 4)
    } else {
        ("F64", 8)
    };
    // A counter is written as I64 when every value is an integer that fits.
    let dtype_of = |name: &str, v: &ArrayD<T>| {
        let integral = v.iter().all(|x| {
            x.to_f64()
                .is_some_and(|f| f.fract() == 0.0 && f.abs() < 9.2e18)
        });
        if is_counter(name) && integral {
            ("I64", 8)
        } else {
            float
        }
    };
    let tensors = || stores.iter().flat_map(|s| s.iter());
    let mut header = String::from("{\"__metadata__\":{\"format\":\"pt\"}");
    let mut offset = 0usize;
    for (name, v) in tensors() {
        let (dtype, size) = dtype_of(name, v);
        header.push(',');
        json::string(name, &mut header);
        let shape: Vec<String> = v.shape().iter().map(|d| d.to_string()).collect();
        let end = offset + v.len() * size;
        header.push_str(&format!(
            ":{{\"dtype\":\"{dtype}\",\"shape\":[{}],\"data_offsets\":[{offset},{end}]}}",
            shape.join(",")
        ));
        offset = end;
    }
    header.push('}');
    while !header.len().is_multiple_of(8) {
        header.push(' ');
    }
    let mut out = Vec::with_capacity(8 + header.len() + offset);
    out.extend_from_slice(&(header.len() as u64).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for (name, v) in tensors() {
        match dtype_of(name, v).0 {
            "I64" => v.iter().for_each(|x| {
                out.extend_from_slice(&(x.to_f64().unwrap_or(0.0) as i64).to_le_bytes())
            }),
            "F32" => v
                .iter()
                .for_each(|x| out.extend_from_slice(&x.to_f32().unwrap_or(f32::NAN).to_le_bytes())),
            _ => v
                .iter()
                .for_each(|x| out.extend_from_slice(&x.to_f64().unwrap_or(f64::NAN).to_le_bytes())),
        }
    }
    out
}

/// The store as safetensors bytes (tensors in the store's order, metadata
/// `{"format": "pt"}`).
pub fn to_safetensors_bytes<T: Float>(store: &Store<T>) -> Vec<u8> {
    bytes_of(&[store])
}

/// A model's parameters and state in one safetensors file, as PyTorch's `state_dict`
/// holds them (parameters, then state such as BatchNorm's running statistics).
pub fn model_to_safetensors_bytes<T: Float>(params: &Params<T>, state: &State<T>) -> Vec<u8> {
    bytes_of(&[params, state])
}

fn write(path: &Path, bytes: Vec<u8>) -> GnnResult<()> {
    std::fs::write(path, bytes).map_err(|e| GnnError::Io {
        action: "write",
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

fn read(path: &Path) -> GnnResult<Vec<u8>> {
    std::fs::read(path).map_err(|e| GnnError::Io {
        action: "read",
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

/// Writes the store to `path` ([`GnnError::Io`] on failure).
pub fn save_safetensors<T: Float>(store: &Store<T>, path: impl AsRef<Path>) -> GnnResult<()> {
    write(path.as_ref(), to_safetensors_bytes(store))
}

/// Writes a model's parameters and state to `path` ([`model_to_safetensors_bytes`]).
pub fn save_model_safetensors<T: Float>(
    params: &Params<T>,
    state: &State<T>,
    path: impl AsRef<Path>,
) -> GnnResult<()> {
    write(path.as_ref(), model_to_safetensors_bytes(params, state))
}

/// Reads a store from `path`, in the file's tensor order (sorted by data offset).
pub fn load_safetensors<T: Float>(path: impl AsRef<Path>) -> GnnResult<Store<T>> {
    from_safetensors_bytes(&read(path.as_ref())?)
}

/// Reads the parameters and state of `model` from a file written by
/// [`save_model_safetensors`] or by PyTorch (`safetensors.torch.save_file(
/// model.state_dict(), path)`): [`model_from_safetensors_bytes`].
pub fn load_model_safetensors<T: Float, L: Layer<T> + ?Sized>(
    model: &L,
    path: impl AsRef<Path>,
) -> GnnResult<(Params<T>, State<T>)> {
    model_from_safetensors_bytes(model, &read(path.as_ref())?)
}

/// Splits the tensors of safetensors bytes into `model`'s parameters and state, each
/// checked against the names and shapes of `model.init` and put in its order.
/// PyTorch's BatchNorm counters (`*.num_batches_tracked`) are dropped: shade's
/// running statistics use a fixed momentum and never read them. A missing, extra or
/// misshapen tensor is a coded error (`SHADE-E0401`, `SHADE-E0403`, `SHADE-E0402`).
pub fn model_from_safetensors_bytes<T: Float, L: Layer<T> + ?Sized>(
    model: &L,
    bytes: &[u8],
) -> GnnResult<(Params<T>, State<T>)> {
    let mut rng = rand::SeedableRng::seed_from_u64(0);
    let (p_ref, s_ref) = model.init(&mut rng);
    let all: Store<T> = from_safetensors_bytes(bytes)?;
    let (mut params, mut state) = (Store::new(), Store::new());
    for (name, v) in all.names().iter().zip(all.values()) {
        if s_ref.position(name).is_some() {
            state.push(name.clone(), v.clone());
        } else if p_ref.position(name).is_some() || !is_counter(name) {
            params.push(name.clone(), v.clone());
        }
    }
    Ok((params.conform_to(&p_ref)?, state.conform_to(&s_ref)?))
}

/// A tensor's header entry, validated.
struct Entry {
    name: String,
    dtype: Dtype,
    shape: Vec<usize>,
    start: usize,
    end: usize,
}

/// A JSON value for messages.
fn describe(v: &Json) -> String {
    match v {
        Json::Num(n) => n.to_string(),
        Json::Str(s) => format!("{s:?}"),
        Json::Arr(_) => "a list".into(),
        Json::Obj(_) => "an object".into(),
        Json::Other => "a literal".into(),
    }
}

fn usize_list(v: &Json, what: &str, name: &str) -> GnnResult<Vec<usize>> {
    match v {
        Json::Arr(items) => items
            .iter()
            .map(|x| match x {
                Json::Num(n) if *n >= 0.0 && n.fract() == 0.0 && *n < 9.0e15 => Ok(*n as usize),
                _ => Err(bad(format!(
                    "`{name}`: `{what}` holds {}, not an integer in 0..2^53",
                    describe(x)
                ))),
            })
            .collect(),
        _ => Err(bad(format!("`{name}`: `{what}` is not a list"))),
    }
}

fn entry(name: String, v: Json) -> GnnResult<Entry> {
    let Json::Obj(f) = v else {
        return Err(bad(format!("`{name}` is not an object")));
    };
    let get = |k: &str| f.iter().find(|(n, _)| n == k).map(|(_, v)| v);
    let dtype = match get("dtype") {
        Some(Json::Str(s)) => {
            Dtype::parse(s).ok_or_else(|| bad(format!("`{name}` has the unknown dtype {s:?}")))?
        }
        _ => return Err(bad(format!("`{name}` has no dtype"))),
    };
    let shape = usize_list(
        get("shape").ok_or_else(|| bad(format!("`{name}` has no shape")))?,
        "shape",
        &name,
    )?;
    let off = usize_list(
        get("data_offsets").ok_or_else(|| bad(format!("`{name}` has no data_offsets")))?,
        "data_offsets",
        &name,
    )?;
    let [start, end] = off[..] else {
        return Err(bad(format!(
            "`{name}`: data_offsets {off:?} is not a [begin, end] pair"
        )));
    };
    Ok(Entry {
        name,
        dtype,
        shape,
        start,
        end,
    })
}

/// Parses and validates the header; the entries come back in offset order.
fn header(bytes: &[u8]) -> GnnResult<(Vec<Entry>, usize)> {
    let len_bytes: [u8; 8] = bytes
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| bad("shorter than the 8-byte header length"))?;
    let hlen = u64::from_le_bytes(len_bytes);
    if hlen > MAX_HEADER {
        return Err(bad(format!(
            "header length {hlen} exceeds the format's limit of {MAX_HEADER} bytes"
        )));
    }
    let data_start = 8 + hlen as usize;
    if data_start > bytes.len() {
        return Err(bad(format!(
            "header length {hlen} exceeds the file ({} bytes)",
            bytes.len()
        )));
    }
    let text = &bytes[8..data_start];
    if std::str::from_utf8(text).is_err() {
        return Err(bad("header is not UTF-8"));
    }
    if text.first() != Some(&b'{') {
        return Err(bad("header does not start with `{`"));
    }
    let mut p = Parser { b: text, i: 0 };
    let Json::Obj(fields) = p.value(0)? else {
        return Err(bad("header is not a JSON object"));
    };
    if text[p.i..].iter().any(|c| !c.is_ascii_whitespace()) {
        return Err(bad(format!(
            "header: bytes after the JSON object at byte {}",
            p.i
        )));
    }
    let mut entries = Vec::with_capacity(fields.len());
    for (name, v) in fields {
        if name == "__metadata__" {
            let ok = matches!(&v, Json::Obj(m) if m.iter().all(|(_, x)| matches!(x, Json::Str(_))));
            if !ok {
                return Err(bad("`__metadata__` must map strings to strings"));
            }
            continue;
        }
        entries.push(entry(name, v)?);
    }
    entries.sort_by_key(|e| (e.start, e.end));
    Ok((entries, data_start))
}

/// Parses safetensors bytes into a store (tensors ordered by data offset), converting
/// every real-valued dtype to `T`. Every violation of the format is `SHADE-E0408`.
pub fn from_safetensors_bytes<T: Float>(bytes: &[u8]) -> GnnResult<Store<T>> {
    let (entries, data_start) = header(bytes)?;
    let data = &bytes[data_start..];
    // The tensors must tile the data: each starts where the previous one ends.
    let mut at = 0usize;
    let mut previous = "the start of the data".to_string();
    for e in &entries {
        if e.start != at || e.end < e.start {
            let why = if e.start < at {
                "overlaps"
            } else if e.end < e.start {
                "ends before it begins"
            } else {
                "leaves a gap"
            };
            return Err(bad(format!(
                "`{}`: data_offsets [{}, {}] {why}: it must start at byte {at}, where {previous} ends",
                e.name, e.start, e.end
            )));
        }
        let bits = e
            .shape
            .iter()
            .try_fold(e.dtype.bits, |a, &d| a.checked_mul(d))
            .ok_or_else(|| bad(format!("`{}`: shape {:?} overflows", e.name, e.shape)))?;
        if !bits.is_multiple_of(8) || bits / 8 != e.end - e.start {
            let needs = if bits.is_multiple_of(8) {
                format!("{} bytes", bits / 8)
            } else {
                format!("{bits} bits (not whole bytes)")
            };
            return Err(bad(format!(
                "`{}`: shape {:?} of {} needs {needs}, but data_offsets [{}, {}] hold {} bytes",
                e.name,
                e.shape,
                e.dtype.name,
                e.start,
                e.end,
                e.end - e.start
            )));
        }
        at = e.end;
        previous = format!("`{}`", e.name);
    }
    if at != data.len() {
        return Err(bad(format!(
            "the tensors cover {at} bytes of data, but the file holds {} after the header",
            data.len()
        )));
    }
    let mut store = Store::new();
    for e in entries {
        let raw = &data[e.start..e.end];
        let values = match e.dtype.decode(raw) {
            Some(Ok(v)) => v,
            Some(Err(i)) => {
                return Err(bad(format!(
                    "`{}`: BOOL byte {} at element {i} is not 0 or 1",
                    e.name, raw[i]
                )));
            }
            None => {
                return Err(bad(format!(
                    "`{}` has dtype {}, which has no real-number reading (shade loads {})",
                    e.name,
                    e.dtype.name,
                    Dtype::REAL
                )));
            }
        };
        let arr = ArrayD::from_shape_vec(IxDyn(&e.shape), values.into_iter().map(T::cst).collect())
            .expect("the byte length was checked against the shape");
        store.push(e.name, arr);
    }
    Ok(store)
}

#[cfg(test)]
mod tests;
