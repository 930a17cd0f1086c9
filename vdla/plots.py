"""The four figures of the offload study (PNG and PDF), from a :class:`vdla.network.NetworkReport`.

1. ``fig21_breakdown``: stacked bars CPU-only vs CPU + VDLA by category (stem, other convs,
   other ops, host work around offloads); the paper's Fig. 21 bars stand beside ours only for
   ResNet-18 at 224x224, the setting the paper measured. Any other network gets its own bars at
   its own scale.
2. ``layer_speedup``: per-layer speedup of offloaded ops (CPU time / (accelerator + host time)
   and accelerator alone), the whole-network speedup and the Amdahl bound.
3. ``roofline``: GOPS vs ops/byte of every offloaded conv with and without latency hiding under
   this configuration's roofs (ops of every GEMM lane; crosses mark the useful GOPS of the
   layers whose lanes are padded, e.g. a stem with 3 of 16 input channels); beside it, for
   ResNet-18 at 224, the paper's Fig. 10 points under the paper's own roof (51.2 GOPS,
   0.8 GB/s). Points carry layer labels.
4. ``timeline``: load/compute/store activity of one layer (instruction spans from the simulator),
   its GEMM utilisation of every lane and of the useful MACs in the title.

Log axes read as plain numbers; legends sit outside the data. Each function writes
``OUT_DIR/NAME.png`` and ``.pdf`` (:data:`FIGURES`, :data:`FORMATS`); given ``outputs`` (a
:class:`vdla.outputs.Outputs`), it stages them there for the caller's commit. Each is two steps
that can run in different processes: ``NAME_data(report, ...)`` takes from the report the plain
values the figure shows (small to pickle: no simulator state), and :func:`render` draws them as
``{ext: bytes}``; :func:`save` writes those. ``vdla run --plots`` renders in its figure worker
(:mod:`vdla.figure_worker`), which gives the same bytes.

Made for speed (the figures are part of the main job's time): matplotlib's object API without
pyplot (no figure manager, no GUI backend), the tight bounding box computed once per figure for
both formats (``bbox_inches="tight"`` measures every text again for each file), PNG written with
zlib level 1, no ``tight_layout`` (a full layout pass, 0.4 s of the roofline's 1 s of CPU: the
two-panel figures set their inner spacing, and the crop to the tight bounding box makes the outer
margins), the timeline's zoom given only the instruction spans that start in view (the rest
would be clipped away), and the timeline's thousands of instruction spans rasterized in the PDF
(an image at the PNG's resolution inside the vector figure; axes, labels and text stay vector).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from compiler import paper
from vdla_hw import isa

CATEGORIES = ("layer0", "conv", "other", "host")
LABELS = {"layer0": "stem conv (layer 0)", "conv": "other convolutions", "other": "other ops",
          "host": "host around offloads"}
COLORS = {"layer0": "#8c6bb1", "conv": "#2b8cbe", "other": "#fdae6b", "host": "#74c476"}
ZOOM_INSNS = 40  # the timeline zooms on this many compute instructions when a layer has more
FIGURES = ("fig21_breakdown", "layer_speedup", "roofline", "timeline")  # each written as every FORMATS
FORMATS = ("png", "pdf")


DPI = 150  # of the PNG, and of the PDF's rasterized parts
# zlib level 1 for the PNG: the same pixels, written about 4x faster than the default level 6
SAVE_OPTIONS = {"png": {"pil_kwargs": {"compress_level": 1}}, "pdf": {}}


def _figure(nrows: int = 1, ncols: int = 1, **kwargs):
    """A figure and its axes (as ``pyplot.subplots``) on an Agg canvas, without pyplot."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=kwargs.pop("figsize"), dpi=DPI)
    FigureCanvasAgg(fig)
    return fig, fig.subplots(nrows, ncols, **kwargs)


def _render(fig) -> dict[str, bytes]:
    """The figure as the bytes of every :data:`FORMATS`, cropped to its tight bounding box
    (measured once on the Agg canvas, for both formats)."""
    import io

    import matplotlib

    bbox = fig.get_tightbbox(fig.canvas.get_renderer()).padded(matplotlib.rcParams["savefig.pad_inches"])
    files = {}
    for ext in FORMATS:
        buf = io.BytesIO()
        fig.savefig(buf, format=ext, dpi=DPI, bbox_inches=bbox, **SAVE_OPTIONS[ext])
        files[ext] = buf.getvalue()
    return files


def render(name: str, data: dict) -> dict[str, bytes]:
    """Figure ``name`` (:data:`FIGURES`) drawn from its data (``NAME_data``: plain values, which
    pickle small, so that another process can draw it: :mod:`vdla.figure_worker`) as
    ``{ext: bytes}`` for every :data:`FORMATS`."""
    return _render(_DRAW[name](data))


def save(name: str, files: dict[str, bytes], out_dir: Path, outputs=None) -> list[Path]:
    """``out_dir/NAME.EXT`` for every rendered format: staged in ``outputs`` (a
    :class:`vdla.outputs.Outputs`, put in place by its commit) or, without one, each written whole."""
    from vdla.outputs import write_file

    write = outputs.write if outputs is not None else write_file
    return [write(out_dir / f"{name}.{ext}", files[ext]) for ext in FORMATS]


def plain_log_ticks(axis) -> None:
    """Ticks of a log axis as plain numbers (0.5, 2, 10, 100), not powers of ten."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))


def _legend_outside(ax, **kwargs) -> None:
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, fontsize=8, **kwargs)


def short_name(name: str) -> str:
    """``layer2.0.downsample.0`` -> ``l2.0.ds``: layer labels that fit beside a point."""
    name = re.sub(r"^layer", "l", name)
    return name.replace(".downsample.0", ".ds").replace(".conv", ".c")


def fig21_breakdown(report, out_dir: Path, outputs=None) -> list[Path]:
    return save("fig21_breakdown", render("fig21_breakdown", fig21_data(report)), out_dir, outputs)


# What the paper's bars measured: the TVM paper's Fig. 21 values are those of its authors'
# ReQuEST'18 artifact (ctuning/ck-request-asplos18-resnet-tvm-fpga), which runs the one quantized
# graph with target "llvm -device=vta" and, for CPU-only inference, "-device=tcpu" (int8 on both
# A9 cores, VTA's 2018 conv schedules: what CPU baseline "tcpu" on 2 threads models)
PAPER_SYSTEMS = ("measured: int8 graph\non 2 A9 cores (-device=tcpu)", "measured: VDLA\n(-device=vta)")
PAPER_CPU = ("tcpu", 2)  # (baseline, threads) of the paper's CPU system in our CPU model


def cpu_system(cpu_model: dict | None) -> str:
    """Which CPU system our CPU-only bar models: the CPU, its kernels' baseline and the cores."""
    if not cpu_model:
        return "CPU"
    baseline = (cpu_model.get("baseline") or {}).get("name", "")
    threads = cpu_model.get("threads", 1)
    return f"{cpu_model.get('name', 'CPU')}, {baseline or 'int8'}, {threads} core{'s' if threads > 1 else ''}"


def fig21_data(report) -> dict:
    """The bars of the Fig. 21 panel, each label saying which system it is: ours modelled (CPU:
    the CPU model's CPU, baseline and cores) or simulated (VDLA: the configuration), the paper's
    measured (:data:`PAPER_SYSTEMS`)."""
    ours = report.totals["categories"]
    cpu = cpu_system(report.totals.get("cpu_model"))
    bars = [(f"CPU only\n(ours, modelled:\n{cpu})", ours["cpu_only"], False),
            (f"CPU + VDLA\n(ours, simulated:\n{report.config_name})", ours["cpu_plus_vdla"], False)]
    beside_paper = paper.is_fig21_setting(report.model, report.resolution)
    if beside_paper:
        theirs = paper.fig21()
        bars = [bars[0], (f"CPU only\n(paper, {PAPER_SYSTEMS[0]})", theirs["cpu_only"], True),
                bars[1], (f"CPU + VDLA\n(paper, {PAPER_SYSTEMS[1]})", theirs["cpu_plus_vdla"], True)]
    cpu_model = report.totals.get("cpu_model") or {}
    paper_cpu = ((cpu_model.get("baseline") or {}).get("name"), cpu_model.get("threads", 1)) == PAPER_CPU
    return {"bars": bars, "beside_paper": beside_paper, "name": Path(report.model).name,
            "resolution": report.resolution, "config_name": report.config_name, "paper_cpu": paper_cpu}


def _draw_fig21(d: dict):
    bars, beside_paper = d["bars"], d["beside_paper"]
    tallest = max(sum(v.get(c, 0.0) for c in CATEGORIES) for _, v, _ in bars)
    scale, unit = (1.0, "s") if tallest >= 1 else (1e3, "ms")  # a readable scale for small networks
    fig, ax = _figure(figsize=(8.5 if beside_paper else 6.5, 4.5))
    for i, (_, values, hatched) in enumerate(bars):
        bottom = 0.0
        for cat in CATEGORIES:
            value = values.get(cat, 0.0) * scale
            ax.bar(i, value, bottom=bottom, color=COLORS[cat], edgecolor="black", linewidth=0.5,
                   hatch="//" if hatched else None, label=LABELS[cat] if i == 0 else None)
            bottom += value
        ax.text(i, bottom, f"{bottom:.3g} {unit}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(bars)), [b[0] for b in bars], fontsize=8)
    ax.set_ylabel(f"inference time ({unit})")
    ax.set_ylim(0, 1.12 * tallest * scale)
    name = d["name"]
    where = "beside TVM Fig. 21 (hatched; the paper's 'other' includes its host work)" if beside_paper else \
        f"{name} at {d['resolution']}x{d['resolution']}: no paper measurement to compare"
    if beside_paper and not d.get("paper_cpu", True):
        where += ("\nour CPU bars are another system than the paper's (its: --cpu-baseline tcpu "
                  "--cpu-threads 2, experiments.tvm_fig21)")
    ax.set_title(f"{name}: CPU only vs CPU + VDLA ({d['config_name']})\n{where}", fontsize=9)
    _legend_outside(ax, title="category")
    return fig


def layer_speedup(report, out_dir: Path, outputs=None) -> list[Path]:
    return save("layer_speedup", render("layer_speedup", layer_speedup_data(report)), out_dir, outputs)


def layer_speedup_data(report) -> dict:
    rows = [r for r in report.records if r.placement == "vdla" and r.seconds]
    t = report.totals
    return {"names": [short_name(r.name) for r in rows], "alone": [r.cpu_seconds / r.seconds for r in rows],
            "with_host": [r.cpu_seconds / (r.seconds + r.host_seconds) for r in rows],
            "speedup": t["speedup"], "amdahl_bound": t["amdahl_bound"], "name": Path(report.model).name,
            "config_name": report.config_name}


def _draw_layer_speedup(d: dict):
    fig, ax = _figure(figsize=(max(6.0, 0.35 * len(d["names"]) + 3), 4.5))
    x = np.arange(len(d["names"]))
    ax.bar(x - 0.2, d["alone"], 0.4, color=COLORS["conv"], label="CPU time / accelerator time")
    ax.bar(x + 0.2, d["with_host"], 0.4, color=COLORS["host"], label="CPU time / (accelerator + host) time")
    ax.axhline(d["speedup"], color="black", linestyle="--", label=f"whole network {d['speedup']:.2f}x")
    ax.axhline(d["amdahl_bound"], color="red", linestyle=":", label=f"Amdahl bound {d['amdahl_bound']:.2f}x")
    ax.axhline(1.0, color="grey", linewidth=0.6)
    ax.set_yscale("log")
    plain_log_ticks(ax.yaxis)
    ax.set_xticks(x, d["names"], rotation=70, fontsize=7)
    ax.set_ylabel("speedup over the CPU (x, log scale)")
    ax.set_title(f"{d['name']}: per-layer speedup and what Amdahl's law leaves ({d['config_name']})", fontsize=9)
    _legend_outside(ax)
    return fig


def _roof(ax, peak: float, bw: float, label: str, span: tuple[float, float], color="black") -> None:
    x = np.logspace(np.log10(span[0]), np.log10(span[1]), 200)
    ax.plot(x, np.minimum(peak, bw * x), color=color, label=label)


def _span(*groups) -> tuple[float, float]:
    """An x range around the points and the ridge points of the roofs."""
    values = [v for group in groups for v in group if v > 0]
    return min(values) / 3, max(values) * 3


def _label_points(ax, xs, ys, labels, color) -> None:
    """One label per point: names of layers that land on the same spot (repeated shapes) are
    joined, each name written once."""
    spots: dict[tuple, list[str]] = {}
    for x, y, text in zip(xs, ys, labels):
        names = spots.setdefault((round(np.log10(x), 2), round(np.log10(y), 2)), [])
        if text not in names:
            names.append(text)
    for (lx, ly), names in spots.items():
        ax.annotate(", ".join(names), (10 ** lx, 10 ** ly), textcoords="offset points", xytext=(4, 3), fontsize=6,
                    color=color)


def log_log_axes(ax) -> None:
    """Both axes of ``ax`` logarithmic, their ticks written as plain numbers."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain_log_ticks(ax.xaxis)
    plain_log_ticks(ax.yaxis)


def _log_axes(ax) -> None:
    log_log_axes(ax)
    ax.set_xlabel("arithmetic intensity (ops per DRAM byte)")


def roofline(report, points_no_lh: dict, out_dir: Path, config, outputs=None) -> list[Path]:
    """``points_no_lh``: layer name -> (ops per byte, GOPS, useful GOPS) without latency hiding."""
    return save("roofline", render("roofline", roofline_data(report, points_no_lh, config)), out_dir, outputs)


def roofline_data(report, points_no_lh: dict, config) -> dict:
    from compiler.network.report import useful_work

    with_paper = paper.is_fig21_setting(report.model, report.resolution)
    convs = [r for r in report.records if r.placement == "vdla" and r.op == "conv" and r.bytes]
    xs = [2 * r.macs / r.bytes for r in convs]
    names = []
    for r in convs:
        layer = r.extra.get("layer")
        label = paper.fig10_label_of(layer) if layer is not None and with_paper else None
        names.append(label or short_name(r.name))
    return {"with_paper": with_paper, "config_name": config.name, "peak": config.peak_ops_per_s / 1e9,
            "bw": config.mem_bytes_per_s / 1e9, "xs": xs, "ys": [2 * r.macs / r.seconds / 1e9 for r in convs],
            "padded": [(x, useful_work(r)["useful_gops"]) for x, r in zip(xs, convs) if r.useful_macs != r.macs],
            "names": names, "no_lh": [p[:2] for p in points_no_lh.values()],
            "fig10": paper.fig10() if with_paper else [], "name": Path(report.model).name}


def _draw_roofline(d: dict):
    with_paper, peak, bw, xs, ys, fig10, no_lh = d["with_paper"], d["peak"], d["bw"], d["xs"], d["ys"], d["fig10"], d["no_lh"]
    fig, axes = _figure(1, 2 if with_paper else 1, figsize=(12 if with_paper else 7, 5), squeeze=False)
    ax = axes[0, 0]
    span = _span(xs, [p[0] for p in no_lh], [peak / bw],
                 [p["ops_per_byte"] for p in fig10], [paper.FIG10_ROOF["gops"] / paper.FIG10_ROOF["gbps"]] * bool(fig10))
    _roof(ax, peak, bw, f"roof of {d['config_name']}: {peak:.1f} GOPS, {bw:.2f} GB/s", span)
    ax.scatter(xs, ys, color="#2b8cbe", label="latency hiding", zorder=3)
    padded = d["padded"]
    if padded:
        ax.scatter([p[0] for p in padded], [p[1] for p in padded], marker="x", color="#2b8cbe",
                   label="useful GOPS (padded lanes left out)", zorder=3)
    _label_points(ax, xs, ys, d["names"], "#2b8cbe")
    if no_lh:
        ax.scatter([p[0] for p in no_lh], [p[1] for p in no_lh], facecolors="none",
                   edgecolors="#2b8cbe", label="no latency hiding", zorder=3)
    _log_axes(ax)
    ax.set_ylabel("throughput (GOPS)")
    ax.set_title(f"ours: {d['name']} convolutions on {d['config_name']}", fontsize=9)
    ax.legend(loc="upper left", bbox_to_anchor=(0.0, -0.14), fontsize=7, ncol=2)
    if with_paper:
        right = axes[0, 1]
        roof = paper.FIG10_ROOF
        _roof(right, roof["gops"], roof["gbps"], f"paper's roof: {roof['gops']} GOPS, {roof['gbps']} GB/s", span,
              color="#e6550d")
        px = [p["ops_per_byte"] for p in fig10]
        right.scatter(px, [p["gops_latency_hiding"] for p in fig10], marker="^", color="#e6550d",
                      label="latency hiding", zorder=3)
        right.scatter(px, [p["gops_no_latency_hiding"] for p in fig10], marker="^", facecolors="none",
                      edgecolors="#e6550d", label="no latency hiding", zorder=3)
        _label_points(right, px, [p["gops_latency_hiding"] for p in fig10], [p["label"] for p in fig10], "#e6550d")
        _log_axes(right)
        right.set_title("TVM paper Fig. 10 (VTA's PYNQ build, 100 MHz)", fontsize=9)
        right.legend(loc="upper left", bbox_to_anchor=(0.0, -0.14), fontsize=7, ncol=2)
        low = min(ax.get_ylim()[0], right.get_ylim()[0])
        for a in (ax, right):
            a.set_ylim(low, max(peak, roof["gops"]) * 1.6)
    fig.subplots_adjust(wspace=0.2)  # the outer margins come from the saved files' tight crop
    return fig


def timeline(report, layer: str, out_dir: Path, outputs=None) -> list[Path]:
    """Instruction spans per module of one offloaded layer, from its simulation: the whole layer
    and, below, a zoom on its first instructions so single loads, GEMMs and stores show."""
    return save("timeline", render("timeline", timeline_data(report, layer)), out_dir, outputs)


TIMELINE_MODULES = isa.EXEC_MODULES


def timeline_data(report, layer: str) -> dict:
    from compiler.network.report import useful_work

    record = next(r for r in report.records if r.name == layer)
    sim = record.extra["run"]
    spans = {m: [(start, end - start) for name, start, end in (r for r in sim.retire if r)
                 if name == m and end > start] for m in TIMELINE_MODULES}
    return {"layer": layer, "spans": spans, "cycles": sim.cycles, "config_name": report.config_name,
            "utilization": record.utilization, "useful_utilization": useful_work(record)["useful_utilization"]}


def _draw_timeline(d: dict):
    spans, layer = d["spans"], d["layer"]
    compute_starts = sorted(start for start, _ in spans["compute"])
    views = [(d["cycles"], "whole layer")]
    if len(compute_starts) > ZOOM_INSNS:
        views.append((compute_starts[ZOOM_INSNS], f"first {ZOOM_INSNS} compute instructions"))
    fig, axes = _figure(len(views), 1, figsize=(10, 2.5 * len(views)), squeeze=False)
    colors = (COLORS["layer0"], COLORS["conv"], COLORS["other"])
    for ax, (hi, what) in zip(axes[:, 0], views):
        for row, module in enumerate(TIMELINE_MODULES):
            # the spans that start in view: the others would be drawn only to be clipped away
            shown = [span for span in spans[module] if span[0] <= hi]
            ax.broken_barh(shown, (row - 0.35, 0.7), facecolors=colors[row], edgecolors="white", linewidth=0.3,
                           rasterized=True)
        top = len(TIMELINE_MODULES) - 1 - 0.35 + 0.7  # the top of the last row, computed as broken_barh does
        ax.update_datalim([(0, -0.35), (0, top)])  # every row's band, shown or not
        ax.set_xlim(0, hi)
        ax.set_yticks(range(len(TIMELINE_MODULES)), TIMELINE_MODULES)
        ax.set_xlabel(f"cycle ({what})")
    axes[0, 0].set_title(f"{layer}: load / compute / store overlap ({d['config_name']}, {d['cycles']:,} cycles, "
                         f"GEMM utilisation {d['utilization'] * 100:.0f}%, of useful MACs "
                         f"{d['useful_utilization'] * 100:.0f}%)", fontsize=9)
    fig.subplots_adjust(hspace=0.45)  # room for the upper view's cycle axis; outer margins: the tight crop
    return fig


_DRAW = {"fig21_breakdown": _draw_fig21, "layer_speedup": _draw_layer_speedup, "roofline": _draw_roofline,
         "timeline": _draw_timeline}
