//! The typed launchers `#[kernel]` generates, run against a launcher that
//! records what it is handed: each launch names its kernel (a generic
//! kernel's instance by the buffers' element type), its grid, its declared
//! block and shared memory, and packs the arguments in the kernel's order
//! (a `Slice` as address and length, an `In`/`Out` as an address, scalars
//! as themselves). The launches that must not compile are in
//! `tests/launch/` (`launch.rs`).

use std::cell::RefCell;

use gpu::launch::{Arg, Dim3, Kernel, Launcher, registry};

struct Buffer<T>(Vec<T>);

/// One recorded launch.
#[derive(Debug, PartialEq)]
struct Call {
    kernel: &'static str,
    grid: Dim3,
    block: Dim3,
    dynamic_shared: u32,
    args: Vec<Arg>,
}

#[derive(Default)]
struct Recorder(RefCell<Vec<Call>>);

impl Launcher for Recorder {
    type Buffer<T: 'static> = Buffer<T>;
    type Error = String;

    fn address<T: 'static>(buffer: &Buffer<T>) -> (u64, usize) {
        (buffer.0.as_ptr() as u64, buffer.0.len())
    }

    unsafe fn launch_with(
        &self,
        kernel: &'static Kernel,
        grid: Dim3,
        block: Dim3,
        dynamic_shared: u32,
        args: &[Arg],
    ) -> Result<(), String> {
        self.0.borrow_mut().push(Call {
            kernel: kernel.name,
            grid,
            block,
            dynamic_shared,
            args: args.to_vec(),
        });
        Ok(())
    }
}

fn addr<T>(b: &Buffer<T>) -> u64 {
    b.0.as_ptr() as u64
}

#[test]
fn launches_pack_their_kernels_parameters_in_order() {
    let recorder = Recorder::default();

    // A kernel with no `unsafe` has a safe launcher; its slices go as
    // address and length, its scalar as itself.
    let (x, mut y) = (Buffer(vec![1.0f32; 5]), Buffer(vec![0.0f32; 7]));
    gpu::scale::scale::launch(&recorder, 3, &x, &mut y, 2.5).unwrap();

    // An unchecked one is `unsafe` to launch; a 2-D grid.
    let (input, mut output) = (Buffer(vec![1.0f32; 6]), Buffer(vec![0.0f32; 6]));
    // SAFETY: the recorder launches nothing.
    unsafe { gpu::transpose::transpose_fast::launch(&recorder, [2, 4], &input, &mut output, 3, 2) }.unwrap();

    // A generic kernel's instance follows from the buffers' element type.
    let (values, mut partials, mut out) =
        (Buffer(vec![1.0f64; 4]), Buffer(vec![0.0f64; 1]), Buffer(vec![0.0f64]));
    let mut ticket = Buffer(vec![0u32]);
    // SAFETY: as above.
    unsafe {
        gpu::reduce::reduce_fast::launch(&recorder, 1, &values, &mut partials, &mut ticket, &mut out, 4)
    }
    .unwrap();

    let calls = recorder.0.into_inner();
    let declared =
        |name: &str| registry::find(name).unwrap_or_else(|| panic!("{name} is not registered")).launch;
    let scale = declared("scale");
    assert_eq!(
        calls[0],
        Call {
            kernel: "scale",
            grid: Dim3::x(3),
            block: scale.block,
            dynamic_shared: 0,
            args: vec![
                Arg::Slice { addr: addr(&x), len: 5, bytes: 20 },
                Arg::Slice { addr: addr(&y), len: 7, bytes: 28 },
                Arg::F32(2.5),
            ],
        }
    );
    assert_eq!(scale.block, Dim3::x(256));
    let transpose = declared("transpose_fast");
    assert_eq!(
        calls[1],
        Call {
            kernel: "transpose_fast",
            grid: Dim3::xy(2, 4),
            block: transpose.block,
            dynamic_shared: 0,
            args: vec![
                Arg::Ptr { addr: addr(&input), bytes: 24 },
                Arg::Ptr { addr: addr(&output), bytes: 24 },
                Arg::U32(3),
                Arg::U32(2),
            ],
        }
    );
    assert_eq!(calls[2].kernel, "reduce_fast_f64");
    assert_eq!(calls[2].block, declared("reduce_fast_f64").block);
    assert_eq!(
        calls[2].args,
        [
            Arg::Ptr { addr: addr(&values), bytes: 32 },
            Arg::Ptr { addr: addr(&partials), bytes: 8 },
            Arg::Ptr { addr: addr(&ticket), bytes: 4 },
            Arg::Ptr { addr: addr(&out), bytes: 8 },
            Arg::U64(4),
        ]
    );
    assert_eq!(calls.len(), 3);
}
