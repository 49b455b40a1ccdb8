"""Shared helpers: an independent numpy re-implementation of the evaluation convention
(f32 index rule, Horner with a correctly rounded f32 FMA emulated in f64, tails), and
table builders that do not need the fitter."""

import numpy as np
import pytest

import pwpa

# ---- a correctly rounded f32 fma, vectorised, without math.fma -----------------


def fma32(a, b, c):
    """fma(a, b, c) rounded once to f32, for f32 arrays (a*b is exact in f64; the
    f64 sum's rounding error is recovered by TwoSum and used to fix ties)."""
    a = np.asarray(a, np.float32).astype(np.float64)
    b = np.asarray(b, np.float32).astype(np.float64)
    c = np.asarray(c, np.float32).astype(np.float64)
    with np.errstate(all="ignore"):
        p = a * b
        s = p + c
        bb = s - p
        err = (p - (s - bb)) + (c - bb)
        r = s.astype(np.float32)
        back = r.astype(np.float64)
        up = np.nextafter(r, np.float32(np.inf))
        down = np.nextafter(r, np.float32(-np.inf))
        fin = np.isfinite(s) & np.isfinite(r) & np.isfinite(err) & np.isfinite(up) & np.isfinite(down)
        # RN32(s) differs from RN32(s + err) only when s is an exact f32 midpoint.
        tie_up = fin & (back < s) & ((s - back) * 2 == up.astype(np.float64) - back) & (err > 0)
        tie_down = fin & (back > s) & ((back - s) * 2 == back - down.astype(np.float64)) & (err < 0)
        r = np.where(tie_up, up, np.where(tie_down, down, r))
    return r.astype(np.float32)


def horner32(coeffs_rows, t):
    """Horner with fma per element: coeffs_rows (N, D+1) f32, t (N,) f32."""
    r = coeffs_rows[:, 0].astype(np.float32)
    for k in range(1, coeffs_rows.shape[1]):
        r = fma32(r, t, coeffs_rows[:, k])
    return r


def reference_eval(table: pwpa.Table, x):
    """The evaluation convention of crates/pwpa/src/table.rs, re-implemented in numpy:
    f32 result for f32 inputs (widen 16-bit inputs first)."""
    x = np.asarray(x, dtype=np.float32).ravel()
    doc = table._doc()
    bp = doc["breakpoints"]
    coeffs = table.coeffs
    anchors = table.anchors
    p = table.partitions
    with np.errstate(all="ignore"):
        if bp["kind"] == "uniform":
            lo, hi = np.float32(bp["lo"]), np.float32(bp["hi"])
            inv = np.float32(p / (float(hi) - float(lo)))
            u = (x - lo).astype(np.float32) * inv
            u = np.where(np.isfinite(u) & (u > 0), u, 0).astype(np.float64)
            idx = np.minimum(np.trunc(u), p - 1).astype(np.int64)
        else:
            pts = np.asarray(bp["points"], dtype=np.float32)
            lo, hi = pts[0], pts[-1]
            idx = np.searchsorted(pts[1:p], x, side="right").astype(np.int64)
            idx = np.clip(idx, 0, p - 1)

        def piece(i, xv):
            t = (xv - anchors[i]).astype(np.float32)
            return horner32(coeffs[i], t)

        out = piece(idx, x)

        for side, mask in (("left", x < lo), ("right", x > hi)):
            if not mask.any():
                continue
            tail = doc["tails"][side]
            edge_i = 0 if side == "left" else p - 1
            edge = lo if side == "left" else hi
            xm = x[mask]
            k = tail["kind"]
            if k == "clamp":
                v = piece(np.full(xm.shape, edge_i), np.full(xm.shape, edge, np.float32))
            elif k == "extend":
                v = piece(np.full(xm.shape, edge_i), xm)
            elif k == "constant":
                v = np.full(xm.shape, np.float32(tail["value"]))
            elif k == "linear":
                s, b = np.float32(tail["slope"]), np.float32(tail["intercept"])
                v = np.full(xm.shape, b) if s == 0 else fma32(np.full(xm.shape, s), xm, np.full(xm.shape, b))
            else:
                raise NotImplementedError(k)
            out[mask] = v
        out[np.isnan(x)] = np.nan
    return out.astype(np.float32)


# ---- rounding f32 into the 16-bit types, bit patterns with canonical NaNs ------------


def f32_to_bits(v, dtype: str) -> np.ndarray:
    """Bit patterns of f32 values rounded (nearest even) to dtype, canonical NaN."""
    v = np.asarray(v, np.float32)
    if dtype == "f32":
        b = v.view(np.uint32).copy()
        b[np.isnan(v)] = 0x7FC00000
        return b
    if dtype == "f16":
        with np.errstate(all="ignore"):
            b = v.astype(np.float16).view(np.uint16).copy()
        b[np.isnan(v)] = 0x7E00
        return b
    if dtype == "bf16":
        u = v.view(np.uint32).astype(np.uint64)
        r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
        r[np.isnan(v)] = 0x7FC0
        return r
    raise ValueError(dtype)


def all_16bit(dtype: str) -> np.ndarray:
    """Every value of a 16-bit type, widened to f32 (exact)."""
    bits = np.arange(1 << 16, dtype=np.uint32)
    if dtype == "f16":
        return bits.astype(np.uint16).view(np.float16).astype(np.float32)
    return (bits << 16).view(np.float32)


# ---- tables without the fitter ------------------------------------------------------


def lsq_table(f, lo, hi, partitions, degree, left="clamp", right="clamp", uniform=True):
    """A least-squares table of f on [lo, hi] (midpoint anchors), built with numpy."""
    if uniform:
        pts = np.linspace(lo, hi, partitions + 1)
    else:
        # denser near 0
        s = np.linspace(-1, 1, partitions + 1)
        pts = np.sign(s) * np.abs(s) ** 1.5 * (hi - lo) / 2 + (hi + lo) / 2
    pts32 = pts.astype(np.float32)
    rows, anchors = [], []
    for i in range(partitions):
        a, b = float(pts32[i]), float(pts32[i + 1])
        anchor = float(np.float32(0.5 * (a + b)))
        xs = np.linspace(a, b, 64)
        c = np.polyfit(xs - anchor, f(xs), degree)
        rows.append(c)
        anchors.append(anchor)
    if uniform:
        bps = {"lo": lo, "hi": hi, "partitions": partitions}
    else:
        bps = pts32
    return pwpa.Table(bps, np.array(rows), anchors=anchors, left_tail=left, right_tail=right)


def sigmoid64(x):
    """Logistic sigmoid in f64 without cancellation (0.5(1 + tanh(x/2)) loses all
    relative accuracy for large negative x)."""
    x = np.asarray(x, np.float64)
    with np.errstate(over="ignore"):
        e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


@pytest.fixture
def output_cache():
    """pwpa's CPU output cache, empty, restored to its limit afterwards."""
    limit = pwpa.cpu_output_cache()["limit_bytes"]
    pwpa.empty_cpu_output_cache()
    yield
    pwpa.cpu_output_cache(limit / (1 << 20))
    pwpa.empty_cpu_output_cache()


@pytest.fixture(scope="session")
def sigmoid_table():
    return lsq_table(sigmoid64, -8.0, 8.0, 32, 3, left=0.0, right=("linear", 0.0, 1.0))


@pytest.fixture(scope="session")
def tanh_table_arbitrary():
    return lsq_table(np.tanh, -4.0, 4.0, 24, 4, left="extend", right=1.0, uniform=False)


@pytest.fixture(scope="session")
def random_table():
    rng = np.random.default_rng(7)
    return pwpa.Table(
        {"lo": -3.0, "hi": 5.0, "partitions": 10},
        rng.normal(size=(10, 4)),
        anchors="midpoint",
        left_tail="extend",
        right_tail=("linear", 0.5, -1.0),
    )



