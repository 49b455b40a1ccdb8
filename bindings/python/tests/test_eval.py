"""Evaluation on numpy arrays and CPU torch tensors, bit for bit against the
independent numpy reference of the evaluation convention (conftest.reference_eval)."""

import numpy as np
import pytest
import torch

import pwpa
from conftest import all_16bit, f32_to_bits, reference_eval

TABLES = ["sigmoid_table", "tanh_table_arbitrary", "random_table"]
TORCH = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def tensor_bits(t: torch.Tensor) -> np.ndarray:
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.float32:
        return t.view(torch.int32).numpy().view(np.uint32).ravel()
    return t.view(torch.int16).numpy().view(np.uint16).ravel()


def special_f32(table) -> np.ndarray:
    pts = table.breakpoints.astype(np.float32)
    near = np.concatenate([pts, np.nextafter(pts, np.float32(-np.inf)), np.nextafter(pts, np.float32(np.inf))])
    rng = np.random.default_rng(11)
    lo, hi = table.range
    return np.concatenate(
        [
            near,
            np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -1e30, 1e-40, -1e-40], np.float32),
            rng.uniform(lo - 2, hi + 2, 20000).astype(np.float32),
            rng.normal(0, 30, 5000).astype(np.float32),
        ]
    ).astype(np.float32)


@pytest.mark.parametrize("name", TABLES)
@pytest.mark.parametrize("src", ["f16", "bf16"])
@pytest.mark.parametrize("dst", ["f32", "f16", "bf16"])
def test_exhaustive_16bit_torch_cpu(request, name, src, dst):
    table = request.getfixturevalue(name)
    xs = all_16bit(src)
    want = f32_to_bits(reference_eval(table, xs), dst)
    x = torch.from_numpy(xs).to(TORCH[src])
    y = torch.empty(x.shape, dtype=TORCH[dst])
    table(x, out=y)
    np.testing.assert_array_equal(tensor_bits(y), want)
    if src == dst:
        np.testing.assert_array_equal(tensor_bits(table(x)), want)


@pytest.mark.parametrize("name", TABLES)
def test_exhaustive_f16_numpy(request, name):
    table = request.getfixturevalue(name)
    xs = all_16bit("f16")
    y = table(xs.astype(np.float16))
    assert y.dtype == np.float16
    np.testing.assert_array_equal(y.view(np.uint16), f32_to_bits(reference_eval(table, xs), "f16"))


@pytest.mark.parametrize("name", TABLES)
def test_f32_specials_and_random(request, name):
    table = request.getfixturevalue(name)
    xs = special_f32(table)
    want = f32_to_bits(reference_eval(table, xs), "f32")
    np.testing.assert_array_equal(f32_to_bits(table(xs), "f32"), want)
    np.testing.assert_array_equal(tensor_bits(table(torch.from_numpy(xs))), want)
    y16 = np.empty(xs.shape, np.float16)
    table(xs, out=y16)
    np.testing.assert_array_equal(y16.view(np.uint16), f32_to_bits(reference_eval(table, xs), "f16"))


def test_shapes_noncontiguous_and_out(random_table):
    t = random_table
    base = torch.linspace(-6, 8, 4 * 5 * 6).reshape(4, 5, 6)
    x = base.transpose(0, 2)[:, ::2]  # non-contiguous
    assert not x.is_contiguous()
    y = t(x)
    assert y.shape == x.shape and y.dtype == x.dtype
    want = torch.from_numpy(reference_eval(t, x.contiguous().numpy()).reshape(x.shape))
    assert torch.equal(y, want)
    # non-contiguous out
    out = torch.zeros(6, 3, 4).transpose(0, 2)[:, :, :]
    out = torch.zeros(x.shape[::-1]).permute(2, 1, 0)
    assert not out.is_contiguous()
    assert t(x, out=out) is out
    assert torch.equal(out, want)
    # numpy: Fortran order, 3-D, in place
    a = np.asfortranarray(np.linspace(-5, 7, 60, dtype=np.float32).reshape(3, 4, 5))
    ref = reference_eval(t, a.ravel(order="C")).reshape(3, 4, 5)
    np.testing.assert_array_equal(t(a), ref)
    b = np.ascontiguousarray(a)
    assert t(b, out=b) is b
    np.testing.assert_array_equal(b, ref)
    # in place on a tensor
    c = torch.from_numpy(np.ascontiguousarray(a))
    t(c, out=c)
    assert torch.equal(c, torch.from_numpy(ref))


def test_scalars_lists_and_empty(random_table):
    t = random_table
    assert t(0.25) == float(reference_eval(t, [0.25])[0])
    assert isinstance(t(0.25), float)
    np.testing.assert_array_equal(t([0.25, 1.5]), reference_eval(t, [0.25, 1.5]))
    assert t(np.empty((0, 3), np.float32)).shape == (0, 3)
    assert t(torch.empty(0, dtype=torch.bfloat16)).shape == (0,)


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.int8, np.complex64, np.bool_])
def test_unsupported_numpy_dtypes(random_table, dtype):
    with pytest.raises(pwpa.DTypeError, match="supported: float32, float16, bfloat16"):
        random_table(np.zeros(4, dtype))


@pytest.mark.parametrize("dtype", [torch.float64, torch.int64, torch.int32, torch.uint8, torch.complex64])
def test_unsupported_torch_dtypes(random_table, dtype):
    with pytest.raises(pwpa.DTypeError, match=r"unsupported input dtype .* \(supported: float32, float16, bfloat16\)"):
        random_table(torch.zeros(4, dtype=dtype))
    with pytest.raises(pwpa.DTypeError, match="unsupported output dtype"):
        random_table(torch.zeros(4), out=torch.zeros(4, dtype=dtype))
    with pytest.raises(TypeError):  # DTypeError is a TypeError
        random_table(torch.zeros(4, dtype=dtype))


def test_bad_outputs(random_table):
    t = random_table
    with pytest.raises(pwpa.ShapeError, match=r"output shape \(3,\) differs from input shape \(4,\)"):
        t(np.zeros(4, np.float32), out=np.zeros(3, np.float32))
    with pytest.raises(pwpa.ShapeError, match="differs from input shape"):
        t(torch.zeros(2, 2), out=torch.zeros(4))
    ro = np.zeros(4, np.float32)
    ro.flags.writeable = False
    with pytest.raises(pwpa.ArgumentError, match="read-only"):
        t(np.zeros(4, np.float32), out=ro)
    with pytest.raises(pwpa.ArgumentError, match="out must be a torch.Tensor"):
        t(torch.zeros(4), out=np.zeros(4, np.float32))
    with pytest.raises(pwpa.DeviceError, match="out is"):
        t(np.zeros(4, np.float32), out=torch.zeros(4))
    with pytest.raises(pwpa.DeviceError, match="must be on the same device"):
        t(torch.zeros(4), out=torch.zeros(4, device="meta"))


def test_cuda_tensor_without_cuda_support_is_a_clear_error(random_table):
    if pwpa.cuda_compiled():
        pytest.skip("this build has CUDA support")
    assert not pwpa.cuda_available()
    from pwpa._eval import check_device

    with pytest.raises(pwpa.CudaUnavailableError, match="no CUDA support"):
        check_device(torch.device("cuda", 0))
    with pytest.raises(pwpa.DeviceError, match="not on meta"):
        random_table(torch.zeros(4, device="meta"), out=torch.zeros(4, device="meta"))


def test_numpy_bfloat16_with_ml_dtypes(random_table):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    xs = all_16bit("bf16")
    x = xs.astype(ml_dtypes.bfloat16)
    y = random_table(x)
    assert y.dtype == x.dtype
    np.testing.assert_array_equal(y.view(np.uint16), f32_to_bits(reference_eval(random_table, xs), "bf16"))


def test_non_native_byte_order(random_table):
    xs = np.linspace(-5, 7, 1001, dtype=np.float32)
    want = reference_eval(random_table, xs)
    big = xs.astype(">f4")
    np.testing.assert_array_equal(random_table(big), want)
    out = np.empty(xs.shape, ">f2")
    random_table(xs, out=out)
    np.testing.assert_array_equal(out.astype(np.float16).view(np.uint16), f32_to_bits(want, "f16"))


def test_forked_child_evaluates_single_threaded(random_table):
    import multiprocessing as mp

    if "fork" not in mp.get_all_start_methods():
        pytest.skip("no fork on this platform")
    xs = np.linspace(-5, 7, 1 << 18, dtype=np.float32)
    want = random_table(xs)  # uses the pool in the parent first
    ctx = mp.get_context("fork")
    q = ctx.Queue()

    def child():
        from pwpa import _native

        q.put((_native.parallelism(), bool(np.array_equal(random_table(xs), want))))

    p = ctx.Process(target=child)
    p.start()
    p.join(120)
    assert p.exitcode == 0, "forked child failed or hung"
    assert q.get(timeout=5) == (False, True)
    assert pwpa._native.parallelism()


def test_forked_child_fits_reports_and_derives():
    # After the parent used rayon's pool (a fit), a forked child's fit, report and
    # exp2-tail derivative (rayon inside pwpa) blocked forever at 0 % CPU; they run on a
    # pool of the child's own now, with the parent's results.
    import multiprocessing as mp

    if "fork" not in mp.get_all_start_methods():
        pytest.skip("no fork on this platform")
    parent = pwpa.fit("tanh", partitions=8)
    want = (parent.coeffs.tobytes(), parent.report()["max_abs"])
    exp = pwpa.fit("exp", exact="bf16", exp_tails=True)
    dwant = exp.derivative()(np.float32([-3.0, 0.5, 20.0]))
    ctx = mp.get_context("fork")
    q = ctx.Queue()

    def child():
        t = pwpa.fit("tanh", partitions=8)
        d = exp.derivative()(np.float32([-3.0, 0.5, 20.0]))
        q.put((t.coeffs.tobytes(), t.report()["max_abs"], d.tobytes()))

    p = ctx.Process(target=child)
    p.start()
    p.join(120)
    if p.is_alive():
        p.kill()
        p.join()
        pytest.fail("the forked child hung")
    assert p.exitcode == 0, "the forked child failed"
    coeffs, max_abs, d = q.get(timeout=5)
    assert (coeffs, max_abs) == want
    assert d == dwant.tobytes()


def test_masked_arrays_keep_their_mask(random_table):
    xs = np.linspace(-3, 3, 7, dtype=np.float32)
    m = np.ma.MaskedArray(xs, mask=[0, 1, 0, 0, 1, 0, 0])
    y = random_table(m)
    assert isinstance(y, np.ma.MaskedArray)
    np.testing.assert_array_equal(np.ma.getmaskarray(y), np.ma.getmaskarray(m))
    np.testing.assert_array_equal(y.data.view(np.uint32), random_table(xs).view(np.uint32))
    # The mask is a copy: unmasking the result leaves the input's mask alone.
    y.mask[1] = False
    assert m.mask[1]


@pytest.mark.skipif(np.lib.NumpyVersion(np.__version__) < "2.1.0", reason="numpy < 2.1: no DLPack 1.0")
def test_numpy_outputs_from_the_cpu_output_cache(sigmoid_table, output_cache):
    """A numpy output of 4 MiB or more (float32, float16) comes from pwpa's CPU output
    cache: writable, the reference's values, its memory reused once freed; with the cache
    off, numpy's own allocation."""
    x = np.linspace(-10, 10, 3 << 20, dtype=np.float32)
    want = reference_eval(sigmoid_table, x)
    y = sigmoid_table(x)
    assert y.flags.writeable and y.flags.c_contiguous and not y.flags.owndata
    assert np.array_equal(f32_to_bits(y, "f32"), f32_to_bits(want, "f32"))
    ptr = y.ctypes.data
    assert ptr % (2 << 20) == 0
    y[:] = np.nan  # written by the caller, then freed
    del y
    assert pwpa.cpu_output_cache()["cached_buffers"] == 1
    y = sigmoid_table(x.reshape(768, 4096))
    assert y.ctypes.data == ptr and y.shape == (768, 4096)
    assert np.array_equal(f32_to_bits(y.ravel(), "f32"), f32_to_bits(want, "f32"))
    xh = x.astype(np.float16)
    yh = sigmoid_table(xh)
    assert yh.dtype == np.float16 and yh.flags.writeable and not yh.flags.owndata
    wanth = reference_eval(sigmoid_table, xh.astype(np.float32)).astype(np.float16)
    assert np.array_equal(yh.view(np.uint16), wanth.view(np.uint16))
    del y, yh
    assert pwpa.cpu_output_cache()["cached_buffers"] == 2
    pwpa.cpu_output_cache(0)
    y = sigmoid_table(x)
    assert y.flags.owndata and np.array_equal(f32_to_bits(y, "f32"), f32_to_bits(want, "f32"))
