"""Defects found by a user walk-through (2026-11-25): content-hash table handles (a
program saved with torch.export and loaded elsewhere finds its table or fails, never
uses another), inputs numpy would silently coerce, progress callbacks that raise,
the useless-fit warning, and argument checks."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings

import numpy as np
import pytest
import torch
from torch import nn

import pwpa
import pwpa.torch as pt


def _table(seed=3, p=8):
    rng = np.random.default_rng(seed)
    return pwpa.Table.uniform(-4.0, 4.0, rng.normal(size=(p, 4)) * 0.3, anchors="midpoint", right_tail="extend")


def test_equal_tables_share_a_handle_and_survive_each_other():
    a = _table()
    b = pwpa.Table.from_json(a.to_json("soa"))
    c = _table(seed=4)
    assert a == b and a.handle == b.handle != c.handle
    assert 0 < a.handle < 2**62
    # metadata does not enter the handle
    doc = json.loads(a.to_json())
    doc.setdefault("meta", {})["note"] = "other metadata"
    assert pwpa.Table.from_json(json.dumps(doc)).handle == a.handle
    x = torch.linspace(-6, 6, 101)
    want = a(x)
    h = a.handle
    del a
    import gc

    gc.collect()
    # b (same content) still serves the handle
    assert torch.equal(torch.ops.pwpa.eval(x, h), want)


def _run(code, cwd):
    env = dict(os.environ)
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_exported_program_finds_its_table_by_content_in_another_process(tmp_path):
    t = _table(seed=5)
    t.save(tmp_path / "t.json")
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 4), pt.PwPA(t))
    x = torch.randn(3, 4)
    ep = torch.export.export(m, (x,))
    torch.export.save(ep, str(tmp_path / "ep.pt2"))
    torch.save({"x": x, "y": m(x).detach()}, tmp_path / "xy.pt")
    common = textwrap.dedent(
        """
        import torch, pwpa, pwpa.torch
        d = torch.load("xy.pt")
        ep = torch.export.load("ep.pt2")
        """
    )
    # The table loaded first: the same output, bit for bit.
    r = _run(common + 't = pwpa.load("t.json")\nassert torch.equal(ep.module()(d["x"]), d["y"]); print("same")\n', tmp_path)
    assert r.returncode == 0 and "same" in r.stdout, r.stderr
    # Another table alive (the case that used to pick it silently), or none: a clear error.
    for extra in ['other = pwpa.Table.uniform(-1.0, 1.0, [[2.0, 1.0]])\n', ""]:
        r = _run(
            common
            + extra
            + textwrap.dedent(
                """
                try:
                    ep.module()(d["x"])
                except pwpa.ArgumentError as e:
                    print("ArgumentError:", e)
                """
            ),
            tmp_path,
        )
        assert r.returncode == 0, r.stderr
        assert "ArgumentError" in r.stdout and "does not refer to a live table" in r.stdout, r.stdout + r.stderr
        assert "torch.export" in r.stdout


@pytest.mark.parametrize("bad", [None, "1.5", b"2", bytearray(b"2"), [None, 1.0], ["1", "2"], True, [True, False], [[1.0], [2.0, 3.0]], {"x": 1.0}])
def test_values_numpy_would_coerce_are_refused(bad):
    t = _table()
    with pytest.raises(pwpa.ArgumentError, match="cannot evaluate"):
        t(bad)


def test_numpy_float64_scalars_are_python_floats():
    t = _table()
    y = t(np.float64(1.25))
    assert isinstance(y, float) and y == t(1.25)
    assert t(np.float32(1.25)) == np.float32(t(1.25))
    assert t(3) == t(3.0)  # ints are numbers too
    with pytest.raises(pwpa.DTypeError):
        t(np.array([1.25]))  # f64 arrays stay unsupported


def test_progress_callback_errors_propagate():
    calls = []

    def cb(frac, msg):
        calls.append(frac)
        raise ZeroDivisionError("from the callback")

    with pytest.raises(ZeroDivisionError, match="from the callback"):
        pwpa.fit("tanh", partitions=8, degree=3, progress=cb)
    assert len(calls) == 1  # not called again after it raised
    with pytest.raises(pwpa.ArgumentError, match="progress must be callable"):
        pwpa.fit("tanh", progress=5)
    seen = []
    pwpa.fit("tanh", partitions=8, degree=3, progress=lambda f, m: seen.append((f, m)))
    assert seen and seen[-1][0] == 1.0


@contextlib.contextmanager
def _sigint_in(seconds):
    """Sends this process SIGINT (Ctrl-C) from a thread after `seconds`, with Python's
    own SIGINT handler installed until the block ends: a shell starts a background job
    without job control with SIGINT ignored, and Python then never raises
    KeyboardInterrupt (these tests failed so under `(cmd &)`)."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)

    def interrupt():
        time.sleep(seconds)
        os.kill(os.getpid(), signal.SIGINT)

    try:
        threading.Thread(target=interrupt, daemon=True).start()
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def test_ctrl_c_and_callback_errors_stop_a_long_fit():
    """A million adaptive pieces take minutes to place; Ctrl-C (SIGINT,
    sent here from a thread a second in) and an exception from the progress callback
    both stop it within seconds, raising their exception."""
    t0 = time.perf_counter()
    with _sigint_in(1.0), pytest.raises(KeyboardInterrupt):
        pwpa.fit("gelu", partitions=1 << 20)
    assert time.perf_counter() - t0 < 30

    calls = []

    def cb(frac, msg):
        calls.append(msg)
        raise ValueError("enough")

    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="enough"):
        pwpa.fit("gelu", partitions=1 << 20, progress=cb)
    assert len(calls) == 1
    assert time.perf_counter() - t0 < 30


def test_useless_fit_warns():
    with pytest.warns(pwpa.FitWarning, match=r"no nearer to exp than 0 is \(to within 0\.1 %\) on 9\d % of"):
        t = pwpa.fit("exp")
    assert "warning" in t.meta
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = pwpa.fit("gelu")
        t = pwpa.fit("exp", range=(-4, 4), error="rel", partitions=32, left_tail="extend", right_tail="extend")
    assert "warning" not in t.meta


def test_catalogue_tails_far_from_f_beyond_a_narrowed_range_warn():
    # exp's tails (0 and +Inf) are its asymptotes on [-104, 88.72]; on [-1, 1] the table
    # gave +Inf at 1.0000001 without a word.
    with pytest.warns(pwpa.FitWarning, match=r"default right tail \(constant\) is far from exp above the range's end 1: at x = 1\.0000001 the table gives inf"):
        t = pwpa.fit("exp", range=(-1, 1))
    assert "default left tail" in t.meta["warning"]
    assert np.isinf(t(np.float32([1.5]))[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pwpa.fit("exp", range=(-1, 1), left_tail="extend", right_tail="extend")


def test_argument_checks():
    t = _table()
    with pytest.raises(pwpa.ArgumentError, match="takes a torch tensor"):
        pt.value_and_derivative(np.zeros(3, np.float32), t)
    with pytest.raises(pwpa.ArgumentError, match="takes a pwpa.Table"):
        pt.value_and_derivative(torch.zeros(3), "gelu.json")
    with pytest.raises(pwpa.ArgumentError, match="True or False"):
        pwpa.set_parallelism("no")
    pwpa.set_parallelism(True)


def test_binary_file_is_a_table_error(tmp_path):
    p = tmp_path / "rand.json"
    p.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(pwpa.TableError, match="does not start with '{'"):
        pwpa.load(p)
    p.write_bytes(b'{"format": "\xff"}')
    with pytest.raises(pwpa.TableError, match="not a text file"):
        pwpa.load(p)


def test_export_c_header_and_memh(tmp_path):
    """Table.export: the C header compiles and gives table(x)'s f32 bits; the image holds
    P, D and the breakpoints; bad requests are clear errors without a file."""
    import shutil

    t = _table(seed=9)
    t.export(tmp_path / "my-table.h")
    text = (tmp_path / "my-table.h").read_text()
    assert "static inline float my_table_eval(float x)" in text
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    assert cc, "no C compiler (cargo needs one as its linker)"
    (tmp_path / "main.c").write_text(
        '#include <stdio.h>\n#include "my-table.h"\n'
        "int main(void) { float x; while (fread(&x, 4, 1, stdin) == 1) { float y = my_table_eval(x); fwrite(&y, 4, 1, stdout); } return 0; }\n"
    )
    subprocess.run([cc, "-std=c99", "-O2", "main.c", "-o", "main", "-lm"], cwd=tmp_path, check=True)
    x = np.concatenate(
        [np.linspace(-6, 6, 2001, dtype=np.float32), np.float32([np.inf, -np.inf, np.nan, 0.0, -0.0]), t.breakpoints.astype(np.float32)]
    )
    out = subprocess.run([str(tmp_path / "main")], input=x.tobytes(), capture_output=True, check=True).stdout
    got = np.frombuffer(out, dtype=np.float32)
    assert np.array_equal(got.view(np.uint32), t(x).view(np.uint32))
    t.export(tmp_path / "t.mem")
    words = [
        int(w, 16)
        for line in (tmp_path / "t.mem").read_text().splitlines()
        for w in [line.split("//")[0].strip()]
        if w and not w.startswith("@")
    ]
    assert words[:2] == [0x70777061, 1]  # "pwpa" in ASCII, layout version 1
    assert words[2] == t.partitions and words[3] == t.degree
    assert words[10] == np.float32(t.breakpoints[0]).view(np.uint32)
    for kwargs, msg in [
        (dict(path=tmp_path / "t.txt"), "cannot tell the export format"),
        (dict(path=tmp_path / "t.h", name="1x"), "not a usable C identifier"),
        (dict(path=tmp_path / "t.mem", name="x"), "C headers only"),
        (dict(path=tmp_path / "t.h", format="verilog"), "unknown export format"),
    ]:
        with pytest.raises(pwpa.PwpaError, match=msg):
            t.export(**kwargs)
    assert not (tmp_path / "t.txt").exists() and not (tmp_path / "t.h").exists()
    with pytest.raises(pwpa.PwpaIOError):
        t.export(tmp_path / "no" / "dir" / "t.h")


# ---- session 17: findings of a user-testing pass -------------------------------------


def test_report_samples_are_checked():
    t = pwpa.fit("tanh", partitions=4)
    for bad in (10**12, -1, 0, 1, 2.5, True, "100"):
        with pytest.raises(pwpa.ArgumentError, match="samples must be an integer"):
            t.report(samples=bad)
    # 1000 evenly spaced points, 250 evenly spaced in f32 order, 32 inside each of the 4
    # pieces, and the breakpoints and their neighbours (without duplicates); then the
    # points added near the sweep's peaks and the zeros of f, counted apart.
    r = t.report(samples=1000)["in_range"]
    n = r["points"] - r["refined"]
    assert 1000 + 250 <= n <= 1000 + 250 + 32 * 4 + 3 * 5, n
    assert r["refined"] > 2048, r


def test_assigning_a_modules_table_switches_evaluation():
    import pathlib

    import pwpa.torch as pt

    t1, t2 = pwpa.fit("gelu", partitions=8), pwpa.fit("tanh", partitions=8)
    act = pt.PwPA(t1)
    x = torch.linspace(-2, 2, 9)
    assert torch.equal(act(x), t1(x))
    act.table = t2
    assert torch.equal(act(x), t2(x))
    assert act.handle == t2.handle
    fresh = pt.PwPA(t1)
    fresh.load_state_dict(act.state_dict())
    assert torch.equal(fresh(x), t2(x))
    # A path, as a str or a pathlib.Path.
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = pathlib.Path(d) / "t.json"
        t2.save(path)
        assert torch.equal(pt.PwPA(path)(x), t2(x))
        act.table = str(path)
        assert torch.equal(act(x), t2(x))


def test_non_tensors_to_the_torch_entry_points_are_named():
    import pwpa.torch as pt

    t = pwpa.fit("tanh", partitions=4)
    with pytest.raises(pwpa.ArgumentError, match="takes a torch tensor, got ndarray"):
        pt.PwPA(t)(np.zeros(3, np.float32))
    with pytest.raises(pwpa.ArgumentError, match="takes a torch tensor, got list"):
        pt.pwpa_eval([1.0], t)
    with pytest.raises(pwpa.ArgumentError, match="pwpa.Table or its handle"):
        pt.pwpa_eval(torch.zeros(3), "gelu")
    # aos2soa/soa2aos take lists too (as numpy).
    assert np.array_equal(pwpa.ops.aos2soa([[1, 2], [3, 4]], 1), np.array([[1, 3], [2, 4]], np.float32))


def test_degenerate_coefficient_shapes_are_shape_errors():
    for make in (
        lambda: pwpa.Table([-1, 0, 1], np.empty((2, 0))),
        lambda: pwpa.Table([-1, 0, 1], [1, 0, 2, 0], degree=-1),
        lambda: pwpa.Table.from_seed(np.ones((2, 0)), [0, 1, 2]),
        lambda: pwpa.ops.pwpa(torch.randn(10), torch.empty(4, 0), torch.linspace(-2, 2, 5)),
    ):
        with pytest.raises(pwpa.ShapeError):
            make()
    with pytest.raises(pwpa.ArgumentError, match="degree must be an integer"):
        pwpa.Table([-1, 0, 1], [1, 0, 2, 0], degree=1.5)


def test_equal_tables_hash_equal():
    t = pwpa.fit("tanh", partitions=4)
    u = pwpa.Table.from_json(t.to_json())
    assert t == u and hash(t) == hash(u) and len({t, u}) == 1
    assert hash(pwpa.fit("tanh", partitions=5)) != hash(t)


def test_the_handle_registry_forgets_dead_tables():
    import gc

    base = pwpa.fit("tanh", partitions=4)
    before = len(pwpa._REGISTRY)
    for i in range(300):
        c = base.coeffs.copy()
        c[0, 0] += np.float32(i + 1)
        pwpa.Table(base.breakpoints, c, anchors=list(base.anchors)).handle
    gc.collect()
    assert len(pwpa._REGISTRY) <= before + 1


def test_out_under_torch_compile_matches_eager():
    t = pwpa.fit("gelu", partitions=4)
    x = torch.randn(5, 8)
    for xd, od in [(torch.float32, torch.float32), (torch.float16, torch.float32), (torch.float32, torch.bfloat16)]:
        xx = x.to(xd)

        def f(v, od=od):
            return t(v, out=torch.empty(v.shape, dtype=od))

        got = torch.compile(f, fullgraph=True)(xx)
        assert got.dtype == od
        assert torch.equal(got, t(xx, out=torch.empty(xx.shape, dtype=od)))


def test_fit_argument_consistency():
    with pytest.raises(pwpa.ArgumentError, match="give max_error too"):
        pwpa.fit("gelu", vary_degree=True)
    with pytest.raises(pwpa.ArgumentError, match="'bf16' or 'f16'") as e:
        pwpa.fit("gelu", exact=True)
    assert "f32" not in str(e.value)
    t = pwpa.fit("tanh", partitions=4)
    with pytest.raises(pwpa.ArgumentError):
        t.export("/tmp/pwpa-bad-name.h", name="1 bad name")


def test_samples_fit_beyond_the_data_warns():
    xs = np.linspace(-1, 1, 50)
    with pytest.warns(pwpa.FitWarning, match="beyond the samples' span"):
        t = pwpa.fit((xs, xs**2), range=(-5, 5), partitions=8)
    assert "beyond" in t.meta["warning"]


def test_numpy_scalars_give_numpy_scalars_and_big_ints_evaluate():
    t = pwpa.fit("tanh", partitions=4)
    for v in (np.float32(0.5), np.float16(0.5)):
        r = t(v)
        assert isinstance(r, np.generic) and r.dtype == v.dtype
        assert r == t(np.array([v]))[0]
    assert t(10**40) == t(float("inf")) == 1.0 and t(-(10**40)) == -1.0
    # in a sequence too (numpy makes an object array of them)
    assert t([10**40, -(2**64), 0]).tolist() == [1.0, -1.0, t(0.0)]
    with pytest.raises(pwpa.ArgumentError, match="cannot evaluate a bool:"):
        t(True)


def test_public_names_are_in_all():
    # help(pwpa) lists __all__ only: set_parallelism (PYTHON.md) was missing, and
    # pwpa.torch's docs refer to seed_eval.
    assert "set_parallelism" in pwpa.__all__
    for name in pwpa.__all__:
        assert hasattr(pwpa, name), name
    torch_mod = pytest.importorskip("pwpa.torch")
    assert "seed_eval" in torch_mod.__all__
    for name in torch_mod.__all__:
        assert hasattr(torch_mod, name), name


def _every_f32_max_rel(t, lo, hi):
    """Independent max relative error of t over every f32 of [lo, hi] (0 < lo < hi),
    against the cubic in f64 (relative where |f| >= 2^-126)."""
    bits = np.arange(np.float32(lo).view(np.uint32), np.float32(hi).view(np.uint32) + 1, dtype=np.uint32)
    x = bits.view(np.float32)
    r = (x.astype(np.float64) - 0.1) * (x.astype(np.float64) - 0.3) * (x.astype(np.float64) - 0.7)
    got = t.eval(x).astype(np.float64)
    keep = np.abs(r) >= 2.0**-126
    return len(x), float(np.max(np.abs(got[keep] - r[keep]) / np.abs(r[keep])))


def test_every_f32_fit_and_report_check_every_input():
    """every_f32=True: the fit's check and the report take every f32 of a range that the
    default check samples ([0.5, 8]: 2^25 + 1 inputs), matching an independent sweep."""
    expr = "(x-0.1)*(x-0.3)*(x-0.7)"
    t = pwpa.fit(expr, range=(0.5, 8), partitions=3, degree=3, error="rel", every_f32=True)
    assert t.meta["verified_on"] == "every f32 input of the range"
    n, want = _every_f32_max_rel(t, 0.5, 8)
    assert n == 2**25 + 1
    assert t.meta["verified_error"] == pytest.approx(want, rel=1e-9)
    r = t.report(every_f32=True)
    assert r["in_range_every_f32"] is True
    assert r["in_range"]["points"] == n
    assert r["in_range"]["max_rel"] == pytest.approx(want, rel=1e-9)
    d = t.report()
    assert d["in_range_every_f32"] is False
    assert d["in_range"]["max_rel"] <= r["in_range"]["max_rel"]
    sampled = pwpa.fit(expr, range=(0.5, 8), partitions=3, degree=3, error="rel")
    assert sampled.meta["verified_on"] != "every f32 input of the range"


def test_flags_take_only_booleans():
    """bool("no") is True: yes/no arguments refuse strings and numbers."""
    for kw in ("every_f32", "continuous", "exp_tails", "vary_degree", "exp_tails_at_ends"):
        with pytest.raises(pwpa.ArgumentError, match=f"{kw} must be True or False"):
            pwpa.fit("tanh", max_error=1e-3, **{kw: "no"})
    t = pwpa.fit("tanh", partitions=4, degree=2, continuous=np.bool_(True))
    assert t.meta["continuous"] is True
    with pytest.raises(pwpa.ArgumentError, match="every_f32 must be True or False"):
        t.report(every_f32=1)
    with pytest.raises(pwpa.ArgumentError, match="samples or every_f32"):
        t.report(samples=1000, every_f32=True)


def test_ctrl_c_stops_a_report_of_every_f32_input():
    """Every f32 of [-1e15, 1e15] (about 3 * 10^9 inputs, a minute or more): Ctrl-C a second in
    stops the report within seconds with KeyboardInterrupt."""
    t = pwpa.fit("x", range=(-1e15, 1e15), partitions=2, degree=1)
    t0 = time.perf_counter()
    with _sigint_in(1.0), pytest.raises(KeyboardInterrupt):
        t.report(every_f32=True)
    assert time.perf_counter() - t0 < 30


def test_a_table_fitted_to_samples_names_why_it_has_no_reference(tmp_path):
    """A table fitted to samples records "samples(N points)", which cannot be evaluated:
    report() says so (it said "unknown function 'samples'"), plot() draws the table alone
    (as `pwpa plot`) unless a ULP curve needs the function, and target= still works."""
    xs = np.linspace(0.0, 3.0, 31)
    t = pwpa.fit((xs, xs**2), partitions=1, degree=2)
    for kw in ({}, {"every_f32": True}):
        with pytest.raises(pwpa.ArgumentError, match=r"fitted to samples\(31 points\).*pass target="):
            t.report(**kw)
    r = t.report(target="x*x")
    # (a fit to samples follows the lines between them: at most h^2/4 = 2.5e-3 from x^2)
    assert 0 < r["in_range"]["max_abs"] < 2.5e-3
    t.plot(tmp_path / "t.svg")
    assert (tmp_path / "t.svg").stat().st_size > 0
    with pytest.raises(pwpa.ArgumentError, match="ULP error curve needs the function"):
        t.plot(tmp_path / "u.svg", ulp="f32")
    assert not (tmp_path / "u.svg").exists()


def test_samples_refuse_exp_tails():
    # exp2 tails are fitted to the function beyond the range; samples have none (the
    # option was ignored silently).
    xs = np.linspace(0, 1, 10)
    with pytest.raises(pwpa.ArgumentError, match="samples have no values there"):
        pwpa.fit((xs, xs * xs), exp_tails=True)


# ---- session 37 audit (an adversarial PyTorch user, 2026-11-28) ----------------------


def test_out_with_forward_ad_or_inside_transforms_is_refused():
    """table(x, out=y) writes memory directly: a tangent on x would be dropped and one on
    y left stale (PyTorch's own out= functions raise too), and torch.func wrappers have
    no memory to write."""
    import torch.autograd.forward_ad as fwAD

    t = _table()
    with fwAD.dual_level():
        x = fwAD.make_dual(torch.tensor([0.5, -0.5]), torch.ones(2))
        with pytest.raises(pwpa.ArgumentError, match="forward-mode"):
            t(x, out=torch.empty(2))
        o = fwAD.make_dual(torch.zeros(2), torch.full((2,), 7.0))
        with pytest.raises(pwpa.ArgumentError, match="forward-mode"):
            t(torch.tensor([0.5, -0.5]), out=o)
        # plain tensors inside a dual level are fine
        y = torch.empty(2)
        t(torch.tensor([0.5, -0.5]), out=y)
        assert torch.equal(y, t(torch.tensor([0.5, -0.5])))
    with pytest.raises(pwpa.ArgumentError, match="torch.func transforms"):
        torch.func.vmap(lambda v: t(v, out=torch.empty_like(v)))(torch.randn(3, 2))


def test_value_and_derivative_under_transforms_and_compile():
    """value_and_derivative inside vmap/grad and under torch.compile(fullgraph=True):
    the same bits as eagerly, in the derivative dtype asked for."""
    t = _table()
    d = t.derivative()
    x = torch.randn(3, 5) * 3
    y = torch.func.vmap(lambda v: pt.value_and_derivative(v, t)[1])(x)
    assert torch.equal(y, d(x))
    g = torch.func.grad(lambda v: pt.value_and_derivative(v, t)[0].sum())(x[0])
    assert torch.equal(g, d(x[0]))
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        xd = x.to(dtype)
        for ddt in (None, torch.float32):
            want = pt.value_and_derivative(xd, t, ddt)
            f = torch.compile(lambda v: pt.value_and_derivative(v, t, ddt), fullgraph=True)
            got = f(xd)
            assert got[1].dtype == (ddt or dtype)
            assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
            want32 = d(xd.float()).to(ddt or dtype)  # f32, rounded once
            assert torch.equal(want[1], want32)
    with pytest.raises(pwpa.ArgumentTypeError, match="torch.dtype"):
        pt.value_and_derivative(x, t, derivative_dtype="float16")
    with pytest.raises(pwpa.DTypeError, match="float64"):
        pt.value_and_derivative(x, t, derivative_dtype=torch.float64)


def test_seed_layout_helpers_compile_and_the_seed_spelling_AOS():
    import pwpa.ops as ops

    c = torch.randn(4, 3)
    s = torch.compile(lambda c: ops.aos2soa(c, 2), fullgraph=True)(c)
    assert torch.equal(s, c.t().contiguous())
    pts = torch.linspace(-2, 2, 5)
    x = torch.linspace(-3, 3, 101)
    # (the seed's own example writes AOS=False)
    assert torch.equal(ops.pwpa(x, ops.aos2soa(c, 2), pts, AOS=False), ops.pwpa(x, c, pts))
    with pytest.raises(pwpa.ArgumentError, match="not both"):
        ops.pwpa(x, c, pts, AoS=False, AOS=False)


def test_wrong_argument_types_are_typed_errors(tmp_path):
    t = _table()
    with pytest.raises(pwpa.ArgumentTypeError, match="target"):
        t.report(target=5)
    with pytest.raises(pwpa.ArgumentTypeError, match="dtype"):
        t.report(dtype=None)
    for r in ("ab", (1, 2, 3), ("a", "b")):
        with pytest.raises(pwpa.ArgumentError, match="two numbers"):
            t.plot(tmp_path / "a.svg", range=r)
    assert pwpa.Table.from_json(t.to_json().encode()) == t
    with pytest.raises(pwpa.ArgumentTypeError, match="str"):
        pwpa.Table.from_json(None)
    with pytest.raises(pwpa.TableError, match="UTF-8"):
        pwpa.Table.from_json(b"\xff{")
    with pytest.raises(pwpa.TableError, match="Unicode"):
        pwpa.Table.from_json('{"x": "\ud800"}')
    for call in (t.save, t.export, t.plot, pwpa.Table.load, pwpa.load):
        with pytest.raises(pwpa.ArgumentTypeError, match="path must be"):
            call(3)
    # a file name that is not UTF-8 (bytes from os.listdir(b".")) works everywhere
    (tmp_path / "odd").mkdir()
    odd = os.fsencode(str(tmp_path / "odd")) + b"/t\xff"
    t.save(odd + b".json")
    assert pwpa.Table.load(odd + b".json") == t
    t.export(odd + b".h")
    t.plot(odd + b".svg")
    assert sorted(os.listdir(os.fsencode(str(tmp_path / "odd")))) == [b"t\xff.h", b"t\xff.json", b"t\xff.svg"]
    with pytest.raises(pwpa.ArgumentError, match="integer"):
        pwpa.Table({"lo": 0, "hi": 1, "partitions": 2.7}, [[1.0], [2.0]])
    with pytest.raises(pwpa.ArgumentError, match="unknown key"):
        pwpa.Table({"lo": 0, "hi": 1, "partitions": 2, "p": 3}, [[1.0], [2.0]])
    with pytest.raises(pwpa.ArgumentTypeError, match="nn.Module"):
        pt.replace_activations(None, {nn.GELU: t})
    with pytest.raises(pwpa.ArgumentTypeError, match="containers"):
        pt.replace_activations(nn.Sequential(nn.Linear(2, 2)), {nn.Module: t})


def test_replacements_keep_the_models_mode():
    t = pwpa.fit("gelu", partitions=16, degree=3)
    m = nn.Sequential(nn.Linear(2, 2), nn.GELU()).eval()
    pt.replace_activations(m, {nn.GELU: t})
    assert isinstance(m[1], pt.PwPA) and not m[1].training
    layer = nn.TransformerEncoderLayer(8, 2, 16, activation="gelu", batch_first=True).eval()
    pt.replace_activations(layer, {nn.GELU: t})
    assert isinstance(layer.activation, pt.PwPA) and not layer.activation.training


# ---- session 38: an ML user's audit --------------------------------------------------------


def test_table_arrays_are_read_only():
    # They are fresh copies: writing into one changed nothing, silently.
    t = pwpa.fit("gelu", partitions=16, degree=3)
    x = np.linspace(-4, 4, 101, dtype=np.float32)
    before = t(x)
    for name in ("coeffs", "breakpoints", "anchors"):
        a = getattr(t, name)
        assert not a.flags.writeable, name
        with pytest.raises(ValueError, match="read-only"):
            a[0] = 99.0
    # an edited copy builds a changed table
    c = t.coeffs.copy()
    c[:, -1] += 1.0
    u = pwpa.Table(t.breakpoints, c, anchors=t.anchors)
    assert np.array_equal(t(x), before)
    assert not np.array_equal(u(x), before)
