"""pwpa — piecewise polynomial approximation of neural-network non-linearities.

Fit a table (``pwpa.fit("gelu", exact="bf16")``), save/load it as JSON, and
evaluate it bit-exactly on numpy arrays and PyTorch tensors (CPU and CUDA):
``table(x)``, ``table(x, out=y)``. PyTorch integration (custom op with autograd and
torch.compile support, ``nn.Module``, activation replacement) lives in
:mod:`pwpa.torch`; the torchPACE-compatible API in :mod:`pwpa.ops`.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import warnings
import weakref
from typing import Any, Callable, Optional, Sequence, Tuple, Union

import numpy as np

from . import _native
from ._eval import cpu_output_cache, empty_cpu_output_cache, eval_array
from .errors import (
    ArgumentError,
    ArgumentTypeError,
    CudaError,
    CudaUnavailableError,
    DeviceError,
    DTypeError,
    FitError,
    FitWarning,
    FunctionError,
    PwpaError,
    PwpaIOError,
    ShapeError,
    TableError,
)

__version__ = _native.__version__

# The largest count pwpa.fit passes on (a native unsigned size on every 64-bit platform).
_MAX_COUNT = 2**63 - 1

# rayon's pool does not survive fork(): forked children (e.g. DataLoader workers)
# evaluate on one thread, and fit, report and derive on a one-thread pool of their own,
# instead of hanging. PWPA_PARALLELISM=0 turns evaluation threads off everywhere.
if os.environ.get("PWPA_PARALLELISM", "1").lower() in ("0", "false", "off"):
    _native.set_parallelism(False)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_native.after_fork)

__all__ = [
    "Table",
    "fit",
    "load",
    "table_from_json",
    "functions",
    "cuda_available",
    "cuda_compiled",
    "set_parallelism",
    "cpu_output_cache",
    "empty_cpu_output_cache",
    "PwpaError",
    "TableError",
    "FitError",
    "FitWarning",
    "FunctionError",
    "DTypeError",
    "ShapeError",
    "ArgumentError",
    "ArgumentTypeError",
    "PwpaIOError",
    "DeviceError",
    "CudaUnavailableError",
    "CudaError",
]

TailSpec = Union[str, float, dict, tuple, None]

_MAX_REPORT_SAMPLES = 1 << 26

# Table handles for the torch custom op (an int is all torch.compile needs to carry).
# A handle is a hash of the table's content (breakpoints, anchors, coefficients, tails;
# not its metadata), so a graph saved by torch.export and loaded in another process
# finds its table there once an identical table is loaded, and never picks a different
# one. Every live Table with that content is registered under it (weakly).
_REGISTRY: "dict[int, list[weakref.ref[Table]]]" = {}


def _degree(degree: Any, coeffs: np.ndarray) -> int:
    """A table's degree, given or inferred from the coefficients' shape."""
    if isinstance(degree, bool) or not isinstance(degree, (int, np.integer)):
        raise ArgumentError(f"degree must be an integer, got {degree!r}")
    if degree < 0:
        raise ShapeError(
            f"coefficients of shape {coeffs.shape} give no polynomial (degree {degree}): "
            "each piece needs at least one coefficient"
        )
    if degree > _native.MAX_DEGREE:
        # (2**64 reached the native call as a bare OverflowError.)
        raise TableError(f"degree {degree} is above the maximum of {_native.MAX_DEGREE}")
    return int(degree)


def _read_only(a: np.ndarray) -> np.ndarray:
    """`a` made read-only: a table's arrays are fresh copies, and writing into one silently
    changed nothing (an ML user's audit, 2026-11-29); now it raises ValueError."""
    a.flags.writeable = False
    return a


def _content_handle(doc: dict) -> int:
    body = {k: v for k, v in doc.items() if k != "meta"}
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).digest()
    # 62 bits: a positive int64 for torch's `int` argument, never 0.
    return (int.from_bytes(digest[:8], "little") & ((1 << 62) - 1)) or 1


# Live tables whose handle has not been computed yet (hashed on a lookup miss, so that a
# table loaded before an exported program runs is found without touching its handle).
_UNHASHED: "list[weakref.ref[Table]]" = []
_UNHASHED_LIMIT = 1024  # pruned of dead and hashed tables when it reaches this length
# Tables with at most this many coefficients get their handle when they are made.
_EAGER_HANDLE = 1 << 16


def _forget(handle: int) -> "Callable[[weakref.ref[Table]], None]":
    """A weakref callback: when a registered table dies, its entry goes (the list is
    replaced, never mutated, so a lookup iterating the old one is unaffected)."""

    def drop(_dead: "weakref.ref[Table]") -> None:
        refs = [r for r in _REGISTRY.get(handle, ()) if r() is not None]
        if refs:
            _REGISTRY[handle] = refs
        else:
            _REGISTRY.pop(handle, None)

    return drop


def _live(handle: int) -> "Optional[Table]":
    for ref in _REGISTRY.get(handle, ()):
        t = ref()
        if t is not None:
            return t
    return None


def _lookup(handle: int) -> "Table":
    handle = int(handle)
    t = _live(handle)
    if t is not None:
        return t
    # A miss: hash the live tables that have no handle yet (registering them), then retry.
    pending = [r() for r in _UNHASHED]
    _UNHASHED.clear()
    for u in pending:
        if u is not None and u._handle is None:
            u.handle
    t = _live(handle)
    if t is not None:
        return t
    _REGISTRY.pop(handle, None)
    raise ArgumentError(
        f"pwpa table handle {handle} does not refer to a live table (keep the Table, or "
        "the module holding it, alive while it is used; a program saved with torch.export "
        "finds its tables by content: load them, e.g. with pwpa.load or the model's "
        "state_dict, before running it)"
    )


def _tail_dict(spec: TailSpec, side: str) -> Optional[dict]:
    """Normalises a tail given as 'clamp' | 'extend' | a number (constant) |
    ('linear', slope, intercept) | ('constant', value) | a dict like the table format's."""
    if spec is None:
        return None
    if isinstance(spec, str):
        kind = spec.strip().lower()
        if kind in ("clamp", "extend"):
            return {"kind": kind}
        raise ArgumentError(
            f"invalid {side} tail '{spec}': give 'clamp', 'extend', a number (constant), "
            "('linear', slope, intercept), ('constant', value) or a dict like the table format's"
        )
    if isinstance(spec, bool):
        raise ArgumentError(f"invalid {side} tail {spec!r}")
    if isinstance(spec, (int, float, np.floating, np.integer)):
        try:
            return {"kind": "constant", "value": float(spec)}
        except OverflowError:
            raise ArgumentError(f"{side} tail constant {spec} is too large for a float") from None
    if isinstance(spec, tuple) and spec and isinstance(spec[0], str):
        kind = spec[0].lower()
        try:
            if kind == "linear" and len(spec) == 3:
                return {"kind": "linear", "slope": float(spec[1]), "intercept": float(spec[2])}
            if kind == "constant" and len(spec) == 2:
                return {"kind": "constant", "value": float(spec[1])}
        except (TypeError, ValueError, OverflowError):
            pass
        if kind in ("clamp", "extend") and len(spec) == 1:
            return {"kind": kind}
        raise ArgumentError(f"invalid {side} tail {spec!r}")
    if isinstance(spec, dict):
        d = dict(spec)
        # An infinite constant is the string "inf" / "-inf" in the table format (and in
        # Table.left_tail), so that a tail read from a table can be given back.
        v = d.get("value")
        if isinstance(v, str) and v.strip().lower() in ("inf", "+inf", "-inf"):
            d["value"] = float(v)
        return d
    raise ArgumentError(f"invalid {side} tail {spec!r}")


def _f64_array(values: Any, what: str) -> np.ndarray:
    """values as a float64 array; a ragged or non-numeric input is an ArgumentError (numpy's
    bare ValueError is not a PwpaError)."""
    try:
        return np.asarray(_to_numpy(values), dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as e:
        raise ArgumentError(f"{what} must be numbers (a rectangular array of them): {e}") from None


def _f32_list(values: Any, what: str) -> list:
    arr = _f64_array(values, what)
    return [float(v) for v in arr.astype(np.float32).ravel()]


def _to_numpy(values: Any) -> Any:
    """Tensors (any device) → numpy; everything else unchanged."""
    if hasattr(values, "detach") and hasattr(values, "cpu"):
        t = values.detach().cpu()
        if str(t.dtype) == "torch.bfloat16":
            t = t.float()
        return t.numpy()
    return values


class Table:
    """A piecewise polynomial table: P partitions, degree D, per-partition anchors and
    coefficients (highest power first, in ``t = x - anchor``), and a tail policy per side.

    Build one with :func:`pwpa.fit`, :meth:`Table.load`, :meth:`Table.from_json`,
    :meth:`Table.from_seed`, or directly::

        Table(breakpoints=[-1, 0, 1], coeffs=[[1, 0], [2, 0]])            # anchors 0: t = x
        Table.uniform(-8, 8, coeffs, anchors="midpoint", left_tail=0, right_tail="extend")

    Call it on numpy arrays or torch tensors: ``table(x)``, ``table(x, out=y)``.
    """

    __slots__ = ("_native", "_deriv", "_handle", "_meta_cache", "__weakref__")

    def __init__(
        self,
        breakpoints: Union[Sequence[float], dict],
        coeffs: Any,
        *,
        anchors: Union[Sequence[float], str, None] = None,
        degree: Optional[int] = None,
        left_tail: TailSpec = "clamp",
        right_tail: TailSpec = "clamp",
        layout: str = "aos",
        meta: Optional[dict] = None,
    ) -> None:
        uniform = None
        pts = None
        if isinstance(breakpoints, dict):
            form = "uniform breakpoints are a dict {'lo': ..., 'hi': ..., 'partitions': ...}"
            extra = sorted(map(str, set(breakpoints) - {"lo", "hi", "partitions"}))
            if extra:
                raise ArgumentError(f"{form}; unknown key(s): {', '.join(extra)}")
            try:
                lo, hi, p = float(breakpoints["lo"]), float(breakpoints["hi"]), breakpoints["partitions"]
            except (KeyError, TypeError, ValueError):
                raise ArgumentError(form) from None
            if isinstance(p, bool) or not isinstance(p, (int, np.integer)):
                raise ArgumentError(f"partitions must be an integer (got {p!r})")
            p = int(p)
            if p < 0:
                raise ArgumentError(f"partitions must be non-negative (got {p})")
            if p > _native.MAX_PARTITIONS:
                # (Before the lists of P points and anchors below: 10**10 had them exhaust
                # memory instead of reaching the native check.)
                raise TableError(f"{p} partitions is more than the limit of {_native.MAX_PARTITIONS}")
            uniform = (lo, hi, p)
            points = [lo + (hi - lo) * i / p for i in range(p + 1)] if p > 0 else [lo, hi]
        else:
            pts = _f32_list(breakpoints, "breakpoints")
            points = pts
            p = max(len(pts) - 1, 0)
        c = _f64_array(coeffs, "coeffs")
        if layout not in ("aos", "soa"):
            raise ArgumentError(f"unknown layout '{layout}' (expected aos or soa)")
        if degree is None:
            if c.ndim == 2:
                degree = c.shape[1] - 1 if layout == "aos" else c.shape[0] - 1
            elif c.ndim == 1 and p > 0 and c.size % p == 0 and c.size > 0:
                degree = c.size // p - 1
            else:
                raise ShapeError(
                    f"cannot infer the degree from coefficients of shape {c.shape} and {p} partitions; "
                    "pass degree= or a (P, D+1) array"
                )
        degree = _degree(degree, c)
        flat = _f32_list(c, "coefficients")
        if layout == "soa":
            flat = _native.permute_layout(flat, p, int(degree), False)
        if isinstance(anchors, str):
            if anchors == "midpoint":
                anchor_list = [float(np.float32(0.5 * (points[i] + points[i + 1]))) for i in range(p)]
            elif anchors == "zero":
                anchor_list = [0.0] * p
            else:
                raise ArgumentError(f"anchors must be a list, 'midpoint' or 'zero' (got '{anchors}')")
        elif anchors is None:
            anchor_list = [0.0] * p
        else:
            anchor_list = _f32_list(anchors, "anchors")
        meta_json = None
        if meta is not None:
            try:
                # (allow_nan=False: JSON has no NaN or Inf, and the native check said only
                # "not JSON-serialisable" of a dict holding one.)
                meta_json = json.dumps(meta, allow_nan=False)
            except (TypeError, ValueError, OverflowError) as e:
                raise ArgumentError(f"meta must be JSON-serialisable: {e}") from None
        self._init(
            _native.Table.build(
                uniform,
                pts,
                int(degree),
                anchor_list,
                flat,
                _tail_dict(left_tail, "left") or {"kind": "clamp"},
                _tail_dict(right_tail, "right") or {"kind": "clamp"},
                meta_json,
            )
        )

    def _init(self, native: "_native.Table") -> None:
        self._native = native
        self._deriv = None
        self._handle = None
        self._meta_cache = None
        # The handle of a table of up to _EAGER_HANDLE coefficients is computed now (about
        # 1 ms per 1,000 pieces of degree 3): torch.compile guards on the type of
        # `table._handle`, so a table passed to a compiled function with its handle still
        # None recompiled the function for every new table, and fullgraph=True failed at
        # the recompile limit (an ML user's audit, 2026-11-29). Larger tables hash lazily.
        if native.partitions * (native.degree + 1) <= _EAGER_HANDLE:
            self.handle
            return
        global _UNHASHED_LIMIT
        if len(_UNHASHED) >= _UNHASHED_LIMIT:
            _UNHASHED[:] = [r for r in _UNHASHED if (u := r()) is not None and u._handle is None]
            _UNHASHED_LIMIT = max(1024, 2 * len(_UNHASHED))
        _UNHASHED.append(weakref.ref(self))

    @classmethod
    def _wrap(cls, native: "_native.Table") -> "Table":
        t = cls.__new__(cls)
        t._init(native)
        return t

    # ---- construction and I/O -------------------------------------------------

    @classmethod
    def uniform(cls, lo: float, hi: float, coeffs: Any, **kwargs: Any) -> "Table":
        """A table on ``P`` equal pieces of ``[lo, hi]`` (P = number of coefficient rows)."""
        c = np.asarray(_to_numpy(coeffs))
        if c.ndim != 2:
            raise ShapeError(f"Table.uniform needs (P, D+1) coefficients, got shape {c.shape}")
        p = c.shape[0] if kwargs.get("layout", "aos") == "aos" else c.shape[1]
        return cls({"lo": lo, "hi": hi, "partitions": p}, c, **kwargs)

    @classmethod
    def from_json(cls, text: Union[str, bytes]) -> "Table":
        """Parses and validates the JSON table format (a str, or UTF-8 bytes)."""
        if isinstance(text, (bytes, bytearray, memoryview)):
            try:
                text = bytes(text).decode("utf-8")
            except UnicodeDecodeError as e:
                raise TableError(f"the table's JSON is not valid UTF-8: {e}") from None
        if not isinstance(text, str):
            raise ArgumentTypeError(f"from_json takes the JSON text as a str (got {type(text).__name__})")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:
            raise TableError(f"the table's JSON is not valid Unicode text: {e}") from None
        return cls._wrap(_native.Table.from_json(text))

    @classmethod
    def load(cls, path: Union[str, os.PathLike]) -> "Table":
        """Loads and validates a table file (raises TableError / PwpaIOError)."""
        return cls._wrap(_native.Table.load(_path(path)))

    def save(self, path: Union[str, os.PathLike], layout: str = "aos") -> None:
        """Writes the table atomically (never a half-written file)."""
        self._native.save(_path(path), layout)

    def export(self, path: Union[str, os.PathLike], format: Optional[str] = None, name: Optional[str] = None) -> None:
        """Writes the table for C or RTL, atomically (``pwpa export``): ``format="c"`` a C
        header with the table as f32 bit patterns, ``NAME_eval(float)`` and
        ``NAME_eval_bf16``/``NAME_eval_f16(uint16_t)``, bit-exact with pwpa's evaluators; ``"memh"`` a Verilog ``$readmemh`` image (docs/FORMAT.md). The
        format defaults from the extension (.h; .mem, .memh, .hex); ``name`` (C only)
        defaults to the file's stem made into a C identifier."""
        func = self.meta.get("function")
        source = f"pwpa.Table (function {func})" if isinstance(func, str) else "pwpa.Table"
        self._native.export(
            _path(path), None if format is None else str(format), None if name is None else str(name), source
        )

    def to_json(self, layout: str = "aos") -> str:
        """The JSON text of the table, coefficients in ``layout`` ('aos' or 'soa')."""
        return self._native.to_json(layout)

    @classmethod
    def from_seed(cls, coeffs: Any, partition_points: Any, degree: Optional[int] = None) -> "Table":
        """Imports torchPACE's format exactly: global-x AoS coefficients (P, D+1), highest
        power first, and P+1 partition points. Anchors are 0 and both tails extend the
        edge polynomial (the seed's use of piece 0 at or above the last point is fixed)."""
        pts = _f32_list(partition_points, "partition points")
        c = _f64_array(coeffs, "coeffs")
        p = len(pts) - 1
        if degree is None:
            if c.ndim == 2:
                degree = c.shape[1] - 1
            elif p > 0 and c.size % p == 0 and c.size > 0:
                degree = c.size // p - 1
            else:
                raise ShapeError(
                    f"{c.size} coefficients do not split into {p} partitions "
                    f"({len(pts)} partition points)"
                )
        degree = _degree(degree, c)
        return cls._wrap(_native.Table.from_seed(_f32_list(c, "coefficients"), pts, degree))

    def to_seed(self) -> Tuple[np.ndarray, np.ndarray, bool]:
        """(coeffs (P, D+1) float32 in global x, partition points float32, exact).

        Raises :class:`TableError` when a coefficient re-expanded about x = 0 is not
        finite in float32 (a piece anchored far from 0), naming the piece and coefficient."""
        c, pts, exact = self._native.to_seed()
        c = np.asarray(c, dtype=np.float32).reshape(self.partitions, self.degree + 1)
        # The native side refuses this too; the check here also covers older builds of it.
        bad = np.argwhere(~np.isfinite(c))
        if bad.size:
            i, k = (int(v) for v in bad[0])
            raise TableError(
                "the seed format cannot hold this table: re-expanded about x = 0, coefficient "
                f"{k} of piece {i} (the x^{self.degree - k} term) is not finite in f32 (the "
                f"piece's anchor {float(self.anchors[i]):e} is too far from 0); keep the pwpa "
                "table format"
            )
        return (c, np.asarray(pts, dtype=np.float32), exact)

    def __reduce__(self):
        # A module-level function (not the bound classmethod), so that torch.load's
        # weights_only unpickler can allowlist it: add_safe_globals([pwpa.table_from_json, ...]).
        return (table_from_json, (self.to_json(),))

    # ---- properties -------------------------------------------------------------

    def _doc(self) -> dict:
        if self._meta_cache is None:
            self._meta_cache = json.loads(self._native.to_json("aos"))
        return self._meta_cache

    @property
    def partitions(self) -> int:
        """P, the number of partitions."""
        return self._native.partitions

    P = partitions

    @property
    def degree(self) -> int:
        """D, the polynomial degree."""
        return self._native.degree

    D = degree

    @property
    def uniform_breakpoints(self) -> bool:
        """Whether the breakpoints are a uniform grid."""
        return self._native.uniform

    @property
    def breakpoints(self) -> np.ndarray:
        """The P+1 breakpoints (float64; nominal positions for a uniform grid), read-only:
        tables are immutable (``pwpa.Table(breakpoints, coeffs, anchors=...)`` builds a changed one)."""
        return _read_only(np.asarray(self._native.points, dtype=np.float64))

    @property
    def range(self) -> Tuple[float, float]:
        """(b_0, b_P)."""
        pts = self._native.points
        return (pts[0], pts[-1])

    @property
    def coeffs(self) -> np.ndarray:
        """Coefficients (P, D+1) float32, highest power first, in ``t = x - anchor``;
        read-only (``.copy()`` gives an editable array for ``pwpa.Table(...)``)."""
        return _read_only(
            np.asarray(self._native.coeffs, dtype=np.float32).reshape(self.partitions, self.degree + 1)
        )

    @property
    def anchors(self) -> np.ndarray:
        """One anchor per partition (float32), read-only."""
        return _read_only(np.asarray(self._native.anchors, dtype=np.float32))

    @property
    def left_tail(self) -> dict:
        """The left tail policy as in the table format ({'kind': ..., ...}): a copy (editing it does
        not change the table)."""
        return copy.deepcopy(self._doc()["tails"]["left"])

    @property
    def right_tail(self) -> dict:
        """The right tail policy as in the table format."""
        return copy.deepcopy(self._doc()["tails"]["right"])

    @property
    def tails(self) -> Tuple[dict, dict]:
        """(left, right) tail policies."""
        return (self.left_tail, self.right_tail)

    @property
    def meta(self) -> dict:
        """Provenance recorded in the table (function, fit options, error report)."""
        return copy.deepcopy(self._doc().get("meta", {}))

    @property
    def handle(self) -> int:
        """An int naming this table to the ``pwpa::eval`` torch op: a hash of its content
        (equal tables have equal handles, in any process)."""
        if self._handle is None:
            self._handle = _content_handle(self._doc())
            refs = [r for r in _REGISTRY.get(self._handle, ()) if r() is not None]
            refs.append(weakref.ref(self, _forget(self._handle)))
            _REGISTRY[self._handle] = refs
        return self._handle

    # ---- analysis -------------------------------------------------------------

    def derivative(self) -> "Table":
        """The exact derivative of the pieces (degree D-1, same breakpoints; cached)."""
        if self._deriv is None:
            self._deriv = Table._wrap(self._native.derivative())
        return self._deriv

    def report(
        self,
        target: Optional[str] = None,
        dtype: Any = "f32",
        samples: Optional[int] = None,
        every_f32: bool = False,
    ) -> dict:
        """The error report against ``target`` (default: the function recorded in the
        table) in output type ``dtype``, as a dict. ``samples``: evenly spaced points of
        the range sweep (default 2^20, at most 2^26; a quarter as many in f32 order, 32
        points inside each piece and every breakpoint are added). ``every_f32=True``
        sweeps every f32 input of the range instead (``in_range_every_f32`` in the
        result; about 20-50 s per 10^9 inputs on two cores; Ctrl-C stops it)."""
        every_f32 = _flag(every_f32, "every_f32")
        if every_f32 and samples is not None:
            raise ArgumentError("give samples or every_f32=True, not both")
        if samples is not None and (
            isinstance(samples, bool) or not isinstance(samples, (int, np.integer))
            or not 2 <= samples <= _MAX_REPORT_SAMPLES
        ):
            raise ArgumentError(
                f"samples must be an integer from 2 to {_MAX_REPORT_SAMPLES} (2^26), got {samples!r}"
            )
        return json.loads(
            self._native.report(
                _target(target), _dtype_name(dtype), None if samples is None else int(samples), every_f32
            )
        )

    def plot(
        self,
        path: Union[str, os.PathLike],
        target: Optional[str] = None,
        ulp: Any = None,
        range: Optional[Tuple[float, float]] = None,
    ) -> None:
        """Plots the function (``target``, default: the table's recorded function) and
        the table with its breakpoints, and the error beneath (absolute, or in ULPs of
        ``ulp`` = "f32" | "bf16" | "f16"), to ``path`` (.svg or .png)."""
        self._native.plot(
            _path(path), _target(target), None if ulp is None else _dtype_name(ulp), _plot_range(range)
        )

    # ---- evaluation -------------------------------------------------------------

    def __call__(self, x: Any, out: Any = None) -> Any:
        """Evaluates the table on a numpy array, a torch tensor (CPU or CUDA; autograd
        and torch.compile through the ``pwpa::eval`` op), or a Python number/list.
        The result has the input's shape and dtype; ``out=`` writes into an existing
        array/tensor of the same shape (its dtype may differ: f32/f16/bf16)."""
        return eval_array(self, x, out)

    eval = __call__

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Table):
            return NotImplemented
        # Bit for bit: the values compare as numbers (+0.0 == -0.0), the handles (a hash of
        # the content's JSON, where -0.0 is "-0.0") tell signed zeros apart, which give
        # different results; equal tables then have equal hashes.
        return self._native == other._native and self.handle == other.handle

    def __hash__(self) -> int:
        # Equal tables have equal content, hence equal handles (a hash of the content).
        return self.handle

    def __repr__(self) -> str:
        return repr(self._native).replace("Table(", "pwpa.Table(", 1)


def _flag(v: Any, name: str) -> bool:
    """A yes/no argument: True or False (numpy's too), not a string or a number that
    bool() would quietly take (bool("no") is True)."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    raise ArgumentError(f"{name} must be True or False (got {v!r})")


def _path(path: Any) -> str:
    """A file name for the native layer: str, bytes or os.PathLike (undecodable bytes
    travel as surrogate escapes, as os.fsdecode gives them)."""
    try:
        return os.fsdecode(path)
    except TypeError:
        raise ArgumentTypeError(
            f"a path must be a str, bytes or os.PathLike (got {type(path).__name__})"
        ) from None


def _target(target: Any) -> Optional[str]:
    """A report's or plot's target: None (the table's function) or a name/expression."""
    if target is not None and not isinstance(target, str):
        raise ArgumentTypeError(
            f"target must be a function name or an expression in x, as a str (got {type(target).__name__})"
        )
    return target


def _plot_range(r: Any) -> Optional[Tuple[float, float]]:
    """A plot's range: None or two numbers (lo, hi)."""
    if r is None:
        return None
    try:
        lo, hi = r
        if isinstance(lo, (str, bytes)) or isinstance(hi, (str, bytes)):
            raise TypeError
        return float(lo), float(hi)
    except (TypeError, ValueError, OverflowError):
        raise ArgumentError(f"range must be two numbers (lo, hi), got {r!r}") from None


def _dtype_name(dtype: Any) -> str:
    """'f32'/'float32'/np.float32/torch.bfloat16/… → a name the core parses."""
    if dtype is None:
        raise ArgumentTypeError("dtype must be f32, bf16 or f16 (got None)")
    if isinstance(dtype, str):
        return dtype
    s = str(dtype)
    if s.startswith("torch."):
        return s[len("torch.") :]
    try:
        return np.dtype(dtype).name
    except TypeError:
        return s


def load(path: Union[str, os.PathLike]) -> Table:
    """Loads and validates a table file."""
    return Table.load(path)


def table_from_json(text: str) -> Table:
    """A table from its JSON text (``Table.from_json``); what a pickled table calls, so
    ``torch.serialization.add_safe_globals([pwpa.table_from_json, ...])`` lets
    ``torch.load(weights_only=True)`` load whole models that hold tables."""
    return Table.from_json(text)


def functions() -> list:
    """The catalogue: a list of dicts with name, description and default range."""
    return [
        {"name": n, "description": d, "range": tuple(r)} for (n, d, r) in _native.functions()
    ]


def cuda_compiled() -> bool:
    """Whether this build has CUDA support."""
    return _native.cuda_compiled()


def cuda_device_name(ordinal: int = 0) -> str:
    """The name of CUDA device ``ordinal`` (CudaUnavailableError without CUDA support)."""
    return _native.cuda_device_name(int(ordinal))


def set_parallelism(enabled: bool) -> None:
    """Turns multi-threaded CPU evaluation on or off for this process (off in forked children)."""
    if not isinstance(enabled, (bool, np.bool_)):
        raise ArgumentError(f"set_parallelism takes True or False (got {enabled!r})")
    _native.set_parallelism(bool(enabled))


def cuda_available() -> bool:
    """Whether this build can use a CUDA device (driver and NVRTC present)."""
    return _native.cuda_available()


def fit(
    func: Union[str, Tuple[Any, Any]],
    range: Optional[Tuple[float, float]] = None,
    partitions: int = 16,
    degree: int = 3,
    method: str = "minimax",
    breakpoints: str = "adaptive",
    error: str = "abs",
    max_error: Optional[float] = None,
    exact: Any = None,
    continuous: bool = False,
    exp_tails: bool = False,
    left_tail: TailSpec = None,
    right_tail: TailSpec = None,
    vary_degree: bool = False,
    max_partitions: int = 4096,
    max_degree: int = 15,
    progress: Optional[Callable[[float, str], None]] = None,
    every_f32: bool = False,
    exp_tails_at_ends: bool = False,
) -> Table:
    """Fits a table — every option of ``pwpa fit``.

    func: a catalogue name (``pwpa.functions()``), an expression in ``x``, or
        ``(xs, ys)`` samples. range: (lo, hi), default the function's.
    partitions, degree: P and D. With max_error, the search over P doubles from 1 for the
        given degree (partitions is not used); with vary_degree=True, partitions is the fixed
        P and D = 0, 1, ... is tried up to max_degree (degree is not used); with exact, the
        search over P starts at min(partitions, 8) for the given degree.
    method: 'minimax' or 'lsq'. breakpoints: 'adaptive', 'uniform' or 'log' (pieces of
        equal relative width on a positive range, for reciprocal, rsqrt, sqrt, log: equal
        power-of-two steps of f32 bit patterns, so P rounds down, and the CPU finds the
        piece without a search).
    error: 'abs' or 'rel' — the measure max_error and the fit use.
    max_error: smallest P (or D, with vary_degree=True) meeting this error.
    exact: 'bf16' or 'f16': correctly rounded for every input of that type in the range
        (checked exhaustively; f32 has too many inputs to check).
    continuous: C0 at breakpoints. exp_tails: exp2 tails where the function decays.
    exp_tails_at_ends: with exp_tails and exact, the tails start at the range's ends and the
        pieces cover all of it (by default a tail takes over the outer part of the range
        where it rounds correctly: fewer pieces, but those inputs pay for exp2; the whole
        range in pieces runs faster on the CPU).
    left_tail/right_tail: 'clamp', 'extend', a number, ('linear', a, b), ('constant', v)
        or a format dict; default the function's. max_partitions/max_degree: search limits.
    progress: called as progress(fraction, message) during long fits. An exception it
        raises (or Ctrl-C) stops the callbacks and is raised when the fit returns.
    every_f32: verify the table (and a max_error goal) on every f32 input of the range
        (``meta["verified_on"]`` says which check ran). Without it, ranges of more than
        2^25 f32 values are checked on a dense sweep, which can miss the largest f32
        rounding error by a little; with it, about 20-50 s per 10^9 inputs on two cores.
    The GIL is released while fitting. A table that is no nearer to the function than 0
    is on most of the range (exp over its whole domain with error='abs', say) comes with
    a FitWarning that says what to change.
    """
    if progress is not None and not callable(progress):
        raise ArgumentError(f"progress must be callable as progress(fraction, message) (got {progress!r})")
    vary_degree = _flag(vary_degree, "vary_degree")
    continuous = _flag(continuous, "continuous")
    exp_tails = _flag(exp_tails, "exp_tails")
    exp_tails_at_ends = _flag(exp_tails_at_ends, "exp_tails_at_ends")
    if exp_tails_at_ends and not exp_tails:
        raise ArgumentError("exp_tails_at_ends=True places exp2 tails: give exp_tails=True too")
    every_f32 = _flag(every_f32, "every_f32")
    target = None
    samples = None
    if isinstance(func, str):
        target = func
    elif isinstance(func, tuple) and len(func) == 2:
        xs = _f64_array(func[0], "sample x values").ravel()
        ys = _f64_array(func[1], "sample y values").ravel()
        if xs.shape != ys.shape:
            raise ShapeError(f"samples: {xs.size} x values but {ys.size} y values")
        samples = (xs.tolist(), ys.tolist())
    else:
        raise ArgumentError(
            f"func must be a function name, an expression in x, or (xs, ys) samples (got {type(func).__name__})"
        )
    if range is not None:
        try:
            lo, hi = range
            range = (float(lo), float(hi))
        except (TypeError, ValueError, OverflowError):
            raise ArgumentError(f"range must be (lo, hi), got {range!r}") from None
    if exact is not None:
        if isinstance(exact, bool):
            raise ArgumentError("exact= takes a dtype: 'bf16' or 'f16'")
        exact = _dtype_name(exact)
    if vary_degree and max_error is None:
        raise ArgumentError("vary_degree=True searches the degree for max_error=: give max_error too")
    for name, v in (("partitions", partitions), ("degree", degree), ("max_partitions", max_partitions), ("max_degree", max_degree)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ArgumentError(f"{name} must be a non-negative integer (got {v!r})")
        if v > _MAX_COUNT:
            # (The fitter's own limits are far lower; this keeps the conversion from failing
            # with a bare OverflowError.)
            raise ArgumentError(f"{name} is too large (got {v}; the limits are in the docs)")
    # The same rule as the counts: a real number, not a bool or a string.
    if max_error is not None and (
        isinstance(max_error, (bool, np.bool_)) or not isinstance(max_error, (int, float, np.integer, np.floating))
    ):
        raise ArgumentError(f"max_error must be a positive finite number (got {max_error!r})")
    native = _native.fit(
        target,
        samples,
        range,
        int(partitions),
        int(degree),
        str(method),
        str(breakpoints),
        str(error),
        None if max_error is None else float(max_error),
        vary_degree,
        exact,
        continuous,
        _tail_dict(left_tail, "left"),
        _tail_dict(right_tail, "right"),
        exp_tails,
        exp_tails_at_ends,
        int(max_partitions),
        int(max_degree),
        every_f32,
        progress,
    )
    table = Table._wrap(native)
    warning = table.meta.get("warning")
    if isinstance(warning, str):
        warnings.warn(warning, FitWarning, stacklevel=2)
    return table


def __getattr__(name: str) -> Any:
    """``pwpa.ops`` and ``pwpa.torch`` after a plain ``import pwpa`` (as ``torch_pace.ops``
    after ``import torch_pace``), imported on first use so that ``import pwpa`` does not
    import torch."""
    if name in ("ops", "torch"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'pwpa' has no attribute {name!r}")
