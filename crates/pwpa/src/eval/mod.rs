//! CPU evaluation: the fast path, bit-identical to [`Table::eval`].
//!
//! [`Evaluator`] prepares a table once (padded coefficient rows, an O(1) lookup grid
//! for arbitrary breakpoints) and evaluates slices of f32, f16 or bf16 into slices of
//! any of the three, with exactly the oracle's f32 operations and one rounding at the
//! end. On x86_64 CPUs with AVX-512 (F, BW, VL) it uses 16-lane kernels (coefficients
//! and breakpoint searches in registers for small tables, row loads or gathers and a
//! lookup grid for large ones, tails vectorised; see `avx512.rs`) for every table, on
//! CPUs with AVX2, FMA and F16C but not AVX-512 8-lane kernels, elsewhere a portable
//! scalar kernel; the choice is made at run time
//! ([`Backend::detect`]) and can be forced ([`Evaluator::with_backend`]). On Intel
//! CPUs the AVX-512 kernel reads the per-lane coefficient rows (tables of more than 128
//! pieces and degree ≥ 1) by 64-bit gathers when a row has at most six columns, on AMD
//! by row loads (and the lookup-grid cells of arbitrary breakpoints with P > 256 by
//! gathers too, on AMD lane by lane); the results are the same, and
//! `PWPA_CPU_ROW_GATHERS=0|1` overrides the choice. Large
//! inputs are split over rayon's pool. For f16 and bf16 inputs of at least [`LUT_THRESHOLD`] elements the
//! evaluator computes all 65,536 results once with its kernel, keeps them (128 or
//! 256 KiB per type pair) and then only looks them up (on x86-64 16 bytes of results at
//! a time, straight into a register; calls of 2^20 elements and more store them
//! non-temporally).
//! Apart from those tables, nothing is allocated beyond the caller's output.
//!
//! ```
//! use pwpa::eval::{Evaluator, Parallelism};
//! use pwpa::{bf16, Breakpoints, Table, Tail};
//!
//! // y = x² on [-1, 1] in 4 pieces (anchored at 0, so every piece is the same
//! // polynomial), clamped on the left and extended on the right.
//! let b = Breakpoints::uniform(-1.0, 1.0, 4)?;
//! let coeffs = [1.0, 0.0, 0.0].repeat(4);
//! let table = Table::new(b, 2, vec![0.0; 4], coeffs, Tail::Clamp, Tail::Extend)?;
//!
//! let ev = Evaluator::new(&table).with_parallelism(Parallelism::Sequential);
//! let x = [0.5f32, -3.0, 2.0, f32::NAN];
//! let mut y = [bf16::ZERO; 4];
//! ev.eval(&x, &mut y)?;
//! assert_eq!(y[0].to_f32(), 0.25);
//! assert_eq!(y[1].to_f32(), 1.0); // clamped at the left edge
//! assert_eq!(y[2].to_f32(), 4.0); // extended
//! assert!(y[3].is_nan());
//! // Bit-identical to the scalar oracle.
//! for (&xi, &yi) in x.iter().zip(&y) {
//!     assert_eq!(table.eval::<f32, bf16>(xi).to_bits(), yi.to_bits());
//! }
//!
//! let mut data = vec![0.25f32; 1000];
//! ev.eval_in_place(&mut data);
//! assert!(data.iter().all(|&v| v == 0.0625));
//! # Ok::<(), pwpa::Error>(())
//! ```

use std::any::TypeId;
use std::sync::OnceLock;

use rayon::prelude::*;

use crate::element::Element;
use crate::error::{Error, Result};
use crate::table::Table;

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod prepared;

use prepared::Prepared;

/// Inputs shorter than this run on the calling thread even with [`Parallelism::Rayon`].
pub const PARALLEL_THRESHOLD: usize = 1 << 16;
/// Least elements per rayon task (a multiple of 16).
const CHUNK: usize = 1 << 14;

/// Elements per rayon task for an input of `n`: about eight tasks per thread (enough
/// to balance the load when other work shares the cores, few enough that the
/// per-task cost vanishes), at least [`CHUNK`], a multiple of 16.
fn chunk_len(n: usize) -> usize {
    let tasks = 8 * rayon::current_num_threads().max(1);
    n.div_ceil(tasks).next_multiple_of(16).max(CHUNK)
}
/// 16-bit inputs of at least this many elements go through a table of all 65,536
/// results (built once per evaluator and type pair, by the kernel itself).
pub const LUT_THRESHOLD: usize = 1 << 16;

/// How much parallelism to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parallelism {
    /// One thread.
    Sequential,
    /// Rayon's global pool, for inputs of at least [`PARALLEL_THRESHOLD`] elements.
    Rayon,
}

/// Which kernel an [`Evaluator`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The portable scalar kernel (any CPU).
    Portable,
    /// x86_64 AVX2 + FMA + F16C, 8 lanes.
    Avx2,
    /// x86_64 AVX-512 (F, BW, VL) + FMA + F16C, 16 lanes, for every table (coefficients
    /// in registers for small tables, rows from memory and a lookup grid for large ones).
    Avx512,
}

impl Backend {
    /// Short name (`portable`, `avx2`, `avx512`).
    pub fn name(self) -> &'static str {
        match self {
            Backend::Portable => "portable",
            Backend::Avx2 => "avx2",
            Backend::Avx512 => "avx512",
        }
    }

    /// Whether this CPU runs the kernel.
    pub fn available(self) -> bool {
        match self {
            Backend::Portable => true,
            #[cfg(target_arch = "x86_64")]
            Backend::Avx2 => avx2::available(),
            #[cfg(target_arch = "x86_64")]
            Backend::Avx512 => avx512::available() && avx2::available(),
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// The best kernel this CPU runs. The environment variable `PWPA_CPU_BACKEND`
    /// (`portable`, `avx2` or `avx512`) caps the choice at the kernel it names.
    pub fn detect() -> Backend {
        let cap = std::env::var("PWPA_CPU_BACKEND")
            .map(|v| v.to_ascii_lowercase())
            .unwrap_or_default();
        let order: &[Backend] = match cap.as_str() {
            "portable" => &[],
            "avx2" => &[Backend::Avx2],
            _ => &[Backend::Avx512, Backend::Avx2],
        };
        order
            .iter()
            .copied()
            .find(|b| b.available())
            .unwrap_or(Backend::Portable)
    }
}

/// A table prepared for fast evaluation.
#[derive(Clone)]
pub struct Evaluator {
    table: Table,
    prepared: Prepared,
    parallelism: Parallelism,
    backend: Backend,
    luts: Luts,
}

/// A summary: the table's shape, the backend and parallelism, and which 16-bit result
/// tables are built (their 65,536 entries and the prepared rows are not printed).
impl std::fmt::Debug for Evaluator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let built = |l: &OnceLock<Box<[u16]>>| l.get().is_some();
        f.debug_struct("Evaluator")
            .field("partitions", &self.table.partitions())
            .field("degree", &self.table.degree())
            .field("backend", &self.backend)
            .field("parallelism", &self.parallelism)
            .field(
                "luts_built",
                &format_args!(
                    "f16->f16 {}, f16->bf16 {}, bf16->f16 {}, bf16->bf16 {}, f16->f32 {}, bf16->f32 {}",
                    built(&self.luts.to16[0][0]),
                    built(&self.luts.to16[0][1]),
                    built(&self.luts.to16[1][0]),
                    built(&self.luts.to16[1][1]),
                    self.luts.to32[0].get().is_some(),
                    self.luts.to32[1].get().is_some()
                ),
            )
            .finish_non_exhaustive()
    }
}

/// Every result for a 16-bit input type, built on first use:
/// `to16[input][output]` (f16 = 0, bf16 = 1) and `to32[input]`.
#[derive(Clone, Debug, Default)]
struct Luts {
    to16: [[OnceLock<Box<[u16]>>; 2]; 2],
    to32: [OnceLock<Box<[u32]>>; 2],
}

/// A borrowed result table.
#[derive(Clone, Copy)]
enum Lut<'a> {
    /// 65,537 entries: the last one pads the 32-bit gathers of [`avx512::lut_gather`].
    To16(&'a [u16; 65537]),
    To32(&'a [u32; 65536]),
}

/// The kernel's code for an element type (None: not one of f32, f16, bf16).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn kind<T: 'static>() -> Option<u8> {
    let id = TypeId::of::<T>();
    if id == TypeId::of::<f32>() {
        Some(0)
    } else if id == TypeId::of::<half::f16>() {
        Some(1)
    } else if id == TypeId::of::<half::bf16>() {
        Some(2)
    } else {
        None
    }
}

impl Evaluator {
    /// Prepares `table` (O(P·D) work and memory), with [`Parallelism::Rayon`] and the
    /// best kernel for this CPU ([`Backend::detect`]).
    pub fn new(table: &Table) -> Self {
        let _ieee = crate::fpenv::Ieee::enter();
        Evaluator {
            table: table.clone(),
            prepared: Prepared::new(table),
            parallelism: Parallelism::Rayon,
            backend: Backend::detect(),
            luts: Luts::default(),
        }
    }

    /// Sets the parallelism.
    pub fn with_parallelism(mut self, p: Parallelism) -> Self {
        self.parallelism = p;
        self
    }

    /// Chooses the kernel. Asking for a kernel this CPU cannot run is an error.
    pub fn with_backend(mut self, backend: Backend) -> Result<Self> {
        if !backend.available() {
            return Err(Error::InvalidArgument(format!(
                "this CPU cannot run the {} backend (avx2 needs x86_64 with AVX2, FMA and F16C; \
                 avx512 needs those and AVX-512 F, BW and VL)",
                backend.name()
            )));
        }
        self.backend = backend;
        self.luts = Luts::default();
        Ok(self)
    }

    /// For tests and A/B runs: whether the AVX-512 kernel reads coefficient rows and
    /// lookup-grid cells by 64-bit gathers (by default on Intel CPUs, or as
    /// `PWPA_CPU_ROW_GATHERS=0|1` says) instead of row loads and a transpose, and a loop
    /// over the lanes. The results are the same either way.
    #[doc(hidden)]
    pub fn with_row_gathers(mut self, on: bool) -> Self {
        self.prepared.row_gathers = on;
        self.luts = Luts::default();
        self
    }

    /// The kernel in use.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The table.
    pub fn table(&self) -> &Table {
        &self.table
    }

    /// Evaluates `input` into `output` (same length), bit-identical to
    /// [`Table::eval`] element by element. A length mismatch is
    /// [`Error::LengthMismatch`].
    pub fn eval<T: Element, U: Element>(&self, input: &[T], output: &mut [U]) -> Result<()> {
        if input.len() != output.len() {
            return Err(Error::LengthMismatch {
                input: input.len(),
                output: output.len(),
            });
        }
        let lut = self.lut::<T, U>(input.len());
        if self.parallel(input.len()) {
            let chunk = chunk_len(input.len());
            input
                .par_chunks(chunk)
                .zip(output.par_chunks_mut(chunk))
                // SAFETY: distinct slices of equal length.
                .for_each(|(i, o)| unsafe {
                    self.run_lut(lut, i.as_ptr(), o.as_mut_ptr(), i.len());
                });
        } else {
            // SAFETY: distinct slices of equal length.
            unsafe { self.run_lut(lut, input.as_ptr(), output.as_mut_ptr(), input.len()) };
        }
        Ok(())
    }

    /// Evaluates in place: `data[i] = table.eval(data[i])`.
    pub fn eval_in_place<T: Element>(&self, data: &mut [T]) {
        let lut = self.lut::<T, T>(data.len());
        if self.parallel(data.len()) {
            data.par_chunks_mut(chunk_len(data.len())).for_each(|c| {
                let p = c.as_mut_ptr();
                // SAFETY: the same buffer in and out (the kernels read before writing).
                unsafe { self.run_lut(lut, p as *const T, p, c.len()) };
            });
        } else {
            let p = data.as_mut_ptr();
            // SAFETY: as above.
            unsafe { self.run_lut(lut, p as *const T, p, data.len()) };
        }
    }

    /// The backward pass through a derivative table: `out[i] = grad[i] · table(x[i])`,
    /// the table evaluated in f32 exactly as [`Evaluator::eval`] does, the product
    /// rounded in f32 and then once to `G` — bit-identical to [`Table::grad_mul`]
    /// element by element. With `table` = f′ this is the vector-Jacobian product of f,
    /// in one pass over x and grad (no f′(x) buffer). A length mismatch is
    /// [`Error::GradLengthMismatch`].
    pub fn grad_mul<T: Element, G: Element>(
        &self,
        x: &[T],
        grad: &[G],
        out: &mut [G],
    ) -> Result<()> {
        if x.len() != out.len() || grad.len() != out.len() {
            return Err(Error::GradLengthMismatch {
                x: x.len(),
                grad: grad.len(),
                output: out.len(),
            });
        }
        // SAFETY: three slices of equal length; `out` is exclusive, so it overlaps neither.
        unsafe { self.grad_mul_raw(x.as_ptr(), grad.as_ptr(), out.as_mut_ptr(), x.len()) };
        Ok(())
    }

    /// [`Evaluator::grad_mul`] writing over `grad`: `grad[i] = grad[i] · table(x[i])`.
    pub fn grad_mul_in_place<T: Element, G: Element>(&self, x: &[T], grad: &mut [G]) -> Result<()> {
        if x.len() != grad.len() {
            return Err(Error::GradLengthMismatch {
                x: x.len(),
                grad: grad.len(),
                output: grad.len(),
            });
        }
        let g = grad.as_mut_ptr();
        // SAFETY: equal lengths; grad is read before each element is written.
        unsafe { self.grad_mul_raw(x.as_ptr(), g as *const G, g, x.len()) };
        Ok(())
    }

    /// [`Evaluator::grad_mul`] on raw pointers, split over rayon's pool for large inputs.
    ///
    /// # Safety
    /// `x` and `grad` valid for `n` reads, `out` for `n` writes. `out` may be equal to
    /// `grad`, or to `x` when T and G have one size; no other overlap.
    pub unsafe fn grad_mul_raw<T: Element, G: Element>(
        &self,
        x: *const T,
        grad: *const G,
        out: *mut G,
        n: usize,
    ) {
        let lut = self.lut::<T, f32>(n);
        let (xa, ga, oa) = (x as usize, grad as usize, out as usize);
        let run = |start: usize, len: usize| {
            // SAFETY: [start, start + len) lies in [0, n) (per the caller's contract).
            unsafe {
                self.grad_block(
                    lut,
                    (xa as *const T).add(start),
                    (ga as *const G).add(start),
                    (oa as *mut G).add(start),
                    len,
                )
            }
        };
        if self.parallel(n) {
            let chunk = chunk_len(n);
            (0..n.div_ceil(chunk))
                .into_par_iter()
                .for_each(|c| run(c * chunk, chunk.min(n - c * chunk)));
        } else {
            run(0, n);
        }
    }

    /// One sequential run of [`Evaluator::grad_mul_raw`]: blocks of f′(x) in a stack
    /// buffer, then the products (NaN made canonical) narrowed into G — loops over a
    /// block that vectorise (the f16 conversions through `half`'s F16C slice routines
    /// where the CPU has them).
    ///
    /// # Safety
    /// As [`Evaluator::grad_mul_raw`].
    unsafe fn grad_block<T: Element, G: Element>(
        &self,
        lut: Option<Lut<'_>>,
        x: *const T,
        g: *const G,
        out: *mut G,
        n: usize,
    ) {
        use half::slice::HalfFloatSliceExt;
        let _ieee = crate::fpenv::Ieee::enter();
        const B: usize = 2048;
        let mut d = [0f32; B];
        let mut w = [0f32; B];
        let canon = |v: f32| {
            if v.is_nan() {
                f32::from_bits(crate::element::F32_CANONICAL_NAN)
            } else {
                v
            }
        };
        let gk = kind::<G>();
        let mut j = 0;
        while j < n {
            let m = B.min(n - j);
            // SAFETY: elements [j, j + m) of x, g and out are valid; x and g are read in
            // full (into d and w) before any element of out in that range is written.
            unsafe {
                // An f32 gradient not written over in place: f′(x) straight into out, the
                // products then in place (the block is still in L1); else via `d`.
                let direct = gk == Some(0) && !std::ptr::eq(out, g);
                let dp = if direct {
                    out.add(j) as *mut f32
                } else {
                    d.as_mut_ptr()
                };
                self.run_lut(lut, x.add(j), dp, m);
                let (d, w) = (std::slice::from_raw_parts_mut(dp, m), &mut w[..m]);
                match gk {
                    Some(0) => {
                        let gs = std::slice::from_raw_parts(g.add(j) as *const f32, m);
                        for (p, &v) in d.iter_mut().zip(gs) {
                            *p = canon(v * *p);
                        }
                        if !direct {
                            std::ptr::copy(d.as_ptr(), out.add(j) as *mut f32, m);
                        }
                    }
                    Some(1) => {
                        let gs = std::slice::from_raw_parts(g.add(j) as *const half::f16, m);
                        gs.convert_to_f32_slice(w);
                        for (p, &v) in d.iter_mut().zip(w.iter()) {
                            *p = canon(v * *p);
                        }
                        let o = std::slice::from_raw_parts_mut(out.add(j) as *mut half::f16, m);
                        o.convert_from_f32_slice(d);
                    }
                    Some(2) => {
                        let gs = std::slice::from_raw_parts(g.add(j) as *const u16, m);
                        for (p, &v) in d.iter_mut().zip(gs) {
                            *p = canon(f32::from_bits((v as u32) << 16) * *p);
                        }
                        let o = std::slice::from_raw_parts_mut(out.add(j) as *mut half::bf16, m);
                        o.convert_from_f32_slice(d);
                    }
                    _ => {
                        // Another Element type: the oracle's steps one by one.
                        for (k, &p) in d.iter().enumerate() {
                            let v = g.add(j + k).read().to_f32() * p;
                            out.add(j + k).write(G::from_f32(v));
                        }
                    }
                }
            }
            j += m;
        }
    }

    /// The result table for a 16-bit input type T and output U, for inputs of `n`
    /// elements (None: T is f32, or n is small).
    fn lut<T: Element, U: Element>(&self, n: usize) -> Option<Lut<'_>> {
        if n < LUT_THRESHOLD {
            return None;
        }
        let ti = match kind::<T>()? {
            0 => return None,
            k => k as usize - 1,
        };
        let all = || (0..=u16::MAX).collect::<Vec<u16>>();
        match kind::<U>()? {
            0 => {
                let t = self.luts.to32[ti].get_or_init(|| {
                    let (x, mut out) = (all(), vec![0u32; 65536]);
                    // SAFETY: T is a 16-bit type (kind 1 or 2) and U is f32, so the
                    // buffers hold 65,536 elements of each.
                    unsafe { self.run(x.as_ptr() as *const T, out.as_mut_ptr() as *mut U, 65536) };
                    out.into_boxed_slice()
                });
                Some(Lut::To32(t.as_ref().try_into().ok()?))
            }
            k => {
                let t = self.luts.to16[ti][k as usize - 1].get_or_init(|| {
                    let (x, mut out) = (all(), vec![0u16; 65537]);
                    // SAFETY: T and U are 16-bit types (the last entry stays 0: padding).
                    unsafe { self.run(x.as_ptr() as *const T, out.as_mut_ptr() as *mut U, 65536) };
                    out.into_boxed_slice()
                });
                Some(Lut::To16(t.as_ref().try_into().ok()?))
            }
        }
    }

    /// Runs through the result table when there is one, else the kernel.
    ///
    /// # Safety
    /// As [`Self::run`]; with a table, T is the 16-bit type it was built for and U
    /// its output type.
    unsafe fn run_lut<T: Element, U: Element>(
        &self,
        lut: Option<Lut<'_>>,
        src: *const T,
        dst: *mut U,
        n: usize,
    ) {
        let src16 = src as *const u16;
        // SAFETY: by the contract, element j of src and dst is valid; the read comes
        // before the write of the same element.
        unsafe {
            match lut {
                None => self.run(src, dst, n),
                Some(Lut::To16(t)) => {
                    let done =
                        self.lut_gathered(t.as_ptr() as *const u8, false, src16, dst as *mut u8, n);
                    let t: &[u16; 65536] = t[..65536].try_into().expect("65,536 of 65,537");
                    lut_loop(t, src16.add(done), (dst as *mut u16).add(done), n - done)
                }
                Some(Lut::To32(t)) => {
                    let done =
                        self.lut_gathered(t.as_ptr() as *const u8, true, src16, dst as *mut u8, n);
                    lut_loop(t, src16.add(done), (dst as *mut u32).add(done), n - done)
                }
            }
        }
    }

    /// The leading whole vectors of a result-table lookup by AVX-512 gathers, where they
    /// are the faster way ([`avx512::prefer_row_gathers`]: Intel); returns how many
    /// elements were done (0 elsewhere). Intel VM, session 40, `bench/cpu_lab/ab.sh
    /// --normal 4`, .cpu-tables, new/old (min): two threads at 2^24 bf16 0.85–0.95, f16
    /// 0.91–0.94; one thread at 2^22 bf16 0.88–0.90; at 2^18 0.99–1.02 and at 2^20 f16
    /// 1.02–1.14 (medians 0.91–1.13): the table loads bound both ways there.
    ///
    /// # Safety
    /// As [`avx512::lut_gather`] (`wide`: its `WIDE`).
    #[allow(unused_variables)]
    unsafe fn lut_gathered(
        &self,
        t: *const u8,
        wide: bool,
        src: *const u16,
        dst: *mut u8,
        n: usize,
    ) -> usize {
        #[cfg(target_arch = "x86_64")]
        if self.backend == Backend::Avx512 && self.prepared.row_gathers {
            // SAFETY: the backend was checked when chosen; the rest is the contract.
            let done = unsafe {
                if wide {
                    avx512::lut_gather::<true>(t, src, dst, n, n >= NT_MIN)
                } else {
                    avx512::lut_gather::<false>(t, src, dst, n, n >= NT_MIN)
                }
            };
            if n >= NT_MIN {
                // SAFETY: SSE2, part of x86-64 (non-temporal stores before the reader).
                unsafe { std::arch::x86_64::_mm_sfence() };
            }
            return done;
        }
        0
    }

    fn parallel(&self, n: usize) -> bool {
        self.parallelism == Parallelism::Rayon
            && n >= PARALLEL_THRESHOLD
            && rayon::current_num_threads() > 1
    }

    /// # Safety
    /// `src` valid for `n` reads, `dst` for `n` writes; not overlapping, or equal.
    unsafe fn run<T: Element, U: Element>(&self, src: *const T, dst: *mut U, n: usize) {
        // IEEE 754 default mode on this thread, a rayon worker or the caller's (see
        // crate::fpenv: a flush-to-zero mode would flush subnormal results).
        let _ieee = crate::fpenv::Ieee::enter();
        #[cfg(target_arch = "x86_64")]
        if self.backend != Backend::Portable {
            if let (Some(ti), Some(to)) = (kind::<T>(), kind::<U>()) {
                if self.backend == Backend::Avx512 {
                    // SAFETY: as below (the AVX-512 kernel handles every table).
                    unsafe {
                        avx512::run(&self.prepared, ti, to, src as *const u8, dst as *mut u8, n)
                    };
                    return;
                }
                // SAFETY: the backend was checked when chosen (AVX-512 implies the AVX2
                // kernel runs too); T and U are exactly the kinds named, so the byte
                // pointers cover n elements of each.
                unsafe {
                    avx2::run(
                        &self.prepared,
                        &self.table,
                        ti,
                        to,
                        src as *const u8,
                        dst as *mut u8,
                        n,
                    )
                };
                return;
            }
        }
        // SAFETY: forwarded.
        unsafe { prepared::portable(&self.prepared, &self.table, src, dst, n) };
    }
}

/// Kernel calls (the AVX-512 kernels with f32 output, and result-table lookups on x86-64)
/// of at least this many elements store non-temporally: no read for ownership of output
/// lines that are overwritten whole. 2^20 elements (4 MiB of f32, 2 MiB of 16-bit output)
/// are rayon's tasks for inputs of 2^24 and more; smaller outputs may still be in cache
/// when the caller reads them.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const NT_MIN: usize = 1 << 20;

/// `dst[j] = t[src[j]]` for j < n.
///
/// # Safety
/// `src` valid for `n` reads and `dst` for `n` writes (aligned for O); the buffers do not
/// overlap or are the same (each 16 bytes of results is written after its inputs are read).
unsafe fn lut_loop<O: Copy>(t: &[O; 65536], src: *const u16, dst: *mut O, n: usize) {
    let plain = |src: *const u16, dst: *mut O, n: usize| {
        for j in 0..n {
            // SAFETY: j < n, by the contract.
            unsafe { dst.add(j).write(t[src.add(j).read() as usize]) };
        }
    };
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: forwarded contract.
        if n >= NT_MIN {
            unsafe { lut_x86::<O, true>(t, src, dst, n, plain) };
        } else {
            unsafe { lut_x86::<O, false>(t, src, dst, n, plain) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    plain(src, dst, n);
}

/// [`lut_loop`] on x86-64: the results of 16 bytes of output looked up straight into an
/// SSE register (`pinsrw`/`pinsrd` from the table) and stored at once, their inputs read
/// four per 64-bit load — about 1.3 memory operations per element where a scalar loop
/// takes three (load, lookup, store); with `NT` the stores are non-temporal. The elements
/// before dst's first 16-byte boundary and after the last whole 16 bytes go through
/// `plain`. Measured on Zen 4 (`bench/cpu_lab/ab.sh --dtype bf16|f16`, 2026-11-23):
/// register assembly 0.55-0.84 of the time of a scalar loop (through a staging buffer
/// with non-temporal stores at 2^20 and more), 64-bit input loads another 0.69-0.77
/// (minimum over interleaved rounds; medians 0.74-0.92).
///
/// # Safety
/// As [`lut_loop`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn lut_x86<O: Copy, const NT: bool>(
    t: &[O; 65536],
    src: *const u16,
    dst: *mut O,
    n: usize,
    plain: impl Fn(*const u16, *mut O, usize),
) {
    use std::arch::x86_64::{
        __m128i, _mm_cvtsi32_si128, _mm_insert_epi16, _mm_setr_epi32, _mm_sfence, _mm_store_si128,
        _mm_stream_si128,
    };
    let size = std::mem::size_of::<O>();
    let lanes = 16 / size;
    let head = (((16 - dst as usize % 16) % 16) / size).min(n);
    plain(src, dst, head);
    let blocks = (n - head) / lanes;
    for b in 0..blocks {
        let j = head + b * lanes;
        // SAFETY: elements j .. j + lanes are below n; dst + j is 16-byte aligned (head
        // brought it there); the table has 65,536 entries, every u16 indexes it.
        unsafe {
            let s = src.add(j);
            let v = if size == 2 {
                let t16 = t.as_ptr() as *const u16;
                let (w0, w1) = (
                    (s as *const u64).read_unaligned(),
                    (s.add(4) as *const u64).read_unaligned(),
                );
                let g = |w: u64, k: u32| *t16.add(((w >> (16 * k)) & 0xFFFF) as usize) as i32;
                let v = _mm_cvtsi32_si128(g(w0, 0));
                let v = _mm_insert_epi16::<1>(v, g(w0, 1));
                let v = _mm_insert_epi16::<2>(v, g(w0, 2));
                let v = _mm_insert_epi16::<3>(v, g(w0, 3));
                let v = _mm_insert_epi16::<4>(v, g(w1, 0));
                let v = _mm_insert_epi16::<5>(v, g(w1, 1));
                let v = _mm_insert_epi16::<6>(v, g(w1, 2));
                _mm_insert_epi16::<7>(v, g(w1, 3))
            } else {
                let t32 = t.as_ptr() as *const i32;
                let w = (s as *const u64).read_unaligned();
                let g = |k: u32| *t32.add(((w >> (16 * k)) & 0xFFFF) as usize);
                _mm_setr_epi32(g(0), g(1), g(2), g(3))
            };
            let d = dst.add(j) as *mut __m128i;
            if NT {
                _mm_stream_si128(d, v);
            } else {
                _mm_store_si128(d, v);
            }
        }
    }
    let done = head + blocks * lanes;
    // SAFETY: the rest, below n.
    plain(unsafe { src.add(done) }, unsafe { dst.add(done) }, n - done);
    if NT {
        // Non-temporal stores are weakly ordered: fence them before the caller (or
        // another thread, after rayon's join) reads the output.
        // SAFETY: SSE2, part of x86-64.
        unsafe { _mm_sfence() };
    }
}
