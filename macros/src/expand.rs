//! What `#[kernel]` expands to: the function as written, the PTX entry
//! (nvptx64), and the host module with registry entry, signature, emulator
//! entry and typed launcher.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{GenericParam, Ident, ItemFn, LitStr, Type};

use crate::args::{Dims, KernelArgs};
use crate::params::{Kind, Param, mentions_unsafe, params, type_name};

/// One PTX entry of the kernel: the function itself, or one instance of a
/// generic one.
struct Instance {
    /// The entry's name in the PTX.
    entry: String,
    /// `type T = f32;` for an instance of a generic kernel.
    alias: TokenStream,
    /// `::<T>` when generic.
    turbofish: TokenStream,
    /// The instance's type, as written (`f32`).
    ty: Option<Type>,
}

pub fn kernel(args: KernelArgs, mut function: ItemFn) -> syn::Result<TokenStream> {
    let sig = &function.sig;
    let name = sig.ident.clone();
    if !matches!(function.vis, syn::Visibility::Public(_)) {
        return Err(syn::Error::new(sig.fn_token.span(), "a kernel is a `pub fn`"));
    }
    if let (Some(token), false) = (sig.unsafety, args.cuda) {
        return Err(syn::Error::new(
            token.span(),
            "a kernel is a safe `pub fn`: put its unsafe operations in `unsafe` blocks, each saying why it is sound",
        ));
    }
    if sig.asyncness.is_some() || sig.constness.is_some() || sig.abi.is_some() || sig.variadic.is_some() {
        return Err(syn::Error::new(sig.span(), "a kernel is a plain `pub fn` (not async, const or extern)"));
    }
    if !matches!(sig.output, syn::ReturnType::Default) {
        return Err(syn::Error::new(sig.output.span(), "a kernel returns nothing"));
    }
    let params = params(sig)?;
    let instances = instances(&args, &function)?;

    let entries = instances.iter().map(|i| entry(&args, &name, &params, i));
    let host = host_module(&args, &function, &params, &instances);

    // The function itself, unchanged but for inlining into its entries.
    function.attrs.push(syn::parse_quote!(#[inline(always)]));
    Ok(quote! {
        #function
        #(#entries)*
        #host
    })
}

/// The entries to emit: one for a plain kernel, one per `types` entry for a
/// kernel generic over one type parameter.
fn instances(args: &KernelArgs, function: &ItemFn) -> syn::Result<Vec<Instance>> {
    let name = function.sig.ident.to_string();
    let generics = &function.sig.generics;
    let mut type_params = Vec::new();
    for param in &generics.params {
        match param {
            GenericParam::Type(t) => type_params.push(t.ident.clone()),
            other => {
                return Err(syn::Error::new(
                    other.span(),
                    "a generic kernel has one type parameter (no lifetimes or const parameters)",
                ));
            }
        }
    }
    match (type_params.as_slice(), args.types.is_empty()) {
        ([], true) => Ok(vec![Instance {
            entry: name,
            alias: TokenStream::new(),
            turbofish: TokenStream::new(),
            ty: None,
        }]),
        ([], false) => Err(syn::Error::new(
            args.types_span.unwrap_or_else(Span::call_site),
            "`types` instantiates a generic kernel, and this one has no type parameter",
        )),
        ([_], true) => Err(syn::Error::new(
            generics.span(),
            "a generic kernel names its instances: `#[kernel(..., types = [f32, i32])]`",
        )),
        ([param], false) => args
            .types
            .iter()
            .map(|ty| {
                let suffix = match ty {
                    Type::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => {
                        p.path.get_ident().unwrap().to_string()
                    }
                    _ => {
                        return Err(syn::Error::new(
                            ty.span(),
                            "instance types are plain names (`f32`): they suffix the entry's name",
                        ));
                    }
                };
                Ok(Instance {
                    entry: format!("{name}_{suffix}"),
                    alias: quote!(#[allow(dead_code)] type #param = #ty;),
                    turbofish: quote!(::<#param>),
                    ty: Some(ty.clone()),
                })
            })
            .collect(),
        _ => Err(syn::Error::new(generics.span(), "a generic kernel has one type parameter")),
    }
}

/// The PTX entry of one instance, and its launch bounds (nvptx64 only).
fn entry(args: &KernelArgs, name: &Ident, params: &[Param], instance: &Instance) -> TokenStream {
    let root = &args.root;
    let Instance { entry, alias, turbofish, .. } = instance;
    let mut inputs = Vec::new();
    let mut rebuild = Vec::new();
    let mut call = Vec::new();
    for Param { ident, ty, kind } in params {
        match kind {
            Kind::Slice { .. } => {
                let (ptr, len) = (format_ident!("{ident}__ptr"), format_ident!("{ident}__len"));
                inputs.push(quote!(#ptr: *mut <#ty as #root::dev::SliceParam>::Elem, #len: usize));
                rebuild.push(quote! {
                    // SAFETY: the typed launcher passed a whole device buffer:
                    // its address and its length in elements.
                    let #ident = unsafe { <#ty as #root::dev::SliceParam>::from_raw_parts(#ptr, #len) };
                });
            }
            Kind::Pointer | Kind::Value => inputs.push(quote!(#ident: #ty)),
        }
        call.push(ident.clone());
    }
    let bounds = (args.min_blocks.is_some() || args.cluster.is_some()).then(|| {
        let (x, y, z) = (args.block.get(0), args.block.get(1), args.block.get(2));
        let min = args.min_blocks.clone().unwrap_or_else(|| syn::parse_quote!(0));
        let none = Dims(Vec::new());
        let cluster = args.cluster.as_ref().unwrap_or(&none);
        let (cx, cy, cz) = (cluster.get(0), cluster.get(1), cluster.get(2));
        let flags = u32::from(args.min_blocks.is_some()) | u32::from(args.cluster.is_some()) << 1;
        let symbol = LitStr::new(&format!("__launch_bounds__{entry}"), Span::call_site());
        quote! {
            /// `.maxntid x, y, z` and `.minnctapersm` (flag 1), and
            /// `.reqnctapercluster` (flag 2), for `build.rs` to write into
            /// the entry (Rust has no attribute that reaches them).
            #[unsafe(export_name = #symbol)]
            #[used]
            pub static LAUNCH_BOUNDS: [u32; 8] = [
                (#x) as u32, (#y) as u32, (#z) as u32, (#min) as u32,
                (#cx) as u32, (#cy) as u32, (#cz) as u32, #flags,
            ];
        }
    });
    let symbol = LitStr::new(entry, Span::call_site());
    // A rust-cuda kernel is an `unsafe fn`: its entry calls it in `unsafe`.
    let call_kernel = if args.cuda {
        quote!(unsafe { #name #turbofish (#(#call),*) })
    } else {
        quote!(#name #turbofish (#(#call),*))
    };
    let (bx, by, bz) = (args.block.get(0), args.block.get(1), args.block.get(2));
    let shared = args.shared.clone().unwrap_or_else(|| syn::parse_quote!(0));
    let tile = args.tile.as_ref().map(|t| {
        let (tx, ty) = (t.get(0), t.get(1));
        quote!((#tx) as u32, (#ty) as u32,)
    });
    // A kernel for one architecture is in that PTX only.
    let only = args.arch.as_ref().map(|arch| quote!(#[cfg(target_feature = #arch)]));
    quote! {
        #[cfg(target_arch = "nvptx64")]
        #only
        const _: () = {
            #alias
            // The launch description, evaluated here too: the same
            // constants, type-checked for both targets.
            const _: &[u32] = &[(#bx) as u32, (#by) as u32, (#bz) as u32, (#shared) as u32, #tile];
            #[unsafe(export_name = #symbol)]
            pub unsafe extern "ptx-kernel" fn entry(#(#inputs),*) {
                #(#rebuild)*
                #call_kernel
            }
            #bounds
        };
    }
}

/// The first paragraph of the function's doc comment, on one line.
fn summary(function: &ItemFn) -> String {
    let mut lines = Vec::new();
    for attr in &function.attrs {
        if let syn::Meta::NameValue(nv) = &attr.meta
            && nv.path.is_ident("doc")
            && let syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) = &nv.value
        {
            lines.push(s.value());
        }
    }
    let text = lines.join("\n");
    let first = text.trim().split("\n\n").next().unwrap_or("");
    first.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The host module named after the kernel.
fn host_module(
    args: &KernelArgs,
    function: &ItemFn,
    params: &[Param],
    instances: &[Instance],
) -> TokenStream {
    let root = &args.root;
    let name = &function.sig.ident;
    let name_str = name.to_string();
    let generic = instances[0].ty.is_some();
    let tys: Vec<&Type> = params.iter().map(|p| &p.ty).collect();
    let idents: Vec<&Ident> = params.iter().map(|p| &p.ident).collect();
    let unchecked = params.iter().any(|p| p.kind == Kind::Pointer) || mentions_unsafe(quote!(#function));
    let doc = summary(function);
    let signature_name =
        format!("({})", params.iter().map(|p| type_name(&p.ty)).collect::<Vec<_>>().join(", "));
    let param_infos = params.iter().map(|p| {
        let (n, t) = (p.ident.to_string(), type_name(&p.ty));
        quote!(#root::launch::Param { name: #n, ty: #t })
    });
    let param_infos = quote!(&[#(#param_infos),*]);
    let named_like_its_module = args.named_like_its_module;
    // The launch module's path: its own, or for a hidden one (see below)
    // that of the module it is glob-imported into.
    let path = if named_like_its_module {
        let hidden = format!("::__{name_str}_launch");
        quote!(::core::module_path!().split_at(::core::module_path!().len() - #hidden.len()).0)
    } else {
        quote!(::core::module_path!())
    };

    let (bx, by, bz) = (args.block.get(0), args.block.get(1), args.block.get(2));
    let (tx, ty) = match &args.tile {
        Some(tile) => (tile.get(0), tile.get(1)),
        None => (bx.clone(), by.clone()),
    };
    let shared = args.shared.clone().unwrap_or_else(|| syn::parse_quote!(0));
    let min_blocks = args.min_blocks.clone().unwrap_or_else(|| syn::parse_quote!(0));
    let (persistent, dependent) = (args.persistent, args.dependent);
    let none = Dims(Vec::new());
    let cluster = args.cluster.as_ref().unwrap_or(&none);
    let (cx, cy, cz) = (cluster.get(0), cluster.get(1), cluster.get(2));
    let arch = match &args.arch {
        Some(a) => quote!(::core::option::Option::Some(#a)),
        None => quote!(::core::option::Option::None),
    };
    let line = quote_spanned!(name.span()=> ::core::line!());

    let mut values = Vec::new();
    let mut runs = Vec::new();
    let mut submits = Vec::new();
    for (index, instance) in instances.iter().enumerate() {
        let Instance { entry, alias, turbofish, ty: instance_ty } = instance;
        let run = format_ident!("run_{index}");
        let instance_name = match instance_ty {
            Some(t) => {
                let s = type_name(t);
                quote!(::core::option::Option::Some(#s))
            }
            None => quote!(::core::option::Option::None),
        };
        values.push(quote! {
            {
                #alias
                #root::launch::Kernel {
                    name: #entry,
                    function: #name_str,
                    instance: #instance_name,
                    index: #index,
                    path: #path,
                    file: ::core::file!(),
                    line: #line,
                    launch: #root::launch::Launch {
                        block: #root::launch::Dim3 { x: (#bx) as u32, y: (#by) as u32, z: (#bz) as u32 },
                        shared_bytes: (#shared) as u32,
                        tile: [(#tx) as u32, (#ty) as u32],
                        min_blocks_per_sm: (#min_blocks) as u32,
                        persistent: #persistent,
                        cluster: #root::launch::Dim3 { x: (#cx) as u32, y: (#cy) as u32, z: (#cz) as u32 },
                        dependent: #dependent,
                    },
                    params: #param_infos,
                    doc: #doc,
                    unchecked: #unchecked,
                    arch: #arch,
                    signature: || ::core::any::TypeId::of::<(#(#tys,)*)>(),
                    signature_name: #signature_name,
                    run: #run,
                }
            }
        });
        runs.push(quote! {
            /// The emulator's entry: one thread's run of the kernel.
            #[allow(clippy::too_many_arguments)]
            fn #run(args: &[#root::launch::Arg]) {
                #alias
                let mut args = args.iter();
                let mut next = || args.next().expect("the typed launcher passes every parameter");
                // SAFETY: the arguments come from this kernel's typed
                // launcher, one per parameter, in order.
                unsafe { super::#name #turbofish (#(<#tys as #root::launch::KernelParam>::from_arg(next())),*) }
            }
        });
        let entry_ref = if generic { quote!(&KERNELS[#index]) } else { quote!(&KERNEL) };
        submits.push(quote! {
            #root::__private::inventory::submit! { #root::launch::Registered(#entry_ref) }
        });
    }

    let unsafety = if unchecked { quote!(unsafe) } else { TokenStream::new() };
    let safety_doc = if unchecked {
        quote! {
            ///
            /// # Safety
            ///
            /// The kernel trusts its launch: it indexes its `In`/`Out`
            /// parameters (or shared memory) without bounds checks. Every
            /// buffer must be as long, and the grid shaped, as the kernel's
            /// documentation requires for the scalars passed. A wrong length
            /// is an out-of-bounds access on the GPU (the emulator reports it).
        }
    } else {
        TokenStream::new()
    };
    let launch_doc = format!(
        "Launches [`{name_str}`](super::{name_str}) over `grid` blocks of its declared shape, \
         with its declared shared memory, on `runtime` (a GPU or the emulator)."
    );
    let host_args = quote!(#(#idents: <#tys as #root::launch::KernelParam>::Host<'_, R>),*);
    // A kernel with a `DisjointSlice` hands each thread its own element by
    // its 1-D index: its block must be 1-D, and its launcher takes the grid
    // as one number.
    let disjoint = params.iter().any(|p| p.kind == Kind::Slice { disjoint: true });
    let (grid_type, grid_value) = if disjoint {
        (quote!(u32), quote!(#root::launch::Dim3::x(grid)))
    } else {
        (quote!(impl ::core::convert::Into<#root::launch::Dim3>), quote!(grid.into()))
    };
    let one_d = disjoint.then(|| {
        let checks = instances.iter().map(|i| {
            let alias = &i.alias;
            quote! {
                const _: () = {
                    #alias
                    assert!(
                        (#by) as u32 == 1 && (#bz) as u32 == 1,
                        "a kernel with a DisjointSlice parameter has a 1-D block: its threads' indices are 1-D"
                    );
                };
            }
        });
        quote!(#(#checks)*)
    });
    let pack = quote!([#(<#tys as #root::launch::KernelParam>::arg::<R>(&#idents)),*]);
    // A generic kernel's launcher picks the instance from its type
    // parameter; a plain one launches its one entry.
    let (registry, generics, entry_ref) = if generic {
        let type_param = match &function.sig.generics.params[0] {
            GenericParam::Type(t) => t.ident.clone(),
            _ => unreachable!("checked in `instances`"),
        };
        let count = instances.len();
        let impls = instances.iter().enumerate().map(|(index, i)| {
            let ty = i.ty.as_ref().unwrap();
            quote!(impl Instance for #ty { const INDEX: usize = #index; })
        });
        (
            quote! {
                /// The registry entries of the instances, in `types` order.
                pub static KERNELS: [#root::launch::Kernel; #count] = [#(#values),*];
                /// The kernel's parameter types, in order.
                pub type Signature<#type_param> = (#(#tys,)*);
                /// The types this kernel is instantiated for.
                pub trait Instance: 'static {
                    #[doc(hidden)]
                    const INDEX: usize;
                }
                #(#impls)*
            },
            quote!(#type_param: Instance,),
            quote!(&KERNELS[<#type_param as Instance>::INDEX]),
        )
    } else {
        let value = &values[0];
        (
            quote! {
                /// The registry entry: PTX name, launch description, signature.
                pub static KERNEL: #root::launch::Kernel = #value;
                /// The kernel's parameter types, in order.
                pub type Signature = (#(#tys,)*);
            },
            TokenStream::new(),
            quote!(&KERNEL),
        )
    };
    let launcher = if args.cuda {
        let launch_doc = format!(
            "Launches [`{name_str}`](super::{name_str}) over `grid` blocks of `block` threads with \
             `dynamic_shared` bytes of dynamic shared memory (its shared statics come on top), on `runtime` \
             (a GPU or the emulator)."
        );
        quote! {
            #[doc = #launch_doc]
            ///
            /// # Safety
            ///
            /// As for calling the kernel (an `unsafe fn`): the buffers and
            /// scalars satisfy its contract for this grid and block.
            #[allow(clippy::too_many_arguments)]
            pub unsafe fn launch<R: #root::launch::Launcher + ?Sized>(
                runtime: &R,
                grid: impl ::core::convert::Into<#root::launch::Dim3>,
                block: impl ::core::convert::Into<#root::launch::Dim3>,
                dynamic_shared: u32,
                #host_args
            ) -> ::core::result::Result<(), R::Error> {
                let args = #pack;
                unsafe { runtime.launch_with(&KERNEL, grid.into(), block.into(), dynamic_shared, &args) }
            }
        }
    } else {
        quote! {
        #[doc = #launch_doc]
        #safety_doc
        #[allow(clippy::too_many_arguments)]
        pub #unsafety fn launch<#generics R: #root::launch::Launcher + ?Sized>(
            runtime: &R,
            grid: #grid_type,
            #host_args
        ) -> ::core::result::Result<(), R::Error> {
            let args = #pack;
            unsafe { runtime.launch(#entry_ref, #grid_value, &args) }
        }
        }
    };
    let module_doc = format!(
        "The launch of [`{name_str}`](fn@super::{name_str}): registry entry, signature, typed launcher."
    );
    // A kernel named like its own module (see `KernelArgs`) has its launch
    // module under a hidden name, glob-imported into that module: the
    // launcher is `module::launch`, and `pub use module::name;` beside
    // `mod module;` imports only the function.
    let (module, glob) = if named_like_its_module {
        let hidden = format_ident!("__{}_launch", name);
        (
            hidden.clone(),
            quote! {
                #[cfg(not(target_arch = "nvptx64"))]
                #[doc(hidden)]
                pub use #hidden::*;
            },
        )
    } else {
        (name.clone(), TokenStream::new())
    };
    quote! {
        #glob
        #[cfg(not(target_arch = "nvptx64"))]
        #[doc = #module_doc]
        pub mod #module {
            #[allow(unused_imports)]
            use super::*;
            #registry
            #one_d
            #(#submits)*
            #(#runs)*
            #launcher
        }
    }
}
