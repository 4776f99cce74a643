//! The warp- and warpgroup-level matrix instructions on the emulator:
//! `mma.sync`, `ldmatrix`, `stmatrix` and `wgmma`, computed from the lane
//! maps, descriptors and swizzles of `gpu_isa` (what the ISA defines), with
//! the exchange among lanes done by the emulator's shuffles, so a lane that
//! does not take part is reported as for any warp-collective operation.
//!
//! Products of bf16, f16, tf32 and FP8 inputs are exact in `f64`, and so
//! are sums of up to 16 of them, or of E4M3's 32 (E5M2's 32 products can
//! span more than 53 bits, and their `f64` sum then rounds far below an
//! `f32` ulp): each lane's D is computed in `f64` and rounded once
//! to `f32` (the tensor core's own internal order and rounding are not
//! specified; the hosts' error bounds allow one `f32` ulp per addition).

use std::panic::Location;

use gpu_isa::Input;
use gpu_isa::mma::{a_bf16, a_fp8, a_tf32, b_bf16, b_fp8, b_tf32, c_f32, ldmatrix_source};
use gpu_isa::swizzle::swizzle;
use gpu_isa::wgmma::{Descriptor, d_f32, element_offset};

use super::abi::{Op, ShflOp, Site, Space};
use super::async_hooks::wgmma_read;
use super::hooks::{access, index, shared_base, shuffle};

/// This lane's index in its warp, and every lane's `mine`, exchanged
/// through the emulator's shuffles (two words per shuffle).
#[track_caller]
fn gather<const N: usize>(mine: [u32; N]) -> (u32, [[u32; N]; 32]) {
    let (t, _, dim, _) = index();
    let lane = (t[0] + dim[0] * (t[1] + dim[1] * t[2])) % 32;
    let mut all = [[0u32; N]; 32];
    for pair in (0..N).step_by(2) {
        let hi = if pair + 1 < N { mine[pair + 1] } else { 0 };
        let bits = mine[pair] as u64 | (hi as u64) << 32;
        for (j, theirs) in all.iter_mut().enumerate() {
            let got = shuffle(u32::MAX, ShflOp::Idx(j as u32), bits);
            theirs[pair] = got as u32;
            if pair + 1 < N {
                theirs[pair + 1] = (got >> 32) as u32;
            }
        }
    }
    (lane, all)
}

/// `mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}` (`input` Bf16 or
/// F16), `m16n8k8.row.col.f32.tf32.tf32.f32` (Tf32) or
/// `m16n8k32.row.col.f32.{e4m3,e5m2}` (E4m3, E5m2): this lane's D fragment
/// from its A, B and C fragments.
#[track_caller]
pub fn mma_sync(input: Input, a: [u32; 4], b: [u32; 2], c: [f32; 4]) -> [f32; 4] {
    let (lane, all) = gather([a[0], a[1], a[2], a[3], b[0], b[1]]);
    // A (16 x k) and B (k x 8), rebuilt from the lanes' elements.
    let mut wa = [[0.0f64; 32]; 16];
    let mut wb = [[0.0f64; 8]; 32];
    // Each form's lane maps; a register holds `per` elements, the lowest
    // index in the low bits (one tf32, two 16-bit, four FP8), and a row of
    // A covers k = 8 registers' elements.
    let (a_map, b_map): (LaneMap, LaneMap) = match input {
        Input::Tf32 => (a_tf32, b_tf32),
        Input::Bf16 | Input::F16 => (a_bf16, b_bf16),
        Input::E4m3 | Input::E5m2 => (a_fp8, b_fp8),
    };
    let bits = 8 * input.bytes().min(4) as u32;
    let per = 32 / bits;
    let k = 8 * per as usize;
    let element = |r: u32, i: u32| {
        let mask = if bits == 32 { u32::MAX } else { (1 << bits) - 1 };
        input.value((r >> (bits * (i % per))) & mask)
    };
    // This lane's four results lie in two rows of A and two columns of B
    // (`c_f32`): only their elements are decoded (most of the cost).
    let mine: [(u32, u32); 4] = core::array::from_fn(|i| c_f32(lane, i as u32));
    for (l, regs) in (0u32..).zip(&all) {
        for i in 0..4 * per {
            let (r, col) = a_map(l, i);
            if mine.iter().any(|m| m.0 == r) {
                wa[r as usize][col as usize] = element(regs[(i / per) as usize], i);
            }
        }
        for i in 0..2 * per {
            let (row, n) = b_map(l, i);
            if mine.iter().any(|m| m.1 == n) {
                wb[row as usize][n as usize] = element(regs[4 + (i / per) as usize], i);
            }
        }
    }
    core::array::from_fn(|i| {
        let (r, n) = mine[i];
        let dot: f64 = (0..k).map(|p| wa[r as usize][p] * wb[p][n as usize]).sum();
        (dot + c[i] as f64) as f32
    })
}

/// A row address of `ldmatrix`/`stmatrix` must be 16-byte aligned (the PTX
/// ISA leaves anything else undefined).
#[track_caller]
fn aligned(p: usize) {
    let offset = p - shared_base() as usize;
    assert!(offset.is_multiple_of(16), "ldmatrix/stmatrix row at shared byte {offset}, not on 16 bytes");
}

/// `ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16`: this lane gives the
/// row at shared address `p` (its read already checked by the caller);
/// returns its four registers.
#[track_caller]
pub fn ldmatrix_x4(p: usize, trans: bool) -> [u32; 4] {
    aligned(p);
    // SAFETY: the device layer checked the 16 bytes in the block's shared
    // memory through `access` before calling.
    let mine = unsafe { (p as *const [u32; 4]).read_unaligned() };
    let (lane, rows) = gather(mine);
    let element = |(row, e): (u32, u32)| (rows[row as usize][(e / 2) as usize] >> (16 * (e % 2))) & 0xffff;
    core::array::from_fn(|j| {
        let j = j as u32;
        element(ldmatrix_source(lane, j, trans, 0)) | element(ldmatrix_source(lane, j, trans, 1)) << 16
    })
}

/// `stmatrix.sync.aligned.m8n8.x4.shared.b16`: the inverse of
/// [`ldmatrix_x4`]; this lane gives the row at shared address `p` and its
/// four registers, and writes (checked) the row the warp's registers make.
#[track_caller]
pub fn stmatrix_x4(p: usize, regs: [u32; 4]) {
    aligned(p);
    let (lane, all) = gather(regs);
    // Row `lane % 8` of matrix `lane / 8`: its word `w` is register
    // `lane / 8` of lane `4 (lane % 8) + w`.
    let (matrix, row) = ((lane / 8) as usize, lane % 8);
    let mine: [u32; 4] = core::array::from_fn(|w| all[(4 * row) as usize + w][matrix]);
    let bytes: Vec<u8> = mine.iter().flat_map(|w| w.to_ne_bytes()).collect();
    access(Space::Shared, p, 16, Op::Write(&bytes), Location::caller());
    // SAFETY: `access` checked the 16 bytes in the block's shared memory.
    unsafe { (p as *mut [u32; 4]).write_unaligned(mine) };
}

/// A reader of element `(row, col)` of a `wgmma` operand, as `f64`.
fn operand(desc: Descriptor, mn_major: bool, input: Input) -> impl Fn(usize, usize) -> f64 {
    let base = shared_base() as usize;
    let bytes = input.bytes();
    move |row, col| {
        let at = base + swizzle(desc.span(), element_offset(desc, mn_major, bytes, (row, col)));
        // SAFETY: the warpgroup's first thread checked the unit in bounds
        // (see `wgmma`).
        let bits = unsafe {
            match bytes {
                1 => (at as *const u8).read() as u32,
                2 => (at as *const u16).read_unaligned() as u32,
                _ => (at as *const u32).read_unaligned(),
            }
        };
        input.value(bits)
    }
}

/// Checks every 16-byte unit of shared memory an operand's `rows x cols`
/// elements fall in (by the first thread of the warpgroup, once per
/// instruction).
fn check(desc: Descriptor, mn_major: bool, bytes: usize, (rows, cols): (usize, usize), site: Site) {
    let base = shared_base() as usize;
    let mut units: Vec<usize> = (0..rows)
        .flat_map(|r| (0..cols).step_by(16 / bytes).map(move |c| (r, c)))
        .map(|at| swizzle(desc.span(), element_offset(desc, mn_major, bytes, at)) & !15)
        .collect();
    units.sort_unstable();
    units.dedup();
    for u in units {
        wgmma_read(base + u, 16, site);
    }
}

/// A fragment's lane map: element `i` of lane `l` to `(row, column)`.
type LaneMap = fn(u32, u32) -> (u32, u32);

/// The A operand of a `wgmma`: K-major in shared memory, or (16-bit and
/// FP8 inputs) in registers, four a thread: its warp's 16 rows of A as
/// `mma.sync`'s `m16n8k16` (FP8: `m16n8k32`) A fragment (warp `w` of the warpgroup holds rows
/// `16 w..16 w + 16`, the rows of D it holds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WgmmaA {
    Shared(Descriptor),
    Registers([u32; 4]),
}

/// One `wgmma.mma_async.sync.aligned.m64n<N>k<k>.f32.<input>` with `N = 2
/// acc.len()`: `acc = A B + (scale_d ? acc : 0)` for this thread's `N / 2`
/// accumulators ([`d_f32`]). A as [`WgmmaA`] says; B in shared memory,
/// `k x N` MN-major when `b_mn_major` (16-bit inputs only: the
/// instruction's `tnspB`), else `N x k` K-major. With A in registers every
/// lane of the warp takes part (its fragment goes to the others, through
/// the emulator's shuffles).
pub fn wgmma(
    acc: &mut [f32],
    (a, b): (WgmmaA, Descriptor),
    (input, b_mn_major): (Input, bool),
    scale_d: bool,
    site: Site,
) {
    let n = 2 * acc.len();
    assert!(n.is_multiple_of(8) && (8..=256).contains(&n), "wgmma: no m64n{n} shape");
    let (t, _, dim, _) = index();
    let linear = t[0] + dim[0] * (t[1] + dim[1] * t[2]);
    let wt = linear % 128;
    let (bytes, k, mn) = (input.bytes(), 32 / input.bytes(), b_mn_major);
    assert!(!mn || bytes == 2, "wgmma: only 16-bit B is read MN-major");
    if wt == 0 {
        if let WgmmaA::Shared(a) = a {
            check(a, false, bytes, (64, k), site);
        }
        check(b, mn, bytes, if mn { (k, n) } else { (n, k) }, site);
    }
    // The warp's 16 rows of A (rows `16 w..`, as `r % 16`), from registers.
    let mut wa = [[0.0f64; 32]; 16];
    if let WgmmaA::Registers(regs) = a {
        assert!(bytes <= 2, "wgmma: A in registers is 16-bit or FP8");
        // A register holds `per` elements, the lowest index in the low
        // bits, laid out as `mma.sync`'s A fragment of the same input.
        let (map, per): (LaneMap, u32) = if bytes == 2 { (a_bf16, 2) } else { (a_fp8, 4) };
        let bits = 32 / per;
        let (_, all) = gather(regs);
        for (l, regs) in (0u32..).zip(&all) {
            for i in 0..4 * per {
                let (r, col) = map(l, i);
                let raw = (regs[(i / per) as usize] >> (bits * (i % per))) & ((1 << bits) - 1);
                wa[r as usize][col as usize] = input.value(raw);
            }
        }
    }
    let a_shared = match a {
        WgmmaA::Shared(d) => Some(operand(d, false, input)),
        WgmmaA::Registers(_) => None,
    };
    let a_at = |r: usize, k: usize| match &a_shared {
        Some(at) => at(r, k),
        None => wa[r % 16][k],
    };
    let b_raw = operand(b, mn, input);
    let b_at = |k: usize, n: usize| if mn { b_raw(k, n) } else { b_raw(n, k) };
    // The thread's accumulators lie in two rows of A and `n / 4` columns
    // of B (`d_f32`): each decoded once (decoding an element is most of a
    // product's cost), not once per accumulator.
    let (r0, _) = d_f32(wt, 0);
    let rows: [Vec<f64>; 2] = [0, 8].map(|h| (0..k).map(|p| a_at((r0 + h) as usize, p)).collect());
    let cols: Vec<Vec<f64>> = (0..acc.len() / 2)
        .map(|j| {
            let (_, c) = d_f32(wt, (4 * (j / 2) + j % 2) as u32);
            (0..k).map(|p| b_at(p, c as usize)).collect()
        })
        .collect();
    for (i, d) in acc.iter_mut().enumerate() {
        // Accumulator i: row r0 + 8 ((i / 2) % 2), column slot 2 (i / 4) + i % 2.
        let (a, b) = (&rows[i / 2 % 2], &cols[2 * (i / 4) + i % 2]);
        let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        *d = (dot + if scale_d { *d as f64 } else { 0.0 }) as f32;
    }
}
