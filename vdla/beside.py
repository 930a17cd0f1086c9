"""One function computed beside the main work, in a forked child process, on the second core.

``job = Beside(compute)`` forks (where the platform can) and the child runs ``compute()`` while
the parent goes on; ``job.result()`` waits for the child and returns its value, unpickled from a
pipe. The value is what ``compute()`` returns in the parent: the child starts from a copy of the
parent's memory (same inputs, same code) and the functions this is used for are deterministic
(numpy on exact integer sums, ``compiler.frontend.float_ref``). So the child only moves work:

- anything that goes wrong in the child (an exception, a signal, a value that does not pickle)
  makes :meth:`Beside.result` compute the value in the parent instead, which raises what it
  raises there: errors look as they would without the child;
- the child ignores Ctrl-C (the terminal sends it to the whole process group): the parent
  handles it, and :meth:`Beside.cancel` (also on leaving a ``with`` block by an exception)
  kills and reaps the child, so none outlives the command;
- the child holds none of the parent's standard streams (fds 0, 1 and 2 on /dev/null: a pipe
  to whoever started the parent sees end-of-file when the parent ends, not when the child does),
  writes nothing, and leaves by ``os._exit`` (no atexit handlers, no flushing of the parent's
  buffers).

Without ``os.fork`` (Windows), or with ``VDLA_BESIDE=off``, ``compute()`` runs in
:meth:`Beside.result`, in the parent.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
from typing import Callable, Generic, TypeVar

T = TypeVar("T")
SWITCH_ENV = "VDLA_BESIDE"


def available() -> bool:
    return hasattr(os, "fork") and os.environ.get(SWITCH_ENV, "on").lower() not in ("off", "0", "no")


class Beside(Generic[T]):
    def __init__(self, compute: Callable[[], T], fork: bool = True, fallback: Callable[[], T] | None = None):
        """``fork``: start the child (False: ``compute()`` runs in :meth:`result`, as for a value
        the caller expects to find at hand, such as a cache hit). ``fallback``: what
        :meth:`result` computes in the parent when there is no child's value (no child, or it
        gave nothing): default ``compute``; for a child that also does optional work, which the
        parent need not do itself."""
        self.compute = compute
        self.fallback = fallback or compute
        self.pid: int | None = None
        self.read_fd: int | None = None
        self.forked = False
        if fork and available():
            self._fork()

    def _fork(self) -> None:
        read_fd, write_fd = os.pipe()
        try:
            pid = os.fork()
        except OSError:  # no memory or process slots: compute in the parent later
            os.close(read_fd), os.close(write_fd)
            return
        if pid == 0:  # the child: never returns
            os.close(read_fd)
            _child(self.compute, write_fd)
        os.close(write_fd)
        self.pid, self.read_fd, self.forked = pid, read_fd, True

    def __enter__(self) -> "Beside[T]":
        return self

    def __exit__(self, kind, value, traceback) -> None:
        if kind is not None:
            self.cancel()

    def result(self) -> T:
        """The value of ``compute()``: the child's, else computed here."""
        data = self._collect()
        if data is not None:
            try:
                ok, value = pickle.loads(data)
            except Exception:  # noqa: BLE001 (a damaged answer: compute it here)
                ok = False
            if ok:
                return value
        return self.fallback()

    def cancel(self) -> None:
        """Kill the child (if it still runs) and reap it."""
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except OSError:
                pass
        self._collect()

    def _collect(self) -> bytes | None:
        """The child's whole answer (None: it gave none), the pipe closed and the child reaped."""
        if self.read_fd is None:
            return None
        chunks = []
        try:
            while True:
                chunk = os.read(self.read_fd, 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
        except OSError:
            chunks = []
        finally:
            os.close(self.read_fd)
            self.read_fd = None
        status = 0
        if self.pid is not None:
            try:
                status = os.waitpid(self.pid, 0)[1]
            except ChildProcessError:
                pass
            self.pid = None
        return b"".join(chunks) if chunks and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 else None


def _child(compute: Callable, write_fd: int) -> None:
    """Run in the forked child: ``compute()``, its (ok, value) pickled onto ``write_fd``, exit."""
    code = 1
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0), os.dup2(devnull, 1), os.dup2(devnull, 2)
        sys.stdout = sys.stderr = open(os.devnull, "w")  # also where they were not fds 1 and 2
        data = pickle.dumps((True, compute()), protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(data)
        while view:
            view = view[os.write(write_fd, view):]
        code = 0
    except BaseException:  # noqa: BLE001 (the parent computes it again and reports any error)
        code = 1
    finally:
        os._exit(code)
