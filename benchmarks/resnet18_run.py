"""Benchmark the main job: wall time and peak memory of `vdla run resnet18` (import, quantize,
compile, simulate every accelerator layer with data, run the CPU kernels), with the simulation
part reported separately. Targets on the 2-core machine: whole run <= 30 s and <= 2 GB;
simulation <= 5 s (VTA's functional simulator: 1.01 s, its cycle-accurate one: 228 s).

    python benchmarks/resnet18_run.py [--config osdi18] [--resolution 224] [--model resnet18]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

VDLA = Path(sys.executable).with_name("vdla")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="osdi18")
    parser.add_argument("--resolution", type=int, default=224)
    parser.add_argument("--model", default="resnet18")
    args = parser.parse_args()
    command = [str(VDLA), "run", args.model, "--config", args.config, "--resolution", str(args.resolution), "--json"]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode:
        print(done.stderr, file=sys.stderr)
        return done.returncode
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    report = json.loads(done.stdout)
    t = report["wall_seconds"]
    cycles = report["totals"]["accelerator_cycles"]
    print(f"command: {' '.join(command[1:])}")
    print(f"whole run        {wall:7.2f} s wall   (target <= 30 s)")
    print(f"peak memory      {peak_mb:7.0f} MB     (target <= 2048 MB)")
    print(f"simulation       {t['simulate']:7.2f} s wall   (target <= 5 s): {cycles:,} accelerator cycles, "
          f"{cycles / t['simulate'] / 1e6:.1f} M simulated cycles per wall second")
    print(f"  import {t['import']:.2f} s, quantize {t['quantize']:.2f} s, compile {t['compile']:.2f} s, "
          f"CPU kernels {t['cpu_kernels']:.2f} s, reference check {t['reference_check']:.2f} s")
    print(f"bit exact {report['bit_exact']}, output sha256 {report['output_sha256'][:16]}..., "
          f"speedup {report['totals']['speedup']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
