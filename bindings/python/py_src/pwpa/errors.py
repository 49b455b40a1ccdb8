"""Typed exceptions of pwpa. Every error from the Rust core arrives as one of these,
with the core's message unchanged.

``PwpaError`` is the base; the others also derive from the matching built-in
(``ValueError``, ``TypeError``, ``OSError``, ``RuntimeError``) so existing
``except ValueError`` code keeps working.
"""


class PwpaError(Exception):
    """Base class of every pwpa error."""


class TableError(PwpaError, ValueError):
    """A table that fails validation (breakpoints, counts, non-finite values, tails, file format)."""


class FitError(PwpaError, RuntimeError):
    """Fitting failed or its target could not be met."""


class FunctionError(PwpaError, ValueError):
    """An unknown catalogue function, an expression that does not parse, bad samples."""


class DTypeError(PwpaError, TypeError):
    """An array or tensor dtype pwpa does not evaluate (supported: float32, float16, bfloat16)."""


class ShapeError(PwpaError, ValueError):
    """Mismatched shapes: output vs input, coefficients vs partition points."""


class ArgumentError(PwpaError, ValueError):
    """Any other invalid argument."""


class ArgumentTypeError(ArgumentError, TypeError):
    """An argument of the wrong type (also a ``TypeError``)."""


class PwpaIOError(PwpaError, OSError):
    """A table file that cannot be read or written."""


class DeviceError(PwpaError, RuntimeError):
    """Tensors on different devices, or a device this build cannot use."""


class CudaUnavailableError(DeviceError):
    """A CUDA tensor, but this build has no CUDA support or no usable CUDA device."""


class CudaError(DeviceError):
    """An error reported by the CUDA backend (driver, NVRTC, launch)."""


class FitWarning(UserWarning):
    """A fit that succeeded but is useless on most of its range (the table is no nearer
    to the function than 0 is there); the message says what to change."""


__all__ = [
    "FitWarning",
    "PwpaError",
    "TableError",
    "FitError",
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
