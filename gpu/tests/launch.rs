//! The typed launchers `#[kernel]` generates, checked by the compiler: a
//! launch with the wrong number, type or mutability of arguments, an
//! aliased output, an unchecked kernel launched without `unsafe`, or an
//! instance a generic kernel does not have does not compile; and neither do
//! declarations the attribute cannot take. Each case's expected error is in
//! the `.stderr` file beside it (regenerate with `TRYBUILD=overwrite`).

#[test]
fn typed_launches_and_declarations() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/launch/pass_*.rs");
    cases.compile_fail("tests/launch/fail_*.rs");
}
