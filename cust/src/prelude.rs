//! What `use cust::prelude::*;` brings, as in cust.

pub use crate::CudaFlags;
pub use crate::context::{Context, ContextFlags};
pub use crate::device::Device;
pub use crate::event::{Event, EventFlags, EventStatus};
pub use crate::function::Function;
pub use crate::launch;
pub use crate::memory::{CopyDestination, DeviceBuffer, DevicePointer, DeviceSlice};
pub use crate::module::Module;
pub use crate::stream::{Stream, StreamFlags};
pub use crate::util::*;
