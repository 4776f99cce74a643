//! The measurement layer: inputs, verification, timing, records.
//!
//! - [`data`]: random inputs, reproducible from a seed;
//! - [`verify`]: comparisons against host references;
//! - [`mod@bench`]: CUDA-event timing and the in-run copy ceiling;
//! - [`trial()`]: one kernel verified (output poisoned first), then timed on
//!   a GPU or analysed on the emulator;
//! - [`record`]: what a measurement is written down as (the JSON's rows);
//! - [`shape`]: what one size of a family is.

pub mod bench;
pub mod data;
pub mod record;
pub mod shape;
pub mod trial;
pub mod verify;

pub use bench::{Runs, Stage, Timing};
pub use record::{AnalysisColumns, Rate, Record};
pub use shape::Shape;
pub use trial::{Trial, trial};
