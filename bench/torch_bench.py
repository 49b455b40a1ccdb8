#!/usr/bin/env python3
"""pwpa vs PyTorch: every catalogue function (plus composites) x f32/bf16/f16.

For each function and dtype, in one run on one device: pwpa (a bf16-exact table where
the fitter can make one, else a fixed 256x3 minimax fit, else a provisional numpy
least-squares table), PyTorch eager, torch.compile, and a copy of the same bytes
(``y.copy_(x)``: the bandwidth roof). Writes CSV + markdown to bench/results/.

pwpa is timed as ``table(x)``, returning a new tensor as eager and torch.compile do, so all
three write to a block from the same allocator. The out= columns time kernel against kernel:
``table(x, out=y)`` and PyTorch's own ATen out= kernel (``torch.ops.aten.<f>.out``, where one
exists) into the same preallocated y. On a CPU allocating the result can cost more than the
kernel (a fresh mapping's page faults), so there the out= columns are the kernels' speeds.

    python bench/torch_bench.py --device cuda            # N = 2^28
    python bench/torch_bench.py --device cpu --threads 2  # N = 2^24
    python bench/torch_bench.py --tables DIR              # use DIR/<name>.json tables
                                                          # (scripts/fit_bench_tables.sh DIR fits them)

Timings: median of --reps runs after warm-up (CUDA events on GPU, perf_counter on CPU).
On the GPU each timed run is --calls back-to-back calls between two events, divided by
--calls: the device time of the op in a stream of work, with each call's host-side
dispatch (Python, the custom op, the launch) overlapping the previous call's kernel, as
in a model's forward pass. So that the first call's dispatch overlaps work too, a
spin kernel (torch.cuda._sleep) of about twice the host time of the run's calls is
queued before the start event: the GPU is busy while the host records the event and
launches the calls, as it is inside a model, and the events time the kernels alone.
--host-latency leaves the GPU idle at the start event instead (the first call's host
time is then counted, divided by --calls); --calls 1 --host-latency times single calls,
host latency included. Host time per call is measured by bench/gpu_lab/call_overhead.py.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import math
import os
import platform
import statistics
import sys
import time


def _parse():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--n", type=int, default=None, help="elements (default 2^28 cuda, 2^24 cpu)")
    p.add_argument("--threads", type=int, default=2, help="CPU threads (torch and pwpa)")
    p.add_argument("--reps", type=int, default=None, help="timed repetitions (default 20 cuda, 5 cpu)")
    p.add_argument("--calls", type=int, default=5, help="back-to-back calls per timed GPU run (default 5)")
    p.add_argument(
        "--host-latency",
        action="store_true",
        help="GPU idle at each timed run's start event (counts the first call's host time); default: "
        "a spin kernel queued first keeps the GPU busy while the calls are launched",
    )
    p.add_argument("--functions", default=None, help="comma-separated subset")
    p.add_argument("--dtypes", default="f32,bf16,f16")
    p.add_argument(
        "--tables",
        default=None,
        help="directory of <name>.json tables to use instead of fitting (scripts/fit_bench_tables.sh: "
        ".gpu-tables, or --cpu for .cpu-tables, the shapes that run fastest on the CPU)",
    )
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    p.add_argument("--out", default=None, help="output stem (default bench/results/torch-<device>-<date>)")
    p.add_argument("--note", default="", help="a note for the markdown header")
    p.add_argument(
        "--backward",
        action="store_true",
        help="also time the backward pass (grad * f'(x)): pwpa's fused kernel, the unfused "
        "derivative-then-multiply it replaced, and PyTorch eager autograd",
    )
    return p.parse_args()


ARGS = _parse()
# pwpa's CPU path uses rayon: size its pool before pwpa is imported.
os.environ.setdefault("RAYON_NUM_THREADS", str(ARGS.threads))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import pwpa  # noqa: E402

# PyTorch counterparts of catalogue functions (name -> (torch fn, f64 reference)).
TORCH_FNS = {
    "gelu": lambda x: F.gelu(x),
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu,
    "swish": F.silu,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "exp": torch.exp,
    "exp2": torch.exp2,
    "softplus": F.softplus,
    "mish": F.mish,
    "selu": F.selu,
    "elu": F.elu,
    "celu": F.celu,
    "erf": torch.erf,
    "hardswish": F.hardswish,
    "hardsigmoid": F.hardsigmoid,
    "logsigmoid": F.logsigmoid,
    "log_sigmoid": F.logsigmoid,  # the catalogue's name
    "softsign": F.softsign,
    "tanhshrink": F.tanhshrink,
    "log1p": torch.log1p,
    "rsqrt": torch.rsqrt,
    "sqrt": torch.sqrt,
    "log": torch.log,
    "reciprocal": torch.reciprocal,
    "sin": torch.sin,
    "cos": torch.cos,
    "quick_gelu": lambda x: x * torch.sigmoid(1.702 * x),
}

from aten_out import TORCH_OUT_FNS  # noqa: E402  (bench/, the script's directory)
from gpu_timing import median_us  # noqa: E402  (bench/)

# Composites written the way users write them (the fusion case).
COMPOSITES = {
    # name: (pwpa spec, torch fn)
    "mish_composite": ("mish", lambda x: x * torch.tanh(F.softplus(x))),
    "user_expr": ("x*sigmoid(1.702*x)", lambda x: x * torch.sigmoid(1.702 * x)),
}

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


def f64_ref(fn):
    return lambda v: fn(torch.from_numpy(np.asarray(v, np.float64))).numpy()


def get_table(name, spec):
    """(table, how) — loaded from --tables, a bf16-exact fit, or a minimax 256x3 fit."""
    if ARGS.tables:
        path = os.path.join(ARGS.tables, f"{name}.json")
        if os.path.exists(path):
            return pwpa.load(path), f"loaded {path}"
    try:
        t = pwpa.fit(spec, exact="bf16")
        return t, "bf16-exact fit"
    except pwpa.PwpaError as e:
        exact_err = str(e)
    try:
        t = pwpa.fit(spec, partitions=256, degree=3)
        return t, "minimax 256x3 (no bf16-exact fit: " + exact_err[:80] + ")"
    except pwpa.PwpaError as e:
        return None, f"no table: {e}"


def _sleep_cycles_per_us():
    """Clock cycles of torch.cuda._sleep per microsecond on this GPU (measured once)."""
    global _CYC_PER_US
    if _CYC_PER_US is None:
        torch.cuda._sleep(1000)
        torch.cuda.synchronize()
        rates = []
        for _ in range(3):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            torch.cuda._sleep(2_000_000)
            e.record()
            e.synchronize()
            rates.append(2_000_000 / (s.elapsed_time(e) * 1e3))
        _CYC_PER_US = statistics.median(rates)
    return _CYC_PER_US


_CYC_PER_US = None


def timer(device):
    if device == "cuda":

        def run(fn, reps):
            fn()
            torch.cuda.synchronize()
            calls = max(1, ARGS.calls)
            lead = 0
            if not ARGS.host_latency:
                # The host time of one run's calls (launches only: the GPU is idle here, so
                # nothing waits), doubled, plus 100 us for the event records; at least 2 ms,
                # a margin for dispatch paths slower while the GPU is busy (with no lead at
                # all `table(x)` read 361.8 us per 16-bit call against 356.0 with one;
                # bench/gpu_lab/alloc_gap.py, session 27).
                t0 = time.perf_counter()
                for _ in range(calls):
                    fn()
                host_us = (time.perf_counter() - t0) * 1e6
                torch.cuda.synchronize()
                lead = int(max(2.0 * host_us + 100.0, 2000.0) * _sleep_cycles_per_us())
            return median_us(fn, reps=reps, calls=calls, lead=lead, warm=False) / 1e6

    else:

        def run(fn, reps):
            fn()
            times = []
            for _ in range(reps):
                t0 = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t0)
            return statistics.median(times)

    return run


def main():
    device = ARGS.device
    if device == "cuda" and not torch.cuda.is_available():
        sys.exit("no CUDA device: use --device cpu")
    torch.set_num_threads(ARGS.threads)
    n = ARGS.n or (1 << 28 if device == "cuda" else 1 << 24)
    reps = ARGS.reps or (20 if device == "cuda" else 5)
    run = timer(device)
    dev_name = torch.cuda.get_device_name() if device == "cuda" else (platform.processor() or platform.machine())
    if device == "cpu":
        try:
            with open("/proc/cpuinfo") as fh:
                for line in fh:
                    if line.startswith("model name"):
                        dev_name = line.split(":", 1)[1].strip()
                        break
        except OSError:
            pass
        dev_name += f", {ARGS.threads} threads"

    cat = {f["name"]: f for f in pwpa.functions()}
    jobs = []  # (name, spec, torch fn or None, f64 ref or None)
    for name in cat:
        tf = TORCH_FNS.get(name)
        jobs.append((name, name, tf, f64_ref(tf) if tf else None))
    for name, (spec, tf) in COMPOSITES.items():
        jobs.append((name, spec, tf, f64_ref(tf)))
    if ARGS.functions:
        keep = set(ARGS.functions.split(","))
        jobs = [j for j in jobs if j[0] in keep]

    rows = []
    g = torch.Generator(device="cpu").manual_seed(0)
    x32 = (torch.randn(n, generator=g) * 4).to(device)
    for name, spec, tf, f64 in jobs:
        table, how = get_table(name, spec)
        print(f"[{name}] table: {how}" + (f" P={table.partitions} D={table.degree}" if table else ""), flush=True)
        for dname in ARGS.dtypes.split(","):
            dt = DTYPES[dname]
            x = x32.to(dt)
            y = torch.empty_like(x)
            nbytes = 2 * n * x.element_size()
            rec = {
                "function": name, "dtype": dname, "n": n, "device": device, "table": how.split(" (")[0],
                "note": how,
                "P": table.partitions if table else "", "D": table.degree if table else "",
            }
            t_copy = run(lambda: y.copy_(x), reps)
            rec["copy_ms"] = t_copy * 1e3
            if table is not None:
                # Like eager and torch.compile, pwpa returns a new tensor: all three write to
                # a block from the same allocator, and the output's placement moves a GPU call
                # by ~1 us (bench/gpu_lab/alloc_probe.py). Into a preallocated y: pwpa_out_ms.
                t_p = run(lambda: table(x), reps)
                rec["pwpa_ms"] = t_p * 1e3
                rec["pwpa_out_ms"] = run(lambda: table(x, out=y), reps) * 1e3
                # accuracy on a subsample against the f64 reference
                if f64 is not None:
                    xs = x[:: max(1, n // 65536)]
                    got = table(xs).double().cpu().numpy()
                    want = f64(xs.double().cpu().numpy())
                    fin = np.isfinite(want)
                    rec["pwpa_max_abs_err"] = float(np.max(np.abs(got[fin] - want[fin]))) if fin.any() else ""
            if tf is not None:
                rec["eager_ms"] = run(lambda: tf(x), reps) * 1e3
                tfo = TORCH_OUT_FNS.get(name)
                if tfo is not None:
                    z = torch.empty_like(x)
                    tfo(x, z)
                    w = tf(x)
                    if not bool(((z == w) | (z.isnan() & w.isnan())).all()):  # the same function
                        sys.exit(f"{name}: the aten out= variant differs from the eager function")
                    del z, w
                    rec["eager_out_ms"] = run(lambda: tfo(x, y), reps) * 1e3
                if not ARGS.no_compile:
                    torch._dynamo.reset()
                    cf = torch.compile(tf, fullgraph=True, dynamic=False)
                    try:
                        rec["compile_ms"] = run(lambda: cf(x), reps) * 1e3
                    except Exception as e:  # record, do not hide
                        rec["compile_ms"] = ""
                        rec["note"] += f"; torch.compile failed: {type(e).__name__}"
            if ARGS.backward:
                backward_times(rec, table, tf, x, run, reps)
            # The copy writes into a preallocated y: pwpa's ratio to it comes from its out=
            # call, which does too (eager and compile only allocate).
            like_copy = {"pwpa": rec.get("pwpa_out_ms")}
            for k in ("pwpa", "eager", "compile"):
                v = rec.get(f"{k}_ms")
                if isinstance(v, float):
                    rec[f"{k}_GBps"] = nbytes / (v / 1e3) / 1e9
                    rec[f"{k}_vs_copy"] = rec["copy_ms"] / (like_copy.get(k) or v)
            if isinstance(rec.get("pwpa_ms"), float):
                for k in ("eager", "compile"):
                    if isinstance(rec.get(f"{k}_ms"), float):
                        rec[f"speedup_vs_{k}"] = rec[f"{k}_ms"] / rec["pwpa_ms"]
            if isinstance(rec.get("pwpa_out_ms"), float) and isinstance(rec.get("eager_out_ms"), float):
                rec["speedup_out_vs_eager_out"] = rec["eager_out_ms"] / rec["pwpa_out_ms"]
            rows.append(rec)
            print(
                "  {dtype:4s} copy {copy_ms:8.3f} ms | pwpa {p} | eager {e} | compile {c} | out=: pwpa {po} eager {eo}".format(
                    dtype=dname,
                    copy_ms=rec["copy_ms"],
                    p=_fmt(rec.get("pwpa_ms")),
                    po=_fmt(rec.get("pwpa_out_ms")),
                    eo=_fmt(rec.get("eager_out_ms")),
                    e=_fmt(rec.get("eager_ms")),
                    c=_fmt(rec.get("compile_ms")),
                ),
                flush=True,
            )
            del x, y
    write(rows, device, dev_name, n, reps)


def backward_times(rec, table, tf, x, run, reps):
    """Backward pass timings: it reads x and the upstream gradient and writes the input
    gradient, 1.5x the bytes of the copy, so its roof is 1.5 * copy time."""
    import pwpa.torch as pt  # noqa: F401  (registers the ops)

    gy = torch.randn(x.shape, generator=torch.Generator().manual_seed(1)).to(x.device, x.dtype)
    rec["bwd_roof_ms"] = 1.5 * rec["copy_ms"]
    if table is not None:
        h = table.handle
        rec["bwd_pwpa_ms"] = run(lambda: torch.ops.pwpa.eval_backward(gy, x, h), reps) * 1e3
        d = table.derivative()
        dydx = torch.empty(x.shape, dtype=torch.float32, device=x.device)

        def unfused():
            d(x, out=dydx)
            return (gy.to(torch.float32) * dydx).to(gy.dtype)

        rec["bwd_unfused_ms"] = run(unfused, reps) * 1e3
    if tf is not None:
        xg = x.detach().requires_grad_()
        yg = tf(xg)
        rec["bwd_eager_ms"] = run(lambda: torch.autograd.grad(yg, xg, gy, retain_graph=True), reps) * 1e3
        del yg, xg
    for k in ("pwpa", "unfused", "eager"):
        v = rec.get(f"bwd_{k}_ms")
        if isinstance(v, float):
            rec[f"bwd_{k}_vs_roof"] = rec["bwd_roof_ms"] / v
    if isinstance(rec.get("bwd_pwpa_ms"), float) and isinstance(rec.get("bwd_eager_ms"), float):
        rec["bwd_speedup_vs_eager"] = rec["bwd_eager_ms"] / rec["bwd_pwpa_ms"]
    print(
        "  {d:4s} backward: pwpa {p} | unfused {u} | eager {e}".format(
            d=rec["dtype"],
            p=_fmt(rec.get("bwd_pwpa_ms")),
            u=_fmt(rec.get("bwd_unfused_ms")),
            e=_fmt(rec.get("bwd_eager_ms")),
        ),
        flush=True,
    )


def _fmt(v):
    return f"{v:8.3f} ms" if isinstance(v, float) else "       -   "


COLS = [
    "function", "dtype", "n", "device", "table", "P", "D", "copy_ms", "pwpa_ms", "pwpa_out_ms", "eager_ms", "eager_out_ms", "compile_ms",
    "pwpa_vs_copy", "eager_vs_copy", "compile_vs_copy", "speedup_vs_eager", "speedup_vs_compile", "speedup_out_vs_eager_out",
    "pwpa_GBps", "eager_GBps", "compile_GBps", "pwpa_max_abs_err",
    "bwd_roof_ms", "bwd_pwpa_ms", "bwd_unfused_ms", "bwd_eager_ms", "bwd_pwpa_vs_roof", "bwd_unfused_vs_roof",
    "bwd_eager_vs_roof", "bwd_speedup_vs_eager", "note",
]


def write(rows, device, dev_name, n, reps):
    import csv

    date = _dt.datetime.now(_dt.timezone.utc)
    stem = ARGS.out or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "results", f"torch-{device}-{date:%Y%m%d}"
    )
    os.makedirs(os.path.dirname(stem), exist_ok=True)
    with open(stem + ".csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})
    cmd = "python " + " ".join([os.path.relpath(__file__)] + sys.argv[1:])
    lines = [
        f"# pwpa vs PyTorch ({device})",
        "",
        f"- date: {date:%Y-%m-%d %H:%M} UTC",
        f"- device: {dev_name}",
        f"- command: `{cmd}`",
        f"- N = {n} (2^{int(math.log2(n))}), median of {reps} runs"
        + (
            f" of {max(1, ARGS.calls)} back-to-back calls each (time per call; "
            + (
                "GPU idle at the start event: the first call's host time counted)"
                if ARGS.host_latency
                else "a spin kernel queued first: kernel time, host dispatch overlapped)"
            )
            if device == "cuda"
            else ""
        )
        + f"; torch {torch.__version__}, pwpa {pwpa.__version__}",
        "- copy = `y.copy_(x)` of the same bytes; `x/copy` = copy time / x time (1.0 = at the bandwidth roof;"
        " pwpa/copy from pwpa out=, which like the copy writes into a preallocated y);"
        " speedup = PyTorch time / pwpa time",
        "- pwpa = `table(x)`, a new output tensor as eager and torch.compile return; out= columns: pwpa"
        " `table(x, out=y)` and PyTorch's aten out= kernel into the same preallocated y (kernel against"
        " kernel; `-` where ATen has no out= variant)",
    ]
    if device == "cpu":
        lines.append(
            "- CPU outputs: pwpa's `table(x)` takes outputs of 4 MiB or more from its CPU output cache"
            " (memory of earlier outputs, already mapped; `pwpa.torch.cpu_output_cache`), so repeated"
            " calls do not fault fresh pages; eager and torch.compile allocate through PyTorch's CPU"
            " allocator on every call (at this size mostly fresh pages, whose faults count in their times)"
        )
    if ARGS.note:
        lines.append(f"- note: {ARGS.note}")
    for how in sorted({r["note"].split(";")[0] for r in rows}):
        lines.append(f"- table source seen: {how}")
    lines += [
        "",
        "| function | dtype | table | copy ms | pwpa ms | eager ms | compile ms | pwpa out= ms | eager out= ms | pwpa/copy | speedup vs eager | speedup vs compile | out= speedup | max abs err |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def f(v, spec=".3f"):
        return format(v, spec) if isinstance(v, float) else "-"

    for r in rows:
        lines.append(
            f"| {r['function']} | {r['dtype']} | {r['table']} | {f(r['copy_ms'])} | {f(r.get('pwpa_ms'))} | "
            f"{f(r.get('eager_ms'))} | {f(r.get('compile_ms'))} | {f(r.get('pwpa_out_ms'))} | "
            f"{f(r.get('eager_out_ms'))} | {f(r.get('pwpa_vs_copy'), '.2f')} | "
            f"{f(r.get('speedup_vs_eager'), '.2f')} | {f(r.get('speedup_vs_compile'), '.2f')} | "
            f"{f(r.get('speedup_out_vs_eager_out'), '.2f')} | "
            f"{f(r.get('pwpa_max_abs_err'), '.2e')} |"
        )
    if any("bwd_roof_ms" in r for r in rows):
        lines += [
            "",
            "## Backward pass (grad * f'(x))",
            "",
            "Reads x and the upstream gradient, writes the input gradient: roof = 1.5 x copy time. "
            "pwpa = the fused kernel behind autograd (`torch.ops.pwpa.eval_backward`); unfused = the "
            "derivative table into an f32 buffer, then the multiply and cast in PyTorch (what autograd ran "
            "before); eager = `torch.autograd.grad` through PyTorch's own function.",
            "",
            "| function | dtype | roof ms | pwpa ms | unfused ms | eager ms | pwpa/roof | unfused/roof | eager/roof | speedup vs eager |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in rows:
            if "bwd_roof_ms" not in r:
                continue
            lines.append(
                f"| {r['function']} | {r['dtype']} | {f(r['bwd_roof_ms'])} | {f(r.get('bwd_pwpa_ms'))} | "
                f"{f(r.get('bwd_unfused_ms'))} | {f(r.get('bwd_eager_ms'))} | {f(r.get('bwd_pwpa_vs_roof'), '.2f')} | "
                f"{f(r.get('bwd_unfused_vs_roof'), '.2f')} | {f(r.get('bwd_eager_vs_roof'), '.2f')} | "
                f"{f(r.get('bwd_speedup_vs_eager'), '.2f')} |"
            )
    with open(stem + ".md", "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print(f"wrote {stem}.csv and {stem}.md")


if __name__ == "__main__":
    main()
