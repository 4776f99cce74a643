//! Typed launches: what the host passes for each kernel parameter, and the
//! runtime that launches.

use std::marker::PhantomData;

use super::{Dim3, Kernel};

/// One launch argument, as a typed launcher packs it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arg {
    /// A buffer passed as its device address (`In<T>`, `Out<T>`); `bytes`
    /// is its size, the only memory the emulator lets the kernel touch.
    Ptr {
        addr: u64,
        bytes: usize,
    },
    /// A buffer passed as its address and its length in elements (`Slice<T>`,
    /// `DisjointSlice<T>`): two PTX parameters.
    Slice {
        addr: u64,
        len: u64,
        bytes: usize,
    },
    U32(u32),
    I32(i32),
    U64(u64),
    I64(i64),
    F32(f32),
    F64(f64),
    /// Any other plain value passed by value (a `glam::Vec3`, a struct of
    /// scalars): its bytes, one PTX parameter.
    Value(Value),
}

/// A value passed by value, as its bytes: up to [`Value::MAX_BYTES`].
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Value {
    /// The bytes, in the words' memory order (first, so that the value's
    /// address is its bytes' address).
    words: [u32; 16],
    len: u32,
}

impl Value {
    /// The largest value passed by value (a `glam::Mat4`).
    pub const MAX_BYTES: usize = 64;

    /// `value`'s bytes.
    ///
    /// # Panics
    /// Where `T` is larger than [`Value::MAX_BYTES`].
    pub fn of<T: Copy>(value: &T) -> Value {
        let len = size_of::<T>();
        assert!(len <= Self::MAX_BYTES, "a {len}-byte value: at most {} pass by value", Self::MAX_BYTES);
        // SAFETY: `value` is `len` readable bytes of a `Copy` type.
        unsafe { Value::from_bytes(std::slice::from_raw_parts((value as *const T).cast(), len)) }
    }

    /// A value of these bytes (at most [`Value::MAX_BYTES`]).
    pub fn from_bytes(bytes: &[u8]) -> Value {
        let mut value = Value { words: [0; 16], len: bytes.len() as u32 };
        assert!(bytes.len() <= Self::MAX_BYTES);
        // SAFETY: `words` holds 64 bytes, at least `bytes.len()`.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), value.words.as_mut_ptr().cast(), bytes.len())
        };
        value
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `len <= 64` bytes of `words`.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr().cast(), self.len as usize) }
    }

    /// The value as a `T`.
    ///
    /// # Safety
    /// The bytes are a valid `T` (they came from [`Value::of`] of one).
    pub unsafe fn read<T: Copy>(&self) -> T {
        assert_eq!(self.len as usize, size_of::<T>(), "a value of another size");
        // SAFETY: `size_of::<T>()` bytes, a valid `T` by the caller.
        unsafe { std::ptr::read_unaligned(self.words.as_ptr().cast()) }
    }
}

impl Arg {
    /// The buffer this argument passes, as `(address, bytes)`.
    pub fn buffer(&self) -> Option<(usize, usize)> {
        match *self {
            Arg::Ptr { addr, bytes } | Arg::Slice { addr, bytes, .. } => Some((addr as usize, bytes)),
            _ => None,
        }
    }
}

/// Where kernels run: allocates device buffers and launches. The host
/// crate's `Gpu` (a CUDA device or the CPU emulator) is one.
pub trait Launcher: 'static {
    /// Device memory holding `T`s.
    type Buffer<T: 'static>: 'static;
    type Error;

    /// The device address of `buffer` and its length in elements.
    fn address<T: 'static>(buffer: &Self::Buffer<T>) -> (u64, usize);

    /// Launches `kernel` over `grid` with its declared block and shared
    /// memory.
    ///
    /// # Safety
    /// `args` are the kernel's parameters in order, as its typed launcher
    /// packs them, and they satisfy the kernel's contract; a kernel with a
    /// `DisjointSlice` parameter gets a 1-D grid.
    unsafe fn launch(&self, kernel: &'static Kernel, grid: Dim3, args: &[Arg]) -> Result<(), Self::Error> {
        // SAFETY: the caller's contract.
        unsafe { self.launch_with(kernel, grid, kernel.launch.block, 0, args) }
    }

    /// Launches `kernel` over `grid` blocks of `block` threads, with
    /// `dynamic_shared` bytes of dynamic shared memory on top of the
    /// kernel's own (`kernel.launch.shared_bytes`: a rust-cuda kernel's
    /// shared statics, placed after the dynamic bytes rounded up to 16).
    ///
    /// # Safety
    /// As for [`Launcher::launch`], and `block` is a shape the kernel runs
    /// correctly with.
    unsafe fn launch_with(
        &self,
        kernel: &'static Kernel,
        grid: Dim3,
        block: Dim3,
        dynamic_shared: u32,
        args: &[Arg],
    ) -> Result<(), Self::Error>;
}

/// The bytes of shared memory a launch asks for: the dynamic bytes rounded
/// up to 16, then the kernel's own.
pub fn shared_bytes(kernel: &Kernel, dynamic_shared: u32) -> u32 {
    dynamic_shared.next_multiple_of(16) + kernel.launch.shared_bytes
}

/// A type a kernel parameter may have, and what the host passes for it.
pub trait KernelParam: 'static {
    /// What the typed launcher takes: `&R::Buffer<T>` for buffers the
    /// kernel reads, `&mut R::Buffer<T>` for those it writes, the value for
    /// scalars.
    type Host<'a, R: Launcher + ?Sized>;

    /// The launch argument for `host`.
    fn arg<R: Launcher + ?Sized>(host: &Self::Host<'_, R>) -> Arg;

    /// The parameter rebuilt from its argument: the emulator's side.
    ///
    /// # Safety
    /// `arg` was packed by [`KernelParam::arg`] for a launch of the kernel
    /// being run, whose buffers are alive.
    #[doc(hidden)]
    unsafe fn from_arg(arg: &Arg) -> Self;
}

macro_rules! scalar_params {
    ($($t:ty => $variant:ident),*) => {$(
        impl KernelParam for $t {
            type Host<'a, R: Launcher + ?Sized> = $t;
            fn arg<R: Launcher + ?Sized>(host: &$t) -> Arg {
                Arg::$variant(*host)
            }
            unsafe fn from_arg(arg: &Arg) -> Self {
                match arg {
                    Arg::$variant(v) => *v,
                    other => panic!("a {} parameter got {other:?}", stringify!($t)),
                }
            }
        }
    )*};
}

scalar_params!(u32 => U32, i32 => I32, u64 => U64, i64 => I64, f32 => F32, f64 => F64);

// `usize` and `isize` are 64-bit on nvptx64 and on the hosts we run on.
impl KernelParam for usize {
    type Host<'a, R: Launcher + ?Sized> = usize;
    fn arg<R: Launcher + ?Sized>(host: &usize) -> Arg {
        Arg::U64(*host as u64)
    }
    unsafe fn from_arg(arg: &Arg) -> Self {
        match arg {
            Arg::U64(v) => *v as usize,
            other => panic!("a usize parameter got {other:?}"),
        }
    }
}

/// A kernel's parameter types as a tuple, `(In<f32>, Out<f32>, u32)`: what
/// a family asks the registry's kernels to take.
pub trait Signature: 'static {
    /// The host's arguments, a tuple in the same order.
    type Host<'a, R: Launcher + ?Sized>;
    fn args<R: Launcher + ?Sized>(host: &Self::Host<'_, R>) -> Vec<Arg>;
}

macro_rules! signatures {
    ($(($($p:ident $i:tt),+))*) => {$(
        impl<$($p: KernelParam),+> Signature for ($($p,)+) {
            type Host<'a, R: Launcher + ?Sized> = ($($p::Host<'a, R>,)+);
            fn args<R: Launcher + ?Sized>(host: &Self::Host<'_, R>) -> Vec<Arg> {
                vec![$($p::arg::<R>(&host.$i)),+]
            }
        }
    )*};
}

impl Signature for () {
    type Host<'a, R: Launcher + ?Sized> = ();
    fn args<R: Launcher + ?Sized>(_: &()) -> Vec<Arg> {
        Vec::new()
    }
}

signatures! {
    (A 0)
    (A 0, B 1)
    (A 0, B 1, C 2)
    (A 0, B 1, C 2, D 3)
    (A 0, B 1, C 2, D 3, E 4)
    (A 0, B 1, C 2, D 3, E 4, F 5)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14, P 15)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14, P 15, Q 16)
}

/// A registered kernel whose signature was checked to be `S`
/// ([`Kernel::typed`]): launched with a tuple of typed host arguments.
pub struct Typed<S> {
    kernel: &'static Kernel,
    signature: PhantomData<fn(S)>,
}

impl<S> Clone for Typed<S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for Typed<S> {}

impl<S: Signature> Typed<S> {
    pub(super) fn new(kernel: &'static Kernel) -> Self {
        Typed { kernel, signature: PhantomData }
    }

    pub fn kernel(&self) -> &'static Kernel {
        self.kernel
    }

    /// Launches the kernel over `grid` with `args`.
    ///
    /// # Safety
    /// As for the kernel's own typed launcher: when the kernel is
    /// [`Kernel::unchecked`], its buffers must be as long as it requires;
    /// a kernel with a `DisjointSlice` parameter gets a 1-D grid (its typed
    /// launcher takes the grid as one number for that reason).
    pub unsafe fn launch<R: Launcher + ?Sized>(
        &self,
        runtime: &R,
        grid: impl Into<Dim3>,
        args: S::Host<'_, R>,
    ) -> Result<(), R::Error> {
        let args = S::args::<R>(&args);
        // SAFETY: the signature was checked against the declaration, so
        // `args` are its parameters in order; the rest is the caller's.
        unsafe { runtime.launch(self.kernel, grid.into(), &args) }
    }
}
