"""The embedded Ray's private state folder and token (dse.private_ray) and the Ctrl-C held during
Ray's start and shutdown (dse.sigint), without starting Ray: issue 45, findings 3 and 17 (the
sweep tests on Ray check them end to end, as another user and with real interrupts)."""

import os
import signal
import stat
import time
from pathlib import Path

import pytest

from dse.private_ray import AUTH_VARIABLES, SUN_PATH_MAX, private_ray, token
from dse.sigint import held


def test_the_state_folder_is_private_short_and_removed(monkeypatch):
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", "/somewhere/else")
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    before = {name: os.environ.get(name) for name in AUTH_VARIABLES}
    with private_ray() as temp_dir:
        outer = Path(temp_dir).parent
        assert stat.S_IMODE(outer.stat().st_mode) == 0o700 and outer.stat().st_uid == os.getuid()
        assert not Path(temp_dir).exists()  # Ray makes it (and opens its mode: the parent stays 0700)
        socket = f"{temp_dir}/session_2026-12-06_22-59-07_712443_4194304/sockets/plasma_store"
        assert len(socket) <= SUN_PATH_MAX
        assert os.environ["RAY_AUTH_MODE"] == "token" and os.environ["RAY_AUTH_TOKEN"] == token()
        assert len(token()) == 64 and "RAY_AUTH_TOKEN_PATH" not in os.environ
        Path(temp_dir).mkdir()
        (Path(temp_dir) / "session_x").mkdir()
    assert not outer.exists()
    assert {name: os.environ.get(name) for name in AUTH_VARIABLES} == before


def test_a_long_tmpdir_is_passed_over_for_tmp(monkeypatch, tmp_path):
    long = tmp_path / ("d" * 60)
    long.mkdir()
    monkeypatch.setenv("TMPDIR", str(long))
    monkeypatch.setattr("tempfile.tempdir", None)  # tempfile caches the folder it found
    with private_ray() as temp_dir:
        assert temp_dir.startswith("/tmp/vdla-ray-")


def test_a_ctrl_c_during_a_held_step_is_raised_when_the_step_is_over():
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # an xdist worker ignores SIGINT
    steps = []
    try:
        with pytest.raises(KeyboardInterrupt):
            with held():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)  # Python runs the handler here: it only notes the signal
                steps.append("the step finished")
        assert steps == ["the step finished"]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        with held():  # no Ctrl-C: nothing raised
            steps.append("again")
        with pytest.raises(KeyboardInterrupt):  # a second Ctrl-C breaks a step that may hang
            with held(second_breaks=True):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)
                steps.append("noted")
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)
                steps.append("not reached")
        assert steps[-1] == "noted" and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_process_that_loaded_ray_without_a_token_is_refused_in_one_line():
    """Ray's driver reads RAY_AUTH_MODE once, when ray._raylet is loaded: in a process that
    loaded it without token authentication, the embedded Ray's start once failed deep in Ray
    ("internal error: ... Failed to start GCS ... InvalidAuthToken"); now one line before it
    starts (in a child process: this one's Ray must stay unloaded or token-mode)."""
    import subprocess
    import sys

    code = ("import os; os.environ.pop('RAY_AUTH_MODE', None)\n"
            "import ray._raylet\n"
            "from dse.private_ray import private_ray\n"
            "from dse.runner import _check_token_mode\n"
            "from vdla_hw.errors import VdlaError\n"
            "with private_ray():\n"
            "    try:\n"
            "        _check_token_mode()\n"
            "    except VdlaError as err:\n"
            "        print('refused:', err)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("refused: this process used Ray before without token authentication"), done.stdout
    fresh = code.replace("import ray._raylet\n", "")   # Ray first loaded inside private_ray: token mode
    done = subprocess.run([sys.executable, "-c", fresh], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0 and done.stdout == "", (done.stdout, done.stderr)
