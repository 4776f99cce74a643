include!("mock.rs");

fn main() {
    let mut y = Buffer(vec![0.0f32; 4]);
    // One buffer as the input and the output: the borrows conflict.
    gpu::scale::scale::launch(&Mock, 1, &y, &mut y, 2.0).unwrap();
}
