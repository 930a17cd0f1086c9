"""Benchmark of deployment over loopback: package build, transfer and server time.

Prints, for a built-in model at a given resolution, the time to prepare (import, quantize,
partition), compile the bundles, build the Cortex-A9 library, the package size, the loopback
transfer rate and the server's load/execute time on the sim backend, then the per-layer wall
time the server measured for the five slowest layers.

    .venv/bin/python benchmarks/driver_deploy.py [--model resnet18] [--resolution 32]
"""

import argparse
import json
import secrets
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from compiler.network import package as netfiles  # noqa: E402
from driver.protocol import request  # noqa: E402
from vdla.deploy import build_package, serve  # noqa: E402
from vdla.network import prepare  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--resolution", type=int, default=32)
    ap.add_argument("--config", default=None)
    args = ap.parse_args()
    quiet = lambda message: None  # noqa: E731
    t0 = time.perf_counter()
    prepared = prepare(args.model, config=args.config, resolution=args.resolution)
    q, placements, config = prepared.q, prepared.placements, prepared.config
    t1 = time.perf_counter()
    bundles = netfiles.compile_bundles(q, placements, config)
    t2 = time.perf_counter()
    arm = netfiles.arm_library_files(q, placements)
    t3 = time.perf_counter()
    files = build_package(prepared, model=args.model, arm_library=True, progress=quiet)
    size = sum(len(d) for d in files.values())
    stop, ready, box = threading.Event(), threading.Event(), {}
    key = secrets.token_bytes(32)
    thread = threading.Thread(target=serve, args=("sim", config, "127.0.0.1", 0), daemon=True,
                              kwargs={"key": key, "stop": stop, "log": quiet,
                                      "ready": lambda s: (box.update(port=s.address[1]), ready.set())})
    thread.start()
    ready.wait(30)
    result, layers, stats = request(("127.0.0.1", box["port"]), {"op": "run"}, files, key=key)
    stop.set()
    thread.join(10)
    print(f"{args.model} at {args.resolution}x{args.resolution}, {config.name} ({config.fingerprint})")
    print(f"  prepare (import, quantize, partition) {t1 - t0:7.2f} s")
    print(f"  compile {len(bundles)} bundles            {t2 - t1:7.2f} s")
    print(f"  Cortex-A9 library ({len(arm[netfiles.ARM_LIBRARY]) / 1e3:.0f} kB)       {t3 - t2:7.2f} s")
    print(f"  package {size / 1e6:.1f} MB, sent in {stats['send_seconds']:.3f} s "
          f"({size / 1e6 / max(stats['send_seconds'], 1e-9):.0f} MB/s on loopback)")
    print(f"  server: load {result['seconds']['load']:.2f} s, execute {result['seconds']['execute']:.2f} s "
          f"(sim backend, CPU ops: {result['cpu_kernels']}); answer after {stats['total_seconds']:.2f} s")
    print("  slowest layers (server wall time):")
    for row in sorted(json.loads(layers[netfiles.LAYERS]), key=lambda r: -r["wall_seconds"])[:5]:
        print(f"    {row['name']:<24} {row['op']:<6} {row['placement']:<4} {row['wall_seconds'] * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
