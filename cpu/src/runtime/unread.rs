//! A stand-in for a buffer argument a launch does not read.

use std::cell::OnceCell;

use super::{DeviceBuffer, Gpu, Result};

/// One `f32` word, uploaded at its first use, passed where a kernel takes
/// a buffer that this launch leaves unread (a bias the call has not,
/// descales the call gives per tensor): a kernel's parameters are the
/// same on every launch, used or not.
#[derive(Default)]
pub struct Unread(OnceCell<DeviceBuffer<f32>>);

impl Unread {
    /// The word, uploaded to `gpu` the first time.
    pub fn get(&self, gpu: &Gpu) -> Result<&DeviceBuffer<f32>> {
        if self.0.get().is_none() {
            let _ = self.0.set(gpu.upload(&[0.0f32])?);
        }
        Ok(self.0.get().expect("just set"))
    }
}
