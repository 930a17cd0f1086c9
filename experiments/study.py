"""What the reproduction studies share (``tvm_fig21``, ``tvm_fig10``, ``vta_fig8``).

* :class:`Option`: one choice that selects the paper's system (a ``run_network`` keyword or a
  :class:`compiler.network.PartitionOptions` field) with the paper or artifact it comes from.
  :func:`run_kwargs` applies the options this build has and names those it lacks, so a study
  runs on any build and picks an option up once it exists; the study prints both lists.
* :func:`parameters`: every parameter of the models a study ran (the configuration's, the CPU
  model's, the runtime profile's), each with the source the model itself carries. A parameter
  whose source names the figure it is compared with is flagged for the reader to check.
* :func:`compare`: ours beside the paper's, the relative error ``ours / paper - 1`` computed
  from both, the pass band, and whether the bar is inside it.
* :func:`write_study`: the comparison and the provenance as CSV files and the figure (PNG and
  PDF), put in place together (:class:`vdla.outputs.Outputs`).
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from compiler.network import PartitionOptions
from vdla.cmd_run import csv_text
from vdla.outputs import Outputs, check_writable
from vdla_hw.errors import VdlaError

FORMATS = ("png", "pdf")
COMPARISON_FIELDS = ("bar", "unit", "ours", "paper", "error", "band", "within")
PARAMETER_FIELDS = ("component", "parameter", "value", "source", "cites_compared_figure")


@dataclass(frozen=True)
class Option:
    """``name=value`` selects the paper's system; ``source`` says which paper or artifact says so."""

    name: str
    value: object
    source: str


def parser(doc: str, default_config_help: str) -> argparse.ArgumentParser:
    """The arguments every study takes: ``--out``, ``--resolution`` (checked as ``vdla run``
    checks it) and ``--config`` (instead of the study's own)."""
    from compiler.paper import PAPER_RESOLUTION
    from vdla.argtypes import ArgumentParser, output_dir
    from vdla.cmd_run import resolution_arg

    p = ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--out", type=output_dir, default="results", help="output folder (default results)")
    p.add_argument("--resolution", type=resolution_arg(), default=PAPER_RESOLUTION,
                   help=f"input size (the papers': {PAPER_RESOLUTION}; smaller runs fast, with no comparison)")
    p.add_argument("--config", default=None, help=f"configuration instead of the study's ({default_config_help})")
    return p


def guarded(name: str, body) -> int:
    """Run ``body()``; a user error (a VdlaError or the file system saying no) is one line on
    stderr and exit status 2, and a closed stdout (``| head``) ends quietly with status 141, as
    in ``vdla`` (vdla/cli.py)."""
    from vdla.argtypes import quiet_broken_pipe
    from vdla.cli import EXIT_BROKEN_PIPE

    try:
        code = body()
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        quiet_broken_pipe()
        return EXIT_BROKEN_PIPE
    except VdlaError as err:
        print(f"{name}: {err}", file=sys.stderr)
    except OSError as err:
        where = f"{err.filename}: " if err.filename else ""
        print(f"{name}: {where}{err.strerror or err}", file=sys.stderr)
    return 2


def with_config(options: list[Option], config: str | None) -> list[Option]:
    """``options`` with the ``config`` option replaced by the command line's, if one was given."""
    if config is None:
        return options
    return [Option("config", config, "given on the command line") if o.name == "config" else o for o in options]


def _run_network_keywords() -> set[str]:
    from vdla.network import run_network

    return set(inspect.signature(run_network).parameters)


def _partition_fields() -> set[str]:
    return {f.name for f in dataclasses.fields(PartitionOptions)}


def run_kwargs(options: list[Option]) -> tuple[dict, list[dict]]:
    """The ``run_network`` keywords of ``options`` and one row per option: where it was applied
    (``run_network`` keyword, ``PartitionOptions`` field) or ``not in this build``."""
    keywords, fields = _run_network_keywords(), _partition_fields()
    kwargs, partition, rows = {}, {}, []
    for option in options:
        if option.name in keywords and option.name != "options":
            kwargs[option.name], where = option.value, "run_network"
        elif option.name in fields:
            partition[option.name], where = option.value, "PartitionOptions"
        else:
            where = "not in this build"
        rows.append({"option": option.name, "value": option.value, "applied": where, "source": option.source})
    kwargs["options"] = PartitionOptions(**partition)
    return kwargs, rows


def _flatten(prefix: str, data) -> list[tuple[str, object, str]]:
    """(name, value, source) of every entry of a model's ``describe()`` that carries a source:
    ``{"value": v, "source": s}`` entries, and groups with a ``source`` key (their plain keys are
    the value; groups inside them, such as a baseline's ``params``, are listed on their own)."""
    if not isinstance(data, dict):
        return []
    out = []
    if "source" in data and "value" in data:
        return [(prefix, data["value"], str(data["source"]))]
    if "source" in data:
        plain = {k: v for k, v in data.items() if k != "source" and not isinstance(v, dict)}
        out.append((prefix, plain, str(data["source"])))
    for key, value in data.items():
        if isinstance(value, dict):
            out += _flatten(f"{prefix}.{key}" if prefix else str(key), value)
    return out


RUNTIME_SOURCE = "the board runtime's profile, read off the driver's code (driver/registers.py run_profile)"
RUNTIME_SOURCES = {"sleep_slack_s": "Linux's default timer slack of a normal thread, prctl(2) PR_SET_TIMERSLACK",
                   "poll_first_s": "the driver's STATUS poll schedule (driver/registers.py RegisterDevice)",
                   "poll_max_s": "the driver's STATUS poll schedule (driver/registers.py RegisterDevice)"}


def parameters(config, cpu_model: dict | None, runtime=None, compared: str = "") -> list[dict]:
    """Every parameter behind a study's numbers with its source, as the models carry them:
    ``config`` (a :class:`vdla_hw.config.Config`: its parameters and their sources), ``cpu_model``
    (``CpuModel.describe()``, as a report's ``totals["cpu_model"]`` holds it) and ``runtime`` (the
    board runtime's profile, counted from the driver's code). ``compared`` is a regular
    expression for the figure the study compares with: a source that matches it is flagged."""
    cites = re.compile(compared, re.IGNORECASE) if compared else None
    rows = []

    def add(component, name, value, source):
        rows.append({"component": component, "parameter": name, "value": value, "source": source,
                     "cites_compared_figure": "yes" if cites and cites.search(source) else ""})

    for key, value in config.params.items():
        add(f"configuration {config.name}", key, value, config.sources.get(key, "(no source given)"))
    if cpu_model:
        cpu = f"CPU model {cpu_model.get('name', '')}".strip()
        for name, value, source in _flatten("", {k: v for k, v in cpu_model.items() if k not in ("name", "title")}):
            add(cpu, name, value, source)
        if cpu_model.get("basis"):
            add(cpu, "basis", cpu_model["basis"], "how CPU times are obtained (the model's own description)")
    if runtime is not None:
        for key, value in dataclasses.asdict(runtime).items():
            add("board runtime", key, value, RUNTIME_SOURCES.get(key, RUNTIME_SOURCE))
    return rows


def network_parameters(config_spec, report, compared: str) -> list[dict]:
    """:func:`parameters` of a ``run_network`` study: the configuration it ran (``config_spec``,
    as given to ``run_network``), the CPU model its report describes and the board runtime's
    profile the executor was given."""
    from vdla import network
    from vdla_hw.config import load_config

    config = load_config(config_spec)
    runtime = None
    if hasattr(network, "board_runtime"):  # the profile of this configuration's port where it depends on it
        takes_config = "config" in inspect.signature(network.board_runtime).parameters
        runtime = network.board_runtime(config) if takes_config else network.board_runtime()
    return parameters(config, report.totals.get("cpu_model"), runtime, compared)


def runtime_parameters(name: str, config_spec, compared: str) -> list[dict]:
    """The profile of host runtime ``name`` (``vdla.host_runtime``) for the configuration
    ``config_spec``, one row per field with its source (component ``NAME runtime``)."""
    from vdla import host_runtime
    from vdla_hw.config import load_config

    cites = re.compile(compared, re.IGNORECASE) if compared else None
    profile, sources = host_runtime.profile(name, load_config(config_spec)), host_runtime.sources(name)
    rows = []
    for key, value in dataclasses.asdict(profile).items():
        source = sources.get(key, RUNTIME_SOURCES.get(key, RUNTIME_SOURCE))
        rows.append({"component": f"{name} host runtime", "parameter": key, "value": value, "source": source,
                     "cites_compared_figure": "yes" if cites and cites.search(source) else ""})
    return rows


def show(title: str, option_rows: list[dict], rows: list[dict], verdict_text: str, parameter_rows: list[dict],
         written: list[Path], basis: str = "") -> None:
    """A study's whole printout: what ran, the options, the table, the verdict, the time basis,
    the parameters and the files written."""
    print(f"{title}\n")
    print(format_options(option_rows) + "\n")
    print(format_table(rows) + "\n")
    print(verdict_text + "\n")
    if basis:
        print(f"time basis: {basis}")
    print(format_parameters(parameter_rows))
    print("\n" + "\n".join(f"wrote {path}" for path in written))


def relative_error(ours: float, paper: float) -> float:
    """``ours / paper - 1``: +0.10 is 10 % above the paper."""
    return ours / paper - 1.0


def compare(bar: str, ours: float, paper: float | None, unit: str, band: float | None) -> dict:
    """One row of a study's table. ``band``: the pass band (0.2 = +-20 %) the issue sets for this
    bar, or None where it sets none (the error is still shown)."""
    error = None if paper is None else relative_error(ours, paper)
    within = "" if band is None or error is None else ("yes" if abs(error) <= band else "NO")
    return {"bar": bar, "unit": unit, "ours": round(ours, 4), "paper": paper,
            "error": None if error is None else round(error, 4), "band": band, "within": within}


def misses(rows: list[dict]) -> list[dict]:
    return [row for row in rows if row["within"] == "NO"]


def format_table(rows: list[dict]) -> str:
    if not rows:
        return "(nothing to compare)"
    width = max(len(row["bar"]) for row in rows) + 2
    lines = [f"{'bar':<{width}}{'unit':<6}{'ours':>10}{'paper':>10}{'error':>9}{'band':>8}  within"]
    for row in rows:
        paper = "" if row["paper"] is None else f"{row['paper']:.4g}"
        error = "" if row["error"] is None else f"{row['error']:+.1%}"
        band = "" if row["band"] is None else f"+-{row['band']:.0%}"
        lines.append(f"{row['bar']:<{width}}{row['unit']:<6}{row['ours']:>10.4g}{paper:>10}{error:>9}{band:>8}  "
                     f"{row['within']}")
    return "\n".join(lines)


def format_options(rows: list[dict]) -> str:
    lines = ["options that select the paper's system (applied where this build has them):"]
    for row in rows:
        setting = f"{row['option']}={row['value']}"
        lines.append(f"  {setting:<20} [{row['applied']}]  {row['source']}")
    return "\n".join(lines)


def format_parameters(rows: list[dict]) -> str:
    lines = ["model parameters and their sources:"]
    component = None
    for row in rows:
        if row["component"] != component:
            component = row["component"]
            lines.append(f"  {component}:")
        flag = "  [cites the compared figure: check it is a stated fact, not a fit]" if row["cites_compared_figure"] \
            else ""
        lines.append(f"    {row['parameter']} = {row['value']}: {row['source']}{flag}")
    return "\n".join(lines)


def verdict(rows: list[dict], setting_ok: bool) -> str:
    """One paragraph saying plainly which bars miss their band."""
    if not setting_ok:
        return ("not a comparison: the paper measured 224x224 inputs; the errors above only show the "
                "table's structure at this resolution")
    banded = [row for row in rows if row["band"] is not None]
    missed = misses(rows)
    if not missed:
        return f"every banded bar is within its band ({len(banded)} of {len(banded)})"
    names = "; ".join(f"{row['bar']} {row['error']:+.1%} (band +-{row['band']:.0%})" for row in missed)
    return f"{len(missed)} of {len(banded)} banded bars miss: {names}"


def study_paths(out: Path, name: str) -> list[Path]:
    """Every file :func:`write_study` writes for study ``name`` into ``out``."""
    return [out / f"{name}.csv", out / f"{name}_options.csv", out / f"{name}_parameters.csv",
            *(out / f"{name}.{ext}" for ext in FORMATS)]


def check_outputs(out: Path, name: str, extra=()) -> None:
    """Refuse, before any work, a study whose outputs cannot be written (one line, exit 2)."""
    check_writable([*study_paths(out, name), *(out / n for n in extra)])


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def error_panel(ax, rows: list[dict]) -> None:
    """Horizontal bars of each row's relative error, its pass band shaded behind; a bar outside
    its band is red, one with no band grey. The error is written beside zero, on the free side."""
    shown = [row for row in rows if row["error"] is not None]
    y = list(range(len(shown)))
    colors = ["#d62728" if row["within"] == "NO" else "#2b8cbe" if row["within"] else "#999999" for row in shown]
    for i, row in enumerate(shown):
        if row["band"] is not None:
            ax.fill_betweenx([i - 0.45, i + 0.45], -100 * row["band"], 100 * row["band"], color="#2ca02c", alpha=0.2,
                             linewidth=0, zorder=1)
    ax.barh(y, [100 * row["error"] for row in shown], color=colors, height=0.6, zorder=2)
    for i, row in enumerate(shown):
        right = row["error"] < 0
        ax.annotate(f"{row['error']:+.1%}", (0, i), textcoords="offset points", xytext=(3 if right else -3, 0),
                    ha="left" if right else "right", va="center", fontsize=7, zorder=3)
    ax.axvline(0, color="black", linewidth=0.6)
    ax.set_yticks(y, [row["bar"].strip() for row in shown], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("ours vs paper (%); green: the issue's pass band; red: outside it; grey: no band", fontsize=8)


def write_study(out: Path, name: str, rows: list[dict], option_rows: list[dict], parameter_rows: list[dict],
                figure, extra: dict[str, list[dict]] | None = None) -> list[Path]:
    """``OUT/NAME.csv`` (the comparison), ``NAME_options.csv``, ``NAME_parameters.csv``, the figure
    (``figure``: a matplotlib figure, closed here) as PNG and PDF, and any ``extra`` tables
    (file name -> rows), all put in place together; an interrupted study leaves the old set."""
    paths = study_paths(out, name)
    extra = extra or {}
    check_outputs(out, name, extra)
    try:
        with Outputs() as outputs:
            outputs.write(paths[0], csv_text(rows, list(COMPARISON_FIELDS)))
            outputs.write(paths[1], csv_text(option_rows, ["option", "value", "applied", "source"]))
            outputs.write(paths[2], csv_text(parameter_rows, list(PARAMETER_FIELDS)))
            for ext, path in zip(FORMATS, paths[3:]):
                outputs.write(path, lambda fh, ext=ext: figure.savefig(fh, format=ext, dpi=150, bbox_inches="tight"))
            for file_name, table in extra.items():
                outputs.write(out / file_name, csv_text(table))
            return outputs.commit()
    finally:
        pyplot().close(figure)
