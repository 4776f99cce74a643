//! Every kernel on the CPU emulator: random inputs of awkward shapes
//! against the host references, through the same typed launches as on the
//! GPU; and the emulator's own checks (races, bounds, barriers) and
//! analysis (bank conflicts, sectors) on our kernels.

use kernel_lab::device::Gpu;
use kernel_lab::transpose::{self, Transpose, random_input, reference, verify_exact};

#[test]
fn transpose_kernels_on_awkward_shapes() {
    let gpu = Gpu::emulator();
    for kernel in transpose::KERNELS {
        let t = Transpose::load(&gpu, kernel).unwrap();
        for (i, &(nx, ny)) in [(1, 1), (0, 5), (33, 31), (70, 129)].iter().enumerate() {
            let host = random_input(nx * ny, i as u64);
            let input = gpu.upload(&host).unwrap();
            let mut output = gpu.alloc::<f32>(nx * ny).unwrap();
            gpu.poison(&mut output).unwrap();
            t.launch(&gpu, &input, &mut output, nx, ny).unwrap();
            verify_exact(kernel.name, &gpu.download(&output).unwrap(), &reference(&host, nx, ny)).unwrap();
        }
    }
}
