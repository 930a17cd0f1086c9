"""The files a ``vdla`` command writes: checked before any work, written whole, put in place together.

Every output goes to exactly the path the user gave (``--output F`` writes ``F``, never
``F.npy``). An :class:`Outputs` set stages each file under a private folder beside its
destination (written through :func:`vdla_hw.files.atomic_write`, or by a writer that takes a
path), and :meth:`Outputs.commit` then moves every staged file onto its destination with
``os.replace`` while Ctrl-C and SIGTERM are held back (the moves take microseconds): an
interrupted or failed command leaves the old files, the new ones appear together, never a mix.
:meth:`Outputs.supersede` names files of an earlier run that this one replaces as a set; those
it does not write again are removed at the commit, so a folder never mixes two runs' results::

    write_file(path, data)               # one file: bytes, text, or a function writing to a binary file
    with Outputs() as out:               # several, together
        out.write(path, data)
        trace_writer(out.path(trace))    # a writer that wants a file name
        written = out.commit()

A write that fails (disk full, permission) is an ``OSError`` naming the destination, which
``vdla.cli`` prints as one line (exit status 2). :func:`file_problem` is the check made while
parsing (``vdla.argtypes.output_file``) and by :func:`check_writable` before a run.
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path

from vdla import interrupts
from vdla_hw.errors import VdlaError
from vdla_hw.files import atomic_write

STAGING_PREFIX = ".vdla-staging-"


def file_problem(path: str | Path) -> str | None:
    """Why ``path`` cannot be (re)written by a rename onto it, or None. An existing file must be
    a regular file with its owner's write permission (a read-only file is refused even for
    root, who could replace it); a device (``/dev/full``, ``/dev/null``) or a FIFO is never
    replaced; the folder must exist and be writable. A symbolic link is replaced, not followed."""
    path = Path(path)
    try:
        info = path.lstat()
    except FileNotFoundError:
        info = None
    except OSError as err:
        return err.strerror or str(err)
    if info is not None and not stat.S_ISLNK(info.st_mode):
        if stat.S_ISDIR(info.st_mode):
            return "it is a directory; give a file name"
        if not stat.S_ISREG(info.st_mode):
            return "it is not a regular file (a device, pipe or socket); give a file name"
        if not info.st_mode & stat.S_IWUSR or not os.access(path, os.W_OK):
            return "the file is read-only"
    folder = path.parent
    if not folder.is_dir():
        return f"folder {folder} does not exist"
    return folder_problem(folder)


def folder_problem(folder: str | Path) -> str | None:
    """Why files cannot be staged in the existing directory ``folder``, or None. Tried, not
    guessed: a staging folder is made there and removed again, as :class:`Outputs` does, since
    permission bits do not tell (root passes ``os.access`` on a read-only mount or on /proc)."""
    try:
        os.rmdir(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=folder))
    except OSError as err:
        return f"folder {folder} is not writable ({err.strerror or err})"
    return None


def check_writable(paths) -> None:
    """Raise one VdlaError naming the first of ``paths`` that cannot be written (before any work).
    A path in a folder that does not exist yet passes (``argtypes.output_dir`` checked that the
    folder can be made)."""
    for path in paths:
        path = Path(path)
        if not path.parent.exists() and not path.is_symlink():
            continue
        why = file_problem(path)
        if why:
            raise VdlaError(f"cannot write {path}: {why}")


def _os_error(err: OSError, dest: Path) -> OSError:
    """The same error, naming the destination instead of a temporary name."""
    return OSError(err.errno, err.strerror or str(err), str(dest))


def write_file(dest: str | Path, data) -> Path:
    """One output on its own: ``data`` (bytes, text, or a function writing to a binary file)
    replaces ``dest`` whole (:func:`vdla_hw.files.atomic_write`); an ``OSError`` names ``dest``."""
    try:
        return atomic_write(dest, data)
    except OSError as err:
        raise _os_error(err, Path(dest)) from None


class Outputs:
    """A set of files written together (see the module docstring)."""

    def __init__(self):
        self._staged: dict[Path, Path] = {}     # destination -> staged file
        self._folders: dict[Path, Path] = {}    # destination folder -> its staging folder
        self._superseded: list[Path] = []

    def supersede(self, paths) -> None:
        """``paths`` (files of an earlier run) are replaced as a set: those not staged again are
        removed at the commit."""
        self._superseded += [Path(p) for p in paths]

    def path(self, dest: str | Path) -> Path:
        """The staged file a writer writes for ``dest`` (same name, in a private folder beside it)."""
        dest = Path(dest)
        if dest in self._staged:
            raise VdlaError(f"{dest} is given as two outputs")
        folder = dest.parent if str(dest.parent) else Path(".")
        if folder not in self._folders:
            folder.mkdir(parents=True, exist_ok=True)
            try:
                self._folders[folder] = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=folder))
            except OSError as err:
                raise _os_error(err, dest) from None
        self._staged[dest] = self._folders[folder] / dest.name
        return self._staged[dest]

    def write(self, dest: str | Path, data) -> Path:
        """Stage ``data`` (bytes, text, or a function writing to a binary file) for ``dest``."""
        staged = self.path(dest)
        try:
            atomic_write(staged, data)
        except OSError as err:
            raise _os_error(err, Path(dest)) from None
        return Path(dest)

    def commit(self) -> list[Path]:
        """Move every staged file onto its destination (and remove the superseded files not
        written again) with signals held; returns the destinations in the order staged."""
        interrupts.check()  # a Ctrl-C that a finaliser swallowed: the old files stay
        with signals_held():
            for dest, staged in self._staged.items():
                if not staged.exists():
                    raise VdlaError(f"{dest}: the writer of this output wrote nothing (a bug)")
            for dest, staged in self._staged.items():
                try:
                    os.replace(staged, dest)
                except OSError as err:
                    raise _os_error(err, dest) from None
            for old in self._superseded:
                if old not in self._staged and old.is_file():
                    old.unlink()
            self.discard()
        return list(self._staged)

    def discard(self) -> None:
        """Remove the staging folders (and whatever was not committed)."""
        for staging in self._folders.values():
            shutil.rmtree(staging, ignore_errors=True)
        self._folders.clear()

    def __enter__(self) -> Outputs:
        return self

    def __exit__(self, *exc) -> None:
        self.discard()


HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def signals_held():
    """Hold SIGINT and SIGTERM for the duration of the block, then deliver any that came (the
    default or installed handler runs then). Only the main thread receives Python signals, so
    elsewhere this holds nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    previous = {}
    for signum in HELD_SIGNALS:
        handler = signal.getsignal(signum)
        if handler is None or handler is signal.SIG_IGN:  # set outside Python, or ignored: leave it
            continue
        previous[signum] = signal.signal(signum, lambda s, _frame: pending.append(s))
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for signum in dict.fromkeys(pending):
            signal.raise_signal(signum)
