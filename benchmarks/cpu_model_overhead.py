"""What the code-level CPU model costs the main job: `vdla run resnet18` with the analysis cache
warm (the normal case: target within 10 % of the run without the model), and with a cold cache
(the first run on a machine: every kernel compiled for the CPU, profiled and timed by llvm-mca,
in worker processes while the network runs).

    python benchmarks/cpu_model_overhead.py [--runs 3] [--cpu cortex-a9] [--baseline DIR]
                                            [--cpu-baseline int8|fp32] [--cpu-threads 1|2]

``--baseline DIR`` names a checkout of the project from before the model (e.g. ``git worktree
add --detach /tmp/base 3e4913f``): the same command runs from it (``PYTHONPATH=DIR``) and the
two alternate run by run, so a drift in machine load hits both; the ratio of medians is printed.
Prints the machine's load average, which the figures depend on (2 shared cores).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PYTHON = sys.executable


def timed(command: list[str], env: dict) -> tuple[float, dict]:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"failed: {' '.join(command)}\n{done.stderr[-2000:]}")
    return wall, json.loads(done.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="timed runs per variant (median reported)")
    parser.add_argument("--cpu", default="cortex-a9")
    parser.add_argument("--baseline", metavar="DIR", help="checkout of the project without the CPU model")
    parser.add_argument("--cpu-baseline", default="int8", choices=("int8", "fp32"),
                        help="kernels that price the CPU ops (fp32 analyses its own ~30 kernels when cold)")
    parser.add_argument("--cpu-threads", type=int, default=1, choices=(1, 2))
    args = parser.parse_args()
    command = [PYTHON, "-m", "vdla", "run", "resnet18", "--json"]
    model_options = ["--cpu-baseline", args.cpu_baseline, "--cpu-threads", str(args.cpu_threads)]
    print(f"load average before: {os.getloadavg()[0]:.2f} (2 cores shared by every helper)")
    with tempfile.TemporaryDirectory(prefix="vdla-bench-cache-") as cache:
        env = {**os.environ, "VDLA_CACHE_DIR": cache}
        cold, report = timed(command + ["--cpu", args.cpu] + model_options, env)  # fills the cache
        print(f"cold cache: {cold:6.1f} s wall (model {report['wall_seconds']['cpu_model']:.1f} s inside the run)")
        warm, base = [], []
        for _ in range(args.runs):
            wall, report = timed(command + ["--cpu", args.cpu] + model_options, env)
            warm.append((wall, report["wall_seconds"]["cpu_model"]))
            if args.baseline:
                base.append(timed(command, {**os.environ, "PYTHONPATH": str(Path(args.baseline).resolve())})[0])
    median = statistics.median(w for w, _ in warm)
    model = statistics.median(m for _, m in warm)
    print(f"warm cache: {median:6.1f} s wall median of {args.runs} (min {min(w for w, _ in warm):.1f}, max "
          f"{max(w for w, _ in warm):.1f}); the CPU model's share: {model:.2f} s ({model / median:.1%})")
    if base:
        ratio = statistics.median(w / b for (w, _), b in zip(warm, base))
        print(f"baseline:   {statistics.median(base):6.1f} s wall median; pairwise ratio with/without the model "
              f"{ratio:.3f} (target <= 1.10)")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
