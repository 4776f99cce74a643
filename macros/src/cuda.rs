//! `cuda_std::kernel`: a kernel written for rust-cuda's `cuda_std`,
//! rewritten into what `#[kernel]` expands, so that it builds with stock
//! rustc and runs on the emulator too.
//!
//! - `pub unsafe fn`, no attribute arguments: the launch gives the grid,
//!   the block and the dynamic shared memory, as with rust-cuda.
//! - Parameters keep rust-cuda's kernel ABI: `&[T]` is two PTX parameters
//!   (address, length), `*mut T` and `*const T` one address, scalars their
//!   value. In the body they become checked handles with the same use
//!   (`a[i]`, `a.len()`, `p.add(i)`, `*p = v`), which the emulator sees.
//! - Shared memory: `#[address_space(shared)] static mut` arrays at the top
//!   of the body, and `shared_array![T; N]` anywhere in it. Stock rustc
//!   has no address spaces, so each becomes a region of the block's
//!   launch-sized shared memory, laid out after the launch's dynamic bytes
//!   (rounded up to 16); the registry entry says how many bytes they take,
//!   and the launch adds them.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{Expr, FnArg, Item, ItemFn, Stmt, Type};

use crate::args::{Dims, KernelArgs};
use crate::expand;

/// What generated code names the facade crate by: rust-cuda kernels say
/// `cuda_std`, and so does the user's `Cargo.toml` (a package rename).
fn facade() -> TokenStream {
    quote!(::cuda_std::__private)
}

pub fn kernel(
    attr: TokenStream,
    mut function: ItemFn,
    file: Option<std::path::PathBuf>,
) -> syn::Result<TokenStream> {
    if !attr.is_empty() {
        return Err(syn::Error::new(
            attr.span(),
            "`#[kernel]` takes no arguments here: the launch gives the grid, the block and the dynamic shared \
             memory",
        ));
    }
    let sig = &function.sig;
    if sig.unsafety.is_none() {
        return Err(syn::Error::new(
            sig.fn_token.span(),
            "kernel functions must be marked as unsafe (`pub unsafe fn`)",
        ));
    }
    if !matches!(function.vis, syn::Visibility::Public(_)) {
        return Err(syn::Error::new(sig.fn_token.span(), "a kernel is a `pub unsafe fn`"));
    }
    let private = facade();
    // The by-value parameters' bindings as their own types, first in the
    // body.
    let mut values: Vec<Stmt> = Vec::new();
    for input in function.sig.inputs.iter_mut() {
        let FnArg::Typed(typed) = input else {
            return Err(syn::Error::new(input.span(), "kernel functions may not be struct methods"));
        };
        let replacement: Option<Type> = match &*typed.ty {
            Type::Reference(r) => match &*r.elem {
                Type::Slice(slice) if r.mutability.is_none() => {
                    let elem = &slice.elem;
                    Some(syn::parse_quote!(#private::GlobalSlice<#elem>))
                }
                Type::Slice(_) => {
                    return Err(syn::Error::new(
                        typed.ty.span(),
                        "`&mut [T]` kernel parameters are not allowed (as in cuda_std): pass `*mut T`",
                    ));
                }
                _ => {
                    return Err(syn::Error::new(
                        typed.ty.span(),
                        "kernel parameters are `&[T]`, `*mut T`, `*const T` or scalars",
                    ));
                }
            },
            Type::Ptr(p) => {
                let elem = &p.elem;
                Some(if p.mutability.is_some() {
                    syn::parse_quote!(#private::DevicePtr<#elem>)
                } else {
                    syn::parse_quote!(#private::DeviceConstPtr<#elem>)
                })
            }
            // The scalars the launch types pass as they are.
            Type::Path(p) if SCALARS.iter().any(|s| p.qself.is_none() && p.path.is_ident(s)) => None,
            // Any other value (a `glam::Vec3`, a struct of plain fields)
            // passes as its bytes; the body gets it back as its own type.
            Type::Path(_) | Type::Array(_) | Type::Tuple(_) => {
                if let syn::Pat::Ident(pat) = &*typed.pat {
                    let (ident, ty) = (&pat.ident, &*typed.ty);
                    values.push(syn::parse_quote!(let #ident: #ty = #private::ByValue::get(#ident);));
                }
                let ty = &*typed.ty;
                Some(syn::parse_quote!(#private::ByValue<#ty>))
            }
            _ => None,
        };
        if let Some(ty) = replacement {
            *typed.ty = ty;
        }
        // `*p = v` on a handle needs a mutable binding, where rust-cuda's
        // raw pointer did not.
        if let syn::Pat::Ident(pat) = &mut *typed.pat
            && pat.by_ref.is_none()
        {
            pat.mutability = Some(Default::default());
        }
    }

    // Shared memory: the statics at the top of the body, then every
    // `shared_array!`, each a region of the layout.
    let layout = format_ident!("__{}_SHARED_LAYOUT", function.sig.ident.to_string().to_uppercase());
    let mut regions: Vec<Type> = Vec::new();
    let mut consts: Vec<Item> = Vec::new();
    let mut handles: Vec<Stmt> = Vec::new();
    let mut kept: Vec<Stmt> = Vec::new();
    let mut static_paths: Vec<syn::Path> = Vec::new();
    for stmt in std::mem::take(&mut function.block.stmts) {
        match stmt {
            Stmt::Item(Item::Static(st)) if is_shared(&st.attrs)? => {
                for attr in &st.attrs {
                    if attr.path().segments.last().is_some_and(|s| s.ident == "address_space")
                        && !static_paths.iter().any(|p| same(p, attr.path()))
                    {
                        static_paths.push(attr.path().clone());
                    }
                }
                let (ident, ty, k) = (&st.ident, &*st.ty, regions.len());
                handles.push(syn::parse_quote! {
                    #[allow(non_snake_case, unused_mut)]
                    // SAFETY: region `k` of the kernel's shared layout, which
                    // its launch provides (the registry entry's shared bytes).
                    let mut #ident = unsafe { #private::SharedStatic::<#ty>::at(__cuda_std_shared.wrapping_add(#layout[#k])) };
                });
                regions.push(ty.clone());
            }
            // The body's items (constants, type aliases, imports) may be
            // named in the regions' types: the layout sees them too.
            Stmt::Item(
                item @ (Item::Const(_) | Item::Type(_) | Item::Use(_) | Item::Struct(_) | Item::Enum(_)),
            ) => {
                consts.push(item.clone());
                kept.push(Stmt::Item(item));
            }
            other => kept.push(other),
        }
    }
    let mut arrays =
        SharedArrays { layout: layout.clone(), regions: &mut regions, error: None, paths: Vec::new() };
    for stmt in &mut kept {
        arrays.visit_stmt_mut(stmt);
    }
    if let Some(e) = arrays.error {
        return Err(e);
    }
    // The paths the user wrote for what the rewrite consumed, used once so
    // that their imports are not reported unused.
    let mut uses: Vec<Stmt> = arrays.paths.iter().map(|path| syn::parse_quote!(#path!(@used);)).collect();
    for path in &static_paths {
        uses.push(syn::parse_quote! {
            #[#path(@used)]
            const _: () = ();
        });
    }
    let mut lets = MutableLets;
    for stmt in &mut kept {
        lets.visit_stmt_mut(stmt);
    }
    kept.splice(0..0, uses);
    kept.splice(0..0, values);
    let count = regions.len();
    let (layout_item, shared) = if count == 0 {
        (TokenStream::new(), quote!(0))
    } else {
        let steps = regions.iter().enumerate().map(|(k, ty)| {
            let next = k + 1;
            quote!(o[#next] = (o[#k] + ::core::mem::size_of::<#ty>()).next_multiple_of(16);)
        });
        let item = quote! {
            /// Byte offsets of the kernel's shared regions after the dynamic
            /// bytes, and their total (last).
            #[doc(hidden)]
            #[allow(non_upper_case_globals)]
            pub const #layout: [usize; #count + 1] = {
                #(#consts)*
                let mut o = [0usize; #count + 1];
                #(#steps)*
                o
            };
        };
        let mut body: Vec<Stmt> = vec![syn::parse_quote! {
            let __cuda_std_shared: *mut u8 = #private::static_shared_base(#layout[#count]);
        }];
        body.extend(handles);
        body.append(&mut kept);
        kept = body;
        (item, quote!(#layout[#count]))
    };
    function.block.stmts = kept;
    // What the rewrite leaves behind in code that was right for rust-cuda:
    // `unsafe` around accesses that are now checked calls, `mut` bindings
    // that are never mutated, upper-case statics that are now locals, and
    // constants only the (moved) shared regions named.
    function.attrs.push(syn::parse_quote!(#[allow(unused_unsafe, unused_mut, non_snake_case, dead_code)]));

    let args = KernelArgs {
        block: Dims(vec![syn::parse_quote!(0)]),
        shared: Some(syn::parse2(shared)?),
        tile: Some(Dims(vec![syn::parse_quote!(1)])),
        min_blocks: None,
        arch: None,
        persistent: false,
        dependent: false,
        cluster: None,
        types: Vec::new(),
        types_span: None,
        root: quote!(#private::gpu),
        cuda: true,
        named_like_its_module: file.is_some_and(|f| named_like(&f, &function.sig.ident.to_string())),
    };
    let expanded = expand::kernel(args, function)?;
    Ok(quote! {
        #layout_item
        #expanded
    })
}

/// The parameter types a launch passes as they are (`KernelParam`'s
/// scalars); any other value passes as a `ByValue`.
const SCALARS: &[&str] = &["u32", "i32", "u64", "i64", "usize", "f32", "f64"];

/// Whether `attrs` hold `#[address_space(shared)]` (an error for any other
/// space).
fn is_shared(attrs: &[syn::Attribute]) -> syn::Result<bool> {
    for attr in attrs {
        if attr.path().segments.last().is_some_and(|s| s.ident == "address_space") {
            let space: syn::Ident = attr.parse_args()?;
            if space != "shared" {
                return Err(syn::Error::new(
                    space.span(),
                    format!("`#[address_space({space})]` is not supported: only `shared` statics are"),
                ));
            }
            return Ok(true);
        }
    }
    Ok(false)
}

/// Replaces each `shared_array![T; N]` by a handle to a new region, and
/// rejects shared statics below the top of the body.
struct SharedArrays<'a> {
    layout: syn::Ident,
    regions: &'a mut Vec<Type>,
    error: Option<syn::Error>,
    /// The paths `shared_array!` was invoked by.
    paths: Vec<syn::Path>,
}

/// Makes every `let` binding in the body mutable: `let p = c.add(i); *p =
/// v;` writes through a handle, which needs `&mut`.
struct MutableLets;

impl VisitMut for MutableLets {
    fn visit_pat_ident_mut(&mut self, pat: &mut syn::PatIdent) {
        if pat.by_ref.is_none() {
            pat.mutability = Some(Default::default());
        }
        syn::visit_mut::visit_pat_ident_mut(self, pat);
    }

    fn visit_expr_closure_mut(&mut self, _: &mut syn::ExprClosure) {}

    fn visit_arm_mut(&mut self, arm: &mut syn::Arm) {
        // Match patterns may name constants and unit variants.
        self.visit_expr_mut(&mut arm.body);
    }

    fn visit_expr_let_mut(&mut self, e: &mut syn::ExprLet) {
        self.visit_expr_mut(&mut e.expr);
    }

    fn visit_expr_for_loop_mut(&mut self, e: &mut syn::ExprForLoop) {
        self.visit_expr_mut(&mut e.expr);
        self.visit_block_mut(&mut e.body);
    }
}

struct ArrayArgs {
    ty: Type,
    len: Expr,
}

impl syn::parse::Parse for ArrayArgs {
    fn parse(input: syn::parse::ParseStream) -> syn::Result<Self> {
        let ty = input.parse()?;
        input.parse::<syn::Token![;]>()?;
        let len = input.parse()?;
        Ok(ArrayArgs { ty, len })
    }
}

impl VisitMut for SharedArrays<'_> {
    fn visit_expr_mut(&mut self, expr: &mut Expr) {
        if let Expr::Macro(m) = expr
            && m.mac.path.segments.last().is_some_and(|s| s.ident == "shared_array")
        {
            match m.mac.parse_body::<ArrayArgs>() {
                Ok(ArrayArgs { ty, len }) => {
                    if !self.paths.iter().any(|p| same(p, &m.mac.path)) {
                        self.paths.push(m.mac.path.clone());
                    }
                    let (k, layout, private) = (self.regions.len(), &self.layout, facade());
                    self.regions.push(syn::parse_quote!([#ty; #len]));
                    *expr = syn::parse_quote! {
                        // SAFETY: region `k` of the kernel's shared layout.
                        unsafe { #private::SharedPtr::<#ty>::at(__cuda_std_shared.wrapping_add(#layout[#k])) }
                    };
                }
                Err(e) => self.error = Some(e),
            }
            return;
        }
        syn::visit_mut::visit_expr_mut(self, expr);
    }

    fn visit_item_static_mut(&mut self, item: &mut syn::ItemStatic) {
        if item.attrs.iter().any(|a| a.path().segments.last().is_some_and(|s| s.ident == "address_space")) {
            self.error = Some(syn::Error::new(
                item.span(),
                "declare `#[address_space(shared)]` statics at the top level of the kernel's body",
            ));
        }
    }
}

/// Whether two paths are written the same.
fn same(a: &syn::Path, b: &syn::Path) -> bool {
    quote!(#a).to_string() == quote!(#b).to_string()
}

/// Whether a kernel named `name` in `file` is the item its module is named
/// after: the file is `name.rs` or `name/mod.rs`.
fn named_like(file: &std::path::Path, name: &str) -> bool {
    let stem = file.file_stem().and_then(|s| s.to_str());
    let module = if stem == Some("mod") {
        file.parent().and_then(|p| p.file_name()).and_then(|s| s.to_str())
    } else {
        stem
    };
    module == Some(name)
}
