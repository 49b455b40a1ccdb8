#!/usr/bin/env python3
"""Session 19 lab: fixed cost per launch (start-up and tail) of pwpa's kernels against
PyTorch eager and y.copy_(x): kernel time per call at several N (a spin kernel queued
first, 20 back-to-back calls per timed run, median of 7), and the intercept a of
t = a + b N fitted over the two largest N. Tuning variables (PWPA_CUDA_*) apply per process.

    python bench/gpu_lab/fixed_cost.py --tables .gpu-tables --funcs tanh,gelu --dtypes f32,bf16
"""
import argparse
import statistics

import torch
import torch.nn.functional as F

import pwpa

ap = argparse.ArgumentParser()
ap.add_argument("--tables", default=".gpu-tables")
ap.add_argument("--funcs", default="tanh,erf,gelu")
ap.add_argument("--dtypes", default="f32,bf16")
ap.add_argument("--logn", default="18,20,22,24,26,28")
ap.add_argument("--label", default="")
a = ap.parse_args()
EAGER = {"tanh": torch.tanh, "erf": torch.erf, "gelu": F.gelu, "sigmoid": torch.sigmoid, "exp": torch.exp, "exp2": torch.exp2,
         "silu": F.silu, "hardswish": F.hardswish, "softplus": F.softplus, "log_sigmoid": F.logsigmoid,
         "mish": F.mish, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "elu": F.elu, "selu": F.selu}
DT = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
CALLS = 20

s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
torch.cuda._sleep(1000)
s.record(); torch.cuda._sleep(2_000_000); e.record(); e.synchronize()
cyc_per_us = 2_000_000 / (s.elapsed_time(e) * 1e3)


def t_us(fn):
    fn(); torch.cuda.synchronize()
    times = []
    for _ in range(7):
        torch.cuda._sleep(int(1500 * cyc_per_us))
        s.record()
        for _ in range(CALLS):
            fn()
        e.record(); e.synchronize()
        times.append(s.elapsed_time(e) * 1e3 / CALLS)
    return statistics.median(times)


for f in a.funcs.split(","):
    tab = pwpa.load(f"{a.tables}/{f}.json")
    for dn in a.dtypes.split(","):
        res = {}
        for ln in [int(v) for v in a.logn.split(",")]:
            n = 1 << ln
            x = (torch.randn(n, device="cuda") * 4).to(DT[dn])
            y = torch.empty_like(x)
            res[ln] = (t_us(lambda: y.copy_(x)), t_us(lambda: tab(x, out=y)), t_us(lambda: EAGER[f](x)) if f in EAGER else float("nan"))
            del x, y
        ns = sorted(res)
        for ln in ns:
            c, p, g = res[ln]
            print(f"{a.label} {f} {dn} 2^{ln}: copy {c:8.2f} us  pwpa {p:8.2f}  eager {g:8.2f}  (pwpa-copy {p - c:+6.2f}, pwpa-eager {p - g:+6.2f})")
        l1, l2 = ns[-2], ns[-1]
        n1, n2 = 1 << l1, 1 << l2
        for k, name in enumerate(["copy", "pwpa", "eager"]):
            b = (res[l2][k] - res[l1][k]) / (n2 - n1)
            print(f"{a.label} {f} {dn} {name}: intercept {res[l2][k] - b * n2:6.2f} us, {1e3 / b / 1e9 * 1e3 if b > 0 else 0:.3f} Gelem/ms")
