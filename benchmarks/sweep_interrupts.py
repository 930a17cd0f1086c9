"""Benchmark: Ctrl-C of `vdla sweep` on the embedded local Ray ends with status 130, every time.

Issue 45 (finding 17): 2 of 45 interrupts died of SIGSEGV in one of Ray's threads (status 139,
after "vdla: interrupted"). Runs ``--runs`` sweeps of a small CNN over a 36-point grid, each in
its own process, and interrupts each (SIGINT to the process, as the tests do) at a different
moment: run ``i`` waits for its ``i mod 3`` phase - Ray's raylet started (``ray.init`` under
way), the first point recorded, three points recorded - then ``(i // 3) mod 5`` tenths of a
second more. Prints, per phase and in all, the exit statuses seen (the target: every one 130),
the last line of stderr of any other, and how long each run took from the interrupt to its exit
(median, max; Ray's shutdown included). Ray's processes left behind by a run are counted too
(the target: none).

    .venv/bin/python benchmarks/sweep_interrupts.py [--runs 45] [--root DIR]

``--root`` runs the code of another checkout (for instance one at an older commit) with this
one's virtual environment.
"""

import argparse
import collections
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.dse.conftest import small_cnn  # noqa: E402  (the sweep tests' small model)
from tests.dse.procs import cmdline, descendants  # noqa: E402

GRID = {"LOG_BLOCK": [3, 4], "LOG_INP_BUFF_SIZE": [13, 14], "LOG_ACC_BUFF_SIZE": [14, 15, 16],
        "vthreads": ["search", 1, 2]}
PHASES = ("ray.init under way", "first point recorded", "three points recorded")
TIMEOUT_S = 300


def rows(points: Path) -> int:
    try:
        return max(0, len(points.read_text().splitlines()) - 1)
    except OSError:
        return 0


def one_run(root: Path, work: Path, model: str, space: str, index: int) -> dict:
    out = work / f"out{index}"
    phase = index % len(PHASES)
    extra = (index // len(PHASES)) % 5 * 0.1
    proc = subprocess.Popen([sys.executable, "-m", "vdla", "sweep", space, "-o", str(out), "--models", model,
                             "--workers", "2", "--json"], cwd=root, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    started: list[int] = []
    ready = [lambda: any("raylet" in cmdline(p) for p in descendants(proc.pid)),
             lambda: rows(out / "points.csv") >= 1,
             lambda: rows(out / "points.csv") >= 3][phase]
    end = time.monotonic() + TIMEOUT_S
    try:
        while not ready() and proc.poll() is None and time.monotonic() < end:
            time.sleep(0.02)
        time.sleep(extra)
        started = descendants(proc.pid)
        finished_first = proc.poll() is not None
        sent = time.monotonic()
        if not finished_first:
            proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=TIMEOUT_S)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    time.sleep(1.0)
    left = [p for p in started if cmdline(p)]
    for pid in left:  # not ours to keep: the run's own leftovers
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    last = (err.strip().splitlines() or [""])[-1]
    return {"phase": PHASES[phase], "status": "finished before the interrupt" if finished_first else proc.returncode,
            "last": last, "seconds": took, "left": len(left)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=45)
    parser.add_argument("--root", type=Path, default=ROOT, help="checkout whose code runs (default: this one)")
    args = parser.parse_args()
    import onnx

    with tempfile.TemporaryDirectory(prefix="vdla-interrupts-") as tmp:
        work = Path(tmp)
        model = str(work / "small_cnn.onnx")
        onnx.save(small_cnn(), model)
        space = work / "space.json"
        space.write_text(json.dumps({"base": "osdi18", "parameters": GRID}))
        results = []
        for index in range(args.runs):
            result = one_run(args.root.resolve(), work, model, str(space), index)
            results.append(result)
            print(f"run {index + 1}/{args.runs} ({result['phase']}): status {result['status']} in "
                  f"{result['seconds']:.1f} s" + (f"; {result['left']} Ray processes left" if result["left"] else "")
                  + ("" if result["status"] == 130 else f"; last line: {result['last'][:160]}"), flush=True)
    print("\nexit statuses by moment of the interrupt:")
    for phase in PHASES:
        counts = collections.Counter(r["status"] for r in results if r["phase"] == phase)
        print(f"  {phase}: " + ", ".join(f"{status}: {n}" for status, n in sorted(counts.items(), key=str)))
    total = collections.Counter(r["status"] for r in results)
    seconds = [r["seconds"] for r in results]
    print(f"in all: {total[130]} of {len(results)} runs ended with status 130; "
          f"interrupt to exit: median {statistics.median(seconds):.1f} s, max {max(seconds):.1f} s; "
          f"Ray processes left behind: {sum(r['left'] for r in results)}")
    return 0 if total[130] == len(results) and not sum(r["left"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
