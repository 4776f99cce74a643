fn main() {
    lab_cuda_builder::CudaBuilder::new("kernels").run();
}
