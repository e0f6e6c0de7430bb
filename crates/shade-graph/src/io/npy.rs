//! The `.npy` array format (versions 1–3) for arbitrary numeric arrays: `float32`,
//! `float64`, `int8`..`int64`, `uint8`..`uint64` and `bool`, any rank, C or Fortran
//! order, little- or big-endian on reading (written little-endian, as numpy does on
//! every common machine). Declared sizes are checked against the bytes present before
//! anything is allocated.
//!
//! ```
//! use shade_graph::ndarray::{Array2, Ix2, ShapeBuilder};
//! use shade_graph::{NpyArray, npy_bytes, parse_npy};
//!
//! // A Fortran-ordered matrix is written in its memory order, as numpy does.
//! let a = Array2::from_shape_vec((2, 3).f(), vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
//! let bytes = npy_bytes(&NpyArray::from(a.clone()));
//! let back = parse_npy(&bytes, "a.npy")?;
//! assert_eq!((back.dtype(), back.shape()), ("float32", &[2, 3][..]));
//! assert_eq!(back.into_array::<f32, Ix2>()?, a);
//! # Ok::<(), shade_graph::GraphError>(())
//! ```

mod header;

use std::path::Path;

use ndarray::{ArrayD, ArrayViewD, Dimension, IxDyn, ShapeBuilder};

use crate::error::{GraphError, GraphResult};
pub(crate) use header::{Descr, Header, Known, parse_header};

mod sealed {
    pub trait Sealed {}
}

/// An element type that `.npy` files hold and [`NpyArray`] carries: `f32`, `f64`,
/// `i8`, `i16`, `i32`, `i64`, `u8`, `u16`, `u32`, `u64`, `bool`.
pub trait NpyElement: Copy + PartialEq + std::fmt::Debug + 'static + sealed::Sealed {
    /// numpy's name of the type (`"float32"`).
    const NAME: &'static str;
    /// The type character of numpy's descr (`f`, `i`, `u`, `b`).
    #[doc(hidden)]
    const KIND: char;
    /// Bytes per element.
    #[doc(hidden)]
    const SIZE: usize;
    /// Decodes one element (`bytes.len() == SIZE`); `None` for an invalid value (a
    /// boolean byte other than 0 or 1).
    #[doc(hidden)]
    fn decode(bytes: &[u8], big_endian: bool) -> Option<Self>;
    /// Appends the little-endian bytes.
    #[doc(hidden)]
    fn encode(self, out: &mut Vec<u8>);
    /// Wraps an array.
    #[doc(hidden)]
    fn wrap(a: ArrayD<Self>) -> NpyArray;
    /// The array, if `a` holds this type.
    #[doc(hidden)]
    fn unwrap(a: NpyArray) -> Result<ArrayD<Self>, NpyArray>;
    /// A borrow of the array, if `a` holds this type.
    #[doc(hidden)]
    fn unwrap_ref(a: &NpyArray) -> Option<&ArrayD<Self>>;
}

macro_rules! elements {
    ($($t:ident $variant:ident $name:literal $kind:literal;)*) => {
        /// A dense array read from (or to be written to) a `.npy` file, in one of numpy's
        /// numeric element types. Arrays read in Fortran order keep that memory layout.
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        pub enum NpyArray {
            $(
                #[doc = concat!("numpy `", $name, "`.")]
                $variant(ArrayD<$t>),
            )*
        }

        $(
            impl sealed::Sealed for $t {}
            impl NpyElement for $t {
                const NAME: &'static str = $name;
                const KIND: char = $kind;
                const SIZE: usize = std::mem::size_of::<$t>();
                #[inline]
                fn decode(b: &[u8], big: bool) -> Option<Self> {
                    elements!(@decode $t b big)
                }
                #[inline]
                fn encode(self, out: &mut Vec<u8>) {
                    elements!(@encode $t self out)
                }
                fn wrap(a: ArrayD<Self>) -> NpyArray {
                    NpyArray::$variant(a)
                }
                fn unwrap(a: NpyArray) -> Result<ArrayD<Self>, NpyArray> {
                    match a {
                        NpyArray::$variant(a) => Ok(a),
                        other => Err(other),
                    }
                }
                fn unwrap_ref(a: &NpyArray) -> Option<&ArrayD<Self>> {
                    match a {
                        NpyArray::$variant(a) => Some(a),
                        _ => None,
                    }
                }
            }
            impl<D: Dimension> From<ndarray::Array<$t, D>> for NpyArray {
                fn from(a: ndarray::Array<$t, D>) -> Self {
                    NpyArray::$variant(a.into_dyn())
                }
            }
        )*

        /// Decodes the elements of `d` in `body` into the variant of its type; `None` for
        /// an invalid boolean byte.
        fn decode_as(d: Known, body: &[u8], dim: IxDyn, fortran: bool) -> Option<NpyArray> {
            $(
                if d.kind == <$t>::KIND && d.size == <$t>::SIZE {
                    return Some(NpyArray::$variant(decode_array::<$t>(body, d.big_endian, dim, fortran)?));
                }
            )*
            unreachable!("descr {d:?} was checked to be supported")
        }

        /// Whether a (kind, size) pair is one of the supported element types.
        pub(crate) fn supported(kind: char, size: usize) -> bool {
            $(kind == <$t>::KIND && size == <$t>::SIZE ||)* false
        }
    };
    (@decode bool $b:ident $big:ident) => {{
        let _ = $big;
        match $b[0] {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }};
    (@decode $t:ident $b:ident $big:ident) => {{
        let raw = $b.try_into().expect("SIZE bytes");
        Some(if $big { <$t>::from_be_bytes(raw) } else { <$t>::from_le_bytes(raw) })
    }};
    (@encode bool $x:ident $out:ident) => {
        $out.push($x as u8)
    };
    (@encode $t:ident $x:ident $out:ident) => {
        $out.extend_from_slice(&$x.to_le_bytes())
    };
}

/// Applies `$body` to the array of whatever type `$self` holds.
macro_rules! each {
    ($self:expr, $a:ident => $body:expr) => {
        match $self {
            NpyArray::F32($a) => $body,
            NpyArray::F64($a) => $body,
            NpyArray::I8($a) => $body,
            NpyArray::I16($a) => $body,
            NpyArray::I32($a) => $body,
            NpyArray::I64($a) => $body,
            NpyArray::U8($a) => $body,
            NpyArray::U16($a) => $body,
            NpyArray::U32($a) => $body,
            NpyArray::U64($a) => $body,
            NpyArray::Bool($a) => $body,
        }
    };
}

elements! {
    f32 F32 "float32" 'f';
    f64 F64 "float64" 'f';
    i8 I8 "int8" 'i';
    i16 I16 "int16" 'i';
    i32 I32 "int32" 'i';
    i64 I64 "int64" 'i';
    u8 U8 "uint8" 'u';
    u16 U16 "uint16" 'u';
    u32 U32 "uint32" 'u';
    u64 U64 "uint64" 'u';
    bool Bool "bool" 'b';
}

fn decode_array<T: NpyElement>(
    body: &[u8],
    big: bool,
    dim: IxDyn,
    fortran: bool,
) -> Option<ArrayD<T>> {
    let v: Option<Vec<T>> = body
        .chunks_exact(T::SIZE)
        .map(|c| T::decode(c, big))
        .collect();
    let shape = dim.set_f(fortran);
    Some(ArrayD::from_shape_vec(shape, v?).expect("the length was checked against the shape"))
}

impl NpyArray {
    /// The array's shape.
    pub fn shape(&self) -> &[usize] {
        each!(self, a => a.shape())
    }

    /// numpy's name of the element type (`"float32"`, `"int64"`, `"bool"`, ...).
    pub fn dtype(&self) -> &'static str {
        fn name<T: NpyElement>(_: &ArrayD<T>) -> &'static str {
            T::NAME
        }
        each!(self, a => name(a))
    }

    /// The array as `ArrayD<T>` reshaped to dimension `D` (`Ix2`, `IxDyn`, ...);
    /// `SHADE-E0335` if it holds another element type or has another rank.
    pub fn into_array<T: NpyElement, D: Dimension>(self) -> GraphResult<ndarray::Array<T, D>> {
        self.into_array_named("the array")
    }

    pub(crate) fn into_array_named<T: NpyElement, D: Dimension>(
        self,
        what: &str,
    ) -> GraphResult<ndarray::Array<T, D>> {
        let found = self.describe();
        let mismatch = |expected: String| GraphError::ArrayType {
            what: what.into(),
            expected,
            found: found.clone(),
        };
        let a = T::unwrap(self).map_err(|_| mismatch(format!("{} array", T::NAME)))?;
        a.into_dimensionality::<D>()
            .map_err(|_| mismatch(format!("rank-{} array", D::NDIM.unwrap_or_default())))
    }

    /// A view of the array if it holds `T`; `SHADE-E0335` otherwise.
    pub fn view<T: NpyElement>(&self) -> GraphResult<ArrayViewD<'_, T>> {
        T::unwrap_ref(self)
            .map(|a| a.view())
            .ok_or_else(|| GraphError::ArrayType {
                what: "the array".into(),
                expected: format!("{} array", T::NAME),
                found: self.describe(),
            })
    }

    /// `"float32 array of shape [2, 3]"`, for messages.
    pub(crate) fn describe(&self) -> String {
        format!("{} array of shape {:?}", self.dtype(), self.shape())
    }

    /// Whether the elements are stored in Fortran (column-major) order: the array is
    /// not C-contiguous but its transpose is. Such arrays are written with
    /// `fortran_order: True`.
    fn is_fortran(&self) -> bool {
        each!(self, a => a.ndim() > 1 && !a.is_standard_layout() && a.t().is_standard_layout())
    }
}

/// Parses `.npy` bytes; `file` names the input in errors. Malformed input is
/// `SHADE-E0331`; a dtype outside [`NpyElement`]'s set (strings, objects, complex,
/// `float16`, structured) is `SHADE-E0332`.
pub fn parse_npy(bytes: &[u8], file: &str) -> GraphResult<NpyArray> {
    parse_member(bytes, file, None)
}

/// [`parse_npy`] for a member of an archive (named in errors).
pub(crate) fn parse_member(
    bytes: &[u8],
    file: &str,
    member: Option<&str>,
) -> GraphResult<NpyArray> {
    let h = parse_header(bytes, file, member)?;
    match h.descr {
        Descr::Other(descr) => Err(GraphError::Unsupported {
            file: file.into(),
            member: member.map(Into::into),
            what: format!("dtype {descr:?} (shade reads {})", SUPPORTED_NAMES),
        }),
        Descr::Known(d) => decode(&bytes[h.data_start..], d, &h, file, member),
    }
}

/// The supported types, for messages.
const SUPPORTED_NAMES: &str = "float32/64, int8/16/32/64, uint8/16/32/64 and bool";

/// Decodes the data after a parsed header, after checking that exactly the bytes the
/// shape needs are present.
pub(crate) fn decode(
    body: &[u8],
    d: Known,
    h: &Header,
    file: &str,
    member: Option<&str>,
) -> GraphResult<NpyArray> {
    let bad = |what: String| GraphError::Malformed {
        file: file.into(),
        member: member.map(Into::into),
        what,
    };
    let shape = &h.shape;
    let need = shape
        .iter()
        .try_fold(d.size, |a, &n| a.checked_mul(n))
        .ok_or_else(|| bad(format!("shape {shape:?} overflows")))?;
    if body.len() != need {
        let descr = d.text();
        return Err(bad(format!(
            "shape {shape:?} of {descr} needs {need} bytes, but {} are present",
            body.len()
        )));
    }
    decode_as(d, body, IxDyn(shape), h.fortran).ok_or_else(|| {
        let p = body.iter().position(|&b| b > 1).unwrap_or(0);
        bad(format!(
            "boolean byte {} at element {p} is not 0 or 1",
            body[p]
        ))
    })
}

/// The `.npy` (version 1.0, or 2.0 for a header beyond 64 KiB) bytes of an array:
/// little-endian, in the array's memory order (`fortran_order: True` for a
/// Fortran-ordered array, C order otherwise), readable by `numpy.load`.
pub fn npy_bytes(a: &NpyArray) -> Vec<u8> {
    let fortran = a.is_fortran();
    fn descr<T: NpyElement>(_: &ArrayD<T>) -> String {
        let order = if T::SIZE == 1 { '|' } else { '<' };
        format!("{order}{}{}", T::KIND, T::SIZE)
    }
    let descr = each!(a, x => descr(x));
    let mut out = header::write(&descr, fortran, a.shape());
    fn body<T: NpyElement>(a: &ArrayD<T>, fortran: bool, out: &mut Vec<u8>) {
        out.reserve(a.len() * T::SIZE);
        if fortran {
            a.t().iter().for_each(|&x| x.encode(out));
        } else {
            a.iter().for_each(|&x| x.encode(out));
        }
    }
    each!(a, x => body(x, fortran, &mut out));
    out
}

/// Reads a `.npy` file ([`parse_npy`]; `SHADE-E0330` if it cannot be read).
pub fn read_npy(path: impl AsRef<Path>) -> GraphResult<NpyArray> {
    let path = path.as_ref();
    let name = path.display().to_string();
    parse_npy(&super::read_file(path)?, &name)
}

/// Writes an array as a `.npy` file ([`npy_bytes`]).
pub fn write_npy(path: impl AsRef<Path>, a: &NpyArray) -> GraphResult<()> {
    super::write_file(path.as_ref(), npy_bytes(a))
}

/// A `.npy` v1.0 file for `descr` (e.g. `"<f4"`), a 1-d `shape` and raw little-endian
/// data (the citation-graph writer's and the tests' form).
pub(crate) fn write_raw(descr: &str, shape: &[usize], raw: &[u8]) -> Vec<u8> {
    let mut out = header::write(descr, false, shape);
    out.extend_from_slice(raw);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array3, Ix1, Ix2, array};
    use proptest::prelude::*;

    #[test]
    fn round_trip_and_truncation() {
        let raw: Vec<u8> = [1.5f32, -2.0, 3.25]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let b = write_raw("<f4", &[3], &raw);
        assert_eq!(b.len() % 64, 12);
        let a = parse_npy(&b, "f").unwrap();
        assert_eq!(a, NpyArray::from(array![1.5f32, -2.0, 3.25]));
        let e = parse_npy(&b[..b.len() - 1], "f").unwrap_err();
        assert_eq!(e.code(), "SHADE-E0331");
        assert!(
            e.to_string().contains("needs 12 bytes, but 11 are present"),
            "{e}"
        );
        // Trailing bytes are as wrong as missing ones.
        let mut long = b.clone();
        long.push(0);
        assert!(
            parse_npy(&long, "f")
                .unwrap_err()
                .to_string()
                .contains("13 are present")
        );
        let b = write_raw(
            "<i8",
            &[2],
            &[
                7, 0, 0, 0, 0, 0, 0, 0, 255, 255, 255, 255, 255, 255, 255, 255,
            ],
        );
        assert_eq!(
            parse_npy(&b, "f").unwrap(),
            NpyArray::from(array![7i64, -1])
        );
        // A header that declares an absurd size fails before allocating.
        let b = write_raw("<f8", &[usize::MAX / 4], &[]);
        assert_eq!(parse_npy(&b, "f").unwrap_err().code(), "SHADE-E0331");
        let b = write_raw("<f8", &[1 << 40, 1 << 40], &[]);
        assert!(
            parse_npy(&b, "f")
                .unwrap_err()
                .to_string()
                .contains("overflows")
        );
    }

    #[test]
    fn fortran_order_and_big_endian() {
        // numpy: np.arange(6, dtype='>i4').reshape(2, 3, order='F')
        let raw: Vec<u8> = (0..6i32).flat_map(|x| x.to_be_bytes()).collect();
        let mut b = header::write(">i4", true, &[2, 3]);
        b.extend_from_slice(&raw);
        let a = parse_npy(&b, "f")
            .unwrap()
            .into_array::<i32, Ix2>()
            .unwrap();
        assert_eq!(a, array![[0, 2, 4], [1, 3, 5]]);
        assert!(!a.is_standard_layout() && a.t().is_standard_layout());
        // Written back in the same (Fortran) memory order, little-endian.
        let again = npy_bytes(&NpyArray::from(a.clone()));
        let text = String::from_utf8_lossy(&again[10..128]);
        assert!(
            text.contains("'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }"),
            "{text}"
        );
        assert_eq!(&again[132..136], &1i32.to_le_bytes()); // memory order: 0, 1, 2, ...
        // A transposed view that is neither is written in C order.
        let c = Array3::from_shape_fn((2, 3, 4), |(i, j, k)| (i * 12 + j * 4 + k) as u16);
        let p = c.clone().permuted_axes([1, 0, 2]);
        let back = parse_npy(&npy_bytes(&NpyArray::from(p.clone())), "p").unwrap();
        assert_eq!(back, NpyArray::from(p));
    }

    #[test]
    fn type_and_rank_mismatches_are_coded() {
        let a = NpyArray::from(array![[1u8, 2], [3, 4]]);
        let e = a.clone().into_array::<f32, Ix2>().unwrap_err();
        assert_eq!(e.code(), "SHADE-E0335");
        assert!(
            e.to_string().contains("uint8 array of shape [2, 2]")
                && e.to_string().contains("float32"),
            "{e}"
        );
        let e = a.clone().into_array::<u8, Ix1>().unwrap_err();
        assert!(
            e.to_string().ends_with("but a rank-1 array was asked for"),
            "{e}"
        );
        assert_eq!(a.view::<u8>().unwrap()[[1, 0]], 3);
        assert_eq!(a.view::<i8>().unwrap_err().code(), "SHADE-E0335");
        // Booleans other than 0 and 1 are corrupt, not silently true.
        let b = write_raw("|b1", &[3], &[0, 1, 2]);
        let e = parse_npy(&b, "f").unwrap_err();
        assert!(e.to_string().contains("boolean byte 2 at element 2"), "{e}");
        // Strings are unsupported, with the dtype named.
        let b = write_raw("<U2", &[1], &[0; 8]);
        let e = parse_npy(&b, "f").unwrap_err();
        assert_eq!(e.code(), "SHADE-E0332");
        assert!(e.to_string().contains("\"<U2\""), "{e}");
    }

    /// Any supported array, C- or Fortran-ordered, of rank 0 to 4.
    fn arb_array() -> impl Strategy<Value = NpyArray> {
        let shape = prop::collection::vec(0usize..4, 0..5);
        (shape, any::<bool>(), 0usize..11, any::<u64>()).prop_map(|(shape, fortran, ty, seed)| {
            let n: usize = shape.iter().product();
            let dim = IxDyn(&shape).set_f(fortran);
            let v = |k: usize| {
                seed.wrapping_mul(6364136223846793005)
                    .wrapping_add((k as u64).wrapping_mul(1442695040888963407))
            };
            macro_rules! arr {
                ($f:expr) => {
                    NpyArray::from(
                        ArrayD::from_shape_vec(dim, (0..n).map(|k| $f(v(k))).collect()).unwrap(),
                    )
                };
            }
            match ty {
                0 => arr!(|x: u64| f32::from_bits(x as u32 & 0x7f7f_ffff)
                    * if x >> 63 == 1 { -1.0 } else { 1.0 }),
                1 => arr!(|x: u64| f64::from_bits(x & 0x7fef_ffff_ffff_ffff)),
                2 => arr!(|x: u64| x as i8),
                3 => arr!(|x: u64| x as i16),
                4 => arr!(|x: u64| x as i32),
                5 => arr!(|x: u64| x as i64),
                6 => arr!(|x: u64| x as u8),
                7 => arr!(|x: u64| x as u16),
                8 => arr!(|x: u64| x as u32),
                9 => arr!(|x: u64| x),
                _ => arr!(|x: u64| (x >> 40) & 1 == 1),
            }
        })
    }

    proptest! {
        #[test]
        fn npy_round_trips_every_type_order_and_rank(a in arb_array()) {
            let b = npy_bytes(&a);
            prop_assert_eq!(b.iter().position(|&c| c == b'\n').map(|p| (p + 1) % 64), Some(0));
            let back = parse_npy(&b, "a.npy").unwrap();
            prop_assert_eq!(back.is_fortran(), a.is_fortran());
            prop_assert_eq!(back, a);
        }

        #[test]
        fn npy_parse_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
            let mut b = b"\x93NUMPY\x01\x00".to_vec();
            b.extend_from_slice(&bytes);
            let _ = parse_npy(&b, "f");
            let _ = parse_npy(&bytes, "f");
        }

        #[test]
        fn corrupt_npy_is_a_coded_error(a in arb_array(), flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4), cut in any::<prop::sample::Index>()) {
            let mut b = npy_bytes(&a);
            for (at, x) in &flips {
                let i = at.index(b.len());
                b[i] ^= x;
            }
            let keep = cut.index(b.len() + 1);
            for bytes in [&b[..], &b[..keep]] {
                if let Err(e) = parse_npy(bytes, "f") {
                    prop_assert!(matches!(e.code(), "SHADE-E0331" | "SHADE-E0332"), "{e}");
                }
            }
        }
    }
}
