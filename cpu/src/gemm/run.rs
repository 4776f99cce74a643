//! [`TensorGemm`]: one call ([`Call`]) in any precision, shape and layout,
//! reduced to what the kernels take and launched, in three parts:
//! routing (`TensorGemm::route`: the checks and every decision, before any
//! buffer is touched), the workspaces (taken and given back by use, kept
//! between calls), and the launches (`TensorGemm::launch`: packs, the
//! product kernel, the epilogue pass).
//!
//! How a call runs:
//! 1. BLAS's quick returns: nothing when `m`, `n` or the batch is 0, nor
//!    when `alpha op(A) op(B)` vanishes (`alpha = 0` or `k = 0`) with
//!    `beta = 1` and no epilogue.
//! 2. A column-major call is the row-major `Dᵀ = op(B)ᵀ op(A)ᵀ` (the
//!    operands, ops and leading dimensions swap; the bias then runs along
//!    the columns): from here on everything is row-major.
//! 3. A call with `m` or `n` at most 16 whose weight (the other operand)
//!    lies K-major, or N-major in bf16 or f16, is one launch of the decode
//!    kernel ([`super::decode`]): the weight read once, in place, whatever
//!    its rows' alignment. The rest of this list is for the other calls.
//! 4. Each operand the tensor-core kernel can read in place is read in
//!    place: A K-major (`m x k`), B N-major (`k x n`; tf32: K-major, `n x
//!    k`), rows and batch strides on 16 bytes (B's on 32 for a large
//!    matrix, [`TensorGemm::pad_from`]). Any other is packed once
//!    ([`gpu::gemm::pack`]) into a workspace at a row stride rounded up to
//!    128 bytes; the kernel's maps describe exactly `m x k` and `k x n`,
//!    so the copy engine's zero fill covers every tail.
//! 5. The plan ([`Plan`], [`TensorGemm::plan`]) picks the tiles (128 x
//!    256, 128 x 128 or 64 x 128: [`TileShape`]) and splits k where a
//!    cost model says it pays: when the tiles are too few for the SMs.
//! 6. With one split the `wgmma` kernel writes `D` itself, the epilogue
//!    (alpha, beta, bias, activation, the output type) applied as it
//!    stores: through shared memory and TMA stores when D's rows start on
//!    16 bytes and nothing is read from D or along its columns, else
//!    element by element from the registers. A D whose rows do not start
//!    on 16 bytes (n = 50257 in bf16), large enough
//!    ([`TensorGemm::pad_from`]) and otherwise fit for the staged store,
//!    is written to a padded workspace and copied into place
//!    ([`Route::pad_d`]). With several splits the kernel writes `f32`
//!    partial sums to a workspace, and the last split of each tile adds
//!    them and writes `D` through the same epilogue, in the same launch
//!    (tickets in a zeroed workspace; see [`gpu::gemm::wgmma`]). The
//!    epilogue kernel ([`gpu::gemm::epilogue`]) runs only when there is
//!    no product (`alpha = 0` or `k = 0`).
//!
//! `f32` precision takes the FFMA path (`blas::Sgemm`, one matrix at a
//! time is not yet supported for batches).

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::HashMap;

use gpu::gemm::element::B_BOX_COLS;
use gpu::gemm::epilogue::{BIAS_COLS, BIAS_NONE, BIAS_ROWS};
use gpu::launch::{Dim3, Kernel};

use super::call::Call;
use super::decode::{self, Decode};
use super::plan::{Plan, PlanKey, best_plan};
use super::precision::{Element, Input, Precision, WgmmaBuffers, WgmmaScalars, buffer_of};
use super::tile::TileShape;
use crate::blas::gemm::RowMajor;
use crate::blas::pack::pack;
use crate::blas::{Gemm, Operand, Sgemm};
use crate::runtime::{DeviceBuffer, Error, Gpu, Result};
use cudarc::driver::{DeviceRepr, ValidAsZeroBits};

/// The steps a call took (for tests and reports).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Route {
    pub pack_a: bool,
    pub pack_b: bool,
    pub splits: usize,
    /// The tiles ([`Plan::tile`]).
    pub tile: TileShape,
    /// The kernel wrote `D` itself, its epilogue fused (no second pass).
    pub fused: bool,
    /// D's rows do not start on 16 bytes: the kernel wrote D into a padded
    /// workspace through the staged TMA store, and a copy moved it into
    /// place ([`TensorGemm::pad_from`]).
    pub pad_d: bool,
    /// Only the epilogue ran (`alpha = 0` or `k = 0`).
    pub scale_only: bool,
    /// Nothing ran (a BLAS quick return).
    pub nothing: bool,
    /// The decode kernel ran (`m` or `n` at most 16;
    /// [`super::decode`]), `splits` its k-splits across blocks.
    pub decode: bool,
}

/// The tensor-core GEMM library: keeps its workspaces and tensor maps
/// between calls, so a timed loop allocates and encodes nothing after its
/// first call.
#[derive(Default)]
pub struct TensorGemm {
    /// Workspaces by (element type, use).
    scratch: RefCell<HashMap<(TypeId, u8), Box<dyn Any>>>,
    /// Tensor maps by what they describe.
    maps: RefCell<HashMap<String, DeviceBuffer<u64>>>,
    sgemm: RefCell<Sgemm>,
    /// The dispatcher's plans, by device and problem ([`PlanKey`]).
    plans: RefCell<HashMap<PlanKey, Plan>>,
    /// A plan to take instead of the dispatcher's.
    pub forced: Option<Plan>,
    /// The least elements of a matrix (`batch` times its rows and
    /// columns) at which a padded copy pays: a D whose rows are not on 16
    /// bytes is written through a padded workspace (the staged store
    /// there, then one copy of `2 batch m n` elements' bytes) rather than
    /// element by element in place; a B whose rows are on 16 bytes but not
    /// on 32 is packed (TMA then reads every box row as whole 32-byte
    /// sectors: rows half a sector off cost the copy engine more than a
    /// third of its rate, H100, `docs/notes.md`). A is read in place: B's
    /// boxes are most of every stage (256 of a wide tile's 384 rows), and
    /// A's misaligned rows cost the kernel less than A's copy does
    /// (`docs/notes.md`). `None`: [`PAD_FROM`].
    pub pad_from: Option<usize>,
    /// The persistent grid's size instead of as many blocks as the device
    /// holds at once: tests spread the items over several blocks on the
    /// emulator, which has one SM.
    pub blocks: Option<usize>,
    /// The decode kernel's k-splits across blocks instead of the model's
    /// ([`decode::split`]): tests split k on the emulator, which has one
    /// SM.
    pub decode_splits: Option<usize>,
}

/// What a workspace holds: inputs, sums, tickets.
trait Work: DeviceRepr + ValidAsZeroBits + 'static {}
impl<T: DeviceRepr + ValidAsZeroBits + 'static> Work for T {}

/// How a call's kernel reads its operands ([`TensorGemm::operands`]).
struct Operands {
    /// A's and B's batch strides, as the row-major call sees them.
    strides: (usize, usize),
    /// A read where it lies (else packed).
    a_in_place: bool,
    /// B read where it lies (else packed).
    b_in_place: bool,
    /// B's rows, as the kernel reads them, start on 32 bytes (whole
    /// sectors): packed, or in place on 32.
    b_sectors: bool,
}

/// Where a call goes ([`TensorGemm::route`]).
enum Routing {
    /// A BLAS quick return: nothing to compute.
    Nothing,
    /// `f32` precision: the FFMA path.
    Ffma,
    /// The tensor-core path, as decided.
    Tensor(Routed),
    /// The decode kernel: a few tokens against a weight.
    Decode(Decode, RowMajor, f32),
}

/// A tensor-core call's decisions: what [`TensorGemm::launch`] carries out.
struct Routed {
    /// The call as the kernels see it, row-major.
    r: RowMajor,
    /// `alpha` with the FP8 scales folded in.
    alpha: f32,
    plan: Plan,
    kernel: &'static Kernel,
    /// A's and B's batch strides, row-major.
    strides: (usize, usize),
    /// k-steps per split.
    split_steps: usize,
    bias_mode: u32,
    /// D's rows and batch stride on 16 bytes (the staged store's maps).
    d_aligned: bool,
    route: Route,
}

/// Workspace uses.
const PACK_A: u8 = 0;
const PACK_B: u8 = 1;
const SUMS: u8 = 2;
const NO_BIAS: u8 = 3;
const PAD_D: u8 = 4;
const TICKETS: u8 = 5;

/// [`TensorGemm::pad_from`]'s default: a million elements, where the
/// copy's extra pass (about 3 us per million bf16 elements at 3 TB/s) is
/// small beside what the unpadded matrix costs the kernel.
pub const PAD_FROM: usize = 1 << 20;

/// `x` rounded up to a multiple of `to`.
fn round_up(x: usize, to: usize) -> usize {
    x.div_ceil(to) * to
}

impl TensorGemm {
    pub fn new() -> TensorGemm {
        TensorGemm::default()
    }

    /// A library that takes `plan` for every call instead of the
    /// dispatcher's.
    pub fn forcing(plan: Plan) -> TensorGemm {
        TensorGemm { forced: Some(plan), ..TensorGemm::default() }
    }

    /// Takes workspace `(T, use)` of at least `len` elements out of the
    /// cache (allocating it when missing or short); `TensorGemm::put`
    /// returns it.
    fn take<T: Work>(&self, gpu: &Gpu, slot: u8, len: usize) -> Result<DeviceBuffer<T>> {
        self.take_or(gpu, slot, len, Gpu::alloc::<T>)
    }

    /// [`TensorGemm::take`] for a workspace that is all zeros between
    /// calls (each launch leaves it as it found it): zeroed when made.
    fn take_zeros<T: Work>(&self, gpu: &Gpu, slot: u8, len: usize) -> Result<DeviceBuffer<T>> {
        self.take_or(gpu, slot, len, Gpu::zeros::<T>)
    }

    /// The cached workspace, or a new one from `make`.
    fn take_or<T: Work>(
        &self,
        gpu: &Gpu,
        slot: u8,
        len: usize,
        make: fn(&Gpu, usize) -> Result<DeviceBuffer<T>>,
    ) -> Result<DeviceBuffer<T>> {
        let cached = self.scratch.borrow_mut().remove(&(TypeId::of::<T>(), slot));
        match cached.and_then(|b| b.downcast::<DeviceBuffer<T>>().ok()) {
            Some(b) if b.len() >= len.max(1) => Ok(*b),
            _ => make(gpu, len.max(1)),
        }
    }

    fn put<T: Work>(&self, slot: u8, buffer: DeviceBuffer<T>) {
        self.scratch.borrow_mut().insert((TypeId::of::<T>(), slot), Box::new(buffer));
    }

    /// The dispatcher: the tiles and k-split with the least modelled time,
    /// among the tiles [`super::plan`]'s rule weighs (short tiles only
    /// where they fill rows better, stream faster, or put twice the SMs to
    /// work over whole-sector rows of B), ties going to less
    /// tensor-core time. A persistent grid runs `items = tiles x splits`
    /// work items in `waves = ceil(items / SMs)`; a split costs, beside
    /// its k-steps, the `f32` partial sums it writes and the last split
    /// reads back. The
    /// model (`modelled_us`) takes the largest of the tensor cores' time
    /// and the memory's, plus the fix-up:
    ///
    /// - tensor cores: `waves (ITEM_US + ceil(steps / splits) STEP_US)`,
    ///   a k-step being 128 bytes of k of a 128 x 256 tile (the same
    ///   time in every precision: twice the k is twice the rate), or of a
    ///   128 x 128 tile at `NARROW_STEP` of that (half the multiply-adds
    ///   at about 81% of the rate: 4096^3 in bf16 and e4m3), or of a 64 x
    ///   128 tile at `SHORT_STEP`;
    /// - memory: A's, B's and D's bytes at the device's rate, or at
    ///   `SM_BYTES_PER_US` per busy SM when fewer SMs than that rate needs
    ///   have items (one 128 x 8192 x 8192 tile row on 32 SMs streams B
    ///   at half the DRAM rate);
    /// - the fix-up: the tickets and `2 splits m n` words of partial sums.
    ///
    /// Each split keeps the least k-steps its tile allows
    /// (`least_split_steps` in `plan.rs`), 16 splits at most. The
    /// constants are an H100's, measured (`docs/notes.md`); on another
    /// device the model still ranks the splits, less well.
    ///
    /// Plans are cached by [`PlanKey`]: the same problem on the same device
    /// is planned once.
    pub fn plan<P: Precision>(&self, gpu: &Gpu, call: &Call) -> Plan {
        self.plan_reading::<P>(gpu, call, self.operands::<P>(call).b_sectors)
    }

    /// [`TensorGemm::plan`], B's rows on whole sectors or not as given
    /// (`Operands::b_sectors`).
    fn plan_reading<P: Precision>(&self, gpu: &Gpu, call: &Call, b_sectors: bool) -> Plan {
        if let Some(p) = self.forced {
            return p;
        }
        let r = call.gemm.row_major();
        let key = PlanKey {
            device: gpu.info.name.clone(),
            multiprocessors: gpu.info.multiprocessors,
            precision: P::NAME,
            mnk: (r.m, r.n, r.k),
            batch: call.batch,
            b_sectors,
        };
        *self.plans.borrow_mut().entry(key).or_insert_with(|| {
            let sms = gpu.info.multiprocessors.max(1) as usize;
            best_plan(call.batch, (r.m, r.n, r.k), (P::BK, size_of::<P::Input>(), b_sectors), sms)
        })
    }

    /// How the kernel reads `call`'s operands (row-major, after step 2 of
    /// the module's list): in place where it can, else packed.
    fn operands<P: Precision>(&self, call: &Call) -> Operands {
        let r = call.gemm.row_major();
        let per16 = P::Input::PER_16;
        let (stride_a, stride_b) =
            if r.swapped { (call.stride_b, call.stride_a) } else { (call.stride_a, call.stride_b) };
        // Rows (and batch strides) on 16 bytes, which TMA needs; B's on
        // 32 too where it is large enough that a padded copy pays.
        let on = |unit: usize, ld: usize, stride: usize| {
            ld.is_multiple_of(unit) && (call.batch == 1 || stride.is_multiple_of(unit))
        };
        let pad_from = self.pad_from.unwrap_or(PAD_FROM);
        let b_unit = if call.batch * r.k * r.n >= pad_from { 2 * per16 } else { per16 };
        let b_in_place = r.b_t == P::B_K_MAJOR && on(b_unit, r.ldb, stride_b);
        Operands {
            strides: (stride_a, stride_b),
            a_in_place: !r.a_t && on(per16, r.lda, stride_a),
            b_in_place,
            // A packed B's rows are 128-byte multiples.
            b_sectors: !b_in_place || on(2 * per16, r.ldb, stride_b),
        }
    }

    /// The plans made so far, by key.
    pub fn plans(&self) -> Vec<(PlanKey, Plan)> {
        self.plans.borrow().iter().map(|(k, p)| (k.clone(), *p)).collect()
    }

    /// `D = act(alpha op(A) op(B) + beta C + bias)` in precision `P` with
    /// output type `O`; `c` is `C` on entry and `D` on return. The whole
    /// call is checked before anything runs.
    pub fn run<P: Precision, O: Element>(
        &self,
        gpu: &Gpu,
        call: &Call,
        a: &DeviceBuffer<P::Input>,
        b: &DeviceBuffer<P::Input>,
        c: &mut DeviceBuffer<O>,
        bias: Option<&DeviceBuffer<f32>>,
    ) -> Result<Route> {
        match self.route::<P, O>(gpu, call, (a.len(), b.len(), c.len()), bias.map(DeviceBuffer::len))? {
            Routing::Nothing => Ok(Route { nothing: true, ..Route::default() }),
            Routing::Ffma => self.run_f32(gpu, call, a, b, c, bias),
            Routing::Tensor(t) => {
                let (a, b) = if t.r.swapped { (b, a) } else { (a, b) };
                self.launch::<P, O>(gpu, call, &t, (a, b), c, bias)?;
                Ok(t.route)
            }
            Routing::Decode(plan, r, alpha) => {
                let (a, b) = if r.swapped { (b, a) } else { (a, b) };
                let (w, x) = if plan.weight_is_a { (a, b) } else { (b, a) };
                self.decode::<P, O>(gpu, call, &plan, alpha, (w, x), c, bias)?;
                Ok(Route { decode: true, splits: plan.splits, fused: true, ..Route::default() })
            }
        }
    }

    /// Routing: the call's checks and BLAS's quick returns, then for the
    /// tensor-core path what runs (packs, the plan, the splits, where D is
    /// written), decided before any buffer is touched.
    fn route<P: Precision, O: Element>(
        &self,
        gpu: &Gpu,
        call: &Call,
        (a_len, b_len, c_len): (usize, usize, usize),
        bias_len: Option<usize>,
    ) -> Result<Routing> {
        if call.bias != bias_len.is_some() {
            return Err(Error::InvalidInput(format!(
                "gemm {call}: the call {} a bias, and {} was given",
                if call.bias { "adds" } else { "adds no" },
                if bias_len.is_some() { "one" } else { "none" }
            )));
        }
        call.check(a_len, b_len, c_len, bias_len.unwrap_or(0))?;
        if !P::SCALED && call.scales != (1.0, 1.0) {
            return Err(Error::InvalidInput(format!(
                "gemm {call}: scale factors are for FP8 inputs (e4m3, e5m2), not {}",
                P::NAME
            )));
        }
        let g = &call.gemm;
        // The scales of A and B fold into alpha.
        let alpha = call.product_scale();
        if g.m == 0 || g.n == 0 || call.batch == 0 {
            return Ok(Routing::Nothing);
        }
        let trivial = alpha == 0.0 || g.k == 0;
        if trivial && g.beta == 1.0 && !call.has_epilogue() {
            return Ok(Routing::Nothing);
        }
        if P::kernel::<O>(TileShape::Wide).is_none() {
            return Ok(Routing::Ffma);
        }
        let r = g.row_major();
        let Operands { strides, a_in_place, b_in_place, b_sectors } = self.operands::<P>(call);
        if !trivial && self.forced.is_none() {
            let sms = gpu.info.multiprocessors.max(1) as usize;
            if let Some(plan) =
                Decode::of::<P>(call, &r, strides, sms).map(|p| p.split_into(self.decode_splits))
                && let Some(kernel) = plan.kernel::<P, O>()
                && gpu.has_kernel(kernel).is_ok()
            {
                return Ok(Routing::Decode(plan, r, alpha));
            }
        }
        let plan = self.plan_reading::<P>(gpu, call, b_sectors);
        let kernel = P::kernel::<O>(plan.tile).expect("a tensor-core precision");
        if !trivial {
            gpu.has_kernel(kernel)?;
        }
        let steps = r.k.div_ceil(P::BK);
        let split_steps = steps.div_ceil(plan.splits.max(1)).max(1);
        let splits = if trivial { 0 } else { steps.div_ceil(split_steps) };
        let fused = !trivial;
        let bias_mode = match (call.bias, r.swapped) {
            (false, _) => BIAS_NONE,
            (true, false) => BIAS_ROWS,
            (true, true) => BIAS_COLS,
        };
        // D's rows off 16 bytes, nothing read from D or along its columns
        // (what the staged store takes), and enough of it for the copy to
        // pay: a padded D in the workspace.
        let per16_d = O::PER_16;
        let d_aligned =
            r.ldc.is_multiple_of(per16_d) && (call.batch == 1 || call.stride_c.is_multiple_of(per16_d));
        let pad_d = fused
            && !d_aligned
            && g.beta == 0.0
            && bias_mode != BIAS_COLS
            && call.batch * r.m * r.n >= self.pad_from.unwrap_or(PAD_FROM);
        let route = Route {
            pack_a: !trivial && !a_in_place,
            pack_b: !trivial && !b_in_place,
            splits,
            tile: plan.tile,
            fused,
            pad_d,
            scale_only: trivial,
            nothing: false,
            decode: false,
        };
        if r.m.div_ceil(gpu::gemm::epilogue::ROWS) > 65_535 || r.m.div_ceil(gpu::gemm::pack::TILE) > 65_535 {
            return Err(Error::InvalidInput(format!(
                "gemm {call}: more than 262140 rows (as the kernels see D)"
            )));
        }
        Ok(Routing::Tensor(Routed {
            r,
            alpha,
            plan,
            kernel,
            strides,
            split_steps,
            bias_mode,
            d_aligned,
            route,
        }))
    }

    /// Launch: the workspaces taken, the packs, the product kernel (and
    /// the padded D's copy into place), or where there is no product the
    /// epilogue pass; the workspaces given back, whatever failed.
    fn launch<P: Precision, O: Element>(
        &self,
        gpu: &Gpu,
        call: &Call,
        t: &Routed,
        (a, b): (&DeviceBuffer<P::Input>, &DeviceBuffer<P::Input>),
        c: &mut DeviceBuffer<O>,
        bias: Option<&DeviceBuffer<f32>>,
    ) -> Result<()> {
        let (r, splits) = (&t.r, t.route.splits);
        let (w_split, w_batch) = (r.m * r.n, splits * r.m * r.n);
        // Partial sums only with several splits (none are read when there
        // is no product: `splits` is 0 then).
        let mut w = self.take::<f32>(gpu, SUMS, if splits > 1 { call.batch * w_batch } else { 0 })?;
        let none = self.take::<f32>(gpu, NO_BIAS, 1)?;
        let bias = bias.unwrap_or(&none);
        let result = if t.route.fused {
            self.product::<P, O>(gpu, call, t, (a, b), c, (&mut w, bias))
        } else {
            let epilogue = &gpu::gemm::epilogue::gemm_epilogue::KERNELS
                [<O as gpu::gemm::epilogue::gemm_epilogue::Instance>::INDEX];
            let grid = epilogue.launch.grid(r.n as u32, r.m as u32);
            let grid = Dim3 { z: call.batch as u32, ..grid };
            // SAFETY: W holds `splits` sums per matrix of the batch (none
            // read when `splits` is 0); D holds the batch at ldc, stride_c
            // (checked); the bias m values (checked), read along the rows
            // of D.
            unsafe {
                gpu::gemm::epilogue::gemm_epilogue::launch::<O, _>(
                    gpu,
                    grid,
                    &w,
                    c,
                    bias,
                    r.m as u32,
                    r.n as u32,
                    r.n as u32,
                    w_batch as u64,
                    w_split as u64,
                    splits as u32,
                    r.ldc as u32,
                    call.stride_c as u64,
                    t.alpha,
                    call.gemm.beta,
                    t.bias_mode,
                    call.act.code(),
                )
            }
        };
        self.put(NO_BIAS, none);
        self.put(SUMS, w);
        result
    }

    /// The decode kernel over the weight `w` and tokens `x` (see
    /// [`super::decode`]), with the workspace for its splits' sums.
    #[allow(clippy::too_many_arguments)]
    fn decode<P: Precision, O: Element>(
        &self,
        gpu: &Gpu,
        call: &Call,
        plan: &Decode,
        alpha: f32,
        (w, x): (&DeviceBuffer<P::Input>, &DeviceBuffer<P::Input>),
        c: &mut DeviceBuffer<O>,
        bias: Option<&DeviceBuffer<f32>>,
    ) -> Result<()> {
        let split = plan.splits > 1;
        let blocks = call.batch * plan.grid(1).x as usize;
        let mut sums = self.take::<f32>(
            gpu,
            SUMS,
            if split { call.batch * plan.splits * plan.tokens * plan.rows } else { 0 },
        )?;
        let mut tickets = self.take_zeros::<u32>(
            gpu,
            TICKETS,
            if split { blocks * gpu::gemm::decode::THREADS } else { 0 },
        )?;
        let none = self.take::<f32>(gpu, NO_BIAS, 1)?;
        let buffers = decode::Buffers {
            w,
            x,
            d: c,
            sums: &mut sums,
            tickets: &mut tickets,
            bias: bias.unwrap_or(&none),
        };
        // SAFETY: `Call::check` checked A, B, C and the bias against the
        // call, which `plan` describes; the workspace and the tickets are
        // sized above (the tickets zero between launches).
        let result = unsafe { decode::launch::<P, O>(gpu, call, plan, alpha, buffers) };
        self.put(SUMS, sums);
        self.put(TICKETS, tickets);
        self.put(NO_BIAS, none);
        result
    }

    /// The product: A and B packed where the route says, their tensor maps
    /// (and D's, for the staged store), the `wgmma` kernel over every item,
    /// and a padded D copied into place.
    #[allow(clippy::too_many_arguments)]
    fn product<P: Precision, O: Element>(
        &self,
        gpu: &Gpu,
        call: &Call,
        t: &Routed,
        (a, b): (&DeviceBuffer<P::Input>, &DeviceBuffer<P::Input>),
        c: &mut DeviceBuffer<O>,
        (w, bias_buffer): (&mut DeviceBuffer<f32>, &DeviceBuffer<f32>),
    ) -> Result<()> {
        let (r, route, plan) = (&t.r, t.route, t.plan);
        let (stride_a, stride_b) = t.strides;
        let (splits, split_steps) = (route.splits, t.split_steps);
        let per16 = P::Input::PER_16;
        let (bm, bn) = plan.tile.dims();
        // Packed rows on 128 bytes: whole sectors and lines for every box row.
        let (kp, np) = (round_up(r.k, 8 * per16), round_up(r.n, 8 * per16));
        let pd = round_up(r.n, O::PER_16);
        // Packed operands: A as m x k at kp, B as k x n at np (or, K-major, n x k at kp).
        let a_len = call.batch * r.m * kp;
        let (b_rows, b_cols) = if P::B_K_MAJOR { (r.n, r.k) } else { (r.k, r.n) };
        let b_pitch = if P::B_K_MAJOR { kp } else { np };
        let b_len = call.batch * b_rows * b_pitch;
        let mut pa = self.take::<P::Input>(gpu, PACK_A, if route.pack_a { a_len } else { 0 })?;
        let mut pb = self.take::<P::Input>(gpu, PACK_B, if route.pack_b { b_len } else { 0 })?;
        let mut dpad = self.take::<O>(gpu, PAD_D, if route.pad_d { call.batch * r.m * pd } else { 0 })?;
        let result = (|| {
            if route.pack_a {
                pack(gpu, a, &mut pa, (r.m, r.k), (r.lda, stride_a, r.a_t), (kp, r.m * kp), call.batch)?;
            }
            if route.pack_b {
                // op(B) is k x n: element (p, j) at b[p ldb + j], or transposed at b[j ldb + p].
                // K-major wants its transpose.
                let transposed = r.b_t != P::B_K_MAJOR;
                let dst = (b_pitch, b_rows * b_pitch);
                pack(gpu, b, &mut pb, (b_rows, b_cols), (r.ldb, stride_b, transposed), dst, call.batch)?;
            }
            let (a_src, a_ld, a_stride) =
                if route.pack_a { (&pa, kp, r.m * kp) } else { (a, r.lda, stride_a) };
            let (b_src, b_ld, b_stride) =
                if route.pack_b { (&pb, b_pitch, b_rows * b_pitch) } else { (b, r.ldb, stride_b) };
            let b_box = if P::B_K_MAJOR { (bn, P::BK) } else { (P::BK, B_BOX_COLS) };
            // D's maps (after A's and B's), for the store through shared memory: boxes
            // of 16 rows of 128 bytes, which TMA takes where every matrix's rows start on
            // 16 bytes (a padded D's always do).
            let d_box = (16, 128 / size_of::<O>());
            let d_maps = route.pad_d || t.d_aligned;
            let (d_buf, d_ld, d_stride) =
                if route.pad_d { (&dpad, pd, r.m * pd) } else { (&*c, r.ldc, call.stride_c) };
            let key = format!(
                "{} {bm}x{bn} {:x} {a_ld} {a_stride} {:x} {b_ld} {b_stride} {}x{}x{} {} {:x} {} {} {}",
                P::NAME,
                a_src.address(),
                b_src.address(),
                r.m,
                r.n,
                r.k,
                call.batch,
                d_buf.address(),
                d_ld,
                d_stride,
                O::NAME
            );
            if !self.maps.borrow().contains_key(&key) {
                let mut words = Vec::with_capacity(32 * call.batch);
                for z in 0..call.batch {
                    words.extend(gpu.tensor_map_pitched(
                        a_src,
                        z * a_stride,
                        (r.m, r.k),
                        a_ld,
                        (bm, P::BK),
                    )?);
                    words.extend(gpu.tensor_map_pitched(
                        b_src,
                        z * b_stride,
                        (b_rows, b_cols),
                        b_ld,
                        b_box,
                    )?);
                }
                if d_maps {
                    for z in 0..call.batch {
                        words.extend(gpu.tensor_map_pitched(d_buf, z * d_stride, (r.m, r.n), d_ld, d_box)?);
                    }
                }
                let uploaded = gpu.upload(&words)?;
                self.maps.borrow_mut().insert(key.clone(), uploaded);
            }
            let maps = self.maps.borrow();
            let maps = &maps[&key];
            let tiles = call.batch * plan.tile.count((r.m, r.n));
            let items = splits * tiles;
            let resident = match self.blocks {
                Some(blocks) => blocks.max(1),
                None => gpu.resident_blocks(t.kernel)? as usize,
            };
            let grid = Dim3::xy(items.min(resident) as u32, 1);
            let scalars = WgmmaScalars {
                tile: plan.tile,
                m: r.m as u32,
                n: r.n as u32,
                k_steps: r.k.div_ceil(P::BK) as u32,
                ldd: d_ld as u32,
                d_batch: d_stride as u64,
                batch: call.batch as u32,
                splits: splits as u32,
                split_steps: split_steps as u32,
                alpha: t.alpha,
                beta: call.gemm.beta,
                bias_mode: t.bias_mode,
                act: call.act.code(),
                d_maps: u32::from(d_maps),
            };
            let d = if route.pad_d { &mut dpad } else { &mut *c };
            let mut tickets =
                self.take_zeros::<u32>(gpu, TICKETS, if splits > 1 { 256 * tiles } else { 0 })?;
            let buffers = WgmmaBuffers { maps, d, sums: w, tickets: &mut tickets, bias: bias_buffer };
            // SAFETY: the maps describe A and B inside `a_src` and `b_src` (checked by
            // `Call::check` and `tensor_map_pitched`); D holds the batch at ldc and
            // stride_c, the bias m values (checked); with several splits the workspace
            // holds batch x splits x m x n sums, and the tickets 256 zeros a tile.
            let launched = unsafe { P::launch(gpu, grid, buffers, scalars) };
            self.put(TICKETS, tickets);
            launched?;
            if route.pad_d {
                pack(gpu, &dpad, c, (r.m, r.n), (d_ld, d_stride, false), (r.ldc, call.stride_c), call.batch)?;
            }
            Ok(())
        })();
        self.put(PACK_A, pa);
        self.put(PACK_B, pb);
        self.put(PAD_D, dpad);
        result
    }

    /// `f32` precision: `sgemm` (FFMA), then the epilogue when one is
    /// asked for or the output is not `f32`.
    fn run_f32<I: Input, O: Element>(
        &self,
        gpu: &Gpu,
        call: &Call,
        a: &DeviceBuffer<I>,
        b: &DeviceBuffer<I>,
        c: &mut DeviceBuffer<O>,
        bias: Option<&DeviceBuffer<f32>>,
    ) -> Result<Route> {
        let (Some(a), Some(b)) = (buffer_of::<f32, _>(a), buffer_of::<f32, _>(b)) else {
            return Err(Error::InvalidInput("f32 precision takes f32 inputs".into()));
        };
        if call.batch != 1 {
            return Err(Error::InvalidInput(format!(
                "gemm {call}: f32 precision runs one matrix at a time (batch 1); tf32, bf16 and f16 take batches"
            )));
        }
        let g = call.gemm;
        // What sgemm runs for `g`: its plan's k-splits and its packs.
        let route = |g: &Gemm| {
            let mut sgemm = self.sgemm.borrow_mut();
            let (pack_a, pack_b) = sgemm.packs(g);
            Route { splits: sgemm.planned(gpu, g).splits, pack_a, pack_b, ..Route::default() }
        };
        if !call.has_epilogue() && TypeId::of::<O>() == TypeId::of::<f32>() {
            let c = (c as &mut dyn Any).downcast_mut::<DeviceBuffer<f32>>().expect("O is f32 here");
            self.sgemm.borrow_mut().run(gpu, &g, a, b, c)?;
            return Ok(Route { fused: true, ..route(&g) });
        }
        // W = op(A) op(B) in the call's layout at the least ldc, then the epilogue.
        let plain = Gemm { alpha: 1.0, beta: 0.0, ldc: g.min_ld(Operand::C), ..g };
        let route = route(&plain);
        let mut w = self.take::<f32>(gpu, SUMS, plain.elements(Operand::C))?;
        let result = self.sgemm.borrow_mut().run(gpu, &plain, a, b, &mut w);
        let r = g.row_major();
        let (splits, ldw) = if g.alpha == 0.0 || g.k == 0 { (0, 1) } else { (1, plain.ldc) };
        let bias_mode = match (call.bias, r.swapped) {
            (false, _) => BIAS_NONE,
            (true, false) => BIAS_ROWS,
            (true, true) => BIAS_COLS,
        };
        let none = self.take::<f32>(gpu, NO_BIAS, 1)?;
        let result = result.and_then(|()| {
            let epilogue = &gpu::gemm::epilogue::gemm_epilogue::KERNELS
                [<O as gpu::gemm::epilogue::gemm_epilogue::Instance>::INDEX];
            let grid = epilogue.launch.grid(r.n as u32, r.m as u32);
            // SAFETY: W holds op(A) op(B) at ldw; D the m x n matrix at ldc; the bias m values.
            unsafe {
                gpu::gemm::epilogue::gemm_epilogue::launch::<O, _>(
                    gpu,
                    grid,
                    &w,
                    c,
                    bias.unwrap_or(&none),
                    r.m as u32,
                    r.n as u32,
                    ldw as u32,
                    0,
                    0,
                    splits,
                    r.ldc as u32,
                    0,
                    g.alpha,
                    g.beta,
                    bias_mode,
                    call.act.code(),
                )
            }
        });
        self.put(SUMS, w);
        self.put(NO_BIAS, none);
        result.map(|()| Route { scale_only: splits == 0, ..route })
    }
}
