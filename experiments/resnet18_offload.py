"""The ResNet-18 offload study: our numbers beside the TVM paper's, on both VDLA presets.

    python -m experiments.resnet18_offload [--out results] [--resolution 224] [--presets vta-pynq osdi18]

For each preset it runs ``vdla run resnet18`` (import, quantize, compile, simulate, CPU kernels),
writes ``OUT/PRESET/`` (layers.csv, summary.json and the four figures) and prints the comparison
with the paper: offloaded-conv speedup, end-to-end speedup and per-layer utilisation (Fig. 10
layers); ``OUT/comparison.csv`` holds the same table. The paper measured VTA's PYNQ build
(``vta-pynq``: 100 MHz, 256 kB weights); ``osdi18`` is the paper's text (200 MHz, 32 kB weights).
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from compiler import paper
from vdla.cmd_run import write_outputs
from vdla.network import run_network


def fig10_label(record) -> str | None:
    """The Fig. 10 label (C1..C11) of a conv record, by shape, or None."""
    layer = record.extra.get("layer")
    if layer is None or record.op != "conv":
        return None
    return paper.fig10_label(layer.h, layer.w, layer.ic, layer.oc, layer.k, layer.stride, layer.pad)


def comparison(reports: dict) -> list[dict]:
    bars = paper.fig21()
    cpu, vdla = bars["cpu_only"], bars["cpu_plus_vdla"]
    rows = [{"metric": "offloaded-conv speedup (x)", "paper": round(cpu["conv"] / vdla["conv"], 1)},
            {"metric": "end-to-end speedup (x)", "paper": round(cpu["total"] / vdla["total"], 1)},
            {"metric": "CPU only (s)", "paper": cpu["total"]},
            {"metric": "CPU + VDLA (s)", "paper": vdla["total"]}]
    for preset, report in reports.items():
        t = report.totals
        for row, value in zip(rows, (t["offloaded_speedup"], t["speedup"], t["cpu_only_s"], t["offload_s"])):
            row[preset] = round(value, 3)
    for label_row in paper.fig10():
        row = {"metric": f"{label_row['label']} utilisation (%)",
               "paper": round(100 * label_row["gops_latency_hiding"] / 51.2, 1)}
        for preset, report in reports.items():
            match = [r for r in report.records if fig10_label(r) == label_row["label"]]
            if match:
                r = match[0]
                gops = 2 * r.macs / r.seconds / 1e9
                peak_gops = r.extra["run"].config.peak_ops_per_s / 1e9
                row[preset] = round(100 * gops / peak_gops, 1)
        rows.append(row)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results", help="output folder")
    parser.add_argument("--resolution", type=int, default=224)
    parser.add_argument("--presets", nargs="+", default=["vta-pynq", "osdi18"])
    args = parser.parse_args(argv)
    out = Path(args.out)
    reports = {}
    for preset in args.presets:
        print(f"== {preset}", file=sys.stderr)
        reports[preset] = run_network("resnet18", config=preset, resolution=args.resolution,
                                      progress=lambda m: print(m, file=sys.stderr))
        write_outputs(reports[preset], out / preset)
    rows = comparison(reports)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "comparison.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["metric", "paper", *args.presets])
        writer.writeheader()
        writer.writerows(rows)
    print(f"{'metric':<32} {'paper':>8} " + " ".join(f"{p:>10}" for p in args.presets))
    for row in rows:
        print(f"{row['metric']:<32} {row['paper']!s:>8} " + " ".join(f"{row.get(p, '-')!s:>10}" for p in args.presets))
    print("CPU times are modelled (Cortex-A9 model calibrated on the stem conv); accelerator times simulated.")
    print(f"wrote {out}/comparison.csv and {', '.join(f'{out}/{p}/' for p in args.presets)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
