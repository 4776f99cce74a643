//! The generic `wgmma` forms on the emulator (`gpu::dev::wgmma::Accumulators`):
//! `m64n64k16` with A and B K-major in shared memory, `m64n128k16` with B
//! MN-major, `m64n256k16` with A from registers (the `m16n8k16` A
//! fragment) and B MN-major, each D against the host's product of the
//! same bf16 inputs. The inputs are small integers, so every product and
//! sum is exact and the comparison is equality.

use gpu::dev::tma::swizzle_128;
use gpu::dev::wgmma::{Accumulators, Descriptor, d_f32, fence, shared_address, wait_for};
use gpu::dev::{In, Out, SharedArray, sync_threads, thread_idx_x};
use gpu::kernel;
use kernel_lab::runtime::Gpu;

/// Bytes of the A tile (64 rows of 128 bytes, k in the first 32), of the
/// K-major B (64 rows of n, k in the first 32 bytes of each), and of the
/// MN-major B (16 k-rows of 256 n: four column blocks of 64, 2 KB each).
const A_AT: usize = 0;
const BK_AT: usize = 8192;
const BM_AT: usize = 16384;
const SHARED: usize = 16384 + 4 * 2048;

/// `a` is 64 x 16 (row-major), `b` 16 x 256 (row-major, k x n), as bf16
/// bits. `d64 = A B[:, ..64]` (both operands K-major in shared memory),
/// `d128 = A B[:, ..128]` (B MN-major), `d256 = A B` (A from registers, B
/// MN-major); each 64 rows, row-major.
#[kernel(block = 128, shared = SHARED)]
pub fn wgmma_forms(a: In<u16>, b: In<u16>, d64: Out<f32>, d128: Out<f32>, d256: Out<f32>) {
    let t = thread_idx_x() as usize;
    // SAFETY: the launch's SHARED bytes; each element written by one
    // thread, all read after the barrier.
    let smem = unsafe { SharedArray::<u16>::launch_sized() };
    let put = |byte: usize, bits: u16| {
        // SAFETY: as above (every byte offset below SHARED, even).
        unsafe { smem.set(swizzle_128(byte) / 2, bits) }
    };
    let mut i = t;
    while i < 64 * 16 {
        let (r, k) = (i / 16, i % 16);
        // SAFETY: i < 64 x 16, a's length.
        put(A_AT + 128 * r + 2 * k, unsafe { a.load(i) });
        i += 128;
    }
    let mut i = t;
    while i < 16 * 256 {
        let (k, n) = (i / 256, i % 256);
        // SAFETY: i < 16 x 256, b's length.
        let bits = unsafe { b.load(i) };
        if n < 64 {
            put(BK_AT + 128 * n + 2 * k, bits);
        }
        put(BM_AT + 2048 * (n / 64) + 128 * k + 2 * (n % 64), bits);
        i += 128;
    }
    sync_threads();
    let base = shared_address(gpu::dev::shared::launch_sized_base());
    let desc = |at: usize, lbo: u32| Descriptor::swizzled(128, base + at as u32, lbo, 1024);
    fence();
    // SAFETY (the three products): the warpgroup, converged; the operands
    // written and ordered by the barrier (the emulator's async proxy needs
    // no fence).
    let s64 =
        unsafe { <[f32; 32]>::zeroed().mma_ss::<half::bf16, false>(desc(A_AT, 16), desc(BK_AT, 16), false) };
    // SAFETY: as above.
    let s128 =
        unsafe { <[f32; 64]>::zeroed().mma_ss::<half::bf16, true>(desc(A_AT, 16), desc(BM_AT, 2048), false) };
    let (w, g, q) = (t / 32, t % 32 / 4, t % 4);
    let fragment: [u32; 4] = core::array::from_fn(|j| {
        let (r, k) = (16 * w + g + 8 * (j % 2), 2 * q + 8 * (j / 2));
        // SAFETY: r < 64, k + 1 < 16: inside a.
        unsafe { u32::from(a.load(16 * r + k)) | u32::from(a.load(16 * r + k + 1)) << 16 }
    });
    // SAFETY: as above.
    let s256 =
        unsafe { <[f32; 128]>::zeroed().mma_rs::<half::bf16, true>(fragment, desc(BM_AT, 2048), false) };
    // One group, waited for before the accumulators are read (the emulator
    // checks the operands' reads at the wait).
    gpu::dev::wgmma::commit();
    let (s64, s128, s256) = (wait_for::<0, _>(s64), wait_for::<0, _>(s128), wait_for::<0, _>(s256));
    let store = |d: &Out<f32>, n: usize, i: usize, x: f32| {
        let (r, c) = d_f32(t as u32, i as u32);
        // SAFETY: inside the 64 x n output; each element this thread's.
        unsafe { d.store(r as usize * n + c as usize, x) };
    };
    for (i, &x) in s64.iter().enumerate() {
        store(&d64, 64, i, x);
    }
    for (i, &x) in s128.iter().enumerate() {
        store(&d128, 128, i, x);
    }
    for (i, &x) in s256.iter().enumerate() {
        store(&d256, 256, i, x);
    }
}

#[test]
fn wgmma_forms_match_the_host_product() {
    let gpu = Gpu::emulator();
    let value = |i: usize, m: usize| ((i * 7 + 3) % m) as f32 - (m / 2) as f32;
    let a: Vec<f32> = (0..64 * 16).map(|i| value(i, 9)).collect();
    let b: Vec<f32> = (0..16 * 256).map(|i| value(i, 11)).collect();
    let bits = |x: &[f32]| -> Vec<u16> { x.iter().map(|&v| half::bf16::from_f32(v).to_bits()).collect() };
    let (da, db) = (gpu.upload(&bits(&a)).unwrap(), gpu.upload(&bits(&b)).unwrap());
    let mut outs: Vec<_> =
        [64, 128, 256].iter().map(|n| gpu.upload(&vec![f32::NAN; 64 * n]).unwrap()).collect();
    let [o64, o128, o256] = &mut outs[..] else { unreachable!() };
    // SAFETY: the buffers hold the lengths the kernel's contract names.
    unsafe { wgmma_forms::launch(&gpu, 1, &da, &db, o64, o128, o256) }.unwrap();
    gpu.sync().unwrap();
    for (out, n) in [(&*o64, 64), (&*o128, 128), (&*o256, 256)] {
        let got = gpu.download(out).unwrap();
        for r in 0..64 {
            for c in 0..n {
                let want: f32 = (0..16).map(|k| a[16 * r + k] * b[256 * k + c]).sum();
                assert_eq!(got[r * n + c], want, "m64n{n}k16: D[{r}][{c}]");
            }
        }
    }
}

/// A ring of one stage, filled twice. The first warpgroup's thread 0
/// copies the 64 x 64 bf16 tile of map 0 into the stage with TMA, waits
/// for the stage's release, and copies it again; the second warpgroup
/// multiplies each fill by itself (`m64n64k16`, D = A Aᵀ over the first 16
/// columns), sums the two products into `out`, and releases the stage
/// after the first. `early` releases it before waiting for the product
/// (`wgmma.wait_group`): the tensor cores may still be reading the stage
/// when the copy refills it, a race on a GPU whatever the timing.
#[kernel(block = 256, shared = 8192 + 16, arch = "sm_90a")]
pub fn stage_release_probe(maps: In<u64>, out: Out<f32>, early: u32) {
    use gpu::dev::barrier::{Mbarrier, fence_init};
    use gpu::dev::tma::copy_2d;
    let t = thread_idx_x() as usize;
    // SAFETY: 8192 bytes of stage, then the two mbarriers (the
    // declaration's); the early release is the point of `early`.
    unsafe {
        let (full, empty) = (
            Mbarrier::at(SharedArray::launch_sized_at(8192), 0),
            Mbarrier::at(SharedArray::launch_sized_at(8192), 1),
        );
        let stage = gpu::dev::shared::launch_sized_base();
        if t == 0 {
            full.init(1);
            empty.init(1);
            fence_init();
        }
        sync_threads();
        if t == 0 {
            for round in 0..2 {
                if round == 1 {
                    empty.wait(0);
                }
                full.arrive_expect_tx(8192);
                copy_2d(stage, maps, 0, (0, 0), full);
            }
        } else if t >= 128 {
            let wt = t - 128;
            let desc = Descriptor::swizzled(128, shared_address(stage), 16, 1024);
            let mut sum = [0.0f32; 32];
            for round in 0..2 {
                full.wait(round);
                fence();
                let part = <[f32; 32]>::zeroed().mma_ss::<half::bf16, false>(desc, desc, false);
                gpu::dev::wgmma::commit();
                let release = round == 0 && wt == 0;
                if release && early == 1 {
                    empty.arrive();
                }
                let part = wait_for::<0, _>(part);
                if release && early == 0 {
                    empty.arrive();
                }
                for (s, p) in sum.iter_mut().zip(part) {
                    *s += p;
                }
            }
            for (i, &x) in sum.iter().enumerate() {
                let (r, c) = d_f32(wt as u32, i as u32);
                out.store(64 * r as usize + c as usize, x);
            }
        }
    }
}

/// The emulator checks a `wgmma`'s shared operands as read until the wait
/// that retires its group, and a TMA copy as a write when it is issued:
/// a stage released for refilling before its product was waited for is a
/// race (reported whichever thread the emulator runs first), and the same
/// ring released after the wait is not.
#[test]
fn a_stage_released_before_its_wgmma_is_waited_for_is_a_race() {
    let gpu = Gpu::emulator();
    let value = |i: usize| ((i * 5 + 1) % 7) as f32 - 3.0;
    let a: Vec<f32> = (0..64 * 64).map(value).collect();
    let bits: Vec<u16> = a.iter().map(|&v| half::bf16::from_f32(v).to_bits()).collect();
    let da = gpu.upload(&bits).unwrap();
    let maps = gpu.upload(&gpu.tensor_map(&da, (64, 64), (64, 64)).unwrap()).unwrap();
    let run = |early: u32| {
        let mut out = gpu.upload(&vec![f32::NAN; 64 * 64]).unwrap();
        // SAFETY: the buffers hold what the kernel's doc says.
        unsafe { stage_release_probe::launch(&gpu, 1, &maps, &mut out, early) }
            .map(|()| gpu.download(&out).unwrap())
            .map_err(|e| e.to_string())
    };
    let got = run(0).unwrap();
    for r in 0..64 {
        for c in 0..64 {
            let want: f32 = 2.0 * (0..16).map(|k| a[64 * r + k] * a[64 * c + k]).sum::<f32>();
            assert_eq!(got[64 * r + c], want, "D[{r}][{c}]");
        }
    }
    let race = run(1).unwrap_err();
    assert!(
        race.contains("race (write after read)") && race.contains("no sync_threads or mbarrier"),
        "{race}"
    );
}
