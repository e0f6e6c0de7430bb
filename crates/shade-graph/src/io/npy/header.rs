//! The `.npy` header: magic, version, length and the Python dict literal
//! `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`, parsed with a small
//! bounded parser (no `eval`), and written as numpy writes it (padded so that the data
//! start on a 64-byte boundary).

use crate::error::{GraphError, GraphResult};

/// numpy's limit on the number of dimensions.
const MAX_RANK: usize = 64;

/// A supported element type as the header declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Known {
    /// `f`, `i`, `u` or `b`.
    pub(crate) kind: char,
    /// Bytes per element.
    pub(crate) size: usize,
    /// `>` byte order.
    pub(crate) big_endian: bool,
}

impl Known {
    /// The descr text, for messages (`"<f4"`).
    pub(crate) fn text(&self) -> String {
        let order = match (self.size, self.big_endian) {
            (1, _) => '|',
            (_, true) => '>',
            _ => '<',
        };
        format!("{order}{}{}", self.kind, self.size)
    }
}

/// The declared element type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Descr {
    /// One of the supported numeric types.
    Known(Known),
    /// Anything else (strings, objects, complex, `float16`, structured), as written.
    Other(String),
}

/// A parsed header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) descr: Descr,
    pub(crate) fortran: bool,
    pub(crate) shape: Vec<usize>,
    /// Offset of the first data byte.
    pub(crate) data_start: usize,
}

/// A Python literal of the header dict.
#[derive(Debug, Clone, PartialEq)]
enum Lit {
    Str(String),
    Bool(bool),
    Int(u64),
    Tuple(Vec<Lit>),
    List(Vec<Lit>),
    Dict(Vec<(Lit, Lit)>),
}

struct Parser<'h> {
    s: &'h [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.s.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.i).copied()
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(format!("expected `{}` at byte {}", c as char, self.i))
        }
    }

    /// Items up to `close`, separated by commas (a trailing comma allowed).
    fn items(&mut self, close: u8, depth: usize) -> Result<Vec<Lit>, String> {
        let mut out = Vec::new();
        loop {
            if self.peek() == Some(close) {
                self.i += 1;
                return Ok(out);
            }
            out.push(self.value(depth + 1)?);
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(c) if c == close => {}
                _ => {
                    return Err(format!(
                        "expected `,` or `{}` at byte {}",
                        close as char, self.i
                    ));
                }
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<Lit, String> {
        if depth > 8 {
            return Err("nested too deeply".into());
        }
        match self.peek() {
            Some(q @ (b'\'' | b'"')) => {
                self.i += 1;
                let start = self.i;
                let len = self.s[start..]
                    .iter()
                    .position(|&c| c == q || c == b'\\')
                    .ok_or("unterminated string")?;
                self.i = start + len;
                if self.s[self.i] == b'\\' {
                    return Err("escapes in strings are not part of a numpy header".into());
                }
                self.i += 1;
                let text = std::str::from_utf8(&self.s[start..start + len])
                    .map_err(|_| "a string is not UTF-8")?;
                Ok(Lit::Str(text.into()))
            }
            Some(b'(') => {
                self.i += 1;
                self.items(b')', depth).map(Lit::Tuple)
            }
            Some(b'[') => {
                self.i += 1;
                self.items(b']', depth).map(Lit::List)
            }
            Some(b'{') => {
                self.i += 1;
                let mut fields = Vec::new();
                loop {
                    if self.peek() == Some(b'}') {
                        self.i += 1;
                        return Ok(Lit::Dict(fields));
                    }
                    let k = self.value(depth + 1)?;
                    self.expect(b':')?;
                    let v = self.value(depth + 1)?;
                    fields.push((k, v));
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b'}') => {}
                        None => return Err("unexpected end".into()),
                        _ => return Err(format!("expected `,` or `}}` at byte {}", self.i)),
                    }
                }
            }
            Some(c) if c.is_ascii_digit() => {
                let start = self.i;
                while self.s.get(self.i).is_some_and(u8::is_ascii_digit) {
                    self.i += 1;
                }
                let digits = std::str::from_utf8(&self.s[start..self.i]).expect("ASCII digits");
                // Python 2 wrote long integers as `3L`.
                if self.s.get(self.i) == Some(&b'L') {
                    self.i += 1;
                }
                digits
                    .parse()
                    .map(Lit::Int)
                    .map_err(|_| format!("size {digits} does not fit 64 bits"))
            }
            Some(_) => {
                for (word, v) in [("True", true), ("False", false)] {
                    if self.s[self.i..].starts_with(word.as_bytes()) {
                        self.i += word.len();
                        return Ok(Lit::Bool(v));
                    }
                }
                Err(format!(
                    "unexpected byte {:?} at {}",
                    self.s[self.i] as char, self.i
                ))
            }
            None => Err("unexpected end".into()),
        }
    }
}

/// Parses the type string of a simple dtype (`<f4`, `|b1`, `>u8`, ...).
fn descr(text: &str) -> Descr {
    let b = text.as_bytes();
    let other = || Descr::Other(text.to_string());
    let (Some(&order), Some(&kind)) = (b.first(), b.get(1)) else {
        return other();
    };
    let Some(size) = std::str::from_utf8(&b[2..])
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
    else {
        return other();
    };
    let kind = kind as char;
    let big_endian = match order {
        b'<' => false,
        b'>' => true,
        b'|' if size == 1 => false,
        _ => return other(),
    };
    if super::supported(kind, size) {
        Descr::Known(Known {
            kind,
            size,
            big_endian,
        })
    } else {
        other()
    }
}

/// Parses the header of `.npy` bytes. Everything wrong is `SHADE-E0331`, naming `file`
/// (and the archive `member`).
pub(crate) fn parse_header(bytes: &[u8], file: &str, member: Option<&str>) -> GraphResult<Header> {
    let bad = |what: String| GraphError::Malformed {
        file: file.into(),
        member: member.map(Into::into),
        what,
    };
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(bad("not a .npy array (bad magic)".into()));
    }
    let (hlen, hstart): (usize, usize) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        v => return Err(bad(format!("unknown .npy version {v}"))),
    };
    let header = bytes
        .get(hstart..hstart.saturating_add(hlen))
        .ok_or_else(|| {
            bad(format!(
                "header of {hlen} bytes runs past the end ({} bytes)",
                bytes.len()
            ))
        })?;
    let mut p = Parser { s: header, i: 0 };
    let dict = p.value(0).map_err(|e| bad(format!("header: {e}")))?;
    let text = String::from_utf8_lossy(header);
    let text = text.trim_end();
    let Lit::Dict(fields) = dict else {
        return Err(bad(format!("header is not a dict: {text:?}")));
    };
    let (mut d, mut fortran, mut shape) = (None, None, None);
    for (k, v) in fields {
        match (k, v) {
            (Lit::Str(k), Lit::Str(s)) if k == "descr" => d = Some(descr(&s)),
            // A list is a structured dtype: the reader does not decode records.
            (Lit::Str(k), Lit::List(_)) if k == "descr" => {
                d = Some(Descr::Other("structured dtype".into()))
            }
            (Lit::Str(k), Lit::Bool(f)) if k == "fortran_order" => fortran = Some(f),
            (Lit::Str(k), Lit::Tuple(dims)) if k == "shape" => {
                let dims: Option<Vec<usize>> = dims
                    .iter()
                    .map(|d| match d {
                        Lit::Int(n) => usize::try_from(*n).ok(),
                        _ => None,
                    })
                    .collect();
                let dims =
                    dims.ok_or_else(|| bad(format!("shape is not a tuple of sizes: {text:?}")))?;
                if dims.len() > MAX_RANK {
                    return Err(bad(format!(
                        "rank {} exceeds numpy's {MAX_RANK}",
                        dims.len()
                    )));
                }
                shape = Some(dims);
            }
            (k, _) => return Err(bad(format!("unexpected header entry {k:?}: {text:?}"))),
        }
    }
    let missing = |key: &str| bad(format!("header has no '{key}': {text:?}"));
    Ok(Header {
        descr: d.ok_or_else(|| missing("descr"))?,
        fortran: fortran.ok_or_else(|| missing("fortran_order"))?,
        shape: shape.ok_or_else(|| missing("shape"))?,
        data_start: hstart + hlen,
    })
}

/// Magic, version, length and the header dict for `descr`, `fortran` and `shape`,
/// padded with spaces and ended by `\n` so that the data start 64-byte aligned.
/// Version 1.0, or 2.0 if the header does not fit 64 KiB.
pub(crate) fn write(descr: &str, fortran: bool, shape: &[usize]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let tuple = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let order = if fortran { "True" } else { "False" };
    let dict = format!("{{'descr': '{descr}', 'fortran_order': {order}, 'shape': {tuple}, }}");
    // Spaces and a final '\n' up to a multiple of 64 bytes, counting the prefix.
    let padded = |prefix: usize| {
        let mut h = dict.clone();
        while !(prefix + h.len() + 1).is_multiple_of(64) {
            h.push(' ');
        }
        h.push('\n');
        h
    };
    let h1 = padded(10);
    let v1 = h1.len() <= u16::MAX as usize;
    let (prefix, h) = if v1 { (10, h1) } else { (12, padded(12)) };
    let mut out = Vec::with_capacity(prefix + h.len());
    out.extend_from_slice(b"\x93NUMPY");
    if v1 {
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&(h.len() as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&[2, 0]);
        out.extend_from_slice(&(h.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(h.as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(dict: &str) -> GraphResult<Header> {
        let mut b = b"\x93NUMPY\x01\x00".to_vec();
        b.extend_from_slice(&(dict.len() as u16).to_le_bytes());
        b.extend_from_slice(dict.as_bytes());
        parse_header(&b, "h.npy", None)
    }

    #[test]
    fn parses_what_numpy_writes() {
        let h =
            header("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }     \n").unwrap();
        let f8 = Known {
            kind: 'f',
            size: 8,
            big_endian: false,
        };
        assert_eq!(
            (h.descr, h.fortran, h.shape),
            (Descr::Known(f8), true, vec![2, 3])
        );
        // Scalars, 1-tuples, Python 2 longs, double quotes, any key order.
        let h = header(r#"{"shape": (), "fortran_order": False, "descr": "|b1"}"#).unwrap();
        assert_eq!(h.shape, Vec::<usize>::new());
        assert_eq!(
            header("{'descr': '>i2', 'fortran_order': False, 'shape': (5L,)}")
                .unwrap()
                .shape,
            [5]
        );
        assert_eq!(
            header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}")
                .unwrap()
                .descr,
            Descr::Other("structured dtype".into())
        );
        assert_eq!(
            header("{'descr': '<c16', 'fortran_order': False, 'shape': (1,)}")
                .unwrap()
                .descr,
            Descr::Other("<c16".into())
        );
        // The written header is what numpy writes, and parses back.
        let w = write("<i4", false, &[7]);
        assert_eq!(w.len(), 128);
        assert!(w.starts_with(
            b"\x93NUMPY\x01\x00v\x00{'descr': '<i4', 'fortran_order': False, 'shape': (7,), }"
        ));
        let h = parse_header(&w, "w", None).unwrap();
        assert_eq!((h.shape, h.data_start), (vec![7], 128));
        // Versions 2 and 3 store the length in four bytes.
        let mut v2 = b"\x93NUMPY\x02\x00".to_vec();
        v2.extend_from_slice(&(w.len() as u32 - 10).to_le_bytes());
        v2.extend_from_slice(&w[10..]);
        let h = parse_header(&v2, "w", None).unwrap();
        assert_eq!((h.shape, h.data_start), (vec![7], 130));
    }

    #[test]
    fn malformed_headers_are_coded() {
        for (dict, what) in [
            ("{'descr': '<f8', 'shape': (2,)}", "no 'fortran_order'"),
            (
                "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), 'x': 1}",
                "unexpected header entry",
            ),
            (
                "{'descr': '<f8', 'fortran_order': False, 'shape': (-2,)}",
                "unexpected byte '-'",
            ),
            (
                "{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999,)}",
                "does not fit",
            ),
            (
                "{'descr': '<f8', 'fortran_order': False, 'shape': ('a',)}",
                "not a tuple of sizes",
            ),
            (
                "{'descr': '<f8', 'fortran_order': False, 'shape': (2,)",
                "unexpected end",
            ),
            ("[1, 2]", "not a dict"),
            ("{'descr': 'a\\'b'}", "escapes"),
        ] {
            let e = header(dict).unwrap_err();
            assert_eq!(e.code(), "SHADE-E0331");
            assert!(e.to_string().contains(what), "{dict}: {e}");
        }
        let deep = format!("{}{}", "(".repeat(20), ")".repeat(20));
        assert!(
            header(&deep)
                .unwrap_err()
                .to_string()
                .contains("nested too deeply")
        );
        let rank = format!(
            "{{'descr': '<f8', 'fortran_order': False, 'shape': ({})}}",
            "1, ".repeat(65)
        );
        assert!(header(&rank).unwrap_err().to_string().contains("rank 65"));
    }
}
