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
   0.8 GB/s). Points with latency hiding carry layer labels, placed clear of each other, the
   points and the lines; each point without latency hiding is joined to its layer's.
4. ``timeline``: load/compute/store activity of one offloaded layer (instruction spans from the
   simulator; by default the one whose load and compute overlap least, :func:`timeline_layer`),
   its overlap and GEMM utilisation of every lane and of the useful MACs in the title.

Each figure's data is also a table (:func:`rows`, written as ``NAME.csv`` beside it by
``vdla run --plots``): every bar, point or span it draws, unrounded.

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
FORMATS = ("png", "pdf")  # and its data as NAME.csv (:func:`rows`)


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
    runs = [r.extra["run"] for r in getattr(report, "records", ()) if getattr(r.extra.get("run"), "config", None)]
    cpu_model = report.totals.get("cpu_model") or {}
    paper_cpu = ((cpu_model.get("baseline") or {}).get("name"), cpu_model.get("threads", 1)) == PAPER_CPU
    return {"bars": bars, "beside_paper": beside_paper, "name": Path(report.model).name,
            "resolution": report.resolution, "config_name": report.config_name,
            "clock_mhz": runs[0].config.CLOCK_MHZ if runs else None, "paper_clock_mhz": paper_clock_mhz(),
            "paper_cpu": paper_cpu}


PAPER_PRESET = "vta-pynq"  # the system the paper measured (Fig. 10 and 21): VTA's PYNQ build


def paper_clock_mhz() -> float:
    """The clock of the system the paper measured (the :data:`PAPER_PRESET` preset's)."""
    from vdla_hw.config import load_config

    return load_config(PAPER_PRESET).CLOCK_MHZ


def like_for_like(d: dict) -> str:
    """What the Fig. 21 title says of our VDLA bar beside the paper's: whether the clocks match."""
    ours, theirs = d.get("clock_mhz"), d.get("paper_clock_mhz")
    if ours is None or theirs is None:
        return ""
    if ours != theirs:
        return (f"not like for like: our VDLA simulated at {ours:g} MHz, the paper's measured at {theirs:g} MHz "
                f"({PAPER_PRESET})")
    return f"both VDLA systems at {ours:g} MHz (ours simulated, the paper's measured on {PAPER_PRESET})"


def bar_decimals(values, digits: int = 3, most: int = 3) -> int:
    """One number of decimals for every bar's value: ``digits`` significant digits of the smallest
    (at most ``most`` decimals), so that no bar reads coarser than another ("1.1 s" beside
    "0.387 s")."""
    smallest = min((v for v in values if v > 0), default=1.0)
    return int(min(most, max(0, digits - 1 - np.floor(np.log10(smallest)))))


def _draw_fig21(d: dict):
    bars, beside_paper = d["bars"], d["beside_paper"]
    tallest = max(sum(v.get(c, 0.0) for c in CATEGORIES) for _, v, _ in bars)
    scale, unit = (1.0, "s") if tallest >= 1 else (1e3, "ms")  # a readable scale for small networks
    decimals = bar_decimals([sum(v.get(c, 0.0) for c in CATEGORIES) * scale for _, v, _ in bars])
    fig, ax = _figure(figsize=(8.5 if beside_paper else 6.5, 4.5))
    for i, (_, values, hatched) in enumerate(bars):
        bottom = 0.0
        for cat in CATEGORIES:
            value = values.get(cat, 0.0) * scale
            ax.bar(i, value, bottom=bottom, color=COLORS[cat], edgecolor="black", linewidth=0.5,
                   hatch="//" if hatched else None, label=LABELS[cat] if i == 0 else None)
            bottom += value
        ax.text(i, bottom, f"{bottom:.{decimals}f} {unit}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(bars)), [b[0] for b in bars], fontsize=8)
    ax.set_ylabel(f"inference time ({unit})")
    ax.set_ylim(0, 1.12 * tallest * scale)
    name = d["name"]
    where = "beside TVM Fig. 21 (hatched; the paper's 'other' includes its host work)" if beside_paper else \
        f"{name} at {d['resolution']}x{d['resolution']}: no paper measurement to compare"
    if beside_paper and not d.get("paper_cpu", True):
        where += ("\nour CPU bars are another system than the paper's (its: --cpu-baseline tcpu "
                  "--cpu-threads 2, experiments.tvm_fig21)")
    clocks = like_for_like(d) if beside_paper else ""
    ax.set_title(f"{name}: CPU only vs CPU + VDLA ({d['config_name']})\n{where}" + (f"\n{clocks}" if clocks else ""),
                 fontsize=9)
    _legend_outside(ax, title="category")
    return fig


def layer_speedup(report, out_dir: Path, outputs=None) -> list[Path]:
    return save("layer_speedup", render("layer_speedup", layer_speedup_data(report)), out_dir, outputs)


def layer_speedup_data(report) -> dict:
    rows = [r for r in report.records if r.placement == "vdla" and r.seconds]
    t = report.totals
    return {"layers": [r.name for r in rows], "names": [short_name(r.name) for r in rows],
            "alone": [r.cpu_seconds / r.seconds for r in rows],
            "with_host": [r.cpu_seconds / (r.seconds + r.host_seconds) for r in rows],
            "speedup": t["speedup"], "amdahl_bound": t["amdahl_bound"], "name": Path(report.model).name,
            "config_name": report.config_name}


def _layer_speedup_rows(d: dict) -> list[dict]:
    """One row per offloaded op (its two bars), then the whole network's speedup and the Amdahl
    bound (the two horizontal lines), in ``speedup_with_host``."""
    rows = [{"layer": layer, "label": label, "speedup_alone": alone, "speedup_with_host": with_host}
            for layer, label, alone, with_host in zip(d["layers"], d["names"], d["alone"], d["with_host"])]
    return rows + [{"layer": "(whole network)", "label": "", "speedup_alone": "", "speedup_with_host": d["speedup"]},
                   {"layer": "(Amdahl bound)", "label": "", "speedup_alone": "", "speedup_with_host": d["amdahl_bound"]}]


STEPS_125 = (1.0, 2.0, 5.0)  # the log axes' major ticks (plain_log_ticks)


def log_limits_125(values) -> tuple[float, float]:
    """The widest 1-2-5 tick at or below the smallest of ``values`` and the narrowest at or above
    the largest: a log axis whose ticks cover every value."""
    def ticks(lo_exp, hi_exp):
        return [m * 10.0 ** e for e in range(lo_exp, hi_exp + 1) for m in STEPS_125]

    lo, hi = min(values), max(values)
    candidates = ticks(int(np.floor(np.log10(lo))) - 1, int(np.ceil(np.log10(hi))) + 1)
    return max(t for t in candidates if t <= lo * (1 + 1e-9)), min(t for t in candidates if t >= hi * (1 - 1e-9))


def _draw_layer_speedup(d: dict):
    fig, ax = _figure(figsize=(max(6.0, 0.35 * len(d["names"]) + 3), 4.5))
    x = np.arange(len(d["names"]))
    # bars grow from 1x, up for a speedup and down for a slowdown (from the axis' bottom edge, a
    # slowdown looked like a small speedup)
    for offset, values, color, label in ((-0.2, d["alone"], COLORS["conv"], "CPU time / accelerator time"),
                                         (0.2, d["with_host"], COLORS["host"], "CPU time / (accelerator + host) time")):
        ax.bar(x + offset, [v - 1.0 for v in values], 0.4, bottom=1.0, color=color, label=label)
    ax.axhline(d["speedup"], color="black", linestyle="--", label=f"whole network {d['speedup']:.2f}x")
    ax.axhline(d["amdahl_bound"], color="red", linestyle=":", label=f"Amdahl bound {d['amdahl_bound']:.2f}x")
    ax.axhline(1.0, color="grey", linewidth=0.6)
    ax.set_yscale("log")
    plain_log_ticks(ax.yaxis)
    ax.set_ylim(*log_limits_125([*d["alone"], *d["with_host"], d["speedup"], d["amdahl_bound"], 1.0]))
    ax.set_xticks(x, d["names"], rotation=70, fontsize=7)
    ax.set_ylabel("speedup over the CPU (x, log scale; below 1: slower)")
    ax.set_title(f"{d['name']}: per-layer speedup and what Amdahl's law leaves ({d['config_name']})", fontsize=9)
    _legend_outside(ax)
    return fig


def _roof(ax, peak: float, bw: float, label: str, span: tuple[float, float], color="black") -> None:
    x = np.logspace(np.log10(span[0]), np.log10(span[1]), 200)
    ax.plot(x, np.minimum(peak, bw * x), color=color, label=label)


def _span(values, margin: float = 1.5) -> tuple[float, float]:
    """A log axis range around ``values`` (the points and the roofs' ridge points): ``margin``
    times beyond the extremes, so that the axis ends near the data."""
    values = [v for v in values if v > 0]
    return min(values) / margin, max(values) * margin


# Where a point's label may go, in order of preference: (dx, dy) in points from the point, and
# the label's alignment; the farther ones get a leader line to their point.
LABEL_SPOTS = [(4, 2, "left", "bottom"), (4, -2, "left", "top"), (-4, 2, "right", "bottom"),
               (-4, -2, "right", "top"), (0, 6, "center", "bottom"), (0, -6, "center", "top"),
               (12, 10, "left", "bottom"), (12, -10, "left", "top"), (-12, 10, "right", "bottom"),
               (-12, -10, "right", "top"), (0, 16, "center", "bottom"), (0, -16, "center", "top"),
               (22, 18, "left", "bottom"), (22, -18, "left", "top"), (-22, 18, "right", "bottom"),
               (-22, -18, "right", "top")]


def _obstacles(ax, points) -> np.ndarray:
    """What a label must not cover, as (x, y, radius) in pixels: every point (``points``, in data
    units; a marker's half size and a margin) and the lines drawn (the roof, the pairs' lines),
    sampled a few pixels apart."""
    marker = 4.5 * ax.figure.dpi / 72  # scatter's default marker is 6 points across
    out = [np.column_stack([ax.transData.transform(points), np.full(len(points), marker)])] if points else []
    for line in ax.lines:
        xy = ax.transData.transform(line.get_xydata())
        steps = np.maximum(1, (np.hypot(*np.diff(xy, axis=0).T) / 3).astype(int))
        dense = np.concatenate([np.linspace(a, b, n, endpoint=False) for a, b, n in zip(xy[:-1], xy[1:], steps)]
                               + [xy[-1:]])
        out.append(np.column_stack([dense, np.ones(len(dense))]))
    return np.concatenate(out) if out else np.zeros((0, 3))


def _label_points(ax, xs, ys, labels, color, avoid=()) -> list:
    """One label per point, placed where it covers no other label, no point (``xs, ys`` and
    ``avoid``: more (x, y) in data units) and no line, and stays inside the axes: the first such
    place of :data:`LABEL_SPOTS` (the last one if none is free). Names of layers that land on the
    same spot (repeated shapes) are joined, each name written once. Call after the axes' limits
    and place are final. Returns the labels (matplotlib annotations)."""
    from matplotlib.text import Text

    spots: dict[tuple, list[str]] = {}
    for x, y, text in zip(xs, ys, labels):
        names = spots.setdefault((round(np.log10(x), 2), round(np.log10(y), 2)), [])
        if text not in names:
            names.append(text)
    renderer = ax.figure.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    obstacles = _obstacles(ax, [*zip(xs, ys), *avoid])
    placed, boxes = [], []
    # the highest points first: they sit under the roof, where room is scarcest
    for (lx, ly), names in sorted(spots.items(), key=lambda item: -item[0][1]):
        for k, (dx, dy, ha, va) in enumerate(LABEL_SPOTS):
            label = ax.annotate(", ".join(names), (10 ** lx, 10 ** ly), textcoords="offset points", xytext=(dx, dy),
                                ha=ha, va=va, fontsize=6, color=color,
                                arrowprops={"arrowstyle": "-", "color": color, "lw": 0.4} if k >= 6 else None)
            label.update_positions(renderer)  # where the text goes (else set only when drawn)
            box = Text.get_window_extent(label, renderer)  # the text's own box (an annotation's adds its line)
            px, py, r = obstacles.T
            covers = ((px >= box.x0 - r) & (px <= box.x1 + r) & (py >= box.y0 - r) & (py <= box.y1 + r)).any()
            free = frame.contains(box.x0, box.y0) and frame.contains(box.x1, box.y1) and not covers and \
                not any(box.overlaps(other) for other in boxes)
            if free or k == len(LABEL_SPOTS) - 1:
                boxes.append(box)
                placed.append(label)
                break
            label.remove()
    return placed


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
    """The roofline's points: per offloaded conv (``layers``, ``names``: its label, the paper's
    Fig. 10 name at ResNet-18 224) its ops per byte and GOPS with latency hiding (``xs``,
    ``ys``), its useful GOPS when its lanes are padded (``useful``, else None) and, from
    ``points_no_lh`` (layer name -> (ops per byte, GOPS, useful GOPS) of its one-thread program),
    the same without latency hiding (``no_lh``, None for a layer without one); the roofs; the
    paper's Fig. 10 rows beside ResNet-18 at 224."""
    from compiler.network.report import useful_work

    with_paper = paper.is_fig21_setting(report.model, report.resolution)
    convs = [r for r in report.records if r.placement == "vdla" and r.op == "conv" and r.bytes]
    names = []
    for r in convs:
        layer = r.extra.get("layer")
        label = paper.fig10_label_of(layer) if layer is not None and with_paper else None
        names.append(label or short_name(r.name))
    no_lh = [points_no_lh.get(r.name) for r in convs]
    return {"with_paper": with_paper, "config_name": config.name, "peak": config.peak_ops_per_s / 1e9,
            "bw": config.mem_bytes_per_s / 1e9, "layers": [r.name for r in convs],
            "xs": [2 * r.macs / r.bytes for r in convs], "ys": [2 * r.macs / r.seconds / 1e9 for r in convs],
            "useful": [useful_work(r)["useful_gops"] if r.useful_macs != r.macs else None for r in convs],
            "names": names, "no_lh": [tuple(p[:2]) if p else None for p in no_lh],
            "fig10": paper.fig10() if with_paper else [], "name": Path(report.model).name}


def _roofline_rows(d: dict) -> list[dict]:
    """One row per point pair: ours (each offloaded conv; ``label`` is what the figure writes
    beside it) and, beside ResNet-18 at 224, the paper's Fig. 10; each with its panel's roof."""
    rows = []
    for layer, label, x, y, useful, no_lh in zip(d["layers"], d["names"], d["xs"], d["ys"], d["useful"], d["no_lh"]):
        rows.append({"panel": "ours", "layer": layer, "label": label, "ops_per_byte": x, "gops_latency_hiding": y,
                     "useful_gops_latency_hiding": "" if useful is None else useful,
                     "ops_per_byte_no_latency_hiding": no_lh[0] if no_lh else "",
                     "gops_no_latency_hiding": no_lh[1] if no_lh else "", "roof_gops": d["peak"], "roof_gbps": d["bw"]})
    roof = paper.FIG10_ROOF
    for p in d["fig10"]:
        rows.append({"panel": "paper Fig. 10", "layer": "", "label": p["label"], "ops_per_byte": p["ops_per_byte"],
                     "gops_latency_hiding": p["gops_latency_hiding"], "useful_gops_latency_hiding": "",
                     "ops_per_byte_no_latency_hiding": p["ops_per_byte"],
                     "gops_no_latency_hiding": p["gops_no_latency_hiding"], "roof_gops": roof["gops"],
                     "roof_gbps": roof["gbps"]})
    return rows


def _pairs(ax, with_lh, without, color) -> None:
    """A thin line from each point without latency hiding to the same layer's point with it."""
    for (x0, y0), (x1, y1) in zip(with_lh, without):
        ax.plot([x0, x1], [y0, y1], color=color, linewidth=0.6, alpha=0.6, zorder=2)


def _draw_roofline(d: dict):
    with_paper, peak, bw, xs, ys, fig10 = d["with_paper"], d["peak"], d["bw"], d["xs"], d["ys"], d["fig10"]
    pairs = [((x, y), p) for x, y, p in zip(xs, ys, d["no_lh"]) if p]
    no_lh = [p for _, p in pairs]
    roof = paper.FIG10_ROOF
    px = [p["ops_per_byte"] for p in fig10]
    # one x range for both panels, around the points and the ridge points (it ran to 3x past them)
    span = _span([*xs, *(p[0] for p in no_lh), peak / bw, *px] + ([roof["gops"] / roof["gbps"]] if fig10 else []))
    gops = [*ys, *(p[1] for p in no_lh), *(u for u in d["useful"] if u is not None),
            *(p[k] for p in fig10 for k in ("gops_latency_hiding", "gops_no_latency_hiding"))]
    ylim = (min(gops, default=peak) / 1.5, max(peak, roof["gops"] if fig10 else peak) * 1.6)
    fig, axes = _figure(1, 2 if with_paper else 1, figsize=(12 if with_paper else 7, 5), squeeze=False)
    ax = axes[0, 0]
    _roof(ax, peak, bw, f"roof of {d['config_name']}: {peak:.1f} GOPS, {bw:.2f} GB/s", span)
    ax.scatter(xs, ys, color="#2b8cbe", label="latency hiding (labelled)", zorder=3)
    padded = [(x, u) for x, u in zip(xs, d["useful"]) if u is not None]
    if padded:
        ax.scatter([p[0] for p in padded], [p[1] for p in padded], marker="x", color="#2b8cbe",
                   label="useful GOPS (padded lanes left out)", zorder=3)
    if no_lh:
        ax.scatter([p[0] for p in no_lh], [p[1] for p in no_lh], facecolors="none", edgecolors="#2b8cbe",
                   label="no latency hiding (joined to it)", zorder=3)
        _pairs(ax, [w for w, _ in pairs], no_lh, "#2b8cbe")
    _log_axes(ax)
    ax.set_xlim(*span)
    ax.set_ylim(*ylim)
    ax.set_ylabel("throughput (GOPS)")
    ax.set_title(f"ours: {d['name']} convolutions on {d['config_name']}", fontsize=9)
    ax.legend(loc="upper left", bbox_to_anchor=(0.0, -0.14), fontsize=7, ncol=2)
    right = axes[0, 1] if with_paper else None
    if right is not None:
        _roof(right, roof["gops"], roof["gbps"], f"paper's roof: {roof['gops']} GOPS, {roof['gbps']} GB/s", span,
              color="#e6550d")
        lh = [p["gops_latency_hiding"] for p in fig10]
        without = [p["gops_no_latency_hiding"] for p in fig10]
        right.scatter(px, lh, marker="^", color="#e6550d", label="latency hiding (labelled)", zorder=3)
        right.scatter(px, without, marker="^", facecolors="none", edgecolors="#e6550d",
                      label="no latency hiding (joined to it)", zorder=3)
        _pairs(right, list(zip(px, lh)), list(zip(px, without)), "#e6550d")
        _log_axes(right)
        right.set_xlim(*span)
        right.set_ylim(*ylim)
        right.set_title("TVM paper Fig. 10 (VTA's PYNQ build, 100 MHz)", fontsize=9)
        right.legend(loc="upper left", bbox_to_anchor=(0.0, -0.14), fontsize=7, ncol=2)
    fig.subplots_adjust(wspace=0.2)  # the outer margins come from the saved files' tight crop
    # labels last, when the axes' limits and place are final (they are placed in pixels)
    _label_points(ax, xs, ys, d["names"], "#2b8cbe", avoid=[*no_lh, *padded])
    if right is not None:
        _label_points(right, px, lh, [p["label"] for p in fig10], "#e6550d", avoid=list(zip(px, without)))
    return fig


def timeline(report, layer: str, out_dir: Path, outputs=None) -> list[Path]:
    """Instruction spans per module of one offloaded layer, from its simulation: the whole layer
    and, below, a zoom on its first instructions so single loads, GEMMs and stores show."""
    return save("timeline", render("timeline", timeline_data(report, layer)), out_dir, outputs)


TIMELINE_MODULES = isa.EXEC_MODULES
TIMELINE_COLORS = {"load": "#54278f", "compute": COLORS["conv"], "store": "#e6550d"}
TIMELINE_WHAT = {"load": "load module: LOADs of inputs and weights",  # vdla_hw/timing.py: who does what
                 "compute": "compute module: GEMM, ALU, LOADs of uops and accumulators",
                 "store": "store module: STOREs of outputs"}


def _spans(sim) -> dict[str, list[tuple[int, int]]]:
    """Per module, its instruction spans (start cycle, cycles) in a simulation."""
    return {m: [(start, end - start) for name, start, end in (r for r in sim.retire if r) if name == m and end > start]
            for m in TIMELINE_MODULES}


def _busy(spans) -> list[tuple[int, int]]:
    """The cycles covered by ``spans`` as disjoint (start, end) intervals, in order."""
    merged: list[list[int]] = []
    for start, length in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], start + length)
        else:
            merged.append([start, start + length])
    return [(a, b) for a, b in merged]


def overlap(spans: dict) -> float:
    """How much of the load and compute modules' work overlaps: the cycles when both are busy
    over the busy cycles of the less busy of the two (1: the shorter one is wholly hidden under
    the other; 0: they take turns). 1 when either never works."""
    load, compute = _busy(spans["load"]), _busy(spans["compute"])
    shorter = min(sum(b - a for a, b in load), sum(b - a for a, b in compute))
    if not shorter:
        return 1.0
    both, i, j = 0, 0, 0
    while i < len(load) and j < len(compute):
        both += max(0, min(load[i][1], compute[j][1]) - max(load[i][0], compute[j][0]))
        if load[i][1] < compute[j][1]:
            i += 1
        else:
            j += 1
    return both / shorter


def timeline_layers(report) -> list:
    """The records a timeline can show: offloaded ops with a simulation's instruction spans."""
    return [r for r in report.records if r.placement == "vdla" and getattr(r.extra.get("run"), "retire", None)]


def timeline_layer(report, name: str | None = None) -> tuple[str, str]:
    """The layer the timeline shows and why: ``name`` (``--timeline-layer``) if given, else the
    offloaded layer whose load and compute overlap least (:func:`overlap`; the first of equals),
    where overlap is the question. Raises ``VdlaError`` naming a layer it cannot show."""
    from vdla_hw.errors import VdlaError

    shown = timeline_layers(report)
    if name is not None:
        if name not in {r.name for r in shown}:
            raise VdlaError(f"--timeline-layer {name}: no offloaded layer of that name in {Path(report.model).name} "
                            f"(offloaded: {', '.join(r.name for r in shown) or 'none'})")
        return name, "chosen with --timeline-layer"
    worst = min(shown, key=lambda r: overlap(_spans(r.extra["run"])))
    return worst.name, "the offloaded layer whose load and compute overlap least; --timeline-layer picks another"


def timeline_data(report, layer: str, why: str = "") -> dict:
    from compiler.network.report import useful_work

    record = next(r for r in report.records if r.name == layer)
    sim = record.extra["run"]
    spans = _spans(sim)
    return {"layer": layer, "why": why, "spans": spans, "cycles": sim.cycles, "config_name": report.config_name,
            "overlap": overlap(spans), "utilization": record.utilization,
            "useful_utilization": useful_work(record)["useful_utilization"]}


def _timeline_rows(d: dict) -> list[dict]:
    """One row per instruction span of the layer shown (its module, first cycle and cycles)."""
    return [{"layer": d["layer"], "module": module, "start_cycle": start, "cycles": length}
            for module in TIMELINE_MODULES for start, length in d["spans"][module]]


def _draw_timeline(d: dict):
    from matplotlib.patches import Patch

    spans, layer = d["spans"], d["layer"]
    compute_starts = sorted(start for start, _ in spans["compute"])
    views = [(d["cycles"], "whole layer")]
    if len(compute_starts) > ZOOM_INSNS:
        views.append((compute_starts[ZOOM_INSNS], f"first {ZOOM_INSNS} compute instructions"))
    fig, axes = _figure(len(views), 1, figsize=(10, 2.5 * len(views)), squeeze=False)
    for ax, (hi, what) in zip(axes[:, 0], views):
        for row, module in enumerate(TIMELINE_MODULES):
            # the spans that start in view: the others would be drawn only to be clipped away;
            # no edges (white edges between thousands of short loads washed their track out)
            shown = [span for span in spans[module] if span[0] <= hi]
            ax.broken_barh(shown, (row - 0.35, 0.7), facecolors=TIMELINE_COLORS[module], edgecolors="none",
                           linewidth=0, rasterized=True)
        top = len(TIMELINE_MODULES) - 1 - 0.35 + 0.7  # the top of the last row, computed as broken_barh does
        ax.update_datalim([(0, -0.35), (0, top)])  # every row's band, shown or not
        ax.set_xlim(0, hi)
        ax.set_yticks(range(len(TIMELINE_MODULES)), TIMELINE_MODULES)
        ax.set_xlabel(f"cycle ({what})")
    _legend_outside(axes[0, 0], title="instruction spans",
                    handles=[Patch(color=TIMELINE_COLORS[m], label=TIMELINE_WHAT[m]) for m in reversed(TIMELINE_MODULES)])
    axes[0, 0].set_title(f"{layer}: load / compute / store overlap {d['overlap'] * 100:.0f}% ({d['config_name']}, "
                         f"{d['cycles']:,} cycles, GEMM utilisation {d['utilization'] * 100:.0f}%, of useful MACs "
                         f"{d['useful_utilization'] * 100:.0f}%)" + (f"\n{d['why']}" if d["why"] else ""), fontsize=9)
    fig.subplots_adjust(hspace=0.45)  # room for the upper view's cycle axis; outer margins: the tight crop
    return fig


def _fig21_rows(d: dict) -> list[dict]:
    """One row per bar: which system (its label on one line; ``paper``: the paper's measured bar),
    its seconds per category (stacked in the figure) and their total (written above the bar)."""
    return [{"bar": label.replace("\n", " "), "source": "paper" if hatched else "ours",
             **{cat: values.get(cat, 0.0) for cat in CATEGORIES},
             "total_s": sum(values.get(cat, 0.0) for cat in CATEGORIES)} for label, values, hatched in d["bars"]]


_DRAW = {"fig21_breakdown": _draw_fig21, "layer_speedup": _draw_layer_speedup, "roofline": _draw_roofline,
         "timeline": _draw_timeline}
_ROWS = {"fig21_breakdown": _fig21_rows, "layer_speedup": _layer_speedup_rows, "roofline": _roofline_rows,
         "timeline": _timeline_rows}
# what each figure shows, for the results folder's README.md (vdla.cmd_run.results_readme)
ABOUT = {"fig21_breakdown": "inference time by category, CPU only vs CPU + VDLA (like the TVM paper's Fig. 21; "
                            "the paper's measured bars beside ours, hatched, for ResNet-18 at 224 only)",
         "layer_speedup": "per offloaded op: CPU time over accelerator time, without and with the host's work "
                          "around it; the whole network's speedup and the Amdahl bound",
         "roofline": "GOPS against ops per DRAM byte of every offloaded conv, with and without latency hiding, "
                     "under the configuration's roof (the paper's Fig. 10 beside it for ResNet-18 at 224)",
         "timeline": "the instruction spans of the load, compute and store modules during one offloaded layer"}


def rows(name: str, data: dict) -> list[dict]:
    """What figure ``name`` shows, from its data (``NAME_data``), as rows for ``NAME.csv``: every
    point, bar or span it draws, with the values drawn (unrounded)."""
    return _ROWS[name](data)
