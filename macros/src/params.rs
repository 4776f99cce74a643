//! A kernel's parameters, and what each becomes at the launch.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{FnArg, Ident, Pat, Signature, Type};

/// How a parameter reaches the kernel.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `In<T>`, `Out<T>`: one device address; accesses are unchecked.
    Pointer,
    /// `Slice<T>`, `DisjointSlice<T>`: address and length, two PTX
    /// parameters (as rust-cuda passes slices); accesses are checked.
    /// `disjoint`: each thread writes its own element, by a 1-D index.
    Slice { disjoint: bool },
    /// Anything else: passed by value (the `KernelParam` bound says which
    /// types may be).
    Value,
}

pub struct Param {
    pub ident: Ident,
    pub ty: Type,
    pub kind: Kind,
}

const ACCEPTED: &str =
    "kernel parameters are `In<T>`, `Out<T>`, `Slice<T>`, `DisjointSlice<T>` or scalars (`u32`, `f32`, ...)";

/// The parameters of `sig`, each a plain (possibly `mut`) name and a type.
pub fn params(sig: &Signature) -> syn::Result<Vec<Param>> {
    sig.inputs
        .iter()
        .map(|input| {
            let FnArg::Typed(typed) = input else {
                return Err(syn::Error::new(input.span(), "a kernel is a free function, not a method"));
            };
            let Pat::Ident(pat) = &*typed.pat else {
                return Err(syn::Error::new(typed.pat.span(), "kernel parameters are plain names"));
            };
            if pat.by_ref.is_some() || pat.subpat.is_some() {
                return Err(syn::Error::new(pat.span(), "kernel parameters are plain names"));
            }
            let ty = (*typed.ty).clone();
            let kind = match &ty {
                Type::Path(path) if path.qself.is_none() => {
                    match path.path.segments.last().map(|s| s.ident.to_string()).as_deref() {
                        Some("In" | "Out" | "DevicePtr" | "DeviceConstPtr") => Kind::Pointer,
                        Some("Slice" | "GlobalSlice") => Kind::Slice { disjoint: false },
                        Some("DisjointSlice") => Kind::Slice { disjoint: true },
                        _ => Kind::Value,
                    }
                }
                Type::Reference(r) if matches!(*r.elem, Type::Slice(_)) => {
                    return Err(syn::Error::new(
                        ty.span(),
                        "pass slices as `Slice<T>` (read) or `DisjointSlice<T>` (each thread writes its own element)",
                    ));
                }
                _ => return Err(syn::Error::new(ty.span(), ACCEPTED)),
            };
            Ok(Param { ident: pat.ident.clone(), ty, kind })
        })
        .collect()
}

/// `In<f32>` rather than `In < f32 >`.
pub fn type_name(ty: &impl ToTokens) -> String {
    let text = ty.to_token_stream().to_string();
    let mut out = String::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let before = i.checked_sub(1).map(|j| chars[j]);
        let after = chars.get(i + 1).copied();
        let drop = c == ' '
            && (matches!(before, Some('<' | '&' | '(' | '[' | ':'))
                || matches!(after, Some('<' | '>' | ',' | ')' | ']' | ':' | ';')));
        if !drop {
            out.push(c);
        }
    }
    out
}

/// Whether `tokens` contain the keyword `unsafe` anywhere.
pub fn mentions_unsafe(tokens: TokenStream) -> bool {
    tokens.into_iter().any(|t| match t {
        proc_macro2::TokenTree::Ident(i) => i == "unsafe",
        proc_macro2::TokenTree::Group(g) => mentions_unsafe(g.stream()),
        _ => false,
    })
}
