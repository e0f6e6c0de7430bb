//! The safetensors element types (the reference implementation's full set, with their
//! widths in bits) and the conversion of the numeric ones to `f64`.

/// A safetensors dtype, named as in the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Dtype {
    pub(super) name: &'static str,
    pub(super) bits: usize,
}

/// Every dtype of the format, in the reference implementation's order.
const ALL: [Dtype; 22] = {
    const fn d(name: &'static str, bits: usize) -> Dtype {
        Dtype { name, bits }
    }
    [
        d("BOOL", 8),
        d("F4", 4),
        d("F6_E2M3", 6),
        d("F6_E3M2", 6),
        d("U8", 8),
        d("I8", 8),
        d("F8_E5M2", 8),
        d("F8_E4M3", 8),
        d("F8_E8M0", 8),
        d("F8_E4M3FNUZ", 8),
        d("F8_E5M2FNUZ", 8),
        d("I16", 16),
        d("U16", 16),
        d("F16", 16),
        d("BF16", 16),
        d("I32", 32),
        d("U32", 32),
        d("F32", 32),
        d("C64", 64),
        d("F64", 64),
        d("I64", 64),
        d("U64", 64),
    ]
};

impl Dtype {
    /// The dtype called `name`, if the format has one.
    pub(super) fn parse(name: &str) -> Option<Dtype> {
        ALL.into_iter().find(|d| d.name == name)
    }

    /// The dtypes [`Dtype::decode`] converts to real numbers.
    pub(super) const REAL: &'static str =
        "BOOL, U8, I8, U16, I16, U32, I32, U64, I64, F8_E5M2, F8_E4M3, F16, BF16, F32, F64";

    /// The values of `raw` (little-endian, whole elements) as `f64`: exact for every
    /// type but 64-bit integers beyond 2^53. `None` if the type has no real-number
    /// reading (complex, sub-byte and the FNUZ / E8M0 scale formats), `Some(Err(i))`
    /// for a boolean byte `i` other than 0 or 1.
    pub(super) fn decode(self, raw: &[u8]) -> Option<Result<Vec<f64>, usize>> {
        fn each<const N: usize>(raw: &[u8], f: impl Fn([u8; N]) -> f64) -> Vec<f64> {
            raw.chunks_exact(N)
                .map(|c| f(c.try_into().expect("whole elements")))
                .collect()
        }
        Some(Ok(match self.name {
            "BOOL" => {
                if let Some(i) = raw.iter().position(|&b| b > 1) {
                    return Some(Err(i));
                }
                raw.iter().map(|&b| f64::from(b)).collect()
            }
            "U8" => raw.iter().map(|&b| f64::from(b)).collect(),
            "I8" => raw.iter().map(|&b| f64::from(b as i8)).collect(),
            "F8_E5M2" => raw.iter().map(|&b| f16_to_f64(u16::from(b) << 8)).collect(),
            "F8_E4M3" => raw.iter().map(|&b| e4m3_to_f64(b)).collect(),
            "U16" => each(raw, |b| f64::from(u16::from_le_bytes(b))),
            "I16" => each(raw, |b| f64::from(i16::from_le_bytes(b))),
            "F16" => each(raw, |b| f16_to_f64(u16::from_le_bytes(b))),
            "BF16" => each(raw, |[a, b]| {
                f64::from(f32::from_bits(u32::from(u16::from_le_bytes([a, b])) << 16))
            }),
            "U32" => each(raw, |b| f64::from(u32::from_le_bytes(b))),
            "I32" => each(raw, |b| f64::from(i32::from_le_bytes(b))),
            "F32" => each(raw, |b| f64::from(f32::from_le_bytes(b))),
            "U64" => each(raw, |b| u64::from_le_bytes(b) as f64),
            "I64" => each(raw, |b| i64::from_le_bytes(b) as f64),
            "F64" => each(raw, f64::from_le_bytes),
            _ => return None,
        }))
    }
}

/// IEEE half precision (1 sign, 5 exponent, 10 mantissa bits).
fn f16_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let (e, m) = (i32::from((h >> 10) & 0x1f), f64::from(h & 0x3ff));
    sign * match e {
        0 => m * 2f64.powi(-24),
        31 if m == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        _ => (1.0 + m / 1024.0) * 2f64.powi(e - 15),
    }
}

/// OCP FP8 E4M3 ("FN": no infinities; `S.1111.111` is NaN), exponent bias 7.
fn e4m3_to_f64(b: u8) -> f64 {
    let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let (e, m) = (i32::from((b >> 3) & 0xf), f64::from(b & 7));
    sign * match e {
        0 => m * 2f64.powi(-9),
        15 if m == 7.0 => f64::NAN,
        _ => (1.0 + m / 8.0) * 2f64.powi(e - 7),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_match_the_formats_definitions() {
        // Half precision: 1, -2, the smallest subnormal, the largest finite, infinity.
        let h = |v: u16| f16_to_f64(v);
        assert_eq!(
            [h(0x3c00), h(0xc000), h(0x0001), h(0x7bff), h(0x7c00)],
            [1.0, -2.0, 2f64.powi(-24), 65504.0, f64::INFINITY]
        );
        assert!(h(0x7e00).is_nan());
        // bfloat16 is the top half of an f32.
        let bf = Dtype::parse("BF16").unwrap();
        let v = bf.decode(&[0x80, 0x3f, 0x49, 0xc0]).unwrap().unwrap();
        assert_eq!(v, [1.0, -3.140625]);
        // E4M3: 1.0 = 0x38, 448 = 0x7e (largest), 2^-9 (smallest subnormal); NaN 0x7f.
        assert_eq!(
            [
                e4m3_to_f64(0x38),
                e4m3_to_f64(0x7e),
                e4m3_to_f64(0x01),
                e4m3_to_f64(0xb8)
            ],
            [1.0, 448.0, 2f64.powi(-9), -1.0]
        );
        assert!(e4m3_to_f64(0x7f).is_nan());
        // E5M2 is the top byte of a half: 0x3c -> 1.0, 0x7b -> 57344.
        let e5 = Dtype::parse("F8_E5M2").unwrap();
        assert_eq!(e5.decode(&[0x3c, 0x7b]).unwrap().unwrap(), [1.0, 57344.0]);
        // Integers, booleans; complex numbers have no real reading.
        let i64t = Dtype::parse("I64").unwrap();
        assert_eq!(
            i64t.decode(&(-7i64).to_le_bytes()).unwrap().unwrap(),
            [-7.0]
        );
        let b = Dtype::parse("BOOL").unwrap();
        assert_eq!(b.decode(&[0, 1, 2]).unwrap(), Err(2));
        assert!(Dtype::parse("C64").unwrap().decode(&[0; 8]).is_none());
        assert_eq!(Dtype::parse("F4").map(|d| d.bits), Some(4));
        assert_eq!(Dtype::parse("f32"), None);
    }
}
