"""The generated figures of docs/cpu_fallback.md: what the CPU cost model gives ResNet-18's CPU
kernels (``compiler.cpu_fallback.resnet18.cpu_workload``) on the Cortex-A9, kernel by kernel,
without running the network.

    python scripts/figures/cpu_fallback.py cpu-only | rates | memory
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository's root

from compiler import paper  # noqa: E402
from compiler.cpu_fallback import (AddSpec, DenseSpec, GlobalAvgPoolSpec, MaxPool2dSpec, QuantizeSpec,  # noqa: E402
                                   resnet18)
from compiler.cpu_fallback.cost import CpuModel  # noqa: E402

CPU = "cortex-a9"
VARIANTS = (("int8", 1), ("int8", 2), ("fp32", 1), ("fp32", 2), ("tcpu", 2))  # (baseline, threads)
GROUPS = ("layer0", "conv", "other", "total")
OTHER_OPS = {QuantizeSpec: "quantize", MaxPool2dSpec: "max pool", AddSpec: "residual adds",
             GlobalAvgPoolSpec: "global average pool", DenseSpec: "classifier (dense)"}


def cpu_only() -> str:
    """Seconds of each Fig. 21 CPU-only group per baseline and thread count, and the paper's."""
    lines = ["| baseline / threads | stem conv (s) | other convs (s) | other ops (s) | total (s) | total vs Fig. 21 |",
             "|---|---|---|---|---|---|"]
    theirs = paper.fig21()["cpu_only"]
    for baseline, threads in VARIANTS:
        ours = resnet18.cpu_only_seconds(CpuModel(CPU, baseline=baseline, threads=threads))
        default = " (default)" if (baseline, threads) == VARIANTS[0] else ""
        cells = [f"{ours[g]:.3f}" for g in GROUPS] + [f"{ours['total'] / theirs['total'] - 1:+.0%}"]
        name = f"{baseline} / {threads} thread{'s' if threads > 1 else ''}{default}"
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("| TVM paper Fig. 21, CPU only (measured) | " + " | ".join(f"{theirs[g]:g}" for g in GROUPS) + " | |")
    return "\n".join(lines)


def rate(model: CpuModel, specs) -> tuple[float, float, float]:
    """(lowest, highest, MAC-weighted) MACs per cycle of one core over ``specs``."""
    macs = [spec.work().macs for spec in specs]
    cycles = [model.kernel_cost(spec).cycles for spec in specs]
    per_kernel = [m / c for m, c in zip(macs, cycles)]
    return min(per_kernel), max(per_kernel), sum(macs) / sum(cycles)


def rates() -> str:
    """MACs per cycle of the convolutions on one core, per baseline and kind of conv."""
    workload = resnet18.cpu_workload()
    kinds = {"stem (7x7)": workload["layer0"], "3x3": [s for s in workload["conv"] if s.kh == 3],
             "1x1 stride 2": [s for s in workload["conv"] if s.kh == 1], "all but the stem": workload["conv"]}
    lines = ["| MAC/cycle, one core | " + " | ".join(kinds) + " |", "|---|" + "---|" * len(kinds)]
    for baseline in ("int8", "fp32"):
        model = CpuModel(CPU, baseline=baseline, threads=1)
        cells = []
        for specs in kinds.values():
            low, high, mean = rate(model, specs)
            cells.append(f"{mean:.2f}" if len(specs) == 1 else f"{mean:.2f} ({low:.2f}-{high:.2f})")
        lines.append(f"| {baseline} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def full_overlap_cycles(cost) -> float:
    """The cycles the model before the memory model gave: memory fully hidden under compute,
    ``max(core + branch, l2 + dram)``, from the parts of today's ``cost``."""
    parts = cost.parts
    return max(parts["core_cycles"] + parts["branch_cycles"], parts["l2_cycles"] + parts["dram_cycles"])


def change_range(costs) -> str:
    changes = [cost.cycles / full_overlap_cycles(cost) - 1 for cost in costs]
    low, high = min(changes), max(changes)
    return f"{low:+.0%}" if round(low, 2) == round(high, 2) else f"{low:+.0%} to {high:+.0%}"


def memory() -> str:
    """Per kind of kernel, one thread: how much the memory model adds to full overlap (``max``),
    and the int8 CPU-only total under both."""
    workload, int8, fp32 = resnet18.cpu_workload(), CpuModel(CPU), CpuModel(CPU, baseline="fp32")
    kinds = [("int8 3x3 convs", int8, [s for s in workload["conv"] if s.kh == 3]),
             ("int8 1x1 stride-2 convs", int8, [s for s in workload["conv"] if s.kh == 1]),
             *((f"int8 {label}", int8, [s for s in workload["other"] if isinstance(s, kind)])
               for kind, label in OTHER_OPS.items()),
             ("FP32 convs", fp32, workload["layer0"] + workload["conv"])]
    lines = ["| kernels (ResNet-18 at 224, one thread) | against full overlap (`max`) |", "|---|---|"]
    lines += [f"| {label} | {change_range([model.kernel_cost(spec) for spec in specs])} |"
              for label, model, specs in kinds]
    costs = [int8.kernel_cost(spec) for group in ("layer0", "conv", "other") for spec in workload[group]]
    now, before = sum(c.seconds for c in costs), sum(c.seconds * full_overlap_cycles(c) / c.cycles for c in costs)
    lines.append(f"| int8 CPU-only total | {before:.2f} s -> {now:.2f} s |")
    return "\n".join(lines)


BLOCKS = {"cpu-only": cpu_only, "rates": rates, "memory": memory}


if __name__ == "__main__":
    from block_cli import main

    sys.exit(main(BLOCKS))
