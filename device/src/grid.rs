//! Programmatic dependent launch (sm_90): a kernel launched with
//! `#[kernel(dependent = true)]` may start while the kernel ahead of it in
//! the stream is still running, so that its launch, its blocks'
//! placement and their set-up (shared memory, mbarriers, tensor-map
//! fences) overlap that kernel's last blocks instead of following them.
//!
//! Two instructions make it safe:
//!
//! - the kernel ahead says when the next may start: once every one of its
//!   blocks has run [`allow_dependents`] (or exited). Its blocks keep
//!   running; the next kernel's blocks take SMs as they free up.
//! - the dependent kernel's threads run [`wait_for_prerequisites`] before
//!   their first global read or write: it returns once the kernels ahead
//!   have finished and their writes are visible. Before it, a block may
//!   touch its shared memory only.
//!
//! A kernel launched ahead of a dependent one without calling
//! `allow_dependents` lets it start as it exits. A dependent kernel
//! behind anything else (a copy, a memset) starts as usual.
//!
//! PTX ISA: `griddepcontrol` (PTX 7.8, sm_90). ptxas refuses it for
//! earlier targets, so a kernel built for them too calls these under
//! `#[cfg(target_feature = "sm_90")]` (true in the sm_90 and sm_90a
//! builds of the kernel's own crate; this crate is compiled for no
//! particular architecture), and the runtime launches a dependent kernel
//! as an ordinary one on devices before sm_90. The emulator runs launches
//! one after another (the wait returns at once), and reports a dependent
//! kernel's global access before its wait.

/// `griddepcontrol.launch_dependents`: this block lets the kernel behind
/// it in the stream start (once every block of this kernel has); the
/// first of its threads to run it counts for the block. It changes
/// nothing this kernel computes or may touch.
#[inline(always)]
pub fn allow_dependents() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a scheduling hint; no memory is touched.
    unsafe {
        core::arch::asm!("griddepcontrol.launch_dependents;", options(nostack))
    };
}

/// `griddepcontrol.wait`: returns once the kernels this dependent launch
/// overlaps have finished and their memory operations are visible to it.
/// Every thread of a `dependent = true` kernel runs it before its first
/// global access; in another kernel it returns at once.
#[inline(always)]
pub fn wait_for_prerequisites() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a wait; it orders this thread's later accesses after the
    // earlier grids' writes (`memory`: no access moves above it).
    unsafe {
        core::arch::asm!("griddepcontrol.wait;", options(nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    emu::ops::grid_dependency_wait();
}
