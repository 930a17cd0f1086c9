"""Generated figures of README.md: ``python scripts/figures/readme.py BLOCK``.

``offload``: the "Results beside the paper" table: ResNet-18 at 224 with the paper's placement
(``--placement all``) on ``osdi18``, ``vta-pynq`` and ``osdi18-200`` (``vdla.network.run_network``:
accelerator times simulated, CPU and host times modelled, so deterministic), beside the TVM
paper's Fig. 21 and Fig. 10 (``compiler/data``), and the quantization's error (random deterministic
weights, synthetic inputs). The utilisation rows are experiments.resnet18_offload's.
"""

from __future__ import annotations

import sys
from pathlib import Path
from statistics import median

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from compiler import paper  # noqa: E402
from experiments.resnet18_offload import comparison  # noqa: E402
from vdla.network import run_network  # noqa: E402

PRESETS = ("osdi18", "vta-pynq", "osdi18-200")


def same_row(label: str, paper_s: str, values: list[str]) -> str:
    """A row whose preset cells read "same" where they equal the first preset's."""
    cells = [values[0], *("same" if v == values[0] else v for v in values[1:])]
    return f"| {label} | {paper_s} | " + " | ".join(cells) + " |"


def fig10_label(row: dict) -> str:
    stride = f" s{row['stride']}" if row["stride"] != "1" else ""
    return f"{row['label']} {row['H']}x{row['W']} {row['IC']}->{row['OC']} k{row['K']}{stride}"


def offload() -> str:
    reports = {preset: run_network("resnet18", config=preset, resolution=224, placement="all") for preset in PRESETS}
    bars = paper.fig21()
    cpu, vdla = bars["cpu_only"], bars["cpu_plus_vdla"]
    totals = {p: r.totals for p, r in reports.items()}
    cats = {p: t["categories"] for p, t in totals.items()}
    lines = ["| metric | paper (Fig. 21 / Fig. 10) | " + " | ".join(f"ours, `{p}`" for p in PRESETS) + " |",
             "|---|---|" + "---|" * len(PRESETS)]
    add = lines.append
    add(f"| offloaded convolutions on the accelerator | {vdla['conv']:.3f} s | "
        + " | ".join(f"{cats[p]['cpu_plus_vdla']['conv']:.3f} s" for p in PRESETS) + " |")
    add(f"| offloaded-conv speedup | {cpu['conv'] / vdla['conv']:.1f}x | "
        + " | ".join(f"{totals[p]['offloaded_speedup']:.1f}x" for p in PRESETS) + " |")
    add(f"| end-to-end speedup | {cpu['total'] / vdla['total']:.1f}x | "
        + " | ".join(f"{totals[p]['speedup']:.1f}x" for p in PRESETS) + " |")
    add("| Amdahl bound (infinitely fast accelerator) | - | "
        + " | ".join(f"{totals[p]['amdahl_bound']:.1f}x" for p in PRESETS) + " |")
    add(f"| CPU only / CPU + VDLA | {cpu['total']:.3f} s / {vdla['total']:.3f} s | "
        + " | ".join(f"{totals[p]['cpu_only_s']:.3f} s / {totals[p]['offload_s']:.3f} s" for p in PRESETS) + " |")
    add(same_row("CPU only: stem / other convs / other ops",
                    f"{cpu['layer0']:.3f} / {cpu['conv']:.3f} / {cpu['other']:.3f} s",
                    [f"{c['cpu_only']['layer0']:.3f} / {c['cpu_only']['conv']:.3f} / {c['cpu_only']['other']:.3f} s"
                     for c in cats.values()]))
    add(f"| CPU + VDLA: other ops + host | {vdla['other']:.3f} s | "
        + " | ".join(f"{c['cpu_plus_vdla']['other']:.3f} + {c['cpu_plus_vdla']['host']:.3f} s" for c in cats.values())
        + " |")
    shapes = {row["label"]: fig10_label(row) for row in paper.fig10()}
    for row in comparison(reports):
        label = row["metric"].split()[0]
        if row["metric"].endswith(" utilisation (%)") and "useful" not in row["metric"] and PRESETS[0] in row:
            name = shapes[label] + (" utilisation" if label == "C1" else "")
            add(f"| {name} | {row['paper']:.1f} % | " + " | ".join(f"{row[p]:.1f} %" for p in PRESETS) + " |")
    quantization = [r.quantization for r in reports.values()]
    add(same_row("quantization: median per-layer error against the float model", "-",
                 [f"{100 * median(q['per_layer_error'].values()):.1f} %" for q in quantization]))
    add(same_row(f"top-1 agreement with the float model ({quantization[0]['test_inputs']} synthetic inputs)", "-",
                 [f"{100 * q['top1_agreement']:.0f} %" for q in quantization]))
    return "\n".join(lines)


BLOCKS = {"offload": offload}

if __name__ == "__main__":
    from block_cli import main

    sys.exit(main(BLOCKS))
