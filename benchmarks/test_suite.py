"""What the test suite costs (issue 43): the fast tier in this checkout, and the clean-clone CI
(``CI=true bash .ci/run`` in a fresh ``git clone`` of HEAD: set-up, the whole suite on every core,
the board tests), each as wall and CPU seconds, with the whole suite's own wall time, its number
of tests and its 20 slowest tests, and the machine's load before and after; each session's packing
(worker-seconds busy and idle, and the tail) is printed beside them.

    python benchmarks/test_suite.py [--tiers fast,ci] [--keep DIR] [--cold] [--record]

Targets: the fast tier in at most 3 minutes wall, the clean-clone CI in at most 10 (on this
2-core machine at load <= 1: wall times under load are not the machine's; CPU times much less).

Each pytest session writes its tests' durations into ``VDLA_TEST_REPORT`` (tests/conftest.py); CPU
seconds are the user + system time of the command and every process it waited for (the xdist
workers, compilers and simulators; not Ray's daemons, which are not its children). The clone is
made from HEAD, so uncommitted changes are not measured (the record's commit says which). The
C++ of the Verilated models is compiled through ccache's per-user cache (docs/testing.md): the CI
figures say how many compilations it answered (``ci_ccache_hits``) and how many it compiled
(``ci_ccache_misses``). The tests keep syntheses in the machine's cache too (``~/.cache/
vdla-timing``, tests/conftest.py). ``--cold`` gives the runs an empty compiler cache and an empty
synthesis cache of their own, as on a new machine. Exit status 0 when every run passed, 1 if one failed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import record

ROOT = Path(__file__).resolve().parents[1]
TIERS = ("fast", "ci")
FAST = [sys.executable, "-m", "pytest", "-n", "auto", "-m", "not slow", "-q", "-p", "no:cacheprovider"]
CI = ["bash", ".ci/run"]
SLOWEST = 20
TARGETS = {"fast_wall_s": ("<=", 180.0), "ci_wall_s": ("<=", 600.0)}
# what --record writes (benchmarks/record.py; README's Performance table shows it)
FIGURES = {
    "fast_wall_s": "s: fast tier (-m 'not slow', every core), wall",
    "fast_cpu_s": "s: fast tier, CPU",
    "fast_tests": "tests: run by the fast tier",
    "ci_wall_s": "s: clean-clone CI=true bash .ci/run, wall",
    "ci_cpu_s": "s: clean-clone CI, CPU",
    "suite_wall_s": "s: the whole suite's pytest session inside the CI run, wall",
    "suite_tests": "tests: run by the whole suite (the CI's main pytest session)",
    "board_tests": "tests: run by the board tests (.venv-board)",
    "caches": "text: the compiler and synthesis caches the runs used (--cold: empty ones)",
    "ci_ccache_hits": "compilations: of the clean-clone CI answered by ccache's cache",
    "ci_ccache_misses": "compilations: of the clean-clone CI compiled (a cold cache: all of them)",
    "slowest": "list: the whole suite's 20 slowest tests, [seconds, test id]",
}


def run(command: list[str], cwd: Path, env: dict, log: Path) -> tuple[float, float, int]:
    """Run ``command``; returns (wall seconds, CPU seconds of it and its waited-for children, exit status)."""
    before = os.times()
    start = time.perf_counter()
    with open(log, "w") as out:
        status = subprocess.run(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT).returncode
    wall = time.perf_counter() - start
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return wall, cpu, status


def ccache_counts(env: dict) -> dict[str, int]:
    """ccache's counters (``ccache --print-stats``) for the cache ``env`` names; empty without ccache."""
    if not shutil.which("ccache"):
        return {}
    out = subprocess.run(["ccache", "--print-stats"], env=env, capture_output=True, text=True).stdout
    return {name: int(value) for name, value in (line.split("\t") for line in out.splitlines() if "\t" in line)
            if value.isdigit()}


def ccache_used(before: dict, after: dict) -> dict:
    """Hits and misses between two ``ccache_counts``."""
    if not before or not after:
        return {}
    hits = sum(after.get(k, 0) - before.get(k, 0) for k in ("direct_cache_hit", "preprocessed_cache_hit"))
    return {"ci_ccache_hits": hits, "ci_ccache_misses": after.get("cache_miss", 0) - before.get("cache_miss", 0)}


def sessions(folder: Path) -> list[dict]:
    """The pytest sessions' reports in ``folder``, largest first (the suite's; tests that run
    pytest themselves, such as the mutants', may leave smaller ones)."""
    found = [json.loads(p.read_text()) for p in folder.glob("pytest-*.json")]
    return sorted(found, key=lambda r: len(r["tests"]), reverse=True)


def board_session(found: list[dict]) -> dict | None:
    """The board tests' session (scripts/board_tests.sh: the tests of tests/board only)."""
    boards = [r for r in found if r["tests"] and all(t.startswith("tests/board/") for t in r["tests"])]
    return max(boards, key=lambda r: r["finished"]) if boards else None


def count(report: dict, outcome: str = "passed") -> int:
    return sum(1 for _, result in report["tests"].values() if result == outcome)


def packing(report: dict) -> dict:
    """How well the session's tests filled its workers (tests/conftest.py's timeline), printed
    beside the figures: ``busy``, the worker-seconds spent in tests; ``idle``, those in which a
    worker ran no test (start-up, collection, and the end, when one worker has finished and
    another not); and ``tail``, how long the first worker to finish its last test waited for the
    last worker's."""
    spans: dict[str, list[tuple[float, float]]] = {}
    for worker, start, stop in report.get("timeline", {}).values():
        spans.setdefault(worker, []).append((start, stop))
    if not spans:
        return {}
    wall = report["finished"] - report["started"]
    busy = sum(stop - start for runs in spans.values() for start, stop in runs)
    ends = [max(stop for _, stop in runs) for runs in spans.values()]
    return {"idle": round(len(spans) * wall - busy, 1), "tail": round(max(ends) - min(ends), 1),
            "busy": round(busy, 1)}


def measure(tier: str, work: Path, cold: bool = False) -> dict:
    """Run ``tier`` and return its figures (a failed run raises SystemExit naming its log);
    ``cold`` gives it an empty compiler cache and synthesis cache of its own under ``work``."""
    reports = work / f"{tier}-reports"
    env = {**os.environ, "VDLA_TEST_REPORT": str(reports), "CI": "true"}
    if cold:
        env["CCACHE_DIR"] = str(work / f"{tier}-ccache")
        env["VDLA_TIMING_CACHE"] = str(work / f"{tier}-timing")
    compiled_before = ccache_counts(env)
    log = work / f"{tier}.log"
    if tier == "fast":
        wall, cpu, status = run(FAST, ROOT, env, log)
    else:
        clone = work / "clone"
        cloned = subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], capture_output=True, text=True)
        if cloned.returncode != 0:
            raise SystemExit(f"test_suite: git clone of {ROOT} into {clone} failed: {cloned.stderr.strip()}")
        wall, cpu, status = run(CI, clone, env, log)
    found = sessions(reports) if reports.exists() else []
    print(f"{tier}: {wall:.0f} s wall, {cpu:.0f} s CPU, exit {status}; log {log}", file=sys.stderr)
    if status != 0 or not found:
        raise SystemExit(f"test_suite: the {tier} run failed (exit {status}); see {log}")
    main = found[0]
    for name, value in packing(main).items():
        print(f"{tier}: {name} {value} s", file=sys.stderr)
    if tier == "fast":
        return {"fast_wall_s": round(wall, 1), "fast_cpu_s": round(cpu, 1), "fast_tests": count(main)}
    slowest = sorted(((round(s, 2), test) for test, (s, _) in main["tests"].items()), reverse=True)[:SLOWEST]
    compiled = ccache_used(compiled_before, ccache_counts(env))
    print(f"{tier}: ccache {compiled}", file=sys.stderr)
    return {"ci_wall_s": round(wall, 1), "ci_cpu_s": round(cpu, 1),
            "suite_wall_s": round(main["finished"] - main["started"], 1), "suite_tests": count(main),
            "board_tests": count(board) if (board := board_session(found)) else 0,
            **compiled, "slowest": [list(row) for row in slowest]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tiers", default=",".join(TIERS), help=f"comma-separated, of {', '.join(TIERS)}")
    parser.add_argument("--keep", metavar="DIR",
                        help="keep the logs, reports and clone in DIR, empty or absent (else a temporary folder)")
    parser.add_argument("--cold", action="store_true",
                        help="an empty compiler cache and synthesis cache of the run's own, as on a new machine")
    record.add_option(parser)
    args = parser.parse_args(argv)
    tiers = args.tiers.split(",")
    if any(t not in TIERS for t in tiers):
        parser.error(f"--tiers: choose from {', '.join(TIERS)}")
    if args.record and sorted(tiers) != sorted(TIERS):
        parser.error("--record measures every tier (leave out --tiers)")
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="vdla-test-suite-"))
    try:
        work.mkdir(parents=True, exist_ok=True)
        if any(work.iterdir()):
            parser.error(f"--keep {work}: not empty (an earlier run's clone and reports are there)")
    except OSError as err:
        parser.error(f"--keep {work}: cannot make or read it ({err.strerror})")
    load_before = record.load_average()
    print(f"load average before: {load_before}", file=sys.stderr)
    figures = {}
    try:
        for tier in tiers:
            figures.update(measure(tier, work, args.cold))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"load average after: {record.load_average()}", file=sys.stderr)
    figures["caches"] = "cold" if args.cold else "the machine's (ccache, ~/.cache/vdla-timing)"
    for name, value in figures.items():
        if name != "slowest":
            print(f"{name}: {value}  ({FIGURES[name]})")
    for seconds, test in figures.get("slowest", []):
        print(f"  {seconds:7.1f} s  {test}")
    if args.record:
        record.write("test_suite", FIGURES, figures, load_before, TARGETS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
