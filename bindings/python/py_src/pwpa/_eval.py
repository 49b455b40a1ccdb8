"""Evaluation on numpy arrays and torch tensors: dtype/shape/device checks, then raw
pointers to the native evaluator (zero-copy for contiguous inputs)."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from . import _native
from .errors import CudaUnavailableError, DeviceError, DTypeError, ShapeError, ArgumentError

SUPPORTED = "float32, float16, bfloat16"

_NP_NAMES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}


def _np_code(dtype: np.dtype, what: str) -> str:
    code = _NP_NAMES.get(np.dtype(dtype).name)
    if code is None:
        raise DTypeError(f"unsupported {what} dtype {np.dtype(dtype).name} (supported: {SUPPORTED})")
    return code


def _torch():
    return sys.modules.get("torch")


def _is_tensor(x: Any) -> bool:
    torch = _torch()
    return torch is not None and isinstance(x, torch.Tensor)


_TORCH_CODES: dict = {}


def torch_code(dtype: Any, what: str = "input") -> str:
    """'f32' | 'f16' | 'bf16' for a torch dtype, else DTypeError naming the supported ones."""
    if not _TORCH_CODES:
        torch = _torch()
        _TORCH_CODES.update({torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"})
    code = _TORCH_CODES.get(dtype)
    if code is None:
        name = str(dtype).replace("torch.", "")
        raise DTypeError(f"unsupported {what} dtype {name} (supported: {SUPPORTED})")
    return code


def check_layout(t: Any, what: str = "input") -> None:
    """Raises unless t is a dense (strided) tensor: pwpa reads and writes raw memory."""
    torch = _torch()
    if getattr(t, "is_nested", False):
        raise ArgumentError(f"{what} is a nested tensor; evaluate its components (or .values()) instead")
    if t.layout != torch.strided:
        raise ArgumentError(
            f"{what} has layout {str(t.layout).replace('torch.', '')}; pwpa evaluates dense (strided) tensors "
            "(convert with .to_dense())"
        )


def check_writable(t: Any, what: str = "output") -> None:
    """Raises where PyTorch's own out= kernels would refuse to write t: an inference tensor
    (made under torch.inference_mode()) outside inference mode."""
    torch = _torch()
    if t.is_inference() and not torch.is_inference_mode_enabled():
        raise ArgumentError(
            f"{what} is an inference tensor (made under torch.inference_mode()); it cannot be "
            "written outside inference mode (as with PyTorch's own out= operations)"
        )


def _aligned(t: Any) -> bool:
    """Whether t's memory starts on a multiple of its element size (a tensor of
    torch.frombuffer(..., offset=1) does not; the kernels read whole elements)."""
    return t.data_ptr() % t.element_size() == 0


def _fresh(t: Any) -> Any:
    """A contiguous, aligned copy of t (contiguous() returns a contiguous t itself)."""
    torch = _torch()
    return t.clone(memory_format=torch.contiguous_format)


def cuda_target(device: Any) -> tuple:
    """(device ordinal, PyTorch's current stream on it as an int) for a CUDA device."""
    torch = _torch()
    index = device.index if device.index is not None else torch.cuda.current_device()
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        # The same stream as torch.cuda.current_stream(device).cuda_stream, without
        # building a Stream object (3.6 against about 0.5 us per call on an H100 host).
        return index, int(raw(index))
    return index, int(torch.cuda.current_stream(device).cuda_stream)


def _dense(t: Any) -> bool:
    """Whether t's elements fill its storage span without gaps or overlap, in some order
    of its dimensions (contiguous, channels_last, a transpose, ...): then the element
    of memory position k of t is element k of a tensor of t's strides, so an element-wise
    pass can run over the raw memory. (Dimensions of size 1 do not count.)"""
    expected = 1
    for stride, size in sorted((st, sz) for sz, st in zip(t.shape, t.stride()) if sz != 1):
        if stride != expected:
            return False
        expected *= size
    return True


def _strides(t: Any) -> list:
    """t's strides, those of size-1 dimensions left out (they do not place any element)."""
    return [st for sz, st in zip(t.shape, t.stride()) if sz != 1]


def _same_layout(*ts: Any) -> bool:
    """Whether the tensors (one shape) are dense with the same strides (ignoring size-1
    dimensions), so that one pass over their raw memory pairs their elements."""
    if all(t.is_contiguous() for t in ts):
        return True
    key = _strides(ts[0])
    return _dense(ts[0]) and all(_strides(t) == key for t in ts[1:])


def eval_tensor_into(table: Any, x: Any, y: Any) -> Any:
    """Evaluates ``table`` on tensor ``x`` into tensor ``y`` (same shape and device;
    dtypes f32/f16/bf16, possibly different). No autograd. Returns ``y``."""
    torch = _torch()
    if not isinstance(y, torch.Tensor):
        raise ArgumentError(f"out must be a torch.Tensor when the input is one (got {type(y).__name__})")
    xd = torch_code(x.dtype, "input")
    yd = torch_code(y.dtype, "output")
    check_layout(x, "input")
    check_layout(y, "output")
    check_writable(y)
    device = x.device
    if device != y.device:
        raise DeviceError(f"input is on {device} but output is on {y.device}; they must be on the same device")
    if x.shape != y.shape:
        raise ShapeError(f"output shape {tuple(y.shape)} differs from input shape {tuple(x.shape)}")
    check_device(device)
    # A tensor with the negative bit (a lazily negated view, e.g. z.conj().imag) stores -x:
    # read it resolved, and write such an output through a copy (copy_ negates).
    x = _resolved(x)
    # (Misaligned memory, e.g. torch.frombuffer at an odd offset, is read through an
    # aligned copy and written through one.)
    x_ok, y_ok = _aligned(x), _aligned(y)
    if x_ok and y_ok and _same_layout(x, y) and not y.is_neg():
        # Dense, same strides (contiguous, channels_last, ...): element k of the memory
        # of x goes to element k of the memory of y, no copy.
        xc, target = x, y
    else:
        xc = x.contiguous() if x_ok else _fresh(x)
        direct = y_ok and y.is_contiguous() and not y.is_neg()
        target = y if direct else torch.empty(y.shape, dtype=y.dtype, device=y.device)
    n = xc.numel()
    native = table._native
    if n > 0:
        if device.type == "cpu":
            native._eval_cpu(xc.data_ptr(), target.data_ptr(), n, xd, yd)
        else:
            index, stream = cuda_target(device)
            native._eval_cuda(index, xc.data_ptr(), target.data_ptr(), n, xd, yd, stream)
    if target is not y:
        y.copy_(target)
    else:
        _written(y)
    return y


def _resolved(t: Any) -> Any:
    """t, or a materialised copy when it has the negative bit (its memory holds -t)."""
    return t.resolve_neg() if t.is_neg() else t


def _written(t: Any) -> None:
    """Bumps t's version counter after pwpa wrote its memory directly, as PyTorch's
    in-place and out= operations do: autograd then refuses a backward that saved t
    before the write, instead of silently using the new values."""
    torch = _torch()
    graph = getattr(torch.autograd, "graph", None)
    bump = getattr(graph, "increment_version", None)
    if bump is not None:
        bump(t)
    else:  # older torch
        torch._C._autograd._increment_version(t)


def grad_mul_into(deriv: Any, x: Any, grad: Any, out: Any) -> Any:
    """The backward pass through a derivative table: ``out = grad * deriv(x)``, the
    product rounded in float32 and then once to grad's dtype, in one pass (one kernel
    on CUDA). ``out`` has grad's shape, dtype and device. Returns ``out``."""
    torch = _torch()
    xd = torch_code(x.dtype, "input")
    gd = torch_code(grad.dtype, "gradient")
    for t, what in ((x, "input"), (grad, "gradient"), (out, "output")):
        check_layout(t, what)
    check_writable(out)
    if out.dtype != grad.dtype:
        raise DTypeError(f"output dtype {out.dtype} differs from the gradient's {grad.dtype}")
    if not (x.device == grad.device == out.device):
        raise DeviceError(
            f"input ({x.device}), gradient ({grad.device}) and output ({out.device}) must be on one device"
        )
    if tuple(x.shape) != tuple(grad.shape) or tuple(out.shape) != tuple(x.shape):
        raise ShapeError(
            f"input {tuple(x.shape)}, gradient {tuple(grad.shape)} and output {tuple(out.shape)} shapes differ"
        )
    check_device(x.device)
    x, grad = _resolved(x), _resolved(grad)
    x_ok, g_ok, o_ok = _aligned(x), _aligned(grad), _aligned(out)
    if x_ok and o_ok and _same_layout(x, out) and not out.is_neg():
        # x and out dense with one layout: the gradient is brought to it if it has
        # another (e.g. the expanded ones of a sum's backward), then one pass in place.
        xc, target = x, out
        same = g_ok and _same_layout(x, grad)
        if not same:
            # (e.g. the stride-0 ones of a sum's backward; a cached buffer on the CPU)
            gc = cpu_cached_like(x, grad.dtype)
            if gc is None:
                gc = torch.empty_like(x, dtype=grad.dtype)
            gc.copy_(grad)
        else:
            gc = grad
    else:
        xc = x.contiguous() if x_ok else _fresh(x)
        gc = grad.contiguous() if g_ok else _fresh(grad)
        direct = o_ok and out.is_contiguous() and not out.is_neg()
        target = out if direct else torch.empty(out.shape, dtype=out.dtype, device=out.device)
    n = xc.numel()
    native = deriv._native
    if n > 0:
        if x.device.type == "cpu":
            native._grad_cpu(xc.data_ptr(), gc.data_ptr(), target.data_ptr(), n, xd, gd)
        else:
            index, stream = cuda_target(x.device)
            native._grad_cuda(index, xc.data_ptr(), gc.data_ptr(), target.data_ptr(), n, xd, gd, stream)
    if target is not out:
        out.copy_(target)
    else:
        _written(out)
    return out


_CUDA_COMPILED: list = []


def _cuda_compiled() -> bool:
    """Whether this build has CUDA support (asked once)."""
    if not _CUDA_COMPILED:
        _CUDA_COMPILED.append(bool(_native.cuda_compiled()))
    return _CUDA_COMPILED[0]


def check_device(device: Any) -> None:
    """Raises unless pwpa can evaluate on ``device`` (cpu always; cuda with CUDA support)."""
    if device.type == "cpu":
        return
    if device.type == "cuda":
        if not _cuda_compiled():
            raise CudaUnavailableError(
                "got a CUDA tensor, but this build of pwpa has no CUDA support "
                "(rebuild the wheel with the `cuda` cargo feature)"
            )
        return
    raise DeviceError(f"pwpa evaluates tensors on cpu and cuda, not on {device.type}")


def _eval_numpy(table: Any, x: Any, out: Any) -> Any:
    scalar = False
    np_scalar = False
    if not isinstance(x, np.ndarray):
        if isinstance(x, np.generic) and not isinstance(x, float):
            # A numpy scalar gives a numpy scalar of its type, as numpy's ufuncs do.
            np_scalar = True
            x = np.asarray(x)
        else:
            # Python numbers (np.float64 scalars are Python floats) and sequences of
            # them: evaluated in float32. None, strings, bools and objects are refused
            # (numpy would turn None into NaN and "1.5" into 1.5).
            what = type(x).__name__
            hint = "give a number, a sequence of numbers, a numpy array or a torch tensor"
            if x is None or isinstance(x, (str, bytes, bytearray)):
                raise ArgumentError(f"cannot evaluate a {what}: {hint}")
            try:
                scalar = np.ndim(x) == 0
                if isinstance(x, int) and not isinstance(x, bool):
                    x = float(x)  # beyond int64 too; beyond f32's range it evaluates as ±Inf
                a = np.asarray(x)
                if a.dtype == object and all(
                    isinstance(v, int) and not isinstance(v, bool) for v in a.flat
                ):
                    # integers beyond int64/uint64, as a single one is: as floats
                    a = np.array([float(v) for v in a.flat]).reshape(a.shape)
            except (TypeError, ValueError, OverflowError) as e:
                raise ArgumentError(f"cannot evaluate a {what}: {e}") from None
            if a.dtype.kind not in "fiu":
                of = "" if scalar else f" of {a.dtype} values"
                raise ArgumentError(f"cannot evaluate a {what}{of}: {hint}")
            with np.errstate(over="ignore"):  # beyond f32's range: ±Inf, like torch.tensor
                x = a.astype(np.float32)
    xd = _np_code(x.dtype, "input")
    if not x.dtype.isnative:
        x = x.astype(x.dtype.newbyteorder("="))
    xc = np.require(x, requirements=["C", "A"])
    if out is None:
        y = _np_out(x.shape, x.dtype)
        target = y
    else:
        if not isinstance(out, np.ndarray):
            raise ArgumentError(f"out must be a numpy array when the input is one (got {type(out).__name__})")
        if out.shape != x.shape:
            raise ShapeError(f"output shape {out.shape} differs from input shape {x.shape}")
        if not out.flags.writeable:
            raise ArgumentError("out is read-only")
        y = out
        direct = out.flags.c_contiguous and out.flags.aligned and out.dtype.isnative
        target = out if direct else np.empty(out.shape, dtype=out.dtype.newbyteorder("="))
    yd = _np_code(target.dtype, "output")
    if xc.size > 0:
        table._native._eval_cpu(xc.ctypes.data, target.ctypes.data, xc.size, xd, yd)
    if target is not y:
        y[...] = target
    if scalar and out is None:
        return float(y)
    if np_scalar and out is None:
        return y[()]
    return y


def cpu_output_cache(limit_mb: float = None) -> dict:
    """The CPU output cache: pwpa keeps the memory of CPU outputs of 4 MiB or more (torch
    tensors of any float type, numpy float32/float16 arrays with numpy ≥ 2.1) after they
    are freed and gives it to the next output of about the same size, as
    PyTorch's CUDA caching allocator does for device memory. A fresh large CPU tensor
    from PyTorch's allocator is new memory whose every page faults and is zeroed on the
    first write, which costs several times the evaluation itself (2^24 f32 elements on two
    cores: about 4 ms to evaluate, 12-24 ms with fresh pages).

    At most ``limit_mb`` MiB of unused memory is kept (the oldest buffers are freed
    first); the default is 1024, or the environment variable ``PWPA_CPU_OUTPUT_CACHE_MB``
    read at the first large output. ``limit_mb=0`` turns the cache off (outputs then come
    from PyTorch's or numpy's allocator). Tensors from the cache are ordinary CPU tensors
    except that their storage cannot be resized in place (``y.resize_`` to a larger size
    raises); numpy arrays from it do not own their memory (``y.base`` holds it), so
    ``y.resize`` raises as for a view. Also ``pwpa.torch.cpu_output_cache``.

    Returns ``{"limit_bytes", "cached_buffers", "cached_bytes"}`` after applying
    ``limit_mb`` (None: unchanged)."""
    if limit_mb is not None:
        if not isinstance(limit_mb, (int, float)) or isinstance(limit_mb, bool) or not limit_mb >= 0 or limit_mb == float("inf"):
            raise ArgumentError(f"limit_mb must be a finite number >= 0 (MiB), not {limit_mb!r}")
        _native.cpu_output_cache_limit(int(limit_mb * (1 << 20)))
    bufs, nbytes = _native.cpu_output_cache_info()
    return {"limit_bytes": _native.cpu_output_cache_limit(), "cached_buffers": bufs, "cached_bytes": nbytes}


def empty_cpu_output_cache() -> int:
    """Frees the unused memory that the CPU output cache holds (:func:`cpu_output_cache`);
    returns the bytes freed. Tensors still alive keep theirs and return it when freed."""
    return _native.cpu_output_cache_clear()


def _cache_serves(nbytes: int) -> bool:
    """Whether an output of nbytes comes from the CPU output cache (large enough, cache on)."""
    return nbytes >= _native.CPU_OUTPUT_MIN_BYTES and _native.cpu_output_cache_limit() > 0


def cpu_cached_like(x: Any, dtype: Any) -> Any:
    """An uninitialised CPU tensor shaped like x (x's strides: x is contiguous or dense)
    of a float dtype from pwpa's CPU output cache, for 4 MiB or more while the cache is
    on; else None (then allocate as usual)."""
    torch = _torch()
    name = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}.get(dtype)
    if name is None or x.device.type != "cpu" or torch.compiler.is_compiling():
        # (while Dynamo traces, an ordinary allocation: native calls would break its graph)
        return None
    n = x.numel()
    if not _cache_serves(n * (4 if dtype is torch.float32 else 2)):
        return None
    if x.is_contiguous():
        return torch.from_dlpack(_native.cpu_output(n, name)).view(x.shape)
    if _dense(x):
        return torch.from_dlpack(_native.cpu_output(n, name)).as_strided(x.shape, x.stride())
    return None


class _CachedBuffer:
    """A DLPack producer of one buffer of pwpa's CPU output cache, for numpy's
    ``from_dlpack`` (which takes producers, not capsules)."""

    __slots__ = ("_numel", "_dtype")

    def __init__(self, numel: int, dtype: str) -> None:
        self._numel, self._dtype = numel, dtype

    def __dlpack__(self, stream: Any = None, max_version: Any = None, dl_device: Any = None, copy: Any = None) -> Any:
        return _native.cpu_output(self._numel, self._dtype, True)

    def __dlpack_device__(self) -> tuple:
        return (1, 0)  # kDLCPU


# numpy makes writable arrays only of DLPack 1.0 ("versioned") capsules, which it asks
# for from 2.1 on.
_NP_VERSIONED_DLPACK = np.lib.NumpyVersion(np.__version__) >= "2.1.0"
_NP_CACHED = {np.dtype(np.float32): "float32", np.dtype(np.float16): "float16"}


def _np_out(shape: tuple, dtype: Any) -> Any:
    """``np.empty(shape, dtype)``; for 4 MiB or more of float32 or float16, an array of
    pwpa's CPU output cache (``pwpa.torch.cpu_output_cache``: memory of freed outputs,
    already mapped, instead of fresh pages that fault on the first write; numpy ≥ 2.1)."""
    name = _NP_CACHED.get(np.dtype(dtype))
    n = 1
    for d in shape:
        n *= d
    if name is not None and _NP_VERSIONED_DLPACK and _cache_serves(n * np.dtype(dtype).itemsize):
        return np.from_dlpack(_CachedBuffer(n, name)).reshape(shape)
    return np.empty(shape, dtype=dtype)


def _compiled_into(table: Any, x: Any, out: Any) -> Any:
    """``table(x, out=y)`` under torch.compile: the op, then ``y.copy_`` (which Dynamo
    traces). The same values as eagerly: in f32 and rounded once into y's dtype."""
    from . import torch as pwpa_torch  # registers the custom op

    torch = _torch()
    if not isinstance(out, torch.Tensor):
        raise ArgumentError(f"out must be a torch tensor like x, got {type(out).__name__}")
    if out.shape != x.shape:
        raise ShapeError(f"out has shape {tuple(out.shape)} but x has shape {tuple(x.shape)}")
    if out.device != x.device:
        raise DeviceError(f"x is on {x.device} but out is on {out.device}")
    if out.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        raise DTypeError(f"out has dtype {out.dtype}; supported: float32, float16, bfloat16")
    src = x if out.dtype == x.dtype else x.to(torch.float32)
    return out.copy_(pwpa_torch.pwpa_eval(src, table))


def _is_fx_proxy(x: Any) -> bool:
    """Whether x is a ``torch.fx`` tracing proxy (symbolic_trace of a model)."""
    torch = _torch()
    fx = getattr(torch, "fx", None) if torch is not None else None
    return fx is not None and isinstance(x, fx.Proxy)


def eval_array(table: Any, x: Any, out: Any = None) -> Any:
    """``table(x, out=None)`` for every supported input kind."""
    if _is_fx_proxy(x):
        from . import torch as pwpa_torch

        return pwpa_torch.fx_eval(x, table.handle, out)
    if _is_tensor(x):
        if out is not None:
            torch = _torch()
            if torch.is_grad_enabled() and (x.requires_grad or getattr(out, "requires_grad", False)):
                raise ArgumentError(
                    "table(x, out=y) does not support automatic differentiation (like PyTorch's out= "
                    "functions): call table(x) instead, or use torch.no_grad()"
                )
            if torch.compiler.is_compiling():
                return _compiled_into(table, x, out)
            from . import torch as pwpa_torch

            if pwpa_torch.forward_ad_dual(x, out):
                raise ArgumentError(
                    "table(x, out=y) does not support forward-mode automatic differentiation (a dual "
                    "tensor, like PyTorch's out= functions): call table(x) instead"
                )
            if pwpa_torch.transform_wrapped(x, out):
                raise ArgumentError(
                    "table(x, out=y) cannot be used inside torch.func transforms (vmap, grad, jvp, "
                    "jacrev, ...): call table(x) instead"
                )
            return eval_tensor_into(table, x, out)
        from . import torch as pwpa_torch  # registers the custom op

        return pwpa_torch.pwpa_eval(x, table)
    if _is_tensor(out):
        raise DeviceError("the input is not a torch tensor but out is; pass tensors for both or neither")
    if isinstance(x, np.ma.MaskedArray) and out is None:
        # As numpy's ufuncs do: a masked array with the input's mask (it came back a plain
        # ndarray, the mask dropped). The masked elements are evaluated too.
        return np.ma.MaskedArray(_eval_numpy(table, x.data, None), mask=np.ma.getmaskarray(x).copy())
    return _eval_numpy(table, x, out)
