//! The safetensors reader and writer: known bytes, round trips, every dtype the
//! reference implementation writes, and each validation rule with its message.

use super::*;
use ndarray::array;
use proptest::prelude::*;

/// Safetensors bytes from a header text and the data.
fn file(header: &str, data: &[u8]) -> Vec<u8> {
    let mut b = (header.len() as u64).to_le_bytes().to_vec();
    b.extend_from_slice(header.as_bytes());
    b.extend_from_slice(data);
    b
}

fn err(bytes: &[u8]) -> String {
    let e = from_safetensors_bytes::<f32>(bytes).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0408", "{e}");
    e.to_string()
}

#[test]
fn round_trip_and_known_bytes() {
    let s = Store::new()
        .with(
            "conv1.lin.weight",
            array![[1.0f32, -2.0], [0.5, 3.0]].into_dyn(),
        )
        .with("conv1.bias", array![0.25f32].into_dyn())
        .with("bn.num_batches_tracked", ndarray::arr0(7.0f32).into_dyn());
    let b = to_safetensors_bytes(&s);
    let hlen = u64::from_le_bytes(b[..8].try_into().unwrap()) as usize;
    assert_eq!(hlen % 8, 0);
    let header = std::str::from_utf8(&b[8..8 + hlen]).unwrap();
    assert!(
        header
            .contains(r#""conv1.lin.weight":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}"#),
        "{header}"
    );
    // PyTorch's counter is an I64 scalar.
    assert!(
        header.contains(
            r#""bn.num_batches_tracked":{"dtype":"I64","shape":[],"data_offsets":[20,28]}"#
        ),
        "{header}"
    );
    assert_eq!(&b[8 + hlen..8 + hlen + 4], &1.0f32.to_le_bytes());
    assert_eq!(&b[8 + hlen + 20..], &7i64.to_le_bytes());
    let back: Store<f32> = from_safetensors_bytes(&b).unwrap();
    assert_eq!(back, s);
    // Conversion to f64 on load.
    let back64: Store<f64> = from_safetensors_bytes(&b).unwrap();
    assert_eq!(back64.get("conv1.lin.weight").unwrap()[[1, 1]], 3.0);
}

#[test]
fn every_real_dtype_converts() {
    // As `safetensors.torch.save_file` writes them: keys sorted, offsets in order.
    let mut data = Vec::new();
    data.extend_from_slice(&[1, 0]); // BOOL [2]
    data.extend_from_slice(&[200]); // U8 [1]
    data.extend_from_slice(&[0x80]); // I8 [1] = -128
    data.extend_from_slice(&0x3c00u16.to_le_bytes()); // F16 1.0
    data.extend_from_slice(&0xc049u16.to_le_bytes()); // BF16 -3.140625
    data.extend_from_slice(&(-5i32).to_le_bytes()); // I32
    data.extend_from_slice(&u32::MAX.to_le_bytes()); // U32
    data.extend_from_slice(&(1i64 << 40).to_le_bytes()); // I64
    data.extend_from_slice(&0.1f64.to_le_bytes()); // F64
    let header = r#"{"a":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[1],"data_offsets":[2,3]},"c":{"dtype":"I8","shape":[1],"data_offsets":[3,4]},"d":{"dtype":"F16","shape":[1],"data_offsets":[4,6]},"e":{"dtype":"BF16","shape":[1,1],"data_offsets":[6,8]},"f":{"dtype":"I32","shape":[1],"data_offsets":[8,12]},"g":{"dtype":"U32","shape":[1],"data_offsets":[12,16]},"h":{"dtype":"I64","shape":[],"data_offsets":[16,24]},"i":{"dtype":"F64","shape":[1],"data_offsets":[24,32]}}"#;
    let s: Store<f64> = from_safetensors_bytes(&file(header, &data)).unwrap();
    let v: Vec<f64> = s.values().iter().flat_map(|a| a.iter().copied()).collect();
    assert_eq!(
        v,
        [
            1.0,
            0.0,
            200.0,
            -128.0,
            1.0,
            -3.140625,
            -5.0,
            4294967295.0,
            2f64.powi(40),
            0.1
        ]
    );
    assert_eq!(s.get("e").unwrap().shape(), &[1, 1]);
    assert_eq!(s.get("h").unwrap().shape(), &[] as &[usize]);
    // Empty tensors and an empty file are valid.
    let s: Store<f32> = from_safetensors_bytes(&file(
        r#"{"z":{"dtype":"F32","shape":[0,3],"data_offsets":[0,0]}}"#,
        &[],
    ))
    .unwrap();
    assert_eq!(s.get("z").unwrap().shape(), &[0, 3]);
    assert!(
        from_safetensors_bytes::<f32>(&file("{}", &[]))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn each_validation_rule_is_a_coded_message() {
    let two = [0u8; 8];
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (vec![1, 2, 3], "shorter than the 8-byte header length"),
        (
            file("{}", &[]).split_off(0)[..4].to_vec(),
            "shorter than the 8-byte",
        ),
        (
            {
                let mut b = (200_000_000u64).to_le_bytes().to_vec();
                b.extend_from_slice(b"{}");
                b
            },
            "exceeds the format's limit of 100000000 bytes",
        ),
        (
            {
                let mut b = 100u64.to_le_bytes().to_vec();
                b.extend_from_slice(b"{}");
                b
            },
            "header length 100 exceeds the file (10 bytes)",
        ),
        (file(" {}", &[]), "does not start with `{`"),
        (file("{\"a\":1} x", &[]), "bytes after the JSON object"),
        (
            {
                let mut b = 5u64.to_le_bytes().to_vec();
                b.extend_from_slice(b"{\"\xff\"}");
                b
            },
            "header is not UTF-8",
        ),
        (
            file(
                r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}"#,
                &two,
            ),
            "key `a` appears twice",
        ),
        (
            file(r#"{"__metadata__":{"format":1}}"#, &[]),
            "`__metadata__` must map strings to strings",
        ),
        (
            file(
                r#"{"a":{"dtype":"Q8","shape":[1],"data_offsets":[0,1]}}"#,
                &[0],
            ),
            "unknown dtype \"Q8\"",
        ),
        (
            file(
                r#"{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}"#,
                &two[..4],
            ),
            "`shape` holds -1, not an integer in 0..2^53",
        ),
        (
            file(
                r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}}"#,
                &two[..4],
            ),
            "not a [begin, end] pair",
        ),
        // Overlapping tensors: b starts inside a.
        (
            file(
                r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}"#,
                &two,
            ),
            "`b`: data_offsets [4, 8] overlaps: it must start at byte 8, where `a` ends",
        ),
        // A gap between tensors, and a first tensor that does not start at 0.
        (
            file(
                r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}"#,
                &two,
            ),
            "leaves a gap: it must start at byte 0, where the start of the data ends",
        ),
        (
            file(
                r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}}"#,
                &two,
            ),
            "ends before it begins",
        ),
        (
            file(
                r#"{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}"#,
                &two,
            ),
            "shape [3] of F32 needs 12 bytes, but data_offsets [0, 8] hold 8 bytes",
        ),
        (
            file(
                r#"{"a":{"dtype":"F4","shape":[3],"data_offsets":[0,1]}}"#,
                &[0],
            ),
            "needs 12 bits",
        ),
        (
            file(
                r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}"#,
                &two,
            ),
            "cover 4 bytes of data, but the file holds 8",
        ),
        (
            file(
                r#"{"a":{"dtype":"F32","shape":[4000000000000000,4000000000000000],"data_offsets":[0,4]}}"#,
                &two[..4],
            ),
            "overflows",
        ),
        (
            file(
                r#"{"a":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}}"#,
                &[1, 5],
            ),
            "BOOL byte 5 at element 1",
        ),
        (
            file(
                r#"{"a":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}}"#,
                &two,
            ),
            "dtype C64, which has no real-number reading",
        ),
        (
            file(
                r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]"#,
                &two[..4],
            ),
            "header",
        ),
    ];
    for (bytes, want) in cases {
        let msg = err(&bytes);
        assert!(msg.contains(want), "{msg:?} lacks {want:?}");
    }
    let e = load_safetensors::<f32>("/nonexistent/x.safetensors").unwrap_err();
    assert_eq!(e.code(), "SHADE-E0407");
}

#[test]
fn a_model_splits_into_parameters_and_state() {
    use crate::layers::{BatchNorm, Chain, GCNConv};
    let model = Chain::<f64>::new()
        .add("conv", GCNConv::new(2, 3))
        .add("bn", BatchNorm::new(3));
    let (p, mut s) = model.init(&mut rand::SeedableRng::seed_from_u64(1));
    s.get_mut("bn.running_var").unwrap()[1] = 4.0;
    // PyTorch's file has a counter shade does not keep: it is dropped.
    let mut with_counter = s.clone();
    with_counter.push("bn.num_batches_tracked", ndarray::arr0(3.0).into_dyn());
    let bytes = model_to_safetensors_bytes(&p, &with_counter);
    let (p2, s2) = model_from_safetensors_bytes(&model, &bytes).unwrap();
    assert_eq!((p2, s2), (p.clone(), s.clone()));
    // A missing statistic and an unknown tensor are the store's coded errors.
    let e = model_from_safetensors_bytes(&model, &to_safetensors_bytes(&p)).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0401", "{e}");
    let extra = p
        .clone()
        .with("head.weight", ndarray::ArrayD::zeros(IxDyn(&[1])));
    let e =
        model_from_safetensors_bytes(&model, &model_to_safetensors_bytes(&extra, &s)).unwrap_err();
    assert_eq!(e.code(), "SHADE-E0403", "{e}");
}

proptest! {
    #![proptest_config(crate::testing::proptest_config(64))]

    /// Any store round-trips exactly, in both element types.
    #[test]
    fn stores_round_trip(shapes in prop::collection::vec(prop::collection::vec(0usize..4, 0..3), 0..5), seed in any::<u64>()) {
        let mut s = Store::new();
        for (i, sh) in shapes.iter().enumerate() {
            let n: usize = sh.iter().product();
            let v: Vec<f64> = (0..n).map(|k| ((seed ^ (k as u64 * 7919 + i as u64)) % 1000) as f64 / 7.0 - 50.0).collect();
            s.push(format!("layer{i}.w\"\\"), ArrayD::from_shape_vec(IxDyn(sh), v).unwrap());
        }
        let back: Store<f64> = from_safetensors_bytes(&to_safetensors_bytes(&s)).unwrap();
        prop_assert_eq!(&back, &s);
        let s32 = Store::<f32>::new();
        let back32: Store<f32> = from_safetensors_bytes(&to_safetensors_bytes(&s32)).unwrap();
        prop_assert_eq!(back32, s32);
    }

    /// Corrupt bytes are a coded error, never a panic or a huge allocation.
    #[test]
    fn corrupt_files_are_coded_errors(flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6), cut in any::<prop::sample::Index>()) {
        let s = Store::new()
            .with("a.weight", array![[1.0f32, 2.0], [3.0, 4.0]].into_dyn())
            .with("a.num_batches_tracked", ndarray::arr0(2.0f32).into_dyn());
        let mut b = to_safetensors_bytes(&s);
        for (at, x) in &flips {
            let i = at.index(b.len());
            b[i] ^= x;
        }
        let keep = cut.index(b.len() + 1);
        for bytes in [&b[..], &b[..keep]] {
            if let Err(e) = from_safetensors_bytes::<f32>(bytes) {
                prop_assert_eq!(e.code(), "SHADE-E0408");
            }
        }
    }
}
