"""One sweep per directory: ``DIR/.sweep.lock``, held with ``fcntl.flock`` for the sweep's life.

Two sweeps writing one ``points.csv`` would both compute every point and each rewrite could drop
the other's rows, so a second sweep on a directory is refused at once, naming the directory and
the holder's pid (written into the lock file). The lock is the kernel's: it goes away with the
process that held it, however that process ends (``kill -9`` included), so a stale lock file
never blocks a re-run. Within one process the lock is re-entrant (``vdla sweep`` takes it before
preparing the models, :func:`dse.runner.run_sweep` again around the run).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from vdla_hw.errors import VdlaError

LOCK_NAME = ".sweep.lock"

_held: dict[Path, list] = {}  # resolved directory -> [file object, depth] of the locks this process holds


class SweepBusyError(VdlaError):
    """Another process is sweeping into the same directory."""

    def __init__(self, folder: Path, holder: str):
        self.folder, self.holder = folder, holder
        super().__init__(f"{folder}: another sweep ({holder}) is writing to this directory; wait for it to finish "
                         "or give another -o DIR")


def _holder(fh) -> str:
    fh.seek(0)
    text = fh.read(32).decode("ascii", "replace").strip()
    return f"pid {text}" if text.isdigit() else "pid unknown"


@contextlib.contextmanager
def sweep_lock(folder: str | Path):
    """Hold ``folder``'s sweep lock for the ``with`` block (the folder is created if needed);
    :class:`SweepBusyError` when another process holds it."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    key = folder.resolve()
    if key in _held:
        _held[key][1] += 1
        try:
            yield
        finally:
            _held[key][1] -= 1
        return
    fh = open(key / LOCK_NAME, "a+b")
    try:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SweepBusyError(folder, _holder(fh)) from None
        fh.truncate(0)
        fh.write(f"{os.getpid()}\n".encode())
        fh.flush()
        _held[key] = [fh, 1]
        try:
            yield
        finally:
            del _held[key]
    finally:
        fh.close()  # closing the file releases the lock
