// Programmatic dependent launch (sm_90 and later; prepended to pwpa.cu and lut.cu).
//
// The host launches the kernels with programmatic stream serialisation allowed (CUDA 12.3+
// drivers, compute capability 9.0+; PWPA_CUDA_PDL=0 turns it off). Such a launch may start
// before the previous kernel on its stream has finished: a kernel calls pdl_wait() before
// its first access to memory that a previous kernel may write or read (x, y, dy, the ticket
// counter); only the uploaded tables (written by the host before any launch that uses
// them) are read before it, so their staging overlaps the previous kernel's end.
// pdl_launch_dependents() lets the next such launch start as soon as SMs are free; that
// launch still waits (its pdl_wait) for this whole grid to complete and its writes to be
// visible. Launched without the attribute, both are no-ops.
__device__ __forceinline__ void pdl_launch_dependents() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_wait() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
