//! Launches that mirror their kernels' parameters compile.
include!("mock.rs");

use gpu::reduce::reduce_fast;
use gpu::scale::scale;
use gpu::transpose::transpose_fast;

fn main() {
    let (x, mut y) = (Buffer(vec![1.0f32; 4]), Buffer(vec![0.0f32; 4]));
    // A kernel with no `unsafe` has a safe launcher.
    scale::launch(&Mock, 1, &x, &mut y, 2.0).unwrap();
    // An unchecked one is `unsafe` to launch.
    // SAFETY: the mock launches nothing.
    unsafe { transpose_fast::launch(&Mock, [1, 1], &x, &mut y, 2, 2) }.unwrap();
    // A generic kernel's instance follows from the buffers' element type.
    let (input, mut partials, mut out) = (Buffer(vec![1.0f64; 4]), Buffer(vec![0.0f64; 1]), Buffer(vec![0.0f64]));
    let mut ticket = Buffer(vec![0u32]);
    // SAFETY: as above.
    unsafe { reduce_fast::launch(&Mock, 1, &input, &mut partials, &mut ticket, &mut out, 4) }.unwrap();
}
