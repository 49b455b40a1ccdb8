"""Why do f16 rows of torch_bench run ~0.5 % slower than bf16 ones in the result-table
kernel (session 27)? Times the same table on bf16 and f16 tensors and on each dtype's
bit patterns reinterpreted as the other dtype (same kernel, other input patterns).
Run on the device with the CUDA wheel on PYTHONPATH: python3 f16_probe.py [table.json]"""
import sys

import torch

import pwpa

path = sys.argv[1] if len(sys.argv) > 1 else ".gpu-tables/gelu.json"
table = pwpa.load(path)
n = 1 << 28
g = torch.Generator(device="cpu").manual_seed(0)
x32 = (torch.randn(n, generator=g) * 4).cuda()
xb, xh = x32.to(torch.bfloat16), x32.to(torch.float16)
yb, yh = torch.empty_like(xb), torch.empty_like(xh)
cases = {
    "bf16 data, bf16 kernel": lambda: table(xb, out=yb),
    "f16 data, f16 kernel": lambda: table(xh, out=yh),
    "f16 bits, bf16 kernel": lambda: table(xh.view(torch.bfloat16), out=yb),
    "bf16 bits, f16 kernel": lambda: table(xb.view(torch.float16), out=yh),
    "copy bf16": lambda: yb.copy_(xb),
    "copy f16": lambda: yh.copy_(xh),
}
res = {k: [] for k in cases}
e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
for r in range(16):
    for k, f in cases.items():
        f()
        torch.cuda._sleep(2_000_000)
        e0.record()
        for _ in range(5):
            f()
        e1.record()
        torch.cuda.synchronize()
        if r:
            res[k].append(e0.elapsed_time(e1) / 5 * 1e3)
for k, v in res.items():
    v.sort()
    print(f"{k:24s} median {v[len(v) // 2]:7.2f} us  min {v[0]:7.2f}")
