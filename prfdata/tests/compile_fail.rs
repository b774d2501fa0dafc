//! What must not compile: width mismatches, missing bases, ids of the wrong object, and any
//! way for safe code to give prfdata a layout of its own (hand-written `Object` or
//! `PerfDataMap` implementations, counter ids made by hand). And what must: a crate that
//! forbids unsafe code using `prfdata_map!`.

#[test]
fn misuse_does_not_compile() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
    cases.pass("tests/ui-pass/*.rs");
}
