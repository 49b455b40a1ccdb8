"""GPU timing shared by bench/torch_bench.py and the lab probes (bench/gpu_lab/): the median, over `reps` runs, of the time
per call of `calls` back-to-back calls of `fn`, in µs by CUDA events. Each run starts after
a spin kernel of `lead` cycles (0: none) so that the calls are queued while the GPU is busy
and the host's launch time is not counted. One untimed call first (`warm`)."""
import statistics

import torch


def median_us(fn, reps=9, calls=5, lead=4_000_000, warm=True):
    if warm:
        fn()
        torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if lead:
            torch.cuda._sleep(lead)
        s.record()
        for _ in range(calls):
            fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) * 1e3 / calls)
    return statistics.median(ts)
