"""The sweep's figures (PNG), per model:

1. ``pareto_<model>.png``: latency against each resource (LUT, FF, DSP, BRAM36); every point,
   filled where it fits the part and hollow where it does not, the part's usable capacity as a
   dashed line, and the 2-D Pareto front (latency vs that resource) as a step line.
2. ``sensitivity_<model>.png``: per swept parameter, the latency of every point at each value
   (dots) and the best one (line): how much each parameter moves the result.
3. ``energy_<model>.png``: energy per inference against latency, coloured by the share of the
   part used, with the latency-energy front.

Each title names the model and its input size (``at HxW``, from ``resolutions``); the values each
figure draws are the rows of the sweep's ``points.csv`` beside them.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from dse import parts as fpga
from dse.metrics import RESOURCES
from dse.pareto import pareto_rows

LABELS = {"lut": "LUT", "ff": "FF", "dsp": "DSP48", "bram36": "BRAM36"}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    _pyplot().close(fig)
    return path


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", Path(text).stem)


def _ok(rows, *keys):
    return [r for r in rows if r.get("status") == "ok" and all(isinstance(r.get(k), (int, float)) for k in keys)]


def fits_at_clock(row: dict, part: str) -> bool:
    """Filled in the figures: fits ``part`` and its clock is not above its clock estimate."""
    return bool(row.get(f"fits_{part}")) and row.get("clock_met") is not False


def _step(ax, front: list[dict], x: str, y: str, scale_x: float = 1.0):
    """The front as a step line through ringed points (a one-point front is just its ring)."""
    front = sorted(front, key=lambda r: r[x])
    xs = [r[x] * scale_x for r in front]
    ys = [r[y] * 1e3 for r in front]
    ax.step(xs, ys, where="post", color="black", lw=1.2)
    ax.plot(xs, ys, "o", mfc="none", mec="black", ms=9, label="Pareto front")


def about(model: str, resolution: tuple[int, ...] | None) -> str:
    """A figure's subject: the model and, when known, its input size (an image's H x W, or
    another input's whole shape, e.g. a transformer's 1 x tokens x channels)."""
    return f"{model} at {'x'.join(str(n) for n in resolution)}" if resolution else model


def pareto_figure(rows, model: str, out_dir: Path, part: str, resolution=None) -> Path:
    fig, axes = _pyplot().subplots(2, 2, figsize=(10, 7.5))
    cap = fpga.capacity(part)
    for ax, resource in zip(axes.flat, RESOURCES):
        pts = _ok(rows, "latency_s", resource)
        fit = [r for r in pts if fits_at_clock(r, part)]
        out = [r for r in pts if not fits_at_clock(r, part)]
        ax.scatter([r[resource] for r in fit], [r["latency_s"] * 1e3 for r in fit], s=18, color="#2b8cbe",
                   label=f"fits {part} at its clock")
        ax.scatter([r[resource] for r in out], [r["latency_s"] * 1e3 for r in out], s=18, facecolors="none",
                   edgecolors="#d7301f", label="too large, or over its clock estimate")
        front = pareto_rows(pts, ("latency_s", resource))
        if front:
            _step(ax, front, resource, "latency_s")
        ax.axvline(cap[resource], color="grey", ls="--", lw=1)
        ax.text(cap[resource], ax.get_ylim()[1], f" {part}", color="grey", va="top", ha="left", fontsize=8)
        ax.set_xlabel(f"{LABELS[resource]}" + (" (usable: 80 % of the part)" if resource == "lut" else ""))
        ax.set_ylabel("latency per inference (ms)")
        ax.grid(alpha=0.3)
    axes.flat[0].legend(fontsize=8, loc="best")
    fig.suptitle(f"{about(model, resolution)}: latency vs resources ({len(_ok(rows, 'latency_s'))} configurations)")
    return _save(fig, out_dir / f"pareto_{_slug(model)}.png")


def _axis_values(values):
    """Positions for parameter values on an axis (categories for text and booleans)."""
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return {v: v for v in values}, False
    order = sorted(set(values), key=str)
    return {v: i for i, v in enumerate(order)}, True


def sensitivity_figure(rows, dims: list[str], model: str, out_dir: Path, resolution=None) -> Path:
    pts = _ok(rows, "latency_s")
    n = max(1, len(dims))
    cols = min(3, n)
    fig, axes = _pyplot().subplots((n + cols - 1) // cols, cols, figsize=(4.2 * cols, 3.3 * ((n + cols - 1) // cols)),
                             squeeze=False)
    for ax, dim in zip(axes.flat, dims):
        values = [r.get(dim) for r in pts]
        pos, categorical = _axis_values([v for v in values if v is not None] or [0])
        xs = [pos[v] for v in values if v is not None]
        ys = [r["latency_s"] * 1e3 for r, v in zip(pts, values) if v is not None]
        ax.scatter(xs, ys, s=10, alpha=0.5, color="#2b8cbe", label="all points")
        best = {}
        for x, y in zip(xs, ys):
            best[x] = min(best.get(x, np.inf), y)
        keys = sorted(best)
        ax.plot(keys, [best[k] for k in keys], color="black", marker="o", lw=1.2, label="best")
        if categorical or len(pos) <= 12:
            ax.set_xticks(list(pos.values()), [f"{k:g}" if isinstance(k, float) else str(k) for k in pos])
        ax.set_xlabel(dim)
        ax.set_ylabel("latency (ms)")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(dims):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=8)
    fig.suptitle(f"{about(model, resolution)}: latency per parameter value")
    return _save(fig, out_dir / f"sensitivity_{_slug(model)}.png")


def energy_figure(rows, model: str, out_dir: Path, part: str, resolution=None) -> Path:
    pts = _ok(rows, "latency_s", "energy_j")
    fig, ax = _pyplot().subplots(figsize=(6.5, 4.5))
    use = [r["part_use"] if isinstance(r.get("part_use"), (int, float)) else np.nan for r in pts]
    sc = ax.scatter([r["latency_s"] * 1e3 for r in pts], [r["energy_j"] * 1e3 for r in pts], c=use, cmap="viridis",
                    s=20)
    fig.colorbar(sc, ax=ax, label=f"share of the {part} used (max over resources)")
    front = pareto_rows(pts, ("latency_s", "energy_j"))
    if front:
        _step(ax, front, "latency_s", "energy_j", scale_x=1e3)
        ax.legend(fontsize=8, loc="best")
    ax.set_xlabel("latency per inference (ms)")
    ax.set_ylabel("accelerator energy per inference (mJ)")
    ax.grid(alpha=0.3)
    ax.set_title(f"{about(model, resolution)}: energy vs latency (per-access energy table)", fontsize=10)
    return _save(fig, out_dir / f"energy_{_slug(model)}.png")


def draw_all(rows, dims: list[str], out_dir: Path, part: str, objectives, resolutions=None) -> list[Path]:
    """Every model's three figures; ``resolutions``: model name -> its input (height, width), for
    the titles."""
    resolutions = resolutions or {}
    paths = []
    for model in dict.fromkeys(r.get("model") for r in rows):
        mine = [r for r in rows if r.get("model") == model]
        if not _ok(mine, "latency_s"):
            continue
        size = resolutions.get(model)
        paths.append(pareto_figure(mine, model, out_dir, part, size))
        paths.append(sensitivity_figure(mine, dims, model, out_dir, size))
        paths.append(energy_figure(mine, model, out_dir, part, size))
    return paths
