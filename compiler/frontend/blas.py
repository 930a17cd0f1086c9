"""The BLAS thread count of numpy's OpenBLAS, for a block of code: ``with one_thread(): ...``.

The numpy models' matrix products (``float_ref.conv_taps``: the model build's BatchNorm pass,
calibration, the quantization report and the quantized reference) are exact whatever the thread
count, so threads only change their speed, and on these shapes (a few hundred MFLOP per product)
OpenBLAS's second thread costs more than it gives: measured on ResNet-18's build at 224 on the
2-core machine, 2.1 CPU s with one thread against 5.2 CPU s (and 2.4x the wall time) with two
(the threads spin waiting for work, more so when other processes hold the cores). The work that
can use the second core runs beside the main one instead (``vdla.network``: the quantization
report in a child process).

The count is set through OpenBLAS's own ``openblas_set_num_threads`` (under the symbol names
numpy's wheels use, ``scipy_openblas_*64_``, or the plain ones), found among the libraries the
process has loaded; with another BLAS (MKL, Accelerate) or none found, :func:`one_thread` does
nothing: results are the same either way.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import threading

PREFIXES = ("scipy_openblas_", "openblas_")   # numpy >= 2 wheels (scipy-openblas), a system OpenBLAS
SUFFIXES = ("64_", "")                         # the 64-bit-integer build, the plain one
_lock = threading.Lock()
_depth = [0, 0]  # (nesting depth, the count to restore when the outermost block ends)


def _loaded_openblas() -> list[str]:
    """Paths of the OpenBLAS libraries mapped into this process (Linux: /proc/self/maps)."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split(None, 5)[5].strip() for line in maps if "openblas" in line.lower()
                     and len(line.split(None, 5)) == 6}
    except OSError:
        return []
    return sorted(p for p in paths if ".so" in p)


@functools.lru_cache(maxsize=1)
def _functions():
    """(get, set) of numpy's OpenBLAS thread count, or None."""
    import numpy  # noqa: F401  (loads the BLAS library numpy links)

    for path in _loaded_openblas():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in PREFIXES:
            for suffix in SUFFIXES:
                get = getattr(lib, f"{prefix}get_num_threads{suffix}", None)
                put = getattr(lib, f"{prefix}set_num_threads{suffix}", None)
                if get is not None and put is not None:
                    get.restype, get.argtypes = ctypes.c_int, []
                    put.restype, put.argtypes = None, [ctypes.c_int]
                    return get, put
    return None


def threads() -> int | None:
    """numpy's OpenBLAS thread count now (None: not an OpenBLAS we can reach)."""
    found = _functions()
    return None if found is None else int(found[0]())


@contextlib.contextmanager
def one_thread():
    """Run the block with numpy's OpenBLAS on one thread (nested blocks and threads share the
    setting; the outermost restores the count it found)."""
    found = _functions()
    if found is None:
        yield
        return
    get, put = found
    with _lock:
        if _depth[0] == 0:
            _depth[1] = int(get())
            if _depth[1] != 1:
                put(1)
        _depth[0] += 1
    try:
        yield
    finally:
        with _lock:
            _depth[0] -= 1
            if _depth[0] == 0 and _depth[1] != 1:
                put(_depth[1])
