"""One sweep per directory: the lock is refused to a second process, naming the directory and
the holder's pid, re-entrant within one process, and gone with the process that held it."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dse.lock import SweepBusyError, SweepLockFileError, sweep_lock

ROOT = Path(__file__).resolve().parents[2]
HOLD = "import sys\nfrom dse.lock import sweep_lock\nwith sweep_lock(sys.argv[1]):\n    print('held', flush=True)\n" \
       "    sys.stdin.read()\n"


class Holder:
    """Another process holding the sweep lock of ``folder`` until :meth:`release`."""

    def __init__(self, folder):
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen([sys.executable, "-c", HOLD, str(folder)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env)
        assert self.proc.stdout.readline() == "held\n"

    def release(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.release()


def test_a_second_process_is_refused_until_the_first_ends(tmp_path):
    out = tmp_path / "out"
    with Holder(out) as holder:
        with pytest.raises(SweepBusyError) as err:
            with sweep_lock(out):
                pass
        message = str(err.value)
        assert message.startswith(f"{out}: another sweep (pid {holder.proc.pid}) is writing to this directory")
        holder.release()
    with sweep_lock(out):  # the kernel dropped the lock with its holder
        assert (out / ".sweep.lock").read_text() == f"{os.getpid()}\n"


def test_a_killed_holder_leaves_no_stale_lock(tmp_path):
    with Holder(tmp_path) as holder:
        holder.proc.kill()
        holder.proc.wait(timeout=30)
        with sweep_lock(tmp_path):
            pass


TRY = "import sys\nfrom dse.lock import SweepBusyError, sweep_lock\ntry:\n    with sweep_lock(sys.argv[1]):\n" \
      "        print('got it')\nexcept SweepBusyError as err:\n    print(err)\n"


def other_process_tries(folder) -> str:
    return subprocess.run([sys.executable, "-c", TRY, str(folder)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout.strip()


def test_the_lock_is_reentrant_within_a_process(tmp_path):
    with sweep_lock(tmp_path):
        with sweep_lock(tmp_path / "."):  # vdla sweep holds it, run_sweep takes it again
            pass
        assert f"(pid {os.getpid()})" in other_process_tries(tmp_path)  # still held after the inner block
    assert other_process_tries(tmp_path) == "got it"


@pytest.mark.parametrize("kind", ["symlink", "hardlink", "fifo"])
def test_a_lock_file_that_is_not_our_own_is_refused_and_left_alone(capsys, tmp_path, kind):
    """Issue 45 finding 4: ``DIR/.sweep.lock`` planted as a link to another file was opened
    through the link, truncated and given a pid; now ``vdla sweep`` refuses it with one line,
    exit status 2, and the target keeps its content."""
    from tests.vdla.test_cli import EXAMPLE
    from tests.vdla.test_user_errors import one_line_error

    target = tmp_path / "precious.txt"
    target.write_text("keep me\n")
    out = tmp_path / "out"
    out.mkdir()
    lock = out / ".sweep.lock"
    if kind == "symlink":
        lock.symlink_to(target)
    elif kind == "hardlink":
        os.link(target, lock)
    else:
        os.mkfifo(lock)
    words = {"symlink": "is a symbolic link", "hardlink": "is a hard link", "fifo": "is not a regular file"}[kind]
    one_line_error(capsys, "sweep", EXAMPLE.parent / "sweep_resnet18.json", "-o", out, words=words)
    assert target.read_text() == "keep me\n"
    with pytest.raises(SweepLockFileError):
        with sweep_lock(out):
            pass
    assert target.read_text() == "keep me\n"
