//! The floating-point environment pwpa computes in.
//!
//! Every result of pwpa — the oracle, the fast paths, the fitter's checks — is defined
//! in IEEE 754 arithmetic with its defaults: subnormal inputs and results kept, and
//! round to nearest even. A thread can run with other settings: flush-to-zero and
//! denormals-are-zero (`torch.set_flush_denormal(True)`, `-ffast-math` start-up code,
//! a library that set them), or another rounding mode (`fesetround`). Threads inherit
//! the setting of the thread that created them, so rayon's worker threads keep the mode
//! that was current when the pool started. Under such a mode the same table would give
//! other bits on the CPU than the oracle, the GPU and the report promise (subnormal
//! results flushed to zero, or rounded the other way), and an `--exact` fit fails.
//!
//! `Ieee` (crate-private) sets the defaults for a scope and puts the caller's mode back when the scope
//! ends. Every entry point that computes (the oracle, each chunk of the fast path, the
//! fitter, the reports) and every closure that rayon runs on its workers takes one. The
//! check costs a read of the control register; the register is written only where the
//! mode differs. Implemented for x86-64 (MXCSR) and AArch64 (FPCR); elsewhere a no-op.

/// Scope guard: IEEE 754 default floating-point mode on this thread while it lives
/// (see the module notes).
#[must_use = "the mode lasts only while the guard lives"]
pub(crate) struct Ieee {
    saved: Option<usize>,
}

/// MXCSR bits that change results: flush-to-zero (15), rounding control (13–14) and
/// denormals-are-zero (6). The exception masks and flags are left alone.
#[cfg(target_arch = "x86_64")]
const MODE_BITS: usize = (1 << 15) | (3 << 13) | (1 << 6);

/// FPCR bits that change results: flush-to-zero (24), rounding mode (22–23),
/// half-precision flush-to-zero (19), alternate handling (1) and flush inputs to zero (0).
#[cfg(target_arch = "aarch64")]
const MODE_BITS: usize = (1 << 24) | (3 << 22) | (1 << 19) | (1 << 1) | 1;

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn read() -> usize {
    let mut csr: u32 = 0;
    // SAFETY: stmxcsr stores the 32-bit MXCSR into the local.
    unsafe {
        std::arch::asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack, preserves_flags));
    }
    csr as usize
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn write(v: usize) {
    let csr = v as u32;
    // SAFETY: ldmxcsr loads a valid MXCSR value (one read from the register, with mode
    // bits changed). Not `nomem`: floating-point work must not move across it.
    unsafe {
        std::arch::asm!("ldmxcsr [{}]", in(reg) &csr, options(nostack, preserves_flags, readonly));
    }
}

#[cfg(target_arch = "aarch64")]
#[inline(always)]
fn read() -> usize {
    let v: u64;
    // SAFETY: reads FPCR.
    unsafe {
        std::arch::asm!("mrs {}, fpcr", out(reg) v, options(nostack, preserves_flags));
    }
    v as usize
}

#[cfg(target_arch = "aarch64")]
#[inline(always)]
fn write(v: usize) {
    // SAFETY: writes FPCR with a value read from it, mode bits changed. Not `nomem`:
    // floating-point work must not move across it.
    unsafe {
        std::arch::asm!("msr fpcr, {}", in(reg) v as u64, options(nostack, preserves_flags));
    }
}

impl Ieee {
    /// Sets IEEE 754 default mode on this thread (only where it differs) until the guard
    /// is dropped.
    #[inline(always)]
    pub(crate) fn enter() -> Ieee {
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        {
            let v = read();
            if v & MODE_BITS != 0 {
                write(v & !MODE_BITS);
                return Ieee { saved: Some(v) };
            }
        }
        Ieee { saved: None }
    }
}

impl Drop for Ieee {
    #[inline(always)]
    fn drop(&mut self) {
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        if let Some(v) = self.saved {
            write(v);
        }
    }
}

/// Runs `f` in IEEE 754 default mode (see [`Ieee`]).
#[inline(always)]
pub(crate) fn ieee<R>(f: impl FnOnce() -> R) -> R {
    let _g = Ieee::enter();
    f()
}

/// For tests (this crate's and the integration tests'): sets this thread's mode bits
/// to flush-to-zero, denormals-are-zero and round toward zero (x86-64: MXCSR; AArch64:
/// FPCR FZ and round toward zero) and returns the previous value for [`restore_mode`].
/// `None` where pwpa does not manage the mode.
#[doc(hidden)]
pub fn set_nonstandard_mode() -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        let v = read();
        write(v | MODE_BITS);
        Some(v)
    }
    #[cfg(target_arch = "aarch64")]
    {
        let v = read();
        write((v & !MODE_BITS) | (1 << 24) | (3 << 22));
        Some(v)
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        None
    }
}

/// For tests: this thread's mode bits (see [`set_nonstandard_mode`]).
#[doc(hidden)]
pub fn mode_bits() -> Option<usize> {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    {
        Some(read() & MODE_BITS)
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        None
    }
}

/// For tests: puts back a value returned by [`set_nonstandard_mode`].
#[doc(hidden)]
pub fn restore_mode(v: usize) {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    write(v);
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let _ = v;
}
