//! Kernels that are wrong on purpose, for the emulator's own tests (host
//! build only): each plants one fault the emulator must report. Never
//! launch them on a GPU (they are not in the PTX).

use crate::dev::copy::{commit_copies, wait_copies};
use crate::dev::warp::{FULL_MASK, shfl_down_f32, shfl_down_i32, shfl_xor_f32};
use crate::dev::{In, Out, SharedArray, block_dim_x, sync_threads, thread_idx_x};
use crate::launch::{Dim3, Kernel};

/// 64 threads, 64 words of shared memory.
const fn check(name: &'static str) -> Kernel {
    Kernel::new(name, Dim3::x(64), 64 * 4, [64, 1])
}

pub const RACE: Kernel = check("check_race");
pub const SHARED_OUT_OF_BOUNDS: Kernel = check("check_shared_out_of_bounds");
pub const GLOBAL_OUT_OF_BOUNDS: Kernel = check("check_global_out_of_bounds");
pub const DIVERGENT_BARRIER: Kernel = check("check_divergent_barrier");
pub const SHUFFLE_DEADLOCK: Kernel = check("check_shuffle_deadlock");
pub const EXITED_THREADS: Kernel = check("check_exited_threads");
pub const SHUFFLES: Kernel = check("check_shuffles");
pub const ASYNC_COPIES: Kernel = check("check_async_copies");
pub const ASYNC_NEVER_WAITED: Kernel = check("check_async_never_waited");

kernel! {
    /// Thread `t` writes `smem[t]` and reads `smem[t + 1]` with no barrier
    /// between: thread `t + 1` writes that word in the same epoch.
    pub fn check_race(out: Out<f32>) {
        let smem = SharedArray::<f32>::launch_sized();
        let t = thread_idx_x() as usize;
        smem.set(t, t as f32);
        let next = smem.get((t + 1) % 64);
        out.store(t, next);
    }
}

kernel! {
    /// Reads one word past the launch's shared memory.
    pub fn check_shared_out_of_bounds(out: Out<f32>) {
        let smem = SharedArray::<f32>::launch_sized();
        let t = thread_idx_x() as usize;
        out.store(t, smem.get(t + 1));
    }
}

kernel! {
    /// Reads one element past the input.
    pub fn check_global_out_of_bounds(input: In<f32>, out: Out<f32>) {
        let t = thread_idx_x() as usize;
        out.store(t, input.load(t + 1));
    }
}

kernel! {
    /// Half the block waits at one barrier, half at another (two call
    /// sites on purpose).
    #[allow(clippy::if_same_then_else)]
    pub fn check_divergent_barrier(out: Out<f32>) {
        let t = thread_idx_x() as usize;
        if t < 32 {
            sync_threads();
        } else {
            sync_threads();
        }
        out.store(t, 1.0);
    }
}

kernel! {
    /// Lane 0 waits at a barrier while lanes 1..31 wait for it in a shuffle.
    pub fn check_shuffle_deadlock(out: Out<f32>) {
        let t = thread_idx_x() as usize;
        let v = if t.is_multiple_of(32) {
            sync_threads();
            0.0
        } else {
            shfl_down_f32(FULL_MASK, 1.0, 1)
        };
        out.store(t, v);
    }
}

kernel! {
    /// Threads past the first 16 return before the barrier: CUDA lets the
    /// rest pass it. `out[t] = smem[15 - t]` for the first 16.
    pub fn check_exited_threads(out: Out<f32>) {
        let smem = SharedArray::<f32>::launch_sized();
        let t = thread_idx_x() as usize;
        if t >= 16 {
            return;
        }
        smem.set(t, t as f32);
        sync_threads();
        out.store(t, smem.get(15 - t));
    }
}

kernel! {
    /// Warp sums by `shfl_down` (lane 0 gets the sum of 0..32 = 496, lane
    /// 1 of 1..32 minus ... ), an xor all-reduce, and a half-warp mask:
    /// `out[3 t..3 t + 3]` per thread.
    pub fn check_shuffles(out: Out<f32>) {
        let t = thread_idx_x() as usize;
        let lane = (t % 32) as f32;
        let mut down = lane;
        let mut delta = 16;
        while delta > 0 {
            down += shfl_down_f32(FULL_MASK, down, delta);
            delta /= 2;
        }
        let mut all = lane;
        let mut m = 16;
        while m > 0 {
            all += shfl_xor_f32(FULL_MASK, all, m);
            m /= 2;
        }
        // Lanes 0..16 only: lane 15's partner 16 is outside the mask.
        let half = if t % 32 < 16 { shfl_down_i32(0x0000_ffff, (t % 32) as i32, 1) as f32 } else { -1.0 };
        let _ = block_dim_x();
        out.store(3 * t, down);
        out.store(3 * t + 1, all);
        out.store(3 * t + 2, half);
    }
}

kernel! {
    /// `cp.async` semantics: thread `t` copies `input[t]` into `smem[t]`;
    /// before its wait it still reads the old contents (`out[3 t]`), after
    /// it the copy (`out[3 t + 1]`); a zero-filling copy gives 0.0
    /// (`out[3 t + 2]`).
    pub fn check_async_copies(input: In<f32>, out: Out<f32>) {
        let smem = SharedArray::<f32>::launch_sized();
        let t = thread_idx_x() as usize;
        smem.copy_async(0, t, input, t);
        commit_copies();
        out.store(3 * t, smem.get(t));
        wait_copies::<0>();
        out.store(3 * t + 1, smem.get(t));
        smem.copy_async_or_zero(0, t, input, t, false);
        commit_copies();
        wait_copies::<0>();
        out.store(3 * t + 2, smem.get(t));
    }
}

kernel! {
    /// Exits with a copy in flight.
    pub fn check_async_never_waited(input: In<f32>) {
        let smem = SharedArray::<f32>::launch_sized();
        let t = thread_idx_x() as usize;
        smem.copy_async(0, t, input, t);
        commit_copies();
    }
}
