//! Kernels from rust-cuda's repository, copied unchanged as compatibility
//! checks (Rust-GPU/Rust-CUDA, commit ac2674f0, MIT OR Apache-2.0).

pub mod vecadd;
