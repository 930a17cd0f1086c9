"""Ctrl-C (vdla/interrupts.py, issue 22): at any moment of a command, imports included, it ends
with the one line ``vdla: interrupted`` and exit status 130, never a traceback, and an interrupt
swallowed by a finaliser is not lost (the command went on and ended with status 0)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vdla import cli
from vdla.cli import main

ROOT = Path(__file__).parents[2]
MARKER = "started"
# ``python -m vdla`` behind a marker printed once the interpreter is up: a SIGINT before it, or in
# the millisecond runpy takes to find the package, hits Python's own start-up, which no program
# can report (the first line of project code has not run yet). The delays start after that.
LAUNCH = ("import runpy, sys; sys.argv = ['vdla', *sys.argv[1:]]; print(%r, flush=True); "
          "runpy.run_module('vdla', run_name='__main__', alter_sys=True)" % MARKER)
# after the marker: the imports of vdla.cli and the commands (~0.5 s), the model's import and
# quantization, the compilation and the run of its layers
DELAYS = (0.05, 0.15, 0.3, 0.6, 1.2, 2.5)


def interrupt(proc, ready) -> str:
    """Ctrl-C to ``proc`` once ``ready()`` has returned (it waits for the moment), then its
    stderr, checked: exit status 130, the last line ``vdla: interrupted``, no traceback. ``proc``
    is killed if it is still running on any way out."""
    try:
        ready()
        assert proc.poll() is None, "the run ended before the interrupt: it must take longer than the delays"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == cli.EXIT_INTERRUPTED, err
    assert err.rstrip("\n").splitlines()[-1] == "vdla: interrupted", err
    assert "Traceback" not in err and "Exception ignored" not in err, err
    return err


def default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # an ignored SIGINT (a background job) is inherited


@pytest.mark.parametrize("delay", DELAYS)
def test_ctrl_c_at_any_moment_ends_with_one_line_and_130(delay):
    """Ctrl-C in the first ~0.5 s printed a traceback (it came before main's try)."""
    # the disk cache off: with the session's cache warm the whole run takes about as long as the
    # longest delay, and the interrupt would come after the work (issue 24's caches)
    proc = subprocess.Popen([sys.executable, "-c", LAUNCH, "run", "resnet18", "--resolution", "32"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint,
                            env={**os.environ, "VDLA_CACHE": "off"})

    def ready():
        assert proc.stdout.readline().strip() == MARKER
        time.sleep(delay)

    interrupt(proc, ready)


class _RaisesInFinaliser:
    def __del__(self):
        raise KeyboardInterrupt  # what a Ctrl-C does when it lands while a finaliser runs


def test_an_interrupt_in_a_finaliser_is_not_lost(capsys, monkeypatch):
    """Python prints an exception raised in a __del__ ('Exception ignored in ...') and goes on:
    the command finished with status 0. Now the interrupt is raised again in the command."""
    def command(args):
        _RaisesInFinaliser()  # collected at once
        for _ in range(300):
            time.sleep(0.01)
        return 0

    monkeypatch.setattr(cli, "cmd_regmap", command)
    assert main(["regmap"]) == cli.EXIT_INTERRUPTED
    err = capsys.readouterr().err
    assert err == "vdla: interrupted\n", err


def test_an_interrupt_while_the_command_loads_is_reported(capsys, monkeypatch):
    """An interrupt while the parser and the commands' modules are imported (before main's try)."""
    def interrupted(*modules):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", interrupted)
    assert main(["regmap"]) == cli.EXIT_INTERRUPTED
    assert capsys.readouterr().err == "vdla: interrupted\n"


# A Ctrl-C that lands while numpy's C extension imports `datetime`: numpy turns the
# KeyboardInterrupt into an ImportError (it printed a traceback and exit status 1).
CTRL_C_IN_NUMPY_IMPORT = """
import os, signal, sys
class SigintOnDatetime:
    def find_spec(self, name, path=None, target=None):
        if name == "datetime":
            os.kill(os.getpid(), signal.SIGINT)
        return None
sys.meta_path.insert(0, SigintOnDatetime())
sys.argv = ["vdla", *sys.argv[1:]]
from vdla.cli import main
sys.exit(main())
"""


def test_ctrl_c_turned_into_an_import_error_still_ends_as_interrupted(tmp_path):
    assert "datetime" not in subprocess.run([sys.executable, "-c", "import sys; print(sys.modules)"],
                                            capture_output=True, text=True).stdout  # not imported at start-up
    done = subprocess.run([sys.executable, "-c", CTRL_C_IN_NUMPY_IMPORT, "sim", str(tmp_path / "x.npz")], cwd=ROOT,
                          capture_output=True, text=True, preexec_fn=default_sigint,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == cli.EXIT_INTERRUPTED, done.stderr
    assert done.stderr.strip() == "vdla: interrupted", done.stderr
