"""Back-to-back timing of the 16-bit backward pass (torch.ops.pwpa.eval_backward) on
randn*4 and all-zero inputs (session 36: the x = 0 slowdown of exp2's derivative table,
which an isolated ncu launch does not show). Usage: x0_timing.py NAME:DTYPE ... [N_LOG2]"""
import sys

import torch

import pwpa
import pwpa.torch  # noqa: F401

n = 1 << int(sys.argv[-1]) if sys.argv[-1].isdigit() else 1 << 28
cases = [a for a in sys.argv[1:] if ":" in a]
for case in cases:
    name, dt = case.split(":")
    dt = getattr(torch, dt)
    t = pwpa.Table.load(f".gpu-tables/{name}.json")
    g = torch.randn(n, device="cuda").to(dt)
    for label in ("randn", "zero", "randn"):
        x = (torch.randn(n, device="cuda") * 4).to(dt)
        if label == "zero":
            x.zero_()
        for _ in range(3):
            torch.ops.pwpa.eval_backward(g, x, t.handle)
        ts = []
        for _ in range(15):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            torch.ops.pwpa.eval_backward(g, x, t.handle)
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b))
        ts.sort()
        # One launch between two sync points (no back-to-back overlap), then 10 back to back.
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(10):
            torch.ops.pwpa.eval_backward(g, x, t.handle)
        b.record()
        b.synchronize()
        print(f"{name} {str(dt)[6:]} N=2^{n.bit_length() - 1} {label}: single median {ts[7]:.4f} ms, "
              f"back-to-back {a.elapsed_time(b) / 10:.4f} ms")
