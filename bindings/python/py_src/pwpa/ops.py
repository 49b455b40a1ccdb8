"""torchPACE-compatible operations: switch by changing ``import torch_pace`` to
``import pwpa`` (``torch_pace.ops.pwpa`` → ``pwpa.ops.pwpa``).

Semantics are the seed's: coefficients in the global ``x`` (highest power first,
``P × (D+1)`` AoS or ``(D+1) × P`` SoA), partition ``i`` is the first with
``x < partition_points[i+1]``, Horner with FMA. Differences, by design:

- at or above the last partition point the seed silently uses partition 0 (its
  documented defect); pwpa uses the last partition there (and, below the first point,
  partition 0 as the seed does);
- Horner runs in f32 for every dtype and rounds once (the seed's half kernels compute
  in half); coefficients and points are converted to f32;
- bfloat16 inputs are supported, and results are bit-identical on CPU and CUDA;
- autograd works: gradients with respect to ``x`` and to the coefficients (learnable
  tables); the partition points get none (the output only jumps where one moves past an
  input, so their gradient is zero almost everywhere).

Works on torch tensors (CPU/CUDA) and numpy arrays.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any

import numpy as np

from . import Table
from ._eval import _is_tensor
from .errors import ArgumentError, DeviceError, ShapeError

__all__ = ["pwpa", "_pwpa", "aos2soa", "soa2aos"]

_CACHE: "OrderedDict[tuple, Table]" = OrderedDict()
_CACHE_SIZE = 32


def _host_f32(a: Any, what: str) -> np.ndarray:
    if _is_tensor(a):
        if not a.is_floating_point():
            raise ArgumentError(f"{what} must be a floating-point tensor (got {a.dtype})")
        import torch

        # Host values of the table's data; outside any torch.func transform, whose
        # wrappers have no storage to read (coeffs captured by a function under grad).
        with torch._C._DisableFuncTorch():
            return a.detach().to("cpu").float().contiguous().numpy()
    arr = np.asarray(a)
    if arr.dtype.kind != "f" and arr.dtype.name != "bfloat16":
        raise ArgumentError(f"{what} must be floating point (got {arr.dtype})")
    return np.ascontiguousarray(arr, dtype=np.float32)


def _check_devices(x: Any, coeffs: Any, points: Any) -> None:
    if _is_tensor(x):
        for name, t in (("coeffs", coeffs), ("partition_points", points)):
            if _is_tensor(t) and t.device != x.device:
                raise DeviceError(
                    f"x is on {x.device} but {name} is on {t.device}; all tensors must be on the same device"
                )
            if not _is_tensor(t):
                raise ArgumentError(f"x is a torch tensor but {name} is a {type(t).__name__}")


def _table(coeffs: Any, partition_points: Any, aos: bool) -> Table:
    pts = _host_f32(partition_points, "partition_points")
    if pts.ndim != 1 or pts.size < 2:
        raise ShapeError(
            f"partition_points must be a 1-D tensor of P+1 >= 2 points (got shape {tuple(pts.shape)})"
        )
    p = pts.size - 1
    c = _host_f32(coeffs, "coeffs")
    if c.size == 0:
        raise ShapeError(
            f"coeffs of shape {tuple(c.shape)} are empty: each of the {p} partitions needs D+1 >= 1 coefficients"
        )
    if c.ndim == 2:
        rows, cols = c.shape
        if aos and rows != p:
            raise ShapeError(
                f"AoS coeffs of shape ({rows}, {cols}) do not match {p} partitions "
                f"({p + 1} partition points): expected ({p}, D+1)"
            )
        if not aos and cols != p:
            raise ShapeError(
                f"SoA coeffs of shape ({rows}, {cols}) do not match {p} partitions "
                f"({p + 1} partition points): expected (D+1, {p})"
            )
        d = (cols if aos else rows) - 1
    elif c.ndim == 1:
        if c.size == 0 or c.size % p != 0:
            raise ShapeError(
                f"{c.size} coefficients do not split into {p} partitions ({p + 1} partition points)"
            )
        d = c.size // p - 1
    else:
        raise ShapeError(f"coeffs must be 1-D or 2-D (got shape {tuple(c.shape)})")
    flat = c.reshape(-1)
    if not aos:
        flat = np.ascontiguousarray(flat.reshape(d + 1, p).T).reshape(-1)
    key = (flat.tobytes(), pts.tobytes(), d)
    t = _CACHE.get(key)
    if t is None:
        t = Table.from_seed(flat, pts, d)
        _CACHE[key] = t
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    else:
        _CACHE.move_to_end(key)
    return t


def _seed_call(x: Any, coeffs: Any, partition_points: Any, aos: bool) -> Any:
    _check_devices(x, coeffs, partition_points)
    if _is_tensor(x):
        # The ``pwpa::seed_eval`` op (pwpa.torch): fake kernel for torch.compile(fullgraph=True),
        # autograd and torch.func with respect to x; the table is built inside the op.
        from .torch import seed_eval

        return seed_eval(x, coeffs, partition_points, aos)
    return _table(coeffs, partition_points, aos)(x)


def pwpa(x: Any, coeffs: Any, partition_points: Any, AoS: bool = True, *, AOS: Any = None) -> Any:
    """Evaluates the piecewise polynomial (torchPACE's optimised op). ``coeffs`` is
    ``(P, D+1)`` when ``AoS`` else ``(D+1, P)`` (as :func:`aos2soa` returns), global x,
    highest power first; ``partition_points`` has P+1 increasing points. ``AOS`` is
    accepted as another spelling of ``AoS`` (the seed's own examples use both)."""
    if AOS is not None:
        if AoS is not True:
            raise ArgumentError("give AoS or AOS (the same option), not both")
        AoS = AOS
    if not (isinstance(AoS, (bool, np.bool_)) or (isinstance(AoS, int) and AoS in (0, 1))):
        # (bool("False") is True: a string silently meant AoS.)
        raise ArgumentError(f"AoS must be True or False (got {AoS!r})")
    return _seed_call(x, coeffs, partition_points, bool(AoS))


def _pwpa(x: Any, coeffs: Any, partition_points: Any) -> Any:
    """torchPACE's base op: AoS coefficients, same results as :func:`pwpa`."""
    return _seed_call(x, coeffs, partition_points, True)


def _check_degree(D: Any) -> int:
    if isinstance(D, bool) or not isinstance(D, (int, np.integer)) or D < 0:
        raise ArgumentError(f"D must be a non-negative integer (got {D!r})")
    return int(D)


def _permute(coeffs: Any, D: Any, to_soa: bool) -> Any:
    d = _check_degree(D)
    n = d + 1
    if not (_is_tensor(coeffs) or isinstance(coeffs, np.ndarray)):
        try:
            coeffs = np.asarray(coeffs, dtype=np.float32)
        except (TypeError, ValueError, OverflowError) as e:
            # (numpy's bare ValueError for "abc" or ragged rows is not a PwpaError.)
            raise ShapeError(f"coeffs must be numbers in a (P, D+1) or flat array: {e}") from None
    shape = tuple(coeffs.shape)
    size = math.prod(shape)  # (not np.prod, which Dynamo traces as a tensor op)
    if len(shape) not in (1, 2) or size == 0 or size % n != 0:
        raise ShapeError(f"coeffs of shape {shape} do not hold whole polynomials of degree {d}")
    if len(shape) == 2 and (shape[1] if to_soa else shape[0]) != n:
        want = "(P, D+1)" if to_soa else "(D+1, P)"
        raise ShapeError(f"coeffs of shape {shape} are not {want} for D = {d}")
    p = size // n
    if _is_tensor(coeffs):
        src = coeffs.reshape(p, n) if to_soa else coeffs.reshape(n, p)
        out = src.t().contiguous()
    else:
        a = np.asarray(coeffs)
        src = a.reshape(p, n) if to_soa else a.reshape(n, p)
        out = np.ascontiguousarray(src.T)
    return out if len(shape) == 2 else out.reshape(-1)


def aos2soa(coeffs: Any, D: int) -> Any:
    """AoS ``(P, D+1)`` → SoA ``(D+1, P)`` (1-D in, 1-D out). Exact permutation."""
    return _permute(coeffs, D, True)


def soa2aos(coeffs: Any, D: int) -> Any:
    """SoA ``(D+1, P)`` → AoS ``(P, D+1)`` (1-D in, 1-D out). Exact permutation."""
    return _permute(coeffs, D, False)
