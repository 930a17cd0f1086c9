"""One sweep per directory: ``DIR/.sweep.lock``, held with ``fcntl.flock`` for the sweep's life.

Two sweeps writing one ``points.csv`` would both compute every point and each rewrite could drop
the other's rows, so a second sweep on a directory is refused at once, naming the directory and
the holder's pid (written into the lock file). The lock is the kernel's: it goes away with the
process that held it, however that process ends (``kill -9`` included), so a stale lock file
never blocks a re-run. Within one process the lock is re-entrant (``vdla sweep`` takes it before
preparing the models, :func:`dse.runner.run_sweep` again around the run).

The lock file is opened without following a symbolic link (``O_NOFOLLOW``) and without
truncating: a ``.sweep.lock`` that is a symbolic link, not a regular file, or a hard link to
another file is refused (:class:`SweepLockFileError`) before anything is written, so a planted
link cannot make a sweep overwrite its target with a pid. Only once the lock is ours is the
file emptied and our pid written into it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
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


class SweepLockFileError(VdlaError):
    """``DIR/.sweep.lock`` is not a plain file of its own (a symbolic link, a FIFO, a hard link)."""

    def __init__(self, path: Path, what: str):
        self.path = path
        super().__init__(f"{path}: the sweep lock file is {what}; remove it (a sweep writes its pid "
                         "into this file) or give another -o DIR")


def _open_lock(path: Path):
    """``path`` opened for reading and writing, created if missing, never through a symbolic link
    and never truncated here; :class:`SweepLockFileError` unless it is a regular file with one link."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as err:
        if os.path.islink(path):  # ELOOP (Linux) or EMLINK (some BSDs) from O_NOFOLLOW
            raise SweepLockFileError(path, "a symbolic link") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SweepLockFileError(path, "not a regular file")
        if info.st_nlink != 1:
            raise SweepLockFileError(path, f"a hard link ({info.st_nlink} names for one file)")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "r+b")
    except BaseException:
        os.close(fd)
        raise


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
    fh = _open_lock(key / LOCK_NAME)
    try:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SweepBusyError(folder, _holder(fh)) from None
        fh.truncate(0)
        fh.seek(0)
        fh.write(f"{os.getpid()}\n".encode())
        fh.flush()
        _held[key] = [fh, 1]
        try:
            yield
        finally:
            del _held[key]
    finally:
        fh.close()  # closing the file releases the lock
