include!("mock.rs");

fn main() {
    let (x, mut y) = (Buffer(vec![1.0f64; 4]), Buffer(vec![0.0f32; 4]));
    // `x` is a `Slice<f32>`: a buffer of f64 is not one.
    gpu::scale::scale::launch(&Mock, 1, &x, &mut y, 2.0).unwrap();
}
