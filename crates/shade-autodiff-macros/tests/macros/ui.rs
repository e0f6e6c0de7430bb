//! Constructs outside the subset are compile errors with our own message (naming the
//! construct, at its span, with the fallback): each case in `tests/ui/` has its
//! blessed `.stderr` (`TRYBUILD=overwrite` re-blesses, reviewed in the diff).

#[test]
fn unsupported_constructs_fail_with_our_message() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
