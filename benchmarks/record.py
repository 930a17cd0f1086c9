"""Recorded benchmark figures: the one source of README's measured machine timings.

A benchmark that README quotes declares the figures it measures in a module constant
``FIGURES = {name: "unit: what it is", ...}`` and, run with ``--record``, writes them with
:func:`write` to ``benchmarks/results/NAME.json``: the figures (exactly the declared names), the
command line, the date (UTC), the commit (``+dirty`` when code differs from it),
the load average before and after, the machine (CPU model, CPU count) and the targets the
benchmark sets for some figures (``{name: [OP, VALUE]}``, OP one of ``<=``, ``<``, ``>=``). Wall
times depend on the load the record names; CPU times much less.

:func:`read_all` and :func:`provenance` are how the generators (``scripts/figures``) read them back:
``python scripts/figures/performance.py`` renders README's "Performance" table from these
files; tests/docs/test_readme.py checks that every record holds its benchmark's declared figure
names and that every benchmark the table names exists.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def add_option(parser) -> None:
    """The ``--record`` option every recording benchmark takes."""
    parser.add_argument("--record", action="store_true",
                        help=f"write the figures to {RESULTS.relative_to(ROOT)}/NAME.json (README's Performance table)")


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def cpu_model() -> str:
    """The CPU's model name as /proc/cpuinfo gives it (else the platform's word for it)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def commit() -> str:
    """HEAD's commit, ``+dirty`` when a tracked file that can change a measurement differs from it
    (any but the Markdown docs and the recorded results)."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    head = git("rev-parse", "--short=12", "HEAD") or "unknown"
    changed = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!*.md", ":!benchmarks/results")
    return head + ("+dirty" if changed else "")


OPS = ("<=", "<", ">=")


def write(name: str, declared: dict[str, str], figures: dict[str, float], load_before: list[float],
          targets: dict[str, tuple[str, float]] | None = None, script: str | None = None) -> Path:
    """Write ``benchmarks/results/NAME.json``; ``figures`` must have exactly the ``declared`` names
    (a benchmark that changes what it measures changes its FIGURES, and the README table's test
    sees it), ``targets`` only declared names. ``script`` is the measuring script's path from the
    repository's root when it is not ``benchmarks/NAME.py`` (``scripts/mutants.py``). Returns the
    path written."""
    targets = targets or {}
    script = script or f"benchmarks/{name}.py"
    if set(figures) != set(declared):
        raise ValueError(f"{name}: figures {sorted(figures)} are not the declared {sorted(declared)}")
    if not set(targets) <= set(declared) or any(op not in OPS for op, _ in targets.values()):
        raise ValueError(f"{name}: targets {targets} name undeclared figures or unknown comparisons")
    record = {
        "benchmark": script,
        "command": " ".join(["python", script, *sys.argv[1:]]),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": commit(),
        "load_average_before": load_before,
        "load_average_after": load_average(),
        "machine": {"cpu": cpu_model(), "cpus": os.cpu_count()},
        "figures": {key: figures[key] for key in declared},
        "units": dict(declared),
        "targets": {key: [op, value] for key, (op, value) in targets.items()},
    }
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(record, indent=1) + "\n")
    print(f"recorded {path.relative_to(ROOT)}", file=sys.stderr)
    return path


def read_all() -> dict[str, dict]:
    """Every recorded result by benchmark name (the file's stem), in name order."""
    return {path.stem: json.loads(path.read_text()) for path in sorted(RESULTS.glob("*.json"))}


def provenance(record: dict) -> str:
    """Where a record comes from, one clause: its command, date, commit, the 1-minute load average
    before and after the run and the machine."""
    before, after = record["load_average_before"][0], record["load_average_after"][0]
    return (f"`{record['command']}`, {record['date']}, commit {record['commit']}, load {before:g} -> {after:g}, "
            f"{record['machine']['cpu']} ({record['machine']['cpus']} CPUs)")
