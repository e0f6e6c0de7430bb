//! The `.npy` array format: little-endian numeric arrays in C order, versions 1-3.
//! Declared sizes are checked against the bytes present before allocating.

use crate::error::{GraphError, GraphResult};

/// Decoded array data.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum NpyData {
    F32(Vec<f32>),
    F64(Vec<f64>),
    /// Any integer or boolean type, widened.
    Int(Vec<i64>),
    /// A type the reader skips (strings, objects); the descr is kept.
    Skipped(String),
}

/// A decoded `.npy` array.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Npy {
    pub(crate) shape: Vec<usize>,
    pub(crate) data: NpyData,
}

fn bad(file: &str, member: &str, what: impl Into<String>) -> GraphError {
    GraphError::Malformed {
        file: file.into(),
        member: Some(member.into()),
        what: what.into(),
    }
}

/// The quoted string after `'key':` in a header dict.
fn dict_value<'h>(header: &'h str, key: &str) -> Option<&'h str> {
    let at = header.find(&format!("'{key}'"))? + key.len() + 2;
    let rest = header[at..].trim_start().strip_prefix(':')?.trim_start();
    Some(rest)
}

fn parse_header(h: &str, file: &str, member: &str) -> GraphResult<(String, bool, Vec<usize>)> {
    let descr = dict_value(h, "descr")
        .and_then(|r| {
            let q = r.chars().next()?;
            (q == '\'' || q == '"').then_some(())?;
            let end = r[1..].find(q)?;
            Some(r[1..1 + end].to_string())
        })
        .ok_or_else(|| bad(file, member, format!("header has no 'descr': {h:?}")))?;
    let fortran = dict_value(h, "fortran_order")
        .map(|r| r.starts_with("True"))
        .ok_or_else(|| {
            bad(
                file,
                member,
                format!("header has no 'fortran_order': {h:?}"),
            )
        })?;
    let shape_text = dict_value(h, "shape")
        .and_then(|r| {
            let inner = r.strip_prefix('(')?;
            Some(&inner[..inner.find(')')?])
        })
        .ok_or_else(|| bad(file, member, format!("header has no 'shape' tuple: {h:?}")))?;
    let mut shape = Vec::new();
    for part in shape_text
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        let p = part.trim_end_matches('L');
        shape.push(
            p.parse::<usize>()
                .map_err(|_| bad(file, member, format!("shape entry {part:?} is not a size")))?,
        );
    }
    Ok((descr, fortran, shape))
}

/// Parses one `.npy` member.
pub(crate) fn parse(bytes: &[u8], file: &str, member: &str) -> GraphResult<Npy> {
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(bad(file, member, "not a .npy array (bad magic)"));
    }
    let (hlen, hstart): (usize, usize) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        v => return Err(bad(file, member, format!("unknown .npy version {v}"))),
    };
    let header = bytes
        .get(hstart..hstart.saturating_add(hlen))
        .ok_or_else(|| {
            bad(
                file,
                member,
                format!(
                    "header of {hlen} bytes runs past the end ({} bytes)",
                    bytes.len()
                ),
            )
        })?;
    let h = std::str::from_utf8(header).map_err(|_| bad(file, member, "header is not text"))?;
    let (descr, fortran, shape) = parse_header(h, file, member)?;
    let body = &bytes[hstart + hlen..];
    let count = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| bad(file, member, format!("shape {shape:?} overflows")))?;
    if fortran && shape.iter().filter(|&&d| d > 1).count() > 1 {
        return Err(GraphError::Unsupported {
            file: file.into(),
            member: Some(member.into()),
            what: "Fortran-ordered array".into(),
        });
    }
    let (order, kind, size) = {
        let mut c = descr.chars();
        let order = c.next().unwrap_or('?');
        let kind = c.next().unwrap_or('?');
        (order, kind, c.as_str().parse::<usize>().unwrap_or(0))
    };
    if matches!(kind, 'U' | 'S' | 'O' | 'V' | 'M' | 'm') {
        return Ok(Npy {
            shape,
            data: NpyData::Skipped(descr),
        });
    }
    let unsupported = |what: String| GraphError::Unsupported {
        file: file.into(),
        member: Some(member.into()),
        what,
    };
    if order == '>' && size > 1 {
        return Err(unsupported(format!("big-endian dtype {descr:?}")));
    }
    if !matches!(
        (kind, size),
        ('f', 4 | 8) | ('i' | 'u', 1 | 2 | 4 | 8) | ('b', 1)
    ) {
        return Err(unsupported(format!("dtype {descr:?}")));
    }
    let need = count
        .checked_mul(size)
        .ok_or_else(|| bad(file, member, format!("shape {shape:?} overflows")))?;
    if body.len() < need {
        return Err(bad(
            file,
            member,
            format!(
                "shape {shape:?} of {descr} needs {need} bytes, but {} are present",
                body.len()
            ),
        ));
    }
    let body = &body[..need];
    let data = match (kind, size) {
        ('f', 4) => NpyData::F32(
            body.chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().expect("4")))
                .collect(),
        ),
        ('f', _) => NpyData::F64(
            body.chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().expect("8")))
                .collect(),
        ),
        ('i', 1) => NpyData::Int(body.iter().map(|&b| b as i8 as i64).collect()),
        ('u' | 'b', 1) => NpyData::Int(body.iter().map(|&b| b as i64).collect()),
        ('i', 2) => NpyData::Int(
            body.chunks_exact(2)
                .map(|c| i16::from_le_bytes([c[0], c[1]]) as i64)
                .collect(),
        ),
        ('u', 2) => NpyData::Int(
            body.chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]) as i64)
                .collect(),
        ),
        ('i', 4) => NpyData::Int(
            body.chunks_exact(4)
                .map(|c| i32::from_le_bytes(c.try_into().expect("4")) as i64)
                .collect(),
        ),
        ('u', 4) => NpyData::Int(
            body.chunks_exact(4)
                .map(|c| u32::from_le_bytes(c.try_into().expect("4")) as i64)
                .collect(),
        ),
        ('i', _) => NpyData::Int(
            body.chunks_exact(8)
                .map(|c| i64::from_le_bytes(c.try_into().expect("8")))
                .collect(),
        ),
        _ => {
            let v: Vec<u64> = body
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().expect("8")))
                .collect();
            if let Some(p) = v.iter().position(|&x| x > i64::MAX as u64) {
                return Err(bad(
                    file,
                    member,
                    format!("value {} at position {p} exceeds i64", v[p]),
                ));
            }
            NpyData::Int(v.into_iter().map(|x| x as i64).collect())
        }
    };
    Ok(Npy { shape, data })
}

/// A `.npy` v1.0 file for `descr` (e.g. `"<f4"`), `shape` and raw little-endian data.
pub(crate) fn write(descr: &str, shape: &[usize], raw: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let tuple = if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let mut h = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {tuple}, }}");
    // Pad so that the data starts on a 64-byte boundary; the header ends with '\n'.
    while (10 + h.len() + 1) % 64 != 0 {
        h.push(' ');
    }
    h.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(h.len() as u16).to_le_bytes());
    out.extend_from_slice(h.as_bytes());
    out.extend_from_slice(raw);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_truncation() {
        let raw: Vec<u8> = [1.5f32, -2.0, 3.25]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let b = write("<f4", &[3], &raw);
        assert_eq!(b.len() % 64, 12);
        let a = parse(&b, "f", "m").unwrap();
        assert_eq!(a.shape, vec![3]);
        assert_eq!(a.data, NpyData::F32(vec![1.5, -2.0, 3.25]));
        let e = parse(&b[..b.len() - 1], "f", "m").unwrap_err();
        assert_eq!(e.code(), "SHADE-E0331");
        assert!(
            e.to_string().contains("needs 12 bytes, but 11 are present"),
            "{e}"
        );
        let b = write(
            "<i8",
            &[1, 2],
            &[
                7u8, 0, 0, 0, 0, 0, 0, 0, 255, 255, 255, 255, 255, 255, 255, 255,
            ],
        );
        assert_eq!(parse(&b, "f", "m").unwrap().data, NpyData::Int(vec![7, -1]));
        // A header that declares an absurd size fails before allocating.
        let b = write("<f8", &[usize::MAX / 4], &[]);
        assert_eq!(parse(&b, "f", "m").unwrap_err().code(), "SHADE-E0331");
    }
}
