fn main() {
    // Every architecture's PTX for `include_ptx!` (src/lib.rs), and the
    // first one as `kernels.ptx`, the one file a cust host embeds
    // (src/bin/cust_*.rs), as rust-cuda's `copy_to` leaves it.
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    lab_cuda_builder::CudaBuilder::new("kernels").copy_to(out.join("kernels.ptx")).run();
}
