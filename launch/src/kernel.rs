//! A registered kernel, and the registry: every kernel, registered by its
//! `#[kernel]` declaration.

use std::any::TypeId;

use super::{Arg, Launch, Signature, Typed};

/// One parameter of a kernel, for messages and documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Param {
    pub name: &'static str,
    /// The type as declared (`In<f32>`).
    pub ty: &'static str,
}

/// A kernel (or one instance of a generic kernel), as its declaration
/// registers it.
#[derive(Debug)]
pub struct Kernel {
    /// The entry's name in the PTX (`reduce_fast_f32`).
    pub name: &'static str,
    /// The function declared (`reduce_fast`).
    pub function: &'static str,
    /// The type this instance of a generic kernel is for (`f32`).
    pub instance: Option<&'static str>,
    /// The instance's position in the declaration's `types` (0 otherwise).
    pub index: usize,
    /// The declaration's path with the function's name as its last segment
    /// (`gpu::reduce::reduce_fast`).
    pub path: &'static str,
    pub file: &'static str,
    pub line: u32,
    pub launch: Launch,
    pub params: &'static [Param],
    /// The first paragraph of the doc comment.
    pub doc: &'static str,
    /// The typed launcher is `unsafe`: the kernel makes unchecked accesses.
    pub unchecked: bool,
    /// The one PTX architecture the kernel is built for (`sm_90a`: Hopper's
    /// `wgmma` and `setmaxnreg` exist there only); `None`: every one.
    pub arch: Option<&'static str>,
    /// The `TypeId` of the tuple of parameter types.
    pub signature: fn() -> TypeId,
    /// That tuple, as written (`(In<f32>, Out<f32>, u32)`).
    pub signature_name: &'static str,
    /// The emulator's entry: runs one thread of the kernel on arguments
    /// packed by its typed launcher.
    pub run: fn(&[Arg]),
}

impl Kernel {
    /// Runs this kernel on the CPU emulator over `grid` blocks of `block`
    /// threads with `dynamic_shared` bytes of dynamic shared memory, on
    /// `args` (its typed launcher's, or the same rebuilt): each buffer an
    /// argument names, under its parameter's name, is the only global
    /// memory it may touch. Returns the access analysis (empty unless
    /// `analyze`); `checks` as [`emu::LaunchSpec::checks`].
    ///
    /// # Safety
    /// The arguments are what the kernel takes, and every buffer is memory
    /// of this process of at least its extent.
    pub unsafe fn emulate(
        &self,
        grid: [u32; 3],
        block: [u32; 3],
        dynamic_shared: u32,
        args: &[Arg],
        analyze: bool,
        checks: bool,
    ) -> Result<emu::Analysis, emu::EmuError> {
        let buffers: Vec<emu::Buffer> = (args.iter().zip(self.params))
            .filter_map(|(arg, param)| {
                arg.buffer().map(|(addr, bytes)| emu::Buffer { name: param.name, addr, bytes })
            })
            .collect();
        let cluster = self.launch.cluster;
        let spec = emu::LaunchSpec {
            name: self.name,
            block,
            grid,
            cluster: [cluster.x, cluster.y, cluster.z],
            shared_bytes: super::shared_bytes(self, dynamic_shared) as usize,
            dependent: self.launch.dependent,
            buffers: &buffers,
            analyze,
            checks,
        };
        emu::launch(&spec, &|| (self.run)(args))
    }

    /// Whether the PTX for `arch` has this kernel.
    pub fn built_for(&self, arch: &str) -> bool {
        self.arch.is_none_or(|only| only == arch)
    }

    /// The module the kernel is declared in (`gpu::reduce`).
    pub fn module(&self) -> &'static str {
        self.path.rsplit_once("::").map_or("", |(module, _)| module)
    }

    /// The same kernel, launched through the signature `S`: `Err` says how
    /// the declared signature differs.
    pub fn typed<S: Signature>(&'static self) -> Result<Typed<S>, String> {
        if (self.signature)() == TypeId::of::<S>() {
            Ok(Typed::new(self))
        } else {
            Err(format!(
                "kernel {} takes {}, not {}",
                self.name,
                self.signature_name,
                std::any::type_name::<S>()
            ))
        }
    }
}

impl PartialEq for Kernel {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

/// What a declaration submits to the registry.
pub struct Registered(pub &'static Kernel);

inventory::collect!(Registered);

/// The registry's queries.
pub mod registry {
    use super::*;

    /// Every registered kernel, in declaration order: by module, then by
    /// position in the source, instances in `types` order.
    pub fn all() -> Vec<&'static Kernel> {
        let mut all: Vec<&'static Kernel> = inventory::iter::<Registered>.into_iter().map(|r| r.0).collect();
        all.sort_by_key(|k| (k.module(), k.file, k.line, k.index));
        all
    }

    /// The kernel whose PTX entry is `name`.
    pub fn find(name: &str) -> Option<&'static Kernel> {
        inventory::iter::<Registered>.into_iter().map(|r| r.0).find(|k| k.name == name)
    }

    /// The kernels declared in `module` itself (not in its submodules), in
    /// declaration order.
    pub fn module(module: &str) -> Vec<&'static Kernel> {
        all().into_iter().filter(|k| k.module() == module).collect()
    }

    /// The kernels declared in `module` and its submodules, each module's
    /// in declaration order, `module`'s first.
    pub fn tree(module: &str) -> Vec<&'static Kernel> {
        let inside = |k: &&'static Kernel| {
            k.module().strip_prefix(module).is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
        };
        let mut kernels: Vec<&'static Kernel> = all().into_iter().filter(inside).collect();
        kernels.sort_by_key(|k| k.module() != module);
        kernels
    }
}
