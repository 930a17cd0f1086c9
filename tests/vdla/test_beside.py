"""vdla.beside: a value computed in a forked child, the same as computed in the parent."""

import os
import time

import numpy as np
import pytest

from vdla import beside

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform: Beside computes inline")


def test_the_value_comes_from_the_child():
    job = beside.Beside(lambda: (os.getpid(), np.arange(5)))
    assert job.forked
    pid, array = job.result()
    assert pid != os.getpid() and array.tolist() == [0, 1, 2, 3, 4]


def test_a_failing_child_is_computed_again_here_and_raises_here():
    calls = []

    def compute():
        calls.append(os.getpid())  # in the child this list is the child's copy
        raise ValueError("bad input")

    job = beside.Beside(compute)
    with pytest.raises(ValueError, match="bad input"):
        job.result()
    assert calls == [os.getpid()]  # the parent's own attempt, after the child's


def test_a_value_that_does_not_pickle_is_computed_here():
    job = beside.Beside(lambda: (lambda: 0) if os.getpid() != parent else "here")
    assert job.result() == "here"


parent = os.getpid()


def test_cancel_kills_and_reaps_the_child():
    job = beside.Beside(lambda: time.sleep(60))
    pid = job.pid
    start = time.monotonic()
    job.cancel()
    assert time.monotonic() - start < 30
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # already reaped


def test_leaving_a_with_block_by_an_error_cancels():
    with pytest.raises(RuntimeError), beside.Beside(lambda: time.sleep(60)) as job:
        pid = job.pid
        raise RuntimeError("the main work failed")
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def test_no_child_when_told_or_switched_off(monkeypatch):
    job = beside.Beside(os.getpid, fork=False)
    assert not job.forked and job.result() == os.getpid()
    monkeypatch.setenv(beside.SWITCH_ENV, "off")
    job = beside.Beside(os.getpid)
    assert not job.forked and job.result() == os.getpid()


def test_the_child_writes_nothing(capfd):
    job = beside.Beside(lambda: (print("from the child"), os.write(2, b"raw\n"), 7)[2])
    assert job.result() == 7
    out, err = capfd.readouterr()
    assert "from the child" not in out and "raw" not in err
