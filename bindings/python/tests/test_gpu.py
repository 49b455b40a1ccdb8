"""CUDA evaluation (run on the device machine by bindings/python/run_gpu_tests.sh):
bit-identical to the CPU path, on PyTorch's current stream, with autograd and
torch.compile. Skipped when torch has no CUDA device; with PWPA_REQUIRE_CUDA=1 a
build without CUDA support fails instead of skipping."""

import os

import numpy as np
import pytest
import torch

import pwpa
import pwpa.ops as ops
import pwpa.torch as pt
from conftest import all_16bit

TORCH = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}

REQUIRE = os.environ.get("PWPA_REQUIRE_CUDA") == "1"


@pytest.fixture(autouse=True)
def _need_cuda():
    if not torch.cuda.is_available():
        if REQUIRE:
            pytest.fail("torch sees no CUDA device but PWPA_REQUIRE_CUDA=1")
        pytest.skip("no CUDA device visible to torch")
    if not pwpa.cuda_compiled():
        if REQUIRE:
            pytest.fail("this pwpa build has no CUDA support but PWPA_REQUIRE_CUDA=1")
        pytest.skip("this pwpa build has no CUDA support")


def bits(t):
    t = t.detach().cpu().contiguous()
    return t.view(torch.int32 if t.dtype == torch.float32 else torch.int16)


TABLES = ["sigmoid_table", "tanh_table_arbitrary", "random_table"]


@pytest.mark.parametrize("name", TABLES)
@pytest.mark.parametrize("src", ["f16", "bf16"])
@pytest.mark.parametrize("dst", ["f32", "f16", "bf16"])
def test_exhaustive_16bit_cuda_equals_cpu(request, name, src, dst):
    table = request.getfixturevalue(name)
    x = torch.from_numpy(all_16bit(src)).to(TORCH[src])
    y_cpu = torch.empty(x.shape, dtype=TORCH[dst])
    table(x, out=y_cpu)
    y = torch.empty(x.shape, dtype=TORCH[dst], device="cuda")
    table(x.cuda(), out=y)
    assert torch.equal(bits(y), bits(y_cpu))


@pytest.mark.parametrize("name", TABLES)
def test_f32_cuda_equals_cpu(request, name):
    table = request.getfixturevalue(name)
    g = torch.Generator().manual_seed(1)
    x = torch.cat([
        torch.randn(1 << 20, generator=g) * 10,
        torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e30, -1e-40]),
        torch.from_numpy(table.breakpoints.astype(np.float32)),
    ])
    assert torch.equal(bits(table(x.cuda())), bits(table(x)))


def test_large_and_noncontiguous_inputs(random_table):
    x = torch.randn(3, 1 << 20, device="cuda").t()  # non-contiguous
    y = random_table(x)
    assert y.shape == x.shape and y.device == x.device
    assert torch.equal(bits(y), bits(random_table(x.cpu())))
    out = torch.empty(x.shape[::-1], device="cuda").t()
    random_table(x, out=out)
    assert torch.equal(bits(out), bits(y))


def test_runs_on_the_current_stream(sigmoid_table):
    s = torch.cuda.Stream()
    x = torch.randn(1 << 22, device="cuda")
    want = sigmoid_table(x.cpu())
    with torch.cuda.stream(s):
        x2 = x * 1.0  # produced on s
        y = sigmoid_table(x2)
        z = y + 0  # consumes on s: would race if pwpa ran on another stream
    torch.cuda.synchronize()
    assert torch.equal(bits(z), bits(want))


def test_device_mismatch(random_table):
    with pytest.raises(pwpa.DeviceError, match="must be on the same device"):
        random_table(torch.zeros(4, device="cuda"), out=torch.zeros(4))
    with pytest.raises(pwpa.DeviceError, match="same device"):
        ops.pwpa(torch.zeros(4, device="cuda"), torch.zeros(2, 2), torch.linspace(0, 1, 3))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_autograd_on_cuda(random_table, dtype):
    x = torch.linspace(-4, 6, 10001).to(dtype)
    xc = x.cuda().requires_grad_()
    xh = x.clone().requires_grad_()
    random_table(xc).sum().backward()
    random_table(xh).sum().backward()
    assert torch.equal(bits(xc.grad), bits(xh.grad))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_fused_backward_on_cuda_matches_cpu(random_table, dtype):
    """One backward kernel (grad * f'(x)) on CUDA: the same bits as the CPU pass, for an
    odd length with a non-trivial upstream gradient, specials included."""
    x = torch.linspace(-6, 8, 100_003).to(dtype)
    x[::997] = float("nan")
    x[1::991] = float("inf")
    g = torch.randn(x.numel(), generator=torch.Generator().manual_seed(5)).to(dtype)
    xc = x.cuda().requires_grad_()
    xh = x.clone().requires_grad_()
    random_table(xc).backward(g.cuda())
    random_table(xh).backward(g)
    assert xc.grad.dtype == dtype
    assert torch.equal(bits(xc.grad), bits(xh.grad))


def test_compile_fullgraph_on_cuda(sigmoid_table):
    torch._dynamo.reset()
    m = torch.nn.Sequential(torch.nn.Linear(64, 64), pt.PwPA(sigmoid_table)).cuda()
    x = torch.randn(128, 64, device="cuda")
    f = torch.compile(m, fullgraph=True)
    assert torch.equal(f(x), m(x))
    torch.library.opcheck(torch.ops.pwpa.eval.default, (x, sigmoid_table.handle))


def test_seed_ops_on_cuda():
    P, D = 64, 3
    g = torch.Generator().manual_seed(3)
    coeffs = torch.randn(P, D + 1, generator=g)
    points = torch.linspace(-5, 5, P + 1)
    x = torch.rand(100000, generator=g) * 12 - 6
    for dtype in (torch.float32, torch.float16):
        cpu = ops.pwpa(x.to(dtype), coeffs, points)
        gpu = ops.pwpa(x.to(dtype).cuda(), coeffs.cuda(), points.cuda())
        soa = ops.pwpa(x.to(dtype).cuda(), ops.aos2soa(coeffs.cuda(), D), points.cuda(), AoS=False)
        assert torch.equal(bits(gpu), bits(cpu)) and torch.equal(bits(soa), bits(cpu))


def test_other_device_if_present(random_table):
    if torch.cuda.device_count() < 2:
        pytest.skip("one CUDA device")
    x = torch.randn(1 << 16, device="cuda:1")
    assert torch.equal(bits(random_table(x)), bits(random_table(x.cpu())))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_fused_value_and_derivative_equals_separate(random_table, dtype):
    x = (torch.randn(1 << 20) * 5).to(dtype)
    y, dy = pt.value_and_derivative(x.cuda(), random_table)
    assert torch.equal(bits(y), bits(random_table(x)))
    assert torch.equal(bits(dy), bits(random_table.derivative()(x)))


def test_layouts_second_derivatives_and_vmap_cuda_equal_cpu(random_table):
    """channels_last in, channels_last out (evaluated in memory order), the fused value and
    derivative on it, second derivatives and per-sample gradients: the same bits as on
    the CPU."""
    x = (torch.randn(2, 8, 16, 16, generator=torch.Generator().manual_seed(3)) * 4).contiguous(
        memory_format=torch.channels_last
    )
    y = random_table(x.cuda())
    assert y.stride() == x.stride()
    assert torch.equal(bits(y), bits(random_table(x)))
    y2, dy = pt.value_and_derivative(x.cuda(), random_table)
    assert torch.equal(bits(y2), bits(y))
    assert torch.equal(bits(dy), bits(random_table.derivative()(x)))

    def second(v):
        v = v.clone().requires_grad_()
        (g,) = torch.autograd.grad(random_table(v).sum(), v, create_graph=True)
        (h,) = torch.autograd.grad((g * g).sum(), v)
        return g, h

    for a, b in zip(second(x.cuda()), second(x)):
        assert torch.equal(bits(a), bits(b))
    per = torch.func.vmap(torch.func.grad(lambda v: random_table(v).sum()))
    assert torch.equal(bits(per(x.cuda().flatten(1))), bits(per(x.flatten(1))))


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_cuda_graph_capture_and_concurrent_replay(sigmoid_table, tanh_table_arbitrary, dtype):
    """pwpa launches captured into CUDA graphs replay correctly, also two graphs captured
    on one stream and replayed at the same time on two streams (each captured launch
    has its own tile counter)."""
    dt = TORCH[dtype]
    n = (1 << 22) + 5
    g0 = torch.Generator(device="cuda").manual_seed(3)
    xa = (torch.randn(n, device="cuda", generator=g0) * 6).to(dt)
    xb = (torch.randn(n, device="cuda", generator=g0) * 6).to(dt)
    ma, mb = pt.PwPA(sigmoid_table), pt.PwPA(tanh_table_arbitrary)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up (compiles, uploads) outside the capture
        ma(xa)
        mb(xb)
    torch.cuda.current_stream().wait_stream(side)
    ga, gb = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
    with torch.cuda.graph(ga):
        ya = ma(xa)
    with torch.cuda.graph(gb):
        yb = mb(xb)
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    for k in range(4):
        xa.copy_((torch.randn(n, device="cuda", generator=g0) * 6).to(dt))
        xb.copy_((torch.randn(n, device="cuda", generator=g0) * 6).to(dt))
        torch.cuda.synchronize()
        with torch.cuda.stream(s1):
            ga.replay()
        with torch.cuda.stream(s2):
            gb.replay()
        torch.cuda.synchronize()
        ra, rb = torch.empty_like(xa, device="cpu"), torch.empty_like(xb, device="cpu")
        sigmoid_table(xa.cpu(), out=ra)
        tanh_table_arbitrary(xb.cpu(), out=rb)
        assert torch.equal(bits(ya), bits(ra)), f"replay {k}: graph A differs from the CPU"
        assert torch.equal(bits(yb), bits(rb)), f"replay {k}: graph B differs from the CPU"
