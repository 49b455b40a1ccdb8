"""PyTorch integration: the ``pwpa::eval`` custom op (fake kernel for torch.compile,
autograd through the table's derivative, a batching rule for vmap), the :class:`PwPA`
module and :func:`replace_activations`.

The op takes the input tensor and an int table handle (``Table.handle``), so a
compiled graph carries no Python object and has no graph break.

:func:`pwpa_eval` and :class:`PwPA` call the op directly when no gradient can be
needed and under torch.compile, and otherwise go through an ``autograd.Function`` with
``setup_context``, ``vmap`` and ``jvp`` around it, so that ``torch.func`` transforms
(``grad``, ``vmap``, ``jacrev``, ``jacfwd``, ``hessian``) and forward-mode AD work too:
functorch rejects the ``autograd.Function`` that ``register_autograd`` generates
(pytorch/pytorch#168393), and Dynamo one with a ``jvp``. The backward op has a backward
too (through the second derivative), so second derivatives (gradient penalties,
Hessian-vector products) work. The seed-compatible ops (``pwpa.ops``) on tensors are the
op ``pwpa::seed_eval`` (see :func:`seed_eval`).

Outputs keep the input's memory layout (a channels_last input gives a channels_last
output, like PyTorch's element-wise ops), and any dense input is evaluated in place in
memory order, without a copy.
"""

from __future__ import annotations

import math
import os
import warnings
from typing import Any, Callable, Dict, Mapping, Union

import torch
from torch import nn

from . import Table, _lookup
from ._native import advise_hugepages
from .errors import ArgumentError, ArgumentTypeError
from ._eval import (
    cpu_cached_like,
    cpu_output_cache,
    empty_cpu_output_cache,
    _aligned,
    _dense,
    _fresh,
    _same_layout,
    check_device,
    check_layout,
    cuda_target,
    eval_tensor_into,
    grad_mul_into,
    torch_code,
)

__all__ = [
    "PwPA",
    "replace_activations",
    "pwpa_eval",
    "value_and_derivative",
    "seed_eval",
    "cpu_output_cache",
    "empty_cpu_output_cache",
]


def _out_like(x: torch.Tensor, dtype: torch.dtype = None, real: bool = False) -> torch.Tensor:
    """An uninitialised tensor shaped like x, with x's strides when x is dense (as
    ``torch.empty_like`` keeps them), else contiguous. ``real``: an op's implementation
    (not a fake kernel), about to write it: a CPU output of 4 MiB or more comes from
    pwpa's CPU output cache (:func:`cpu_output_cache`: memory kept from earlier outputs,
    already mapped, instead of fresh pages that fault and are zeroed on the first write),
    or, with the cache off, from PyTorch's allocator with transparent huge pages advised
    (``advise_hugepages``: one page fault per 2 MiB instead of one per 4 KiB)."""
    dtype = dtype or x.dtype
    # Dynamo traces this under compiled forward-mode transforms (jvp, jacfwd: the
    # autograd.Function's forward runs the implementation); the native calls would break
    # its graph, and an ordinary allocation is what the compiled graph wants.
    real = real and not torch.compiler.is_compiling()
    if real:
        y = cpu_cached_like(x, dtype)
        if y is not None:
            return y
    y = torch.empty_like(x, dtype=dtype, memory_format=torch.preserve_format)
    if real and y.device.type == "cpu":
        advise_hugepages(y.data_ptr(), y.numel() * y.element_size())
    return y


def _eval_impl(x: torch.Tensor, table: int) -> torch.Tensor:
    """y = table(x), same shape/dtype/device as x (x's strides when x is dense)."""
    t = _lookup(table)
    y = _out_like(x, real=True)
    eval_tensor_into(t, x, y)
    return y


@torch.library.custom_op("pwpa::eval", mutates_args=())
def _eval_op(x: torch.Tensor, table: int) -> torch.Tensor:
    """y = table(x), same shape/dtype/device as x (x's strides when x is dense)."""
    return _eval_impl(x, table)


@_eval_op.register_fake
def _eval_fake(x: torch.Tensor, table: int) -> torch.Tensor:
    torch_code(x.dtype, "input")
    return _out_like(x)


def _bw_out(grad: torch.Tensor, x: torch.Tensor, real: bool = False) -> torch.Tensor:
    """The backward op's output: grad's dtype, in grad's layout when grad is dense, else
    in x's (a sum's backward passes expanded ones), else contiguous."""
    return _out_like(grad if _dense(grad) or not _dense(x) else x, grad.dtype, real)


def _eval_backward_impl(grad: torch.Tensor, x: torch.Tensor, table: int) -> torch.Tensor:
    """grad * table'(x) (the ``pwpa::eval_backward`` op's implementation)."""
    d = _lookup(table).derivative()
    return grad_mul_into(d, x, grad, _bw_out(grad, x, real=True))


@torch.library.custom_op("pwpa::eval_backward", mutates_args=())
def _eval_backward_op(grad: torch.Tensor, x: torch.Tensor, table: int) -> torch.Tensor:
    """grad * table'(x): the derivative evaluated in f32, the product rounded in f32 and
    then once to grad's dtype — one fused pass (one kernel on CUDA), no f'(x) buffer."""
    return _eval_backward_impl(grad, x, table)


@_eval_backward_op.register_fake
def _eval_backward_fake(grad: torch.Tensor, x: torch.Tensor, table: int) -> torch.Tensor:
    torch_code(x.dtype, "input")
    return _bw_out(grad, x)


_dispatch_depth = getattr(torch._C, "_len_torch_dispatch_stack", None)
# Under torch.profiler the op is called, so that profiles show `pwpa::eval`.
_profiling = getattr(torch.autograd, "_profiler_enabled", lambda: True)
_function_mode = getattr(torch._C, "_is_torch_function_mode_enabled", None)


def _plain(*ts: torch.Tensor) -> bool:
    """Whether the ops' implementations may run directly on these tensors, without the
    dispatcher (which costs about 35 us of host time per call, measured on an H100 host,
    bench/gpu_lab/call_overhead.py): ordinary eager tensors (not FakeTensor or another
    subclass, not functorch-wrapped, not meta), no Python dispatch or function mode
    active, not under TorchScript tracing or the profiler. Everything else calls the
    registered op."""
    if _dispatch_depth is None or _function_mode is None or _wrapped is None:
        return False
    if _dispatch_depth() or _function_mode() or torch.jit.is_tracing() or _profiling():
        return False
    return all(type(t) is torch.Tensor and not _wrapped(t) and t.device.type != "meta" for t in ts)


def _eval_now(x: torch.Tensor, table: int) -> torch.Tensor:
    """``torch.ops.pwpa.eval(x, table)``, run directly where :func:`_plain` allows."""
    if _plain(x):
        return _eval_impl(x, table)
    return torch.ops.pwpa.eval(x, table)


def _eval_backward_now(grad: torch.Tensor, x: torch.Tensor, table: int) -> torch.Tensor:
    """``torch.ops.pwpa.eval_backward(grad, x, table)``, run directly where allowed."""
    if _plain(grad, x):
        return _eval_backward_impl(grad, x, table)
    return torch.ops.pwpa.eval_backward(grad, x, table)


def _deriv_handle(table: int) -> int:
    """The handle of the table's derivative (cached on the table: stable while it lives)."""
    return _lookup(table).derivative().handle


def _setup_context(ctx: Any, inputs: tuple, output: torch.Tensor) -> None:
    x, table = inputs
    ctx.save_for_backward(x)
    ctx.table = table
    # The graph owns the table it needs (the handle alone would not keep it alive: a
    # temporary Table, or a seed op's cached one, could die before the backward pass).
    ctx.table_ref = _lookup(table)


def _backward(ctx: Any, grad: torch.Tensor):
    (x,) = ctx.saved_tensors
    return torch.ops.pwpa.eval_backward(grad, x, ctx.table), None


def _bw_setup_context(ctx: Any, inputs: tuple, output: torch.Tensor) -> None:
    grad, x, table = inputs
    ctx.save_for_backward(grad, x)
    ctx.table = table
    ctx.table_ref = _lookup(table)  # see _setup_context


def _bw_backward(ctx: Any, gg: torch.Tensor, bw: Callable = None):
    # out = grad * f'(x): d out / d grad = f'(x), d out / d x = grad * f''(x), both as
    # the backward op of a table (f' = this table's derivative, f'' its derivative's).
    bw = bw or torch.ops.pwpa.eval_backward
    grad, x = ctx.saved_tensors
    d_grad = d_x = None
    if ctx.needs_input_grad[0]:
        d_grad = bw(gg, x, ctx.table)
    if ctx.needs_input_grad[1]:
        d_x = bw(gg * grad, x, _deriv_handle(ctx.table))
    return d_grad, d_x, None


_eval_op.register_autograd(_backward, setup_context=_setup_context)
_eval_backward_op.register_autograd(_bw_backward, setup_context=_bw_setup_context)


def _batched(t: torch.Tensor, bdim: Any, size: int) -> torch.Tensor:
    """t with its vmap batch dimension first (expanded to `size` when t has none)."""
    if bdim is None:
        return t.expand(size, *t.shape)
    return t.movedim(bdim, 0)


def _bw_vmap(info: Any, in_dims: tuple, grad: torch.Tensor, x: torch.Tensor, table: int, bw: Callable):
    """The batching rule of grad * f'(x) through `bw` (the op or its Function): both
    batched at one dimension as they are, else both with the batch dimension first."""
    gd, xd = in_dims[0], in_dims[1]
    if gd == xd:
        return bw(grad, x, table), gd
    return bw(_batched(grad, gd, info.batch_size), _batched(x, xd, info.batch_size), table), 0


# Batching rules: the ops are element-wise, so a batched input is evaluated whole.
@torch.library.register_vmap("pwpa::eval")
def _eval_vmap(info: Any, in_dims: tuple, x: torch.Tensor, table: int):
    return torch.ops.pwpa.eval(x, table), in_dims[0]


@torch.library.register_vmap("pwpa::eval_backward")
def _eval_backward_vmap(info: Any, in_dims: tuple, grad: torch.Tensor, x: torch.Tensor, table: int):
    return _bw_vmap(info, in_dims, grad, x, table, torch.ops.pwpa.eval_backward)


class _Eval(torch.autograd.Function):
    """``pwpa::eval`` for autograd and torch.func (see the module notes); eager only:
    Dynamo does not trace an ``autograd.Function`` with a ``jvp``, so under
    torch.compile the op is called directly (:func:`_apply`)."""

    @staticmethod
    def forward(x: torch.Tensor, table: int) -> torch.Tensor:
        return _eval_now(x, table)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: torch.Tensor) -> None:
        _setup_context(ctx, inputs, output)
        ctx.save_for_forward(inputs[0])

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor):
        (x,) = ctx.saved_tensors
        if not torch.is_grad_enabled() and _plain(grad, x):
            # A first-order backward (no create_graph, no transform): no graph to build.
            return _eval_backward_impl(grad, x, ctx.table), None
        return _EvalBackward.apply(grad, x, ctx.table), None

    @staticmethod
    def jvp(ctx: Any, x_t: torch.Tensor, _table_t: Any) -> torch.Tensor:
        # forward mode (jacfwd, hessian): f'(x) * x_t
        (x,) = ctx.saved_tensors
        return _EvalBackward.apply(x_t, x, ctx.table)

    @staticmethod
    def vmap(info: Any, in_dims: tuple, x: torch.Tensor, table: int):
        return _Eval.apply(x, table), in_dims[0]


class _EvalBackward(torch.autograd.Function):
    """``pwpa::eval_backward`` (grad * f'(x)) for autograd and torch.func."""

    @staticmethod
    def forward(grad: torch.Tensor, x: torch.Tensor, table: int) -> torch.Tensor:
        return _eval_backward_now(grad, x, table)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: torch.Tensor) -> None:
        _bw_setup_context(ctx, inputs, output)
        ctx.save_for_forward(inputs[0], inputs[1])

    @staticmethod
    def backward(ctx: Any, gg: torch.Tensor):
        return _bw_backward(ctx, gg, _EvalBackward.apply)

    @staticmethod
    def jvp(ctx: Any, g_t: Any, x_t: Any, _table_t: Any) -> torch.Tensor:
        # d(g f'(x)) = g_t f'(x) + g f''(x) x_t
        grad, x = ctx.saved_tensors
        out = None
        if g_t is not None:
            out = _EvalBackward.apply(g_t, x, ctx.table)
        if x_t is not None:
            part = _EvalBackward.apply(grad * x_t, x, _deriv_handle(ctx.table))
            out = part if out is None else out + part
        return out if out is not None else torch.zeros_like(grad)

    @staticmethod
    def vmap(info: Any, in_dims: tuple, grad: torch.Tensor, x: torch.Tensor, table: int):
        return _bw_vmap(info, in_dims, grad, x, table, _EvalBackward.apply)


_functorch = getattr(torch._C, "_functorch", None)
_functorch_wrapped = getattr(_functorch, "is_functorch_wrapped_tensor", None)
# The older torch._vmap_internals (jacobian/hessian(vectorize=True), is_grads_batched=True,
# gradcheck's batched checks) wraps tensors in a legacy BatchedTensor that has no storage
# and that is_functorch_wrapped_tensor does not report.
_legacy_batched = getattr(_functorch, "is_legacy_batchedtensor", None)


def _wrapped_any(t: torch.Tensor) -> bool:
    return bool(_functorch_wrapped(t)) or (_legacy_batched is not None and bool(_legacy_batched(t)))


_wrapped = _wrapped_any if _functorch_wrapped is not None else None


def _forward_ad() -> bool:
    """Whether forward-mode AD is on (torch.func.jvp / jacfwd / hessian, or
    forward_ad.dual_level). The ops have no forward-AD formula of their own, and PyTorch
    silently drops a tangent through them (torch 2.15: compiled jacfwd gave zeros), so
    under torch.compile the autograd.Function (whose jvp is the derivative table) runs
    instead: Dynamo cannot trace it and breaks the graph there, and that part runs
    eagerly, correctly. (Where Dynamo traces a whole transform without entering forward
    AD this is not seen: docs/PYTHON.md.)"""
    return getattr(torch.autograd.forward_ad, "_current_level", -1) >= 0


def forward_ad_dual(*ts: Any) -> bool:
    """Whether forward AD is on and one of the tensors is dual (carries a tangent)."""
    if not _forward_ad():
        return False
    unpack = torch.autograd.forward_ad.unpack_dual
    return any(isinstance(t, torch.Tensor) and unpack(t).tangent is not None for t in ts)


def transform_wrapped(*ts: Any) -> bool:
    """Whether one of the tensors is a torch.func (or legacy vmap) wrapper, whose memory
    pwpa cannot write or read directly."""
    return _wrapped is not None and any(isinstance(t, torch.Tensor) and _wrapped(t) for t in ts)


def _needs_function(x: torch.Tensor) -> bool:
    """Whether x needs the autograd.Function (reverse or forward AD, a torch.func transform);
    otherwise the op is called directly, which costs less than half as much per call
    (on this development VM, 2026-11-27: 14 against 48-53 us for 1000 elements on the CPU)."""
    if torch.is_grad_enabled() and x.requires_grad:
        return True
    if _wrapped is None or _wrapped(x):
        return True
    return _forward_ad()


def _direct(x: torch.Tensor) -> bool:
    """Whether to call an op itself (eager, when no gradient can be needed) rather than
    through the autograd.Function. Checks x's layout first: the dispatcher's error for a
    nested or sparse tensor names no remedy."""
    check_layout(x)
    return not _needs_function(x)


@torch.jit.ignore
def _apply(x: torch.Tensor, handle: int) -> torch.Tensor:
    if torch.compiler.is_compiling():
        if _forward_ad():
            return _Eval.apply(x, handle)
        return torch.ops.pwpa.eval(x, handle)
    if _direct(x):
        return _eval_now(x, handle)
    return _Eval.apply(x, handle)


def fx_eval(x: Any, handle: int, out: Any = None) -> Any:
    """Under ``torch.fx.symbolic_trace``: the ``pwpa::eval`` op, which the graph records
    (the table must stay alive while the traced module is used, as for TorchScript)."""
    if out is not None:
        raise ArgumentError("table(x, out=y) cannot be traced by torch.fx; call table(x)")
    return torch.ops.pwpa.eval(x, handle)


@torch.jit.ignore
def _module_forward(x: Any, handle: int) -> torch.Tensor:
    """PwPA.forward outside TorchScript: a torch.fx proxy records the op; otherwise x
    must be a tensor."""
    if isinstance(x, torch.fx.Proxy):
        return fx_eval(x, handle)
    _check_tensor(x, "PwPA")
    return _apply(x, handle)


def _check_tensor(x: Any, who: str) -> None:
    if not isinstance(x, torch.Tensor):
        raise ArgumentError(
            f"{who} takes a torch tensor, got {type(x).__name__} "
            "(evaluate numpy arrays and numbers with table(x))"
        )


def pwpa_eval(x: torch.Tensor, table: Union[Table, int]) -> torch.Tensor:
    """Evaluates a table on a tensor (autograd to any order, torch.compile, torch.func)."""
    if isinstance(table, Table):
        handle = table.handle
    elif isinstance(table, int) and not isinstance(table, bool):
        handle = table
    else:
        raise ArgumentError(f"pwpa_eval takes a pwpa.Table or its handle (an int), got {type(table).__name__}")
    if isinstance(x, torch.fx.Proxy):
        return fx_eval(x, handle)
    _check_tensor(x, "pwpa_eval")
    return _apply(x, handle)


# ---- the seed-compatible ops (pwpa.ops.pwpa / _pwpa on tensors) -------------------------------
# The coefficients and partition points are tensor inputs of the op: the table is built
# (and cached) inside it, out of sight of Dynamo and functorch.


def _seed_table(coeffs: torch.Tensor, points: torch.Tensor, aos: bool) -> Table:
    from .ops import _table

    return _table(coeffs, points, aos)


@torch.library.custom_op("pwpa::seed_eval", mutates_args=())
def _seed_op(x: torch.Tensor, coeffs: torch.Tensor, points: torch.Tensor, aos: bool) -> torch.Tensor:
    """torchPACE's op: y = the seed-format table (coeffs, points) at x."""
    y = _out_like(x, real=True)
    eval_tensor_into(_seed_table(coeffs, points, aos), x, y)
    return y


@_seed_op.register_fake
def _seed_fake(x: torch.Tensor, coeffs: torch.Tensor, points: torch.Tensor, aos: bool) -> torch.Tensor:
    torch_code(x.dtype, "input")
    return _out_like(x)


@torch.library.custom_op("pwpa::seed_eval_backward", mutates_args=())
def _seed_bw_op(
    grad: torch.Tensor, x: torch.Tensor, coeffs: torch.Tensor, points: torch.Tensor, aos: bool
) -> torch.Tensor:
    """grad * (the seed-format table)'(x), as ``pwpa::eval_backward``."""
    d = _seed_table(coeffs, points, aos).derivative()
    return grad_mul_into(d, x, grad, _bw_out(grad, x, real=True))


@_seed_bw_op.register_fake
def _seed_bw_fake(grad: torch.Tensor, x: torch.Tensor, coeffs: torch.Tensor, points: torch.Tensor, aos: bool):
    torch_code(x.dtype, "input")
    return _bw_out(grad, x)


def _seed_setup(ctx: Any, inputs: tuple, output: torch.Tensor) -> None:
    x, coeffs, points, aos = inputs
    ctx.save_for_backward(x, coeffs, points)
    ctx.aos = aos


def _seed_coeff_grad(
    grad: torch.Tensor, x: torch.Tensor, coeffs: torch.Tensor, points: torch.Tensor, aos: bool
) -> torch.Tensor:
    """d(sum(grad * y)) / d(coeffs) for y = the seed table at x: piece i's coefficient of
    x^j (global x, highest power first) collects grad * x^j over the elements in piece i
    (the seed's rule with pwpa's fix: below the first point piece 0, at or above the last
    point the last piece). Accumulated in f32 (f64 for f64 coefficients), from x's value
    in f32 as the op sees it; differentiable in grad and x (second derivatives)."""
    p = points.numel() - 1
    d = coeffs.numel() // p - 1
    acc = torch.float64 if coeffs.dtype == torch.float64 else torch.float32
    pts = points.detach().reshape(-1).to(torch.float32)
    xf = x.reshape(-1).to(torch.float32)
    idx = torch.searchsorted(pts[1:-1].contiguous(), xf.detach(), right=True)
    xa = xf.to(acc)
    pw = grad.reshape(-1).to(acc)  # grad * x^0
    cols = [None] * (d + 1)
    for k in range(d, -1, -1):  # column k multiplies x^(d - k)
        cols[k] = torch.zeros(p, dtype=acc, device=x.device).index_add(0, idx, pw)
        if k > 0:
            pw = pw * xa
    g = torch.stack(cols, dim=1)  # (P, D+1), AoS
    if not aos:
        g = g.t()
    return g.reshape(coeffs.shape).to(coeffs.dtype)


def _seed_backward(ctx: Any, grad: torch.Tensor):
    x, coeffs, points = ctx.saved_tensors
    gx = gc = None
    if ctx.needs_input_grad[0]:
        gx = torch.ops.pwpa.seed_eval_backward(grad, x, coeffs, points, ctx.aos)
    if ctx.needs_input_grad[1]:
        gc = _seed_coeff_grad(grad, x, coeffs, points, ctx.aos)
    # partition_points: y jumps where a point moves past an input and is otherwise
    # unchanged, so their gradient is zero (None) almost everywhere.
    return gx, gc, None, None


_seed_op.register_autograd(_seed_backward, setup_context=_seed_setup)


@torch.library.register_vmap("pwpa::seed_eval")
def _seed_vmap(info: Any, in_dims: tuple, x: torch.Tensor, coeffs: torch.Tensor, points: torch.Tensor, aos: bool):
    return _seed_batched(torch.ops.pwpa.seed_eval, info, in_dims, x, coeffs, points, aos)


def _seed_batched(fn: Callable, info: Any, in_dims: tuple, x: Any, coeffs: Any, points: Any, aos: bool):
    """A batching rule for the seed op: x batched alone is element-wise; batched tables
    (jacfwd with respect to the coefficients, a vmap over several tables) take one call
    per table."""
    if in_dims[1] is None and in_dims[2] is None:
        return fn(x, coeffs, points, aos), in_dims[0]

    def item(t: torch.Tensor, d: Any, b: int) -> torch.Tensor:
        return t if d is None else t.select(d, b)

    outs = [
        fn(item(x, in_dims[0], b), item(coeffs, in_dims[1], b), item(points, in_dims[2], b), aos)
        for b in range(info.batch_size)
    ]
    return torch.stack(outs), 0


class _SeedEval(torch.autograd.Function):
    """``pwpa::seed_eval`` for autograd and torch.func in eager mode (as :class:`_Eval`):
    gradients with respect to x (through the seed table's derivative, to any order) and
    the coefficients; forward mode too (the tangent of the coefficients is the seed
    polynomial of their tangents, since y is linear in them)."""

    @staticmethod
    def forward(x: torch.Tensor, coeffs: torch.Tensor, points: torch.Tensor, aos: bool) -> torch.Tensor:
        return torch.ops.pwpa.seed_eval(x, coeffs, points, aos)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple, output: torch.Tensor) -> None:
        x, coeffs, points, aos = inputs
        ctx.save_for_backward(x, coeffs, points)
        ctx.save_for_forward(x, coeffs, points)
        ctx.aos = aos

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor):
        x, coeffs, points = ctx.saved_tensors
        gx = gc = None
        if ctx.needs_input_grad[0]:
            gx = _EvalBackward.apply(grad, x, _seed_table(coeffs, points, ctx.aos).handle)
        if ctx.needs_input_grad[1]:
            gc = _seed_coeff_grad(grad, x, coeffs, points, ctx.aos)
        return gx, gc, None, None

    @staticmethod
    def jvp(ctx: Any, x_t: Any, c_t: Any, _p_t: Any, _aos_t: Any) -> torch.Tensor:
        x, coeffs, points = ctx.saved_tensors
        out = None
        if x_t is not None:
            out = _EvalBackward.apply(x_t, x, _seed_table(coeffs, points, ctx.aos).handle)
        if c_t is not None:
            part = _SeedEval.apply(x, c_t, points, ctx.aos)
            out = part if out is None else out + part
        return out if out is not None else torch.zeros_like(x)

    @staticmethod
    def vmap(info: Any, in_dims: tuple, x: torch.Tensor, coeffs: torch.Tensor, points: torch.Tensor, aos: bool):
        return _seed_batched(_SeedEval.apply, info, in_dims, x, coeffs, points, aos)


def seed_eval(x: torch.Tensor, coeffs: Any, points: Any, aos: bool) -> torch.Tensor:
    """``pwpa.ops.pwpa`` on a tensor (see pwpa.ops): the ``pwpa::seed_eval`` op under
    torch.compile and where no gradient can be needed; otherwise through
    :class:`_SeedEval` (autograd to any order in x, gradients for the coefficients, and
    torch.func transforms)."""
    # (pwpa.ops checked that coeffs and points are tensors on x's device.)
    aos = bool(aos)
    if torch.compiler.is_compiling():
        if _forward_ad():  # as in _apply
            return _SeedEval.apply(x, coeffs, points, aos)
        return torch.ops.pwpa.seed_eval(x, coeffs, points, aos)
    check_layout(x)
    if _needs_function(x) or _needs_function(coeffs) or _needs_function(points):
        return _SeedEval.apply(x, coeffs, points, aos)
    return torch.ops.pwpa.seed_eval(x, coeffs, points, aos)


def value_and_derivative(x: torch.Tensor, table: Table, derivative_dtype: torch.dtype = None):
    """(table(x), table'(x)) without autograd. On CUDA one fused kernel computes both
    (the derivative in ``derivative_dtype``, default x's dtype — the fused kernel writes
    both in one type); on CPU two passes. Same bits as evaluating each table separately."""
    if not isinstance(x, torch.Tensor):
        raise ArgumentError(
            f"value_and_derivative takes a torch tensor (got {type(x).__name__}); for numpy "
            "arrays use table(x) and table.derivative()(x)"
        )
    if not isinstance(table, Table):
        raise ArgumentError(f"value_and_derivative takes a pwpa.Table (got {type(table).__name__})")
    torch_code(x.dtype, "input")
    if derivative_dtype is not None and not isinstance(derivative_dtype, torch.dtype):
        raise ArgumentTypeError(
            f"derivative_dtype must be a torch.dtype such as torch.float32 (got {derivative_dtype!r})"
        )
    dt = derivative_dtype or x.dtype
    torch_code(dt, "derivative")
    check_layout(x)
    check_device(x.device)
    if torch.compiler.is_compiling():
        # The ops Dynamo traces (it cannot call table.derivative()): the backward op with
        # a gradient of ones is f'(x) in f32 rounded once into dt, the kernels' bits.
        handle = table.handle
        y = torch.ops.pwpa.eval(x, handle)
        return y, torch.ops.pwpa.eval_backward(torch.ones_like(x, dtype=dt), x, handle)
    d = table.derivative()
    if transform_wrapped(x) or forward_ad_dual(x):
        # Inside torch.func transforms or with a dual tensor: through the op (which such
        # wrappers can carry), the derivative in f32 rounded once into dt.
        y = _apply(x, table.handle)
        dy = _apply(x if x.dtype == dt else x.float(), d.handle)
        return y, dy.to(dt)
    if x.is_neg():  # a lazily negated view: its memory holds -x
        x = x.resolve_neg()
    y = _out_like(x, real=True)
    dy = _out_like(x, dt, real=True)
    if x.device.type == "cuda" and dt == x.dtype:
        # One pass over raw memory: x, y and dy in one dense layout (y and dy take x's).
        aligned = _aligned(x)
        if aligned and _same_layout(x, y, dy):
            xc = x
        else:
            xc = x.contiguous() if aligned else _fresh(x)
            y, dy = torch.empty_like(xc), torch.empty_like(xc)
        n = xc.numel()
        if n:
            index, stream = cuda_target(x.device)
            code = torch_code(x.dtype)
            table._native._eval_cuda_with_derivative(
                d._native, index, xc.data_ptr(), y.data_ptr(), dy.data_ptr(), n, code, code, stream
            )
        return y, dy
    eval_tensor_into(table, x, y)
    eval_tensor_into(d, x, dy)
    return y, dy


def _as_table(table: Union[Table, str, "os.PathLike[str]", Any]) -> Table:
    if isinstance(table, Table):
        return table
    if isinstance(table, (str, os.PathLike)):
        return Table.load(table)
    raise ArgumentTypeError(f"expected a pwpa.Table or a path to a table file, got {type(table).__name__}")


class PwPA(nn.Module):
    """An activation that evaluates a pwpa table (``nn.Module``).

    Works on CPU and CUDA tensors in float32/float16/bfloat16, with autograd (through the
    table's derivative) and under ``torch.compile(fullgraph=True)``. The table travels
    with ``state_dict()`` (as JSON extra state).
    """

    # TorchScript compiles a module's properties unless told not to; `table` is Python-only.
    __jit_unused_properties__ = ["table"]

    def __init__(self, table: Union[Table, str, "os.PathLike[str]"]) -> None:
        super().__init__()
        self.table = table

    @property
    def table(self) -> Table:
        """The table; assigning one (a Table or a table file path) switches to it."""
        return self._table

    @table.setter
    def table(self, table: Union[Table, str, "os.PathLike[str]"]) -> None:
        t = _as_table(table)
        self._table = t
        self.handle = t.handle

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.jit.is_scripting() or torch.jit.is_tracing():
            # TorchScript records the op itself (with its first-order autograd).
            return torch.ops.pwpa.eval(x, self.handle)
        return _module_forward(x, self.handle)

    def __setstate__(self, state: Any) -> None:
        # copy.deepcopy and pickling (torch.save(model)) give a new Table: take its
        # handle, not the original's (which dies with the original table).
        super().__setstate__(state)
        self.table = self._table

    def get_extra_state(self) -> Any:
        if torch.onnx.is_in_onnx_export():
            # The TorchScript-based exporter reads the state dict first and failed on this
            # dict with "'dict' object has no attribute 'detach'", naming no cause.
            raise ArgumentError(
                "ONNX export is not supported: a PwPA module evaluates the custom op "
                "pwpa::eval, which has no ONNX form (export with torch.export, or replace the "
                "PwPA modules by their original activations first)"
            )
        return {"pwpa_table": self.table.to_json()}

    def set_extra_state(self, state: Any) -> None:
        if not (isinstance(state, dict) and isinstance(state.get("pwpa_table"), str)):
            raise ArgumentError(
                "this PwPA module's saved state is not a pwpa table: expected a dict "
                f"{{'pwpa_table': <table JSON>}} (as get_extra_state writes), got {type(state).__name__}"
                + (f" with keys {sorted(map(str, state))}" if isinstance(state, dict) else "")
            )
        self.table = Table.from_json(state["pwpa_table"])

    def extra_repr(self) -> str:
        meta = self.table.meta
        name = meta.get("function")
        head = f"{name}, " if isinstance(name, str) else ""
        return f"{head}P={self.table.partitions}, D={self.table.degree}, range={self.table.range}"


def replace_activations(
    model: nn.Module,
    mapping: Mapping[type, Union[Table, str, Callable[[nn.Module], Any]]],
) -> nn.Module:
    """Replaces every submodule that is an instance of a key of ``mapping`` (e.g.
    ``{nn.GELU: gelu_table, nn.SiLU: silu_table}``) by ``PwPA(table)``, in place.

    A value may be a Table, a table file path, or a callable ``module -> Table | None``
    (None keeps that module, e.g. to match only ``GELU(approximate='tanh')``).
    Returns the model (or a PwPA if ``model`` itself matches).

    Functional calls in a ``forward`` (``F.gelu(x)``) are not modules and stay exact.
    PyTorch's ``nn.TransformerEncoderLayer`` / ``nn.TransformerDecoderLayer`` built with a
    string or function activation (``activation="gelu"``: ``F.gelu``) are handled: the
    function counts as its module (``F.gelu`` as ``nn.GELU()``, ``F.relu`` as ``nn.ReLU()``,
    ...). A replaced encoder layer's fused inference fast path (eval mode without
    gradients, which runs its own ReLU/GELU) is turned off, so the table is used there too,
    and so is its encoder's nested-tensor path for padded batches.
    """
    if not isinstance(model, nn.Module):
        raise ArgumentTypeError(f"model must be an nn.Module (got {type(model).__name__})")
    if isinstance(model, torch.jit.ScriptModule):
        # (Its submodules are compiled: the walk found no nn.GELU and silently changed
        # nothing.)
        raise ArgumentTypeError(
            "model is a TorchScript module (torch.jit.script / trace), whose activations are "
            "compiled into it: replace the activations in the Python model, then script it"
        )
    if not isinstance(mapping, Mapping) or not mapping:
        raise ArgumentTypeError("mapping must be a non-empty dict {module type: table}")
    for k in mapping:
        if not (isinstance(k, type) and issubclass(k, nn.Module)):
            raise ArgumentTypeError(f"mapping keys must be nn.Module subclasses, got {k!r}")
        if k in (nn.Module, nn.Sequential, nn.ModuleList, nn.ModuleDict):
            raise ArgumentTypeError(
                f"mapping key {k.__module__}.{k.__qualname__} matches containers and layers, not one "
                "activation: name the activation classes (nn.GELU, nn.SiLU, ...)"
            )
        if issubclass(k, PwPA):
            raise ArgumentTypeError(
                "PwPA modules are not replaced (they already are tables); to change a PwPA's "
                "table, assign a new PwPA(table) in its place"
            )

    def replacement(m: nn.Module) -> Any:
        if isinstance(m, PwPA):
            return None
        for cls, value in mapping.items():
            if isinstance(m, cls):
                if callable(value) and not isinstance(value, (Table, str)):
                    value = value(m)
                    if value is None:
                        return None
                    return PwPA(_as_table(value)).train(m.training)
                table = _as_table(value)
                _warn_if_different(m, table)
                return PwPA(table).train(m.training)
        return None

    top = replacement(model)
    if top is not None:
        return top
    fn_modules = _function_activations()
    # Every name a matching module is registered under (a module object may sit under
    # several: `act = nn.GELU(); nn.Sequential(lin, act, lin, act)`, which
    # named_children() lists once), each instance replaced by one PwPA shared the same way.
    # Every replacement is made (its table loaded) before the model changes: an error (a
    # table file that does not load) leaves the model as it was, not half converted.
    done: Dict[int, Any] = {}
    changes = []
    for parent in list(model.modules()):
        for name, child in list(parent._modules.items()):
            if child is None:
                continue
            if id(child) not in done:
                done[id(child)] = replacement(child)
            r = done[id(child)]
            if r is not None:
                changes.append((parent, name, r))
        if isinstance(parent, _TRANSFORMER_LAYERS):
            fn = parent.__dict__.get("activation")
            make = None
            if callable(fn) and not isinstance(fn, nn.Module):
                try:
                    make = fn_modules.get(fn)
                except TypeError:  # an unhashable callable: not one of PyTorch's functions
                    make = None
            if make is not None:
                r = replacement(make().train(parent.training))
                if r is not None:
                    changes.append((parent, "activation", r))
    replaced_layers = set()
    for parent, name, r in changes:
        # (a module for a function activation: nn.Module.__setattr__ registers it)
        setattr(parent, name, r)
        if name == "activation":
            _no_fast_path(parent)
            replaced_layers.add(id(parent))
    for m in model.modules():
        # An encoder turns a padded batch into a nested tensor on its inference fast path
        # (eval mode, no gradients, a src_key_padding_mask) and hands it to layers that
        # then take their ordinary path: a PwPA there would get the nested tensor.
        if isinstance(m, nn.TransformerEncoder) and any(id(layer) in replaced_layers for layer in m.layers):
            m.use_nested_tensor = False
    return model


def _warn_if_different(m: nn.Module, table: Table) -> None:
    """Warns when module ``m`` computes another function than ``table`` on the table's
    range: a plain mapping replaces every instance of a class, whatever its parameters
    (``GELU(approximate="tanh")`` by an erf-GELU table, ``ELU(alpha=0.2)`` by an
    ``alpha = 1`` one). Tolerance: 8x the table's verified absolute error plus 1e-6 of
    the function's size (1e-3 of it for a table without a recorded error). Modules that
    cannot run on a CPU float32 tensor, or whose results are random, are not checked."""
    lo, hi = table.range
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return
    x = torch.linspace(lo, hi, 1025, dtype=torch.float32)
    try:
        # forward() itself, not m(x): the user's hooks must not fire here. Twice: a
        # random module (nn.RReLU in training mode) is not compared.
        with torch.no_grad():
            want = m.forward(x)
            again = m.forward(x)
        if not (isinstance(want, torch.Tensor) and want.shape == x.shape and want.dtype == torch.float32):
            return
        if not torch.equal(want, again):
            return
        got = torch.from_numpy(table(x.numpy()))
    except Exception:  # a module on another device, of another dtype, needing another shape ...
        return
    diff = (got.double() - want.double()).abs()
    ok = torch.isfinite(diff)
    if not bool(ok.any()):
        return
    diff = torch.where(ok, diff, torch.zeros_like(diff))
    size = float(want.double().abs().max())
    err = table.meta.get("verified_abs_error")
    tol = 8.0 * err + 1e-6 * size if isinstance(err, (int, float)) and math.isfinite(err) else 1e-3 * max(size, 1.0)
    i = int(diff.argmax())
    worst = float(diff[i])
    if worst > tol:
        name = table.meta.get("function")
        what = f"the table of {name}" if isinstance(name, str) else "the table"
        warnings.warn(
            f"replace_activations: {m!r} differs from {what} by {worst:.3g} at x = {float(x[i]):.6g} "
            f"(more than the table's own error allows: {tol:.3g}); the module's parameters may "
            "not be the table's function. To replace only some instances, map the class to a "
            "callable, e.g. {nn.GELU: lambda m: table if m.approximate == 'none' else None}",
            UserWarning,
            stacklevel=4,
        )


# PyTorch's layers that keep a function (F.gelu for activation="gelu") as `activation`.
_TRANSFORMER_LAYERS = (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)


def _function_activations() -> Dict[Any, Callable[[], nn.Module]]:
    """Activation functions a Transformer layer may hold, and the module each stands for."""
    F = torch.nn.functional
    return {
        F.gelu: nn.GELU,
        F.relu: nn.ReLU,
        F.silu: nn.SiLU,
        F.mish: nn.Mish,
        F.elu: nn.ELU,
        F.selu: nn.SELU,
        F.softplus: nn.Softplus,
        F.hardswish: nn.Hardswish,
        F.sigmoid: nn.Sigmoid,
        torch.sigmoid: nn.Sigmoid,
        F.tanh: nn.Tanh,
        torch.tanh: nn.Tanh,
    }


def _no_fast_path(layer: nn.Module) -> None:
    """Turns off nn.TransformerEncoderLayer's fused inference path, which runs its own
    ReLU/GELU when this flag (set at construction) is non-zero, not `self.activation`."""
    if hasattr(layer, "activation_relu_or_gelu"):
        layer.activation_relu_or_gelu = 0

