"""PyTorch's own kernels writing into a preallocated y (the aten out= variants behind the
catalogue functions), timed beside pwpa's out= call: kernel against kernel, same output buffer.
Allocating a result costs more than the kernel on a CPU (page faults of a fresh mapping: 2^24
f32 silu 31.6 ms against 6.7 ms into y on the dev VM, session 27). Used by torch_bench.py and
cpu_lab/table_sets.py."""
import torch

_A = torch.ops.aten
TORCH_OUT_FNS = {
    "gelu": lambda x, y: _A.gelu.out(x, out=y),
    "gelu_tanh": lambda x, y: _A.gelu.out(x, approximate="tanh", out=y),
    "silu": lambda x, y: _A.silu.out(x, out=y),
    "sigmoid": lambda x, y: _A.sigmoid.out(x, out=y),
    "tanh": lambda x, y: _A.tanh.out(x, out=y),
    "exp": lambda x, y: _A.exp.out(x, out=y),
    "exp2": lambda x, y: _A.exp2.out(x, out=y),
    "softplus": lambda x, y: _A.softplus.out(x, 1.0, 20.0, out=y),
    "mish": lambda x, y: _A.mish.out(x, out=y),
    "elu": lambda x, y: _A.elu.out(x, 1.0, 1.0, 1.0, out=y),
    # F.selu is elu with these constants (ATen's selu).
    "selu": lambda x, y: _A.elu.out(x, 1.6732632423543772848170429916717, 1.0507009873554804934193349852946, 1.0, out=y),
    "erf": lambda x, y: _A.erf.out(x, out=y),
    "hardswish": lambda x, y: _A.hardswish.out(x, out=y),
    "rsqrt": lambda x, y: _A.rsqrt.out(x, out=y),
    "sqrt": lambda x, y: _A.sqrt.out(x, out=y),
    "log": lambda x, y: _A.log.out(x, out=y),
    "reciprocal": lambda x, y: _A.reciprocal.out(x, out=y),
}
