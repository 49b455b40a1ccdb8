"""PyTorch integration: the ``pwpa::eval`` custom op (fake kernel for torch.compile,
autograd through the table's derivative), the :class:`PwPA` module and
:func:`replace_activations`.

The op takes the input tensor and an int table handle (``Table.handle``), so a
compiled graph carries no Python object and has no graph break.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Mapping, Union

import torch
from torch import nn

from . import Table, _lookup
from ._eval import cuda_target, eval_tensor_into, grad_mul_into, torch_code

__all__ = ["PwPA", "replace_activations", "pwpa_eval", "value_and_derivative"]


def _out_like(x: torch.Tensor, dtype: torch.dtype = None) -> torch.Tensor:
    return torch.empty(x.shape, dtype=dtype or x.dtype, device=x.device)


@torch.library.custom_op("pwpa::eval", mutates_args=())
def _eval_op(x: torch.Tensor, table: int) -> torch.Tensor:
    """y = table(x), same shape/dtype/device as x (contiguous)."""
    t = _lookup(table)
    y = _out_like(x)
    eval_tensor_into(t, x, y)
    return y


@_eval_op.register_fake
def _eval_fake(x: torch.Tensor, table: int) -> torch.Tensor:
    torch_code(x.dtype, "input")
    return _out_like(x)


@torch.library.custom_op("pwpa::eval_backward", mutates_args=())
def _eval_backward_op(grad: torch.Tensor, x: torch.Tensor, table: int) -> torch.Tensor:
    """grad * table'(x): the derivative evaluated in f32, the product rounded in f32 and
    then once to grad's dtype — one fused pass (one kernel on CUDA), no f'(x) buffer."""
    d = _lookup(table).derivative()
    out = torch.empty(grad.shape, dtype=grad.dtype, device=grad.device)
    return grad_mul_into(d, x, grad, out)


@_eval_backward_op.register_fake
def _eval_backward_fake(grad: torch.Tensor, x: torch.Tensor, table: int) -> torch.Tensor:
    torch_code(x.dtype, "input")
    return torch.empty(grad.shape, dtype=grad.dtype, device=grad.device)


def _setup_context(ctx: Any, inputs: tuple, output: torch.Tensor) -> None:
    x, table = inputs
    ctx.save_for_backward(x)
    ctx.table = table


def _backward(ctx: Any, grad: torch.Tensor):
    (x,) = ctx.saved_tensors
    return torch.ops.pwpa.eval_backward(grad, x, ctx.table), None


_eval_op.register_autograd(_backward, setup_context=_setup_context)


def pwpa_eval(x: torch.Tensor, table: Union[Table, int]) -> torch.Tensor:
    """Evaluates a table on a tensor through the ``pwpa::eval`` op (autograd, compile)."""
    handle = table.handle if isinstance(table, Table) else int(table)
    return torch.ops.pwpa.eval(x, handle)


def value_and_derivative(x: torch.Tensor, table: Table, derivative_dtype: torch.dtype = None):
    """(table(x), table'(x)) without autograd. On CUDA one fused kernel computes both
    (the derivative in ``derivative_dtype``, default x's dtype — the fused kernel writes
    both in one type); on CPU two passes. Same bits as evaluating each table separately."""
    from ._eval import check_device

    torch_code(x.dtype, "input")
    check_device(x.device)
    d = table.derivative()
    dt = derivative_dtype or x.dtype
    y = _out_like(x)
    dy = _out_like(x, dt)
    if x.device.type == "cuda" and dt == x.dtype:
        xc = x.contiguous()
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


def _as_table(table: Union[Table, str, Any]) -> Table:
    if isinstance(table, Table):
        return table
    if isinstance(table, str):
        return Table.load(table)
    raise TypeError(f"expected a pwpa.Table or a path to a table file, got {type(table).__name__}")


class PwPA(nn.Module):
    """An activation that evaluates a pwpa table (``nn.Module``).

    Works on CPU and CUDA tensors in float32/float16/bfloat16, with autograd (through the
    table's derivative) and under ``torch.compile(fullgraph=True)``. The table travels
    with ``state_dict()`` (as JSON extra state).
    """

    def __init__(self, table: Union[Table, str]) -> None:
        super().__init__()
        self._set(_as_table(table))

    def _set(self, table: Table) -> None:
        self.table = table
        self.handle = table.handle

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.pwpa.eval(x, self.handle)

    def get_extra_state(self) -> Any:
        return {"pwpa_table": self.table.to_json()}

    def set_extra_state(self, state: Any) -> None:
        self._set(Table.from_json(state["pwpa_table"]))

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
    """
    if not isinstance(mapping, Mapping) or not mapping:
        raise TypeError("mapping must be a non-empty dict {module type: table}")
    for k in mapping:
        if not (isinstance(k, type) and issubclass(k, nn.Module)):
            raise TypeError(f"mapping keys must be nn.Module subclasses, got {k!r}")

    def replacement(m: nn.Module) -> Any:
        if isinstance(m, PwPA):
            return None
        for cls, value in mapping.items():
            if isinstance(m, cls):
                if callable(value) and not isinstance(value, (Table, str)):
                    value = value(m)
                    if value is None:
                        return None
                return PwPA(_as_table(value))
        return None

    top = replacement(model)
    if top is not None:
        return top
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            r = replacement(child)
            if r is not None:
                setattr(parent, name, r)
    return model

