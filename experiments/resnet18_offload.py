"""The ResNet-18 offload study: our numbers beside the TVM paper's, on both VDLA presets.

    python -m experiments.resnet18_offload [--out results] [--resolution 224] [--presets vta-pynq osdi18]
                                           [--placement all|cost]

For each preset it runs ``vdla run resnet18`` (import, quantize, compile, simulate, CPU kernels),
writes ``OUT/PRESET/`` (layers.csv, summary.json and the four figures) and prints the comparison
with the paper: offloaded-conv speedup, end-to-end speedup and per-layer utilisation (Fig. 10
layers: of every GEMM lane and of the useful MACs); ``OUT/comparison.csv`` holds the same table.
The placement is the paper's by default (``all``: every conv but the stem on VDLA); ``cost``
keeps on the CPU the convs that do not win. ``osdi18`` is the system the paper's
figures were measured on (100 MHz, ACP, 32 kB weights); ``vta-pynq`` is VTA's PYNQ build (100 MHz,
ACP, 256 kB weights); ``osdi18-200`` is the paper's text (200 MHz, HP0).
"""

from __future__ import annotations

import sys
from pathlib import Path

from compiler import paper
from compiler.network.report import useful_work
from vdla.cmd_run import csv_text, study_files, write_outputs
from vdla.network import run_network
from vdla.outputs import Outputs, check_writable


def fig10_label(record) -> str | None:
    """The Fig. 10 label (C1..C11) of a conv record, by shape, or None."""
    layer = record.extra.get("layer")
    if layer is None or record.op != "conv":
        return None
    return paper.fig10_label_of(layer)


def fig21_validation(report) -> list[dict]:
    """Each Fig. 21 category, modelled (ours) vs measured (paper), with the relative error. The
    paper's CPU + VDLA "other" bar holds every non-conv CPU op and the runtime's work around the
    offloads, so ours is other + host there (both are listed too). Validation, not calibration:
    nothing in the model is fitted to these numbers."""
    bars, ours = paper.fig21(), report.totals["categories"]
    cpu, vdla = ours["cpu_only"], ours["cpu_plus_vdla"]
    entries = [("CPU only", "stem conv (layer 0)", cpu["layer0"], bars["cpu_only"]["layer0"]),
               ("CPU only", "other convolutions", cpu["conv"], bars["cpu_only"]["conv"]),
               ("CPU only", "other ops", cpu["other"], bars["cpu_only"]["other"]),
               ("CPU only", "total", report.totals["cpu_only_s"], bars["cpu_only"]["total"]),
               ("CPU + VDLA", "stem conv (layer 0)", vdla["layer0"], bars["cpu_plus_vdla"]["layer0"]),
               ("CPU + VDLA", "offloaded convolutions", vdla["conv"], bars["cpu_plus_vdla"]["conv"]),
               ("CPU + VDLA", "other ops + host", vdla["other"] + vdla["host"], bars["cpu_plus_vdla"]["other"]),
               ("CPU + VDLA", "  of which other ops", vdla["other"], None),
               ("CPU + VDLA", "  of which host", vdla["host"], None),
               ("CPU + VDLA", "total", report.totals["offload_s"], bars["cpu_plus_vdla"]["total"])]
    return [{"system": system, "category": category, "ours_s": round(ours_s, 4), "paper_s": theirs,
             "error": None if theirs is None else round(ours_s / theirs - 1, 3)}
            for system, category, ours_s, theirs in entries]


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
        # The paper's GOPS count the layer's own ops (C1..C11 have whole blocks of channels).
        theirs = round(100 * label_row["gops_latency_hiding"] / paper.FIG10_ROOF["gops"], 1)
        row = {"metric": f"{label_row['label']} utilisation (%)", "paper": theirs}
        useful = {"metric": f"{label_row['label']} useful utilisation (%)", "paper": theirs}
        for preset, report in reports.items():
            match = [r for r in report.records if fig10_label(r) == label_row["label"] and r.placement == "vdla"]
            if match:
                r = match[0]
                work = useful_work(r)
                peak_gops = r.extra["run"].config.peak_ops_per_s / 1e9
                row[preset] = round(100 * work["gops"] / peak_gops, 1)
                useful[preset] = round(100 * work["useful_gops"] / peak_gops, 1)
        rows += [row, useful]
    return rows


def main(argv=None) -> int:
    from vdla.argtypes import ArgumentParser

    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results", help="output folder")
    parser.add_argument("--resolution", type=int, default=224)
    parser.add_argument("--presets", nargs="+", default=["vta-pynq", "osdi18"])
    parser.add_argument("--cpu", default="cortex-a9", help="CPU model (cortex-a9 is the paper's)")
    parser.add_argument("--placement", choices=["all", "cost"], default="all",
                        help="all (default): the paper's placement, every conv but the stem on VDLA; cost: only "
                             "those that make the network faster")
    args = parser.parse_args(argv)
    out = Path(args.out)
    tables = [out / "comparison.csv", out / "fig21_validation.csv"]
    check_writable([*tables, *(path for preset in args.presets for path in study_files(out / preset))])
    reports = {}
    # Every file of the study is staged and put in place at the end, together: an interrupted
    # study leaves the previous results whole.
    with Outputs() as outputs:
        for preset in args.presets:
            print(f"== {preset}", file=sys.stderr)
            reports[preset] = run_network("resnet18", config=preset, resolution=args.resolution, cpu=args.cpu,
                                          progress=lambda m: print(m, file=sys.stderr), placement=args.placement)
            write_outputs(reports[preset], out / preset, outputs)
        rows = comparison(reports)
        outputs.write(tables[0], csv_text(rows, ["metric", "paper", *args.presets]))
        first = reports[args.presets[0]]
        validation = fig21_validation(first)
        outputs.write(tables[1], csv_text(validation, list(validation[0])))
        outputs.commit()
    print(f"{'metric':<32} {'paper':>8} " + " ".join(f"{p:>10}" for p in args.presets))
    for row in rows:
        print(f"{row['metric']:<32} {row['paper']!s:>8} " + " ".join(f"{row.get(p, '-')!s:>10}" for p in args.presets))
    print(f"\nFig. 21 categories, modelled ({first.totals['time_basis']}) vs the paper, {args.presets[0]}:")
    print(f"{'system':<12} {'category':<24} {'ours s':>8} {'paper s':>8} {'error':>8}")
    for row in validation:
        paper_s = "" if row["paper_s"] is None else f"{row['paper_s']:8.3f}"
        error = "" if row["error"] is None else f"{row['error']:+8.0%}"
        print(f"{row['system']:<12} {row['category']:<24} {row['ours_s']:8.3f} {paper_s:>8} {error:>8}")
    print(f"CPU and host times are modelled from the generated code ({args.cpu}); accelerator times simulated.")
    print(f"wrote {out}/comparison.csv, {out}/fig21_validation.csv and {', '.join(f'{out}/{p}/' for p in args.presets)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
