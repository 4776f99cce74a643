//! The host side: each kernel run on a [`Gpu`] (a device or the emulator),
//! outputs poisoned first, every value compared with CUDA's semantics as
//! computed here. Each check returns `Err` naming the first wrong value.

use cuda_std::glam;
use lab_runtime::{Gpu, Result};

use super::*;

/// One area's outcome: its name and `Err(first wrong value)`.
pub type Outcome = (&'static str, std::result::Result<(), String>);

fn compare<T: PartialEq + std::fmt::Debug>(
    area: &str,
    got: &[T],
    want: &[T],
) -> std::result::Result<(), String> {
    match got.iter().zip(want).position(|(g, w)| g != w) {
        None if got.len() == want.len() => Ok(()),
        None => Err(format!("{area}: {} values, {} expected", got.len(), want.len())),
        Some(i) => Err(format!("{area}: value {i} is {:?}, expected {:?}", got[i], want[i])),
    }
}

/// Every index function over a 3-D grid of 3-D blocks.
pub fn check_indices(gpu: &Gpu) -> Result<Outcome> {
    let (block, grid) = ((4u32, 2u32, 2u32), (2u32, 3u32, 1u32));
    let threads = 16 * 6;
    let mut out = gpu.alloc::<u32>(threads * INDEX_VALUES)?;
    gpu.poison(&mut out)?;
    // SAFETY: INDEX_VALUES outputs per thread of the launch.
    unsafe { indices::launch(gpu, grid, block, 0, &mut out) }?;
    let got = gpu.download(&out)?;
    let mut want = vec![0u32; threads * INDEX_VALUES];
    for (bz, by, bx) in (0..1).flat_map(|z| (0..3).flat_map(move |y| (0..2).map(move |x| (z, y, x)))) {
        for (tz, ty, tx) in (0..2).flat_map(|z| (0..2).flat_map(move |y| (0..4).map(move |x| (z, y, x)))) {
            let block_linear = (bz * 3 + by) * 2 + bx;
            let rank = (tz * 2 + ty) * 4 + tx;
            let index = block_linear * 16 + rank;
            let values = [
                tx,
                ty,
                tz,
                bx,
                by,
                bz,
                4,
                2,
                2,
                2,
                3,
                1,
                tx + bx * 4,
                (tx + bx * 4) * 1000 + ty + by * 2,
                tz + bz * 2,
                (index == 0) as u32,
                32,
                rank % 32,
                tx + ty + tz + bx + by + bz,
                16 + 6,
            ];
            want[index as usize * INDEX_VALUES..][..INDEX_VALUES].copy_from_slice(&values);
        }
    }
    Ok(("thread:: indices", compare("indices", &got, &want)))
}

/// `shfl.sync`'s source lane and predicate for `lane`, as CUDA's
/// `__shfl_*_sync(mask, v, b, width)` define them: within the lane's
/// segment of `width` lanes; outside it, the lane's own value and false.
fn source(mode: usize, lane: u32, b: u32, width: u32) -> (u32, bool) {
    let start = lane / width * width;
    let j = match mode {
        0 => lane as i64 + b as i64,     // down
        1 => lane as i64 - b as i64,     // up
        2 => (lane ^ b) as i64,          // xor
        _ => (start + b % width) as i64, // idx
    };
    if j >= start as i64 && j < (start + width) as i64 { (j as u32, true) } else { (lane, false) }
}

/// Every shuffle, width and value size.
pub fn check_shuffles(gpu: &Gpu) -> Result<Outcome> {
    let threads = 64usize;
    let mut out = gpu.alloc::<u32>(threads * SHUFFLE_VALUES)?;
    gpu.poison(&mut out)?;
    // SAFETY: SHUFFLE_VALUES outputs per thread, one block of 64.
    unsafe { shuffles::launch(gpu, 1u32, threads as u32, 0, &mut out) }?;
    let got = gpu.download(&out)?;
    let mut want = Vec::with_capacity(got.len());
    for t in 0..threads as u32 {
        let (lane, warp) = (t % 32, t / 32 * 32);
        let value = |l: u32| (warp + l) * 7 + 1;
        for w in WIDTHS {
            for (mode, b) in [(0, 1), (1, 1), (2, 1), (3, 3)] {
                let (j, ok) = source(mode, lane, b, w);
                want.extend([value(j), ok as u32]);
            }
        }
        let (j, ok) = source(0, lane, 2, 32);
        let f = ((warp + j) as f64 + 0.25).to_bits();
        let (x, _) = source(2, lane, 3, 32);
        let (u, _) = source(1, lane, 4, 8);
        let (h, _) = source(2, lane, 1, 32);
        let (g, _) = source(3, lane, 5, 16);
        want.extend([
            f as u32,
            (f >> 32) as u32,
            ok as u32,
            warp + x,
            5,
            warp + u,
            u32::from(cuda_std::f16::from_f32((warp + h) as f32 * 0.5).to_bits()),
            u32::from(cuda_std::bf16::from_f32((warp + g) as f32 + 0.5).to_bits()),
        ]);
    }
    Ok(("warp:: shuffles", compare("shuffles", &got, &want)))
}

/// Ballot, all, any, a half-warp ballot, activemask and lane ids.
pub fn check_votes(gpu: &Gpu) -> Result<Outcome> {
    let threads = 64usize;
    let mut out = gpu.alloc::<u32>(threads * VOTE_VALUES)?;
    gpu.poison(&mut out)?;
    // SAFETY: VOTE_VALUES outputs per thread, one block of 64.
    unsafe { votes::launch(gpu, 1u32, threads as u32, 0, &mut out) }?;
    let got = gpu.download(&out)?;
    let ballot = (0..32).filter(|l| l % 3 == 0).fold(0u32, |m, l| m | 1 << l);
    let odd_half = (0..16).filter(|l| l % 2 == 1).fold(0u32, |m, l| m | 1 << l);
    let mut want = Vec::new();
    for t in 0..threads as u32 {
        let (lane, warp) = (t % 32, t / 32);
        want.extend([
            ballot,
            (warp == 0) as u32,
            (warp == 1) as u32,
            if lane < 16 { odd_half } else { 7 },
            u32::MAX,
            lane,
        ]);
    }
    Ok(("warp:: votes, activemask, lane_id", compare("votes", &got, &want)))
}

/// A warp scan through `shared_array!` with `sync_warp`.
pub fn check_warp_scan(gpu: &Gpu) -> Result<Outcome> {
    let x: Vec<u32> = (0..128).map(|i| i * 3 % 11).collect();
    let dx = gpu.upload(&x)?;
    let mut out = gpu.alloc::<u32>(128)?;
    gpu.poison(&mut out)?;
    // SAFETY: 64 threads per block, 2 blocks, 128 inputs and outputs.
    unsafe { warp_scan::launch(gpu, 2u32, 64u32, 0, &dx, &mut out) }?;
    let got = gpu.download(&out)?;
    let want: Vec<u32> = (0..128).map(|i| x[i / 32 * 32..=i].iter().sum()).collect();
    Ok(("warp:: sync_warp, shared_array!", compare("warp scan", &got, &want)))
}

/// A static, an array and dynamic shared memory, each block its own.
pub fn check_shared_styles(gpu: &Gpu) -> Result<Outcome> {
    let blocks = 3;
    let n = blocks * STYLES_BLOCK;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 7.0).collect();
    let dx = gpu.upload(&x)?;
    let mut out = gpu.alloc::<f32>(n)?;
    gpu.poison(&mut out)?;
    let dynamic = (STYLES_BLOCK * 4) as u32;
    // SAFETY: one element per thread; the dynamic bytes hold STYLES_BLOCK f32.
    unsafe { shared_styles::launch(gpu, blocks as u32, STYLES_BLOCK as u32, dynamic, &dx, &mut out) }?;
    let got = gpu.download(&out)?;
    let want: Vec<f32> = (0..n)
        .map(|i| {
            let r = i / STYLES_BLOCK * STYLES_BLOCK + STYLES_BLOCK - 1 - i % STYLES_BLOCK;
            x[r] + 2.0 * x[r] + 3.0 * x[r]
        })
        .collect();
    Ok(("shared: static, shared_array!, dynamic_shared_mem", compare("shared styles", &got, &want)))
}

/// `*const`, `&[T]`, `*mut`, and scalars of three types.
pub fn check_parameters(gpu: &Gpu) -> Result<Outcome> {
    let n = 1000usize;
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.25).collect();
    let b: Vec<f32> = (0..n).map(|i| 3.0 - i as f32).collect();
    let (da, db) = (gpu.upload(&a)?, gpu.upload(&b)?);
    let mut out = gpu.alloc::<f64>(n + 24)?;
    gpu.poison(&mut out)?;
    // SAFETY: n elements in a and b, n + 24 outputs; the kernel guards i < n.
    unsafe { parameters::launch(gpu, 4u32, 256u32, 0, &da, &db, &mut out, n, -3, 1.5) }?;
    let got = gpu.download(&out)?;
    let want: Vec<u64> = (0..n).map(|i| (a[i] as f64 * 1.5 + b[i] as f64 - 3.0).to_bits()).collect();
    let got_bits: Vec<u64> = got[..n].iter().map(|v| v.to_bits()).collect();
    let poison = u64::from(lab_runtime::POISON_BITS) << 32 | u64::from(lab_runtime::POISON_BITS);
    let untouched = got[n..].iter().all(|v| v.to_bits() == poison);
    let result = compare("parameters", &got_bits, &want)
        .and_then(|()| if untouched { Ok(()) } else { Err("parameters: wrote past n".into()) });
    Ok(("parameters: *const, &[T], *mut, scalars; fences", result))
}

/// A shared histogram of awkwardly many values over 5 blocks of 96.
pub fn check_shared_histogram(gpu: &Gpu) -> Result<Outcome> {
    let n = 5 * 96 - 13;
    let x: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2_654_435_761) >> 7).collect();
    let dx = gpu.upload(&x)?;
    let mut bins = gpu.upload(&[0u32; atomics::BINS])?;
    // SAFETY: BINS outputs; the kernel guards i < x.len().
    unsafe { atomics::shared_histogram::launch(gpu, 5u32, 96u32, 0, &dx, &mut bins) }?;
    let got = gpu.download(&bins)?;
    let mut want = vec![0u32; atomics::BINS];
    for v in &x {
        want[*v as usize % atomics::BINS] += 1;
    }
    Ok(("atomic:: shared histogram (mid, block and device scope)", compare("histogram", &got, &want)))
}

/// The float atomics of every scope and the integer mid-level functions.
/// The floats are small integers, so every sum is exact in any order.
pub fn check_float_and_integer(gpu: &Gpu) -> Result<Outcome> {
    let (blocks, block) = (3usize, 128usize);
    let n = blocks * block - 37;
    let x: Vec<f32> = (0..n).map(|i| ((i * 37) % 101) as f32 - 50.0).collect();
    let dx = gpu.upload(&x)?;
    let mut sums = gpu.upload(&[0.0f32; 5])?;
    let mut wide = gpu.upload(&[0.5f64])?;
    let init: [u64; atomics::INTS] =
        [i64::MAX as u64, i64::MIN as u64, 0x1234, 1000, u32::MAX as u64, 0, 0, 5];
    let mut ints = gpu.upload(&init)?;
    // SAFETY: 5 sums, 1 wide, INTS integers; the kernel guards i < x.len().
    unsafe {
        atomics::float_and_integer::launch(
            gpu,
            blocks as u32,
            block as u32,
            0,
            &dx,
            &mut sums,
            &mut wide,
            &mut ints,
        )
    }?;
    let (sums, wide, ints) = (gpu.download(&sums)?, gpu.download(&wide)?, gpu.download(&ints)?);
    let total: f32 = x.iter().sum();
    let mut want_sums = vec![total, -total];
    want_sums.extend((0..blocks).map(|b| x[b * block..((b + 1) * block).min(n)].iter().sum::<f32>()));
    let signed: Vec<i64> = x.iter().map(|&v| v as i64 * 1_000_003 - 5_000_000).collect();
    let low = |f: &dyn Fn(usize) -> u64| (0..n).fold(0u64, |a, i| a ^ f(i));
    let and = (0..n).fold(u32::MAX, |a, i| a & !(1u32 << (i % 32)));
    let or = (0..n).fold(0u32, |a, i| a | 1u32 << (i % 29));
    let sub = (0..n).fold(1000i32, |a, i| a.wrapping_sub(i as i32));
    let want_ints = [
        *signed.iter().min().unwrap() as u64,
        *signed.iter().max().unwrap() as u64,
        0x1234 ^ low(&|i| (i as u64) << 40 | i as u64),
        sub as u32 as u64,
        and as u64,
        or as u64,
        n as u64,
        77,
    ];
    let want_wide = 0.5 + x.iter().map(|&v| v as f64).sum::<f64>();
    let result = compare("float sums", &sums, &want_sums)
        .and_then(|()| compare("f64 sum", &wide, &[want_wide]))
        .and_then(|()| compare("integers", &ints, &want_ints));
    Ok(("atomic:: AtomicF32/F64, Block/System scopes, mid functions", result))
}

/// `&[u8]` handed to foreign code through `AsRef` and `Deref`.
pub fn check_chunk_hashes(gpu: &Gpu) -> Result<Outcome> {
    let n = 1001;
    let data: Vec<u8> = (0..n as u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let (threads, chunk) = (64usize, 17usize);
    let dd = gpu.upload(&data)?;
    let mut out = gpu.alloc::<u32>(2 * threads)?;
    gpu.poison(&mut out)?;
    // SAFETY: two outputs per thread of the one block.
    unsafe { foreign::chunk_hashes::launch(gpu, 1u32, threads as u32, 0, &dd, chunk, &mut out) }?;
    let got = gpu.download(&out)?;
    let whole = foreign::fnv1a(&data);
    let want: Vec<u32> = (0..threads)
        .flat_map(|t| {
            let s = (t * chunk).min(n);
            [foreign::fnv1a(&data[s..(s + chunk).min(n)]), whole]
        })
        .collect();
    // An independent reference for the hash itself: FNV-1a of "a".
    let known =
        if foreign::fnv1a(b"a") == 0xe40c_292c { Ok(()) } else { Err("fnv1a(\"a\") is wrong".into()) };
    Ok((
        "parameters: &[u8] as AsRef<[u8]> and Deref for foreign code",
        known.and(compare("hashes", &got, &want)),
    ))
}

/// glam and vek against f64 references. Each value is a sum of at most
/// three products (each rounded, or fused), so its error is at most
/// `4 eps * sum |terms|`; the length adds one rounding of the square root
/// (half an ulp, relative), bounded by `4 eps * length`.
pub fn check_vector_math(gpu: &Gpu) -> Result<Outcome> {
    let n = 77;
    let a: Vec<f32> = (0..6 * n).map(|i| ((i * 7919) % 1013) as f32 / 37.0 - 13.5).collect();
    let da = gpu.upload(&a)?;
    let mut out = gpu.alloc::<f32>(vectors::VECTOR_VALUES * n)?;
    gpu.poison(&mut out)?;
    // SAFETY: 6n inputs, 4n outputs; the kernel guards i < n.
    unsafe { vectors::vector_math::launch(gpu, 2u32, 64u32, 0, &da, n, &mut out) }?;
    let got = gpu.download(&out)?;
    let eps = f32::EPSILON as f64;
    for i in 0..n {
        let x: Vec<f64> = a[6 * i..6 * i + 6].iter().map(|&v| v as f64).collect();
        let terms = [x[0] * x[3], x[1] * x[4], x[2] * x[5]];
        let dot: f64 = terms.iter().sum();
        let dot_bound = 4.0 * eps * terms.iter().map(|t| t.abs()).sum::<f64>();
        let length = (x[0] * x[0] + x[1] * x[1] + x[2] * x[2]).sqrt();
        let cross = [x[1] * x[5], -(x[2] * x[4])];
        let want = [
            (dot, dot_bound),
            (length, 4.0 * eps * length),
            (cross[0] + cross[1], 4.0 * eps * (cross[0].abs() + cross[1].abs())),
            (dot, dot_bound),
        ];
        for (j, (w, bound)) in want.iter().enumerate() {
            let g = got[vectors::VECTOR_VALUES * i + j] as f64;
            if (g - w).abs() > *bound {
                let e = format!("vector math: thread {i} value {j} is {g}, expected {w} within {bound}");
                return Ok(("glam and vek re-exports", Err(e)));
            }
        }
    }
    Ok(("glam and vek re-exports", Ok(())))
}

/// glam's `Mat4`, `Vec3` and `Vec2` passed by value: each output against
/// the `f64` affine map. A component is three products and the
/// translation summed, scaled, then two adds: at most `8 eps` times the
/// sum of its terms' magnitudes.
pub fn check_values_by_value(gpu: &Gpu) -> Result<Outcome> {
    let what = "glam's Mat4, Vec3, Vec2 as parameters by value";
    let n = 53;
    let points: Vec<f32> = (0..3 * n).map(|i| ((i * 4241) % 997) as f32 / 61.0 - 8.0).collect();
    let cols: [[f32; 4]; 4] =
        [[0.5, -1.25, 2.0, 0.0], [1.5, 0.75, -0.5, 0.0], [-2.0, 0.25, 1.0, 0.0], [3.5, -4.0, 0.125, 1.0]];
    let (offset, s) = ([0.25f32, -1.5, 2.75], [1.75f32, -0.625]);
    let m = glam::Mat4::from_cols_array_2d(&cols);
    let dp = gpu.upload(&points)?;
    let mut out = gpu.alloc::<f32>(3 * n)?;
    gpu.poison(&mut out)?;
    // SAFETY: 3n points and 3n outputs; the kernel guards i < n.
    unsafe {
        vectors::transform_points::launch(
            gpu,
            2u32,
            32u32,
            0,
            m,
            glam::Vec3::from_array(offset),
            glam::Vec2::from_array(s),
            &dp,
            n,
            &mut out,
        )
    }?;
    let got = gpu.download(&out)?;
    let eps = f32::EPSILON as f64;
    for i in 0..n {
        let p: Vec<f64> = points[3 * i..3 * i + 3].iter().map(|&v| v as f64).collect();
        for j in 0..3 {
            let terms = [
                cols[0][j] as f64 * p[0],
                cols[1][j] as f64 * p[1],
                cols[2][j] as f64 * p[2],
                cols[3][j] as f64,
            ];
            let mapped: f64 = terms.iter().sum();
            let want = mapped * s[0] as f64 + offset[j] as f64 + s[1] as f64;
            let size = terms.iter().map(|t| t.abs()).sum::<f64>() * (s[0] as f64).abs()
                + (offset[j] as f64).abs()
                + (s[1] as f64).abs();
            let g = got[3 * i + j] as f64;
            if (g - want).abs() > 8.0 * eps * size {
                return Ok((what, Err(format!("point {i} component {j} is {g}, expected {want}"))));
            }
        }
    }
    Ok((what, Ok(())))
}

/// A kernel named like its module (`mod gemm_naive; pub use
/// gemm_naive::gemm_naive;`), launched through that module. Small
/// integers, so every sum is exact in any order.
pub fn check_gemm_naive(gpu: &Gpu) -> Result<Outcome> {
    let (m, n, k) = (19usize, 23usize, 7usize);
    let a: Vec<f32> = (0..m * k).map(|i| (i % 5) as f32 - 2.0).collect();
    let b: Vec<f32> = (0..k * n).map(|i| (i % 7) as f32 - 3.0).collect();
    let (da, db) = (gpu.upload(&a)?, gpu.upload(&b)?);
    let mut c = gpu.alloc::<f32>(m * n)?;
    gpu.poison(&mut c)?;
    // SAFETY: m * n outputs; a and b hold m * k and k * n; the kernel
    // guards idx < m * n.
    unsafe { gemm_naive::launch(gpu, (m * n).div_ceil(64) as u32, 64u32, 0, &da, &db, &mut c, m, n, k) }?;
    let got = gpu.download(&c)?;
    let want: Vec<f32> =
        (0..m * n).map(|idx| (0..k).map(|l| a[idx / n * k + l] * b[l * n + idx % n]).sum()).collect();
    Ok((
        "#[kernel] named like its module (mod gemm_naive; pub use gemm_naive::gemm_naive)",
        compare("gemm_naive", &got, &want),
    ))
}

/// Every area.
pub fn all(gpu: &Gpu) -> Result<Vec<Outcome>> {
    Ok(vec![
        check_indices(gpu)?,
        check_shuffles(gpu)?,
        check_votes(gpu)?,
        check_warp_scan(gpu)?,
        check_shared_styles(gpu)?,
        check_parameters(gpu)?,
        check_shared_histogram(gpu)?,
        check_float_and_integer(gpu)?,
        check_chunk_hashes(gpu)?,
        check_vector_math(gpu)?,
        check_values_by_value(gpu)?,
        check_gemm_naive(gpu)?,
    ])
}
