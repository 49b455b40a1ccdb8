//! A cache of large CPU output buffers for `pwpa.torch`, handed to PyTorch through DLPack.
//!
//! A fresh CPU tensor of tens of MiB costs more than evaluating it: PyTorch's CPU allocator
//! maps new memory for every large tensor and returns it on free, so the first write of every
//! output page faults and the kernel zeroes it (2^24 f32, two threads, Intel VM, session 40:
//! `t(x)` 12–24 ms against 4 ms into a preallocated y; PyTorch's own `torch.tanh(x)` 17–19 ms).
//! Outputs of 4 MiB or more are therefore carved from buffers that this module keeps after
//! their tensors die, as PyTorch's CUDA caching allocator keeps device memory: the next output
//! of about the same size reuses one, already mapped (on transparent huge pages where Linux
//! grants them). The cache holds at most `limit` bytes of unused buffers (1 GiB unless
//! `PWPA_CPU_OUTPUT_CACHE_MB` says otherwise; 0 turns it off); the oldest go first.
//!
//! The tensor owns its buffer through a `DLManagedTensor` whose deleter returns it here;
//! PyTorch calls the deleter from whichever thread frees the storage, so the free list is a
//! mutex, taken with `try_lock` only: a lock that another thread held when the process forked
//! stays locked in the child, which then allocates and frees directly instead of waiting.

use std::alloc::{alloc, dealloc, Layout};
use std::collections::VecDeque;
use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use pyo3::exceptions::{PyMemoryError, PyValueError};
use pyo3::prelude::*;

/// Buffers are multiples of this and aligned to it (one transparent huge page).
const HUGE: usize = 2 << 20;
/// The smallest output served from the cache (smaller ones use PyTorch's allocator).
pub const MIN_BYTES: usize = 4 << 20;
/// "Not read yet" for [`LIMIT`].
const UNSET: usize = usize::MAX;

/// The most bytes of unused buffers kept ([`UNSET`] until first used).
static LIMIT: AtomicUsize = AtomicUsize::new(UNSET);

/// Unused buffers, oldest first, and their total size.
struct Free {
    bufs: VecDeque<(usize, usize)>,
    bytes: usize,
}

static FREE: Mutex<Free> = Mutex::new(Free {
    bufs: VecDeque::new(),
    bytes: 0,
});

fn limit() -> usize {
    let l = LIMIT.load(Ordering::Relaxed);
    if l != UNSET {
        return l;
    }
    let mb = std::env::var("PWPA_CPU_OUTPUT_CACHE_MB")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(1024);
    let l = mb.saturating_mul(1 << 20).min(UNSET - 1);
    LIMIT.store(l, Ordering::Relaxed);
    l
}

fn layout(cap: usize) -> Layout {
    // cap is a non-zero multiple of HUGE (checked by `take`), far below isize::MAX.
    Layout::from_size_align(cap, HUGE).expect("a multiple of 2 MiB")
}

/// A buffer of `cap` bytes: one from the cache of at most a quarter (and 2 MiB) more than
/// needed, or a new one advised for huge pages.
fn take(nbytes: usize) -> Option<(usize, usize)> {
    let cap = nbytes.checked_next_multiple_of(HUGE)?.max(HUGE);
    if cap > isize::MAX as usize / 2 {
        return None;
    }
    let most = cap + (cap / 4).max(HUGE);
    if let Ok(mut free) = FREE.try_lock() {
        let best = free
            .bufs
            .iter()
            .enumerate()
            .filter(|(_, &(_, c))| c >= cap && c <= most)
            .min_by_key(|(_, &(_, c))| c)
            .map(|(i, _)| i);
        if let Some(i) = best {
            let b = free.bufs.remove(i).expect("an index of the list");
            free.bytes -= b.1;
            return Some(b);
        }
    }
    // SAFETY: the layout has a non-zero size.
    let ptr = unsafe { alloc(layout(cap)) };
    if ptr.is_null() {
        return None;
    }
    crate::advise_hugepages(ptr as usize, cap);
    Some((ptr as usize, cap))
}

impl Free {
    /// Takes the oldest buffers out until at most `lim` bytes are left; returns them.
    fn trim(&mut self, lim: usize) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        while self.bytes > lim {
            let old = self.bufs.pop_front().expect("bytes > 0 means a buffer");
            self.bytes -= old.1;
            out.push(old);
        }
        out
    }
}

/// Frees buffers of `take`; returns their bytes.
fn release(bufs: Vec<(usize, usize)>) -> usize {
    let mut n = 0;
    for (p, c) in bufs {
        n += c;
        // SAFETY: allocated by `take` with this layout, and no longer referenced.
        unsafe { dealloc(p as *mut u8, layout(c)) };
    }
    n
}

/// Returns a buffer: kept while the unused ones fit in the limit (the oldest leave first),
/// else freed.
fn give(buf: (usize, usize)) {
    let lim = limit();
    let evict = match FREE.try_lock() {
        Ok(mut free) if buf.1 <= lim => {
            free.bufs.push_back(buf);
            free.bytes += buf.1;
            free.trim(lim)
        }
        _ => vec![buf],
    };
    release(evict);
}

/// Frees the unused buffers above `lim` bytes (the oldest first); returns the bytes freed.
fn trim(lim: usize) -> usize {
    let evict = FREE
        .lock()
        .map_or_else(|_| Vec::new(), |mut free| free.trim(lim));
    release(evict)
}

// DLPack (v0.8 ABI, the legacy "dltensor" capsule that every PyTorch version reads).
#[repr(C)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// DLPack ≥ 1.0's managed tensor ("dltensor_versioned" capsules): numpy makes writable
/// arrays only from these (read-only ones from the legacy kind).
#[repr(C)]
struct DLManagedTensorVersioned {
    version: [u32; 2],
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DLTensor,
}

/// What a capsule owns: the managed tensor M (first, so that a pointer to it is a pointer
/// to this), its shape and strides, and the buffer.
#[repr(C)]
struct Owner<M> {
    managed: M,
    shape: [i64; 1],
    strides: [i64; 1],
    buf: (usize, usize),
}

unsafe extern "C" fn deleter<M>(m: *mut M) {
    if m.is_null() {
        return;
    }
    // SAFETY: m is the `managed` field (offset 0) of an `Owner<M>` leaked by `cpu_output`,
    // and DLPack calls the deleter once.
    let owner = unsafe { Box::from_raw(m as *mut Owner<M>) };
    give(owner.buf);
}

const NAME: &CStr = c"dltensor";
const NAME_VERSIONED: &CStr = c"dltensor_versioned";

/// The capsules' destructors: free the tensor if no consumer took it (a consumer renames
/// the capsule and calls the deleter itself when done).
unsafe extern "C" fn capsule_destructor(cap: *mut pyo3::ffi::PyObject) {
    // SAFETY: cap is a live capsule (its destructor is running).
    unsafe {
        if pyo3::ffi::PyCapsule_IsValid(cap, NAME.as_ptr()) == 1 {
            let m = pyo3::ffi::PyCapsule_GetPointer(cap, NAME.as_ptr());
            deleter(m as *mut DLManagedTensor);
        }
    }
}

unsafe extern "C" fn capsule_destructor_versioned(cap: *mut pyo3::ffi::PyObject) {
    // SAFETY: as above.
    unsafe {
        if pyo3::ffi::PyCapsule_IsValid(cap, NAME_VERSIONED.as_ptr()) == 1 {
            let m = pyo3::ffi::PyCapsule_GetPointer(cap, NAME_VERSIONED.as_ptr());
            deleter(m as *mut DLManagedTensorVersioned);
        }
    }
}

/// A capsule named `name` owning `owner` (freed here if the capsule cannot be made).
///
/// # Safety
/// `owner` is a leaked `Box<Owner<M>>`; `destructor` and `name` belong to M.
unsafe fn capsule<M>(
    py: Python<'_>,
    owner: *mut Owner<M>,
    name: &'static CStr,
    destructor: unsafe extern "C" fn(*mut pyo3::ffi::PyObject),
) -> PyResult<Py<PyAny>> {
    // SAFETY: the name is a static C string; the destructor frees the tensor when the
    // capsule dies unconsumed.
    let cap = unsafe {
        pyo3::ffi::PyCapsule_New(
            owner as *mut c_void,
            name.as_ptr() as *const c_char,
            Some(destructor),
        )
    };
    if cap.is_null() {
        // SAFETY: not handed to anyone: free it here.
        unsafe { deleter(owner as *mut M) };
        return Err(PyErr::fetch(py));
    }
    // SAFETY: a new reference returned by PyCapsule_New.
    Ok(unsafe { Bound::from_owned_ptr(py, cap) }.unbind())
}

/// A DLPack capsule of a new 1-D CPU tensor of `numel` elements of `dtype` ("float32",
/// "float16" or "bfloat16"), uninitialised, from the output cache (`torch.from_dlpack`
/// turns it into a tensor whose storage returns the buffer to the cache when freed).
/// `versioned`: a DLPack 1.0 capsule ("dltensor_versioned", what numpy's `from_dlpack`
/// needs for a writable array), else a legacy "dltensor" one (what every PyTorch reads).
#[pyfunction]
#[pyo3(signature = (numel, dtype, versioned=false))]
pub fn cpu_output(
    py: Python<'_>,
    numel: usize,
    dtype: &str,
    versioned: bool,
) -> PyResult<Py<PyAny>> {
    let (code, bits) = match dtype {
        "float32" => (2u8, 32u8),
        "float16" => (2, 16),
        "bfloat16" => (4, 16),
        other => {
            return Err(PyValueError::new_err(format!(
                "cpu_output: dtype {other:?} (float32, float16 or bfloat16)"
            )))
        }
    };
    let nbytes = numel
        .checked_mul(bits as usize / 8)
        .filter(|&b| b <= isize::MAX as usize / 2)
        .ok_or_else(|| PyMemoryError::new_err(format!("cpu_output: {numel} elements")))?;
    let buf = take(nbytes).ok_or_else(|| {
        PyMemoryError::new_err(format!("cpu_output: could not allocate {nbytes} bytes"))
    })?;
    let tensor = DLTensor {
        data: buf.0 as *mut c_void,
        device: DLDevice {
            device_type: 1, // kDLCPU
            device_id: 0,
        },
        ndim: 1,
        dtype: DLDataType {
            code,
            bits,
            lanes: 1,
        },
        shape: std::ptr::null_mut(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    };
    macro_rules! make {
        ($managed:expr, $name:expr, $destructor:expr) => {{
            let owner = Box::into_raw(Box::new(Owner {
                managed: $managed,
                shape: [numel as i64],
                strides: [1],
                buf,
            }));
            // SAFETY: owner is a valid, leaked Box; the shape and strides live as long as
            // it; `capsule` gets the name and destructor of its managed type.
            unsafe {
                (*owner).managed.dl_tensor.shape = (*owner).shape.as_mut_ptr();
                (*owner).managed.dl_tensor.strides = (*owner).strides.as_mut_ptr();
                (*owner).managed.manager_ctx = owner as *mut c_void;
                capsule(py, owner, $name, $destructor)
            }
        }};
    }
    if versioned {
        make!(
            DLManagedTensorVersioned {
                version: [1, 0],
                manager_ctx: std::ptr::null_mut(),
                deleter: Some(deleter::<DLManagedTensorVersioned>),
                flags: 0, // writable, not a copy
                dl_tensor: tensor,
            },
            NAME_VERSIONED,
            capsule_destructor_versioned
        )
    } else {
        make!(
            DLManagedTensor {
                dl_tensor: tensor,
                manager_ctx: std::ptr::null_mut(),
                deleter: Some(deleter::<DLManagedTensor>),
            },
            NAME,
            capsule_destructor
        )
    }
}

/// The cache's limit in bytes (`set`: a new limit; unused buffers above it are freed).
#[pyfunction]
#[pyo3(signature = (set=None))]
pub fn cpu_output_cache_limit(set: Option<usize>) -> usize {
    if let Some(l) = set {
        LIMIT.store(l.min(UNSET - 1), Ordering::Relaxed);
        trim(l);
    }
    limit()
}

/// (unused buffers, their bytes) in the cache.
#[pyfunction]
pub fn cpu_output_cache_info() -> (usize, usize) {
    FREE.lock().map_or((0, 0), |f| (f.bufs.len(), f.bytes))
}

/// Frees every unused buffer of the cache; returns the bytes freed.
#[pyfunction]
pub fn cpu_output_cache_clear() -> usize {
    trim(0)
}
