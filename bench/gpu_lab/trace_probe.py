"""The launch shape of the 16-bit backward pass for catalogue tables (session 32): run with
PWPA_CUDA_TRACE=1, which prints block, shared memory and blocks per multiprocessor on stderr.
Usage: python trace_probe.py NAME ... (tables from .gpu-tables/)."""
import torch, pwpa, pwpa.torch  # noqa
import sys
for n in sys.argv[1:]:
    t = pwpa.Table.load(f".gpu-tables/{n}.json")
    for dt in (torch.float16, torch.bfloat16):
        x = (torch.randn(1 << 24) * 4).to("cuda", dt)
        g = torch.randn(1 << 24).to("cuda", dt)
        print(f"--- {n} {dt}", file=sys.stderr, flush=True)
        torch.ops.pwpa.eval_backward(g, x, t.handle)
        torch.cuda.synchronize()
