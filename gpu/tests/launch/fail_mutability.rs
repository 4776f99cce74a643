include!("mock.rs");

fn main() {
    let (x, y) = (Buffer(vec![1.0f32; 4]), Buffer(vec![0.0f32; 4]));
    // `y` is written: the launcher takes it as `&mut`.
    gpu::scale::scale::launch(&Mock, 1, &x, &y, 2.0).unwrap();
}
