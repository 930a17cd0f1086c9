"""Benchmark the main job, `vdla run resnet18 --plots DIR`, as a user meets it: each run is a
fresh `vdla` process, measured from outside (wall time; CPU time, user + sys, and peak resident
memory of the process and its children, from ``os.wait4``) and from inside (the phases of
``--json``'s ``wall_seconds``; with --plots also ``roofline_variants`` and ``figures``).

Runs, each beside its target on the 2-core machine (issue 24):

1. cold: an empty disk cache (a fresh ``VDLA_CACHE_DIR``), with --plots  (target <= 10 s wall)
2. warm: the same run again, same cache                                   (target <= 5 s wall)
3. warm without --plots                                                   (target <= 3 s wall)
4. peak memory of ResNet-34 (`vdla run resnet34`, warm); ResNet-50 is not built in (users bring
   it as an ONNX file: give it with --resnet50 FILE to measure it too)
5. `output_sha256` under 1 and 2 BLAS threads (OPENBLAS/OMP/MKL_NUM_THREADS), disk cache off
   (``VDLA_CACHE=off``: a cached graph would hide a difference): equal or not, as one line

Before the runs the project's packages are compiled to bytecode, as ``pip install`` does
(benchmarks/bytecode.py): no result is cached by that, only the code's bytecode.

The machine's load (1-minute average) is printed before and after: wall times on a loaded
machine are not the machine's; CPU times much less so.

    python benchmarks/main_job.py [--model resnet18] [--resolution 224] [--config osdi18]
                                  [--skip memory,threads] [--resnet50 FILE] [--keep DIR] [--record]

Exit status 0 when every run succeeded (the last line says which targets were missed), 1 if one failed.

The cache lives in a temporary folder removed at the end (``--keep DIR``: use and keep DIR; it
must be empty or absent, so the first run is cold). `vdla` runs as ``python -m vdla`` with this
checkout first on ``PYTHONPATH``, so the code measured is the code beside this script.
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
from dataclasses import dataclass
from pathlib import Path

import record
from bytecode import compile_bytecode

ROOT = Path(__file__).resolve().parents[1]
TARGETS = {"cold": 10.0, "warm": 5.0, "warm, no plots": 3.0}
MISSED: list[str] = []  # the runs over their target
BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
# what --record writes (benchmarks/record.py): the three timed runs' wall and CPU seconds
FIGURES = {
    "cold_wall_s": "s: cold run, wall", "cold_cpu_s": "s: cold run, CPU",
    "warm_wall_s": "s: warm run, wall", "warm_cpu_s": "s: warm run, CPU",
    "no_plots_wall_s": "s: warm run without --plots, wall", "no_plots_cpu_s": "s: warm run without --plots, CPU",
}
RECORDED = {"cold": "cold", "warm": "warm", "warm, no plots": "no_plots"}  # run label -> figure prefix


@dataclass
class Run:
    """One `vdla` process: its exit status, wall and CPU seconds, peak RSS and --json report."""
    status: int
    wall: float
    cpu: float
    peak_mib: float
    report: dict | None
    stderr: str


def run_vdla(args: list[str], env: dict[str, str]) -> Run:
    """``python -m vdla ARGS --json`` as a child; stdout and stderr go to files (a pipe could
    fill while the child is only waited for)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-m", "vdla", *args, "--json"], stdout=out, stderr=err,
                                 env=env, cwd=ROOT)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)  # Popen must not wait for it again
        out.seek(0)
        err.seek(0)
        text, stderr = out.read().decode(), err.read().decode(errors="replace")
    report = json.loads(text) if child.returncode == 0 and text.strip() else None
    # ru_maxrss is in KiB on Linux: the largest of the process and the children it waited for
    return Run(child.returncode, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, report, stderr)


def environment(cache: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "VDLA_CACHE_DIR": str(cache), **extra}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    return env


# wall_seconds keys that are parts of "execute" (the executor's time in each kind of work)
EXECUTE_PARTS = ("simulate", "compile", "cpu_kernels", "cpu_model")
# keys that `vdla run --plots` adds after run_network's (not in its "total")
PLOT_PHASES = ("roofline_variants", "figures")


def phases(report: dict) -> str:
    """The ``wall_seconds`` phases in order as one line, the parts of ``execute`` in brackets
    (keys added later print after the known ones)."""
    t = dict(report["wall_seconds"])
    total = t.pop("total", None)
    inner = ", ".join(f"{k} {t.pop(k):.2f}" for k in EXECUTE_PARTS if k in t)
    after = ", ".join(f"{k} {t.pop(k):.2f}" for k in PLOT_PHASES if k in t)
    words = []
    for key in ("import", "quantize", "execute", "reference_check", *t):
        if key in t:
            words.append(f"{key} {t.pop(key):.2f}" + (f" [{inner}]" if key == "execute" and inner else ""))
    head = f"run_network {total:.2f} s = " if total is not None else ""
    return head + ", ".join(words) + (f"; then --plots: {after}" if after else "")


def show(label: str, run: Run, target: float | None = None) -> bool:
    """Print one run (beside ``target``, if any); True when it succeeded."""
    if run.status:
        last = run.stderr.strip().splitlines()[-1:] or ["(no message)"]
        print(f"{label:<16} FAILED with status {run.status}: {last[0]}")
        return False
    verdict = "" if target is None else f"   (target <= {target:g} s: {'met' if run.wall <= target else 'NOT met'})"
    print(f"{label:<16} {run.wall:7.2f} s wall  {run.cpu:7.2f} s CPU  {run.peak_mib:6.0f} MiB peak{verdict}")
    if run.report:
        t = run.report["wall_seconds"]
        outside = run.wall - t.get("total", 0.0) - sum(t.get(k, 0.0) for k in PLOT_PHASES)
        print(f"{'':<16} {phases(run.report)}")
        print(f"{'':<16} outside those phases (start-up, imports, writing files, exit): {outside:.2f} s")
        r = run.report
        cycles, simulate = r["totals"]["accelerator_cycles"], t.get("simulate") or float("nan")
        print(f"{'':<16} bit exact {r['bit_exact']}, output_sha256 {r['output_sha256'][:16]}..., {cycles:,} "
              f"accelerator cycles ({cycles / simulate / 1e6:.1f} M simulated per second), speedup "
              f"{r['totals']['speedup']:.2f}x")
    if target is not None and run.wall > target:
        MISSED.append(label)
    return True


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} CPUs"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--resolution", type=int, default=224)
    parser.add_argument("--config", default="osdi18")
    parser.add_argument("--skip", default="", help="comma-separated parts to skip: memory, threads")
    parser.add_argument("--resnet50", metavar="FILE", help="a ResNet-50 ONNX file whose peak memory to measure")
    parser.add_argument("--keep", metavar="DIR", help="cache folder to use and keep (empty or absent)")
    record.add_option(parser)
    args = parser.parse_args()
    load_before = record.load_average()
    skip = {s for s in args.skip.split(",") if s}
    if skip - {"memory", "threads"}:
        parser.error(f"--skip: unknown part(s) {', '.join(sorted(skip - {'memory', 'threads'}))}")
    print(f"main job benchmark: {sys.executable} -m vdla (code in {ROOT}); {load()}")
    print(compile_bytecode())
    common = [args.model, "--resolution", str(args.resolution), "--config", args.config]
    with tempfile.TemporaryDirectory(prefix="vdla-bench-") as scratch:
        cache = Path(args.keep) if args.keep else Path(scratch) / "cache"
        if cache.exists() and any(cache.iterdir()):
            parser.error(f"--keep {cache}: not empty (the first run must find an empty cache)")
        plots = Path(scratch) / "plots"
        env = environment(cache)
        ok = True
        print(f"cache {cache} (VDLA_CACHE_DIR), figures into {plots}")
        figures = {}
        for label, extra in (("cold", ["--plots", str(plots)]), ("warm", ["--plots", str(plots)]),
                             ("warm, no plots", [])):
            run = run_vdla(["run", *common, *extra], env)
            ok &= show(label, run, TARGETS[label])
            figures |= {f"{RECORDED[label]}_wall_s": round(run.wall, 2), f"{RECORDED[label]}_cpu_s": round(run.cpu, 2)}
        if "memory" not in skip:
            others = [("resnet34", ["run", "resnet34", "--resolution", str(args.resolution), "--config", args.config])]
            if args.resnet50:
                others.append(("resnet50", ["run", args.resnet50, "--config", args.config]))
            for label, argv in others:
                ok &= show(label, run_vdla(argv, env))
            if not args.resnet50:
                print("resnet50         not built in (only an ONNX file users bring): give --resnet50 FILE to measure it")
        if "threads" not in skip:
            hashes = {}
            for threads in ("1", "2"):
                run = run_vdla(["run", *common], environment(cache, VDLA_CACHE="off",
                                                             **{name: threads for name in BLAS_THREADS}))
                ok &= show(f"{threads} BLAS thread{'s' * (threads != '1')}", run)
                hashes[threads] = run.report["output_sha256"] if run.report else None
            same = hashes["1"] is not None and hashes["1"] == hashes["2"]
            if not same:
                MISSED.append("the same output_sha256 under 1 and 2 BLAS threads")
            print(f"output_sha256 with 1 and 2 BLAS threads (cache off): {'equal' if same else 'DIFFERENT'} "
                  f"({hashes['1']} / {hashes['2']})")
        if args.keep:
            print(f"kept the cache in {cache}")
        else:
            shutil.rmtree(cache, ignore_errors=True)
    print(f"after: {load()}")
    print("targets: all met" if not MISSED else f"targets NOT met: {', '.join(MISSED)}")
    if args.record and ok:
        record.write("main_job", FIGURES, figures, load_before,
                     {f"{RECORDED[label]}_wall_s": ("<=", target) for label, target in TARGETS.items()})
    return 0 if ok else 1  # 1: a run failed


if __name__ == "__main__":
    sys.exit(main())
