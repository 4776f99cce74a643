//! Attention on the emulator: every step, bf16 and f16, every head
//! dimension, odd lengths, `s_q != s_k` both ways, causal and not,
//! grouped-query heads, every element of O and lse within the bound the
//! family derives (`cpu/src/families/attention.rs`); that bound catches a
//! kernel computing with a wrong scale; the fused kernel's shared memory
//! is conflict-free; the emulator's `ex2.approx` and `lg2.approx` models;
//! decode with a contiguous and a paged cache, split and not, and an
//! appended token.

use gpu::dev::fp8::E4m3;
use gpu::dev::math::{ex2_approx, lg2_approx};
use kernel_lab::attention::decode::launch::CacheElement;
use kernel_lab::attention::decode::{self, Cache, Decode, DecodeBuffers, Plan};
use kernel_lab::attention::{self, Buffers, Element, Problem, Step};
use kernel_lab::gemm::{self, Bf16, F16, Input, TensorGemm};
use kernel_lab::runtime::Gpu;

/// Runs `step` on `p` in `P` on the emulator and checks every row.
fn check<P: gemm::Precision<Input: Element>>(step: Step, p: Problem) {
    let gpu = Gpu::emulator();
    let outcome = attention::run_steps::<P>(&gpu, &p, &[step], None).unwrap();
    if let Err(e) = &outcome[0].1.worst {
        panic!("{} {p}: {e}", step.name());
    }
}

fn problem(heads: (usize, usize), (s_q, s_k): (usize, usize), d: usize, causal: bool) -> Problem {
    Problem::new(1, heads.0, heads.1, (s_q, s_k), d, causal)
}

#[test]
fn flash_d64() {
    check::<Bf16>(Step::Flash, problem((4, 2), (17, 17), 64, false));
    check::<F16>(Step::Flash, problem((4, 1), (77, 130), 64, true));
    check::<Bf16>(Step::Flash, problem((1, 1), (130, 130), 64, true));
}

#[test]
fn flash_d128() {
    // s_q > s_k, causal: the first 53 queries see no key.
    check::<Bf16>(Step::Flash, problem((2, 2), (130, 77), 128, true));
    check::<F16>(Step::Flash, problem((2, 1), (1, 1), 128, false));
    check::<F16>(Step::Flash, problem((1, 1), (1, 77), 128, true));
    // Two passes of 32 keys a stage: at 77 keys (above) the second
    // stage's second pass lies past K's end and is skipped; at 100 = 64 +
    // 32 + 4 it holds 4 keys, masked.
    check::<Bf16>(Step::Flash, problem((2, 1), (200, 100), 128, false));
}

#[test]
fn flash_d256() {
    check::<Bf16>(Step::Flash, problem((2, 1), (33, 33), 256, true));
    check::<F16>(Step::Flash, problem((1, 1), (17, 40), 256, false));
}

#[test]
fn hopper_d64() {
    // Two query tiles, each warpgroup's rows masked differently; causal
    // with s_q > s_k (the first 53 queries see no key) and grouped heads.
    check::<Bf16>(Step::Hopper, problem((4, 2), (17, 17), 64, false));
    check::<F16>(Step::Hopper, problem((2, 1), (130, 77), 64, true));
    check::<Bf16>(Step::Hopper, problem((1, 1), (1, 200), 64, true));
}

#[test]
fn hopper_d128() {
    check::<Bf16>(Step::Hopper, problem((2, 2), (77, 130), 128, true));
    check::<F16>(Step::Hopper, problem((2, 1), (1, 1), 128, false));
    // The consumers taking turns (the ping-pong), over several key tiles.
    let turns = Problem { ping_pong: true, ..problem((2, 1), (200, 300), 128, true) };
    check::<Bf16>(Step::Hopper, turns);
}

/// Causal tiles are dealt longest first in rounds that turn back at each
/// end, group of heads by group: every tile index goes to one block, at
/// any grid, and on an emulated device of 3 SMs (3 blocks, 2 and 3 heads
/// of 3 query tiles: turned rounds and a partial last one; 4 heads dealt
/// two at a time) every row is right.
#[test]
fn hopper_causal_deal_covers_every_tile_once() {
    use gpu::attention::hopper::{block_tiles, dealt, rounds};
    for (count, grid) in [(1u32, 1u32), (7, 3), (2048, 132), (131, 132), (264, 132), (10, 4), (9, 4)] {
        for turn in [false, true] {
            let mut seen = vec![0; count as usize];
            for block in 0..grid {
                for round in 0..rounds(block, grid, count, turn) {
                    seen[dealt(block, grid, round, turn) as usize] += 1;
                }
            }
            assert!(seen.iter().all(|&n| n == 1), "{count} tiles on {grid} blocks, turn {turn}: {seen:?}");
        }
    }
    assert_eq!(dealt(0, 4, 1, true), 7, "odd rounds turn back");
    assert_eq!(dealt(0, 4, 1, false), 4);
    // Dealt group by group: still every tile once, each group's before the
    // next's.
    for (per_group, groups, grid) in [(6u32, 2u32, 3u32), (264, 8, 132), (256, 8, 132), (7, 3, 3), (5, 4, 4)]
    {
        let mut seen = vec![0; (per_group * groups) as usize];
        for block in 0..grid {
            let tiles: Vec<u32> = block_tiles(block, grid, (per_group, groups), true).collect();
            assert!(
                tiles.windows(2).all(|w| w[0] / per_group <= w[1] / per_group),
                "{tiles:?}: groups in order"
            );
            tiles.iter().for_each(|&i| seen[i as usize] += 1);
        }
        assert!(seen.iter().all(|&n| n == 1), "{groups} groups of {per_group} on {grid} blocks: {seen:?}");
    }
    // The sweep's causal problems on an H100's 132 SMs: dealt in groups
    // of whole K/V heads (dividing the heads), not every head at once.
    for (b, h, kv, s) in [(4, 16, 16, 4096), (4, 16, 16, 4097), (1, 16, 16, 16384), (4, 16, 4, 4096)] {
        let g = attention::deal_group(&Problem::new(b, h, kv, (s, s), 128, true), 132) as usize;
        assert!(
            g > 0 && g < b * h && (b * h).is_multiple_of(g) && g.is_multiple_of(h / kv),
            "{b}x{h}/{kv}x{s}: group {g}"
        );
    }
    let gpu = Gpu::emulator_with_sms(3);
    // Four heads in two K/V heads, 3 query tiles each: dealt two heads
    // (one K/V head) at a time on 3 blocks.
    let grouped = Problem::new(1, 4, 2, (300, 300), 64, true);
    assert_eq!(attention::deal_group(&grouped, 3), 2);
    for (p, heads) in
        [(problem((2, 1), (300, 300), 64, true), 2), (problem((3, 3), (257, 300), 64, true), 3), (grouped, 4)]
    {
        let outcome = attention::run_steps::<Bf16>(&gpu, &p, &[Step::Hopper], None).unwrap();
        if let Err(e) = &outcome[0].1.worst {
            panic!("{heads} heads, 3 SMs: {e}");
        }
    }
}

/// The last round split over every block (`hopper::Tail`): at any size
/// where it pays, the runs cover every key tile of the last round's tiles
/// once, each tile's chunks are the blocks its first and last unit name,
/// and no two chunks share a slot; the sweep's non-causal problems split
/// on an H100's 132 SMs, causal ones never. On 3 emulated SMs every row is
/// right with the chunks merged: fewer tiles than blocks, whole tiles then
/// a tile in three chunks (grouped heads), each head dimension (at d =
/// 256 with the lazy reference, which differs from chunk to chunk), and a
/// second launch on the same buffers (the workspace reused).
#[test]
fn hopper_split_last_round() {
    use gpu::attention::hopper::Tail;
    use std::collections::HashSet;
    for (tiles, kt, grid) in
        [(2048u32, 32u32, 132u32), (1024, 64, 132), (2, 6, 3), (4, 6, 3), (32, 64, 132), (137, 9, 5)]
    {
        let Some(t) = Tail::of(tiles, kt, grid) else { panic!("{tiles} tiles of {kt} on {grid}: no split") };
        assert_eq!(t.whole + t.tiles, tiles);
        let mut seen = vec![0; (t.tiles * kt) as usize];
        let mut slots = HashSet::new();
        for b in 0..grid {
            for n in 0..t.chunks(b) {
                let (i, j0, j1) = t.chunk(b, n);
                assert!(j0 < j1 && j1 <= kt, "block {b} chunk {n}: {i} {j0}..{j1}");
                (j0..j1).for_each(|j| seen[(i * kt + j) as usize] += 1);
                let (first, last) = t.blocks_of(i);
                assert!((first..=last).contains(&b), "tile {i}: blocks {first}..={last}, not {b}");
                assert!(slots.insert(t.slot(b, i)) && t.slot(b, i) < 2 * grid);
            }
        }
        assert!(seen.iter().all(|&n| n == 1), "{tiles} tiles of {kt} on {grid}: {seen:?}");
        let chunks: u32 = (0..t.tiles).map(|i| t.blocks_of(i).1 - t.blocks_of(i).0 + 1).sum();
        assert_eq!(chunks as usize, slots.len(), "{tiles} tiles of {kt} on {grid}");
    }
    // A last round of nearly every block, or runs too short, does not pay.
    assert!(
        Tail::of(131, 32, 132).is_none()
            && Tail::of(2047, 4, 132).is_none()
            && Tail::of(264, 32, 132).is_none()
    );
    for (b, h, s, d) in [(4, 16, 4096, 128), (2, 16, 8192, 128), (8, 16, 2048, 64), (4, 8, 4096, 256)] {
        assert!(
            attention::hopper_split(&Problem::new(b, h, h, (s, s), d, false), 132).is_some(),
            "{b}x{h}x{s}x{d}"
        );
        assert!(attention::hopper_split(&Problem::new(b, h, h, (s, s), d, true), 132).is_none());
    }
    let gpu = Gpu::emulator_with_sms(3);
    let lib = TensorGemm::new();
    let cases = [
        problem((2, 2), (77, 700), 64, false),
        Problem::new(1, 4, 2, (100, 700), 64, false),
        problem((2, 1), (64, 800), 128, false),
        Problem { scale: 1.0, ..problem((1, 1), (40, 500), 256, false) },
    ];
    for p in cases {
        assert!(attention::hopper_split(&p, 3).is_some(), "{p}: no split");
        let (q, k, v) = attention::inputs::<half::bf16>(&p, 7);
        let want = attention::reference_of(&p, (&q, &k, &v), &attention::rows_to_check(&p));
        let mut x = Buffers::new(&gpu, &p, &q, &k, &v).unwrap();
        for launch in 0..2 {
            gpu.poison(&mut x.o).unwrap();
            gpu.poison(&mut x.lse).unwrap();
            attention::launch::<Bf16>(&gpu, &lib, Step::Hopper, &p, &mut x).unwrap();
            let (o, lse) = (gpu.download(&x.o).unwrap(), gpu.download(&x.lse).unwrap());
            if let Err(e) = attention::verify("hopper split", &p, &o, &lse, &want) {
                panic!("{p}, launch {launch}: {e}");
            }
        }
    }
    let f16 = Problem::new(1, 2, 1, (130, 900), 128, false);
    let outcome = attention::run_steps::<F16>(&gpu, &f16, &[Step::Hopper], None).unwrap();
    if let Err(e) = &outcome[0].1.worst {
        panic!("{f16}, 3 SMs: {e}");
    }
}

#[test]
fn hopper_d256() {
    check::<Bf16>(Step::Hopper, problem((2, 1), (33, 70), 256, true));
    check::<F16>(Step::Hopper, problem((1, 1), (17, 40), 256, false));
    // At d = 256 a row's reference moves only when its maximum passes it
    // by more than 2^8: at scale 1 (scores spread over some 2^40) rows
    // pass it on later key tiles too, and the rescale runs mid-row.
    check::<Bf16>(Step::Hopper, Problem { scale: 1.0, ..problem((1, 1), (70, 300), 256, false) });
    check::<F16>(Step::Hopper, Problem { scale: 0.5, ..problem((1, 1), (65, 257), 256, true) });
}

#[test]
fn unfused() {
    check::<Bf16>(Step::Unfused, problem((4, 2), (17, 17), 64, true));
    check::<F16>(Step::Unfused, problem((2, 1), (77, 130), 128, false));
    check::<Bf16>(Step::Unfused, problem((1, 1), (130, 77), 64, true));
    check::<F16>(Step::Unfused, problem((1, 1), (1, 1), 256, false));
}

/// A kernel run with a scale 5% off (what a wrong `1 / sqrt(d)`, or a
/// forgotten `log2 e` in part of the arithmetic, would give) is caught:
/// some element leaves its bound, for every step and both precisions.
#[test]
fn the_bound_catches_a_wrong_scale() {
    let gpu = Gpu::emulator();
    let lib = TensorGemm::new();
    for step in Step::ALL {
        for f16 in [false, true] {
            let p = problem((2, 1), (40, 40), 64, false);
            let wrong = Problem { scale: p.scale * 1.05, ..p };
            let caught = if f16 {
                wrong_scale::<F16>(&gpu, &lib, step, p, wrong)
            } else {
                wrong_scale::<Bf16>(&gpu, &lib, step, p, wrong)
            };
            assert!(caught, "{} f16 {f16}: a 5% scale error passed", step.name());
        }
    }
}

/// Whether `verify` rejects `step` run at `wrong`'s scale against `p`'s
/// reference.
fn wrong_scale<P: gemm::Precision<Input: Element>>(
    gpu: &Gpu,
    lib: &TensorGemm,
    step: Step,
    p: Problem,
    wrong: Problem,
) -> bool {
    let (q, k, v) = attention::inputs::<P::Input>(&p, 3);
    let rows: Vec<usize> = (0..p.rows()).collect();
    let want = attention::reference_of(&p, (&q, &k, &v), &rows);
    let mut x = Buffers::new(gpu, &p, &q, &k, &v).unwrap();
    attention::launch::<P>(gpu, lib, step, &wrong, &mut x).unwrap();
    gpu.sync().unwrap();
    let (o, lse) = (gpu.download(&x.o).unwrap(), gpu.download(&x.lse).unwrap());
    // The right scale passes on the same inputs.
    attention::launch::<P>(gpu, lib, step, &p, &mut x).unwrap();
    gpu.sync().unwrap();
    let (o2, lse2) = (gpu.download(&x.o).unwrap(), gpu.download(&x.lse).unwrap());
    attention::verify("right", &p, &o2, &lse2, &want).unwrap();
    attention::verify("wrong", &p, &o, &lse, &want).is_err()
}

/// The fused kernel's `ldmatrix` reads (Q, K, and V transposed) and its
/// `cp.async` tiles are served in one pass per 8 x 8 matrix or per 8
/// lanes: the swizzle leaves no bank conflict.
#[test]
fn flash_shared_memory_is_conflict_free() {
    let gpu = Gpu::emulator();
    let p = problem((1, 1), (64, 128), 64, false);
    let (q, k, v) = attention::inputs::<half::bf16>(&p, 5);
    let mut x = Buffers::new(&gpu, &p, &q, &k, &v).unwrap();
    gpu.set_analysis(true);
    attention::launch::<Bf16>(&gpu, &TensorGemm::new(), Step::Flash, &p, &mut x).unwrap();
    gpu.sync().unwrap();
    let a = gpu.take_analysis();
    assert_eq!(a.shared_loads.efficiency(), 1.0, "{:?}", a.shared_loads);
    assert_eq!(a.shared_stores.efficiency(), 1.0, "{:?}", a.shared_stores);
    assert!(a.shared_loads.requests > 0);
}

/// The host models of `ex2.approx.ftz` and `lg2.approx.ftz`: exact powers
/// and logarithms where the host's are, the flushes to zero, infinities.
#[test]
fn ex2_and_lg2_models() {
    assert_eq!(ex2_approx(0.0), 1.0);
    assert_eq!(ex2_approx(-3.0), 0.125);
    assert_eq!(ex2_approx(f32::NEG_INFINITY), 0.0);
    // 2^-130 is subnormal: flushed.
    assert_eq!(ex2_approx(-130.0), 0.0);
    assert_eq!(ex2_approx(-126.0), f32::MIN_POSITIVE);
    assert_eq!(lg2_approx(8.0), 3.0);
    assert_eq!(lg2_approx(f32::MIN_POSITIVE / 2.0), f32::NEG_INFINITY);
    for x in [-10.5f32, -0.3, 0.7, 12.25] {
        let r = ex2_approx(x) as f64;
        assert!((r / f64::from(x).exp2() - 1.0).abs() <= gpu::dev::math::EX2_ERROR, "{x}");
    }
}

/// The sweep's data file: every line a problem the checks accept, the
/// long-sequence rows at each head dimension the targets name, and the
/// targets' file (which the report reads) parsed, each target covering at
/// least one problem of the sweep.
#[test]
fn sweep_and_targets_files() {
    let sweep = attention::sweep();
    assert_eq!(
        sweep.len(),
        attention::SWEEP.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')).count()
    );
    for p in &sweep {
        p.check().unwrap_or_else(|e| panic!("{p}: {e}"));
    }
    let targets = kernel_lab::report::targets::targets();
    assert!(!targets.attention.is_empty());
    for t in &targets.attention {
        assert!(["flash", "hopper", "unfused"].contains(&t.step.as_str()), "{}: step {}", t.what, t.step);
        // A backend of torch's, or (with its rate) a paper's.
        assert!(
            ["FLASH", "CUDNN"].contains(&t.backend.as_str()) || t.tflops.is_some(),
            "{}: backend {}",
            t.what,
            t.backend
        );
        assert!(t.precisions.iter().all(|p| ["bf16", "f16", "e4m3"].contains(&p.as_str())), "{}", t.what);
        assert!(
            sweep.iter().any(|p| t.applies(p.d, (p.s_q, p.s_k), p.causal)),
            "{} covers no problem of the sweep",
            t.what
        );
    }
}

/// Decode on the emulator: `p` in `P` (the cache in E4M3 where `p.fp8`)
/// by its plan on `slots` blocks (or with `splits` forced), every checked
/// row within its bound.
fn decode<P: gemm::Precision<Input: Element>>(p: &Decode, slots: u32, splits: Option<u32>) -> Plan {
    if p.fp8 {
        decode_with::<P, E4m3>(p, slots, splits)
    } else {
        decode_with::<P, P::Input>(p, slots, splits)
    }
}

fn decode_with<P: gemm::Precision<Input: Element>, C: CacheElement>(
    p: &Decode,
    slots: u32,
    splits: Option<u32>,
) -> Plan {
    use kernel_lab::attention::decode::run::{decode_inputs, decode_reference, rows_to_check, verify_decode};
    let gpu = Gpu::emulator();
    let inputs = decode_inputs::<P::Input, C>(p, 7);
    let cache = Cache::build(p, (&inputs.k, &inputs.v), 0, 11);
    let checked = rows_to_check(p);
    let want = decode_reference(p, &inputs, &checked);
    let mut x = DecodeBuffers::new(&gpu, p, &inputs.q, &cache, &inputs.scales).unwrap();
    let mut plan = decode::plan(p, slots);
    if let Some(s) = splits {
        plan.split_keys =
            p.max_len().div_ceil(s as usize).next_multiple_of(gpu::attention::flash::bc(p.d)) as u32;
        plan.splits = p.max_len().div_ceil(plan.split_keys as usize) as u32;
    }
    gpu.poison(&mut x.o).unwrap();
    gpu.poison(&mut x.lse).unwrap();
    decode::launch(&gpu, p, &plan, &mut x).and_then(|()| gpu.sync()).unwrap();
    let (o, lse) = (gpu.download(&x.o).unwrap(), gpu.download(&x.lse).unwrap());
    if let Err(e) = verify_decode("decode", p, (&o, &lse), &want, &checked) {
        panic!("{p} {plan:?}: {e}");
    }
    plan
}

fn decode_problem(batch: usize, heads: (usize, usize), s_q: usize, lens: &[usize], d: usize) -> Decode {
    let mut p = Decode::new(batch, heads, s_q, lens[0], d);
    p.lens = (0..batch).map(|b| lens[b % lens.len()]).collect();
    p
}

#[test]
fn decode_contiguous() {
    // One query, 4 heads a K/V head: 4 rows of a 32-row block, four warps
    // splitting each stage's keys; one split, then three.
    let p = decode_problem(2, (8, 2), 1, &[300, 77], 64);
    assert_eq!(decode::<Bf16>(&p, 64, Some(1)).splits, 1);
    assert_eq!(decode::<F16>(&p, 64, Some(3)).splits, 3);
    // d = 128, 8 heads a group and 5 queries: 40 rows, two warps a row
    // group of 64 rows; causal, split.
    let mut p = decode_problem(1, (8, 1), 5, &[333], 128);
    p.causal = true;
    let plan = decode::<Bf16>(&p, 8, Some(6));
    assert_eq!((plan.wk, plan.row_tiles, plan.splits), (2, 1, 6));
}

/// An FP8 (E4M3) cache, each K/V head with its own descales: contiguous
/// and paged, split, causal, bf16 queries (rounded to f16 for the f16
/// products) and f16, every head dimension.
#[test]
fn decode_fp8_cache() {
    let mut p = decode_problem(2, (8, 2), 3, &[300, 77], 128);
    (p.fp8, p.causal) = (true, true);
    decode::<Bf16>(&p, 16, Some(3));
    p.page_size = Some(16);
    decode::<F16>(&p, 16, Some(2));
    let mut p = decode_problem(1, (4, 4), 1, &[130], 64);
    p.fp8 = true;
    decode::<Bf16>(&p, 4, Some(1));
    let mut p = decode_problem(1, (16, 2), 2, &[99], 256);
    (p.fp8, p.page_size) = (true, Some(32));
    decode::<Bf16>(&p, 8, Some(2));
}

/// The decode's bound catches a scale off by 1%.
#[test]
fn decode_bound_catches_a_wrong_scale() {
    use kernel_lab::attention::decode::run::{decode_inputs, decode_reference, rows_to_check, verify_decode};
    let gpu = Gpu::emulator();
    let p = decode_problem(1, (4, 1), 2, &[200], 64);
    let inputs = decode_inputs::<Bf16Input, Bf16Input>(&p, 9);
    let checked = rows_to_check(&p);
    let want = decode_reference(&p, &inputs, &checked);
    let mut wrong = p.clone();
    wrong.scale *= 1.01;
    let cache = Cache::build(&wrong, (&inputs.k, &inputs.v), 0, 1);
    let mut x = DecodeBuffers::new(&gpu, &wrong, &inputs.q, &cache, &inputs.scales).unwrap();
    decode::launch(&gpu, &wrong, &decode::plan(&wrong, 4), &mut x).and_then(|()| gpu.sync()).unwrap();
    let (o, lse) = (gpu.download(&x.o).unwrap(), gpu.download(&x.lse).unwrap());
    assert!(verify_decode("decode", &p, (&o, &lse), &want, &checked).is_err());
}

#[test]
fn decode_paged() {
    // Pages of 16 dealt in shuffled order, sequences of different lengths
    // (one shorter than a split: its later splits are empty), causal with
    // 3 queries.
    let mut p = decode_problem(3, (4, 2), 3, &[200, 17, 129], 128);
    (p.causal, p.page_size) = (true, Some(16));
    decode::<Bf16>(&p, 16, Some(3));
    // d = 256: stages of 32 keys, 32 rows (16 heads x 2 queries) in two
    // warps a row group; pages of 64.
    let mut p = decode_problem(2, (16, 1), 2, &[100, 64], 256);
    p.page_size = Some(64);
    let plan = decode::<F16>(&p, 16, Some(2));
    assert_eq!((plan.wk, plan.row_tiles), (2, 1));
    // A group past a block's rows: 8 heads x 16 queries = 128 rows, at d =
    // 256 two row tiles of 64.
    let mut p = decode_problem(1, (8, 1), 16, &[70], 256);
    (p.causal, p.page_size) = (true, Some(32));
    assert_eq!(decode::<Bf16>(&p, 4, Some(1)).row_tiles, 2);
}

type Bf16Input = <Bf16 as gemm::Precision>::Input;

/// The corners: causal with more queries than a sequence's keys (rows
/// that see no key, through a split), four row groups of one warp each,
/// a partial last row tile, splits that end inside pages of 256, and more
/// splits than a warp has lanes (the merge's rounds).
#[test]
fn decode_corners() {
    let mut p = decode_problem(2, (2, 1), 16, &[300, 5], 64);
    p.causal = true;
    decode::<Bf16>(&p, 8, Some(3));
    decode::<F16>(&p, 8, Some(1));
    let mut p = decode_problem(1, (16, 1), 8, &[1000], 64);
    p.fp8 = true;
    assert_eq!(decode::<Bf16>(&p, 8, Some(2)).wk, 1);
    let p = decode_problem(2, (16, 1), 10, &[200, 33], 128);
    assert_eq!(decode::<Bf16>(&p, 8, Some(2)).row_tiles, 2);
    let mut p = decode_problem(1, (4, 2), 1, &[700], 64);
    p.page_size = Some(256);
    decode::<F16>(&p, 8, Some(5));
    let p = decode_problem(1, (4, 1), 1, &[3000], 128);
    assert_eq!(decode::<Bf16>(&p, 8, Some(47)).splits, 47);
}

/// Packed variable-length sequences (`cu_seqlens`): Q and O `[tokens,
/// heads, d]`, each sequence against its own keys. A prefill of three
/// lengths, causal, grouped heads, several row tiles a sequence (the
/// block's causal key limit from its latest query), split; queries fewer
/// than keys on a paged FP8 cache; d = 256 unmasked.
#[test]
fn decode_packed_sequences() {
    let mut p = Decode::packed((8, 2), vec![100, 7, 33], vec![100, 7, 33], 64);
    p.causal = true;
    assert_eq!(decode::<Bf16>(&p, 8, Some(2)).row_tiles, 4);
    decode::<F16>(&p, 8, Some(1));
    let mut p = Decode::packed((4, 1), vec![5, 40], vec![300, 40], 128);
    (p.causal, p.fp8, p.page_size) = (true, true, Some(16));
    decode::<Bf16>(&p, 8, Some(3));
    let p = Decode::packed((2, 2), vec![3, 20], vec![50, 64], 256);
    decode::<Bf16>(&p, 8, None);
}

/// A 16-bit cache's descales are applied too: K and V stored doubled
/// (exactly) over descales of one half give the same attention; and a plan
/// the kernels cannot run by, or a descale of 0, is refused before any
/// work.
#[test]
fn decode_descales_and_bad_plans() {
    use kernel_lab::attention::decode::run::{decode_inputs, decode_reference, rows_to_check, verify_decode};
    let gpu = Gpu::emulator();
    let mut p = decode_problem(2, (4, 2), 2, &[150, 90], 64);
    p.causal = true;
    let mut inputs = decode_inputs::<Bf16Input, Bf16Input>(&p, 5);
    let checked = rows_to_check(&p);
    let want = decode_reference(&p, &inputs, &checked);
    let double = |x: &mut Vec<Vec<Bf16Input>>| {
        x.iter_mut().flatten().for_each(|v| *v = Bf16Input::round_f32(2.0 * v.to_f64() as f32));
    };
    double(&mut inputs.k);
    double(&mut inputs.v);
    let cache = Cache::build(&p, (&inputs.k, &inputs.v), 0, 2);
    let mut x = DecodeBuffers::new(&gpu, &p, &inputs.q, &cache, &[0.5; 4]).unwrap();
    let plan = decode::plan(&p, 4);
    decode::launch(&gpu, &p, &plan, &mut x).and_then(|()| gpu.sync()).unwrap();
    let (o, lse) = (gpu.download(&x.o).unwrap(), gpu.download(&x.lse).unwrap());
    verify_decode("decode with descales", &p, (&o, &lse), &want, &checked).unwrap();
    for bad in [Plan { wk: 8, ..plan }, Plan { row_tiles: 2, ..plan }, Plan { split_keys: 100, ..plan }] {
        let e = decode::launch(&gpu, &p, &bad, &mut x).unwrap_err().to_string();
        assert!(
            e.contains("warps a row group") || e.contains("row tiles") || e.contains("whole stages"),
            "{e}"
        );
    }
    let e = DecodeBuffers::new(&gpu, &p, &inputs.q, &cache, &[0.5, 0.0, 1.0, 1.0]).err().unwrap().to_string();
    assert!(e.contains("a descale of 0"), "{e}");
}

/// Appending a token writes its rows of K and V and nothing else, and the
/// next decode sees it.
#[test]
fn decode_append() {
    use kernel_lab::attention::decode::run::{decode_inputs, decode_reference, verify_decode};
    let gpu = Gpu::emulator();
    let mut p = decode_problem(2, (4, 2), 1, &[47, 48], 64);
    p.page_size = Some(16);
    let mut inputs = decode_inputs::<Bf16Input, Bf16Input>(&p, 3);
    let mut cache = Cache::build(&p, (&inputs.k, &inputs.v), 16, 5);
    let before = cache.clone();
    // The new token of sequence 1 (48 keys: its third page is full, the
    // token opens the fourth).
    let (row_k, row_v) = (vec![Bf16Input::round_f32(0.5); 2 * 64], vec![Bf16Input::round_f32(-0.25); 2 * 64]);
    let written = cache.append(1, 48, (&row_k, &row_v));
    assert_eq!(written.len(), 2 * 64);
    let moved = (0..cache.k.len()).filter(|i| cache.k[*i] != before.k[*i] || cache.v[*i] != before.v[*i]);
    assert!(moved.into_iter().all(|i| written.contains(&i)), "an append moved another token");
    // The same token in the reference's layout: `[kv_heads, len, d]`.
    for (seq, row) in [(&mut inputs.k[1], &row_k), (&mut inputs.v[1], &row_v)] {
        let mut grown = Vec::new();
        for h in 0..2 {
            grown.extend_from_slice(&seq[h * 48 * 64..(h + 1) * 48 * 64]);
            grown.extend_from_slice(&row[h * 64..(h + 1) * 64]);
        }
        *seq = grown;
    }
    p.lens[1] = 49;
    let checked: Vec<(usize, Vec<usize>)> = (0..2).map(|b| (b, (0..4).collect())).collect();
    let want = decode_reference(&p, &inputs, &checked);
    let mut x = DecodeBuffers::new(&gpu, &p, &inputs.q, &cache, &inputs.scales).unwrap();
    let plan = decode::plan(&p, 8);
    decode::launch(&gpu, &p, &plan, &mut x).and_then(|()| gpu.sync()).unwrap();
    let (o, lse) = (gpu.download(&x.o).unwrap(), gpu.download(&x.lse).unwrap());
    verify_decode("decode after an append", &p, (&o, &lse), &want, &checked).unwrap();
}

/// The plan's model: few sequences split their keys to fill the slots;
/// many sequences do not split; rows pick the warps per row group.
#[test]
fn decode_plan() {
    let few = Decode::new(1, (64, 8), 1, 131072, 128);
    let plan = decode::plan(&few, 264);
    assert!(plan.blocks(&few) >= 256 && plan.blocks(&few) <= 264, "{plan:?}");
    let many = Decode::new(128, (32, 8), 1, 4096, 128);
    assert_eq!(decode::plan(&many, 264).splits, 1);
    let speculative = Decode::new(8, (32, 4), 16, 8192, 128);
    let plan = decode::plan(&speculative, 264);
    assert_eq!((plan.wk, plan.row_tiles), (1, 1), "{plan:?}");
    // A table naming a page past the pool, or a sequence longer than its
    // table's room, is refused before any work.
    let mut p = Decode::new(2, (2, 1), 1, 40, 64);
    p.page_size = Some(16);
    let zeros = vec![vec![Bf16Input::round_f32(0.0); 40 * 64]; 2];
    let mut cache = Cache::build(&p, (&zeros, &zeros), 0, 1);
    assert!(cache.check(&p).is_ok());
    cache.table[1] = 6;
    assert!(cache.check(&p).unwrap_err().to_string().contains("past the pool's 6"));
    p.lens[0] = 49;
    assert!(cache.check(&p).unwrap_err().to_string().contains("49 keys"));
    // A bad page size is refused before any work.
    let mut p = Decode::new(1, (2, 1), 1, 100, 64);
    p.page_size = Some(48);
    assert!(p.check().unwrap_err().to_string().contains("power of two"));
}
