//! `#[kernel]`: one declaration per kernel.
//!
//! ```ignore
//! /// y[i] = a x[i], one thread per element.
//! #[kernel(block = 256)]
//! pub fn scale(x: Slice<f32>, mut y: DisjointSlice<f32>, a: f32) {
//!     let i = thread::index();
//!     if let (Some(y), Some(x)) = (y.get_mut(i), x.get(i.get())) {
//!         *y = a * x;
//!     }
//! }
//! ```
//!
//! The function stays as written (a plain `pub fn`, formatted by rustfmt,
//! marked `#[inline(always)]`). From it the attribute generates:
//!
//! - on `nvptx64`, the exported `extern "ptx-kernel"` entry named after the
//!   function (for a generic kernel, one per type in `types`, named
//!   `<function>_<type>`), and, when `min_blocks` is given, the launch
//!   bounds as data that `build.rs` turns into `.maxntid`/`.minnctapersm`;
//! - on the host, a module of the function's name holding the registry
//!   entry (`KERNEL`, or `KERNELS` for a generic kernel), registered at link
//!   time so that build, tests and suite find every kernel by its
//!   declaration alone; the kernel's `Signature` (its parameter types); the
//!   emulator's entry; and `launch`, the typed launcher, whose parameters
//!   mirror the kernel's: `In<T>` and `Slice<T>` take `&R::Buffer<T>`,
//!   `Out<T>` and `DisjointSlice<T>` take `&mut R::Buffer<T>`, scalars go by
//!   value. `launch` is a safe function only when the kernel has no `unsafe`
//!   in its body and no unchecked (`In`/`Out`) parameter.
//!
//! The attribute's keys (each a constant expression):
//!
//! | key | meaning | default |
//! | --- | --- | --- |
//! | `block` | threads per block: `x`, `[x, y]` or `[x, y, z]` | required |
//! | `shared` | bytes of launch-sized shared memory per block | 0 |
//! | `tile` | problem elements one block covers: `cols` or `[cols, rows]` | the block's `[x, y]` |
//! | `min_blocks` | CUDA's `__launch_bounds__` minimum resident blocks per SM | none |
//! | `types` | the instances of a kernel generic over one type: `[i32, f32]` | none |
//!
//! In a generic kernel the expressions may name the type parameter
//! (`shared = 256 * size_of::<T>()`): each instance evaluates them with it.

use proc_macro::TokenStream;

mod args;
mod cuda;
mod expand;
mod params;

/// Declares a kernel. See the crate documentation.
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    let args = syn::parse_macro_input!(attr as args::KernelArgs);
    let function = syn::parse_macro_input!(item as syn::ItemFn);
    expand::kernel(args, function).unwrap_or_else(syn::Error::into_compile_error).into()
}

/// `cuda_std::kernel`: a kernel written for rust-cuda (`pub unsafe fn`,
/// `&[T]`/`*mut T`/`*const T`/scalar parameters, shared statics and
/// `shared_array!`). See `macros/src/cuda.rs`.
#[proc_macro_attribute]
pub fn cuda_kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    let function = syn::parse_macro_input!(item as syn::ItemFn);
    let file = proc_macro::Span::call_site().local_file();
    cuda::kernel(attr.into(), function, file).unwrap_or_else(syn::Error::into_compile_error).into()
}

/// `cuda_std::address_space`: only meaningful on a `static` at the top of a
/// `#[kernel]` body, which the kernel attribute rewrites before this runs.
/// Anywhere else it is an error naming why.
#[proc_macro_attribute]
pub fn address_space(attr: TokenStream, item: TokenStream) -> TokenStream {
    let attr = proc_macro2::TokenStream::from(attr);
    // `#[address_space(@used)] const _: () = ();`: the kernel attribute's
    // use of the user's import, after it consumed the statics.
    if attr.to_string().replace(' ', "") == "@used" {
        return TokenStream::new();
    }
    let message = format!(
        "`#[address_space({attr})]` is supported only on a `static` at the top of a `#[kernel]` body: stock \
         rustc has no address spaces, so the kernel attribute moves such statics into the block's shared memory"
    );
    let item = proc_macro2::TokenStream::from(item);
    quote::quote!(::core::compile_error!(#message); #item).into()
}
