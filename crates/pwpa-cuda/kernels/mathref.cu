// Plain-CUDA kernels of common non-linearities, for `pwpa bench`: CUDA's math
// library (erff, tanhf, expf, log1pf) and its fast intrinsics (__expf,
// tanh.approx.f32). Host-prepended: IO_T (0 f32, 1 f16, 2 bf16).
// 8 elements per thread per iteration with 16-byte accesses where aligned.

typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

__device__ __forceinline__ float h2f(u16 h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ __forceinline__ u16 f2h(float f) { u16 h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
__device__ __forceinline__ float b2f(u16 h) { return __uint_as_float(((u32)h) << 16); }
__device__ __forceinline__ u16 f2b(float f) {
#if __CUDA_ARCH__ >= 800
    u16 h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h;
#else
    u32 u = __float_as_uint(f); return (u16)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
#endif
}
#if IO_T == 0
typedef float io_t;
__device__ __forceinline__ float ld(io_t v) { return v; }
__device__ __forceinline__ io_t st(float v) { return v; }
#elif IO_T == 1
typedef u16 io_t;
__device__ __forceinline__ float ld(io_t v) { return h2f(v); }
__device__ __forceinline__ io_t st(float v) { return f2h(v); }
#else
typedef u16 io_t;
__device__ __forceinline__ float ld(io_t v) { return b2f(v); }
__device__ __forceinline__ io_t st(float v) { return f2b(v); }
#endif

__device__ __forceinline__ float tanh_approx(float x) { float r; asm("tanh.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }

__device__ __forceinline__ float f_gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }
__device__ __forceinline__ float f_gelu_tanh(float x) { return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x))); }
__device__ __forceinline__ float f_gelu_tanh_fast(float x) { return 0.5f * x * (1.0f + tanh_approx(0.79788456080286536f * (x + 0.044715f * x * x * x))); }
__device__ __forceinline__ float f_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ __forceinline__ float f_sigmoid_fast(float x) { return __fdividef(1.0f, 1.0f + __expf(-x)); }
__device__ __forceinline__ float f_silu(float x) { return x / (1.0f + expf(-x)); }
__device__ __forceinline__ float f_silu_fast(float x) { return __fdividef(x, 1.0f + __expf(-x)); }
__device__ __forceinline__ float f_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ float f_tanh_fast(float x) { return tanh_approx(x); }
__device__ __forceinline__ float f_exp(float x) { return expf(x); }
__device__ __forceinline__ float f_exp_fast(float x) { return __expf(x); }
__device__ __forceinline__ float f_softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }
__device__ __forceinline__ float f_softplus_fast(float x) { return x > 20.0f ? x : __logf(1.0f + __expf(x)); }
__device__ __forceinline__ float f_mish(float x) { return x * tanhf(f_softplus(x)); }
__device__ __forceinline__ float f_mish_fast(float x) { return x * tanh_approx(f_softplus_fast(x)); }

#define ELEMENTWISE(NAME, F)                                                              \
extern "C" __global__ void NAME(const io_t* x, io_t* y, u64 n) {                          \
    const u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x;                           \
    const u64 stride = (u64)gridDim.x * blockDim.x;                                       \
    const bool vec = ((((u64)x) | ((u64)y)) & 15ull) == 0;                                \
    const u64 nv = vec ? n / (16 / sizeof(io_t)) : 0;                                     \
    const int per = 16 / sizeof(io_t);                                                    \
    for (u64 c = tid; c < nv; c += stride) {                                              \
        uint4 v = reinterpret_cast<const uint4*>(x)[c];                                   \
        io_t* e = reinterpret_cast<io_t*>(&v);                                            \
        _Pragma("unroll") for (int k = 0; k < per; ++k) e[k] = st(F(ld(e[k])));         \
        reinterpret_cast<uint4*>(y)[c] = v;                                               \
    }                                                                                     \
    for (u64 k = nv * per + tid; k < n; k += stride) y[k] = st(F(ld(x[k])));             \
}

ELEMENTWISE(ref_gelu, f_gelu)
ELEMENTWISE(ref_gelu_tanh, f_gelu_tanh)
ELEMENTWISE(ref_gelu_tanh_fast, f_gelu_tanh_fast)
ELEMENTWISE(ref_sigmoid, f_sigmoid)
ELEMENTWISE(ref_sigmoid_fast, f_sigmoid_fast)
ELEMENTWISE(ref_silu, f_silu)
ELEMENTWISE(ref_silu_fast, f_silu_fast)
ELEMENTWISE(ref_tanh, f_tanh)
ELEMENTWISE(ref_tanh_fast, f_tanh_fast)
ELEMENTWISE(ref_exp, f_exp)
ELEMENTWISE(ref_exp_fast, f_exp_fast)
ELEMENTWISE(ref_softplus, f_softplus)
ELEMENTWISE(ref_softplus_fast, f_softplus_fast)
ELEMENTWISE(ref_mish, f_mish)
ELEMENTWISE(ref_mish_fast, f_mish_fast)
