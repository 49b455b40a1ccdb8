"""Seed-compatible ops (torchPACE API) against a pure numpy f64 re-implementation of
the seed's semantics: first i with x < points[i+1], global-x Horner."""

import numpy as np
import pytest
import torch

import pwpa
import pwpa.ops as ops
from conftest import fma32


def seed_f64(x, coeffs_aos, points):
    """The seed's base kernel in f64 (with its defect: no partition found -> 0)."""
    x = np.asarray(x, np.float64)
    p = len(points) - 1
    idx = np.zeros(x.shape, np.int64)
    found = np.zeros(x.shape, bool)
    for i in range(p):
        hit = ~found & (x < points[i + 1])
        idx[hit] = i
        found |= hit
    c = np.asarray(coeffs_aos, np.float64)[idx]
    r = np.zeros(x.shape)
    for k in range(c.shape[-1]):
        r = r * x + c[..., k]
    return r, found


def seed_f32_fma(x, coeffs_aos, points):
    """The same with the defect fixed and f32 FMA Horner (what pwpa computes)."""
    x = np.asarray(x, np.float32)
    p = len(points) - 1
    idx = np.full(x.shape, p - 1, np.int64)
    found = np.zeros(x.shape, bool)
    for i in range(p):
        hit = ~found & (x < points[i + 1])
        idx[hit] = i
        found |= hit
    c = np.asarray(coeffs_aos, np.float32)[idx]
    r = c[:, 0].copy()
    for k in range(1, c.shape[1]):
        r = fma32(r, x, c[:, k])
    return r


@pytest.mark.parametrize("P,D", [(1, 0), (8, 1), (16, 3), (64, 5), (256, 3)])
def test_matches_seed_semantics(P, D):
    rng = np.random.default_rng(P * 31 + D)
    coeffs = rng.uniform(-10, 10, size=(P, D + 1)).astype(np.float32)
    points = np.linspace(-6, 6, P + 1).astype(np.float32)
    x = np.concatenate(
        [rng.uniform(-7, 5.999, 4000), points[:-1], [-7.5, -6.0]]
    ).astype(np.float32)  # all below the last point: where the seed is well defined
    want64, found = seed_f64(x, coeffs, points)
    xt, ct, pt_ = torch.from_numpy(x), torch.from_numpy(coeffs), torch.from_numpy(points)
    for got in (
        ops.pwpa(xt, ct, pt_),
        ops._pwpa(xt, ct, pt_),
        ops.pwpa(xt, ops.aos2soa(ct, D), pt_, AoS=False),
        torch.from_numpy(ops.pwpa(x, coeffs, points)),
    ):
        assert got.dtype == torch.float32 and got.shape == xt.shape
        # bit-exact against the f32 FMA re-implementation...
        np.testing.assert_array_equal(got.numpy(), seed_f32_fma(x, coeffs, points))
        # ...and close to the f64 semantics (bound: Horner error of f32 evaluation)
        scale = np.sum(np.abs(coeffs[np.clip(np.searchsorted(points[1:], x, side="right"), 0, P - 1)])
                       * np.abs(x.astype(np.float64))[:, None] ** np.arange(D, -1, -1), axis=1)
        assert np.all(np.abs(got.numpy() - want64) <= 4 * (D + 1) * 2.0**-24 * scale + 1e-30)


def test_out_of_range_defect_is_fixed():
    coeffs = torch.tensor([[1.0, 0.0], [0.0, 5.0]])  # piece 0: x, piece 1: 5
    points = torch.tensor([-1.0, 0.0, 1.0])
    x = torch.tensor([1.0, 2.0, -3.0, float("nan")])
    y = ops.pwpa(x, coeffs, points)
    seed, _ = seed_f64(x.numpy(), coeffs.numpy(), points.numpy())
    # The seed uses piece 0 at and above the last point (1.0, 2.0); pwpa the last piece.
    assert seed[0] == 1.0 and seed[1] == 2.0
    assert y[0] == 5.0 and y[1] == 5.0
    assert y[2] == -3.0  # below the first point: piece 0, as in the seed
    assert torch.isnan(y[3])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_inputs_compute_in_f32_and_round_once(dtype):
    rng = np.random.default_rng(5)
    P, D = 32, 3
    coeffs = torch.from_numpy(rng.uniform(-2, 2, size=(P, D + 1)).astype(np.float32)).to(dtype)
    points = torch.linspace(-4, 4, P + 1).to(dtype)
    x = torch.from_numpy(rng.uniform(-4, 3.9, 3000).astype(np.float32)).to(dtype)
    got = ops.pwpa(x, coeffs, points)
    assert got.dtype == dtype
    want = seed_f32_fma(x.float().numpy(), coeffs.float().numpy(), points.float().numpy())
    assert torch.equal(got, torch.from_numpy(want).to(dtype))


def test_layout_conversions():
    P, D = 5, 3
    aos = torch.arange(P * (D + 1), dtype=torch.float32).reshape(P, D + 1)
    soa = ops.aos2soa(aos, D)
    assert soa.shape == (D + 1, P) and soa.is_contiguous()
    for p in range(P):
        for k in range(D + 1):
            assert soa[k, p] == aos[p, k]  # the seed's SoA: coeffs[k * P + p]
    assert torch.equal(ops.soa2aos(soa, D), aos)
    flat = ops.aos2soa(aos.reshape(-1), D)
    assert flat.shape == (P * (D + 1),) and torch.equal(flat, soa.reshape(-1))
    assert torch.equal(ops.soa2aos(flat, D), aos.reshape(-1))
    a = aos.numpy()
    np.testing.assert_array_equal(ops.soa2aos(ops.aos2soa(a, D), D), a)
    assert ops.aos2soa(aos.half(), D).dtype == torch.float16
    # Not numbers, or ragged rows: a ShapeError (numpy's bare ValueError before).
    for bad in ["abc", [[1, 2, 3], [4, 5]]]:
        with pytest.raises(pwpa.ShapeError, match="coeffs must be numbers"):
            ops.aos2soa(bad, 2)


def test_shape_errors():
    coeffs = torch.zeros(4, 3)
    points = torch.linspace(-1, 1, 5)
    x = torch.zeros(10)
    with pytest.raises(pwpa.ShapeError, match=r"AoS coeffs of shape \(4, 3\) do not match 3 partitions"):
        ops.pwpa(x, coeffs, torch.linspace(-1, 1, 4))
    with pytest.raises(pwpa.ShapeError, match=r"SoA coeffs of shape \(4, 3\) do not match 4 partitions"):
        ops.pwpa(x, coeffs, points, AoS=False)
    with pytest.raises(pwpa.ShapeError, match="10 coefficients do not split into 4 partitions"):
        ops.pwpa(x, torch.zeros(10), points)
    with pytest.raises(pwpa.ShapeError, match="partition_points must be a 1-D tensor"):
        ops._pwpa(x, coeffs, torch.zeros(1))
    with pytest.raises(pwpa.ShapeError, match="do not hold whole polynomials of degree 3"):
        ops.aos2soa(torch.zeros(10), 3)
    with pytest.raises(pwpa.ShapeError, match=r"are not \(P, D\+1\) for D = 3"):
        ops.aos2soa(torch.zeros(4, 3), 3)
    with pytest.raises(pwpa.ArgumentError, match="D must be a non-negative integer"):
        ops.aos2soa(coeffs, -1)
    with pytest.raises(pwpa.TableError, match="strictly increasing"):
        ops.pwpa(x, coeffs, torch.tensor([0.0, 1.0, 1.0, 2.0, 3.0]))
    with pytest.raises(pwpa.ArgumentError, match="x is a torch tensor but coeffs is a ndarray"):
        ops.pwpa(x, coeffs.numpy(), points)
    with pytest.raises(pwpa.DTypeError):
        ops.pwpa(x.double(), coeffs, points)


def test_gradient_through_seed_op():
    coeffs = torch.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 0.0]])  # x^2+2x+3 ; 0.5x^2 - x
    points = torch.tensor([-2.0, 0.0, 2.0])
    x = torch.tensor([-1.0, 1.0], requires_grad=True)
    ops.pwpa(x, coeffs, points).sum().backward()
    assert torch.equal(x.grad, torch.tensor([0.0, 0.0]))  # 2x+2 at -1; x-1 at 1


def test_ops_after_a_plain_import():
    """torchPACE code says `import torch_pace` then `torch_pace.ops.pwpa(...)`: the same
    with `import pwpa` (a fresh interpreter, so nothing imported pwpa.ops before), and
    `import pwpa` alone does not import torch."""
    import subprocess
    import sys

    code = (
        "import sys, pwpa\n"
        "assert 'torch' not in sys.modules\n"
        "import torch\n"
        "x = torch.linspace(-1, 1, 5)\n"
        "c = torch.tensor([[1.0, 0.0], [2.0, 1.0]])\n"
        "p = torch.tensor([-1.0, 0.0, 1.0])\n"
        "print(pwpa.ops.pwpa(x, c, p).tolist(), pwpa.ops._pwpa(x, c, p).tolist(), pwpa.torch.PwPA.__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    # piece 0 (x < 0): 1*x + 0; piece 1 (x >= 0): 2*x + 1, the last piece also at x = 1
    want = [-1.0, -0.5, 1.0, 2.0, 3.0]
    assert out.strip() == f"{want} {want} PwPA"


def test_compile_autograd_and_torch_func_on_the_seed_ops():
    """torch.compile(fullgraph=True) (the op has a fake kernel, as the seed's had), the
    gradient with respect to x (the derivative of the global-x polynomial, against numpy
    in f64), torch.func.grad and vmap, all agreeing bitwise; a gradient with respect to
    the coefficients is a clear error, not a silent None."""
    rng = np.random.default_rng(5)
    P, D = 16, 3
    coeffs = torch.from_numpy(rng.uniform(-1, 1, size=(P, D + 1)).astype(np.float32))
    points = torch.linspace(-4, 4, P + 1)
    x = torch.from_numpy(rng.uniform(-3.9, 3.9, 64).astype(np.float32))
    y = ops.pwpa(x, coeffs, points)
    assert torch.equal(y, torch.from_numpy(seed_f32_fma(x.numpy(), coeffs.numpy(), points.numpy())))

    torch.library.opcheck(torch.ops.pwpa.seed_eval.default, (x.clone().requires_grad_(), coeffs, points, True))
    torch.library.opcheck(torch.ops.pwpa.seed_eval_backward.default, (torch.ones_like(x), x, coeffs, points, True))
    torch._dynamo.reset()
    f = torch.compile(lambda v: ops.pwpa(v, coeffs, points) * 2, fullgraph=True)
    assert torch.equal(f(x), y * 2)

    xg = x.clone().requires_grad_()
    ops._pwpa(xg, coeffs, points).sum().backward()
    idx = np.searchsorted(points.numpy()[1:-1], x.numpy(), side="right")
    c = coeffs.numpy().astype(np.float64)[idx]
    xd = x.numpy().astype(np.float64)
    d64 = sum((D - k) * c[:, k] * xd ** (D - k - 1) for k in range(D))
    np.testing.assert_allclose(xg.grad.numpy(), d64, rtol=1e-5, atol=1e-6)

    g = torch.func.grad(lambda v: ops.pwpa(v, coeffs, points).sum())(x)
    assert torch.equal(g, xg.grad)
    torch._dynamo.reset()
    fc = torch.compile(lambda v: ops.pwpa(v, coeffs, points).sum(), fullgraph=True, backend="aot_eager")
    xc = x.clone().requires_grad_()
    fc(xc).backward()
    assert torch.equal(xc.grad, xg.grad)
    assert torch.equal(torch.vmap(lambda v: ops.pwpa(v, coeffs, points))(x.reshape(8, 8)), y.reshape(8, 8))

    # With respect to the coefficients: see test_coefficient_gradients.
    cg = coeffs.clone().requires_grad_()
    ops.pwpa(x, cg, points).sum().backward()
    assert cg.grad is not None and cg.grad.shape == coeffs.shape


def _seed_ref64(x, coeffs_aos, points):
    """The seed's function in f64 torch ops (pwpa's fixed partition rule), differentiable
    in x and the coefficients: an independent reference for the op's gradients."""
    P = points.numel() - 1
    idx = torch.searchsorted(points[1:-1].double().contiguous(), x.detach().double(), right=True)
    c = coeffs_aos.reshape(P, -1)[idx]
    y = torch.zeros_like(x, dtype=torch.float64)
    for k in range(c.shape[1]):
        y = y * x.double() + c[:, k]
    return y


@pytest.mark.parametrize("layout", ["aos2d", "soa2d", "aos1d", "soa1d"])
def test_coefficient_gradients(layout):
    """Coefficients as an nn.Parameter (torchPACE code keeps them in a module): the
    gradient with respect to them (and x) against autograd through an f64 torch reference,
    for every layout the op accepts, with inputs on both sides of the range and on
    breakpoints; partition points that require grad get none (no error)."""
    rng = np.random.default_rng(11)
    P, D = 8, 3
    c_aos = rng.uniform(-1, 1, size=(P, D + 1)).astype(np.float32)
    points = torch.linspace(-2, 2, P + 1)
    x = torch.from_numpy(np.concatenate([rng.uniform(-3, 3, 500), points.numpy()]).astype(np.float32))
    w = torch.from_numpy(rng.uniform(-1, 1, x.numel()).astype(np.float32))

    c = torch.from_numpy(c_aos)
    aos = layout.startswith("aos")
    given = c if aos else ops.aos2soa(c, D)
    if layout.endswith("1d"):
        given = given.reshape(-1)
    param = torch.nn.Parameter(given.clone())
    pts = points.clone().requires_grad_()
    xg = x.clone().requires_grad_()
    (ops.pwpa(xg, param, pts, AoS=aos) * w).sum().backward()
    assert pts.grad is None

    c64 = torch.from_numpy(c_aos.astype(np.float64)).requires_grad_()
    x64 = x.double().requires_grad_()
    (_seed_ref64(x64, c64, points) * w.double()).sum().backward()
    want = c64.grad if aos else c64.grad.t()
    np.testing.assert_allclose(param.grad.reshape(want.shape).numpy(), want.numpy(), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(xg.grad.numpy(), x64.grad.numpy(), rtol=1e-4, atol=1e-4)

    # torch.func: the Jacobian with respect to the coefficients, reverse and forward mode
    # (forward mode batches the coefficients' tangents), against J[e, i, k] = x_e^(D-k)
    # where element e is in piece i.
    xs = x[:40]
    f = lambda cc: ops.pwpa(xs, cc, points, AoS=aos)  # noqa: E731
    jr = torch.func.jacrev(f)(given)
    jf = torch.func.jacfwd(f)(given)
    idx = np.searchsorted(points.numpy()[1:-1], xs.numpy(), side="right")
    jw = np.zeros((xs.numel(), P, D + 1))
    for e, (i, v) in enumerate(zip(idx, xs.numpy().astype(np.float64))):
        jw[e, i] = [v ** (D - k) for k in range(D + 1)]
    if not aos:
        jw = jw.transpose(0, 2, 1)
    jw = jw.reshape(jr.shape)
    np.testing.assert_allclose(jr.numpy(), jw, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jf.numpy(), jw, rtol=1e-5, atol=1e-6)


def test_coefficients_train_and_compile():
    """A learnable seed table: Adam on the coefficients of a 16-piece cubic started at zero
    learns tanh on [-3, 3] (the loss falls by orders of magnitude), and the compiled
    training step (torch.compile, aot_eager) gives the eager step's gradients."""
    torch.manual_seed(0)
    P, D = 16, 3
    points = torch.linspace(-3, 3, P + 1)
    x = torch.linspace(-3, 3, 4096)
    target = torch.tanh(x)

    def loss_of(c):
        return ((ops.pwpa(x, c, points) - target) ** 2).mean()

    c = torch.nn.Parameter(torch.zeros(P, D + 1))
    first = loss_of(c).item()
    opt = torch.optim.Adam([c], lr=0.05)
    for _ in range(400):
        opt.zero_grad()
        loss = loss_of(c)
        loss.backward()
        opt.step()
    assert loss_of(c).item() < first * 1e-3, (first, loss_of(c).item())

    c1 = torch.nn.Parameter(c.detach().clone())
    loss_of(c1).backward()
    torch._dynamo.reset()
    c2 = torch.nn.Parameter(c.detach().clone())
    torch.compile(loss_of, fullgraph=True, backend="aot_eager")(c2).backward()
    torch.testing.assert_close(c2.grad, c1.grad, rtol=1e-6, atol=1e-9)


def test_parameter_coefficients_in_a_module():
    """torchPACE code keeps the coefficients as an nn.Parameter (requires_grad=True): the
    compiled forward, a gradient with respect to x alone (autograd.grad and torch.func.grad)
    all work, and agree with the same module whose coefficients are a buffer."""
    rng = np.random.default_rng(3)
    coeffs = torch.from_numpy(rng.uniform(-1, 1, (4, 3)).astype(np.float32))
    pts = torch.tensor([-2.0, -1.0, 0.0, 1.0, 2.0])

    class Seed(torch.nn.Module):
        def __init__(self, param):
            super().__init__()
            if param:
                self.c = torch.nn.Parameter(coeffs.clone())
            else:
                self.register_buffer("c", coeffs.clone())
            self.register_buffer("p", pts)

        def forward(self, v):
            return ops.pwpa(v, self.c, self.p)

    m, mb = Seed(True), Seed(False)
    x = torch.linspace(-3, 3, 101)
    torch._dynamo.reset()
    assert torch.equal(torch.compile(m, fullgraph=True)(x), mb(x))
    xr = x.clone().requires_grad_()
    (gx,) = torch.autograd.grad(m(xr).sum(), xr)
    xb = x.clone().requires_grad_()
    (gb,) = torch.autograd.grad(mb(xb).sum(), xb)
    assert torch.equal(gx, gb)
    assert torch.equal(torch.func.grad(lambda v: m(v).sum())(x), gb)


def test_aos_must_be_a_boolean():
    # bool("False") is True: a string silently meant AoS (and a wrong result for SoA).
    c = torch.tensor([[1.0, 0.0], [2.0, 0.0]])
    p = torch.tensor([-1.0, 0.0, 1.0])
    soa = ops.aos2soa(c, 1)
    with pytest.raises(pwpa.ArgumentError, match="AoS must be True or False"):
        ops.pwpa(torch.tensor([0.5]), soa, p, AoS="False")
    x = torch.tensor([-0.5, 0.5])
    assert torch.equal(ops.pwpa(x, soa, p, AoS=False), ops.pwpa(x, c, p, AoS=True))
    assert torch.equal(ops.pwpa(x, soa, p, AoS=np.bool_(False)), ops.pwpa(x, c, p, AoS=1))
