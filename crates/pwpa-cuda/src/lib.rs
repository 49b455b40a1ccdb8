//! CUDA backend of pwpa: table evaluation with NVRTC-compiled kernels, bit-identical
//! to the CPU oracle ([`pwpa::Table::eval`]).
//!
//! * [`CudaBackend`] — one per device ordinal (the retained primary context, so device
//!   pointers from PyTorch are valid), with an in-memory module cache; compiled modules
//!   are also cached on disk (see [`compile::cache_dir`]).
//! * [`CudaTable`] — a table uploaded to one device; [`CudaTable::eval_raw`] and
//!   [`CudaTable::eval_with_derivative_raw`] work on raw device pointers on a caller's
//!   stream.
//! * [`DeviceBuffer`] — a small owning device allocation for tests and benchmarks.
//! * [`seed`] — the seed's kernel variants for the optimisation study; [`mathref`] —
//!   plain-CUDA kernels of common functions for comparison.
//!
//! Everything loads CUDA dynamically: the crate builds and its tests run (skipping the
//! GPU parts, with a message) on machines without a driver.

pub mod compile;
mod error;
pub mod mathref;
pub mod seed;
mod table;

pub use error::{Error, Result};
pub use table::{
    grid_is_one_step, lookup_grid, lookup_grid_one_step, lookup_grid_ord_one_step,
    lookup_grid_with, ord_cell, ord_key, result_table, CudaTable, KernelChoice, KernelSpec,
    LaunchOptions, LUT_BLOCK, LUT_BYTES, TILE_GRID_SMEM,
};

use cudarc::driver::sys;
use cudarc::driver::CudaContext;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub(crate) fn check(r: sys::CUresult, what: impl Into<String>) -> Result<()> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(Error::Driver {
            what: what.into(),
            source: cudarc::driver::DriverError(r),
        })
    }
}

/// Whether the CUDA driver library can be loaded (no panic, no initialisation).
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen candidate names.
    unsafe { sys::is_culib_present() }
}

/// A loaded module and its functions.
pub(crate) struct Module {
    pub(crate) module: Arc<cudarc::driver::CudaModule>,
    pub(crate) funcs: Mutex<HashMap<String, cudarc::driver::CudaFunction>>,
    /// Compile log (NVRTC warnings), empty when loaded from the disk cache.
    pub(crate) log: String,
}

/// Shared memory per block kept back for the kernels' static declarations (tile tickets).
const STATIC_SMEM_RESERVE: usize = 256;

/// One CUDA device: its retained primary context, properties and compiled modules.
pub struct CudaBackend {
    ctx: Arc<CudaContext>,
    arch: u32,
    sms: u32,
    smem_optin: usize,
    /// Peak DRAM bandwidth, bytes per second (0 if unknown).
    peak_bw: f64,
    modules: Mutex<HashMap<String, Arc<Module>>>,
    /// Per-stream tile-ticket counters (4 bytes each, zero between launches).
    tickets: Mutex<TicketPool>,
    /// Launch pwpa's kernels with programmatic stream serialisation (kernels/pdl.cuh):
    /// compute capability 9.0+, a CUDA 12.3+ driver (stream capture of such launches) and
    /// PWPA_CUDA_PDL not 0. Cleared if the driver refuses such a launch.
    pdl: std::sync::atomic::AtomicBool,
}

/// Tile-ticket counters: zeroed device words handed to streams on first use, from chunks
/// of [`TICKET_CHUNK`] allocated ahead (the first with the backend), so that a stream's
/// first launch needs no allocation or memset (which a CUDA graph capture forbids).
#[derive(Default)]
struct TicketPool {
    by_stream: HashMap<u64, sys::CUdeviceptr>,
    chunks: Vec<sys::CUdeviceptr>,
    used: usize,
}

/// Counters per pool chunk.
const TICKET_CHUNK: usize = 256;

/// Allocates and zeroes one chunk of counters (context bound by the caller).
fn ticket_chunk() -> Result<sys::CUdeviceptr> {
    let mut p: sys::CUdeviceptr = 0;
    // SAFETY: out-pointer valid; the caller bound the context.
    check(
        unsafe { sys::cuMemAlloc_v2(&mut p, TICKET_CHUNK * 4) },
        "allocating tile counters".to_string(),
    )?;
    // SAFETY: p is a fresh allocation of TICKET_CHUNK words.
    let r = unsafe { sys::cuMemsetD32_v2(p, 0, TICKET_CHUNK) };
    if let Err(e) = check(r, "zeroing tile counters".to_string()) {
        // SAFETY: allocated above, freed once.
        unsafe { sys::cuMemFree_v2(p) };
        return Err(e);
    }
    Ok(p)
}

impl std::fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaBackend")
            .field("ordinal", &self.ctx.ordinal())
            .field("arch", &self.arch)
            .finish()
    }
}

/// Timing of the last module lookup (for the cold/warm cache benchmark).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModuleSource {
    /// Already loaded in this backend.
    Memory,
    /// Loaded from the disk cache.
    Disk,
    /// Compiled by NVRTC.
    Compiled,
}

/// Peak DRAM bandwidth in bytes per second from the driver's memory clock (kHz) and bus
/// width (bits): two transfers per clock. Negative (unknown) inputs count as 0.
pub(crate) fn dram_bandwidth(mem_khz: i32, bus_bits: i32) -> f64 {
    2.0 * mem_khz.max(0) as f64 * 1e3 * bus_bits.max(0) as f64 / 8.0
}

impl CudaBackend {
    /// Opens device `ordinal`: checks for the driver and NVRTC, retains the primary context.
    pub fn new(ordinal: usize) -> Result<Arc<CudaBackend>> {
        if !driver_present() {
            return Err(Error::NoDriver(
                "libcuda.so could not be loaded (is the NVIDIA driver installed?)".into(),
            ));
        }
        compile::require_nvrtc()?;
        // SAFETY: the driver library is present.
        check(unsafe { sys::cuInit(0) }, "cuInit").map_err(|e| Error::NoDriver(e.to_string()))?;
        let mut count = 0;
        check(
            unsafe { sys::cuDeviceGetCount(&mut count) },
            "cuDeviceGetCount",
        )?;
        if ordinal >= count.max(0) as usize {
            return Err(Error::NoDevice {
                ordinal,
                count: count.max(0) as usize,
            });
        }
        let ctx = CudaContext::new(ordinal).map_err(|e| Error::Driver {
            what: format!("retaining the primary context of device {ordinal}"),
            source: e,
        })?;
        let attr = |a: sys::CUdevice_attribute| -> Result<i32> {
            ctx.attribute(a).map_err(|e| Error::Driver {
                what: format!("reading device attribute {a:?}"),
                source: e,
            })
        };
        use sys::CUdevice_attribute::*;
        let major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        let sms = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
        let smem = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?;
        // Only a tuning input: 0 when the driver does not say.
        let peak_bw = dram_bandwidth(
            attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE).unwrap_or(0),
            attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH).unwrap_or(0),
        );
        let mut driver = 0;
        // SAFETY: valid out-pointer.
        let driver =
            if unsafe { sys::cuDriverGetVersion(&mut driver) } == sys::CUresult::CUDA_SUCCESS {
                driver
            } else {
                0
            };
        let pdl = major >= 9
            && driver >= 12030
            && std::env::var("PWPA_CUDA_PDL").map_or(true, |v| v != "0");
        Ok(Arc::new(CudaBackend {
            pdl: std::sync::atomic::AtomicBool::new(pdl),
            ctx,
            arch: (major * 10 + minor) as u32,
            sms: sms.max(1) as u32,
            smem_optin: smem.max(48 * 1024) as usize,
            peak_bw,
            modules: Mutex::new(HashMap::new()),
            tickets: Mutex::new(TicketPool {
                chunks: vec![ticket_chunk()?],
                ..Default::default()
            }),
        }))
    }

    /// The device's name.
    pub fn device_name(&self) -> String {
        self.ctx
            .name()
            .unwrap_or_else(|e| format!("<unknown: {e}>"))
    }

    /// Driver library present and at least one device (never panics).
    pub fn is_available() -> bool {
        if !driver_present() {
            return false;
        }
        // SAFETY: the driver library is present.
        unsafe {
            if sys::cuInit(0) != sys::CUresult::CUDA_SUCCESS {
                return false;
            }
            let mut count = 0;
            sys::cuDeviceGetCount(&mut count) == sys::CUresult::CUDA_SUCCESS && count > 0
        }
    }

    /// The compute capability as `major*10 + minor` (90 for Hopper).
    pub fn arch(&self) -> u32 {
        self.arch
    }

    /// Number of multiprocessors.
    pub fn multiprocessors(&self) -> u32 {
        self.sms
    }

    /// Peak DRAM bandwidth in bytes per second, from the memory clock and bus width the
    /// driver reports (H100 SXM about 3.35e12, H200 about 4.9e12); 0 if unknown.
    pub fn peak_bandwidth(&self) -> f64 {
        self.peak_bw
    }

    /// Largest dynamic shared memory a block may opt in to.
    pub fn shared_memory_optin(&self) -> usize {
        // Less what the kernels declare statically (at most STATIC_SMEM_RESERVE bytes).
        self.smem_optin - STATIC_SMEM_RESERVE
    }

    /// The retained primary context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The tile-ticket counter of `stream`: a 4-byte device word, zero whenever no
    /// kernel that uses it is running. The streaming kernels hand out tiles in order
    /// from it (so the tiles in flight form one compact wavefront through memory, which
    /// a persistent grid-stride loop does not), and the block that takes the last
    /// ticket of a launch sets it back to zero. Launches on one stream run in order, so
    /// one counter per stream is never shared by two running kernels. A launch captured
    /// into a CUDA graph gets a counter of its own.
    pub(crate) fn ticket_counter(&self, stream: u64) -> Result<u64> {
        let mut capturing = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
        // SAFETY: out-pointer valid; an invalid stream is reported, not dereferenced.
        let r = unsafe { sys::cuStreamIsCapturing(stream as sys::CUstream, &mut capturing) };
        check(r, "querying the stream's capture status".to_string())?;
        let capturing = capturing != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
        let mut pool = self.tickets.lock().unwrap_or_else(|e| e.into_inner());
        if !capturing {
            if let Some(&p) = pool.by_stream.get(&stream) {
                return Ok(p);
            }
        }
        if pool.used == pool.chunks.len() * TICKET_CHUNK {
            // Only reachable while capturing after 128+ captured launches in a row.
            self.bind()?;
            let c = ticket_chunk()?;
            pool.chunks.push(c);
        }
        let k = pool.used;
        let p = pool.chunks[k / TICKET_CHUNK] + 4 * (k % TICKET_CHUNK) as u64;
        pool.used += 1;
        if capturing {
            // A launch recorded into a CUDA graph keeps a counter of its own: graphs
            // captured on one stream may be replayed on different streams at once
            // (replays of one graph are ordered by CUDA). The slot is never reused.
        } else {
            pool.by_stream.insert(stream, p);
            // Keep half a chunk of zeroed counters in reserve for captures.
            if pool.chunks.len() * TICKET_CHUNK - pool.used < TICKET_CHUNK / 2 {
                self.bind()?;
                let c = ticket_chunk()?;
                pool.chunks.push(c);
            }
        }
        Ok(p)
    }

    /// Makes the context current on this thread.
    pub fn bind(&self) -> Result<()> {
        self.ctx.bind_to_thread().map_err(|e| Error::Driver {
            what: "binding the context to this thread".into(),
            source: e,
        })
    }

    /// NVRTC options for a module on this device.
    pub(crate) fn options(&self, extra: &[&str]) -> Vec<String> {
        let mut o = vec![
            format!("--gpu-architecture=sm_{}", self.arch),
            "--fmad=false".to_string(),
            "--std=c++17".to_string(),
        ];
        o.extend(extra.iter().map(|s| s.to_string()));
        o
    }

    /// Loads (compiling or reading the caches) a module and returns where it came from.
    pub(crate) fn module(
        &self,
        name: &str,
        src: &str,
        options: &[String],
    ) -> Result<(Arc<Module>, ModuleSource)> {
        let (maj, min) = compile::nvrtc_version()?;
        let ver = format!(
            "nvrtc{maj}.{min};sm_{};pwpa-cuda{}",
            self.arch,
            env!("CARGO_PKG_VERSION")
        );
        let opts = options.join(" ");
        let key = compile::hash_key(&[src.as_bytes(), opts.as_bytes(), ver.as_bytes()]);
        if let Some(m) = self.modules.lock().map_err(poisoned)?.get(&key) {
            return Ok((m.clone(), ModuleSource::Memory));
        }
        self.bind()?;
        let mut source = ModuleSource::Disk;
        let mut loaded = None;
        if let Some(img) = compile::cache_read(&key) {
            if let Ok(m) = self.ctx.load_module(cudarc::nvrtc::Ptx::from_binary(img)) {
                loaded = Some((m, String::new()));
            }
        }
        let (module, log) = match loaded {
            Some(x) => x,
            None => {
                source = ModuleSource::Compiled;
                let c = compile::compile(name, src, options, true)?;
                let m = self
                    .ctx
                    .load_module(cudarc::nvrtc::Ptx::from_binary(c.image.clone()))
                    .map_err(|e| Error::Driver {
                        what: format!("loading module {name}"),
                        source: e,
                    })?;
                compile::cache_write(&key, &c.image);
                (m, c.log)
            }
        };
        let m = Arc::new(Module {
            module,
            funcs: Mutex::new(HashMap::new()),
            log,
        });
        self.modules
            .lock()
            .map_err(poisoned)?
            .insert(key, m.clone());
        Ok((m, source))
    }

    /// A function of a module, with its dynamic shared-memory limit raised to the opt-in maximum.
    pub(crate) fn function(&self, m: &Module, fname: &str) -> Result<sys::CUfunction> {
        let mut funcs = m.funcs.lock().map_err(poisoned)?;
        if let Some(f) = funcs.get(fname) {
            return Ok(f.cu_function());
        }
        let f = m.module.load_function(fname).map_err(|e| Error::Driver {
            what: format!("loading kernel {fname}"),
            source: e,
        })?;
        // The kernels' own static shared memory (the tile tickets) comes out of the same
        // per-block limit.
        let stat = static_smem(f.cu_function(), fname)?;
        // SAFETY: valid function handle.
        check(
            unsafe {
                sys::cuFuncSetAttribute(
                    f.cu_function(),
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    (self.smem_optin as i32 - stat).max(0),
                )
            },
            format!("raising the shared-memory limit of {fname}"),
        )?;
        let h = f.cu_function();
        funcs.insert(fname.to_string(), f);
        Ok(h)
    }

    /// Blocks of `threads` threads with `smem` bytes that fit on one multiprocessor.
    pub(crate) fn occupancy(&self, f: sys::CUfunction, threads: u32, smem: usize) -> u32 {
        let mut n = 0;
        // SAFETY: valid function handle.
        let r = unsafe {
            sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(&mut n, f, threads as i32, smem)
        };
        if r == sys::CUresult::CUDA_SUCCESS && n > 0 {
            n as u32
        } else {
            1
        }
    }

    /// Launches `f` with the given kernel parameters (pointers to each argument).
    ///
    /// # Safety
    /// `params` must match the kernel's signature; pointers inside must be valid for the launch.
    pub(crate) unsafe fn launch(
        &self,
        f: sys::CUfunction,
        grid: u32,
        block: u32,
        smem: usize,
        stream: u64,
        params: &mut [*mut std::ffi::c_void],
        what: &str,
    ) -> Result<()> {
        self.bind()?;
        // SAFETY: per the caller.
        let r = unsafe {
            sys::cuLaunchKernel(
                f,
                grid.max(1),
                1,
                1,
                block,
                1,
                1,
                smem as u32,
                stream as sys::CUstream,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        check(r, format!("launching {what}"))
    }

    /// Whether [`CudaBackend::launch_pdl`] launches with programmatic stream serialisation.
    pub fn uses_pdl(&self) -> bool {
        self.pdl.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Launches `f` like [`CudaBackend::launch`], with programmatic stream serialisation where
    /// the device and driver support it (see `pdl`): for kernels that call `pdl_wait()` before
    /// touching memory a previous kernel may use (kernels/pdl.cuh). If the driver refuses the
    /// attribute (not supported, invalid), it is turned off for this backend and the kernel
    /// launched plainly.
    ///
    /// # Safety
    /// As [`CudaBackend::launch`]; the kernel must follow pdl.cuh's contract.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn launch_pdl(
        &self,
        f: sys::CUfunction,
        grid: u32,
        block: u32,
        smem: usize,
        stream: u64,
        params: &mut [*mut std::ffi::c_void],
        what: &str,
    ) -> Result<()> {
        if !self.uses_pdl() {
            // SAFETY: per the caller.
            return unsafe { self.launch(f, grid, block, smem, stream, params, what) };
        }
        self.bind()?;
        // SAFETY: a zeroed attribute value is valid plain data; the field set is the one the
        // attribute id selects.
        let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
        attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attr.value.programmaticStreamSerializationAllowed = 1;
        let cfg = sys::CUlaunchConfig {
            gridDimX: grid.max(1),
            gridDimY: 1,
            gridDimZ: 1,
            blockDimX: block,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: smem as u32,
            hStream: stream as sys::CUstream,
            attrs: &mut attr,
            numAttrs: 1,
        };
        // SAFETY: per the caller; cfg and attr outlive the call.
        let r =
            unsafe { sys::cuLaunchKernelEx(&cfg, f, params.as_mut_ptr(), std::ptr::null_mut()) };
        if matches!(
            r,
            sys::CUresult::CUDA_ERROR_NOT_SUPPORTED | sys::CUresult::CUDA_ERROR_INVALID_VALUE
        ) {
            self.pdl.store(false, std::sync::atomic::Ordering::Relaxed);
            // SAFETY: per the caller.
            return unsafe { self.launch(f, grid, block, smem, stream, params, what) };
        }
        check(r, format!("launching {what}"))
    }

    /// Compile log and register/spill report of a compiled kernel (for tuning).
    pub fn kernel_report(&self, spec: &KernelSpec) -> Result<String> {
        let (m, _) = self.module("pwpa_eval", &spec.source(), &self.options(&[]))?;
        let f = self.function(&m, "pwpa_eval")?;
        let attr = |a| {
            let mut v = 0;
            // SAFETY: valid function handle.
            unsafe { sys::cuFuncGetAttribute(&mut v, a, f) };
            v
        };
        use sys::CUfunction_attribute::*;
        Ok(format!(
            "registers {} local(stack/spill) bytes {} static smem {} {}",
            attr(CU_FUNC_ATTRIBUTE_NUM_REGS),
            attr(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES),
            attr(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES),
            m.log.trim()
        ))
    }

    /// Loads the module of `spec` and reports whether it came from memory, disk or NVRTC.
    pub fn prepare(&self, spec: &KernelSpec) -> Result<ModuleSource> {
        let (m, src) = self.module("pwpa_eval", &spec.source(), &self.options(&[]))?;
        self.function(&m, "pwpa_eval")?;
        Ok(src)
    }

    /// Synchronises the context.
    pub fn synchronize(&self) -> Result<()> {
        self.ctx.synchronize().map_err(|e| Error::Driver {
            what: "synchronising".into(),
            source: e,
        })
    }
}

/// The static shared memory kernel `f` (named `fname`, for the error) declares.
pub(crate) fn static_smem(f: sys::CUfunction, fname: &str) -> Result<i32> {
    let mut stat = 0i32;
    // SAFETY: valid function handle and out-pointer.
    check(
        unsafe {
            sys::cuFuncGetAttribute(
                &mut stat,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                f,
            )
        },
        format!("reading the static shared memory of {fname}"),
    )?;
    Ok(stat)
}

pub(crate) fn poisoned<T>(_: T) -> Error {
    Error::Driver {
        what: "a lock poisoned by an earlier panic".into(),
        source: cudarc::driver::DriverError(sys::CUresult::CUDA_ERROR_UNKNOWN),
    }
}

/// An owning device allocation (bytes), freed on drop. For tests, benchmarks and the CLI.
pub struct DeviceBuffer {
    backend: Arc<CudaBackend>,
    ptr: u64,
    bytes: usize,
}

impl DeviceBuffer {
    /// Allocates `bytes` (uninitialised; at least 1 byte is allocated).
    pub fn new(backend: &Arc<CudaBackend>, bytes: usize) -> Result<DeviceBuffer> {
        backend.bind()?;
        let mut p: sys::CUdeviceptr = 0;
        // SAFETY: out-pointer valid; context bound.
        check(
            unsafe { sys::cuMemAlloc_v2(&mut p, bytes.max(1)) },
            format!("allocating {bytes} bytes"),
        )?;
        Ok(DeviceBuffer {
            backend: backend.clone(),
            ptr: p,
            bytes,
        })
    }

    /// Allocates and uploads a host slice.
    pub fn from_slice<T: Copy>(backend: &Arc<CudaBackend>, data: &[T]) -> Result<DeviceBuffer> {
        let b = DeviceBuffer::new(backend, std::mem::size_of_val(data))?;
        b.upload(0, data)?;
        Ok(b)
    }

    /// Device address.
    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    /// Size in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Copies `data` to byte offset `offset` (synchronous).
    pub fn upload<T: Copy>(&self, offset: usize, data: &[T]) -> Result<()> {
        let n = std::mem::size_of_val(data);
        if offset + n > self.bytes {
            return Err(Error::LengthMismatch {
                input: offset + n,
                output: self.bytes,
            });
        }
        if n == 0 {
            return Ok(());
        }
        self.backend.bind()?;
        // SAFETY: range checked; host slice valid for n bytes.
        check(
            unsafe { sys::cuMemcpyHtoD_v2(self.ptr + offset as u64, data.as_ptr() as *const _, n) },
            "copying to the device",
        )
    }

    /// Copies `out.len()` elements from byte offset `offset` (synchronous).
    pub fn download<T: Copy>(&self, offset: usize, out: &mut [T]) -> Result<()> {
        let n = std::mem::size_of_val(out);
        if offset + n > self.bytes {
            return Err(Error::LengthMismatch {
                input: offset + n,
                output: self.bytes,
            });
        }
        if n == 0 {
            return Ok(());
        }
        self.backend.bind()?;
        // SAFETY: range checked; host slice valid for n bytes.
        check(
            unsafe {
                sys::cuMemcpyDtoH_v2(out.as_mut_ptr() as *mut _, self.ptr + offset as u64, n)
            },
            "copying from the device",
        )
    }

    /// Fills with a byte value (synchronous).
    pub fn fill(&self, byte: u8) -> Result<()> {
        self.backend.bind()?;
        // SAFETY: whole allocation.
        check(
            unsafe { sys::cuMemsetD8_v2(self.ptr, byte, self.bytes) },
            "memset",
        )
    }
}

impl Drop for CudaBackend {
    fn drop(&mut self) {
        let pool = std::mem::take(self.tickets.get_mut().unwrap_or_else(|e| e.into_inner()));
        if !pool.chunks.is_empty() && self.bind().is_ok() {
            for p in pool.chunks {
                // SAFETY: allocated by ticket_chunk and freed once.
                unsafe { sys::cuMemFree_v2(p) };
            }
        }
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        if self.backend.bind().is_ok() {
            // SAFETY: allocated by cuMemAlloc and freed once.
            unsafe {
                sys::cuMemFree_v2(self.ptr);
            }
        }
    }
}

/// A CUDA event pair timer on a raw stream.
pub struct Timer {
    backend: Arc<CudaBackend>,
    start: sys::CUevent,
    stop: sys::CUevent,
}

impl Timer {
    /// Creates two events.
    pub fn new(backend: &Arc<CudaBackend>) -> Result<Timer> {
        backend.bind()?;
        let mut a = std::ptr::null_mut();
        let mut b = std::ptr::null_mut();
        // SAFETY: out-pointers valid.
        unsafe {
            check(sys::cuEventCreate(&mut a, 0), "cuEventCreate")?;
            check(sys::cuEventCreate(&mut b, 0), "cuEventCreate")?;
        }
        Ok(Timer {
            backend: backend.clone(),
            start: a,
            stop: b,
        })
    }
    /// Records the start event.
    pub fn start(&self, stream: u64) -> Result<()> {
        // SAFETY: valid event.
        check(
            unsafe { sys::cuEventRecord(self.start, stream as sys::CUstream) },
            "cuEventRecord",
        )
    }
    /// Records the stop event, waits, and returns the milliseconds in between.
    pub fn stop_ms(&self, stream: u64) -> Result<f32> {
        let mut ms = 0.0f32;
        // SAFETY: valid events.
        unsafe {
            check(
                sys::cuEventRecord(self.stop, stream as sys::CUstream),
                "cuEventRecord",
            )?;
            check(sys::cuEventSynchronize(self.stop), "cuEventSynchronize")?;
            check(
                sys::cuEventElapsedTime_v2(&mut ms, self.start, self.stop),
                "cuEventElapsedTime",
            )?;
        }
        Ok(ms)
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        if self.backend.bind().is_ok() {
            // SAFETY: events created once, destroyed once.
            unsafe {
                sys::cuEventDestroy_v2(self.start);
                sys::cuEventDestroy_v2(self.stop);
            }
        }
    }
}

/// Device-to-device copy of `bytes` on `stream` (the bandwidth roof the kernels are measured against).
pub fn copy_dtod(
    backend: &CudaBackend,
    dst: u64,
    src: u64,
    bytes: usize,
    stream: u64,
) -> Result<()> {
    backend.bind()?;
    // SAFETY: caller passes device ranges of `bytes`.
    check(
        unsafe { sys::cuMemcpyDtoDAsync_v2(dst, src, bytes, stream as sys::CUstream) },
        "device-to-device copy",
    )
}
