include!("mock.rs");

fn main() {
    let (x, mut partials) = (Buffer(vec![1.0f64; 4]), Buffer(vec![0.0f64; 1]));
    // `reduce_smem` is instantiated for i32 and f32 only.
    // SAFETY: the mock launches nothing.
    unsafe { gpu::reduce::reduce_smem::launch(&Mock, 1, &x, &mut partials, 4) }.unwrap();
}
