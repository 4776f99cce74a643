include!("mock.rs");

fn main() {
    let (x, mut y) = (Buffer(vec![1.0f32; 4]), Buffer(vec![0.0f32; 4]));
    // A kernel with a DisjointSlice is launched 1-D: its grid is one number.
    gpu::scale::scale::launch(&Mock, [2, 2], &x, &mut y, 2.0).unwrap();
}
