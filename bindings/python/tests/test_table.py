"""Tables: construction, validation errors, JSON/seed round trips, derivative, report."""

import json
import os
import pickle

import numpy as np
import pytest

import pwpa
from conftest import reference_eval, sigmoid64


def test_properties_of_a_uniform_table(random_table):
    t = random_table
    assert (t.partitions, t.degree) == (10, 3)
    assert (t.P, t.D) == (10, 3)
    assert t.uniform_breakpoints
    assert t.range == (-3.0, 5.0)
    np.testing.assert_allclose(t.breakpoints, np.linspace(-3, 5, 11))
    assert t.coeffs.shape == (10, 4) and t.coeffs.dtype == np.float32
    np.testing.assert_array_equal(t.anchors, (np.linspace(-3, 5, 11)[:-1] + 0.4).astype(np.float32))
    assert t.left_tail == {"kind": "extend"}
    assert t.right_tail == {"kind": "linear", "slope": 0.5, "intercept": -1.0}


def test_json_file_and_pickle_round_trips(tmp_path, tanh_table_arbitrary):
    t = tanh_table_arbitrary
    assert pwpa.Table.from_json(t.to_json()) == t
    assert pwpa.Table.from_json(t.to_json("soa")) == t
    assert json.loads(t.to_json("soa"))["layout"] == "soa"
    path = tmp_path / "t.json"
    t.save(path)
    assert pwpa.load(path) == t
    assert pwpa.Table.load(str(path)) == t
    assert pickle.loads(pickle.dumps(t)) == t


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(breakpoints=[0.0, 1.0, 1.0], coeffs=[[1.0], [2.0]]), "strictly increasing"),
        (dict(breakpoints=[0.0, 1.0, 2.0], coeffs=[1.0, 2.0, 3.0], degree=1), "expected 4 coefficients"),
        (dict(breakpoints=[0.0, 1.0], coeffs=[[np.nan, 1.0]]), "coefficient 0 is not finite"),
        (dict(breakpoints={"lo": 1.0, "hi": 1.0, "partitions": 2}, coeffs=[[1.0], [1.0]]), "empty range"),
        (dict(breakpoints=[0.0, 1.0], coeffs=[[0.0] * 17]), "degree 16 is above the maximum of 15"),
        (dict(breakpoints=[0.0, 1.0], coeffs=[[1.0]], right_tail={"kind": "constant", "value": float("nan")}), "invalid right tail"),
        # (10**10 uniform pieces had the constructor build lists of 10**10 points and anchors
        # first, and the process was killed for memory.)
        (dict(breakpoints={"lo": -1.0, "hi": 1.0, "partitions": 10**10}, coeffs=[[1.0, 0.0]]), "10000000000 partitions is more than the limit of 1048576"),
        (dict(breakpoints={"lo": -1.0, "hi": 1.0, "partitions": (1 << 20) + 1}, coeffs=[[1.0, 0.0]], anchors="midpoint"), "more than the limit"),
    ],
)
def test_invalid_tables_raise_table_error(kwargs, message):
    with pytest.raises(pwpa.TableError, match=message):
        pwpa.Table(**kwargs)


def test_tails_read_from_a_table_can_be_given_back():
    # An infinite constant reads back as the table format's string "inf"; that dict is
    # accepted as a tail again (it was "field 'value' must be a number").
    t = pwpa.Table([-1.0, 0.0, 1.0], [[1.0, 0.0], [2.0, 0.0]], left_tail=float("-inf"), right_tail=float("inf"))
    assert t.left_tail == {"kind": "constant", "value": "-inf"}
    assert t.right_tail == {"kind": "constant", "value": "inf"}
    u = pwpa.Table([-1.0, 0.0, 1.0], [[1.0, 0.0], [2.0, 0.0]], left_tail=t.right_tail, right_tail=t.left_tail)
    x = np.array([-5.0, 5.0], dtype=np.float32)
    np.testing.assert_array_equal(u(x), np.array([np.inf, -np.inf], dtype=np.float32))
    with pytest.raises(pwpa.ArgumentError, match="invalid right tail"):
        pwpa.Table([0.0, 1.0], [[1.0]], right_tail={"kind": "constant", "value": "big"})
    # A finite value beyond f32 is refused (it became +Inf silently); the largest f32 loads.
    with pytest.raises(pwpa.ArgumentError, match="overflows f32"):
        pwpa.Table([0.0, 1.0], [[1.0]], right_tail=1e39)
    assert pwpa.Table([0.0, 1.0], [[1.0]], right_tail=3e38).right_tail["value"] == pytest.approx(3e38, rel=1e-7)


def test_bad_tail_specs_are_argument_errors():
    with pytest.raises(pwpa.ArgumentError, match="invalid left tail 'flat'"):
        pwpa.Table([0.0, 1.0], [[1.0]], left_tail="flat")


def test_bad_files(tmp_path, random_table):
    with pytest.raises(pwpa.PwpaIOError, match="cannot read"):
        pwpa.load(tmp_path / "missing.json")
    with pytest.raises(OSError):
        pwpa.load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(pwpa.TableError, match="malformed table JSON"):
        pwpa.load(bad)
    doc = json.loads(random_table.to_json())
    doc["coefficients"] = doc["coefficients"][:-1]
    bad.write_text(json.dumps(doc))
    with pytest.raises(pwpa.TableError, match="expected 40 coefficients"):
        pwpa.load(bad)
    doc["version"] = 9
    with pytest.raises(pwpa.TableError, match="unsupported table format version 9"):
        pwpa.Table.from_json(json.dumps(doc))
    with pytest.raises(ValueError):  # TableError is a ValueError too
        pwpa.Table.from_json("[]")


def test_seed_round_trip_is_exact():
    rng = np.random.default_rng(3)
    coeffs = rng.normal(size=(6, 3)).astype(np.float32)
    pts = np.sort(rng.uniform(-4, 4, size=7)).astype(np.float32)
    t = pwpa.Table.from_seed(coeffs, pts)
    assert t.degree == 2 and t.partitions == 6
    c, p, exact = t.to_seed()
    assert exact
    np.testing.assert_array_equal(c, coeffs)
    np.testing.assert_array_equal(p, pts)
    with pytest.raises(pwpa.ShapeError, match="do not split into 6 partitions"):
        pwpa.Table.from_seed(np.zeros(13, np.float32), pts)


def test_to_seed_of_an_anchored_table_reexpands(random_table):
    c, pts, exact = random_table.to_seed()
    assert not exact
    x = np.float64(0.7)
    i = int(np.searchsorted(pts[1:-1], x, side="right"))
    want = np.polyval(random_table.coeffs[i].astype(np.float64), x - random_table.anchors[i])
    assert abs(np.polyval(c[i].astype(np.float64), x) - want) < 1e-4 * (1 + abs(want))


def test_to_seed_refuses_coefficients_that_overflow_f32():
    # Anchored at 1e30, (x - 1e30)^2 has a constant term of 1e60: not a float32.
    t = pwpa.Table(breakpoints=[0.0, 1.0, 2.0], coeffs=[[1, 0, 0], [1, 1, 1]], anchors=[0.0, 1e30])
    with pytest.raises(pwpa.TableError, match=r"coefficient 2 of piece 1 \(the x\^0 term\)"):
        t.to_seed()


def test_derivative_matches_finite_differences(random_table):
    t = random_table
    d = t.derivative()
    assert d.degree == t.degree - 1 and d.partitions == t.partitions
    assert t.derivative() is d  # cached
    pts = t.breakpoints
    xs = 0.5 * (pts[:-1] + pts[1:])
    h = 1e-3
    for i, x in enumerate(xs):
        f = lambda v: np.polyval(t.coeffs[i].astype(np.float64), v - t.anchors[i])
        fd = (f(x + h) - f(x - h)) / (2 * h)
        got = float(d(np.float32(x)))
        assert abs(got - fd) < 1e-3 * (1 + abs(fd)), (x, got, fd)
    # right tail linear(0.5, -1) -> derivative 0.5
    assert d(np.array([100.0], np.float32))[0] == np.float32(0.5)


def test_report_against_a_catalogue_function(sigmoid_table):
    r = sigmoid_table.report("sigmoid")
    assert isinstance(r, dict) and "max_abs" in r
    xs = np.linspace(-8, 8, 40001).astype(np.float32)
    own = np.max(np.abs(reference_eval(sigmoid_table, xs).astype(np.float64) - sigmoid64(xs)))
    assert 0.5 * own <= r["max_abs"] <= 2 * own + 1e-7
    r16 = sigmoid_table.report("sigmoid", dtype="bf16", samples=4096)
    assert r16["max_abs"] >= 0
    with pytest.raises(pwpa.DTypeError, match="supported: f32, f16, bf16"):
        sigmoid_table.report("sigmoid", dtype="int8")
    with pytest.raises(pwpa.FunctionError, match="unknown (function|name)"):
        sigmoid_table.report("no_such_function_xyz")
    with pytest.raises(pwpa.ArgumentError, match="target="):
        sigmoid_table.report()


def test_functions_lists_the_catalogue():
    fs = pwpa.functions()
    names = [f["name"] for f in fs]
    assert "sigmoid" in names and "tanh" in names
    for f in fs:
        lo, hi = f["range"]
        assert lo < hi and f["description"]


def test_repr_and_equality(random_table, sigmoid_table):
    assert "P=10" in repr(random_table) and "D=3" in repr(random_table)
    assert random_table != sigmoid_table
    assert random_table == pwpa.Table.from_json(random_table.to_json())


def test_equality_tells_signed_zeros_apart():
    """+0.0 and -0.0 coefficients or tails give different results, so the tables differ;
    equal tables hash equally."""
    a, b = pwpa.Table([-1, 1], [[0.0]]), pwpa.Table([-1, 1], [[-0.0]])
    assert np.signbit(b(0.5)) and not np.signbit(a(0.5))
    assert a != b and len({a, b}) == 2
    c = pwpa.Table([-1, 1], [[1.0]], left_tail=0.0)
    d = pwpa.Table([-1, 1], [[1.0]], left_tail=-0.0)
    assert c != d
    e = pwpa.Table([-1, 1], [[1.0]], left_tail=0.0)
    assert c == e and hash(c) == hash(e) and len({c, e}) == 1


def test_tail_and_meta_dicts_are_copies():
    # A nested edit of a returned dict wrote into the table's cached parse: the table then
    # reported the edit (though it evaluated the original), and equal tables compared
    # unequal, with different handles.
    t = pwpa.fit("exp", exact="bf16", exp_tails=True)
    u = pwpa.Table.from_json(t.to_json())
    lt = t.left_tail
    lt["coefficients"][0] = 123.0
    m = t.meta
    m["bf16_all_finite"]["max_ulp"] = 99
    assert t.left_tail["coefficients"][0] != 123.0
    assert t.meta["bf16_all_finite"]["max_ulp"] != 99
    assert t.tails[0] == u.tails[0]
    assert t == u and hash(t) == hash(u) and t.handle == u.handle


def test_ragged_coefficients_and_non_numeric_samples_are_pwpa_errors():
    with pytest.raises(pwpa.ArgumentError, match="coeffs must be numbers"):
        pwpa.Table([-1, 0, 1], [[1, 0], [2]])
    with pytest.raises(pwpa.ArgumentError, match="sample x values must be numbers"):
        pwpa.fit((["a", "b"], ["c", "d"]))


def test_paths_may_be_bytes(tmp_path, random_table):
    # os.fspath kept bytes, which the native side refused with a TypeError.
    p = os.fsencode(tmp_path / "t.json")
    random_table.save(p)
    assert pwpa.load(p) == random_table
    assert pwpa.Table.load(p) == random_table


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_meta_with_a_non_finite_number_names_it(value):
    with pytest.raises(pwpa.ArgumentError, match="meta must be JSON-serialisable: Out of range float"):
        pwpa.Table([-1.0, 1.0], [[1.0, 0.0]], meta={"a": value})


def test_plot_range_must_be_finite(tmp_path):
    t = pwpa.Table([-1.0, 1.0], [[1.0, 0.0]])
    for r in [(-float("inf"), 0.0), (0.0, float("nan"))]:
        with pytest.raises(pwpa.ArgumentError, match="must be finite"):
            t.plot(str(tmp_path / "p.svg"), range=r)
    with pytest.raises(pwpa.TableError, match="empty range"):
        t.plot(str(tmp_path / "p.svg"), range=(1.0, 0.0))
    assert not list(tmp_path.iterdir())


def test_huge_python_integers_are_named_errors():
    # (Each was a bare OverflowError from a float() or the native call.)
    with pytest.raises(pwpa.TableError, match="degree 18446744073709551616 is above the maximum of 15"):
        pwpa.Table([-1.0, 0.0, 1.0], [1.0, 2.0], degree=2**64)
    with pytest.raises(pwpa.TableError, match="above the maximum"):
        pwpa.Table.from_seed([1.0, 2.0], [-1.0, 0.0, 1.0], degree=2**64)
    with pytest.raises(pwpa.ArgumentError, match="range must be"):
        pwpa.fit("gelu", range=(0, 10**400))
    with pytest.raises(pwpa.ArgumentError, match="left tail constant .* too large"):
        pwpa.Table([-1.0, 1.0], [[1.0, 0.0]], left_tail=10**400)
    with pytest.raises(pwpa.ArgumentError, match="tail"):
        pwpa.Table([-1.0, 1.0], [[1.0, 0.0]], right_tail=("linear", 10**400, 0))
