#!/usr/bin/env python3
"""Compile pwpa's kernels locally (no GPU): NVRTC -> PTX -> ptxas -v, for register, spill and
shared-memory reports and SASS. Needs libnvrtc and ptxas, e.g. from the pip wheels
nvidia-cuda-nvrtc-cu12 and nvidia-cuda-nvcc-cu12 (set NVRTC=/path/libnvrtc.so.12, PTXAS=/path/ptxas).

usage: ptxinfo.py pwpa.cu|lut.cu KEY=VAL ... [--sass]
Defaults mirror KernelSpec::source for an f32 uniform D=3 table."""
import ctypes, os, subprocess, sys, tempfile

here = os.path.dirname(os.path.abspath(__file__))
kern = os.path.join(here, "..", "..", "crates", "pwpa-cuda", "kernels")
args = [a for a in sys.argv[1:] if not a.startswith("--")]
src_name = args[0]
defs = dict(IN_T=0, OUT_T=0, MINB=1, DEG=3, KIND=0, LT=0, RT=0, LXD=1, RXD=1, SMEM_REC=1, SMEM_IDX=0,
            UNROLL=4, BLOCK=256, REPL=8, ONESTEP=0, CREPL=1, GRID_ORD=0, FUSED=0, DEG2=0, SL2=1, S2=1, LT2=0, RT2=0, LXD2=1, RXD2=1)
for a in args[1:]:
    k, v = a.split("=")
    defs[k] = int(v)
d = defs["DEG"]
sl = (d + 2 + 3) // 4
defs.setdefault("SL", sl)
defs.setdefault("S", sl + 1 if sl % 2 == 0 and defs["REPL"] < 8 else sl)
if src_name == "lut.cu":
    defs = {"BLOCK": defs.get("BLOCK", 1024), "UNROLL": defs["UNROLL"]}
src = "".join(f"#define {k} {v}\n" for k, v in defs.items()) + open(os.path.join(kern, src_name)).read()

nv = ctypes.CDLL(os.environ.get("NVRTC", "/tmp/cudatools/lib/python3.11/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"))
prog = ctypes.c_void_p()
assert nv.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"k.cu", 0, None, None) == 0
opts = [b"--gpu-architecture=compute_90", b"--fmad=false", b"--std=c++17"]
arr = (ctypes.c_char_p * len(opts))(*opts)
r = nv.nvrtcCompileProgram(prog, len(opts), arr)
n = ctypes.c_size_t()
nv.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
log = ctypes.create_string_buffer(n.value)
nv.nvrtcGetProgramLog(prog, log)
if r != 0:
    print(log.value.decode()); sys.exit(1)
nv.nvrtcGetPTXSize(prog, ctypes.byref(n))
ptx = ctypes.create_string_buffer(n.value)
nv.nvrtcGetPTX(prog, ptx)
with tempfile.TemporaryDirectory() as t:
    p = os.path.join(t, "k.ptx"); open(p, "wb").write(ptx.value)
    ptxas = os.environ.get("PTXAS", "/tmp/cudatools/lib/python3.11/site-packages/nvidia/cuda_nvcc/bin/ptxas")
    out = subprocess.run([ptxas, "-arch=sm_90", "-v", "-O3", p, "-o", os.path.join(t, "k.cubin")], capture_output=True, text=True)
    print(out.stderr.strip())
    if "--ptx" in sys.argv:
        print(ptx.value.decode())
    if "--sass" in sys.argv:
        nvd = os.environ.get("NVDISASM", "nvdisasm")
        print(subprocess.run([nvd, "-c", os.path.join(t, "k.cubin")], capture_output=True, text=True).stdout)
