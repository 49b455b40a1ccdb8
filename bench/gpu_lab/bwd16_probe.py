"""The 16-bit backward pass, taken apart (session 31).

Times `torch.ops.pwpa.eval_backward` (the fused g * f'(x) kernel) at 2^28 for bf16 and f16
on
  - the benchmark tables named on the command line (from --tables),
  - a table whose derivative is one constant (`lin`: every lookup hits the same shared-memory
    word, so this is the streaming skeleton without bank conflicts),
  - the first named table on x = 0 everywhere (same address for every lane), and on the
    same inputs with |x| < 1/4 moved to 1/4 (`x>=1/4`: none of the smallest inputs,
    which a full f16 table may leave out and evaluate by their pieces),
beside PyTorch eager's backward of silu and tanh and a copy of the same bytes, all in one
process, interleaved over rounds. Tuning variables are read once per process: run it once
per setting (bwd16_ab.sh).
Usage: python bwd16_probe.py --tables DIR silu tanh ...
"""

import argparse
import statistics

import torch

import pwpa
import pwpa.torch  # noqa: F401  (registers the ops)

ap = argparse.ArgumentParser()
ap.add_argument("--tables", default=".gpu-tables")
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--n", type=int, default=1 << 28)
ap.add_argument("names", nargs="+")
args = ap.parse_args()

dev = "cuda"


def t_ms(fn, calls=5, reps=7):
    fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(2_000_000)
        s.record()
        for _ in range(calls):
            fn()
        e.record()
        e.synchronize()
        out.append(s.elapsed_time(e) / calls)
    return statistics.median(out)


tables = {n: pwpa.Table.load(f"{args.tables}/{n}.json") for n in args.names}
tables["lin"] = pwpa.fit("2*x+1", range=(-8.0, 8.0), partitions=4, degree=1)
gen = torch.Generator().manual_seed(0)
for dt in (torch.bfloat16, torch.float16):
    x = (torch.randn(args.n, generator=gen) * 4).to(dev, dt)
    gy = torch.randn(args.n, generator=gen).to(dev, dt)
    z = torch.zeros_like(x)
    xb = torch.where(x.abs() < 1 / 4, torch.full_like(x, 1 / 4), x)
    y = torch.empty_like(x)
    res = {}
    first = args.names[0]
    cases = {f"pwpa {n}": (lambda h=t.handle: torch.ops.pwpa.eval_backward(gy, x, h))
             for n, t in tables.items()}
    cases[f"pwpa {first} x=0"] = lambda h=tables[first].handle: torch.ops.pwpa.eval_backward(gy, z, h)
    cases[f"pwpa {first} x>=1/4"] = lambda h=tables[first].handle: torch.ops.pwpa.eval_backward(gy, xb, h)
    for name, f in (("silu", torch.nn.functional.silu), ("tanh", torch.tanh)):
        xg = x.detach().requires_grad_()
        yg = f(xg)
        cases[f"eager {name}"] = (lambda yg=yg, xg=xg: torch.autograd.grad(yg, xg, gy, retain_graph=True))
    cases["copy x1.5"] = lambda: y.copy_(x)
    for r in range(args.rounds):
        for k, fn in cases.items():
            v = t_ms(fn)
            res.setdefault(k, []).append(v * (1.5 if k.startswith("copy") else 1.0))
    print(f"--- {str(dt)[6:]}")
    for k, v in res.items():
        print(f"  {k:22s} {min(v):.4f}-{max(v):.4f} ms")
