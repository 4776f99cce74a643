//! Packing an operand into a workspace (`gpu::gemm::pack`): `op(X)`
//! copied row-major at a chosen row stride, transposed on the way where
//! asked. The tensor-core library packs what TMA cannot read in place;
//! `sgemm` packs an operand that its kernels' 16-byte loads cannot read
//! (`super::run`).

use cudarc::driver::DeviceRepr;
use gpu::gemm::pack::{gemm_pack, gemm_repitch};
use gpu::launch::Dim3;

use crate::runtime::{DeviceBuffer, Gpu, Result};

/// Whether [`pack`] can launch for `rows` rows (transposed or not): its
/// kernels put the rows on the grid's y, at most 65535 blocks.
pub fn fits<T: DeviceRepr + gemm_pack::Instance + gemm_repitch::Instance>(
    rows: usize,
    transposed: bool,
) -> bool {
    let tile = if transposed {
        gemm_pack::KERNELS[<T as gemm_pack::Instance>::INDEX].launch.tile
    } else {
        gemm_repitch::KERNELS[<T as gemm_repitch::Instance>::INDEX].launch.tile
    };
    rows.div_ceil(tile[1].max(1) as usize) <= 65_535
}

/// Packs `op(X)` (`rows x cols`: element `(i, j)` at `src[z stride + i ld
/// + j]`, or `src[z stride + j ld + i]` when `transposed`) of each of the
/// `batch` matrices into `dst` at `(pitch, dst_stride)`: through the
/// transposing tile kernel, or, untransposed, the unit-wide row copy
/// ([`gpu::gemm::pack::gemm_repitch`]).
pub fn pack<T: DeviceRepr + gemm_pack::Instance + gemm_repitch::Instance>(
    gpu: &Gpu,
    src: &DeviceBuffer<T>,
    dst: &mut DeviceBuffer<T>,
    (rows, cols): (usize, usize),
    (ld, stride, transposed): (usize, usize, bool),
    (pitch, dst_stride): (usize, usize),
    batch: usize,
) -> Result<()> {
    if !transposed {
        // The widest unit dividing every row's start and length in bytes.
        let size = size_of::<T>();
        let lengths =
            [ld, pitch, cols, if batch > 1 { stride } else { 0 }, if batch > 1 { dst_stride } else { 0 }];
        let unit = [16, 8, 4, 2, 1]
            .into_iter()
            .find(|&u| u >= size && lengths.iter().all(|&x| (x * size).is_multiple_of(u)))
            .unwrap_or(size);
        let kernel = &gemm_repitch::KERNELS[<T as gemm_repitch::Instance>::INDEX];
        let grid = Dim3 { z: batch as u32, ..kernel.launch.grid((cols * size / unit) as u32, rows as u32) };
        // SAFETY: as below; every row is a whole number of `unit`-byte
        // units on a `unit`-byte boundary (the buffers are 256-aligned).
        return unsafe {
            gemm_repitch::launch::<T, _>(
                gpu,
                grid,
                src,
                dst,
                rows as u32,
                cols as u32,
                ld as u64,
                stride as u64,
                pitch as u32,
                dst_stride as u64,
                unit as u32,
            )
        };
    }
    let kernel = &gemm_pack::KERNELS[<T as gemm_pack::Instance>::INDEX];
    let grid = Dim3 { z: batch as u32, ..kernel.launch.grid(cols as u32, rows as u32) };
    // SAFETY: `src` holds every element named (`Call::check`); `dst` was taken with
    // `batch x rows x pitch` elements, `pitch >= cols`.
    unsafe {
        gemm_pack::launch::<T, _>(
            gpu,
            grid,
            src,
            dst,
            rows as u32,
            cols as u32,
            ld as u64,
            stride as u64,
            pitch as u32,
            dst_stride as u64,
            u32::from(transposed),
        )
    }
}
