//! Saving and loading parameter stores in the safetensors format, written by hand (no
//! serde): an 8-byte little-endian header length, a JSON header mapping each name to
//! `{"dtype", "shape", "data_offsets"}` (plus an optional `__metadata__` object of
//! strings), then the raw little-endian data. PyTorch (`safetensors.torch`), candle and
//! burn read and write the same files; names follow PyTorch's `state_dict`
//! (`conv1.lin.weight`).
//!
//! Saved tensors keep the store's element type (`F32` or `F64`); loading accepts
//! `F32`, `F64` and `F16`/`BF16`-free files and converts to the requested type.

use crate::ctx::Float;
use crate::error::{GnnError, GnnResult};
use crate::params::Store;
use ndarray::{ArrayD, IxDyn};
use std::collections::BTreeMap;
use std::path::Path;

fn bad(what: impl Into<String>) -> GnnError {
    GnnError::Safetensors { what: what.into() }
}

fn json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The store as safetensors bytes (tensors in the store's order, metadata
/// `{"format": "pt"}`).
pub fn to_safetensors_bytes<T: Float>(store: &Store<T>) -> Vec<u8> {
    let (dtype, size) = if std::mem::size_of::<T>() == 4 {
        ("F32", 4)
    } else {
        ("F64", 8)
    };
    let mut header = String::from("{\"__metadata__\":{\"format\":\"pt\"}");
    let mut offset = 0usize;
    for (name, v) in store.iter() {
        header.push(',');
        json_string(name, &mut header);
        let shape: Vec<String> = v.shape().iter().map(|d| d.to_string()).collect();
        let end = offset + v.len() * size;
        header.push_str(&format!(
            ":{{\"dtype\":\"{dtype}\",\"shape\":[{}],\"data_offsets\":[{offset},{end}]}}",
            shape.join(",")
        ));
        offset = end;
    }
    header.push('}');
    // Pad the header with spaces so the data start 8-byte aligned (as the reference
    // implementation does).
    while header.len() % 8 != 0 {
        header.push(' ');
    }
    let mut out = Vec::with_capacity(8 + header.len() + offset);
    out.extend_from_slice(&(header.len() as u64).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for (_, v) in store.iter() {
        for &x in v.iter() {
            if size == 4 {
                out.extend_from_slice(&(x.to_f32().unwrap_or(f32::NAN)).to_le_bytes());
            } else {
                out.extend_from_slice(&(x.to_f64().unwrap_or(f64::NAN)).to_le_bytes());
            }
        }
    }
    out
}

/// Writes the store to `path` ([`GnnError::Io`] on failure).
pub fn save_safetensors<T: Float>(store: &Store<T>, path: impl AsRef<Path>) -> GnnResult<()> {
    let path = path.as_ref();
    std::fs::write(path, to_safetensors_bytes(store)).map_err(|e| GnnError::Io {
        action: "write",
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

/// Reads a store from `path`, in the file's tensor order (sorted by data offset).
pub fn load_safetensors<T: Float>(path: impl AsRef<Path>) -> GnnResult<Store<T>> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|e| GnnError::Io {
        action: "read",
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    from_safetensors_bytes(&bytes)
}

/// A minimal JSON value: enough for safetensors headers.
#[derive(Debug)]
enum Json {
    Str(String),
    Num(f64),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
    Other,
}

struct Parser<'b> {
    b: &'b [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.b.len() && self.b[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> GnnResult<()> {
        self.ws();
        if self.b.get(self.i) == Some(&c) {
            self.i += 1;
            Ok(())
        } else {
            Err(bad(format!(
                "header: expected `{}` at byte {}",
                c as char, self.i
            )))
        }
    }

    fn value(&mut self, depth: usize) -> GnnResult<Json> {
        if depth > 8 {
            return Err(bad("header: nested too deeply"));
        }
        self.ws();
        match self.b.get(self.i) {
            Some(b'"') => self.string().map(Json::Str),
            Some(b'{') => {
                self.i += 1;
                let mut fields = Vec::new();
                self.ws();
                if self.b.get(self.i) == Some(&b'}') {
                    self.i += 1;
                    return Ok(Json::Obj(fields));
                }
                loop {
                    self.ws();
                    let k = self.string()?;
                    self.eat(b':')?;
                    let v = self.value(depth + 1)?;
                    fields.push((k, v));
                    self.ws();
                    match self.b.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {
                            self.i += 1;
                            return Ok(Json::Obj(fields));
                        }
                        _ => {
                            return Err(bad(format!(
                                "header: expected `,` or `}}` at byte {}",
                                self.i
                            )));
                        }
                    }
                }
            }
            Some(b'[') => {
                self.i += 1;
                let mut items = Vec::new();
                self.ws();
                if self.b.get(self.i) == Some(&b']') {
                    self.i += 1;
                    return Ok(Json::Arr(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    self.ws();
                    match self.b.get(self.i) {
                        Some(b',') => self.i += 1,
                        Some(b']') => {
                            self.i += 1;
                            return Ok(Json::Arr(items));
                        }
                        _ => {
                            return Err(bad(format!(
                                "header: expected `,` or `]` at byte {}",
                                self.i
                            )));
                        }
                    }
                }
            }
            Some(c) if c.is_ascii_digit() || *c == b'-' => {
                let s = self.i;
                while self.i < self.b.len()
                    && matches!(
                        self.b[self.i],
                        b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'
                    )
                {
                    self.i += 1;
                }
                std::str::from_utf8(&self.b[s..self.i])
                    .ok()
                    .and_then(|t| t.parse().ok())
                    .map(Json::Num)
                    .ok_or_else(|| bad(format!("header: bad number at byte {s}")))
            }
            Some(_) => {
                for w in ["true", "false", "null"] {
                    if self.b[self.i..].starts_with(w.as_bytes()) {
                        self.i += w.len();
                        return Ok(Json::Other);
                    }
                }
                Err(bad(format!("header: unexpected byte at {}", self.i)))
            }
            None => Err(bad("header: unexpected end")),
        }
    }

    fn string(&mut self) -> GnnResult<String> {
        self.eat(b'"')?;
        let mut out = Vec::new();
        loop {
            let c = *self
                .b
                .get(self.i)
                .ok_or_else(|| bad("header: unterminated string"))?;
            self.i += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let e = *self
                        .b
                        .get(self.i)
                        .ok_or_else(|| bad("header: unterminated escape"))?;
                    self.i += 1;
                    match e {
                        b'n' => out.push(b'\n'),
                        b't' => out.push(b'\t'),
                        b'r' => out.push(b'\r'),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'u' => {
                            let hex = self
                                .b
                                .get(self.i..self.i + 4)
                                .and_then(|h| std::str::from_utf8(h).ok())
                                .and_then(|h| u32::from_str_radix(h, 16).ok())
                                .ok_or_else(|| bad("header: bad \\u escape"))?;
                            self.i += 4;
                            let ch = char::from_u32(hex).unwrap_or('\u{fffd}');
                            let mut buf = [0; 4];
                            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                        }
                        other => out.push(other),
                    }
                }
                c => out.push(c),
            }
        }
        String::from_utf8(out).map_err(|_| bad("header: a string is not UTF-8"))
    }
}

fn usize_list(v: &Json, what: &str, name: &str) -> GnnResult<Vec<usize>> {
    match v {
        Json::Arr(items) => items
            .iter()
            .map(|x| match x {
                Json::Num(n) if *n >= 0.0 && n.fract() == 0.0 && *n < 9.0e15 => Ok(*n as usize),
                _ => Err(bad(format!("`{name}`: `{what}` holds a non-integer"))),
            })
            .collect(),
        _ => Err(bad(format!("`{name}`: `{what}` is not a list"))),
    }
}

/// Parses safetensors bytes into a store (tensors ordered by data offset), converting
/// `F32`/`F64` data to `T`.
pub fn from_safetensors_bytes<T: Float>(bytes: &[u8]) -> GnnResult<Store<T>> {
    let len_bytes: [u8; 8] = bytes
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| bad("shorter than the 8-byte header length"))?;
    let hlen = u64::from_le_bytes(len_bytes);
    let data_start = 8usize
        .checked_add(usize::try_from(hlen).unwrap_or(usize::MAX))
        .filter(|&e| e <= bytes.len())
        .ok_or_else(|| {
            bad(format!(
                "header length {hlen} exceeds the file ({} bytes)",
                bytes.len()
            ))
        })?;
    let mut p = Parser {
        b: &bytes[8..data_start],
        i: 0,
    };
    let Json::Obj(fields) = p.value(0)? else {
        return Err(bad("header is not a JSON object"));
    };
    let data = &bytes[data_start..];
    let mut tensors = BTreeMap::new();
    for (name, v) in fields {
        if name == "__metadata__" {
            continue;
        }
        let Json::Obj(f) = v else {
            return Err(bad(format!("`{name}` is not an object")));
        };
        let get = |k: &str| f.iter().find(|(n, _)| n == k).map(|(_, v)| v);
        let dtype = match get("dtype") {
            Some(Json::Str(s)) => s.as_str(),
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
        let size = match dtype {
            "F32" => 4,
            "F64" => 8,
            other => {
                return Err(bad(format!(
                    "`{name}` has dtype {other}; only F32 and F64 are supported"
                )));
            }
        };
        let count = shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .ok_or_else(|| bad(format!("`{name}`: shape {shape:?} overflows")))?;
        let (s, e) = match off.as_slice() {
            [s, e] if s <= e && *e <= data.len() => (*s, *e),
            _ => {
                return Err(bad(format!(
                    "`{name}`: data_offsets {off:?} outside the data ({} bytes)",
                    data.len()
                )));
            }
        };
        if count.checked_mul(size) != Some(e - s) {
            return Err(bad(format!(
                "`{name}`: shape {shape:?} needs {count} values, the data hold {} bytes",
                e - s
            )));
        }
        let raw = &data[s..e];
        let vals: Vec<T> = if size == 4 {
            raw.chunks_exact(4)
                .map(|c| T::cst(f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]]))))
                .collect()
        } else {
            raw.chunks_exact(8)
                .map(|c| T::cst(f64::from_le_bytes(c.try_into().expect("8 bytes"))))
                .collect()
        };
        let arr = ArrayD::from_shape_vec(IxDyn(&shape), vals)
            .map_err(|e| bad(format!("`{name}`: {e}")))?;
        tensors.insert((s, name), arr);
    }
    let mut store = Store::new();
    for ((_, name), v) in tensors {
        store.push(name, v);
    }
    Ok(store)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn round_trip_and_known_bytes() {
        let s = Store::new()
            .with(
                "conv1.lin.weight",
                array![[1.0f32, -2.0], [0.5, 3.0]].into_dyn(),
            )
            .with("conv1.bias", array![0.25f32].into_dyn());
        let b = to_safetensors_bytes(&s);
        let hlen = u64::from_le_bytes(b[..8].try_into().unwrap()) as usize;
        assert_eq!(hlen % 8, 0);
        let header = std::str::from_utf8(&b[8..8 + hlen]).unwrap();
        assert!(
            header.contains(
                r#""conv1.lin.weight":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}"#
            ),
            "{header}"
        );
        assert_eq!(&b[8 + hlen..8 + hlen + 4], &1.0f32.to_le_bytes());
        let back: Store<f32> = from_safetensors_bytes(&b).unwrap();
        assert_eq!(back, s);
        // Conversion to f64 on load.
        let back64: Store<f64> = from_safetensors_bytes(&b).unwrap();
        assert_eq!(back64.get("conv1.lin.weight").unwrap()[[1, 1]], 3.0);
    }

    #[test]
    fn a_file_written_by_the_reference_implementation() {
        // `safetensors.torch.save_file({"b": torch.tensor([1., 2.], dtype=torch.float64),
        // "a": torch.zeros(1, 1)})`: keys sorted, F64 and F32 mixed, data by offset.
        let header = r#"{"a":{"dtype":"F32","shape":[1,1],"data_offsets":[16,20]},"b":{"dtype":"F64","shape":[2],"data_offsets":[0,16]}}"#;
        let mut b = (header.len() as u64).to_le_bytes().to_vec();
        b.extend_from_slice(header.as_bytes());
        b.extend_from_slice(&1.0f64.to_le_bytes());
        b.extend_from_slice(&2.0f64.to_le_bytes());
        b.extend_from_slice(&0.0f32.to_le_bytes());
        let s: Store<f64> = from_safetensors_bytes(&b).unwrap();
        assert_eq!(s.names(), ["b", "a"]);
        assert_eq!(s.get("b").unwrap().as_slice().unwrap(), &[1.0, 2.0]);
    }

    #[test]
    fn malformed_input_is_a_coded_error() {
        let cases: Vec<Vec<u8>> = vec![
            vec![1, 2, 3],
            {
                let mut b = 100u64.to_le_bytes().to_vec();
                b.extend_from_slice(b"{}");
                b
            },
            {
                let h = r#"{"a":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}}"#;
                let mut b = (h.len() as u64).to_le_bytes().to_vec();
                b.extend_from_slice(h.as_bytes());
                b.extend_from_slice(&[0; 8]);
                b
            },
            {
                let h = r#"{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}"#;
                let mut b = (h.len() as u64).to_le_bytes().to_vec();
                b.extend_from_slice(h.as_bytes());
                b.extend_from_slice(&[0; 8]);
                b
            },
            {
                let h = r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]"#;
                let mut b = (h.len() as u64).to_le_bytes().to_vec();
                b.extend_from_slice(h.as_bytes());
                b
            },
        ];
        for c in cases {
            let e = from_safetensors_bytes::<f32>(&c).unwrap_err();
            assert_eq!(e.code(), "SHADE-E0408", "{e}");
        }
        let e = load_safetensors::<f32>("/nonexistent/x.safetensors").unwrap_err();
        assert_eq!(e.code(), "SHADE-E0407");
    }
}
