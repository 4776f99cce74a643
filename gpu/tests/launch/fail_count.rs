include!("mock.rs");

fn main() {
    let (x, mut y) = (Buffer(vec![1.0f32; 4]), Buffer(vec![0.0f32; 4]));
    // `scale` takes x, y and a: the factor is missing.
    gpu::scale::scale::launch(&Mock, 1, &x, &mut y).unwrap();
}
