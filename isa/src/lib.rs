//! What the PTX ISA defines each instruction to compute, written once:
//! the pure functions of lanes, indices and addresses that the device
//! layer (`device/`, on `nvptx64` and on the host) and the emulator (`emu/`)
//! both use.
//!
//! - [`mma`]: which lane of a warp holds which element of an
//!   `mma.sync` fragment, and which row an `ldmatrix` register comes from;
//! - [`wgmma`]: the shared-memory matrix descriptors of `wgmma`, the byte
//!   offset of an operand's element, and the accumulators' lane map;
//! - [`swizzle`]: the 32-, 64- and 128-byte swizzles of TMA copies and
//!   `wgmma` operands;
//! - [`shuffle`]: the lane `shfl.sync` reads, and its predicate;
//! - [`fp8`]: the E4M3 and E5M2 formats and `cvt`'s rounding to them;
//! - [`element`]: the tensor cores' operand types ([`Input`]) and the
//!   element types that carry them ([`Element`]);
//! - [`Space`]: the memory an access is to.
//!
//! No function here touches memory or another thread: the instruction's
//! effect (the exchange among lanes, the memory it reads) is the device's
//! or the emulator's.
#![no_std]

pub mod element;
pub mod fp8;
pub mod mma;
pub mod shuffle;
mod space;
pub mod swizzle;
pub mod wgmma;

pub use element::{Element, Input, Tf32};
pub use space::Space;
