"""Errors raised by the CPU fallback kernels.

Every message names the kernel and the offending argument, shape, dtype, value or tool, and says
what to do. User mistakes (bad shapes, dtypes, parameters, buffer values, work beyond the limits)
are ``ValueError`` subclasses and ``VdlaError`` subclasses (one line for people: a deployment package
that asks for them is refused, not crashed on); a missing cross toolchain is a ``RuntimeError``
subclass because it is an installation problem.
"""

from vdla_hw.errors import LimitError, VdlaError


class KernelError(ValueError, VdlaError):
    """Base class: a kernel was asked to do something it cannot do."""


class KernelParamError(KernelError):
    """A kernel parameter (stride, pad, shift, block size, ...) is out of range."""


class KernelShapeError(KernelError):
    """An input array has the wrong shape for the kernel it is passed to."""


class KernelDtypeError(KernelError):
    """An input array has the wrong dtype for the kernel it is passed to."""


class KernelValueError(KernelError):
    """A buffer whose values the generated code uses as indices, divisors, shift amounts or table
    entries (a gather's ``index``, an average pool's ``count``, ...) holds a value outside the
    range the kernel is defined for; checked before the native code reads it. ``buffer`` names
    the argument, ``why`` says which value where."""

    def __init__(self, family: str, buffer: str, why: str):
        self.family, self.buffer, self.why = family, buffer, why
        super().__init__(f"{family}: buffer '{buffer}' {why}")


class KernelLimitError(KernelError, LimitError):
    """A kernel's work or memory is beyond the documented bound (``vdla_hw.limits``)."""


class ToolchainError(RuntimeError, VdlaError):
    """A tool for the ARM build, the qemu run or the cost model (ld.lld, gcc, qemu-arm, llvm-mca) is
    missing or failed: an installation problem, reported to the user in one line (a VdlaError)."""
