//! The typed launchers `#[kernel]` generates, checked by the compiler: a
//! launch with the wrong number, type or mutability of arguments, an
//! aliased output, an unchecked kernel launched without `unsafe`, or an
//! instance a generic kernel does not have does not compile; and neither do
//! declarations the attribute cannot take. Each case's expected error is in
//! the `.stderr` file beside it (regenerate with `TRYBUILD=overwrite`).
//!
//! Only failing cases live here, so trybuild type-checks them (`cargo
//! check`) and never generates code for `gpu`'s kernels; the launches that
//! compile are run, and what they pack checked, by `launchers.rs`.

#[test]
fn typed_launches_and_declarations() {
    trybuild::TestCases::new().compile_fail("tests/launch/fail_*.rs");
}
