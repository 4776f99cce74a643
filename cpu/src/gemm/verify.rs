//! One call verified end to end: random inputs, the library's run, the
//! whole output checked against the reference ([`super::reference`]).

use super::call::Call;
use super::precision::{Element, Precision};
use super::reference::{self, Inputs};
use super::run::{Route, TensorGemm};
use crate::runtime::{Gpu, Result};

/// What a verified call gave: the route it took and its worst error as a
/// fraction of the bound.
#[derive(Clone, Copy, Debug)]
pub struct Verified {
    pub route: Route,
    pub ratio: f64,
}

/// Runs `call` once on random inputs (`seed`) and checks every element of
/// the output buffer (rows `rows` of D, all if `None`); `Err` for a launch
/// error, `Ok(Err(why))` for a wrong result.
pub fn verify<P: Precision, O: Element>(
    gpu: &Gpu,
    lib: &TensorGemm,
    call: &Call,
    seed: u64,
    rows: Option<&[usize]>,
) -> Result<std::result::Result<Verified, String>> {
    let x = Inputs::<P, O>::random(call, seed);
    let (a, b) = (gpu.upload(&x.a)?, gpu.upload(&x.b)?);
    let mut c = gpu.upload(&x.c)?;
    let bias = x.bias.as_ref().map(|v| gpu.upload(v)).transpose()?;
    let route = lib.run::<P, O>(gpu, call, &a, &b, &mut c, bias.as_ref())?;
    let got = gpu.download(&c)?;
    Ok(reference::check::<P, O>(call, &x.a, &x.b, &x.c, x.bias.as_deref(), &got, route.splits, rows)
        .map(|ratio| Verified { route, ratio }))
}
