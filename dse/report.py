"""The end of a sweep: ``pareto.csv``, the figures, ``summary.json`` and the summary dict.

The Pareto front is computed from the rows *as stored in points.csv* (read back), so the file
and a recomputation from points.csv agree by construction of the same function on the same data.
"""

from __future__ import annotations

from pathlib import Path

from dse.metrics import RESOURCES
from dse.pareto import pareto_rows
from dse.resources import ResourceModelError, load_model
from dse.store import read_rows, write_rows
from vdla_hw.files import atomic_write, json_text


def resource_state(cache_dir, note=None) -> dict:
    """The resource model as this sweep uses it: available, stale, its basis and held-out error
    (``note`` gets a line for an untrusted cache entry)."""
    from dse.cache import DiskCache

    try:
        model = load_model()
    except ResourceModelError as err:
        return {"available": False, "why": str(err), "basis": f"no resource model: {err}"}
    stale = model.is_stale(DiskCache(cache_dir, note))
    errors = model.errors("holdout")["summary"]
    measured = RESOURCES + (("fmax_mhz",) if model.clock else ())
    clock = ("per point (dse.clock): the cached synthesis of exactly that configuration's FPGA top where one "
             f"exists, else the clock model fitted to {len(model.fitted())} syntheses (held-out error up to "
             f"{100 * errors['fmax_mhz']['max_rel']:.1f} %); a point above it is 'over clock estimate', never 'fits'"
             if model.clock else "none: the calibration data carry no fmax (python -m dse.calibrate records it)")
    return {"available": True, "basis": model.basis(stale), "stale": stale,
            "rtl_key": model.rtl_key, "verilog_key": model.data.get("verilog_key"), "clock_estimate": clock,
            "holdout_max_rel_error": {r: round(errors[r]["max_rel"], 4) for r in measured},
            "holdout_mean_rel_error": {r: round(errors[r]["mean_rel"], 4) for r in measured}}


def best_points(rows: list[dict], part: str) -> dict:
    """Per model: the lowest-latency point that fits ``part`` at its own clock: its resources fit
    and its CLOCK_MHZ is not above its clock estimate (a point ``over clock estimate`` never
    counts; one without an estimate does, and says so in its ``verdict``)."""
    best = {}
    for row in rows:
        if row.get("status") != "ok" or row.get(f"fits_{part}") is not True or row.get("latency_s") is None:
            continue
        if row.get("clock_met") is False:
            continue
        current = best.get(row["model"])
        if current is None or row["latency_s"] < current["latency_s"]:
            best[row["model"]] = row
    return {m: {"key": r["key"], "fingerprint": r["fingerprint"], "latency_s": r["latency_s"],
                "speedup": r["speedup"], "part_use": r["part_use"], "energy_j": r["energy_j"],
                "clock_mhz": clock_of(r), "fmax_mhz": r.get("fmax_mhz"), "verdict": r.get("verdict")}
            for m, r in best.items()}


def clock_of(row: dict) -> float | None:
    """The point's CLOCK_MHZ, from its ``config_json`` (the parameters, as points.csv holds them,
    or a whole ``Config.to_json()``)."""
    import json

    try:
        config = json.loads(row["config_json"])
        return float(config.get("params", config)["CLOCK_MHZ"])
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def over_clock(rows: list[dict], part: str) -> dict:
    """Per model: how many ok points fit ``part``'s resources but run above their clock estimate."""
    out: dict = {}
    for row in rows:
        if row.get("status") == "ok" and row.get(f"fits_{part}") is True and row.get("clock_met") is False:
            out[row["model"]] = out.get(row["model"], 0) + 1
    return out


def input_size(shape: tuple[int, ...]) -> tuple[int, ...]:
    """What a figure's title gives of a model's input: an image's (H, W) of (N, C, H, W), else the
    whole shape (a transformer's (1, tokens, channels))."""
    return tuple(shape[2:4]) if len(shape) == 4 else tuple(shape)


def finish(space, out_dir: Path, models, options, store, progress, seconds: float, resources: dict) -> dict:
    from dse import figures

    header, rows = read_rows(store.path)
    rows = [r for r in rows if r.get("model") in {m.name for m in models} and store.trusted(r)]
    objectives = space.search.objectives
    front = pareto_rows(rows, objectives)
    write_rows(out_dir / "pareto.csv", header, front)
    outputs = [str(store.path), str(out_dir / "pareto.csv")]
    dims = [d.name for d in space.dimensions]
    if options.figures:
        sizes = {m.name: input_size(m.q.shapes[m.q.input]) for m in models}
        outputs += [str(p) for p in figures.draw_all(rows, dims, out_dir, options.part, objectives, sizes)]
    counts = dict(progress.counts)
    computed = counts["ok"] + counts["invalid"] + counts["failed"]
    summary = {
        "space": space.source, "search": space.search.method, "models": [m.name for m in models],
        "points": len(rows), "ok": sum(r["status"] == "ok" for r in rows),
        "invalid": sum(r["status"] == "invalid" for r in rows), "failed": sum(r["status"] == "failed" for r in rows),
        "computed_now": computed, "resumed": counts["resumed"], "stale_rows_recomputed": store.stale,
        "seconds": round(seconds, 2), "points_per_s": round(computed / seconds, 3) if seconds else 0.0,
        "objectives": list(objectives), "pareto_points": len(front), "part": options.part,
        "best_fitting": best_points(rows, options.part),
        "over_clock_estimate": over_clock(rows, options.part),
        "points_over_clock_estimate": sum(r.get("status") == "ok" and r.get("clock_met") is False for r in rows),
        "resource_model": resources,
        "energy_table": options.energy_table or "built-in (dse/data/energy_horowitz45.json)",
        "clock_estimate": resources.get("clock_estimate", "none: no resource model"),
        "executor": options.executor,
        "ray": ({"address": options.address or "local", "workers": options.workers}
                if options.executor == "ray" else None),
        "outputs": outputs,
    }
    atomic_write(out_dir / "summary.json", json_text(summary, indent=2))
    summary["outputs"].append(str(out_dir / "summary.json"))
    summary["outputs"].append(str(out_dir / "README.md"))
    atomic_write(out_dir / "README.md", sweep_readme(summary))
    return summary


# what each file of a sweep's folder is, by its name's start (sweep_readme)
SWEEP_FILES = {"points.csv": "every evaluated point, one row each: its parameters, status, latency, speedup, "
                             "resources, clock estimate, energy (the data of every figure below)",
               "pareto.csv": "the points on the Pareto front of the objectives",
               "summary.json": "the sweep's summary: counts, best fitting point per model, resource and clock "
                               "models, where it ran",
               "pareto_": "latency against each resource (LUT, FF, DSP, BRAM36) with the part's capacity and the "
                          "Pareto front",
               "sensitivity_": "latency of every point at each value of each swept parameter, and the best",
               "energy_": "energy per inference against latency, coloured by the share of the part used",
               "report.html": "all of the above on one self-contained page (figures embedded, the Pareto front "
                              "sortable): open it in a browser, offline",
               "README.md": "this file"}


def sweep_readme(summary: dict) -> str:
    """The sweep folder's README.md: the sweep it holds and what each file written is."""
    lines = [f"# vdla sweep {Path(summary['space']).name}: results", "",
             f"{summary['points']} points ({summary['ok']} ok) of {', '.join(summary['models'])}, search "
             f"{summary['search']}, part {summary['part']}, objectives {', '.join(summary['objectives'])}.", "",
             "| file | what it is |", "|---|---|"]
    for path in summary["outputs"]:
        name = Path(path).name
        about = next((text for start, text in SWEEP_FILES.items() if name.startswith(start)), "")
        lines.append(f"| `{name}` | {about} |")
    return "\n".join(lines) + "\n"

