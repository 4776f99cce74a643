//! The attribute's arguments: `block = .., shared = .., tile = ..,
//! min_blocks = .., types = [..]`.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, Ident, LitStr, Token, Type};

/// A shape: one expression (`256`) or an array of up to `max` (`[32, 8]`).
pub struct Dims(pub Vec<Expr>);

impl Dims {
    fn parse(input: ParseStream, key: &Ident, max: usize) -> syn::Result<Self> {
        let expr: Expr = input.parse()?;
        let dims: Vec<Expr> = match expr {
            Expr::Array(array) => array.elems.into_iter().collect(),
            other => vec![other],
        };
        if dims.is_empty() || dims.len() > max {
            return Err(syn::Error::new(
                key.span(),
                format!("`{key}` takes one expression or an array of at most {max}"),
            ));
        }
        Ok(Dims(dims))
    }

    /// Dimension `i`, or `1` past the given ones.
    pub fn get(&self, i: usize) -> Expr {
        self.0.get(i).cloned().unwrap_or_else(|| syn::parse_quote!(1))
    }
}

/// Everything `#[kernel(...)]` says.
pub struct KernelArgs {
    pub block: Dims,
    pub shared: Option<Expr>,
    pub tile: Option<Dims>,
    pub min_blocks: Option<Expr>,
    /// The one PTX architecture the kernel is built for (`"sm_90a"`), when
    /// its instructions exist there only.
    pub arch: Option<LitStr>,
    /// `persistent = true`: one block per SM loops over the tiles.
    pub persistent: bool,
    /// `cluster = [2, 1, 1]`: blocks per thread-block cluster.
    pub cluster: Option<Dims>,
    /// `dependent = true`: launched to overlap the kernel ahead of it
    /// (`Launch::dependent`).
    pub dependent: bool,
    pub types: Vec<Type>,
    /// Where `types` was given (for errors about the generics).
    pub types_span: Option<Span>,
    /// The path generated code reaches `dev`, `launch` and
    /// `__private::inventory` through: `::gpu`, or for a rust-cuda style
    /// kernel `::cuda_std::__private::gpu`.
    pub root: TokenStream,
    /// A rust-cuda style kernel (`cuda_std::kernel`): an `unsafe fn` whose
    /// launch gives the block and the dynamic shared memory.
    pub cuda: bool,
    /// The kernel's function is the item its module is named after (a
    /// file `name.rs` or `name/mod.rs` holding `fn name`): its launch
    /// module is then glob-imported into that module under a hidden name,
    /// so that `pub use name::name;` next to `mod name;` re-exports only
    /// the function and does not clash with the module.
    pub named_like_its_module: bool,
}

const KEYS: &str = "block, shared, tile, min_blocks, arch, persistent, cluster, dependent or types";

impl Parse for KernelArgs {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let (mut block, mut shared, mut tile, mut min_blocks, mut types) = (None, None, None, None, None);
        let mut arch: Option<LitStr> = None;
        let mut persistent: Option<bool> = None;
        let mut dependent: Option<bool> = None;
        let mut cluster: Option<Dims> = None;
        while !input.is_empty() {
            let key: Ident = input.parse()?;
            input.parse::<Token![=]>()?;
            let twice = || syn::Error::new(key.span(), format!("`{key}` is given twice"));
            match key.to_string().as_str() {
                "block" => block.replace(Dims::parse(input, &key, 3)?).map_or(Ok(()), |_| Err(twice()))?,
                "cluster" => {
                    cluster.replace(Dims::parse(input, &key, 3)?).map_or(Ok(()), |_| Err(twice()))?
                }
                "tile" => tile.replace(Dims::parse(input, &key, 2)?).map_or(Ok(()), |_| Err(twice()))?,
                "shared" => shared.replace(input.parse::<Expr>()?).map_or(Ok(()), |_| Err(twice()))?,
                "min_blocks" => {
                    min_blocks.replace(input.parse::<Expr>()?).map_or(Ok(()), |_| Err(twice()))?
                }
                "arch" => {
                    let lit: LitStr = input.parse()?;
                    if !lit.value().starts_with("sm_") {
                        return Err(syn::Error::new(
                            lit.span(),
                            "`arch` names a PTX target: `arch = \"sm_90a\"`",
                        ));
                    }
                    arch.replace(lit).map_or(Ok(()), |_| Err(twice()))?
                }
                "persistent" => persistent
                    .replace(input.parse::<syn::LitBool>()?.value)
                    .map_or(Ok(()), |_| Err(twice()))?,
                "dependent" => dependent
                    .replace(input.parse::<syn::LitBool>()?.value)
                    .map_or(Ok(()), |_| Err(twice()))?,
                "types" => {
                    let content;
                    syn::bracketed!(content in input);
                    let list: Punctuated<Type, Token![,]> =
                        content.parse_terminated(Type::parse, Token![,])?;
                    if list.is_empty() {
                        return Err(syn::Error::new(key.span(), "`types` names at least one type"));
                    }
                    types
                        .replace((list.into_iter().collect::<Vec<_>>(), key.span()))
                        .map_or(Ok(()), |_| Err(twice()))?
                }
                _ => {
                    return Err(syn::Error::new(key.span(), format!("unknown key `{key}`: expected {KEYS}")));
                }
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        let block = block.ok_or_else(|| {
            syn::Error::new(
                Span::call_site(),
                "a kernel states its block shape: `#[kernel(block = 256)]` or `#[kernel(block = [32, 8])]`",
            )
        })?;
        let (types, types_span) = match types {
            Some((types, span)) => (types, Some(span)),
            None => (Vec::new(), None),
        };
        Ok(KernelArgs {
            block,
            shared,
            tile,
            min_blocks,
            arch,
            persistent: persistent.unwrap_or(false),
            cluster,
            dependent: dependent.unwrap_or(false),
            types,
            types_span,
            root: quote!(::gpu),
            cuda: false,
            named_like_its_module: false,
        })
    }
}
