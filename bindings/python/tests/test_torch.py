"""The pwpa::eval custom op: opcheck, autograd against the derivative table and finite
differences, torch.compile(fullgraph=True), the PwPA module, replace_activations."""

import copy
import os
import sys
import warnings
import gc

import numpy as np
import pytest
import torch
from torch import nn

import pwpa
import pwpa.torch as pt
from conftest import reference_eval


def centres(table, per_piece=5):
    """Points well inside each partition (away from the breakpoints' kinks)."""
    pts = table.breakpoints
    w = np.diff(pts)
    fr = np.linspace(0.2, 0.8, per_piece)
    return (pts[:-1, None] + w[:, None] * fr[None, :]).ravel().astype(np.float32)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_opcheck(random_table, dtype):
    x = torch.linspace(-5, 7, 257, dtype=torch.float32).to(dtype).reshape(257)
    torch.library.opcheck(torch.ops.pwpa.eval.default, (x, random_table.handle))
    xg = x.clone().requires_grad_(dtype == torch.float32)
    torch.library.opcheck(torch.ops.pwpa.eval.default, (xg, random_table.handle))
    g = torch.ones_like(x)
    torch.library.opcheck(torch.ops.pwpa.eval_backward.default, (g, x, random_table.handle))
    # the backward op's own autograd (second derivatives)
    gg = torch.linspace(-1, 1, x.numel()).to(dtype).requires_grad_(dtype == torch.float32)
    torch.library.opcheck(torch.ops.pwpa.eval_backward.default, (gg, xg, random_table.handle))


def test_forward_is_the_table(sigmoid_table):
    x = torch.linspace(-10, 10, 1001)
    y = pt.pwpa_eval(x, sigmoid_table)
    assert torch.equal(y, torch.from_numpy(reference_eval(sigmoid_table, x.numpy())))
    assert torch.equal(sigmoid_table(x), y)


def test_large_cpu_outputs_get_huge_pages(sigmoid_table, random_table):
    """A fresh CPU output of 4 MiB or more is advised to take transparent huge pages
    before its first write (fewer page faults); the results are the reference's."""
    from pwpa import _native

    small = torch.empty(1000)
    assert not _native.advise_hugepages(small.data_ptr(), small.numel() * 4)
    assert not _native.advise_hugepages(0, 8 << 20)
    big = torch.empty(3 << 20)  # 12 MiB: at least one whole aligned 2 MiB page inside
    advised = _native.advise_hugepages(big.data_ptr(), big.numel() * 4)
    if sys.platform == "linux" and os.path.exists("/sys/kernel/mm/transparent_hugepage/enabled"):
        assert advised
    # Through the op (forward and backward), advised outputs:
    x = torch.linspace(-10, 10, (1 << 20) + 3).requires_grad_()
    y = sigmoid_table(x)
    assert torch.equal(y.detach(), torch.from_numpy(reference_eval(sigmoid_table, x.detach().numpy())))
    y.backward(torch.ones_like(y))
    d = sigmoid_table.derivative()
    assert torch.equal(x.grad, torch.from_numpy(reference_eval(d, x.detach().numpy())))
    xb = torch.linspace(-6, 8, 3 << 20).to(torch.bfloat16)
    y, dy = pt.value_and_derivative(xb, random_table)
    assert torch.equal(y.float(), torch.from_numpy(reference_eval(random_table, xb.float().numpy())).bfloat16().float())
    want = torch.from_numpy(reference_eval(random_table.derivative(), xb.float().numpy())).bfloat16()
    assert torch.equal(dy, want)


def test_cpu_output_cache_reuses_freed_outputs(sigmoid_table, output_cache):
    """A freed CPU output of 4 MiB or more goes back to pwpa's cache (not to the system)
    and the next output of its size reuses it; results are the reference's every time;
    a view keeps the buffer alive; smaller outputs and other sizes do not take it."""
    pt.cpu_output_cache(64)
    x = torch.linspace(-10, 10, 3 << 20)  # 12 MiB of f32
    want = torch.from_numpy(reference_eval(sigmoid_table, x.numpy()))
    y = sigmoid_table(x)
    assert torch.equal(y, want)
    ptr = y.data_ptr()
    assert ptr % (2 << 20) == 0  # whole huge pages
    assert pt.cpu_output_cache()["cached_buffers"] == 0
    del y
    info = pt.cpu_output_cache()
    assert (info["cached_buffers"], info["cached_bytes"]) == (1, 12 << 20)
    # Overwrite what the buffer holds, then reuse it: every element is rewritten.
    y = sigmoid_table(-x)
    assert y.data_ptr() == ptr and pt.cpu_output_cache()["cached_buffers"] == 0
    del y
    y = sigmoid_table(x)
    assert y.data_ptr() == ptr and torch.equal(y, want)
    v = y[5:]
    del y
    assert pt.cpu_output_cache()["cached_buffers"] == 0  # the view holds the storage
    del v
    assert pt.cpu_output_cache()["cached_buffers"] == 1
    # Below 4 MiB: PyTorch's allocator; a much larger output: a new buffer.
    small = sigmoid_table(x[: 1 << 18])
    assert pt.cpu_output_cache()["cached_buffers"] == 1
    assert torch.equal(small, want[: 1 << 18])
    big = sigmoid_table(torch.cat([x, x]))
    assert big.data_ptr() != ptr and pt.cpu_output_cache()["cached_buffers"] == 1
    assert torch.equal(big, torch.cat([want, want]))
    # 16-bit outputs (half the bytes) do not take a 12 MiB buffer; they are correct.
    for dt in (torch.bfloat16, torch.float16):
        xh = x.to(dt)
        yh = sigmoid_table(xh)
        assert yh.dtype == dt and yh.data_ptr() != ptr
        assert torch.equal(yh, torch.from_numpy(reference_eval(sigmoid_table, xh.float().numpy())).to(dt))
    # (The bf16 output was alive while the f16 one was made: two 6 MiB buffers.) Freed,
    # all four buffers are cached (48 MiB of the 64).
    del yh, big, small
    assert pt.cpu_output_cache()["cached_buffers"] == 4
    assert pt.empty_cpu_output_cache() == (12 + 6 + 6 + 24) << 20
    assert pt.cpu_output_cache()["cached_bytes"] == 0


def test_cpu_output_cache_limit(sigmoid_table, output_cache):
    """The cache keeps at most its limit of unused memory (the oldest buffers leave
    first); 0 turns it off; bad limits are clear errors."""
    x = torch.linspace(-10, 10, 3 << 20)
    pt.cpu_output_cache(16)
    a, b = sigmoid_table(x), sigmoid_table(x)
    pa, pb = a.data_ptr(), b.data_ptr()
    del a, b
    assert pt.cpu_output_cache()["cached_bytes"] == 12 << 20  # a left when b came
    c = sigmoid_table(x)
    assert c.data_ptr() == pb and c.data_ptr() != pa
    del c
    assert pt.cpu_output_cache(0) == {"limit_bytes": 0, "cached_buffers": 0, "cached_bytes": 0}
    y = sigmoid_table(x)  # PyTorch's allocator
    assert torch.equal(y, torch.from_numpy(reference_eval(sigmoid_table, x.numpy())))
    del y
    assert pt.cpu_output_cache()["cached_buffers"] == 0
    for bad in (-1, float("nan"), float("inf"), "8", True):
        with pytest.raises(pwpa.ArgumentError, match="limit_mb"):
            pt.cpu_output_cache(bad)


def test_cpu_output_cache_tensors_behave(sigmoid_table, output_cache):
    """Outputs from the cache: channels_last layouts kept, autograd, save/load, pickling,
    shared memory, freeing on another thread; growing one in place is PyTorch's clear
    error (its storage is not resizable)."""
    import io
    import pickle
    import threading

    x = torch.randn(4, 32, 96, 96).to(memory_format=torch.channels_last) * 4  # 4.5 MiB
    y = sigmoid_table(x)
    assert y.stride() == x.stride()
    assert torch.equal(y, torch.from_numpy(reference_eval(sigmoid_table, x.numpy())).reshape(x.shape))
    buf = io.BytesIO()
    torch.save(y, buf)
    buf.seek(0)
    assert torch.equal(torch.load(buf), y)
    assert torch.equal(pickle.loads(pickle.dumps(y)), y)
    g = x.detach().requires_grad_()
    sigmoid_table(g).sum().backward()
    d = sigmoid_table.derivative()
    assert torch.equal(g.grad, torch.from_numpy(reference_eval(d, x.numpy())).reshape(x.shape))
    r = sigmoid_table(x)
    with pytest.raises(RuntimeError, match="not resizable"):
        r.resize_(x.numel() * 2)
    del r
    z = sigmoid_table(x)
    z.share_memory_()  # moves the data to shared memory; the buffer returns
    assert z.is_shared() and torch.equal(z, y)
    before = pt.cpu_output_cache()["cached_buffers"]
    held = [y]
    del y
    t = threading.Thread(target=held.clear)
    t.start()
    t.join()
    assert pt.cpu_output_cache()["cached_buffers"] == before + 1


def test_cpu_output_cache_from_many_threads(sigmoid_table, output_cache):
    """Threads that make and free outputs at once (the cache's list is shared; buffers
    come back from whichever thread frees them): every result right, and the cache ends
    within its limit holding only whole buffers."""
    import threading

    pt.cpu_output_cache(40)
    xs = [torch.linspace(-10 + k, 10 - k, (1 << 20) + 4096 * k) for k in range(4)]
    wants = [torch.from_numpy(reference_eval(sigmoid_table, x.numpy())) for x in xs]
    bad = []
    held = []

    def work(k: int) -> None:
        for i in range(12):
            y = sigmoid_table(xs[k])
            if not torch.equal(y, wants[k]):
                bad.append((k, i))
            if i % 3 == 0:
                held.append(y)  # freed later, by the main thread
            del y

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert bad == []
    held.clear()
    info = pt.cpu_output_cache()
    assert 0 < info["cached_bytes"] <= 40 << 20
    assert info["cached_bytes"] % (2 << 20) == 0 and info["cached_buffers"] >= 1


def test_gradient_is_the_derivative_table(random_table):
    x = torch.from_numpy(centres(random_table)).requires_grad_()
    y = random_table(x)
    y.backward(torch.ones_like(y))
    d = random_table.derivative()
    # grad * d with grad = 1 is exact: bitwise equal to the derivative table.
    assert torch.equal(x.grad, torch.from_numpy(d(x.detach().numpy())))
    # and with a non-trivial upstream gradient
    x.grad = None
    g = torch.linspace(-2, 2, x.numel())
    random_table(x).backward(g)
    want = (g.double() * torch.from_numpy(d(x.detach().numpy())).double()).float()
    assert torch.equal(x.grad, want)


def test_gradient_matches_finite_differences(sigmoid_table):
    x = torch.from_numpy(centres(sigmoid_table, 3)).double()

    def f64_table(v):
        # the table's pieces in f64, for central differences
        i = np.clip(np.searchsorted(sigmoid_table.breakpoints[1:-1], v, side="right"), 0, sigmoid_table.partitions - 1)
        c = sigmoid_table.coeffs.astype(np.float64)[i]
        t = v - sigmoid_table.anchors.astype(np.float64)[i]
        r = c[:, 0].copy()
        for k in range(1, c.shape[1]):
            r = r * t + c[:, k]
        return r

    h = 1e-4
    fd = (f64_table(x.numpy() + h) - f64_table(x.numpy() - h)) / (2 * h)
    xf = x.float().requires_grad_()
    sigmoid_table(xf).sum().backward()
    np.testing.assert_allclose(xf.grad.numpy(), fd, rtol=1e-4, atol=1e-5)


@pytest.mark.filterwarnings("ignore:Input #0 requires gradient")
def test_gradcheck_f32(sigmoid_table):
    x = torch.from_numpy(centres(sigmoid_table, 2)[::3].copy()).requires_grad_()
    assert torch.autograd.gradcheck(
        lambda v: pt.pwpa_eval(v, sigmoid_table), (x,), eps=1e-2, atol=2e-3, rtol=2e-2, fast_mode=False
    )


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_backward_in_16bit(random_table, dtype):
    x = torch.from_numpy(centres(random_table)).to(dtype).requires_grad_()
    random_table(x).sum().backward()
    assert x.grad.dtype == dtype
    want = random_table.derivative()(x.detach().float().numpy())
    assert torch.equal(x.grad, torch.from_numpy(want).to(dtype))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_backward_with_upstream_gradient_matches_the_f32_product(random_table, dtype):
    """The fused backward pass: grad * f'(x) in float32, rounded once to grad's dtype,
    against numpy's float64 product of the oracle's f'(x) (exact for two float32 values)."""
    x32 = np.concatenate([centres(random_table), [np.nan, np.inf, -np.inf, 0.0, -50.0, 50.0]]).astype(np.float32)
    x = torch.from_numpy(x32).to(dtype).requires_grad_()
    g = torch.linspace(-3, 3, x.numel()).to(dtype)
    g[::7] = 0.0
    random_table(x).backward(g)
    d = random_table.derivative()(x.detach().float().numpy()).astype(np.float64)
    prod = (g.float().numpy().astype(np.float64) * d).astype(np.float32)
    want = torch.from_numpy(prod).to(dtype)
    assert x.grad.dtype == dtype
    assert torch.equal(x.grad.isnan(), want.isnan())
    ok = ~want.isnan()
    assert torch.equal(x.grad[ok], want[ok])


def test_backward_op_checks_its_inputs(random_table):
    from pwpa._eval import grad_mul_into

    d = random_table.derivative()
    x = torch.zeros(8)
    with pytest.raises(pwpa.ShapeError, match="shapes differ"):
        grad_mul_into(d, x, torch.zeros(9), torch.zeros(9))
    with pytest.raises(pwpa.DTypeError, match="gradient dtype int32"):
        grad_mul_into(d, x, torch.zeros(8, dtype=torch.int32), torch.zeros(8, dtype=torch.int32))
    with pytest.raises(pwpa.DTypeError, match="differs from the gradient"):
        grad_mul_into(d, x, torch.zeros(8), torch.zeros(8, dtype=torch.float16))
    # Non-contiguous gradient and output (views) give the same bits as contiguous ones.
    xs = torch.linspace(-4, 6, 64)
    g = torch.linspace(-1, 1, 128)[::2]
    out = torch.empty(128)[::2]
    grad_mul_into(d, xs, g, out)
    want = torch.empty(64)
    grad_mul_into(d, xs, g.contiguous(), want)
    assert torch.equal(out, want)


def test_torch_compile_fullgraph_forward_and_backward(sigmoid_table):
    torch._dynamo.reset()
    model = nn.Sequential(nn.Linear(8, 16), pt.PwPA(sigmoid_table), nn.Linear(16, 4))

    def fn(x):
        return model(x).sum()

    compiled = torch.compile(fn, fullgraph=True, backend="aot_eager")
    x = torch.randn(32, 8)
    eager = fn(x)
    got = compiled(x)
    assert torch.equal(eager, got)
    got.backward()
    g1 = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    fn(x).backward()
    for a, b in zip(g1, [p.grad for p in model.parameters()]):
        torch.testing.assert_close(a, b)


def test_fresh_tables_as_arguments_of_a_compiled_function_do_not_hit_the_recompile_limit():
    # A table straight from pwpa.fit had no handle yet; torch.compile guarded on the type
    # of table._handle, so each new table recompiled, and fullgraph=True failed at the 9th
    # (recompile_limit 8; an ML user's audit, 2026-11-29). PYTHON.md promises one
    # recompile: the handle becomes a dynamic int.
    torch._dynamo.reset()
    x = torch.linspace(-3, 3, 11)
    f = torch.compile(lambda v, tab: pt.pwpa_eval(v, tab), fullgraph=True, backend="eager")
    g = torch.compile(lambda v, tab: tab(v) * 2, fullgraph=True, backend="eager")
    for p in range(2, 14):
        tab = pwpa.fit("gelu", partitions=p, degree=1)
        assert torch.equal(f(x, tab), tab(x)), p
        assert torch.equal(g(x, tab), tab(x) * 2), p
    for p in range(2, 14):
        tab = pwpa.Table.from_json(pwpa.fit("silu", partitions=p, degree=1).to_json())
        assert torch.equal(f(x, tab), tab(x)), p


def test_torch_compile_inductor(random_table):
    torch._dynamo.reset()
    act = pt.PwPA(random_table)
    f = torch.compile(lambda x: act(x * 2) + 1, fullgraph=True)
    x = torch.linspace(-4, 4, 999)
    assert torch.equal(f(x), act(x * 2) + 1)


def test_module_state_dict_carries_the_table(random_table, sigmoid_table):
    m = nn.Sequential(pt.PwPA(random_table))
    sd = m.state_dict()
    m2 = nn.Sequential(pt.PwPA(sigmoid_table))
    m2.load_state_dict(sd)
    assert m2[0].table == random_table
    x = torch.linspace(-3, 3, 50)
    assert torch.equal(m2(x), m(x))
    m3 = copy.deepcopy(m)
    assert m3[0].table == random_table and torch.equal(m3(x), m(x))
    assert "P=10, D=3" in repr(m)


def test_copies_outlive_the_original_and_torchscript_works():
    """A deep copy or a torch.save'd model owns its table (its handle does not die with
    the original's); torch.jit.script and torch.jit.trace record the op."""
    import io

    rng = np.random.default_rng(11)
    t = pwpa.Table({"lo": -2.0, "hi": 2.0, "partitions": 6}, rng.normal(size=(6, 3)), right_tail="extend")
    m = nn.Sequential(nn.Linear(4, 4), pt.PwPA(t))
    x = torch.randn(5, 4)
    want = m(x).detach()
    buf = io.BytesIO()
    torch.save(m, buf)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # TorchScript is deprecated in torch 2.10+
        scripted = torch.jit.script(m)
        traced = torch.jit.trace(m, x)
    assert torch.equal(scripted(x), want) and torch.equal(traced(x), want)
    copied = copy.deepcopy(m)
    del m, t, scripted, traced
    gc.collect()
    assert torch.equal(copied(x), want)
    buf.seek(0)
    loaded = torch.load(buf, weights_only=False)
    gc.collect()
    assert torch.equal(loaded(x), want)
    # and the copy still trains: gradients reach its parameters
    copied(x).sum().backward()
    assert copied[0].weight.grad is not None


def test_replace_activations(sigmoid_table, random_table):
    model = nn.Sequential(
        nn.Linear(4, 4),
        nn.GELU(),
        nn.Sequential(nn.Linear(4, 4), nn.SiLU(), nn.GELU(approximate="tanh")),
        nn.ReLU(),
    )
    out = pt.replace_activations(model, {nn.GELU: sigmoid_table, nn.SiLU: random_table})
    assert out is model
    assert isinstance(model[1], pt.PwPA) and model[1].table == sigmoid_table
    assert isinstance(model[2][1], pt.PwPA) and model[2][1].table == random_table
    assert isinstance(model[2][2], pt.PwPA)
    assert isinstance(model[3], nn.ReLU)
    # callable: only exact-erf GELUs
    m = nn.Sequential(nn.GELU(), nn.GELU(approximate="tanh"))
    pt.replace_activations(m, {nn.GELU: lambda mod: sigmoid_table if mod.approximate == "none" else None})
    assert isinstance(m[0], pt.PwPA) and isinstance(m[1], nn.GELU)
    assert isinstance(pt.replace_activations(nn.GELU(), {nn.GELU: sigmoid_table}), pt.PwPA)
    with pytest.raises(TypeError, match="nn.Module subclasses"):
        pt.replace_activations(model, {"gelu": sigmoid_table})


def test_dead_handle_is_a_clear_error():
    t = pwpa.Table([0.0, 1.0], [[1.0, 0.0]])
    h = t.handle
    del t
    gc.collect()
    with pytest.raises(pwpa.ArgumentError, match=f"handle {h} does not refer to a live table"):
        torch.ops.pwpa.eval(torch.zeros(3), h)


def test_unsupported_dtype_through_the_op(random_table):
    with pytest.raises(pwpa.DTypeError, match="supported: float32, float16, bfloat16"):
        random_table(torch.zeros(3, dtype=torch.float64, requires_grad=True))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_value_and_derivative(random_table, dtype):
    x = torch.linspace(-5, 7, 3001).to(dtype)
    y, dy = pt.value_and_derivative(x, random_table)
    assert torch.equal(y, random_table(x))
    assert torch.equal(dy, random_table.derivative()(x))
    _, d32 = pt.value_and_derivative(x, random_table, torch.float32)
    assert d32.dtype == torch.float32


def test_out_with_autograd_is_refused(random_table):
    x = torch.zeros(3, requires_grad=True)
    with pytest.raises(pwpa.ArgumentError, match="does not support automatic differentiation"):
        random_table(x, out=torch.empty(3))
    with torch.no_grad():
        random_table(x, out=torch.empty(3))


# ---- second derivatives, torch.func, memory layouts ------------------------------------------


def _ref(table, x):
    """The numpy oracle (conftest.reference_eval) as a float32 tensor shaped like x."""
    return torch.from_numpy(reference_eval(table, x.detach().float().numpy()).reshape(tuple(x.shape)))


def test_second_derivative_is_the_second_derivative_table(random_table):
    """d/dx of the gradient: the backward op's own backward is grad * f''(x); with unit
    upstream gradients both products are exact, so the result is the table of f''."""
    x = torch.from_numpy(centres(random_table)).requires_grad_()
    (g,) = torch.autograd.grad(random_table(x).sum(), x, create_graph=True)
    assert torch.equal(g, _ref(random_table.derivative(), x))
    (h,) = torch.autograd.grad(g.sum(), x)
    assert torch.equal(h, _ref(random_table.derivative().derivative(), x))
    # A degree-1 table: f'' is zero (the derivative of its constant derivative pieces).
    lin = pwpa.Table({"lo": -1.0, "hi": 1.0, "partitions": 4}, np.arange(8.0).reshape(4, 2))
    xl = torch.linspace(-0.9, 0.9, 7, requires_grad=True)
    (gl,) = torch.autograd.grad(lin(xl).sum(), xl, create_graph=True)
    (hl,) = torch.autograd.grad(gl.sum(), xl)
    assert torch.equal(hl, torch.zeros(7))


def test_gradient_penalty_reaches_the_parameters(sigmoid_table):
    """A gradient penalty: loss = sum((dy/dx)^2) with y = f(w x); its gradient in w is
    sum(2 g (f'(w x) + w x f''(w x))), checked against the f64 products of the oracle's
    f' and f'' tables."""
    x = torch.from_numpy(centres(sigmoid_table, 2) / 2).requires_grad_()
    w = torch.tensor(1.5, requires_grad=True)
    (gx,) = torch.autograd.grad(sigmoid_table(w * x).sum(), x, create_graph=True)
    (gx**2).sum().backward()
    u = (w * x).detach().numpy().astype(np.float32)
    d1 = reference_eval(sigmoid_table.derivative(), u).astype(np.float64)
    d2 = reference_eval(sigmoid_table.derivative().derivative(), u).astype(np.float64)
    xs = x.detach().numpy().astype(np.float64)
    g = 1.5 * d1
    want = np.sum(2 * g * (d1 + 1.5 * xs * d2))
    np.testing.assert_allclose(w.grad.item(), want, rtol=1e-5)


def test_torch_func_grad_jacrev_hessian_and_vmap(random_table):
    x = torch.from_numpy(centres(random_table, 3)[:24].copy())
    d1 = _ref(random_table.derivative(), x)
    d2 = _ref(random_table.derivative().derivative(), x)
    assert torch.equal(torch.func.grad(lambda v: random_table(v).sum())(x), d1)
    assert torch.equal(torch.func.jacrev(lambda v: pt.pwpa_eval(v, random_table))(x), torch.diag(d1))
    assert torch.equal(torch.func.hessian(lambda v: random_table(v).sum())(x), torch.diag(d2))
    assert torch.equal(torch.func.jacfwd(random_table)(x), torch.diag(d1))
    # forward-mode AD outside torch.func: the tangent is f'(x) * tangent
    import torch.autograd.forward_ad as fwAD

    with fwAD.dual_level():
        y = random_table(fwAD.make_dual(x, torch.ones_like(x)))
        assert torch.equal(fwAD.unpack_dual(y).tangent, d1)
    xb = x.reshape(4, 6)
    with warnings.catch_warnings():
        # no "performance drop ... batching rule" fallback: the ops have batching rules
        warnings.simplefilter("error")
        assert torch.equal(torch.vmap(pt.PwPA(random_table))(xb), _ref(random_table, xb))
        assert torch.equal(torch.vmap(random_table, in_dims=1)(xb).t(), _ref(random_table, xb))
        # per-sample gradients: vmap over grad (the backward op batched with its input)
        per = torch.func.vmap(torch.func.grad(lambda v: random_table(v).sum()))(xb)
        assert torch.equal(per, d1.reshape(4, 6))
        # the op itself under vmap (its registered batching rule)
        assert torch.equal(torch.vmap(lambda v: torch.ops.pwpa.eval(v, random_table.handle))(xb), _ref(random_table, xb))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_outputs_keep_the_input_layout(random_table, dtype):
    """channels_last and transposed (dense) inputs give outputs and gradients of the same
    strides, evaluated without a copy; a strided (non-dense) view gives contiguous ones.
    Values always equal the oracle's."""
    base = torch.linspace(-4, 6, 2 * 3 * 4 * 5).reshape(2, 3, 4, 5).to(dtype)
    cl = base.contiguous(memory_format=torch.channels_last)
    tr = base.reshape(6, 20).t()
    gap = base.reshape(6, 20)[:, ::3]
    for x, keeps in [(cl, True), (tr, True), (gap, False)]:
        xg = x.detach().clone().requires_grad_(dtype == torch.float32) if keeps else x
        y = random_table(xg)
        assert y.shape == x.shape
        if keeps:
            assert y.stride() == x.stride()
        else:
            assert y.is_contiguous()
        assert torch.equal(y.float(), _ref(random_table, x).to(dtype).float())
        if keeps and dtype == torch.float32:
            y.sum().backward()
            assert xg.grad.stride() == x.stride()
            assert torch.equal(xg.grad, _ref(random_table.derivative(), x))
    assert random_table(cl).is_contiguous(memory_format=torch.channels_last)
    # the backward of a sum passes expanded ones: the gradient takes x's layout
    xr = cl.detach().clone().requires_grad_()
    (g,) = torch.autograd.grad(random_table(xr).sum(), xr)
    assert g.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(g.float(), _ref(random_table.derivative(), cl).to(dtype).float())
    # out= with a layout different from the input's still gets the right values
    out = torch.empty(2, 3, 4, 5, dtype=dtype)
    random_table(cl, out=out)
    assert torch.equal(out.float(), _ref(random_table, base).to(dtype).float())


@pytest.mark.parametrize("strict", [False, True])
def test_torch_export_records_the_op(random_table, strict):
    m = nn.Sequential(nn.Linear(8, 8), pt.PwPA(random_table))
    x = torch.randn(4, 8)
    ep = torch.export.export(m, (x,), strict=strict)
    ops_in_graph = [n.target for n in ep.graph.nodes if n.op == "call_function"]
    assert torch.ops.pwpa.eval.default in ops_in_graph
    assert torch.equal(ep.module()(x), m(x))


def test_sparse_and_nested_inputs_are_clear_errors(random_table):
    act = pt.PwPA(random_table)
    pts = torch.tensor([-1.0, 0.0, 1.0])
    for x, what in [
        (torch.randn(4, 4).to_sparse(), "layout sparse_coo"),
        (torch.randn(4, 4).to_sparse_csr(), "layout sparse_csr"),
        (torch.nested.nested_tensor([torch.randn(2), torch.randn(3)]), "nested tensor"),
    ]:
        for f in (random_table, act, lambda v: pwpa.ops.pwpa(v, torch.ones(2, 2), pts)):
            with pytest.raises(pwpa.ArgumentError, match=what):
                f(x)
        with pytest.raises(pwpa.ArgumentError, match=what):
            random_table(torch.zeros(4, 4), out=x)


def test_replace_activations_replaces_every_name_of_a_shared_module(sigmoid_table):
    """A module object under two names (`act` twice in a Sequential, `self.a = self.b`) is
    replaced under both, by one shared PwPA; a callable mapping is asked once per object."""
    act = nn.Sigmoid()
    m = nn.Sequential(nn.Linear(3, 3), act, nn.Linear(3, 3), act)

    class Blk(nn.Module):
        def __init__(self):
            super().__init__()
            self.a1 = self.a2 = nn.Sigmoid()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            return self.a2(self.lin(self.a1(x)))

    outer = nn.ModuleList([m, Blk()])
    asked = []

    def choose(mod):
        asked.append(mod)
        return sigmoid_table

    pt.replace_activations(outer, {nn.Sigmoid: choose})
    assert len(asked) == 2  # two distinct Sigmoid objects
    assert isinstance(m[1], pt.PwPA) and m[3] is m[1]
    blk = outer[1]
    assert isinstance(blk.a1, pt.PwPA) and blk.a2 is blk.a1
    assert not any(isinstance(x, nn.Sigmoid) for x in outer.modules())
    x = torch.linspace(-3, 3, 12).reshape(4, 3)
    want = sigmoid_table(m[2](sigmoid_table(m[0](x))))
    assert torch.equal(m(x), want)


def test_fx_symbolic_trace_records_the_op(sigmoid_table):
    """torch.fx.symbolic_trace of a model with PwPA, of pwpa_eval and of table(x): the
    graph calls pwpa::eval and gives the same results."""
    m = nn.Sequential(nn.Linear(4, 4), pt.PwPA(sigmoid_table), nn.Linear(4, 2))
    gm = torch.fx.symbolic_trace(m)
    assert any(n.target is torch.ops.pwpa.eval.default or "pwpa.eval" in str(n.target) for n in gm.graph.nodes)
    x = torch.randn(5, 4)
    assert torch.equal(gm(x), m(x))
    f = torch.fx.symbolic_trace(lambda v: pt.pwpa_eval(v, sigmoid_table) * 2)
    assert torch.equal(f(x), sigmoid_table(x) * 2)
    f = torch.fx.symbolic_trace(lambda v: sigmoid_table(v) + 1)
    assert torch.equal(f(x), sigmoid_table(x) + 1)
    with pytest.raises(pwpa.ArgumentError, match="torch.fx"):
        torch.fx.symbolic_trace(lambda v: sigmoid_table(v, out=v))


def test_whole_model_loads_with_weights_only(tmp_path, sigmoid_table):
    """torch.load(weights_only=True) of a saved whole model, once pwpa.table_from_json and
    the module classes are allowlisted; a malformed saved table state is a clear error."""
    m = nn.Sequential(nn.Linear(4, 4), pt.PwPA(sigmoid_table))
    path = tmp_path / "m.pt"
    torch.save(m, path)
    safe = [pwpa.table_from_json, pt.PwPA, nn.Sequential, nn.Linear]
    with torch.serialization.safe_globals(safe + [getattr]):
        m2 = torch.load(path, weights_only=True)
    x = torch.randn(3, 4)
    assert torch.equal(m2(x), m(x))
    for bad in ({}, "text", None, {"pwpa_table": 5}):
        with pytest.raises(pwpa.ArgumentError, match="saved state is not a pwpa table"):
            m2[1].load_state_dict({"_extra_state": bad})


def test_profiles_name_the_op(sigmoid_table):
    """Eager calls on plain tensors skip the dispatcher, except under torch.profiler, whose
    profile then names pwpa::eval (and the backward op)."""
    x = torch.linspace(-3, 3, 64, requires_grad=True)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        y = sigmoid_table(x.detach())
        pt.pwpa_eval(x, sigmoid_table).sum().backward()
    names = {e.key for e in prof.key_averages()}
    assert "pwpa::eval" in names and "pwpa::eval_backward" in names, sorted(names)
    assert torch.equal(y, sigmoid_table(x.detach()))


def test_out_write_bumps_the_version_counter(sigmoid_table):
    """table(x, out=y) writes y's memory directly; like PyTorch's out= functions it bumps
    y's version, so autograd refuses a backward that saved y's old values."""
    w = torch.tensor([2.0, 3.0], requires_grad=True)
    o = torch.tensor([1.0, 1.0])
    z = (w * o).sum()  # saves o
    v0 = o._version
    with torch.no_grad():
        sigmoid_table(torch.tensor([5.0, 5.0]), out=o)
    assert o._version > v0
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()
    # in place over an input that the activation saved
    x = torch.tensor([1.0, -1.0], requires_grad=True) * 1
    y = pt.PwPA(sigmoid_table)(x)
    with torch.no_grad():
        sigmoid_table(x, out=x)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_negative_bit_views_are_read_and_written_as_their_values(sigmoid_table):
    """A dense tensor with the negative bit (z.conj().imag, _neg_view) stores -x in memory."""
    z = torch.tensor([[1 + 2j]], dtype=torch.complex64)
    im = z.conj().imag  # value -2, memory +2
    assert im.is_neg()
    want = torch.from_numpy(np.asarray(sigmoid_table(np.array([[-2.0]], dtype=np.float32))))
    assert torch.equal(sigmoid_table(im), want)
    assert torch.equal(pt.PwPA(sigmoid_table)(im), want)
    n = torch.tensor([-2.0, 1.0])._neg_view()  # values [2, -1]
    assert torch.equal(sigmoid_table(n), sigmoid_table(torch.tensor([2.0, -1.0])))
    # an output with the negative bit receives the values, not their negation
    o = torch.zeros(1, 1, dtype=torch.complex64).conj().imag
    sigmoid_table(torch.tensor([[1.0]]), out=o)
    assert torch.equal(o.resolve_neg(), sigmoid_table(torch.tensor([[1.0]])))
    # the backward pass too: gradient through a negated view equals the plain one
    xn = torch.tensor([1.5, -0.5])._neg_view().requires_grad_(True)
    xp = torch.tensor([-1.5, 0.5], requires_grad=True)
    pt.pwpa_eval(xn, sigmoid_table).sum().backward()
    pt.pwpa_eval(xp, sigmoid_table).sum().backward()
    assert torch.equal(xn.grad.resolve_neg(), xp.grad)


def test_the_graph_keeps_its_tables_alive():
    """A temporary Table (or a seed op's cached one, evicted from its 32-entry cache) may
    die before the backward pass: the autograd graph holds what it needs."""
    x = torch.linspace(-3, 3, 7, requires_grad=True)

    def act(v):
        t = pwpa.Table([-8, 0, 8], [[0.0, 0.0], [1.0, 0.0]], right_tail="extend", left_tail=0.0)
        return t(v)

    y = act(x)
    gc.collect()
    y.sum().backward()
    assert torch.equal(x.grad, (x.detach() >= 0).float())  # x = 0 is in the piece [0, 8)
    # a gradient penalty through more seed layers than the seed ops' table cache holds
    torch.manual_seed(0)
    pts = torch.linspace(-4, 4, 9)
    layers = [torch.randn(8, 3) * 0.1 + torch.tensor([0.0, 1.0, 0.0]) for _ in range(40)]
    xs = torch.randn(16, requires_grad=True)
    h = xs
    for c in layers:
        h = pwpa.ops.pwpa(h, c, pts)
    (g,) = torch.autograd.grad(h.sum(), xs, create_graph=True)
    gc.collect()
    (g**2).sum().backward()
    assert xs.grad is not None and torch.isfinite(xs.grad).all()


@pytest.mark.parametrize("how", ["module", "string"])
def test_replace_activations_in_transformer_layers(how):
    """nn.TransformerEncoderLayer: the activation is replaced whether it was given as a
    module or as a string (stored as F.gelu), and its fused inference path (eval mode, no
    gradients), which runs its own GELU, no longer bypasses the table."""
    crude = pwpa.fit("gelu", partitions=2, degree=1)
    torch.manual_seed(0)
    act = nn.GELU() if how == "module" else "gelu"
    layer = nn.TransformerEncoderLayer(16, 2, 32, activation=act, batch_first=True).eval()
    x = torch.randn(2, 5, 16)
    with torch.no_grad():
        exact = layer(x)
    pt.replace_activations(layer, {nn.GELU: crude})
    assert isinstance(layer.activation, pt.PwPA)
    with torch.no_grad():
        fast = layer(x)
    slow = layer(x).detach()  # gradients enabled: the plain path
    # (attention may still take its own fused path without gradients: rounding only)
    assert (fast - slow).abs().max() < 1e-5
    assert (fast - exact).abs().max() > 1e-2  # the crude table (error ~0.08) is used
    dec = nn.TransformerDecoderLayer(8, 2, 16, activation="relu")
    relu = pwpa.Table([-1, 0, 1], [[0.0, 0.0], [1.0, 0.0]], right_tail="extend", left_tail=0.0)
    pt.replace_activations(dec, {nn.ReLU: relu})
    assert isinstance(dec.activation, pt.PwPA)


def test_torch_argument_errors_are_pwpa_errors(sigmoid_table):
    for call in (
        lambda: pt.PwPA(3),
        lambda: pt.replace_activations(nn.Sequential(nn.GELU()), {}),
        lambda: pt.replace_activations(nn.Sequential(nn.GELU()), {"GELU": sigmoid_table}),
        lambda: pt.replace_activations(nn.Sequential(nn.GELU()), {nn.GELU: 3}),
    ):
        with pytest.raises(pwpa.ArgumentTypeError) as e:
            call()
        assert isinstance(e.value, pwpa.PwpaError) and isinstance(e.value, TypeError)


def test_misaligned_tensors_are_evaluated_through_aligned_copies():
    # torch.frombuffer at an odd offset: the data pointer is not 4-byte aligned; torch's
    # own ops accept it, pwpa refused it (forward and backward).
    t = pwpa.fit("gelu", partitions=8, degree=3)
    buf = bytearray(4 * 1000 + 8)
    x = torch.frombuffer(buf, dtype=torch.float32, offset=1, count=1000)
    assert x.data_ptr() % 4 != 0
    x.copy_(torch.linspace(-6, 6, 1000))
    want = reference_eval(t, x.numpy().copy())
    np.testing.assert_array_equal(t(x).numpy().view(np.uint32), want.view(np.uint32))
    # Into a misaligned out= (written through a copy), and in place.
    ybuf = bytearray(4 * 1000 + 8)
    y = torch.frombuffer(ybuf, dtype=torch.float32, offset=3, count=1000)
    assert t(x, out=y) is y
    np.testing.assert_array_equal(y.numpy().view(np.uint32), want.view(np.uint32))
    # Backward through the derivative table, and value_and_derivative.
    xg = x.detach().clone().requires_grad_(True)
    g = torch.frombuffer(bytearray(4 * 1000 + 8), dtype=torch.float32, offset=2, count=1000)
    g.copy_(torch.linspace(1, 2, 1000))
    pt.PwPA(t)(xg).backward(g)
    d = t.derivative()
    want_g = (g.numpy().astype(np.float32) * reference_eval(d, x.numpy().copy())).astype(np.float32)
    np.testing.assert_array_equal(xg.grad.numpy().view(np.uint32), want_g.view(np.uint32))
    v, dv = pt.value_and_derivative(x, t)
    np.testing.assert_array_equal(v.numpy().view(np.uint32), want.view(np.uint32))
    np.testing.assert_array_equal(
        dv.numpy().view(np.uint32), reference_eval(d, x.numpy().copy()).view(np.uint32)
    )


def test_out_refuses_an_inference_tensor_outside_inference_mode():
    t = pwpa.fit("gelu", partitions=8, degree=3)
    with torch.inference_mode():
        y = torch.zeros(4)
        t(torch.ones(4), out=y)  # inside inference mode: allowed, as for torch
    with pytest.raises(RuntimeError):
        torch.sigmoid(torch.ones(4), out=y)
    before = y.clone()
    with pytest.raises(pwpa.ArgumentError, match="inference tensor"):
        t(torch.ones(4), out=y)
    assert torch.equal(y, before)


def test_replace_activations_changes_nothing_when_a_table_fails_to_load(tmp_path):
    m = nn.Sequential(nn.Linear(2, 2), nn.GELU(), nn.SiLU())
    t = pwpa.fit("gelu", partitions=8, degree=3)
    with pytest.raises(pwpa.PwpaIOError):
        pt.replace_activations(m, {nn.GELU: t, nn.SiLU: str(tmp_path / "missing.json")})
    assert isinstance(m[1], nn.GELU) and isinstance(m[2], nn.SiLU)
    with pytest.raises(pwpa.ArgumentTypeError, match="PwPA modules are not replaced"):
        pt.replace_activations(m, {pt.PwPA: t})


def test_value_and_derivative_refuses_a_sparse_tensor_clearly():
    t = pwpa.fit("gelu", partitions=8, degree=3)
    with pytest.raises(pwpa.ArgumentError, match="layout sparse_coo"):
        pt.value_and_derivative(torch.randn(3).to_sparse(), t)


def test_replace_activations_warns_when_a_module_is_another_function():
    """A plain mapping replaces every instance of the class: a module whose parameters make
    it another function than the table's is warned about (checked against torch's own
    module on the table's range); matching modules and callable values are not."""
    g = pwpa.fit("gelu", partitions=16, degree=3)
    gt = pwpa.fit("gelu_tanh", partitions=16, degree=3)
    elu = pwpa.fit("elu", partitions=32, degree=3)
    cases = [
        (nn.GELU(), g, False),
        (nn.GELU(approximate="tanh"), g, True),  # 4.7e-4 apart, the table's error 1.1e-5
        (nn.GELU(approximate="tanh"), gt, False),
        (nn.ELU(alpha=0.2), elu, True),
        (nn.ELU(), elu, False),
        (nn.SiLU(), g, True),
    ]
    for m, t, warns in cases:
        # Independently: the largest difference on the range, against the table's error.
        x = torch.linspace(*t.range, 1025)
        with torch.no_grad():
            diff = (torch.from_numpy(reference_eval(t, x.numpy())) - m(x)).abs().max().item()
        assert (diff > 8 * t.meta["verified_abs_error"] + 1e-5) == warns, (m, diff)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out = pt.replace_activations(nn.Sequential(m), {type(m): t})
        assert isinstance(out[0], pt.PwPA)
        msgs = [str(x.message) for x in w if "replace_activations" in str(x.message)]
        assert len(msgs) == int(warns), (m, msgs)
        if warns:
            assert repr(m) in msgs[0] and t.meta["function"] in msgs[0]
    # The check neither fires the module's hooks nor compares a random module.
    calls = []
    m = nn.GELU()
    m.register_forward_hook(lambda *a: calls.append(1))
    pt.replace_activations(nn.Sequential(m), {nn.GELU: g})
    assert calls == []
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        pt.replace_activations(nn.Sequential(nn.RReLU().train()), {nn.RReLU: elu})
    assert not [x for x in w if "replace_activations" in str(x.message)]
    # A callable chooses per module and is not second-guessed.
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        pt.replace_activations(nn.Sequential(nn.SiLU()), {nn.SiLU: lambda m: g})
    assert not [x for x in w if "replace_activations" in str(x.message)]


def test_replaced_transformer_encoder_takes_padded_batches_at_inference():
    """An encoder's inference fast path turned a padded batch into a nested tensor, which
    the replaced layers then handed to the table (an ArgumentError)."""
    torch.manual_seed(0)
    t = pwpa.fit("gelu", partitions=16, degree=3)
    layer = nn.TransformerEncoderLayer(16, 2, 32, activation="gelu", batch_first=True, dropout=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: enable_nested_tensor with norm_first ...
        enc = nn.TransformerEncoder(layer, num_layers=2)
    pt.replace_activations(enc, {nn.GELU: t})
    x = torch.randn(2, 5, 16)
    mask = torch.tensor([[False] * 5, [False, False, False, True, True]])
    enc.eval()
    with torch.no_grad():
        fast = enc(x, src_key_padding_mask=mask)
    slow = enc(x, src_key_padding_mask=mask).detach()  # gradients on: the plain path
    # The unpadded positions agree (the padded ones are undefined on the fast path).
    assert (fast[0] - slow[0]).abs().max() < 1e-5
    assert (fast[1, :3] - slow[1, :3]).abs().max() < 1e-5
    with torch.inference_mode():
        enc(x, src_key_padding_mask=mask)


def test_legacy_batched_gradients_jacobian_and_hessian():
    """torch.autograd.grad(is_grads_batched=True), jacobian/hessian(vectorize=True) and
    gradcheck's batched checks use the older vmap, whose BatchedTensor has no storage:
    the op crashed with "Cannot access data pointer of Tensor that doesn't have storage"."""
    t = pwpa.fit("gelu", partitions=16, degree=3)
    d = t.derivative()
    x = torch.linspace(-3, 3, 7).requires_grad_()
    xd = x.detach()
    want = torch.from_numpy(reference_eval(d, xd.numpy()))
    (g,) = torch.autograd.grad(pt.pwpa_eval(x, t), x, torch.eye(7), is_grads_batched=True)
    assert torch.equal(g, torch.diag(want))
    f = lambda v: pt.pwpa_eval(v, t)  # noqa: E731
    for strategy in ("reverse-mode", "forward-mode"):
        J = torch.autograd.functional.jacobian(f, xd, vectorize=True, strategy=strategy)
        assert torch.equal(J, torch.diag(want)), strategy
    H = torch.autograd.functional.hessian(lambda v: f(v).sum(), xd, vectorize=True)
    assert torch.equal(H, torch.diag(torch.from_numpy(reference_eval(d.derivative(), xd.numpy()))))
    # The seed op: batched gradients for the coefficients, against the unbatched ones.
    c = torch.randn(4, 3, requires_grad=True)
    pts = torch.tensor([-2.0, -1.0, 0.0, 1.0, 2.0])
    xs = torch.linspace(-1.9, 1.9, 6)
    y = pwpa.ops.pwpa(xs, c, pts)
    (gc,) = torch.autograd.grad(y, c, torch.eye(6), is_grads_batched=True)
    for i in range(6):
        (gi,) = torch.autograd.grad(pwpa.ops.pwpa(xs, c, pts)[i], c)
        assert torch.equal(gc[i], gi)


def test_compiled_forward_mode_transforms_keep_the_tangent():
    """torch.compile of jvp/jacfwd/hessian over pwpa_eval: the op alone has no forward-AD
    formula and PyTorch dropped the tangent (compiled jacfwd gave zeros)."""
    from torch.func import hessian, jacfwd, jvp

    t = pwpa.fit("gelu", partitions=16, degree=3)
    d = t.derivative()
    x = torch.linspace(-3, 2.5, 7)
    dx = torch.from_numpy(reference_eval(d, x.numpy()))
    ddx = torch.from_numpy(reference_eval(d.derivative(), x.numpy()))
    f = lambda v: pt.pwpa_eval(v, t)  # noqa: E731
    torch._dynamo.reset()
    assert torch.equal(torch.compile(jacfwd(f))(x), torch.diag(dx))
    torch._dynamo.reset()
    assert torch.equal(torch.compile(lambda v, u: jvp(f, (v,), (u,))[1])(x, torch.ones(7)), dx)
    torch._dynamo.reset()
    assert torch.equal(torch.compile(hessian(lambda v: f(v).sum()))(x), torch.diag(ddx))
    torch._dynamo.reset()


def test_onnx_export_says_it_is_not_supported(tmp_path):
    m = nn.Sequential(nn.Linear(4, 4), pt.PwPA(pwpa.fit("gelu", partitions=8, degree=2)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript-based exporter's deprecation
        with pytest.raises(Exception) as e:
            torch.onnx.export(m, (torch.randn(2, 4),), str(tmp_path / "m.onnx"), dynamo=False)
    assert "ONNX export is not supported" in str(e.value), repr(e.value)
    assert not (tmp_path / "m.onnx").exists()


@pytest.mark.filterwarnings("ignore::FutureWarning")  # torch.jit.script is deprecated
def test_replace_activations_refuses_a_torchscript_module(sigmoid_table):
    scripted = torch.jit.script(nn.Sequential(nn.Linear(4, 4), nn.Sigmoid()))
    with pytest.raises(pwpa.ArgumentTypeError, match="TorchScript module"):
        pt.replace_activations(scripted, {nn.Sigmoid: sigmoid_table})


def test_results_do_not_depend_on_flush_denormal():
    # torch.set_flush_denormal(True) sets FTZ/DAZ on this thread (and on rayon's workers,
    # had their pool started under it): pwpa computes in IEEE 754 default mode anyway
    # (crates/pwpa/src/fpenv.rs), so subnormal results are kept and exact fits still work.
    ident = pwpa.Table([-1.0, 1.0], [[1.0, 0.0]], left_tail="extend", right_tail="extend")
    bits = np.arange(1, (1 << 22) + 1, dtype=np.uint32) * 2 + 1  # subnormal bit patterns
    x = (bits & 0x007FFFFF).astype(np.uint32).view(np.float32)
    x[1::2] *= -1
    ieee_fit = pwpa.fit("gelu", degree=3, exact="bf16", exp_tails=True)
    if not torch.set_flush_denormal(True):
        pytest.skip("torch.set_flush_denormal is not supported on this CPU")
    try:
        tiny = torch.tensor([1e-40], dtype=torch.float32)
        assert (tiny * 1.0).item() == 0.0, "flush-to-zero is not in effect"
        for n in (1000, x.size):
            np.testing.assert_array_equal(ident(x[:n]).view(np.uint32), x[:n].view(np.uint32))
        xt = torch.from_numpy(x)
        assert torch.equal(ident(xt).view(torch.int32), xt.view(torch.int32))
        assert ident._native.eval_scalar(1e-40) == np.float32(1e-40)
        ftz_fit = pwpa.fit("gelu", degree=3, exact="bf16", exp_tails=True)
    finally:
        torch.set_flush_denormal(False)
    assert ftz_fit.to_json() == ieee_fit.to_json()
