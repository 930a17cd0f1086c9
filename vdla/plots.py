"""The four figures of the offload study (PNG and PDF), from a :class:`vdla.network.NetworkReport`.

1. ``fig21_breakdown``: stacked bars CPU-only vs CPU + VDLA by category, the paper's bars beside.
2. ``layer_speedup``: per-layer speedup of offloaded ops, whole-network speedup and Amdahl bound.
3. ``roofline``: GOPS vs ops/byte of every offloaded conv with and without latency hiding, the
   configuration's compute and memory roofs, and the paper's Fig. 10 points.
4. ``timeline``: load/compute/store activity of one layer (instruction spans from the simulator).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from compiler import paper

CATEGORIES = ("layer0", "conv", "other")
COLORS = {"layer0": "#8c6bb1", "conv": "#2b8cbe", "other": "#fdae6b"}
ZOOM_INSNS = 40  # the timeline zooms on this many compute instructions when a layer has more


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, out_dir: Path, name: str) -> list[Path]:
    paths = []
    for ext in ("png", "pdf"):
        path = out_dir / f"{name}.{ext}"
        fig.savefig(path, dpi=150, bbox_inches="tight")
        paths.append(path)
    _pyplot().close(fig)
    return paths


def fig21_breakdown(report, out_dir: Path) -> list[Path]:
    plt = _pyplot()
    ours = report.totals["categories"]
    theirs = paper.fig21()
    bars = [("CPU only\n(ours, modelled A9)", ours["cpu_only"]), ("CPU only\n(paper)", theirs["cpu_only"]),
            ("CPU + VDLA\n(ours)", ours["cpu_plus_vdla"]), ("CPU + VDLA\n(paper)", theirs["cpu_plus_vdla"])]
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for i, (label, values) in enumerate(bars):
        bottom = 0.0
        for cat in CATEGORIES:
            ax.bar(i, values[cat], bottom=bottom, color=COLORS[cat], edgecolor="black", linewidth=0.5,
                   hatch="//" if "paper" in label else None, label=cat if i == 0 else None)
            bottom += values[cat]
        ax.text(i, bottom, f"{bottom:.3f} s", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(bars)), [b[0] for b in bars], fontsize=8)
    ax.set_ylabel("inference time (s)")
    ax.set_title(f"{report.model}: CPU only vs CPU + VDLA ({report.config_name}), like TVM Fig. 21")
    ax.legend(title="category (hatched: paper)", fontsize=8)
    return _save(fig, out_dir, "fig21_breakdown")


def layer_speedup(report, out_dir: Path) -> list[Path]:
    plt = _pyplot()
    rows = [r for r in report.records if r.placement == "vdla" and r.seconds]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    speed = [r.cpu_seconds / r.seconds for r in rows]
    ax.bar(range(len(rows)), speed, color=COLORS["conv"], label="offloaded op: A9 time / VDLA time")
    t = report.totals
    ax.axhline(t["speedup"], color="black", linestyle="--", label=f"whole network {t['speedup']:.1f}x")
    ax.axhline(t["amdahl_bound"], color="red", linestyle=":", label=f"Amdahl bound {t['amdahl_bound']:.1f}x")
    ax.set_yscale("log")
    ax.set_xticks(range(len(rows)), [r.name for r in rows], rotation=70, fontsize=7)
    ax.set_ylabel("speedup over the Cortex-A9 (x, log)")
    ax.set_title(f"{report.model}: per-layer speedup and what Amdahl's law leaves ({report.config_name})")
    ax.legend(fontsize=8)
    return _save(fig, out_dir, "layer_speedup")


def roofline(report, points_no_lh: dict, out_dir: Path, config) -> list[Path]:
    """``points_no_lh``: layer name -> (ops per byte, GOPS) without latency hiding."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 5))
    peak = config.peak_ops_per_s / 1e9
    bw = config.mem_bytes_per_s / 1e9
    x = np.logspace(0, 3.5, 200)
    ax.plot(x, np.minimum(peak, bw * x), color="black", label=f"roof: {peak:.1f} GOPS, {bw:.2f} GB/s")
    convs = [r for r in report.records if r.placement == "vdla" and r.op == "conv" and r.bytes]
    ax.scatter([2 * r.macs / r.bytes for r in convs], [2 * r.macs / r.seconds / 1e9 for r in convs],
               color="#2b8cbe", label="ours, latency hiding", zorder=3)
    if points_no_lh:
        ax.scatter([p[0] for p in points_no_lh.values()], [p[1] for p in points_no_lh.values()], facecolors="none",
                   edgecolors="#2b8cbe", label="ours, no latency hiding", zorder=3)
    fig10 = paper.fig10()
    ax.scatter([p["ops_per_byte"] for p in fig10], [p["gops_latency_hiding"] for p in fig10], marker="^",
               color="#e6550d", label="paper Fig. 10, latency hiding (51.2 GOPS roof)")
    ax.scatter([p["ops_per_byte"] for p in fig10], [p["gops_no_latency_hiding"] for p in fig10], marker="^",
               facecolors="none", edgecolors="#e6550d", label="paper Fig. 10, no latency hiding")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (ops per DRAM byte)")
    ax.set_ylabel("throughput (GOPS)")
    ax.set_title(f"Roofline of the offloaded convolutions ({config.name})")
    ax.legend(fontsize=7, loc="lower right")
    return _save(fig, out_dir, "roofline")


def timeline(report, layer: str, out_dir: Path) -> list[Path]:
    """Instruction spans per module of one offloaded layer, from its simulation: the whole layer
    and, below, a zoom on its first instructions so single loads, GEMMs and stores show."""
    plt = _pyplot()
    record = next(r for r in report.records if r.name == layer)
    sim = record.extra["run"]
    modules = ("load", "compute", "store")
    spans = {m: [(start, end - start) for name, start, end in (r for r in sim.retire if r)
                 if name == m and end > start] for m in modules}
    compute_starts = sorted(start for start, _ in spans["compute"])
    views = [(sim.cycles, "whole layer")]
    if len(compute_starts) > ZOOM_INSNS:
        views.append((compute_starts[ZOOM_INSNS], f"first {ZOOM_INSNS} compute instructions"))
    fig, axes = plt.subplots(len(views), 1, figsize=(10, 2.5 * len(views)), squeeze=False)
    for ax, (hi, what) in zip(axes[:, 0], views):
        lo = 0
        for row, module in enumerate(modules):
            ax.broken_barh(spans[module], (row - 0.35, 0.7), facecolors=list(COLORS.values())[row],
                           edgecolors="white", linewidth=0.3)
        ax.set_xlim(lo, hi)
        ax.set_yticks(range(len(modules)), modules)
        ax.set_xlabel(f"cycle ({what})")
    axes[0, 0].set_title(f"{layer}: load / compute / store overlap ({report.config_name}, {sim.cycles:,} cycles, "
                      f"GEMM utilisation {record.utilization * 100:.0f}%)")
    fig.tight_layout()
    return _save(fig, out_dir, "timeline")
