//! Attention's backward on the emulator: every step, bf16 and f16, head
//! dimensions 64 and 128 (and 256 for the unfused step), odd lengths,
//! `s_q != s_k` both ways, causal and not, grouped-query heads; every
//! element of dQ, dK and dV within the bound the reference derives. The
//! reference itself against central differences, and its bound against a
//! wrong scale.

use kernel_lab::attention::backward::{self, Inputs};
use kernel_lab::attention::{Problem, Step};
use kernel_lab::gemm::{self, Bf16, F16, Input};
use kernel_lab::measure::data;
use kernel_lab::runtime::Gpu;

/// Runs the backward `step` on `p` in `P` on the emulator (the forward
/// by the fused step) and checks every element.
fn check<P: gemm::Precision<Input: kernel_lab::attention::Element>>(step: Step, p: Problem) {
    let gpu = Gpu::emulator();
    let outcome = backward::run_steps::<P>(&gpu, &p, (Step::Flash, &[step]), None).unwrap();
    if let Err(e) = &outcome[0].1.worst {
        panic!("{} {p}: {e}", step.name());
    }
}

/// bf16's element type.
type B = <Bf16 as gemm::Precision>::Input;

fn problem(heads: (usize, usize), (s_q, s_k): (usize, usize), d: usize, causal: bool) -> Problem {
    Problem::new(1, heads.0, heads.1, (s_q, s_k), d, causal)
}

/// The reference's formulas are the gradients of `sum O ∘ dO`: central
/// differences agree to about `h^2`, causal with `s_q > s_k` (rows that
/// see no key) and `s_q < s_k`, grouped heads, two batches.
#[test]
fn reference_is_the_gradient() {
    for (b, h, kv, s_q, s_k, d, causal) in [
        (1, 2, 1, 3, 5, 4, true),
        (2, 1, 1, 4, 2, 3, true),
        (1, 2, 2, 3, 3, 5, false),
        (1, 4, 2, 2, 6, 2, true),
    ] {
        let p = Problem::new(b, h, kv, (s_q, s_k), d, causal);
        let f = |n: usize, seed: u64| -> Vec<f64> {
            data::uniform_f32(n, seed).iter().map(|&x| x as f64).collect()
        };
        let (q, k, v, d_o) = (f(p.q_len(), 1), f(p.kv_len(), 2), f(p.kv_len(), 3), f(p.q_len(), 4));
        let worst = backward::gradient_check(&p, (&q, &k, &v, &d_o), 1e-5);
        assert!(worst < 1e-7, "{p}: the reference differs from central differences by {worst:e}");
    }
}

/// The bound is tight enough to catch a scale off by 1% (dQ and dK carry
/// it once more than dV).
#[test]
fn bound_catches_a_wrong_scale() {
    let p = problem((2, 1), (40, 70), 64, true);
    let (q, k, v) = kernel_lab::attention::inputs::<B>(&p, 7);
    let d_o = backward::output_gradient::<B>(&p, 8);
    // O and lse: any values serve (the reference takes them as inputs).
    let o = backward::output_gradient::<B>(&p, 9);
    let lse: Vec<f32> = data::uniform_f32(p.rows(), 10).iter().map(|x| x + 3.0).collect();
    let values = Inputs::of((&q, &k, &v), (&o, &d_o), &lse);
    let (q_rows, k_rows) = ((0..p.rows()).collect::<Vec<_>>(), backward::key_rows_to_check(&p));
    let bounds = (B::ROUNDING, B::TINY);
    let want = backward::reference(&p, &values, (&q_rows, &k_rows), bounds);
    let wrong = Problem { scale: p.scale * 1.01, ..p };
    let got = backward::reference(&wrong, &values, (&q_rows, &k_rows), bounds);
    let round = |x: &[f64]| -> Vec<B> { x.iter().map(|&x| B::round_f32(x as f32)).collect() };
    let (dq, dk, dv) = (round(&got.dq.value), round(&got.dk.value), round(&got.dv.value));
    assert!(backward::verify("wrong scale", &p, (&dq, &dk, &dv), &want).is_err());
    let (dq, dk, dv) = (round(&want.dq.value), round(&want.dk.value), round(&want.dv.value));
    assert!(backward::verify("rounded reference", &p, (&dq, &dk, &dv), &want).is_ok());
}

#[test]
fn unfused() {
    check::<Bf16>(Step::Unfused, problem((2, 1), (77, 130), 64, true));
    check::<F16>(Step::Unfused, problem((2, 2), (130, 77), 128, true));
    check::<Bf16>(Step::Unfused, problem((1, 1), (33, 40), 256, false));
}

#[test]
fn flash_d64() {
    check::<Bf16>(Step::Flash, problem((4, 2), (17, 17), 64, false));
    // Causal with s_q > s_k: the first 53 queries see no key.
    check::<F16>(Step::Flash, problem((2, 1), (130, 77), 64, true));
    check::<Bf16>(Step::Flash, problem((1, 1), (1, 200), 64, true));
}

#[test]
fn flash_d128() {
    check::<Bf16>(Step::Flash, problem((2, 2), (77, 130), 128, true));
    check::<F16>(Step::Flash, problem((3, 1), (100, 65), 128, false));
}

#[test]
fn hopper_d64() {
    check::<Bf16>(Step::Hopper, problem((4, 2), (17, 17), 64, false));
    // Causal with s_q > s_k: the first 53 queries see no key; two key
    // tiles of 128, the second masked at K's end.
    check::<F16>(Step::Hopper, problem((2, 1), (130, 200), 64, true));
    // One query against two key tiles, the second holding one key.
    check::<Bf16>(Step::Hopper, problem((1, 1), (1, 129), 64, true));
}

#[test]
fn hopper_d128() {
    check::<Bf16>(Step::Hopper, problem((2, 2), (77, 130), 128, true));
    check::<F16>(Step::Hopper, problem((3, 1), (100, 65), 128, false));
}

/// The deterministic mode: dQ summed over the key tiles in order (blocks
/// waiting on their turn), verified, and the same bits on a second run
/// (`run_steps` checks), causal and not, with grouped heads and several
/// key tiles.
#[test]
fn flash_deterministic() {
    // Causal both ways: the adds run from each query tile's last key tile
    // down, the grid's first blocks taking the last key tiles.
    for p in [
        problem((2, 1), (130, 200), 64, true),
        problem((2, 2), (77, 150), 128, false),
        problem((1, 1), (300, 140), 128, true),
    ] {
        check::<Bf16>(Step::Flash, Problem { deterministic: true, ..p });
    }
}

/// The Hopper step's deterministic mode: the writer's adds in their fixed
/// order over several key tiles, causal both ways.
#[test]
fn hopper_deterministic() {
    for p in [
        problem((2, 1), (130, 300), 64, true),
        problem((1, 1), (77, 260), 128, false),
        problem((1, 1), (200, 140), 64, true),
    ] {
        check::<Bf16>(Step::Hopper, Problem { deterministic: true, ..p });
    }
}

/// The fused step refuses `d = 256` with a reason, before any work.
#[test]
fn flash_refuses_d256() {
    let e = backward::kernel(Step::Flash, "bf16", 256).unwrap_err().to_string();
    assert!(e.contains("64 and 128"), "{e}");
}
