"""Benchmark of the schedule search: CPU seconds of ``best_schedule`` over ResNet-18's 19
accelerator convolutions at 224 x 224 (every conv but the stem), with 1-2 virtual threads (the
default) and with 1, each shape searched afresh (the in-process memo emptied, the disk cache off).

    .venv/bin/python benchmarks/search_resnet18.py [--config osdi18] [--record]
"""

import argparse
import csv
import os
import sys
import time
from importlib import resources
from pathlib import Path

import record

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ["VDLA_CACHE"] = "off"

from compiler.layers import Conv2D  # noqa: E402
from compiler.tensorize import search  # noqa: E402
from vdla_hw.config import load_config  # noqa: E402

# what --record writes (benchmarks/record.py)
FIGURES = {"search_cpu_s": "s: best_schedule over the 19 convs, 1-2 threads, CPU",
           "one_thread_cpu_s": "s: best_schedule over the 19 convs, 1 thread, CPU"}


def convs() -> list[Conv2D]:
    text = resources.files("compiler").joinpath("data/resnet18_layers.csv").read_text()
    rows = csv.DictReader(line for line in text.splitlines() if line and not line.startswith("#"))
    return [Conv2D(name=r["name"], h=int(r["H_in"]), w=int(r["W_in"]), ic=int(r["IC"]), oc=int(r["OC"]),
                   k=int(r["K"]), stride=int(r["stride"]), pad=int(r["pad"]), shift=8)
            for r in rows if r["name"] not in ("conv1", "fc")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="osdi18")
    record.add_option(ap)
    args = ap.parse_args()
    load_before = record.load_average()
    config = load_config(args.config)
    layers = convs()
    print(f"schedule search benchmark: {len(layers)} ResNet-18 convs at 224, {config.name}, "
          f"load average {os.getloadavg()[0]:.2f}")
    figures = {}
    for vthreads, figure in ((None, "search_cpu_s"), (1, "one_thread_cpu_s")):
        start = time.process_time()
        for layer in layers:
            search._SEARCHED.clear()
            search.best_schedule(layer, config, vthreads=vthreads)
        figures[figure] = round(time.process_time() - start, 2)
        print(f"  vthreads {vthreads or '1-2 (search)'}: best_schedule {figures[figure]:.2f} CPU s")
    if args.record:
        record.write("search_resnet18", FIGURES, figures, load_before)


if __name__ == "__main__":
    main()
