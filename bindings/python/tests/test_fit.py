"""pwpa.fit: argument handling and fits, checked against independent f64 references."""

import math

import numpy as np
import pytest
import torch

import pwpa
from conftest import all_16bit, sigmoid64


def catalogue_or_skip(name):
    if name not in [f["name"] for f in pwpa.functions()]:
        pytest.skip(f"'{name}' is not in this build's catalogue yet")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(method="cubic"), "unknown method 'cubic' (expected one of: minimax, lsq)"),
        (dict(breakpoints="random"), "unknown breakpoints 'random'"),
        (dict(error="ulp"), "unknown error measure 'ulp'"),
        (dict(max_error=1e-3, exact="bf16"), "give max_error or exact, not both"),
        (dict(max_error=-1.0), "max_error must be a positive finite number"),
        (dict(exact="int8"), "unsupported dtype int8"),
        (dict(exact=True), "exact= takes a dtype"),
        (dict(range=(1.0,)), "range must be"),
        (dict(partitions=-3), "partitions must be a non-negative integer"),
        # max_error follows the counts' rule: a number, not a string or a bool.
        (dict(max_error="1e-3"), "max_error must be a positive finite number (got '1e-3')"),
        (dict(max_error=True), "max_error must be a positive finite number (got True)"),
        (dict(partitions="4"), "partitions must be a non-negative integer (got '4')"),
        (dict(partitions=True), "partitions must be a non-negative integer (got True)"),
        # Not a bare OverflowError: a PwpaError naming the argument.
        (dict(partitions=2**64), "partitions is too large"),
        (dict(max_partitions=2**64), "max_partitions is too large"),
        (dict(degree=2**70), "degree is too large"),
        (dict(left_tail="flat"), "invalid left tail"),
        (dict(right_tail={"kind": "linear", "slope": 1.0}), "missing field 'intercept'"),
    ],
)
def test_bad_fit_arguments(kwargs, message):
    with pytest.raises(pwpa.PwpaError, match=message.replace("(", r"\(").replace(")", r"\)")):
        pwpa.fit("sigmoid", **kwargs)


def test_bad_targets():
    with pytest.raises(pwpa.ArgumentError, match="func must be"):
        pwpa.fit(3.0)
    with pytest.raises(pwpa.ShapeError, match="3 x values but 2 y values"):
        pwpa.fit(([0.0, 1.0, 2.0], [0.0, 1.0]))


def test_every_option_reaches_the_fitter():
    # Passes every FitOptions field; each one shows in the table.
    t = pwpa.fit(
        "tanh", range=(-4, 4), partitions=8, degree=3, method="minimax", breakpoints="adaptive",
        error="abs", max_error=None, exact=None, continuous=True, exp_tails=False, exp_tails_at_ends=False,
        left_tail=-1.0, right_tail=("constant", 1.0), vary_degree=False, max_partitions=64,
        max_degree=5, progress=lambda f, m: None,
    )
    assert t.partitions == 8 and t.degree == 3
    assert t.left_tail == {"kind": "constant", "value": -1.0}
    assert t.right_tail == {"kind": "constant", "value": 1.0}


def test_minimax_fit_of_sigmoid_is_accurate():
    t = pwpa.fit("sigmoid", partitions=16, degree=3)
    xs = np.linspace(*t.range, 200001).astype(np.float32)
    err = np.max(np.abs(t(xs).astype(np.float64) - sigmoid64(xs)))
    assert err < 1e-4
    r = t.report()  # the fitted table records its function
    assert r["max_abs"] == pytest.approx(err, rel=0.5)
    lsq = pwpa.fit("sigmoid", partitions=16, degree=3, method="lsq", breakpoints="uniform")
    err_lsq = np.max(np.abs(lsq(xs).astype(np.float64) - sigmoid64(xs)))
    assert err <= err_lsq


def test_max_error_goal():
    t = pwpa.fit("tanh", degree=3, max_error=1e-5)
    xs = np.linspace(*t.range, 100001).astype(np.float32)
    assert np.max(np.abs(t(xs).astype(np.float64) - np.tanh(xs.astype(np.float64)))) <= 1e-5 * 1.01


def _correctly_rounded_bf16(y64, got_bits):
    """Each got value is the bf16 nearest to y64 (checks both neighbours)."""
    got = (got_bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    up = ((got_bits.astype(np.uint32) + 1) << 16).view(np.float32).astype(np.float64)
    dn = ((got_bits.astype(np.uint32) - 1) << 16).view(np.float32).astype(np.float64)
    e = np.abs(got - y64)
    # A neighbour pattern that is NaN (below 0x0000 or 0x8000, above ±Inf) is no candidate.
    with np.errstate(invalid="ignore"):
        ok_up = np.isnan(up) | (e <= np.abs(up - y64))
        ok_dn = np.isnan(dn) | (e <= np.abs(dn - y64))
    return ok_up & ok_dn & ~np.isnan(got)


@pytest.mark.parametrize("name, ref", [("tanh", np.tanh), ("sigmoid", sigmoid64)])
def test_bf16_exact_fit_is_correctly_rounded_everywhere(name, ref):
    # `exact` covers the range; exp2 tails make the decaying side exact too (every finite input).
    t = pwpa.fit(name, exact="bf16", exp_tails=True)
    xs = all_16bit("bf16")
    xs = xs[np.isfinite(xs)]
    y = t(torch.from_numpy(xs).bfloat16())
    bits = y.view(torch.int16).numpy().view(np.uint16)
    ok = _correctly_rounded_bf16(ref(xs.astype(np.float64)), bits)
    assert ok.all(), f"{(~ok).sum()} bf16 inputs not correctly rounded, e.g. x={xs[~ok][:5]}"


def test_exp_tails_at_ends_keep_the_pieces_over_the_range():
    # By default sigmoid's exp2 left tail takes over part of [-16, 16]; at the ends the
    # pieces cover all of it and the tail starts at -16. Every finite bf16 input stays
    # correctly rounded.
    kw = dict(range=(-16, 16), degree=6, breakpoints="uniform", exact="bf16", exp_tails=True)
    taken = pwpa.fit("sigmoid", **kw)
    ends = pwpa.fit("sigmoid", exp_tails_at_ends=True, **kw)
    assert taken.range[0] > -15 and ends.range == (-16.0, 16.0)
    assert ends.left_tail["kind"] == "exp2" and ends.left_tail["anchor"] == -16.0
    xs = all_16bit("bf16")
    xs = xs[np.isfinite(xs)]
    bits = ends(torch.from_numpy(xs).bfloat16()).view(torch.int16).numpy().view(np.uint16)
    ok = _correctly_rounded_bf16(sigmoid64(xs.astype(np.float64)), bits)
    assert ok.all(), f"{(~ok).sum()} bf16 inputs not correctly rounded, e.g. x={xs[~ok][:5]}"
    with pytest.raises(pwpa.ArgumentError, match="give exp_tails=True too"):
        pwpa.fit("sigmoid", exact="bf16", exp_tails_at_ends=True)


def test_gelu_and_silu_fit_when_in_catalogue():
    for name, ref in (
        ("gelu", lambda v: 0.5 * v * (1 + np.vectorize(math.erf)(v / math.sqrt(2)))),
        ("silu", lambda v: v * sigmoid64(v)),
    ):
        catalogue_or_skip(name)
        t = pwpa.fit(name, partitions=32, degree=3)
        xs = np.linspace(*t.range, 20001).astype(np.float32)
        assert np.max(np.abs(t(xs).astype(np.float64) - ref(xs.astype(np.float64)))) < 1e-4


def test_fit_from_samples():
    xs = np.linspace(-3, 3, 2001)
    t = pwpa.fit((xs, np.sin(xs)), partitions=8, degree=4)
    q = np.linspace(-2.9, 2.9, 999).astype(np.float32)
    assert np.max(np.abs(t(q) - np.sin(q.astype(np.float64)))) < 1e-3




def test_log_breakpoints_are_bit_uniform_and_exact():
    # breakpoints="log": interior points equally spaced in f32 bit patterns from the
    # range's start (a power-of-two step), the last point the range's end; the bf16-exact
    # reciprocal is correctly rounded on every bf16 input of its range.
    t = pwpa.fit("reciprocal", exact="bf16", degree=3, breakpoints="log")
    pts = np.asarray(t.breakpoints, dtype=np.float32)
    bits = pts.view(np.uint32).astype(np.int64)
    steps = np.diff(bits[:-1])
    assert len(pts) == t.partitions + 1 and (pts[0], pts[-1]) == (0.015625, 64.0)
    assert (steps == steps[0]).all() and steps[0] & (steps[0] - 1) == 0
    assert bits[-1] - bits[-2] <= steps[0]
    xs = all_16bit("bf16")
    xs = xs[(xs >= 0.015625) & (xs <= 64)]
    y = t(torch.from_numpy(xs).bfloat16())
    ybits = y.view(torch.int16).numpy().view(np.uint16)
    ok = _correctly_rounded_bf16(1.0 / xs.astype(np.float64), ybits)
    assert ok.all(), f"{(~ok).sum()} bf16 inputs not correctly rounded, e.g. x={xs[~ok][:5]}"
    with pytest.raises(pwpa.PwpaError, match="log breakpoints need a finite positive range"):
        pwpa.fit("tanh", breakpoints="log")


def test_a_goal_out_of_reach_is_a_fit_error_naming_the_best_table():
    with pytest.raises(pwpa.FitError, match=r"not reached within the limits \(P ≤ 8, D ≤ 3\); best found: .* with 8 pieces"):
        pwpa.fit("gelu", max_error=1e-6, max_partitions=8)
    with pytest.raises(pwpa.FitError, match="is correctly rounded in bf16"):
        pwpa.fit("gelu", exact="bf16", degree=1, max_partitions=8)
