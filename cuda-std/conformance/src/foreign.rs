//! Slice parameters handed to code written against `&[T]`: a hash with
//! the signature a crates.io `no_std` crate gives one.

use cuda_std::prelude::*;

/// 32-bit FNV-1a of `data`, as a `no_std` library writes it: over
/// `impl AsRef<[u8]>`, knowing nothing of kernels.
pub fn fnv1a(data: impl AsRef<[u8]>) -> u32 {
    data.as_ref().iter().fold(0x811c_9dc5u32, |h, &b| (h ^ b as u32).wrapping_mul(0x0100_0193))
}

/// Thread `t` hashes the `t`-th chunk of `chunk` bytes of `data` (the last
/// may be short, or empty): once through `AsRef`, once through `Deref`
/// (`&data[..]`), writing both to `out[2t]`, `out[2t + 1]`.
#[kernel]
pub unsafe fn chunk_hashes(data: &[u8], chunk: usize, out: *mut u32) {
    let t = thread::index_1d() as usize;
    let bytes: &[u8] = &data;
    let start = (t * chunk).min(bytes.len());
    let end = (start + chunk).min(bytes.len());
    let whole = fnv1a(data);
    let part = fnv1a(&bytes[start..end]);
    unsafe {
        *out.add(2 * t) = part;
        *out.add(2 * t + 1) = whole;
    }
}
