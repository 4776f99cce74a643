//! Tensor maps for TMA copies (`dev::tma`): `cuTensorMapEncodeTiled` on a
//! GPU, the emulator's own encoding (`emu::tma::Map`) on the host; the
//! same 16 words either way, for the kernel to read from global memory.

use cudarc::driver::sys;

use super::{DeviceBuffer, Error, Gpu, Result};

impl Gpu {
    /// The tensor map of the row-major matrix `rows x cols` in `buffer`,
    /// copied in boxes of `box_rows x box_cols`, each box row swizzled over
    /// its own bytes (rows of 128 bytes: the 128-byte swizzle; 64: the
    /// 64-byte one); elements outside the matrix read as zeros. `wgmma`
    /// reads `f32` elements as tf32.
    ///
    /// Errors, before anything is encoded: rows not on 16 bytes, a box the
    /// swizzle or TMA cannot take, a buffer too small.
    pub fn tensor_map<T: MapElement>(
        &self,
        buffer: &DeviceBuffer<T>,
        shape: (usize, usize),
        boxes: (usize, usize),
    ) -> Result<[u64; 16]> {
        self.tensor_map_pitched(buffer, 0, shape, shape.1, boxes)
    }

    /// The tensor map of the row-major `rows x cols` matrix whose element
    /// `(i, j)` is `buffer[offset + i pitch + j]`, in boxes as for
    /// [`Gpu::tensor_map`]; elements outside the matrix (past `cols`
    /// in a row, past `rows`) read as zeros.
    ///
    /// Errors, before anything is encoded: `offset` or `pitch` not on 16
    /// bytes, `pitch < cols`, a box the swizzle or TMA cannot take, a
    /// buffer too small.
    pub fn tensor_map_pitched<T: MapElement>(
        &self,
        buffer: &DeviceBuffer<T>,
        offset: usize,
        shape: (usize, usize),
        pitch: usize,
        boxes: (usize, usize),
    ) -> Result<[u64; 16]> {
        let ty = (T::LABEL, size_of::<T>(), T::data_type());
        // (A matrix stride of 0: a 2-D map.)
        self.encode((buffer.address(), buffer.len()), ty, shape, (offset, pitch), (1, 0), boxes)
    }

    /// The 3-D tensor map of `planes` row-major `rows x cols` matrices,
    /// one after another in `buffer` (rows `cols` elements apart, matrices
    /// `rows cols` apart), copied in boxes of one matrix, `box_rows x
    /// box_cols` as for [`Gpu::tensor_map`] (`dev::tma::copy_3d`): a box
    /// reads zeros past its own matrix's rows and columns, not the next
    /// matrix's elements.
    ///
    /// Errors, before anything is encoded: as for [`Gpu::tensor_map`].
    pub fn tensor_map_stack<T: MapElement>(
        &self,
        buffer: &DeviceBuffer<T>,
        (planes, rows, cols): (usize, usize, usize),
        boxes: (usize, usize),
    ) -> Result<[u64; 16]> {
        let ty = (T::LABEL, size_of::<T>(), T::data_type());
        let address = (buffer.address(), buffer.len());
        self.encode(address, ty, (rows, cols), (0, cols), (planes, rows * cols), boxes)
    }

    /// The map of `planes` `rows x cols` matrices, `plane_pitch` elements
    /// apart (3-D; a `plane_pitch` of 0: the 2-D map of one), from element `offset` of the `len`
    /// elements at device address `address`, rows `pitch` elements apart,
    /// of the type `name`, `bytes` each (`ty` for the driver).
    #[allow(clippy::too_many_arguments)]
    fn encode(
        &self,
        (address, len): (u64, usize),
        (name, bytes, ty): (&str, usize, sys::CUtensorMapDataType),
        (rows, cols): (usize, usize),
        (offset, pitch): (usize, usize),
        (planes, plane_pitch): (usize, usize),
        (box_rows, box_cols): (usize, usize),
    ) -> Result<[u64; 16]> {
        let bad = |why: String| {
            Err(Error::InvalidInput(format!("tensor map of a {rows}x{cols} {name} matrix: {why}")))
        };
        let per_16 = 16 / bytes;
        for (what, x) in [("row stride", pitch), ("start", offset), ("matrix stride", plane_pitch)] {
            if !x.is_multiple_of(per_16) {
                return bad(format!(
                    "TMA needs every row to start on 16 bytes, so the {what} must be a multiple of {per_16}, not {x}"
                ));
            }
        }
        if pitch < cols {
            return bad(format!("rows {pitch} elements apart overlap"));
        }
        let span = box_cols * bytes;
        if !(span == 128 || span == 64) || box_rows == 0 || box_rows > 256 {
            return bad(format!(
                "a {box_rows}x{box_cols} box (rows of 64 or 128 bytes, at most 256 of them)"
            ));
        }
        if [rows, cols, planes].iter().any(|&x| x == 0 || x >= 1 << 32) {
            return bad("dimensions must be 1..2^32".into());
        }
        if planes > 1 && plane_pitch < rows * pitch {
            return bad(format!("matrices {plane_pitch} elements apart overlap"));
        }
        if len < offset + (planes - 1) * plane_pitch + (rows - 1) * pitch + cols {
            return bad(format!("the buffer holds {len} elements"));
        }
        let address = address + (offset * bytes) as u64;
        if self.is_emulator() {
            let map = emu::tma::Map {
                global: address as usize,
                element_bytes: bytes,
                cols,
                rows,
                row_bytes: bytes * pitch,
                box_cols,
                box_rows,
                swizzle: span,
                planes,
                plane_bytes: bytes * plane_pitch,
            };
            return Ok(map.encode());
        }
        let mut map = sys::CUtensorMap { opaque: [0; 16] };
        let dims = [cols as u64, rows as u64, planes as u64];
        let strides = [(bytes * pitch) as u64, (bytes * plane_pitch) as u64];
        let boxes = [box_cols as u32, box_rows as u32, 1];
        let element_strides = [1u32, 1, 1];
        // A stack's map is 3-D even with one matrix: its copies name a plane.
        let rank = if plane_pitch > 0 { 3 } else { 2 };
        // SAFETY: every pointer is to a live local at least as long as the
        // rank (2 or 3) asks for; the address is the buffer's device address.
        unsafe {
            sys::cuTensorMapEncodeTiled(
                &mut map,
                ty,
                rank,
                address as *mut core::ffi::c_void,
                dims.as_ptr(),
                strides.as_ptr(),
                boxes.as_ptr(),
                element_strides.as_ptr(),
                sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                if span == 128 {
                    sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B
                } else {
                    sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B
                },
                sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
        }
        .result()
        .map_err(|error| Error::Cuda { call: "cuTensorMapEncodeTiled", error })?;
        Ok(map.opaque)
    }
}

/// An element type the copy engine moves, as the driver names it.
pub trait MapElement: cudarc::driver::DeviceRepr {
    const LABEL: &'static str;
    fn data_type() -> sys::CUtensorMapDataType;
}

impl MapElement for half::bf16 {
    const LABEL: &'static str = "bf16";
    fn data_type() -> sys::CUtensorMapDataType {
        sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
    }
}

impl MapElement for half::f16 {
    const LABEL: &'static str = "f16";
    fn data_type() -> sys::CUtensorMapDataType {
        sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16
    }
}

/// FP8 bytes: the copy engine moves them as `u8` (it converts nothing).
macro_rules! fp8_map_element {
    ($($t:ty),*) => {$(
        impl MapElement for $t {
            const LABEL: &'static str = <$t>::NAME;
            fn data_type() -> sys::CUtensorMapDataType {
                sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT8
            }
        }
    )*};
}

fp8_map_element!(gpu_isa::fp8::E4m3, gpu_isa::fp8::E5m2);

impl MapElement for f32 {
    const LABEL: &'static str = "f32";
    fn data_type() -> sys::CUtensorMapDataType {
        sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32
    }
}

/// Raw 16-bit patterns, moved as they are.
impl MapElement for u16 {
    const LABEL: &'static str = "u16";
    fn data_type() -> sys::CUtensorMapDataType {
        sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_UINT16
    }
}
