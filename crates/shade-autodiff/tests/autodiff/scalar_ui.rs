//! Misuse the type system catches: each case in `tests/ui/` must fail to compile with
//! our own message (the blessed `.stderr` next to it).

#[test]
fn misuse_is_a_compile_error_with_our_message() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/scalar_*.rs");
    t.compile_fail("tests/ui/tensor_*.rs");
}
