//! `Event`: a marker in a stream, for ordering and timing. On the
//! emulator, where work runs when it is queued, an event records the
//! host's clock: elapsed times are the emulation's, not a GPU's.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use cudarc::driver::{result, sys};

use crate::backend;
use crate::error::{CudaError, CudaResult, DropResult, ToResult};
use crate::stream::Stream;

bitflags::bitflags! {
    /// Event creation flags.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct EventFlags: u32 {
        const DEFAULT = 0x0;
        const BLOCKING_SYNC = 0x1;
        const DISABLE_TIMING = 0x2;
        const INTERPROCESS = 0x4;
    }
}

/// Whether an event's work has completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventStatus {
    Ready,
    NotReady,
}

/// A CUDA event, or the emulator's record of when it was recorded.
#[derive(Debug)]
pub struct Event {
    inner: sys::CUevent,
    recorded: Mutex<Option<Instant>>,
}

// SAFETY: an event handle may be used from any thread.
unsafe impl Send for Event {}
// SAFETY: as above.
unsafe impl Sync for Event {}

impl Event {
    pub fn new(flags: EventFlags) -> CudaResult<Self> {
        if !backend::cuda()? {
            return Ok(Event { inner: std::ptr::null_mut(), recorded: Mutex::new(None) });
        }
        let flags = match flags.bits() & 0x7 {
            0x1 => sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC,
            0x2 | 0x3 => sys::CUevent_flags::CU_EVENT_DISABLE_TIMING,
            0x4..=0x7 => sys::CUevent_flags::CU_EVENT_INTERPROCESS,
            _ => sys::CUevent_flags::CU_EVENT_DEFAULT,
        };
        Ok(Event { inner: result::event::create(flags).to_result()?, recorded: Mutex::new(None) })
    }

    pub(crate) fn raw(&self) -> Option<sys::CUevent> {
        (!self.inner.is_null()).then_some(self.inner)
    }

    /// Records the event at this point of `stream`.
    pub fn record(&self, stream: &Stream) -> CudaResult<()> {
        match self.raw() {
            // SAFETY: our own event and a live stream.
            Some(e) => unsafe { result::event::record(e, stream.as_inner()) }.to_result(),
            None => {
                *self.recorded.lock().unwrap() = Some(Instant::now());
                Ok(())
            }
        }
    }

    /// Whether the work before the record has completed.
    pub fn query(&self) -> CudaResult<EventStatus> {
        let Some(e) = self.raw() else { return Ok(EventStatus::Ready) };
        // SAFETY: our own event.
        match unsafe { result::event::query(e) }.to_result() {
            Ok(()) => Ok(EventStatus::Ready),
            Err(CudaError::NotReady) => Ok(EventStatus::NotReady),
            Err(e) => Err(e),
        }
    }

    /// Waits for the work before the record.
    pub fn synchronize(&self) -> CudaResult<()> {
        match self.raw() {
            // SAFETY: our own event.
            Some(e) => unsafe { result::event::synchronize(e) }.to_result(),
            None => Ok(()),
        }
    }

    /// Milliseconds from `start`'s record to this one's.
    pub fn elapsed_time_f32(&self, start: &Self) -> CudaResult<f32> {
        match (self.raw(), start.raw()) {
            // SAFETY: our own events.
            (Some(end), Some(begin)) => unsafe { result::event::elapsed(begin, end) }.to_result(),
            _ => {
                let (end, begin) = (*self.recorded.lock().unwrap(), *start.recorded.lock().unwrap());
                match (begin, end) {
                    (Some(b), Some(e)) => Ok(e.saturating_duration_since(b).as_secs_f32() * 1e3),
                    _ => Err(CudaError::InvalidHandle),
                }
            }
        }
    }

    /// As [`Event::elapsed_time_f32`], as a `Duration`.
    pub fn elapsed(&self, start: &Self) -> CudaResult<Duration> {
        Ok(Duration::from_secs_f32(self.elapsed_time_f32(start)?.max(0.0) / 1e3))
    }

    /// Destroys the event, returning it with the error on failure.
    pub fn drop(event: Event) -> DropResult<Event> {
        drop(event);
        Ok(())
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        if let Some(e) = self.raw() {
            // SAFETY: our own event, destroyed once.
            let _ = unsafe { result::event::destroy(e) };
        }
    }
}
