"""The study's figures drawn beside the run, in a second process (``python -m vdla.figure_worker``).

``vdla run --plots`` starts :class:`FigureWorker` before its simulation: the child imports
matplotlib and draws a small figure to PNG and PDF (fonts, text layout and both backends set
up, about 1.2 s of CPU) on the machine's other core while the parent simulates. When the run
is done the parent sends the figures' data (:func:`vdla.plots.render`'s plain values) in
batches, each drawn either by a drawer the worker forks for it (:class:`vdla.beside.Beside`, warm
too; a drawer that fails leaves its batch to the worker) or by the worker itself, so that two
processes draw at once, and at the end receives every figure's bytes (``{name: {ext: bytes}}``).
The parent stages them through :class:`vdla.outputs.Outputs` as before (one set, put in place at the
commit); the bytes are those :mod:`vdla.plots` writes in one process.

Protocol on the child's stdin / stdout: length-prefixed pickles (8 bytes big-endian, then the
pickle), only between this module's two ends (the parent and a child it started from the same
code). Parent -> worker: ``("draw", [(name, data), ...], fork)`` messages, then ``("end",)``.
Worker -> parent: ``("done", {name: {ext: bytes}})`` or
``("error", "one line")``.

Contracts: the worker runs in its own process group (a Ctrl-C at the terminal reaches only the
parent, which ends the group: the worker and its forked drawer); :meth:`FigureWorker.close`
kills and reaps the group on every path out of the ``with`` block (error, Ctrl-C); a worker
whose parent vanished reads end-of-file and exits. A worker that fails or dies gives one
:class:`FigureWorkerError` naming what happened (``vdla``: one line, exit status 1).
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

from vdla.beside import Beside

_HEADER = struct.Struct(">Q")


class FigureWorkerError(RuntimeError):
    """The figure worker failed or died (a bug or a broken installation, not a user error)."""


def send(stream, message) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def receive(stream):
    """The next message, or None at end-of-file."""
    header = _read_exactly(stream, _HEADER.size)
    if header is None:
        return None
    (size,) = _HEADER.unpack(header)
    data = _read_exactly(stream, size)
    if data is None:
        raise EOFError("the stream ended inside a message")
    return pickle.loads(data)


def _read_exactly(stream, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = stream.read(left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


# ------------------------------------------------------------------------------- the parent's end


class FigureWorker:
    """A figure worker child (see the module docstring)::

        with FigureWorker() as worker:          # started: it warms up meanwhile
            ...                                 # the simulation
            worker.draw([(name, data), ...], fork=True)   # drawn in a forked drawer
            worker.draw([(name, data)])         # drawn by the worker itself, meanwhile
            files = worker.result()             # {name: {ext: bytes}}
    """

    def __init__(self):
        root = str(Path(__file__).resolve().parents[1])  # this checkout first, as the parent runs it
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
        self._stderr = tempfile.TemporaryFile()
        self._proc = subprocess.Popen([sys.executable, "-m", "vdla.figure_worker"], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=self._stderr, env=env, start_new_session=True)

    def __enter__(self) -> FigureWorker:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def draw(self, jobs: list[tuple[str, dict]], fork: bool = False) -> None:
        """Draw ``jobs`` (figure name, :mod:`vdla.plots` data): in a drawer forked for them
        (``fork``: on the other core) or in the worker itself, after its earlier batches."""
        self._send(("draw", jobs, fork))

    def _send(self, message) -> None:
        try:
            send(self._proc.stdin, message)
        except (BrokenPipeError, OSError):
            raise self._died() from None

    def result(self) -> dict[str, dict[str, bytes]]:
        """Every drawn figure's files: ends the job."""
        self._send(("end",))
        try:
            message = receive(self._proc.stdout)
        except (EOFError, OSError, pickle.UnpicklingError):
            message = None
        if message is None:
            raise self._died()
        kind, value = message
        if kind == "error":
            raise FigureWorkerError(f"figure worker: {value}")
        return value

    def _died(self) -> FigureWorkerError:
        # its exit status without reaping it (WNOWAIT): until close() reaps it, its pid and so
        # its process group id stay ours, and close() can still end a drawer left in the group
        info = os.waitid(os.P_PID, self._proc.pid, os.WEXITED | os.WNOWAIT)
        killed = info.si_code in (os.CLD_KILLED, os.CLD_DUMPED)
        self._stderr.seek(0)
        lines = self._stderr.read().decode(errors="replace").strip().splitlines()
        return FigureWorkerError(f"the figure worker ended ({'signal' if killed else 'status'} {info.si_status}) "
                                 "before sending the figures" + (f": {lines[-1]}" if lines else ""))

    def close(self) -> None:
        """End the worker and its drawer (their process group: the worker is not reaped before
        this, so the group id cannot belong to anyone else) and reap the worker; idempotent."""
        proc = self._proc
        if proc.returncode is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):  # the whole group has ended already
                pass
        for stream in (proc.stdin, proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        proc.wait()
        self._stderr.close()


# ------------------------------------------------------------------------------- the worker's end


def warm_up() -> None:
    """Import matplotlib and both backends and draw a small figure with text to PNG and PDF: the
    fixed costs of the first figure, paid while the parent simulates."""
    from vdla import plots

    fig, ax = plots._figure(figsize=(2, 2))
    ax.bar([0, 1], [1, 2], label="warm-up")
    ax.set_yscale("log")
    plots.plain_log_ticks(ax.yaxis)
    ax.set_title("warm-up 0123456789", fontsize=9)
    plots._legend_outside(ax)
    plots._render(fig)


def _draw_batch(jobs) -> dict[str, dict[str, bytes]]:
    from vdla import plots

    return {name: plots.render(name, data) for name, data in jobs}


def _outcome(work):
    try:
        return "done", work()
    except Exception as err:  # noqa: BLE001 - sent as one line, raised by the parent
        return "error", f"{type(err).__name__}: {err}"


def serve(stdin, stdout) -> None:
    """Answer one job (see the module docstring); return at end-of-file."""
    warm_up()
    batches = []  # in order: a drawer forked beside this process (vdla.beside) or an outcome drawn here
    while True:
        message = receive(stdin)
        if message is None:  # the parent has gone (its drawers end when they find their pipe closed)
            return
        if message[0] == "end":
            break
        _, jobs, fork = message
        if fork:  # a drawer that fails or dies leaves its batch to be drawn here, as without one
            batches.append(Beside(lambda jobs=jobs: _draw_batch(jobs)))
        else:
            batches.append(_outcome(lambda: _draw_batch(jobs)))
    drawn, error = {}, None
    for batch in batches:  # every drawer reaped, the first error reported
        kind, value = _outcome(batch.result) if isinstance(batch, Beside) else batch
        if kind == "error":
            error = error or value
        else:
            drawn.update(value)
    send(stdout, ("error", error) if error else ("done", drawn))


def main() -> int:
    # Ctrl-C goes to the parent, which ends this process group; the default action here (never
    # a traceback) should a SIGINT reach this process anyway
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        serve(sys.stdin.buffer, sys.stdout.buffer)
    except BrokenPipeError:  # the parent has gone
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
