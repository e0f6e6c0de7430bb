//! A reader for the flat JSON objects of the peer scripts' output lines (string,
//! number, boolean and null values; no nesting), and for the number arrays of
//! criterion's `sample.json`. xtask has no dependencies, and these two shapes are all
//! it reads.

/// A value of a flat object.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    Str(String),
    Num(f64),
    Bool(bool),
    Null,
}

/// The fields of one flat JSON object, in order; `None` if the line is not one.
pub(crate) fn parse_object(line: &str) -> Option<Vec<(String, Value)>> {
    let mut p = Parser {
        s: line.trim().as_bytes(),
        i: 0,
    };
    p.expect(b'{')?;
    let mut fields = Vec::new();
    p.ws();
    if p.peek() == Some(b'}') {
        p.i += 1;
        return p.end().then_some(fields);
    }
    loop {
        p.ws();
        let key = p.string()?;
        p.ws();
        p.expect(b':')?;
        p.ws();
        let value = p.value()?;
        fields.push((key, value));
        p.ws();
        match p.next()? {
            b',' => continue,
            b'}' => break,
            _ => return None,
        }
    }
    p.end().then_some(fields)
}

/// The numbers of the array after `"key":` in `json` (criterion's `sample.json`).
pub(crate) fn number_array(json: &str, key: &str) -> Option<Vec<f64>> {
    let pat = format!("\"{key}\":");
    let rest = json[json.find(&pat)? + pat.len()..].trim_start();
    let body = &rest.strip_prefix('[')?[..rest.find(']')? - 1];
    body.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.trim().parse().ok())
        .collect()
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn next(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.i += 1;
        Some(c)
    }
    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.i += 1;
        }
    }
    fn expect(&mut self, c: u8) -> Option<()> {
        (self.next()? == c).then_some(())
    }
    fn end(&mut self) -> bool {
        self.ws();
        self.i == self.s.len()
    }
    fn value(&mut self) -> Option<Value> {
        match self.peek()? {
            b'"' => self.string().map(Value::Str),
            b't' => self.word("true", Value::Bool(true)),
            b'f' => self.word("false", Value::Bool(false)),
            b'n' => self.word("null", Value::Null),
            _ => {
                let start = self.i;
                while matches!(
                    self.peek(),
                    Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
                ) {
                    self.i += 1;
                }
                let text = std::str::from_utf8(&self.s[start..self.i]).ok()?;
                // JSON has no NaN or Infinity: Python's json writes them as bare words.
                match text {
                    "" => self
                        .word("NaN", Value::Num(f64::NAN))
                        .or_else(|| self.word("Infinity", Value::Num(f64::INFINITY))),
                    "-" => self.word("Infinity", Value::Num(f64::NEG_INFINITY)),
                    t => t.parse().ok().map(Value::Num),
                }
            }
        }
    }
    fn word(&mut self, w: &str, v: Value) -> Option<Value> {
        if self.s[self.i..].starts_with(w.as_bytes()) {
            self.i += w.len();
            Some(v)
        } else {
            None
        }
    }
    fn hex4(&mut self) -> Option<u32> {
        let h = std::str::from_utf8(self.s.get(self.i..self.i + 4)?).ok()?;
        self.i += 4;
        u32::from_str_radix(h, 16).ok()
    }
    fn string(&mut self) -> Option<String> {
        self.expect(b'"')?;
        let mut out = Vec::new();
        loop {
            match self.next()? {
                b'"' => return String::from_utf8(out).ok(),
                b'\\' => {
                    let c = match self.next()? {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let hi = self.hex4()?;
                            let code = if (0xD800..0xDC00).contains(&hi)
                                && self.s[self.i..].starts_with(b"\\u")
                            {
                                self.i += 2;
                                let lo = self.hex4()?;
                                0x10000 + ((hi - 0xD800) << 10) + (lo.wrapping_sub(0xDC00) & 0x3FF)
                            } else {
                                hi
                            };
                            char::from_u32(code).unwrap_or('\u{FFFD}')
                        }
                        _ => return None,
                    };
                    let mut buf = [0; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                c => out.push(c),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_flat_objects_with_every_value_kind() {
        let f = parse_object(
            r#"{"kind": "result", "threads": 2, "min_s": 1.5e-3, "ok": true, "x": null,
                "reason": "a \"quote\" \u00e9\ud83d\ude00 \\ end", "n": -3}"#,
        )
        .unwrap();
        assert_eq!(f[0], ("kind".into(), Value::Str("result".into())));
        assert_eq!(f[1].1, Value::Num(2.0));
        assert_eq!(f[2].1, Value::Num(1.5e-3));
        assert_eq!(f[3].1, Value::Bool(true));
        assert_eq!(f[4].1, Value::Null);
        assert_eq!(f[5].1, Value::Str("a \"quote\" é😀 \\ end".into()));
        assert_eq!(f[6].1, Value::Num(-3.0));
        assert_eq!(parse_object("{}"), Some(vec![]));
        match &parse_object(r#"{"v": NaN}"#).unwrap()[0].1 {
            Value::Num(v) => assert!(v.is_nan()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn rejects_what_is_not_a_flat_object() {
        for bad in [
            "",
            "[1]",
            "{\"a\": 1",
            "{\"a\": [1]}",
            "{\"a\" 1}",
            "{\"a\": 1} x",
            "text",
        ] {
            assert_eq!(parse_object(bad), None, "{bad}");
        }
    }

    #[test]
    fn reads_criterion_sample_arrays() {
        let s = r#"{"sampling_mode":"Linear","iters":[1.0,2.0,3.0],"times":[10.0,22.0,33.0]}"#;
        assert_eq!(number_array(s, "iters"), Some(vec![1.0, 2.0, 3.0]));
        assert_eq!(number_array(s, "times"), Some(vec![10.0, 22.0, 33.0]));
        assert_eq!(number_array(s, "missing"), None);
    }
}
