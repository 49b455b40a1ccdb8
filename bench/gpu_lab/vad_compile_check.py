"""value_and_derivative on CUDA: eager (the fused kernel) against torch.compile(fullgraph=True)
(the ops, session 37) and torch.func.vmap, bit for bit, for f32/bf16/f16 inputs and the
derivative in the input's dtype and in f32. Prints one line per case; exits 1 on a mismatch."""
import sys

import torch

import pwpa
import pwpa.torch as pt

t = pwpa.fit("gelu", exact="bf16", exp_tails=True)
bad = 0
for dtype in (torch.float32, torch.bfloat16, torch.float16):
    x = (torch.randn(1 << 20, device="cuda") * 4).to(dtype)
    for ddt in (None, torch.float32):
        want = pt.value_and_derivative(x, t, ddt)
        got = torch.compile(lambda v: pt.value_and_derivative(v, t, ddt), fullgraph=True)(x)
        vm = torch.func.vmap(lambda v: pt.value_and_derivative(v, t, ddt)[1])(x.view(16, -1)).view(-1)
        ok = torch.equal(got[0], want[0]) and torch.equal(got[1], want[1]) and torch.equal(vm, want[1])
        bad += not ok
        print(dtype, ddt, "derivative dtype", want[1].dtype, "equal" if ok else "DIFFERENT")
sys.exit(1 if bad else 0)
