//! A vecadd host program written against rust-cuda's `cust`, as a cust
//! user writes it; `Cargo.toml` names lab-cust as `cust`. On a GPU it
//! loads the PTX the build script compiled. Without one, the emulator
//! runs the kernel crate's host build with its checks: this program does
//! not link the crate (as a rust-cuda host does not), so it runs in the
//! host library the builder built beside the PTX, which the PTX names.
//!
//! `cargo run --release --bin cust_vecadd [N]`: adds two random vectors of
//! N elements (100000 by default) and checks every element against the
//! host's sum (one rounding each way: exact); exit status 1 otherwise.

use cust::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::error::Error;

static PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

fn main() -> Result<(), Box<dyn Error>> {
    let n = match std::env::args().nth(1).map(|s| s.parse::<usize>().map_err(|_| s)) {
        None => 100_000,
        Some(Ok(n)) => n,
        Some(Err(word)) => {
            eprintln!("error: N is a count of elements, not '{word}'");
            std::process::exit(2);
        }
    };

    // Random inputs in [-1, 1).
    let mut rng = SmallRng::seed_from_u64(n as u64);
    let lhs: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
    let rhs: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();

    // The first device and a context on it; keep the context alive.
    let _ctx = cust::quick_init()?;
    let module = Module::from_ptx(PTX, &[])?;
    let stream = Stream::new(StreamFlags::NON_BLOCKING, None)?;

    let lhs_gpu = lhs.as_slice().as_dbuf()?;
    let rhs_gpu = rhs.as_slice().as_dbuf()?;
    // SAFETY: the kernel writes every element before anything reads it.
    let out_gpu = unsafe { DeviceBuffer::<f32>::uninitialized(n)? };

    // The block size the occupancy calculator suggests for this kernel.
    let vecadd = module.get_function("vecadd")?;
    let (_, block_size) = vecadd.suggested_launch_configuration(0, 0.into())?;
    let grid_size = (n as u32).div_ceil(block_size);

    let start = Event::new(EventFlags::DEFAULT)?;
    let end = Event::new(EventFlags::DEFAULT)?;
    start.record(&stream)?;
    // SAFETY: `rhs` and `out` hold as many elements as `lhs`, whose length
    // bounds the kernel's threads.
    unsafe {
        launch!(
            // A slice is two parameters: its pointer, then its length.
            vecadd<<<grid_size, block_size, 0, stream>>>(
                lhs_gpu.as_device_ptr(),
                lhs_gpu.len(),
                rhs_gpu.as_device_ptr(),
                rhs_gpu.len(),
                out_gpu.as_device_ptr(),
            )
        )?;
    }
    end.record(&stream)?;
    stream.synchronize()?;
    let ms = end.elapsed_time_f32(&start)?;

    let mut out = vec![0.0f32; n];
    out_gpu.copy_to(&mut out)?;
    let wrong = (0..n).filter(|&i| out[i].to_bits() != (lhs[i] + rhs[i]).to_bits()).count();
    let place = if cust::is_emulator() { "emulator" } else { "GPU" };
    println!("vecadd of {n}: {grid_size} blocks of {block_size} threads, {ms:.3} ms on the {place}");
    if wrong > 0 {
        return Err(format!("{wrong} of {n} elements differ from the host's sum").into());
    }
    println!("every element equals the host's sum");
    Ok(())
}
