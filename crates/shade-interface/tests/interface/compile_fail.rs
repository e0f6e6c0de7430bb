//! Capability errors at compile time, with our own messages (trybuild).

#[test]
fn capability_errors_are_compile_errors() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
