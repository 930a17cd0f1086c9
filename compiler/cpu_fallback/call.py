"""Calling a compiled kernel on numpy buffers through ctypes (host JIT or a loaded .so).

This module needs neither llvmlite nor a compiler, so the board runtime can use it to call the
kernels of a shared library built by ``arm.build_arm_library``.
"""

import ctypes
import threading
import time

import numpy as np

from .errors import KernelDtypeError, KernelShapeError


class CompiledKernel:
    """A callable compiled kernel: ``kernel(*inputs) -> output`` (a fresh numpy array).

    ``inputs`` are numpy arrays in the order of ``spec.args()`` without the output; their
    dtype and shape must match exactly (no silent casts); non-contiguous inputs are copied.
    Before the native code runs, the spec's work and memory are checked against the limits
    (once) and its index-like buffers' values (every call: ``KernelSpec.check_values``), so no
    input makes the code read or write outside a buffer. Scratch buffers (a kernel's
    workspace) are allocated here, once per kernel and thread.
    """

    def __init__(self, spec, address, compile_seconds=0.0, keepalive=None):
        self.spec = spec
        self.symbol = spec.symbol
        self.compile_seconds = compile_seconds
        self.arg_specs = spec.args()
        self._fn = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * len(self.arg_specs)))(address)
        self._keepalive = keepalive  # the engine or library owning the code
        self._scratch = threading.local()  # per thread: the workspace buffers of one call
        self._within_limits = False  # spec.check_limits() passed (checked on the first call)

    def __repr__(self):
        return f"CompiledKernel({self.spec.describe()})"

    def check_inputs(self, inputs):
        """Validated, C-contiguous copies-or-views of ``inputs``; raises naming the kernel."""
        wanted = [a for a in self.arg_specs if a.is_input]
        family = self.spec.family
        if len(inputs) != len(wanted):
            raise KernelShapeError(
                f"{family}: expected {len(wanted)} inputs ({', '.join(a.name for a in wanted)}), "
                f"got {len(inputs)}")
        checked = []
        for array, arg in zip(inputs, wanted):
            if not isinstance(array, np.ndarray):
                raise KernelDtypeError(f"{family}: input '{arg.name}' must be a numpy array, "
                                       f"got {type(array).__name__}")
            if array.dtype != np.dtype(arg.dtype):
                raise KernelDtypeError(
                    f"{family}: input '{arg.name}' must be {arg.dtype}, got {array.dtype}")
            if tuple(array.shape) != tuple(arg.shape):
                raise KernelShapeError(
                    f"{family}: input '{arg.name}' must have shape {tuple(arg.shape)}, "
                    f"got {tuple(array.shape)}")
            checked.append(np.ascontiguousarray(array))
        if not self._within_limits:
            self.spec.check_limits()
            self._within_limits = True
        self.spec.check_values({arg.name: array for arg, array in zip(wanted, checked)})
        return checked

    def _workspace(self):
        buffers = getattr(self._scratch, "buffers", None)
        if buffers is None:
            buffers = self._scratch.buffers = [np.empty(a.shape, dtype=a.dtype)
                                               for a in self.arg_specs if a.scratch]
        return buffers

    def __call__(self, *inputs):
        arrays = iter(self.check_inputs(inputs))
        scratch = iter(self._workspace())
        outputs = [np.empty(a.shape, dtype=a.dtype) for a in self.arg_specs if a.output]
        results = iter(outputs)
        buffers = [next(results) if a.output else next(scratch) if a.scratch else next(arrays)
                   for a in self.arg_specs]
        self._fn(*[a.ctypes.data for a in buffers])
        return outputs[0] if len(outputs) == 1 else tuple(outputs)


def load_library(path, specs):
    """Load a kernel shared library (e.g. the Cortex-A9 build on the board) with ctypes.

    Returns ``{spec: CompiledKernel}`` for ``specs``, which must be the specs the library was
    built from. Raises ``KernelShapeError`` naming a spec whose symbol is missing.
    """
    library = ctypes.CDLL(str(path))
    kernels = {}
    for spec in specs:
        try:
            fn = getattr(library, spec.symbol)
        except AttributeError:
            raise KernelShapeError(
                f"{spec.family}: symbol {spec.symbol} ({spec.describe()}) is not in {path}; "
                f"rebuild the library with this spec") from None
        address = ctypes.cast(fn, ctypes.c_void_p).value
        kernels[spec] = CompiledKernel(spec, address, keepalive=library)
    return kernels


def timed(fn, *args, repeat=5):
    """Best wall-clock seconds of ``repeat`` calls of ``fn(*args)`` (for benchmarks)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - start)
    return best
