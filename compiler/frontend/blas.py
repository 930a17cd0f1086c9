"""The thread count of numpy's BLAS (OpenBLAS in numpy's wheels), for a block of code: ``with one_thread(): ...``.

The numpy models' matrix products (``float_ref.conv_taps``: the model build's BatchNorm pass,
calibration, the quantization report and the quantized reference) are exact whatever the thread
count, so threads only change their speed, and on these shapes (a few hundred MFLOP per product)
OpenBLAS's second thread costs more than it gives: measured on ResNet-18's build at 224 on the
2-core machine, 2.1 CPU s with one thread against 5.2 CPU s (and 2.4x the wall time) with two
(the threads spin waiting for work, more so when other processes hold the cores). The work that
can use the second core runs beside the main one instead (``vdla.network``: the quantization
report in a child process).

The count is read and set with threadpoolctl (the BLAS libraries the process has loaded, each
through its own API: OpenBLAS, MKL, BLIS), for the BLAS numpy uses; without one it reaches,
:func:`one_thread` does nothing: results are the same either way.
"""

from __future__ import annotations

import contextlib
import functools
import threading

_lock = threading.Lock()
_depth = [0, 0]  # (nesting depth, the count to restore when the outermost block ends)


@functools.lru_cache(maxsize=1)
def _library():
    """threadpoolctl's controller of the BLAS numpy loaded (the first one found), or None."""
    import numpy  # noqa: F401  (loads the BLAS library numpy links)
    from threadpoolctl import ThreadpoolController

    found = ThreadpoolController().select(user_api="blas").lib_controllers
    return found[0] if found else None


def _set(library, count: int) -> None:
    """Set the BLAS's (process-wide) count. threadpoolctl lets only the thread that set an
    OpenBLAS count first set it again; :data:`_lock` already orders our setters, so each hands
    that control back at once and the outermost block of any thread can restore the count."""
    library.set_num_threads(count)
    release = getattr(library, "clear_controlling_thread", None)  # OpenBLAS's controller only
    if release is not None:
        release()


def threads() -> int | None:
    """numpy's BLAS thread count now (None: no BLAS threadpoolctl can reach)."""
    library = _library()
    return None if library is None else int(library.get_num_threads())


@contextlib.contextmanager
def one_thread():
    """Run the block with numpy's BLAS on one thread (nested blocks and threads share the
    setting; the outermost restores the count it found)."""
    library = _library()
    if library is None:
        yield
        return
    with _lock:
        if _depth[0] == 0:
            _depth[1] = int(library.get_num_threads())
            if _depth[1] != 1:
                _set(library, 1)
        _depth[0] += 1
    try:
        yield
    finally:
        with _lock:
            _depth[0] -= 1
            if _depth[0] == 0 and _depth[1] != 1:
                _set(library, _depth[1])
