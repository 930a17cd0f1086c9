"""The figure worker (vdla/figure_worker.py): the same bytes as drawing in this process, one
error line when it fails or dies, no process left behind on any path, none without --plots."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.vdla.test_plots import small_net
from tests.vdla.test_interrupts import interrupt
from vdla import plots
from vdla.cli import main
from vdla.figure_worker import FigureWorker, FigureWorkerError

ROOT = Path(__file__).parents[2]
FIG21 = {"bars": [("CPU only", {"layer0": 0.2, "conv": 1.5, "other": 0.3}, False),
                  ("CPU + VDLA", {"layer0": 0.2, "conv": 0.4, "other": 0.3, "host": 0.1}, False)],
         "beside_paper": False, "name": "net", "resolution": 32, "config_name": "osdi18"}
SPEEDUP = {"names": ["l1.0.c1", "l1.0.c2"], "alone": [3.0, 4.0], "with_host": [2.0, 2.5], "speedup": 1.8,
           "amdahl_bound": 2.4, "name": "net", "config_name": "osdi18"}
TIMELINE = {"layer": "l1.0.c1", "cycles": 1000, "config_name": "osdi18", "utilization": 0.5, "useful_utilization": 0.4,
            "overlap": 0.2, "why": "the offloaded layer whose load and compute overlap least",
            "spans": {"load": [(0, 100), (300, 80)], "compute": [(100, 200), (390, 300)], "store": [(700, 50)]}}


def _gone(pgid: int, wait: float = 5.0) -> bool:
    """No process left in group ``pgid`` within ``wait`` seconds (a killed drawer is a zombie
    until init reaps it)."""
    deadline = time.monotonic() + wait
    while True:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def test_the_worker_draws_the_bytes_this_process_draws(monkeypatch):
    """Two batches at once (a forked drawer and the worker itself) give what plots.render gives here."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")  # the PDFs' creation date, in the worker too
    with FigureWorker() as worker:
        worker.draw([("layer_speedup", SPEEDUP), ("timeline", TIMELINE)], fork=True)
        worker.draw([("fig21_breakdown", FIG21)])
        files = worker.result()
        pgid = worker._proc.pid
    assert _gone(pgid)
    assert sorted(files) == ["fig21_breakdown", "layer_speedup", "timeline"]
    for name, data in (("fig21_breakdown", FIG21), ("layer_speedup", SPEEDUP), ("timeline", TIMELINE)):
        assert files[name] == plots.render(name, data), name
        assert files[name]["png"].startswith(b"\x89PNG") and files[name]["pdf"].startswith(b"%PDF")


def test_a_figure_that_fails_in_a_drawer_is_one_error():
    with FigureWorker() as worker:
        broken = {key: value for key, value in SPEEDUP.items() if key != "alone"}
        worker.draw([("layer_speedup", broken)], fork=True)
        worker.draw([("fig21_breakdown", FIG21)])
        with pytest.raises(FigureWorkerError, match=r"^figure worker: KeyError: 'alone'$") as caught:
            worker.result()
    assert "\n" not in str(caught.value)


def test_a_worker_that_dies_is_one_error_naming_the_signal():
    with FigureWorker() as worker:
        os.killpg(worker._proc.pid, signal.SIGKILL)
        with pytest.raises(FigureWorkerError, match=r"ended \(signal 9\) before sending the figures"):
            worker.draw([("fig21_breakdown", FIG21)])
            worker.result()


def test_leaving_early_ends_the_worker_and_its_drawer():
    """An error or a Ctrl-C in the run leaves the with block while a drawer is busy."""
    with pytest.raises(KeyboardInterrupt):
        with FigureWorker() as worker:
            worker.draw([("timeline", TIMELINE)], fork=True)
            pgid = worker._proc.pid
            raise KeyboardInterrupt
    assert _gone(pgid)


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads a process's children from Linux's /proc")
def test_a_drawer_outliving_its_worker_is_ended_too():
    """The worker killed alone (as the out-of-memory killer would) while its drawer draws: close
    ends the drawer as well (the worker, not reaped yet, keeps the group id ours)."""
    with FigureWorker() as worker:
        worker.draw([("timeline", TIMELINE)] * 40, fork=True)  # well over 5 s of drawing
        pgid = worker._proc.pid
        deadline = time.monotonic() + 60
        while not (drawers := _children(pgid)) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert drawers, "the worker forked no drawer"
        os.kill(pgid, signal.SIGKILL)
        with pytest.raises(FigureWorkerError, match=r"ended \(signal 9\)"):
            worker.result()
        assert not _gone(pgid, wait=0)  # the drawer is still drawing
    assert _gone(pgid)


def test_no_worker_without_plots(capsys, tmp_path, monkeypatch):
    def no_worker():
        raise AssertionError("a figure worker was started")

    monkeypatch.setattr("vdla.figure_worker.FigureWorker", no_worker)
    model = small_net(tmp_path / "tiny.onnx")
    assert main(["run", str(model), "--placement", "all"]) == 0, capsys.readouterr().err


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads a process's children from Linux's /proc")
def test_ctrl_c_with_plots_ends_with_130_and_leaves_no_worker(tmp_path):
    """Ctrl-C at the terminal reaches the run (the worker has its own process group); the run
    ends the worker's group and reports the interrupt as any other."""
    proc = subprocess.Popen([sys.executable, "-m", "vdla", "run", "resnet18", "--resolution", "32", "--plots",
                             str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "VDLA_CACHE": "off", "PYTHONPATH": str(ROOT)},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    workers = []

    def ready():
        deadline = time.monotonic() + 60
        while not workers and proc.poll() is None and time.monotonic() < deadline:
            workers.extend(_children(proc.pid))
            time.sleep(0.02)
        assert workers, "no figure worker was started"
        time.sleep(0.5)

    interrupt(proc, ready)
    assert all(_gone(pid) for pid in workers)
