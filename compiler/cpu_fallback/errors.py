"""Errors raised by the CPU fallback kernels.

Every message names the kernel and the offending argument, shape, dtype or tool, and says what
to do. User mistakes (bad shapes, dtypes, parameters) are ``ValueError`` subclasses; a missing
cross toolchain is a ``RuntimeError`` subclass because it is an installation problem.
"""

from vdla_hw.errors import VdlaError


class KernelError(ValueError):
    """Base class: a kernel was asked to do something it cannot do."""


class KernelParamError(KernelError):
    """A kernel parameter (stride, pad, shift, block size, ...) is out of range."""


class KernelShapeError(KernelError):
    """An input array has the wrong shape for the kernel it is passed to."""


class KernelDtypeError(KernelError):
    """An input array has the wrong dtype for the kernel it is passed to."""


class ToolchainError(RuntimeError, VdlaError):
    """A tool for the ARM build, the qemu run or the cost model (ld.lld, gcc, qemu-arm, llvm-mca) is
    missing or failed: an installation problem, reported to the user in one line (a VdlaError)."""
