"""`vdla sweep` end to end: a small grid on the embedded local Ray, resumption (after a finished
and after an interrupted sweep), a worker killed mid-point, Ray's raylet killed, Ctrl-C, and a
sweep against a head started with `ray start --head` on 127.0.0.1. The Pareto set in pareto.csv
is checked against a brute-force recomputation from points.csv.

Ray's start-up costs seconds of CPU per sweep, so what Ray plays no part in runs on the local
executor (`--executor local`, dse.executors: the same loop, store, seals and caches, the points
evaluated one at a time in the sweep's process): the damaged cache entries, --synth, NSGA-II,
and the second sweep of a resumption. Every code path of the Ray executor stays covered by a
sweep on Ray: tasks, object store, waits and results (the small sweep, the head started
separately, whose capacity is the CPUs Ray offers), a lost worker (the killed worker), a lost
Ray (the killed raylet), Ray's start and shutdown under Ctrl-C."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from dse.metrics import ENERGY, HARDWARE, OBJECTIVES, PERFORMANCE
from dse.store import read_rows
from tests.dse.procs import cmdline, descendants
from tests.vdla.test_interrupts import default_sigint
from vdla.cli import main
from vdla_hw.config import Config
from vdla_hw.errors import ConfigError

VENV_BIN = Path(sys.executable).parent
GRID = {"LOG_BLOCK": [3, 4], "LOG_ACC_BUFF_SIZE": [15, 17], "CLOCK_MHZ": [100, 200], "add_on_vdla": [False, True]}


def write_space(tmp_path, parameters=GRID, **extra) -> str:
    path = tmp_path / "space.json"
    path.write_text(json.dumps({"base": "osdi18", "parameters": parameters, **extra}))
    return str(path)


STDERR: list[str] = []  # the last sweep's stderr, for tests of its warnings


def sweep(capsys, *argv) -> dict:
    assert main(["sweep", *argv, "--json"]) == 0
    captured = capsys.readouterr()
    STDERR[:] = captured.err.splitlines()
    return json.loads(captured.out)


def brute_force_front(rows, objectives):
    ok = [r for r in rows if r["status"] == "ok" and all(isinstance(r[o], (int, float)) for o in objectives)]

    def vec(r):
        return [OBJECTIVES[o] * r[o] for o in objectives]

    def dominates(a, b):
        return all(x <= y for x, y in zip(vec(a), vec(b))) and any(x < y for x, y in zip(vec(a), vec(b)))

    return {r["key"] for r in ok if not any(dominates(o, r) for o in ok if o["model"] == r["model"])}


def test_small_sweep_on_local_ray(capsys, tmp_path, small_cnn_path):
    out = tmp_path / "out"
    space = write_space(tmp_path)
    summary = sweep(capsys, space, "-o", str(out), "--models", small_cnn_path, "--workers", "2")
    assert (summary["points"], summary["ok"], summary["invalid"], summary["failed"]) == (16, 12, 4, 0)
    assert summary["computed_now"] == 16 and summary["resumed"] == 0
    _, rows = read_rows(out / "points.csv")
    assert len({r["key"] for r in rows}) == 16
    for row in rows:
        if row["status"] == "invalid":  # BLOCK 8 with a 128 kB accumulator overflows the micro-op
            with pytest.raises(ConfigError) as err:
                Config.from_preset("osdi18", LOG_BLOCK=row["LOG_BLOCK"], LOG_ACC_BUFF_SIZE=row["LOG_ACC_BUFF_SIZE"],
                                   CLOCK_MHZ=float(row["CLOCK_MHZ"]))
            assert row["error"] == str(err.value) and row["latency_s"] is None
        else:
            assert row["latency_s"] > 0 and row["speedup"] > 0 and row["energy_j"] > 0
            assert row["lut"] > 0 and row["dsp"] > 0 and isinstance(row["fits_xc7z020"], bool)
            assert row["throughput_ips"] == pytest.approx(1 / row["latency_s"])
    # the clock only rescales accelerator time: same cycles at 100 and 200 MHz
    by_clock = {}
    for r in rows:
        if r["status"] == "ok":
            by_clock.setdefault((r["LOG_BLOCK"], r["LOG_ACC_BUFF_SIZE"], r["add_on_vdla"]), set()).add(
                r["accelerator_cycles"])
    assert all(len(cycles) == 1 for cycles in by_clock.values())
    # every ok point has a clock estimate; one whose CLOCK_MHZ is above it never "fits"
    ok = [r for r in rows if r["status"] == "ok"]
    for r in ok:
        assert r["clock_met"] == (float(r["CLOCK_MHZ"]) <= r["fmax_mhz"]) and r["clock_basis"]
        assert (r["verdict"] == "over clock estimate") == (r["fits_xc7z020"] and not r["clock_met"])
    over = [r for r in ok if not r["clock_met"]]
    assert over and summary["points_over_clock_estimate"] == len(over)  # 200 MHz is above every estimate
    assert len([ln for ln in STDERR if "above their clock estimate" in ln]) == 1
    best, = summary["best_fitting"].values()  # the one model
    assert best["clock_mhz"] <= best["fmax_mhz"] and best["key"] not in {r["key"] for r in over}
    _, front = read_rows(out / "pareto.csv")
    assert {r["key"] for r in front} == brute_force_front(rows, summary["objectives"])
    assert front
    for name in ("pareto_small_cnn.png", "sensitivity_small_cnn.png", "energy_small_cnn.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((out / "summary.json").read_text())["points"] == 16
    readme = (out / "README.md").read_text()  # names every file the sweep wrote
    assert all(f"`{Path(p).name}`" in readme for p in summary["outputs"]) and "`points.csv`" in readme
    # issue 45 (finding 15): a forged latency in points.csv became "the fastest configuration" of
    # the resumed sweep; now the row fails its seal and is computed again
    slower = max((r for r in ok if r["fits_xc7z020"] and r["clock_met"]), key=lambda r: r["latency_s"])
    assert slower["key"] != best["key"]
    text = (out / "points.csv").read_text()
    line = next(ln for ln in text.splitlines() if ln.startswith(slower["key"] + ","))
    forged = line.replace(f",{slower['latency_s']!r},", ",1e-09,", 1)
    assert forged != line
    (out / "points.csv").write_text(text.replace(line, forged))
    # resumed on the local executor: the sweep's logic, not Ray's; its recomputed row is Ray's
    again = sweep(capsys, space, "-o", str(out), "--models", small_cnn_path, "--executor", "local")
    assert (again["computed_now"], again["resumed"], again["points"]) == (1, 15, 16)
    assert again["best_fitting"] == summary["best_fitting"]
    assert [ln for ln in STDERR if "seal" in ln] == [
        f"sweep: {out / 'points.csv'}: rows whose seal fails (edited, or written by another user or machine): 1 "
        f"(key {slower['key']}); not trusted, so dropped, and computed again where this sweep has them"]
    recomputed = {r["key"]: r for r in read_rows(out / "points.csv")[1]}[slower["key"]]
    assert recomputed["latency_s"] == slower["latency_s"]
    assert recomputed["worker"] != slower["worker"]  # computed by this process, not by a Ray worker
    results = (*PERFORMANCE, *HARDWARE, *ENERGY)
    assert {c: recomputed[c] for c in results} == {c: slower[c] for c in results}
    assert (summary["executor"], again["executor"], again["ray"]) == ("ray", "local", None)


def test_an_unreachable_address_is_a_one_line_error(capsys, tmp_path, small_cnn_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = main(["sweep", write_space(tmp_path), "-o", str(tmp_path / "o"), "--models", small_cnn_path,
                 "--address", f"127.0.0.1:{port}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1].startswith("vdla: error: --address") and "no Ray head" in err[-1]
    assert len(err) == 1  # found before the models were imported and quantized


@pytest.mark.parametrize("argv, message", [
    (["--executor", "dask"], "vdla sweep: error: argument --executor: invalid choice: 'dask' (choose from 'ray', "
                             "'local') (see vdla sweep --help)"),
    (["--executor", "local", "--workers", "2"], "vdla: error: --workers 2: --executor local runs one point at a "
                                                "time in this process; leave --executor out for points in parallel "
                                                "on Ray"),
    (["--executor", "local", "--address", "127.0.0.1:1"], "vdla: error: --address 127.0.0.1:1 joins a Ray cluster: "
                                                          "not with --executor local, which runs every point in "
                                                          "this process"),
])
def test_executor_options_that_do_not_go_together_are_one_line(capsys, tmp_path, small_cnn_path, argv, message):
    out = tmp_path / "out"
    try:
        code = main(["sweep", write_space(tmp_path), "-o", str(out), "--models", small_cnn_path, *argv])
    except SystemExit as exit:  # argparse's own error (an unknown choice)
        code = exit.code
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == [message]  # before the models were imported and quantized
    assert not out.exists()


def test_a_bad_executor_in_the_options_is_one_line(tmp_path):
    from dse.runner import SweepOptions, run_sweep
    from dse.space import load_space
    from vdla_hw.errors import VdlaError

    with pytest.raises(VdlaError) as err:
        run_sweep(load_space(write_space(tmp_path)), tmp_path / "out", [], SweepOptions(executor="Ray"))
    assert str(err.value) == "--executor 'Ray': expected one of ray, local"


def test_a_point_that_raises_on_the_local_executor_loses_only_its_point(capsys, tmp_path, small_cnn_path,
                                                                         monkeypatch):
    """The local executor's counterpart of a killed Ray worker: a task that raises (a bug, not
    a VdlaError of the point) is a failed row with the reason; the others complete, and a re-run
    tries it again."""
    import dse.runner
    from dse.point import point_task

    def broken(q, config_json, knobs, *args):
        if '"LOG_BLOCK": 3' in config_json:
            raise RuntimeError("the point's bug")
        return point_task(q, config_json, knobs, *args)

    space = write_space(tmp_path, {"LOG_BLOCK": [3, 4], "LOG_ACC_BUFF_SIZE": [15]})
    out = tmp_path / "out"
    with monkeypatch.context() as patch:
        patch.setattr(dse.runner, "point_task", broken)
        summary = sweep(capsys, space, "-o", str(out), "--models", small_cnn_path, "--executor", "local")
    assert (summary["points"], summary["ok"], summary["failed"]) == (2, 1, 1)
    failed, = [r for r in read_rows(out / "points.csv")[1] if r["status"] == "failed"]
    assert failed["LOG_BLOCK"] == 3 and failed["error"] == "RuntimeError: the point's bug"
    again = sweep(capsys, space, "-o", str(out), "--models", small_cnn_path, "--executor", "local")
    assert (again["computed_now"], again["resumed"], again["ok"], again["failed"]) == (1, 1, 2, 0)


def test_ctrl_c_on_the_local_executor_keeps_the_finished_points(capsys, tmp_path, small_cnn_path, monkeypatch):
    """A Ctrl-C while the local executor evaluates a point (here raised by the second point):
    130, the one line, and the first point kept for the re-run."""
    import dse.runner
    from dse.point import point_task

    def interrupted(q, config_json, knobs, *args):
        if '"LOG_BLOCK": 3' in config_json:
            raise KeyboardInterrupt
        return point_task(q, config_json, knobs, *args)

    space = write_space(tmp_path, {"LOG_BLOCK": [4, 3], "LOG_ACC_BUFF_SIZE": [15]})
    out = tmp_path / "out"
    with monkeypatch.context() as patch:
        patch.setattr(dse.runner, "point_task", interrupted)
        code = main(["sweep", space, "-o", str(out), "--models", small_cnn_path, "--executor", "local"])
    assert code == 130 and capsys.readouterr().err.splitlines()[-1] == "vdla: interrupted"
    kept, = read_rows(out / "points.csv")[1]
    assert kept["LOG_BLOCK"] == 4 and kept["status"] == "ok"
    again = sweep(capsys, space, "-o", str(out), "--models", small_cnn_path, "--executor", "local")
    assert (again["resumed"], again["computed_now"], again["ok"]) == (1, 1, 2)


def test_a_second_sweep_on_a_directory_is_refused_at_once(capsys, tmp_path, small_cnn_path):
    """Two sweeps on one directory once both computed every point (24 rows for 12)."""
    from tests.dse.test_lock import Holder

    out = tmp_path / "out"
    with Holder(out) as holder:
        code = main(["sweep", write_space(tmp_path), "-o", str(out), "--models", small_cnn_path])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == [f"vdla: error: {out}: another sweep (pid {holder.proc.pid}) is writing to this "
                                 "directory; wait for it to finish or give another -o DIR"]


def test_an_unsafe_sweep_key_is_one_line_before_any_work(capsys, tmp_path, small_cnn_path, monkeypatch):
    """The key that seals points.csv's rows (dse.row_seal) is checked as vdla serve's is."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    key = tmp_path / "config" / "vdla" / "sweep.key"
    key.parent.mkdir(parents=True, mode=0o700)
    key.write_text("00" * 32 + "\n")
    key.chmod(0o644)
    code = main(["sweep", write_space(tmp_path), "-o", str(tmp_path / "o"), "--models", small_cnn_path])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == [f"vdla: error: key file {key} may be read by others (mode 0644); run: chmod 600 {key}"]


@pytest.mark.parametrize("row, where", [
    (b"k,ok,\xff\r\n", "line 2: not UTF-8 text (byte 6 of the line)"),
    (b"k,ok," + b"x" * 131073 + b"\r\n", "line 2: not a points CSV (field larger than field limit (131072))"),
    (b"k,ok,soon\r\n", "line 2, column 'latency_s': 'soon' is not a number"),
])
def test_a_damaged_points_csv_is_one_line_before_any_work(capsys, tmp_path, small_cnn_path, row, where):
    out = tmp_path / "out"
    out.mkdir()
    (out / "points.csv").write_bytes(b"key,status,latency_s\r\n" + row)
    code = main(["sweep", write_space(tmp_path), "-o", str(out), "--models", small_cnn_path])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == [f"vdla: error: {out / 'points.csv'}: {where}"]


def test_damaged_cache_entries_are_named_once_and_recomputed(capsys, tmp_path, small_cnn_path):
    """A cache entry `{}` once failed every point that used it, without naming the file."""
    out = tmp_path / "out"
    space = write_space(tmp_path, {"LOG_BLOCK": [4], "CLOCK_MHZ": [100, 200]})
    # the local executor: the caches are the subject, not Ray (it forgets the layer timings it
    # keeps in memory between sweeps, as a new Ray instance's workers have none)
    sweep(capsys, space, "-o", str(out), "--models", small_cnn_path, "--executor", "local")
    entries = sorted((out / "cache" / "layers").glob("*.json"))
    assert entries
    for entry in entries:
        entry.write_text("{}")
    (out / "points.csv").unlink()
    assert main(["sweep", space, "-o", str(out), "--models", small_cnn_path, "--executor", "local", "--json"]) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert (summary["ok"], summary["failed"], summary["computed_now"]) == (2, 0, 2)
    for entry in entries:
        assert captured.err.count(f"sweep: {entry}: sweep cache entry: not a checksummed cache entry") == 1
        assert json.loads(entry.read_text())["sha256"]  # rewritten


BIG_GRID = {"LOG_BLOCK": [3, 4], "LOG_INP_BUFF_SIZE": [13, 14], "LOG_ACC_BUFF_SIZE": [14, 15, 16],
            "vthreads": ["search", 1, 2]}


def start_sweep(tmp_path, small_cnn_path, out) -> subprocess.Popen:
    space = write_space(tmp_path, BIG_GRID)
    return subprocess.Popen([str(VENV_BIN / "vdla"), "sweep", space, "-o", str(out), "--models", small_cnn_path,
                             "--workers", "2", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_sigint)  # its Ctrl-C is not ignored even when the suite's is


def wait_for(predicate, timeout: float, what: str):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


# What another local user tries on a running sweep's Ray (issue 45, finding 3): list its state
# folder and read and write the keys of its GCS (where Ray keeps the pickled task function),
# without the sweep's token. Runs as uid/gid 65534 (nobody) under the system's Python 3.11 with
# this environment's packages (this one's interpreter may sit in a folder only root can enter).
PROBE = r"""
import json, os, sys
session, gcs = sys.argv[1], sys.argv[2]
seen = {}
for name, path in (("session", session), ("state", os.path.dirname(os.path.dirname(session)))):
    try:
        seen[name] = sorted(os.listdir(path))[:3]
    except OSError as err:
        seen[name] = type(err).__name__
from ray._raylet import GcsClient
for what, call in (("read", lambda: GcsClient(address=gcs).internal_kv_keys(b"", None)),
                   ("write", lambda: GcsClient(address=gcs).internal_kv_put(b"probe", b"x", True, None))):
    try:
        seen[what] = repr(call())[:100]
    except Exception as err:
        seen[what] = f"{type(err).__name__}: {err}"[:300]
print(json.dumps(seen))
"""
OTHER_USER = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
SYSTEM_PYTHON = "/usr/bin/python3.11"


def probe_as_another_user(pid: int) -> dict:
    """What :data:`PROBE` achieves, as another user, on the Ray of the sweep ``pid``."""
    import sysconfig

    raylet, = [p for p in descendants(pid) if "/raylet/raylet " in cmdline(p)]
    args = dict(a.split("=", 1) for a in cmdline(raylet).split() if a.startswith("--") and "=" in a)
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "PYTHONPATH": sysconfig.get_paths()["purelib"]}
    done = subprocess.run([*OTHER_USER, SYSTEM_PYTHON, "-c", PROBE, args["--session_dir"], args["--gcs-address"]],
                          env=env, cwd="/", capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return {"session_dir": args["--session_dir"], **json.loads(done.stdout.strip().splitlines()[-1])}


def can_probe_as_another_user() -> str | None:
    """Why the other-user probe cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root, to run the probe as another user (uid 65534)"
    if not shutil.which("setpriv") or not os.access(SYSTEM_PYTHON, os.X_OK):
        return f"needs setpriv and {SYSTEM_PYTHON} (the probe's interpreter, readable by other users)"
    if sys.version_info[:2] != (3, 11):
        return "the probe runs this environment's packages under the system's Python 3.11"
    import sysconfig

    packages = Path(sysconfig.get_paths()["purelib"])
    shut = [str(folder) for folder in [packages, *packages.parents] if not folder.stat().st_mode & 0o001]
    if shut or not packages.stat().st_mode & 0o004:
        # a checkout inside a folder of mode 0700 (mktemp -d): the probe could not import Ray
        return f"this environment's packages ({packages}) are not readable by other users ({', '.join(shut)} " \
               "not passable)"
    return None


@pytest.mark.slow
def test_resuming_an_interrupted_sweep_computes_only_the_missing_points(capsys, tmp_path, small_cnn_path):
    """Also: another local user can neither enter the running sweep's Ray state folder nor read or
    write its GCS (issue 45, finding 3: Ray's state was in /tmp/ray, mode 0777, and its GCS
    answered anyone on 127.0.0.1); and this interrupt, mid-sweep, is one of the Ctrl-C test's
    moments (below): 130, the one line, and none of Ray's processes outlives the sweep."""
    from tests.vdla.test_interrupts import interrupt

    out = tmp_path / "out"
    why_not = can_probe_as_another_user()
    proc = start_sweep(tmp_path, small_cnn_path, out)
    seen: dict = {}
    ray_processes: list[int] = []

    def ready():
        # interrupt at the first recorded point: the most points left to resume (the other 35 take
        # several seconds even on an idle machine, so the interrupt lands mid-sweep)
        wait_for(lambda: len(read_rows(out / "points.csv")[1]) >= 1, 180, "a first point")
        if why_not is None:
            proc.send_signal(signal.SIGSTOP)  # the sweep waits while the probe runs
            try:
                seen.update(probe_as_another_user(proc.pid))
            finally:
                proc.send_signal(signal.SIGCONT)
        ray_processes[:] = descendants(proc.pid)

    interrupt(proc, ready)  # exit status 130, the one line, no traceback
    none_outlives(ray_processes, "points")
    if why_not is None:
        assert not seen["session_dir"].startswith(("/tmp/ray/", "/tmp/ray-")), seen
        assert seen["session"] == seen["state"] == "PermissionError", seen
        for what in ("read", "write"):
            assert seen[what].startswith("AuthenticationError: ") and "Authentication token is missing" in seen[what], seen
        assert not Path(seen["session_dir"]).parents[1].exists()  # the private folder is removed at the end
    _, rows = read_rows(out / "points.csv")
    total = 2 * 2 * 3 * 3
    assert 1 <= len(rows) < total
    # resumed on the local executor: what is computed is the sweep's logic, not Ray's
    summary = sweep(capsys, write_space(tmp_path, BIG_GRID), "-o", str(out), "--models", small_cnn_path,
                    "--executor", "local")
    assert summary["resumed"] == len(rows)
    assert summary["computed_now"] == total - len(rows)
    assert summary["points"] == total and summary["failed"] == 0
    if why_not is not None:  # everything else was checked
        pytest.skip(f"the other-user probe of the sweep's Ray did not run: {why_not}")


def none_outlives(ray_processes: list[int], what: str) -> None:
    """None of ``ray_processes`` (a sweep's, listed before its Ctrl-C) outlives the sweep; any that
    does is killed after the check."""
    left = [p for p in ray_processes if cmdline(p)]
    try:
        assert not left, (what, [cmdline(p)[:100] for p in left])
    finally:
        for pid in left:
            os.kill(pid, signal.SIGKILL)


# (what has happened when the Ctrl-C comes, extra seconds): Ray's raylet started (so ray.init is
# under way). The other moment, the first point recorded (Ray running, points in flight), is the
# interrupt of the resumption test above, which makes the same checks on its sweep (one Ray start
# fewer); two interrupts, one in each phase (a sweep each, ~20 s: benchmarks/sweep_interrupts.py
# runs 45, 15 at each of three moments, and is where the rate is measured)
MOMENTS = (("raylet", 0.0),)


@pytest.mark.slow
def test_ctrl_c_stops_ray_before_the_sweep_ends_with_130(tmp_path, small_cnn_path):
    """Issue 45 (finding 17): Ctrl-C of a sweep died of SIGSEGV in one of Ray's threads (2 of 45
    interrupts, status 139 after "vdla: interrupted"), and one during ray.init left Ray's
    processes running. Now Ray's start and shutdown are not cut by the interrupt: every Ctrl-C
    ends with 130, the one line, and none of Ray's processes outlives the sweep."""
    from tests.vdla.test_interrupts import interrupt

    for number, (what, extra) in enumerate(MOMENTS):
        out = tmp_path / f"out{number}"
        proc = start_sweep(tmp_path, small_cnn_path, out)
        ray_processes: list[int] = []

        def ready():
            if what == "raylet":
                wait_for(lambda: any("/raylet/raylet " in cmdline(p) for p in descendants(proc.pid)), 180, "the raylet")
            else:
                wait_for(lambda: len(read_rows(out / "points.csv")[1]) >= extra, 180, f"{extra} points")
            time.sleep(extra if what == "raylet" else 0)
            ray_processes[:] = descendants(proc.pid)

        interrupt(proc, ready)
        none_outlives(ray_processes, what)


@pytest.mark.slow
def test_a_killed_worker_loses_only_its_point(capsys, tmp_path, small_cnn_path):
    out = tmp_path / "out"
    proc = start_sweep(tmp_path, small_cnn_path, out)
    try:
        busy = wait_for(lambda: [p for p in descendants(proc.pid) if cmdline(p).startswith("ray::point_task")],
                        180, "a worker running a point")
        os.kill(busy[0], signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr
    summary = json.loads(stdout)
    _, rows = read_rows(out / "points.csv")
    failed = [r for r in rows if r["status"] == "failed"]
    assert len(failed) == 1 == summary["failed"], [r["error"] for r in failed]
    assert "died" in failed[0]["error"].lower() or "worker" in failed[0]["error"].lower()
    assert summary["points"] == 36 and summary["ok"] + summary["invalid"] == 35
    # the failed point tried again: the sweep's logic, on the local executor
    again = sweep(capsys, write_space(tmp_path, BIG_GRID), "-o", str(out), "--models", small_cnn_path,
                  "--executor", "local")
    assert (again["computed_now"], again["failed"], again["ok"] + again["invalid"]) == (1, 0, 36)


@pytest.mark.slow
def test_a_killed_raylet_stops_the_sweep_with_one_line(tmp_path, small_cnn_path):
    """Once exit status 1 and Ray's log dump: now one line (exit 2) saying what happened, what
    was kept and that a re-run resumes; the points in flight are not recorded as failed."""
    out = tmp_path / "out"
    proc = start_sweep(tmp_path, small_cnn_path, out)
    started = []
    try:
        wait_for(lambda: len(read_rows(out / "points.csv")[1]) >= 1, 180, "a first point")
        started = descendants(proc.pid)
        raylet = [p for p in started if "/raylet/raylet " in cmdline(p)]
        assert len(raylet) == 1, [cmdline(p)[:80] for p in started]
        os.kill(raylet[0], signal.SIGKILL)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    _, rows = read_rows(out / "points.csv")
    last = stderr.strip().splitlines()[-1]
    assert proc.returncode == 2, stderr[-2000:]
    assert last == (f"vdla: error: Ray's raylet died (NodeDiedError), so no worker can run: the sweep stopped; "
                    f"{out / 'points.csv'} keeps the {len(rows)} points written so far, and re-running the same "
                    "command resumes from there")
    assert rows and all(r["status"] in ("ok", "invalid") for r in rows)
    try:  # the embedded Ray's other processes end with the sweep
        wait_for(lambda: not [p for p in started if cmdline(p)], 60, "Ray's processes to end")
    finally:
        for pid in started:
            if cmdline(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
def test_sweep_on_a_ray_head_started_separately(capsys, tmp_path, small_cnn_path, monkeypatch):
    """A head with token authentication, joined the documented way (docs/dse.md): the token in
    RAY_AUTH_TOKEN beside RAY_AUTH_MODE=token. The token is this process's own embedded-Ray token
    (dse.private_ray.token), because Ray's driver keeps the mode and token it first loaded for the
    process's life: the test worker's later embedded sweeps must still find them."""
    from dse.private_ray import token

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    temp = Path(tempfile.mkdtemp(prefix="vdla-ray-", dir="/tmp"))  # short: Ray's socket paths must fit AF_UNIX
    auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token()}
    for name, value in auth.items():
        monkeypatch.setenv(name, value)
    env = {**os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}  # the head's servers on 127.0.0.1 only
    head = subprocess.Popen([str(VENV_BIN / "ray"), "start", "--head", f"--port={port}", "--node-ip-address=127.0.0.1",
                             "--num-cpus=2", "--include-dashboard=false", "--disable-usage-stats", "--block",
                             f"--temp-dir={temp}"], env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def listening():
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return True
            except OSError:
                return False

        wait_for(listening, 120, "the Ray head")
        out = tmp_path / "out"
        summary = sweep(capsys, write_space(tmp_path, {"LOG_BLOCK": [3, 4], "LOG_ACC_BUFF_SIZE": [15], "CLOCK_MHZ": [100, 150]}), "-o",
                        str(out), "--models", small_cnn_path, "--address", f"127.0.0.1:{port}")
        assert summary["ray"]["address"] == f"127.0.0.1:{port}"
        assert (summary["points"], summary["ok"], summary["failed"]) == (4, 4, 0)
        workers = {r["worker"].split(":")[1] for r in read_rows(out / "points.csv")[1]}
        logs = {p.name.rsplit("-", 1)[-1].split(".")[0] for p in temp.glob("session_*/logs/worker-*.err")}
        assert workers <= logs  # the points ran in the head's worker processes
    finally:
        os.killpg(head.pid, signal.SIGINT)  # `ray start --block` stops its processes on SIGINT
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
            head.wait()
    def leftovers():
        return [p for p in Path("/proc").iterdir() if p.name.isdigit() and str(temp) in cmdline(int(p.name))]

    wait_for(lambda: not leftovers(), 30, "the head's processes to stop")
    shutil.rmtree(temp, ignore_errors=True)


@pytest.mark.slow
def test_synth_synthesises_each_configuration_once(tmp_path, small_cnn_path):
    """On the local executor (the synthesis tasks are the subject, not Ray), in a process of its
    own: a synthesis lowers its process's priority (dse.synth.NICE), which the test process's
    must not be."""
    out = tmp_path / "out"
    path = tmp_path / "space.json"
    path.write_text(json.dumps({"base": "tiny", "parameters": {"vthreads": [1, 2]}}))  # one configuration
    done = subprocess.run([str(VENV_BIN / "vdla"), "sweep", str(path), "-o", str(out), "--models", small_cnn_path,
                           "--synth", "--executor", "local", "--json"], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout)
    assert (summary["ok"], summary["failed"]) == (2, 0)
    stored = [json.loads(p.read_text())["value"] for p in (out / "synth").glob("*.json")]
    assert len(stored) == 1 and stored[0]["ok"]
    for row in read_rows(out / "points.csv")[1]:
        assert row["resource_basis"].startswith("yosys synthesis")
        assert (row["lut"], row["ff"], row["dsp"], row["bram36"]) == \
            (stored[0]["lut"], stored[0]["ff"], stored[0]["dsp"], stored[0]["bram36"])
        assert row["lut_model"] == pytest.approx(row["lut"], rel=0.10)  # the model, measured on its own point


def test_nsga2_search_runs_its_budget_and_continues_on_a_rerun(capsys, tmp_path, small_cnn_path):
    def space(trials):
        return write_space(tmp_path, {"LOG_BLOCK": [3, 4], "LOG_INP_BUFF_SIZE": {"low": 12, "high": 15},
                                      "LOG_ACC_BUFF_SIZE": {"low": 14, "high": 16},
                                      "CLOCK_MHZ": {"low": 100, "high": 250, "step": 50}, "vthreads": [1, 2]},
                           search={"method": "nsga2", "trials": trials, "population": 4, "seed": 3,
                                   "objectives": ["latency_s", "lut", "energy_j"]})

    out = str(tmp_path / "out")
    # the local executor: the search's budget and its continuation are the subject, not Ray
    first = sweep(capsys, space(8), "-o", out, "--models", small_cnn_path, "--executor", "local")
    assert first["search"] == "nsga2" and first["points"] == first["computed_now"] == 8
    again = sweep(capsys, space(12), "-o", out, "--models", small_cnn_path, "--executor", "local")
    assert (again["resumed"], again["computed_now"], again["points"]) == (8, 4, 12)
    _, rows = read_rows(Path(out) / "points.csv")
    _, front = read_rows(Path(out) / "pareto.csv")
    assert {r["key"] for r in front} == brute_force_front(rows, ["latency_s", "lut", "energy_j"])
