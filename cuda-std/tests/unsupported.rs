//! What lab-cuda-std cannot support is a compile error naming it, never a
//! silent miscompile: each case in `tests/unsupported/` must fail with the
//! error in its `.stderr` (regenerate with `TRYBUILD=overwrite`).

#[test]
fn unsupported_items_are_compile_errors() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/unsupported/*.rs");
}
