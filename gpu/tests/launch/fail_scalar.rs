include!("mock.rs");

fn main() {
    let (x, mut y) = (Buffer(vec![1.0f32; 4]), Buffer(vec![0.0f32; 4]));
    // `a` is an f32, not an integer.
    gpu::scale::scale::launch(&Mock, 1, &x, &mut y, 2u32).unwrap();
}
