//! The FP8 forward on the emulator: the Vᵀ pass exactly, the Hopper
//! step on E4M3 against its derived bound (on uniform inputs and on
//! FlashAttention-3's outlier case) and its accuracy beside the bf16
//! step's, and a bound that catches a wrong descale.

use half::bf16;
use kernel_lab::attention::fp8::{self, Distribution, Fp8Buffers, Quantized};
use kernel_lab::attention::{Arithmetic, Problem, reference_with, rows_to_check, verify};
use kernel_lab::gemm::Input;
use kernel_lab::runtime::Gpu;

#[test]
fn fp8_v_transpose_is_exact() {
    let gpu = Gpu::emulator();
    // Key counts whose last sixteen is whole, partial, and alone.
    for (s_k, d, kv) in [(1, 64, 1), (77, 128, 2), (200, 256, 1), (128, 64, 3)] {
        let p = Problem::new(1, kv, kv, (1, s_k), d, false);
        let raw = Distribution::Uniform.draw(&p, 5);
        let parts = [&raw[0], &raw[1], &raw[2]].map(|x| Quantized::of(x));
        let mut x = Fp8Buffers::<bf16>::new(&gpu, &p, [&parts[0], &parts[1], &parts[2]]).unwrap();
        fp8::transpose(&gpu, &p, &mut x).unwrap();
        let got = gpu.download(x.vt()).unwrap();
        assert!(got == fp8::transposed(&p, &parts[2].values), "Vᵀ of s_k {s_k}, d {d}");
    }
}

/// The FP8 step verified on both kinds of input; its RMSE below a tenth
/// of O's RMS (a key matched with the wrong V row would pass it on the
/// outlier case: one key there carries a row).
fn check(p: Problem) {
    let gpu = Gpu::emulator();
    let outcome = fp8::run::<bf16>(&gpu, &p, None, true).unwrap();
    let worst = outcome.worst.unwrap_or_else(|e| panic!("{e}"));
    assert!(worst <= 1.0);
    assert_eq!(outcome.accuracy.len(), 2);
    for a in &outcome.accuracy {
        assert!(a.fp8 <= 0.1 * a.rms, "{p} {}: RMSE {} against O's RMS {}", a.inputs, a.fp8, a.rms);
        assert!(a.bf16 <= a.fp8, "{p} {}: bf16's RMSE {} above FP8's {}", a.inputs, a.bf16, a.fp8);
    }
}

#[test]
fn fp8_d64_grouped() {
    check(Problem::new(2, 4, 2, (130, 130), 64, false));
}

#[test]
fn fp8_d128_causal_lengths_differ() {
    check(Problem::new(1, 2, 1, (77, 200), 128, true));
    // More queries than keys: the first rows see none (O 0, lse +inf).
    check(Problem::new(1, 2, 2, (150, 33), 128, true));
}

#[test]
fn fp8_d256_one_key() {
    check(Problem::new(1, 2, 2, (70, 1), 256, false));
}

/// V's descale off by a tenth: every O is 10% off, which the bound must
/// see. It allows P's E4M3 rounding, 2^-4 of `sum w |v|`, so V is kept
/// positive here (O is then that sum, not a small difference of terms).
#[test]
fn fp8_bound_catches_a_wrong_descale() {
    let gpu = Gpu::emulator();
    let p = Problem::new(1, 2, 2, (64, 100), 128, false);
    let mut raw = Distribution::Uniform.draw(&p, 9);
    raw[2].iter_mut().for_each(|x| *x = 0.75 + 0.25 * *x);
    let [q, k, v] = [&raw[0], &raw[1], &raw[2]].map(|x| Quantized::of(x));
    let wrong = Quantized { values: v.values.clone(), descales: vec![v.descales[0] * 1.1] };
    let rows = rows_to_check(&p);
    let arithmetic = Arithmetic::fp8((bf16::ROUNDING, bf16::TINY), 128);
    let want = reference_with(&p, (&q.dequantized(), &k.dequantized(), &v.dequantized()), &rows, arithmetic);
    let run = |v: &Quantized| verified(&gpu, &p, [&q, &k, v], &want);
    assert!(run(&v).is_ok());
    assert!(run(&wrong).is_err());
}

/// Descales per K/V head of each batch (`--head-descales`): heads whose
/// ranges differ (K's by 2x a head, V's by 8x), with grouped queries and
/// two batches. Each
/// head's own descales pass the bound; V's descales given to the wrong
/// heads (batch 0's two K/V heads swapped) fail it; descales per head for
/// some tensors and per tensor for another are a one-line error.
#[test]
fn fp8_descales_per_head() {
    let gpu = Gpu::emulator();
    let mut p = Problem::new(2, 4, 2, (70, 90), 128, false);
    p.head_descales = true;
    let groups = p.batch * p.kv_heads;
    let mut raw = Distribution::Uniform.draw(&p, 11);
    // Run g (a K/V head of a batch) of K scaled by 2^g, of V by 8^g / 8;
    // V kept positive, as above, so that a wrong descale moves every O.
    raw[2].iter_mut().for_each(|x| *x = 0.75 + 0.25 * *x);
    for (x, base) in raw.iter_mut().zip([1.0f32, 2.0, 8.0]).skip(1) {
        let n = x.len() / groups;
        x.iter_mut().enumerate().for_each(|(i, v)| *v *= base.powi((i / n) as i32) * 8.0 / base.powi(2));
    }
    let [q, k, v] = [&raw[0], &raw[1], &raw[2]].map(|x| Quantized::per_run(x, groups));
    assert!(v.descales[3] > 100.0 * v.descales[0], "{:?}", v.descales);
    let rows = rows_to_check(&p);
    let arithmetic = Arithmetic::fp8((bf16::ROUNDING, bf16::TINY), 128);
    let want = reference_with(&p, (&q.dequantized(), &k.dequantized(), &v.dequantized()), &rows, arithmetic);
    let run = |v: &Quantized| verified(&gpu, &p, [&q, &k, v], &want);
    run(&v).unwrap();
    let mut swapped = v.descales.clone();
    swapped.swap(0, 1);
    assert!(run(&Quantized { values: v.values.clone(), descales: swapped }).is_err());
    let one = Quantized::of(&raw[2]);
    let e = Fp8Buffers::<bf16>::new(&gpu, &p, [&q, &k, &one]).err().expect("mixed descales refused");
    assert!(e.to_string().contains("descales of Q, K and V number [4, 4, 1]"), "{e}");
    // The whole run: verified, and its accuracy measured, per head.
    check(p);
}

/// The FP8 step on `inputs` against `want` (the worst error over its
/// bound, or what exceeded it).
fn verified(
    gpu: &Gpu,
    p: &Problem,
    inputs: [&Quantized; 3],
    want: &kernel_lab::attention::Reference,
) -> Result<f64, String> {
    let mut x = Fp8Buffers::<bf16>::new(gpu, p, inputs).unwrap();
    fp8::transpose(gpu, p, &mut x).unwrap();
    fp8::launch_fp8(gpu, p, &mut x).unwrap();
    verify("fp8", p, &gpu.download(&x.o).unwrap(), &gpu.download(&x.lse).unwrap(), want)
}
