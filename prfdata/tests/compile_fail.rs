//! What must not compile: width mismatches, missing bases, ids of the wrong object.

#[test]
fn misuse_does_not_compile() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
