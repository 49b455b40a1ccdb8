//! The seed's kernel variants (corrected), selectable by name, for the optimisation study.
//!
//! Every variant computes pwpa's result for x in `[b_0, b_P]` (bit-identical to
//! [`pwpa::Table::eval`] there): index = first i with x < b[i+1] else P−1, t = x − anchor,
//! Horner with FMA from c[0]. Outside the range they extend the edge pieces (the seed
//! has no tails) and NaN is not canonicalised. f32 only, one element per thread.

use crate::error::{Error, Result};
use crate::{CudaBackend, DeviceBuffer};
use pwpa::table::Layout;
use pwpa::Table;
use std::sync::Arc;

/// The seed kernels' source.
pub const SEED_CU: &str = include_str!("../kernels/seed.cu");

/// Names of the seed variants (`<kernel>-<layout>`).
pub const VARIANTS: [&str; 10] = [
    "base-aos",
    "base-soa",
    "unroll-aos",
    "unroll-soa",
    "nodiv-aos",
    "nodiv-soa",
    "reg-aos",
    "reg-soa",
    "shmem-aos",
    "shmem-soa",
];

/// A table in the seed's layouts on the device.
pub struct SeedTable {
    backend: Arc<CudaBackend>,
    p: u32,
    d: u32,
    aos: DeviceBuffer,
    soa: DeviceBuffer,
    anchors: DeviceBuffer,
    bp: DeviceBuffer,
}

impl SeedTable {
    /// Uploads `table` (its breakpoints as an explicit f32 list: exact for arbitrary
    /// breakpoints; uniform ones are rounded to f32 points, so the seed's index can
    /// differ from pwpa's uniform rule right at a breakpoint).
    pub fn new(backend: &Arc<CudaBackend>, table: &Table) -> Result<SeedTable> {
        let p = table.partitions();
        let pts: Vec<f32> = (0..=p)
            .map(|i| table.breakpoints().point(i) as f32)
            .collect();
        Ok(SeedTable {
            backend: backend.clone(),
            p: p as u32,
            d: table.degree() as u32,
            aos: DeviceBuffer::from_slice(backend, &table.coeffs_in(Layout::Aos))?,
            soa: DeviceBuffer::from_slice(backend, &table.coeffs_in(Layout::Soa))?,
            anchors: DeviceBuffer::from_slice(backend, table.anchors())?,
            bp: DeviceBuffer::from_slice(backend, &pts)?,
        })
    }

    /// Runs variant `name` on `n` f32 elements (device pointers) on `stream`.
    ///
    /// # Safety
    /// `x` and `y` must be device buffers of at least `n` f32 on this backend.
    pub unsafe fn run(&self, name: &str, x: u64, y: u64, n: usize, stream: u64) -> Result<()> {
        if !VARIANTS.contains(&name) {
            return Err(Error::UnknownVariant(name.into(), VARIANTS.join(", ")));
        }
        if x == 0 || y == 0 {
            return Err(Error::NullPointer(
                if x == 0 { "input" } else { "output" },
                n,
            ));
        }
        if n == 0 {
            return Ok(());
        }
        let b = &self.backend;
        let opts = b.options(&["-DREGCHUNK=8", "-DUNROLL_SIZE=8"]);
        let (m, _) = b.module("seed", SEED_CU, &opts)?;
        let fname = format!("seed_{}", name.replace('-', "_"));
        let f = b.function(&m, &fname)?;
        let smem = if name.starts_with("shmem") {
            (2 * self.p as usize + 1 + self.p as usize * (self.d as usize + 1)) * 4
        } else {
            0
        };
        if smem > b.shared_memory_optin() {
            return Err(Error::Unsupported(
                name.into(),
                format!(
                    "needs {smem} bytes of shared memory, the device allows {}",
                    b.shared_memory_optin()
                ),
            ));
        }
        let block = 256u32;
        let grid = n.div_ceil(block as usize);
        if grid > u32::MAX as usize {
            return Err(Error::Unsupported(
                name.into(),
                format!("{n} elements need too many blocks"),
            ));
        }
        let coeffs = if name.ends_with("soa") {
            self.soa.ptr()
        } else {
            self.aos.ptr()
        };
        let (mut px, mut py, mut pc, mut pa, mut pb, mut pp, mut pd, mut pn) = (
            x,
            y,
            coeffs,
            self.anchors.ptr(),
            self.bp.ptr(),
            self.p,
            self.d,
            n as u64,
        );
        let mut args: [*mut std::ffi::c_void; 8] = [
            &mut px as *mut _ as *mut _,
            &mut py as *mut _ as *mut _,
            &mut pc as *mut _ as *mut _,
            &mut pa as *mut _ as *mut _,
            &mut pb as *mut _ as *mut _,
            &mut pp as *mut _ as *mut _,
            &mut pd as *mut _ as *mut _,
            &mut pn as *mut _ as *mut _,
        ];
        // SAFETY: arguments match the SEED_ARGS signature.
        unsafe { b.launch(f, grid as u32, block, smem, stream, &mut args, &fname) }
    }
}
