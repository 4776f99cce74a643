//! `#[derive(DeviceCopy)]`, as cust's `cust_derive` gives it: an `unsafe
//! impl ::cust::memory::DeviceCopy` for a struct, enum or union whose every
//! field is `DeviceCopy` itself, which a generated function checks at
//! compile time (a field that is not, a `Vec` say, is a compile error
//! naming it). Type parameters get the `DeviceCopy` bound.
//!
//! The path is `::cust`, the name a host program gives `lab-cust` (`cust =
//! { package = "lab-cust", ... }`), as cust's own derive assumes.

use proc_macro::TokenStream;
use quote::{format_ident, quote};
use syn::{Data, DeriveInput, Fields, parse_macro_input, parse_quote};

#[proc_macro_derive(DeviceCopy)]
pub fn device_copy(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    let name = &input.ident;
    let krate = quote!(::cust::memory::DeviceCopy);
    let mut generics = input.generics.clone();
    for param in generics.type_params_mut() {
        param.bounds.push(parse_quote!(#krate));
    }
    let (impl_generics, type_generics, where_clause) = generics.split_for_impl();

    let field_types = |fields: &Fields| fields.iter().map(|f| f.ty.clone()).collect::<Vec<_>>();
    let types: Vec<syn::Type> = match &input.data {
        Data::Struct(s) => field_types(&s.fields),
        Data::Enum(e) => e.variants.iter().flat_map(|v| field_types(&v.fields)).collect(),
        Data::Union(u) => u.fields.named.iter().map(|f| f.ty.clone()).collect(),
    };
    let check = format_ident!("__{}_fields_are_device_copy", name.to_string().to_lowercase());
    quote! {
        // SAFETY: every field is `DeviceCopy` (checked below), so the value
        // is plain bits with no host references.
        unsafe impl #impl_generics #krate for #name #type_generics #where_clause {}

        #[doc(hidden)]
        #[allow(non_snake_case, dead_code)]
        fn #check #impl_generics() #where_clause {
            fn is_device_copy<T: #krate>() {}
            #(is_device_copy::<#types>();)*
        }
    }
    .into()
}
