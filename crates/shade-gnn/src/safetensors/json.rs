//! A minimal JSON parser for safetensors headers (no serde): objects, arrays,
//! strings with escapes, numbers, `true` / `false` / `null`; nesting bounded, duplicate
//! keys refused, every error a `GnnError::Safetensors` with the byte offset.

use super::bad;
use crate::error::GnnResult;

/// JSON text of a string, escaped.
pub(super) fn string(s: &str, out: &mut String) {
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

/// A minimal JSON value: enough for safetensors headers.
#[derive(Debug)]
pub(super) enum Json {
    Str(String),
    Num(f64),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
    Other,
}

pub(super) struct Parser<'b> {
    pub(super) b: &'b [u8],
    pub(super) i: usize,
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

    pub(super) fn value(&mut self, depth: usize) -> GnnResult<Json> {
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
                    if fields.iter().any(|(n, _)| *n == k) {
                        return Err(bad(format!("header: key `{k}` appears twice")));
                    }
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
