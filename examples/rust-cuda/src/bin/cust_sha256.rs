//! SHA-256 on the device, a host program written against rust-cuda's
//! `cust` as a cust user writes it (rust-cuda's sha2 example does the
//! same with the `sha2` crate; this one's hash is our own, in
//! `kernels/src/hash.rs`, and the host's reference is the same function
//! built for the host, itself checked against FIPS 180-4's vectors in the
//! tests).
//!
//! `cargo run --release --bin cust_sha256 [BYTES [CHUNK]]`: hashes "hello
//! world" into a `DeviceBox`, then BYTES random bytes (65536 by default)
//! in chunks of CHUNK (1000), one thread per chunk, and checks every
//! digest; exit status 1 if any differs.

use cust::memory::DeviceBox;
use cust::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

static PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The command line's `word` as a count, `default` where it is absent; a
/// word that is not a count ends the program with one line, exit status 2.
fn count(word: Option<String>, name: &str, default: usize) -> usize {
    match word.map(|w| w.parse::<usize>().map_err(|_| w)) {
        None => default,
        Some(Ok(n)) => n,
        Some(Err(w)) => {
            eprintln!("error: {name} is a count of bytes, not '{w}'");
            std::process::exit(2);
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let bytes = count(args.next(), "BYTES", 65_536);
    let chunk = count(args.next(), "CHUNK", 1000);
    if chunk == 0 {
        eprintln!("error: CHUNK must be at least 1");
        std::process::exit(2);
    }

    let _ctx = cust::quick_init()?;
    let module = Module::from_ptx(PTX, &[])?;
    let stream = Stream::new(StreamFlags::NON_BLOCKING, None)?;
    let kernel = module.get_function("sha256_chunks")?;
    let mut failed = false;

    // One message, its digest in a `DeviceBox`.
    {
        let input = b"hello world";
        let input_gpu = DeviceBuffer::from_slice(input)?;
        let mut digest = [0u8; 32];
        let digest_gpu = DeviceBox::new(&digest)?;
        // SAFETY: one chunk (the whole input), 32 bytes of digest.
        unsafe {
            launch!(kernel<<<1, 32, 0, stream>>>(
                input_gpu.as_device_ptr(),
                input_gpu.len(),
                input.len(),
                digest_gpu.as_device_ptr()
            ))?;
        }
        stream.synchronize()?;
        digest_gpu.copy_to(&mut digest)?;
        let want = kernels::sha256(input);
        println!("sha256(\"hello world\") = {}", hex(&digest));
        failed |= digest != want;
    }

    // Many messages: one thread per chunk.
    {
        let mut rng = SmallRng::seed_from_u64(bytes as u64 ^ chunk as u64);
        let data: Vec<u8> = (0..bytes).map(|_| rng.random()).collect();
        let chunks = bytes.div_ceil(chunk);
        let data_gpu = data.as_slice().as_dbuf()?;
        // SAFETY: the kernel writes all 32 bytes of every chunk's digest.
        let digests_gpu = unsafe { DeviceBuffer::<u8>::uninitialized(32 * chunks)? };
        let block = 64u32;
        let grid = (chunks as u32).div_ceil(block).max(1);
        // SAFETY: 32 bytes of digest per chunk of `data`.
        unsafe {
            launch!(module.sha256_chunks<<<grid, block, 0, stream>>>(
                data_gpu.as_device_ptr(),
                data_gpu.len(),
                chunk,
                digests_gpu.as_device_ptr()
            ))?;
        }
        stream.synchronize()?;
        let digests = digests_gpu.as_host_vec()?;
        let wrong = data
            .chunks(chunk)
            .zip(digests.chunks(32))
            .filter(|(message, digest)| kernels::sha256(message) != **digest)
            .count();
        println!("{chunks} chunks of up to {chunk} bytes of {bytes}: {} digests differ", wrong);
        failed |= wrong > 0;
    }

    if failed { Err("a device digest differs from the host's".into()) } else { Ok(()) }
}
