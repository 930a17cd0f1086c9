"""Errors raised by the CPU fallback kernels.

Every message names the kernel and the offending argument, shape, dtype or tool, and says what
to do. User mistakes (bad shapes, dtypes, parameters) are ``ValueError`` subclasses; a missing
cross toolchain is a ``RuntimeError`` subclass because it is an installation problem.
"""


class KernelError(ValueError):
    """Base class: a kernel was asked to do something it cannot do."""


class KernelParamError(KernelError):
    """A kernel parameter (stride, pad, shift, block size, ...) is out of range."""


class KernelShapeError(KernelError):
    """An input array has the wrong shape for the kernel it is passed to."""


class KernelDtypeError(KernelError):
    """An input array has the wrong dtype for the kernel it is passed to."""


class ToolchainError(RuntimeError):
    """A tool for the ARM build or the qemu run (ld.lld, gcc, qemu-arm) is missing or failed."""
